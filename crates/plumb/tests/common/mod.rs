//! Shared helpers for tests that run the real binaries on loopback.
//!
//! Every child process is bounded in time and killed when its handle drops, so
//! a failing test cannot leave a server behind.
#![allow(dead_code)]

use std::io::Read;
use std::net::TcpStream;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The plumb binary under test.
pub fn plumb_bin() -> &'static str {
    env!("CARGO_BIN_EXE_plumb")
}

/// The stock iperf3 to interoperate with: Debian's, which scripts/test
/// installs, or the binary `PLUMB_IPERF3` names (to run the same matrix
/// against a newer iperf3).
pub fn iperf3_bin() -> &'static str {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let bin = std::env::var("PLUMB_IPERF3").unwrap_or_else(|_| "iperf3".into());
        let ok = Command::new(&bin)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            ok,
            "{bin} not found: scripts/test installs Debian's iperf3 (apt-get install iperf3)"
        );
        bin
    })
}

/// The newest iperf3, from `scripts/newest-iperf3` (which downloads Debian
/// sid's packages the first time), or why it cannot be had: the script
/// reaches Debian's archive over the network, which a machine may not.
pub fn newest_iperf3() -> Result<&'static str, &'static str> {
    static BIN: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/newest-iperf3");
        // Bounded: a download that hangs is a reason, not a hung test.
        let mut child = Command::new(script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run scripts/newest-iperf3: {e}"))?;
        let t0 = Instant::now();
        while child.try_wait().ok().flatten().is_none() {
            if t0.elapsed() > Duration::from_secs(300) {
                let _ = child.kill();
                let _ = child.wait();
                return Err("scripts/newest-iperf3 took over 300 s".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = child
            .wait_with_output()
            .map_err(|e| format!("scripts/newest-iperf3: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "no newest iperf3: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    })
    .as_ref()
    .map(String::as_str)
    .map_err(String::as_str)
}

/// The stock iperf3's version, from its `--version` line ("iperf 3.12 ...").
pub fn iperf3_version() -> (u32, u32) {
    static VERSION: std::sync::OnceLock<(u32, u32)> = std::sync::OnceLock::new();
    *VERSION.get_or_init(read_iperf3_version)
}

fn read_iperf3_version() -> (u32, u32) {
    let out = Command::new(iperf3_bin())
        .arg("--version")
        .output()
        .expect("iperf3 --version");
    let text = String::from_utf8_lossy(&out.stdout);
    let v = text
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("no version in {text:?}"));
    let mut it = v
        .split(['.', '+', '-'])
        .map(|n| n.parse::<u32>().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

/// Each test binary's own loopback ports: `(binary, first port, ports)`,
/// so no two binaries' ranges meet, whether cargo runs them one after
/// another or a developer runs several at once. They sit below Linux's
/// ephemeral range (32768 up), so no outgoing connection holds one; the
/// capture crate's tshark test takes 14000-14499. A test that needs
/// consecutive ports takes them with [`port_block`].
const PORT_RANGES: [(&str, u16, u16); 24] = [
    ("interop_lab", 15_000, 250),
    ("calc", 16_000, 1000),
    ("exporter", 17_000, 1000),
    ("hostile", 18_000, 1000),
    ("interop", 19_000, 1000),
    ("lab", 20_000, 1000),
    ("lab_lifecycle", 21_000, 1000),
    ("latency", 22_000, 1000),
    ("live", 23_000, 1000),
    ("measure", 24_000, 1000),
    ("pscheduler", 25_000, 1000),
    ("report", 26_000, 1000),
    ("systemd_units", 27_000, 1000),
    ("udp_gsro", 28_000, 1000),
    ("why", 29_000, 1000),
    ("path", 30_000, 500),
    ("package", 30_500, 250),
    ("handshake", 30_750, 250),
    ("iperf3_options", 31_000, 250),
    ("iperf3_commands", 31_250, 250),
    ("why_capture", 31_500, 250),
    ("nuttcp", 31_750, 250),
    ("iperf2", 32_000, 500),
    ("multi", 32_500, 250),
];

/// A port no other test uses: the next of this test binary's range.
///
/// # Panics
/// If the binary is not in [`PORT_RANGES`] or has used its whole range.
pub fn port() -> u16 {
    port_block(1)
}

/// The first of `n` consecutive ports no other test uses, taken at once
/// (tests run on parallel threads: `n` calls of [`port`] could interleave
/// with another test's).
///
/// # Panics
/// If the binary is not in [`PORT_RANGES`] or has used its whole range.
pub fn port_block(n: u16) -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let binary = env!("CARGO_CRATE_NAME");
    let (base, count) = PORT_RANGES
        .iter()
        .find(|(name, _, _)| *name == binary)
        .map(|(_, base, count)| (*base, *count))
        .unwrap_or_else(|| panic!("test binary {binary} has no port range in PORT_RANGES"));
    let first = NEXT.fetch_add(n, Ordering::Relaxed);
    assert!(
        first.saturating_add(n) <= count,
        "test binary {binary} used all its ports"
    );
    base + first
}

/// Ends a child that ran past its time: SIGTERM first, so that a `plumb lab`
/// removes its namespaces, cgroups and far processes as it does on Ctrl-C,
/// then SIGKILL after 10 s (bounded either way).
fn end_gently(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A server process that is killed when dropped.
pub struct Server {
    child: Option<Child>,
    pub port: u16,
}

impl Server {
    /// Starts `bin args… -p port` and waits until it accepts connections.
    pub fn start(bin: &str, args: &[&str], port: u16) -> Server {
        Server::start_ready(bin, args, port, listening)
    }

    /// [`Server::start`], ready when `ready(port)` says so (a UDP-only
    /// server: [`udp_bound`]).
    pub fn start_ready(bin: &str, args: &[&str], port: u16, ready: fn(u16) -> bool) -> Server {
        let mut cmd = Command::new(bin);
        cmd.args(args).args(["-p", &port.to_string()]);
        Server::spawn_ready(cmd, port, |_| ready(port))
    }

    /// Starts `cmd` (stdin closed, stdout and stderr piped) and waits, at
    /// most 10 s, until `ready(pid)` says it serves: for a server in a lab's
    /// namespace, [`listening_in`] or [`udp_bound_in`].
    pub fn spawn_ready(mut cmd: Command, port: u16, ready: impl Fn(u32) -> bool) -> Server {
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let pid = child.id();
        let mut s = Server {
            child: Some(child),
            port,
        };
        let t0 = Instant::now();
        loop {
            // Look, don't touch: a probe connection would be the one test of a `-1` server.
            if ready(pid) {
                break;
            }
            if let Some(c) = s.child.as_mut() {
                if let Ok(Some(st)) = c.try_wait() {
                    panic!("{cmd:?} exited early: {st}");
                }
            }
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "{cmd:?} did not get ready on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }

    /// Waits (bounded) for a `-1` server to exit and returns its output.
    pub fn finish(mut self, limit: Duration) -> Output {
        let mut child = self.child.take().expect("running");
        let t0 = Instant::now();
        loop {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            if t0.elapsed() > limit {
                let _ = child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        child.wait_with_output().expect("server output")
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Runs a command to completion, killing it after `limit`.
pub fn run(bin: &str, args: &[&str], limit: Duration) -> Output {
    try_run(bin, args, limit).unwrap_or_else(|late| {
        panic!(
            "{bin} {args:?} ran past {limit:?}; stdout: {}",
            String::from_utf8_lossy(&late.stdout)
        )
    })
}

/// Runs a command to completion, or ends it after `limit` and returns what
/// it had written as the error: for a test that counts hangs among other
/// failures instead of stopping at the first.
pub fn try_run(bin: &str, args: &[&str], limit: Duration) -> Result<Output, Output> {
    let mut child = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {bin}: {e}"));
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let t0 = Instant::now();
    let (status, late) = loop {
        if let Ok(Some(st)) = child.try_wait() {
            break (st, false);
        }
        if t0.elapsed() > limit {
            end_gently(&mut child);
            break (child.wait().expect("wait for an ended child"), true);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let o = Output {
        status,
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
    };
    if late {
        Err(o)
    } else {
        Ok(o)
    }
}

/// Parses a `-J` document, failing the test with the output if it is not one.
pub fn json(out: &Output, who: &str) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{who}: not JSON ({e}); status {}; stdout: {}; stderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// A number at a JSON path like `end.sum_received.bytes`.
pub fn num(v: &Value, path: &str) -> f64 {
    let mut cur = v;
    for k in path.split('.') {
        cur = match k.parse::<usize>() {
            Ok(i) => &cur[i],
            Err(_) => &cur[k],
        };
    }
    cur.as_f64()
        .unwrap_or_else(|| panic!("{path} missing in {}", truncate(v)))
}

fn truncate(v: &Value) -> String {
    let s = v.to_string();
    s.chars().take(2000).collect()
}

/// Asserts a `-J` document has no error and the iperf3 sections.
pub fn assert_clean(v: &Value, who: &str) {
    assert!(v.get("error").is_none(), "{who}: error {}", v["error"]);
    for k in ["start", "intervals", "end"] {
        assert!(v.get(k).is_some(), "{who}: no {k}");
    }
}

/// Whether some socket listens on TCP `port` (from /proc/net/tcp and tcp6).
pub fn listening(port: u16) -> bool {
    tcp_listener_in("/proc/net", port)
}

/// Waits (at most 10 s, else panics) until TCP `port` listens.
pub fn wait_listening(port: u16) {
    let t0 = Instant::now();
    while !listening(port) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "nothing listens on {port}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether the process `pid` sees a TCP listener on `port` in its own
/// network namespace (a lab side's, say).
pub fn listening_in(pid: u32, port: u16) -> bool {
    tcp_listener_in(&format!("/proc/{pid}/net"), port)
}

fn tcp_listener_in(net: &str, port: u16) -> bool {
    let want = format!(":{port:04X}");
    ["tcp", "tcp6"].iter().any(|f| {
        std::fs::read_to_string(format!("{net}/{f}")).is_ok_and(|t| {
            t.lines().skip(1).any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.len() > 3 && cols[1].ends_with(&want) && cols[3] == "0A"
            })
        })
    })
}

/// Whether a UDP socket is bound to `port` (any address).
pub fn udp_bound(port: u16) -> bool {
    udp_socket_in("/proc/net", port)
}

/// Whether the process `pid` sees a UDP socket bound to `port` (any
/// address) in its own network namespace.
pub fn udp_bound_in(pid: u32, port: u16) -> bool {
    udp_socket_in(&format!("/proc/{pid}/net"), port)
}

fn udp_socket_in(net: &str, port: u16) -> bool {
    let want = format!(":{port:04X}");
    ["udp", "udp6"].iter().any(|f| {
        std::fs::read_to_string(format!("{net}/{f}")).is_ok_and(|t| {
            t.lines().skip(1).any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.len() > 2 && cols[1].ends_with(&want) && cols[2].ends_with(":0000")
            })
        })
    })
}

/// A scratch directory under the system's temp dir, named after the test
/// and this process, removed (with everything in it) when dropped — also
/// when the test fails.
pub struct TempDir(std::path::PathBuf);

impl TempDir {
    /// Creates `plumb-<tag>-<pid>`, emptied first if a crashed run left it.
    pub fn new(tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("plumb-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp dir");
        TempDir(d)
    }
}

impl std::ops::Deref for TempDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether this machine can run a lab (root and /dev/net/tun). When not,
/// the calling test is recorded as skipped (a failure under
/// `PLUMB_REQUIRE_LAB=1`, as in CI) and should return. Every lab test asks
/// here, so how skips are reported changes in one place.
pub fn can_lab() -> bool {
    match plumb_lab::Lab::check_privileges() {
        Ok(()) => true,
        Err(e) => {
            plumb_testkit::skip_lab!("{e}");
            false
        }
    }
}

/// `plumb lab --hold`: the link stays up until the guard drops, which stops
/// the lab as Ctrl-C does (it removes its namespaces and devices). Programs
/// run in either side with [`HeldLab::exec`] are the caller's to end.
pub struct HeldLab {
    child: Option<Child>,
    /// The near side's namespace.
    pub near: String,
    /// The far side's namespace.
    pub far: String,
    /// The far side's address.
    pub far_addr: String,
}

impl HeldLab {
    /// Starts `plumb lab --hold ARGS` and waits (at most 30 s) until it says
    /// where the link is.
    pub fn start(args: &[&str]) -> HeldLab {
        let mut child = Command::new(plumb_bin())
            .args(["lab", "--hold"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start plumb lab --hold");
        let out = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut lab = HeldLab {
            child: Some(child),
            near: String::new(),
            far: String::new(),
            far_addr: String::new(),
        };
        // "The link is up until Ctrl-C. Near A is in namespace N, far B in F."
        let t0 = Instant::now();
        while lab.near.is_empty() {
            let left = Duration::from_secs(30).saturating_sub(t0.elapsed());
            let line = rx
                .recv_timeout(left)
                .expect("plumb lab --hold did not say where the link is");
            if let Some(rest) = line.split_once("is in namespace ").map(|(_, r)| r) {
                let w: Vec<&str> = rest
                    .trim_end_matches('.')
                    .split([' ', ','])
                    .filter(|s| !s.is_empty())
                    .collect();
                // [near-ns, far, ADDR, in, far-ns]
                assert_eq!(w.len(), 5, "{line}");
                lab.near = w[0].to_string();
                lab.far_addr = w[2].to_string();
                lab.far = w[4].to_string();
            }
        }
        lab
    }

    /// `ip netns exec NS`, to which the caller adds the program and its arguments.
    pub fn exec(&self, ns: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns]);
        c
    }
}

impl Drop for HeldLab {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-INT", &c.id().to_string()])
                .status();
            let t0 = Instant::now();
            while matches!(c.try_wait(), Ok(None)) && t0.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Whether tcpdump is missing; when it is, the calling test is recorded as
/// skipped and should return (the lab capture tests need it at each end).
pub fn tcpdump_missing() -> bool {
    let found = Command::new("tcpdump")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        plumb_testkit::skip_tool!("tcpdump is not installed");
    }
    !found
}

/// Namespaces (`plumb-<pid>-…`) and TUN devices (`plumb<pid in base 36>…`)
/// of labs whose process is gone: what a finished lab left behind. A lab of
/// a process still alive — another test binary's, run at the same time — is
/// not a leftover.
pub fn leftovers() -> Vec<String> {
    let alive = |pid: Option<u32>| {
        pid.is_some_and(|p| std::path::Path::new(&format!("/proc/{p}")).exists())
    };
    let ns = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    let links = Command::new("ip")
        .args(["-o", "link"])
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    let mut v: Vec<String> = String::from_utf8_lossy(&ns)
        .lines()
        .filter(|l| {
            l.strip_prefix("plumb-")
                .is_some_and(|rest| !alive(rest.split('-').next().and_then(|p| p.parse().ok())))
        })
        .map(str::to_string)
        .collect();
    v.extend(
        String::from_utf8_lossy(&links)
            .lines()
            .filter(|l| {
                l.split(": ")
                    .nth(1)
                    .and_then(|n| n.strip_prefix("plumb"))
                    .is_some_and(|rest| {
                        let pid = rest.get(..5).and_then(|p| u32::from_str_radix(p, 36).ok());
                        !alive(pid)
                    })
            })
            .map(str::to_string),
    );
    v
}

/// Runs `plumb` with `args` (a `lab` command line), bounded by `limit`,
/// and checks that the lab left nothing behind ([`leftovers`]). Returns its
/// output and its notes: without `-J` the lab's notes go to stdout after
/// the programs' output, its errors to stderr.
pub fn run_lab(args: &[&str], limit: Duration) -> (Output, String) {
    let out = run(plumb_bin(), args, limit);
    let left = leftovers();
    assert!(left.is_empty(), "the lab left {left:?} behind");
    let notes = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, notes)
}

/// The `-J` document `plumb why --capture` wrote at `path` (its stderr
/// beside it, `.err`), with its socket's counts checked: what it read and
/// what the kernel dropped add up to what passed the filter.
pub fn live_capture_doc(path: &std::path::Path) -> Value {
    let at = path.display();
    let err = std::fs::read_to_string(path.with_extension("err")).unwrap_or_default();
    let live: Value = std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| panic!("{at}: no -J from plumb why --capture: {err}"));
    let k = &live["kernel"];
    let (received, read, dropped) = (
        k["received"].as_u64().expect("kernel.received"),
        k["read"].as_u64().expect("kernel.read"),
        k["dropped"].as_u64().expect("kernel.dropped"),
    );
    assert_eq!(read + dropped, received, "{at}: {k}");
    live
}

/// A plumb client (`-J` plus `args`) against a fresh `plumb -s -1 -J` on a
/// port of this binary's range; both must succeed with clean documents.
/// Returns (client JSON, server JSON).
pub fn plumb_pair(args: &[&str]) -> (Value, Value) {
    let port = port();
    let srv = Server::start(plumb_bin(), &["-s", "-1", "-J"], port);
    let p = port.to_string();
    let mut a = vec!["-c", "127.0.0.1", "-p", &p, "-J"];
    a.extend_from_slice(args);
    let out = run(plumb_bin(), &a, Duration::from_secs(40));
    let c = json(&out, "client");
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = json(&srv.finish(Duration::from_secs(10)), "server");
    assert_clean(&c, "client");
    assert_clean(&s, "server");
    (c, s)
}

// --- raw control-protocol clients (hostile.rs, latency.rs) -------------------

/// A loopback control connection to `port` with a 5 s read timeout.
pub fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    s
}

/// A control-channel JSON message: 4-byte big-endian length, then the JSON.
pub fn frame(json: &str) -> Vec<u8> {
    let mut v = (json.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(json.as_bytes());
    v
}

/// A fresh 37-byte test cookie (36 random base32 characters, then NUL).
pub fn cookie(tag: u8) -> [u8; 37] {
    // Random like a real client's: a repeated cookie would (rightly) be
    // routed to the test that owns it.
    let mut r = [0u8; 36];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut r))
        .expect("urandom");
    let alphabet = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut c = [0u8; 37];
    for (o, x) in c.iter_mut().zip(r) {
        *o = alphabet[usize::from(x ^ tag) % 32];
    }
    c
}
