//! Hostile clients against one `plumb -s` process (issue 7): after every
//! misbehaving client a stock iperf3 client must still complete a test, and
//! the server's memory, descriptors and threads must be where they were.
//! Also: a silent connection must not lock others out, operator limits are
//! refused with messages both clients print, authentication interoperates
//! with stock iperf3 both ways, and a soak of 2,000 tests leaks nothing.
//!
//! The server's output goes to files, not pipes: a pipe nobody reads would
//! fill up and stall a long-running server.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// A server process with its stderr in a file; killed on drop.
struct Srv {
    child: Child,
    log: PathBuf,
}

impl Srv {
    fn start(bin: &str, args: &[&str], port: u16, dir: &Path) -> Srv {
        let log = dir.join(format!("server-{port}.log"));
        let child = Command::new(bin)
            .args(args)
            .args(["-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
        let mut s = Srv { child, log };
        let t0 = Instant::now();
        while !listening(port) {
            if let Ok(Some(st)) = s.child.try_wait() {
                panic!("{bin} exited early: {st}: {}", s.log_text());
            }
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "{bin} did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn status(&self, key: &str) -> u64 {
        let text = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("server alive");
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("{key} missing"))
    }

    /// (RSS kB, open descriptors, threads).
    fn usage(&self) -> (u64, usize, u64) {
        let fds = std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .expect("server alive")
            .count();
        (self.status("VmRSS:"), fds, self.status("Threads:"))
    }

    /// Waits (bounded) until the server is idle — no test thread left, only
    /// the gate — and returns its usage then.
    /// The server's usage once it is idle: one thread left, and the same
    /// descriptor count in five readings 50 ms apart. One thread alone is not
    /// enough: a connection the gate is still closing (a busy client held
    /// for its 250 ms) can be counted in one snapshot and gone by the next.
    fn idle(&self) -> (u64, usize, u64) {
        let t0 = Instant::now();
        let mut steady = 0;
        let mut last = self.usage();
        loop {
            std::thread::sleep(Duration::from_millis(50));
            let u = self.usage();
            steady = if u.2 == 1 && u.1 == last.1 {
                steady + 1
            } else {
                0
            };
            last = u;
            if steady >= 4 || t0.elapsed() > Duration::from_secs(15) {
                return last;
            }
        }
    }

    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Srv {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A scratch directory for one test, removed when the test ends (declare
/// it before the server whose log it holds: the server is dropped first).
fn tempdir(tag: &str) -> TempDir {
    TempDir::new(&format!("hostile-{tag}"))
}

/// A stock iperf3 client test that must succeed (`-n 1M` unless `-t` is
/// given). A test that a misbehaving client just lost may hold the slot for
/// a moment after that client is gone, so "busy" is retried for up to 3 s.
fn stock_ok(port: u16, extra: &[&str]) -> Duration {
    let t0 = Instant::now();
    let p = port.to_string();
    let mut args = vec!["-c", "127.0.0.1", "-p", &p, "-J"];
    if !extra.contains(&"-t") {
        args.extend_from_slice(&["-n", "1M"]);
    }
    args.extend_from_slice(extra);
    loop {
        let out = run(iperf3_bin(), &args, Duration::from_secs(30));
        let v = json(&out, "stock client");
        let busy = v["error"].as_str().is_some_and(|e| e.contains("busy"));
        if busy && t0.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        assert_clean(&v, "stock client");
        assert!(out.status.success());
        return t0.elapsed();
    }
}

fn read_byte(s: &mut TcpStream) -> Option<u8> {
    let mut b = [0u8; 1];
    match s.read(&mut b) {
        Ok(1) => Some(b[0]),
        _ => None,
    }
}

/// Reads until EOF (bounded), returning what came.
fn read_all(s: &mut TcpStream) -> Vec<u8> {
    let mut v = Vec::new();
    let _ = s.read_to_end(&mut v);
    v
}

/// A plumb request/response test of 1 s; RR is replaced by its `plumb.rr`.
const PARAMS_RR: &str = r#"{"tcp":true,"omit":0,"time":1,"parallel":1,"len":1,"pacing_timer":1000,"client_version":"3.12","plumb":{"version":"0.1.0","rr":RR}}"#;
const PARAMS_1K: &str = r#"{"tcp":true,"omit":0,"time":0,"num":1024,"blockcount":0,"parallel":1,"len":1024,"pacing_timer":1000,"client_version":"3.12"}"#;

/// Cookie, PARAM_EXCHANGE, parameters, CREATE_STREAMS: the control
/// connection of a test whose streams the server now waits for.
/// A control connection that got PARAM_EXCHANGE, retried (for up to 3 s)
/// while the previous test still holds the slot.
fn open_control(port: u16, c: &[u8; 37]) -> TcpStream {
    let t0 = Instant::now();
    loop {
        let mut s = connect(port);
        s.write_all(c).expect("cookie");
        let first = read_byte(&mut s);
        if first == Some(0xFF) && t0.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        assert_eq!(first, Some(9), "PARAM_EXCHANGE");
        return s;
    }
}

/// Retries (for up to 3 s) while the previous test still holds the slot.
fn handshake(port: u16, c: &[u8; 37], params: &str) -> TcpStream {
    let t0 = Instant::now();
    loop {
        let mut s = connect(port);
        s.write_all(c).expect("cookie");
        let first = read_byte(&mut s);
        if first == Some(0xFF) && t0.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        assert_eq!(first, Some(9), "PARAM_EXCHANGE");
        s.write_all(&frame(params)).expect("params");
        assert_eq!(read_byte(&mut s), Some(10), "CREATE_STREAMS");
        return s;
    }
}

/// Why a hand-spoken test did not run.
#[derive(Debug)]
enum RawError {
    /// ACCESS_DENIED: every slot was held (a moment before a slot is freed).
    Busy,
    /// Anything else, for the failure message.
    #[allow(dead_code)]
    Other(String),
}

impl From<std::io::Error> for RawError {
    fn from(e: std::io::Error) -> Self {
        RawError::Other(e.to_string())
    }
}

/// One whole 1 KB test spoken by hand: the cheapest real test there is.
fn raw_test(port: u16, tag: u8) -> Result<(), RawError> {
    let c = cookie(tag);
    let mut ctl = connect(port);
    ctl.write_all(&c)?;
    match read_byte(&mut ctl) {
        Some(9) => {}
        Some(0xFF) => return Err(RawError::Busy),
        other => {
            return Err(RawError::Other(format!(
                "{other:?} instead of PARAM_EXCHANGE"
            )))
        }
    }
    ctl.write_all(&frame(PARAMS_1K))?;
    match read_byte(&mut ctl) {
        Some(10) => {}
        Some(0xFF) => return Err(RawError::Busy),
        other => {
            return Err(RawError::Other(format!(
                "{other:?} instead of CREATE_STREAMS"
            )))
        }
    }
    let mut data = connect(port);
    data.write_all(&c)?;
    if read_byte(&mut ctl) != Some(1) || read_byte(&mut ctl) != Some(2) {
        return Err(RawError::Other("no TEST_START/TEST_RUNNING".into()));
    }
    data.write_all(&[0x5a; 1024])?;
    data.shutdown(Shutdown::Write)?;
    ctl.write_all(&[4])?;
    if read_byte(&mut ctl) != Some(13) {
        return Err(RawError::Other("no EXCHANGE_RESULTS".into()));
    }
    let results = r#"{"cpu_util_total":0,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":0,"streams":[{"id":1,"bytes":1024,"retransmits":0,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":0.001}]}"#;
    ctl.write_all(&frame(results))?;
    let mut len = [0u8; 4];
    ctl.read_exact(&mut len)?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    ctl.read_exact(&mut body)?;
    let v: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| RawError::Other(e.to_string()))?;
    if v["streams"][0]["bytes"] != 1024 {
        return Err(RawError::Other(format!(
            "server counted {}",
            v["streams"][0]["bytes"]
        )));
    }
    if read_byte(&mut ctl) != Some(14) {
        return Err(RawError::Other("no DISPLAY_RESULTS".into()));
    }
    ctl.write_all(&[16])?;
    Ok(())
}

/// A raw test, retried (bounded) while the server is momentarily busy.
fn raw_test_retry(port: u16, tag: u8) -> Result<u32, RawError> {
    let mut busy = 0;
    loop {
        match raw_test(port, tag) {
            Ok(()) => return Ok(busy),
            Err(RawError::Busy) if busy < 200 => {
                busy += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => return Err(e),
        }
    }
}

/// A named misbehaving client.
type Case = (&'static str, Box<dyn Fn()>);

/// What each hostile client does.
#[allow(
    clippy::too_many_lines,
    reason = "a table of hostile clients, one short closure each"
)]
fn hostile_cases(port: u16) -> Vec<Case> {
    let p = port;
    vec![
        ("connect and close", Box::new(move || drop(connect(p)))),
        (
            "garbage",
            Box::new(move || {
                let mut s = connect(p);
                let junk: Vec<u8> = (0..500u32).map(|i| (i * 7919 % 251) as u8).collect();
                let _ = s.write_all(&junk);
                let _ = read_all(&mut s);
            }),
        ),
        (
            "oversized length prefix",
            Box::new(move || {
                let mut s = open_control(p, &cookie(1));
                let _ = s.write_all(&[0x7f, 0xff, 0xff, 0xff, b'{']);
                let reply = read_all(&mut s);
                assert_eq!(
                    reply.first(),
                    Some(&0xFE),
                    "SERVER_ERROR for 2 GB: {reply:?}"
                );
            }),
        ),
        (
            "truncated length prefix",
            Box::new(move || {
                let mut s = open_control(p, &cookie(2));
                let _ = s.write_all(&[0, 0]);
                let _ = s.shutdown(Shutdown::Write);
                let _ = read_all(&mut s);
            }),
        ),
        (
            "truncated JSON",
            Box::new(move || {
                let mut s = open_control(p, &cookie(3));
                let _ = s.write_all(&[0, 0, 1, 0, b'{', b'"']);
                let _ = s.shutdown(Shutdown::Write);
                let _ = read_all(&mut s);
            }),
        ),
        (
            "invalid JSON",
            Box::new(move || {
                let mut s = open_control(p, &cookie(4));
                let _ = s.write_all(&frame("{not json at all"));
                let reply = read_all(&mut s);
                assert_eq!(&reply[..5], &[0xFE, 0, 0, 0, 114], "{reply:?}");
            }),
        ),
        (
            "deeply nested JSON",
            Box::new(move || {
                let mut s = open_control(p, &cookie(5));
                let deep = format!("{}{}", "[".repeat(20_000), "]".repeat(20_000));
                let _ = s.write_all(&frame(&deep));
                let reply = read_all(&mut s);
                assert_eq!(reply.first(), Some(&0xFE), "{reply:?}");
            }),
        ),
        (
            "absurd parameters",
            Box::new(move || {
                let mut s = open_control(p, &cookie(6));
                let _ = s.write_all(&frame(
                    r#"{"tcp":true,"time":10,"parallel":100000,"len":131072,"omit":0,"num":0,"blockcount":0}"#,
                ));
                let reply = read_all(&mut s);
                assert_eq!(
                    &reply[..5],
                    &[0xFE, 0, 0, 0, 6],
                    "too many streams: {reply:?}"
                );
            }),
        ),
        (
            "negative and wrongly typed parameters",
            Box::new(move || {
                let mut s = open_control(p, &cookie(7));
                let _ = s.write_all(&frame(
                    r#"{"tcp":true,"time":-5,"parallel":"x","len":[1],"omit":{"a":1}}"#,
                ));
                let reply = read_all(&mut s);
                assert_eq!(&reply[..5], &[0xFE, 0, 0, 0, 5], "bad time: {reply:?}");
            }),
        ),
        (
            "wrong stream cookie",
            Box::new(move || {
                let c = cookie(8);
                let ctl = handshake(p, &c, PARAMS_1K);
                let mut bad = connect(p);
                let mut wrong = c;
                wrong[0] ^= 1;
                bad.write_all(&wrong).expect("cookie");
                assert_eq!(read_byte(&mut bad), Some(0xFF), "a wrong cookie is refused");
                drop(ctl.shutdown(Shutdown::Both));
            }),
        ),
        (
            "more streams than announced",
            Box::new(move || {
                let c = cookie(9);
                let mut ctl = handshake(p, &c, PARAMS_1K);
                let mut first = connect(p);
                first.write_all(&c).expect("cookie");
                assert_eq!(read_byte(&mut ctl), Some(1));
                let mut extra = connect(p);
                extra.write_all(&c).expect("cookie");
                assert_eq!(
                    read_byte(&mut extra),
                    Some(0xFF),
                    "the extra stream is refused"
                );
                drop(ctl.shutdown(Shutdown::Both));
            }),
        ),
        (
            "bogus state byte mid-test",
            Box::new(move || {
                let c = cookie(10);
                let mut ctl = handshake(p, &c, PARAMS_1K);
                let mut d = connect(p);
                d.write_all(&c).expect("cookie");
                assert_eq!(read_byte(&mut ctl), Some(1));
                let _ = ctl.write_all(&[0x63]);
                let _ = read_all(&mut ctl);
            }),
        ),
        (
            "UDP datagrams for no test, too short and too long",
            Box::new(move || {
                let u = UdpSocket::bind("127.0.0.1:0").expect("udp");
                for len in [0usize, 1, 3, 4, 11, 16, 1500, 65_000] {
                    let _ = u.send_to(&vec![0xA5; len], ("127.0.0.1", p));
                }
            }),
        ),
        (
            "request/response parameters out of range",
            Box::new(move || {
                for rr in [r#"{"burst":0}"#, r#"{"busy_poll_us":4000000000}"#] {
                    let mut s = open_control(p, &cookie(11));
                    let params = PARAMS_RR.replace("RR", rr);
                    let _ = s.write_all(&frame(&params));
                    let reply = read_all(&mut s);
                    assert_eq!(
                        reply.get(..5),
                        Some(&[0xFE, 0, 0, 0, 250][..]),
                        "{rr}: {reply:?}"
                    );
                }
            }),
        ),
        (
            "request/response stream that never reads its answers",
            Box::new(move || {
                // 64 KiB answers to 1-byte requests: the server's socket
                // buffer fills within a few requests and stays full.
                let c = cookie(12);
                let mut ctl = handshake(
                    p,
                    &c,
                    &PARAMS_RR.replace("RR", r#"{"request":1,"response":65536}"#),
                );
                let mut d = connect(p);
                d.write_all(&c).expect("cookie");
                let mut greeting = [0u8; 10];
                d.set_read_timeout(Some(Duration::from_secs(5)))
                    .expect("timeout");
                d.read_exact(&mut greeting).expect("greeting");
                assert_eq!(read_byte(&mut ctl), Some(1), "TEST_START");
                assert_eq!(read_byte(&mut ctl), Some(2), "TEST_RUNNING");
                let _ = d.write_all(&[0x52; 20_000]);
                std::thread::sleep(Duration::from_millis(300));
                drop(ctl);
                drop(d);
            }),
        ),
        (
            "half-open flood",
            Box::new(move || {
                let held: Vec<TcpStream> = (0..200).map(|_| connect(p)).collect();
                // A stock test completes while 200 silent connections are open.
                stock_ok(p, &[]);
                drop(held);
            }),
        ),
    ]
}

#[test]
fn hostile_battery_leaves_the_server_serving_and_unchanged() {
    let dir = tempdir("battery");
    let port = port();
    let mut srv = Srv::start(
        plumb_bin(),
        &["-s", "--handshake-timeout", "2000"],
        port,
        &dir,
    );
    // Warm up: thread stacks, allocator arenas and lazy statics are in place.
    for i in 0..3 {
        stock_ok(port, &[]);
        raw_test_retry(port, i).expect("raw test");
    }
    let base = srv.idle();
    let mut tried = 0;
    for (name, case) in hostile_cases(port) {
        case();
        tried += 1;
        assert!(
            srv.alive(),
            "server died after '{name}': {}",
            srv.log_text()
        );
        let took = stock_ok(port, &[]);
        assert!(
            took < Duration::from_secs(10),
            "'{name}': test took {took:?}"
        );
    }
    // A client silent past the handshake timeout is dropped by the server.
    let mut silent = connect(port);
    let t0 = Instant::now();
    assert!(read_all(&mut silent).is_empty());
    let gone = t0.elapsed();
    assert!(
        gone >= Duration::from_millis(1500) && gone < Duration::from_secs(5),
        "silent client dropped after {gone:?}"
    );
    tried += 1;
    stock_ok(port, &[]);
    let after = srv.idle();
    eprintln!(
        "hostile battery: {tried} cases; RSS {} -> {} kB, fds {} -> {}, threads {} -> {}",
        base.0, after.0, base.1, after.1, base.2, after.2
    );
    assert_eq!(after.1, base.1, "descriptors leaked");
    assert_eq!(after.2, base.2, "threads leaked");
    assert!(
        after.0 <= base.0 + 4096,
        "RSS grew from {} to {} kB",
        base.0,
        after.0
    );
    let log = srv.log_text();
    for reason in [
        "closed without sending anything",
        "refused its parameters (error 114)",
        "refused its parameters (error 6)",
        "refused (error 250)",
        "cookie matches no test",
        "silent past the handshake timeout",
    ] {
        assert!(log.contains(reason), "no log line with '{reason}':\n{log}");
    }
    assert!(log.contains("127.0.0.1 port"), "log lines name the peer");
}

#[test]
fn a_silent_connection_does_not_lock_others_out() {
    let dir = tempdir("silent");
    let port = port();
    let _srv = Srv::start(plumb_bin(), &["-s"], port, &dir);
    // Silent before the cookie, and silent after it (waiting for parameters).
    let _quiet = connect(port);
    let mut half = connect(port);
    half.write_all(&cookie(20)).expect("cookie");
    assert_eq!(read_byte(&mut half), Some(9));
    let took = stock_ok(port, &["-t", "1"]);
    assert!(
        took < Duration::from_secs(4),
        "took {took:?} next to silent clients"
    );
}

#[test]
fn concurrent_tests_say_so() {
    let dir = tempdir("concurrent");
    let port = port();
    let srv = Srv::start(plumb_bin(), &["-s", "--max-tests", "2"], port, &dir);
    let p = port.to_string();
    let a = {
        let p = p.clone();
        std::thread::spawn(move || {
            run(
                plumb_bin(),
                &["-c", "127.0.0.1", "-p", &p, "-t", "2", "-J"],
                Duration::from_secs(30),
            )
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let b = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "-p", &p, "-t", "1"],
        Duration::from_secs(30),
    );
    let a = a.join().expect("client a");
    let va = json(&a, "client a");
    assert_clean(&va, "client a");
    assert!(
        num(&va, "end.plumb.remote.concurrent_tests") >= 1.0,
        "{}",
        va["end"]["plumb"]["remote"]
    );
    let text = String::from_utf8_lossy(&b.stdout);
    assert!(b.status.success(), "{text}");
    assert!(
        text.contains("other test(s) at the same time"),
        "no note in text output: {text}"
    );
    // A stock client is served alongside too.
    stock_ok(port, &[]);
    assert!(srv.log_text().contains("other test(s) at the same time"));
}

/// Runs a client expected to be refused; returns its stdout+stderr.
fn refused(bin: &str, port: u16, extra: &[&str]) -> String {
    let p = port.to_string();
    let mut args = vec!["-c", "127.0.0.1", "-p", &p];
    if !extra.contains(&"-t") {
        args.extend_from_slice(&["-t", "1"]);
    }
    args.extend_from_slice(extra);
    let out = run(bin, &args, Duration::from_secs(30));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !out.status.success(),
        "{bin} {extra:?} was not refused: {all}"
    );
    all
}

#[test]
fn operator_limits_are_refused_with_a_message_both_clients_print() {
    let dir = tempdir("limits");
    let port = port();
    let srv = Srv::start(
        plumb_bin(),
        &[
            "-s",
            "--max-parallel",
            "2",
            "--max-duration",
            "5",
            "--max-bitrate",
            "200M",
        ],
        port,
        &dir,
    );
    // Each case: the flags, the words a stock client prints (any of them:
    // iperf3's messages change between versions), the words plumb prints.
    let cases: [(&[&str], &[&str], &str); 3] = [
        (
            &["-P", "3", "-b", "10M"],
            &["parallel"],
            "too many parallel streams",
        ),
        (
            // 3.12 knows no code 37: it gets 5 and prints "test duration too
            // long"; 3.20+ print "client's requested duration exceeds ...".
            &["-t", "6", "-b", "10M"],
            &["duration too long", "requested duration exceeds"],
            "above the server's maximum",
        ),
        (
            &["-b", "300M"],
            &["bandwidth"],
            "bitrate exceeds the server's limit",
        ),
    ];
    for (args, stock_words, plumb_words) in cases {
        let stock = refused(iperf3_bin(), port, args).to_lowercase();
        assert!(
            stock.contains("error") && stock_words.iter().any(|w| stock.contains(w)),
            "stock iperf3 {args:?}: {stock}"
        );
        let ours = refused(plumb_bin(), port, args);
        assert!(ours.contains(plumb_words), "plumb {args:?}: {ours}");
    }
    // Without -b a test asks for an unlimited rate, which a capped server refuses.
    refused(plumb_bin(), port, &[]);
    // Within the limits it runs.
    stock_ok(port, &["-b", "100M"]);
    let log = srv.log_text();
    assert!(log.contains("refused (error 6)"), "{log}");
    assert!(log.contains("refused (error 5)"), "{log}");
    assert!(log.contains("refused (error 27)"), "{log}");
}

#[test]
fn denied_addresses_are_refused() {
    let dir = tempdir("deny");
    let port = port();
    let srv = Srv::start(plumb_bin(), &["-s", "--deny", "127.0.0.0/8"], port, &dir);
    let stock = refused(iperf3_bin(), port, &[]);
    assert!(stock.contains("busy"), "{stock}");
    refused(plumb_bin(), port, &[]);
    assert!(srv.log_text().contains("address not allowed"));
}

/// Keys made by Debian's openssl, a users file for mario/rossi.
fn auth_files(dir: &Path) -> (String, String, String) {
    let key = dir.join("private.pem");
    let public = dir.join("public.pem");
    let users = dir.join("users.csv");
    let ok = |c: &mut Command| c.status().is_ok_and(|s| s.success());
    assert!(
        ok(Command::new("openssl")
            .args(["genrsa", "-out"])
            .arg(&key)
            .arg("2048")
            .stderr(Stdio::null())),
        "openssl genrsa"
    );
    assert!(ok(Command::new("openssl")
        .args(["rsa", "-pubout", "-in"])
        .arg(&key)
        .arg("-out")
        .arg(&public)
        .stderr(Stdio::null())));
    // sha256("{mario}rossi"), as iperf3's documentation makes it.
    std::fs::write(
        &users,
        "# user,sha256(\"{user}password\")\nmario,bf7a49a846d44b454a5d11e7acfaf13d138bbe0b7483aa3e050879700572709b\n",
    )
    .expect("users");
    let s = |p: PathBuf| p.to_string_lossy().into_owned();
    (s(key), s(public), s(users))
}

fn client_with_password(bin: &str, password: &str, args: &[&str]) -> std::process::Output {
    let mut child = Command::new(bin)
        .args(args)
        .env("IPERF3_PASSWORD", password)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("client");
    let t0 = Instant::now();
    while matches!(child.try_wait(), Ok(None)) && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait_with_output().expect("output")
}

#[test]
fn authentication_interoperates_with_stock_iperf3_both_ways() {
    let dir = tempdir("auth");
    let (key, public, users) = auth_files(&dir);
    let server_args = [
        "-s",
        "--rsa-private-key-path",
        &key,
        "--authorized-users-path",
        &users,
    ];
    // Debian's 3.12 server decrypts PKCS#1 v1.5 only; 3.17+ OAEP.
    let stock_padding: &[&str] = if iperf3_version() < (3, 17) {
        &["--use-pkcs1-padding"]
    } else {
        &[]
    };
    for (server_bin, plumb_extra) in [(plumb_bin(), &[][..]), (iperf3_bin(), stock_padding)] {
        let port = port();
        let srv = Srv::start(server_bin, &server_args, port, &dir);
        let p = port.to_string();
        let mut args = vec![
            "-c",
            "127.0.0.1",
            "-p",
            &p,
            "-n",
            "1M",
            "--username",
            "mario",
            "--rsa-public-key-path",
            &public,
        ];
        let good = client_with_password(iperf3_bin(), "rossi", &args);
        if server_bin == plumb_bin() {
            // Stock client to plumb server (3.12 encrypts with PKCS#1 v1.5, 3.17+ OAEP).
            assert!(good.status.success(), "stock -> plumb: {good:?}");
            let bad = client_with_password(iperf3_bin(), "wrong", &args);
            assert!(!bad.status.success());
            let text = String::from_utf8_lossy(&bad.stderr).into_owned()
                + &String::from_utf8_lossy(&bad.stdout);
            assert!(text.contains("authorization failed"), "{text}");
            // No token at all.
            let none = run(
                iperf3_bin(),
                &["-c", "127.0.0.1", "-p", &p, "-n", "1M"],
                Duration::from_secs(30),
            );
            assert!(!none.status.success());
        }
        args.extend_from_slice(plumb_extra);
        let ours = client_with_password(plumb_bin(), "rossi", &args);
        assert!(
            ours.status.success(),
            "plumb -> {server_bin}: {}",
            String::from_utf8_lossy(&ours.stderr)
        );
        let wrong = client_with_password(plumb_bin(), "wrong", &args);
        assert!(!wrong.status.success());
        let text = String::from_utf8_lossy(&wrong.stderr);
        if server_bin == plumb_bin() || iperf3_version() < (3, 21) {
            assert!(text.contains("authorization failed (error 142)"), "{text}");
        } else {
            // 3.21+ servers close without an error code on this path.
            assert!(text.contains("authentication failed?"), "{text}");
        }
        if server_bin == plumb_bin() {
            assert!(srv.log_text().contains("unknown or the password is wrong"));
            // plumb uses libcrypto alone, built from source and linked in
            // statically (the openssl crate's vendored feature): the RSA
            // above worked with no OpenSSL library loaded at all, and the
            // binary's own OPENSSL_init_ssl (crates/plumb/src/sys.rs) takes
            // the crate's set-up call, so libssl's own set-up (ssl_init.o,
            // whose local symbol this is, and the TLS it pulls in) is not
            // linked. (A release build, with fat LTO, links no member of
            // libssl.a at all; this debug one still has code that refers to
            // some.)
            let maps = std::fs::read_to_string(format!("/proc/{}/maps", srv.child.id()))
                .expect("server maps");
            assert!(!maps.contains("libcrypto"), "{maps}");
            assert!(!maps.contains("libssl"), "{maps}");
            let binary = std::fs::read(plumb_bin()).expect("read the plumb binary");
            let symbol = b"\0ossl_init_ssl_base_ossl_\0";
            assert!(
                !binary.windows(symbol.len()).any(|w| w == symbol),
                "libssl's own OPENSSL_init_ssl is linked into {}",
                plumb_bin()
            );
        }
    }
}

#[test]
fn soak_two_thousand_tests_without_growth() {
    let dir = tempdir("soak");
    let port = port();
    let srv = Srv::start(plumb_bin(), &["-s", "-J", "--max-tests", "4"], port, &dir);
    let t0 = Instant::now();
    // PLUMB_SOAK_TESTS makes a longer soak by hand; CI runs 2,000.
    let tests: usize = std::env::var("PLUMB_SOAK_TESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    const CLIENTS: usize = 4;
    let mut marks = Vec::new();
    let mut served = 0usize;
    for round in 0..4 {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|c| {
                std::thread::spawn(move || {
                    let mut ok = 0;
                    for i in 0..tests / CLIENTS / 4 {
                        raw_test_retry(port, (c * 50 + i % 50) as u8)
                            .unwrap_or_else(|e| panic!("client {c} test {i}: {e:?}"));
                        ok += 1;
                    }
                    ok
                })
            })
            .collect();
        for h in handles {
            served += h.join().expect("client thread");
        }
        // A stock client and plumb's own every round.
        stock_ok(port, &[]);
        let out = run(
            plumb_bin(),
            &["-c", "127.0.0.1", "-p", &port.to_string(), "-n", "1K", "-J"],
            Duration::from_secs(30),
        );
        assert_clean(&json(&out, "plumb client"), "plumb client");
        served += 2;
        let u = srv.idle();
        eprintln!(
            "soak round {round}: {served} tests, {:.1} s, RSS {} kB (anonymous {} kB), fds {}, threads {}",
            t0.elapsed().as_secs_f64(),
            u.0,
            srv.status("RssAnon:"),
            u.1,
            u.2
        );
        marks.push(u);
    }
    let (first, last) = (marks[0], marks[marks.len() - 1]);
    assert!(served >= tests);
    assert_eq!(last.1, first.1, "descriptors grew: {marks:?}");
    assert_eq!(last.2, first.2, "threads grew: {marks:?}");
    assert!(
        last.0 <= first.0 + 2048,
        "RSS grew over the soak: {marks:?}"
    );
    assert!(
        t0.elapsed() < Duration::from_secs(120) || tests > 2000,
        "soak too slow"
    );
}

#[test]
fn rcv_timeout_ends_a_test_whose_client_goes_silent() {
    let dir = tempdir("rcvtimeout");
    let port = port();
    let srv = Srv::start(plumb_bin(), &["-s", "--rcv-timeout", "1000"], port, &dir);
    // A forward test whose client opens its stream and then sends nothing.
    let params = r#"{"tcp":true,"omit":0,"time":30,"num":0,"blockcount":0,"parallel":1,"len":1024,"pacing_timer":1000,"client_version":"3.12"}"#;
    let c = cookie(30);
    let mut ctl = handshake(port, &c, params);
    let mut data = connect(port);
    data.write_all(&c).expect("cookie");
    assert_eq!(read_byte(&mut ctl), Some(1));
    assert_eq!(read_byte(&mut ctl), Some(2));
    let t0 = Instant::now();
    let rest = read_all(&mut ctl);
    let took = t0.elapsed();
    assert_eq!(
        &rest[..5],
        &[0xFE, 0, 0, 0, 144],
        "SERVER_ERROR 144: {rest:?}"
    );
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(4),
        "ended after {took:?}"
    );
    stock_ok(port, &[]);
    assert!(srv.log_text().contains("--rcv-timeout"));
}

/// A reverse UDP test of 64 blocks whose client takes its datagrams but
/// never sends TEST_END, against a server started with `server_args`:
/// returns what came on the control connection after TEST_RUNNING, how long
/// that took, and the highest sequence number that arrived.
fn reverse_count_client_that_never_ends(server_args: &[&str], tag: u8) -> (Vec<u8>, Duration, u32) {
    let dir = tempdir(&format!("never-ends-{tag}"));
    let port = port();
    let mut args = vec!["-s"];
    args.extend_from_slice(server_args);
    let srv = Srv::start(plumb_bin(), &args, port, &dir);
    // 64 datagrams of 1,000 B at 8 Mbit/s: the budget is sent in 64 ms.
    let params = r#"{"udp":true,"omit":0,"time":0,"num":0,"blockcount":64,"parallel":1,"len":1000,"bandwidth":8000000,"reverse":true,"pacing_timer":1000,"client_version":"3.12"}"#;
    let c = cookie(tag);
    let mut ctl = handshake(port, &c, params);
    let u = UdpSocket::bind("127.0.0.1:0").expect("udp");
    u.connect(("127.0.0.1", port)).expect("udp connect");
    u.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    u.send(b"9876").expect("hello");
    let mut reply = [0u8; 4];
    assert_eq!(u.recv(&mut reply).ok(), Some(4));
    assert_eq!(&reply, b"6789");
    assert_eq!(read_byte(&mut ctl), Some(1));
    assert_eq!(read_byte(&mut ctl), Some(2));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let done = done.clone();
        u.set_read_timeout(Some(Duration::from_millis(100)))
            .expect("timeout");
        // Bounded: it stops when told, or after 10 s.
        std::thread::spawn(move || {
            let t0 = Instant::now();
            let mut buf = [0u8; 2048];
            let mut top = 0u32;
            while !done.load(std::sync::atomic::Ordering::Relaxed)
                && t0.elapsed() < Duration::from_secs(10)
            {
                if let Ok(n) = u.recv(&mut buf) {
                    if n >= 12 {
                        top = top.max(u32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]));
                    }
                }
            }
            top
        })
    };
    let t0 = Instant::now();
    let rest = read_all(&mut ctl);
    let took = t0.elapsed();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let top = reader.join().expect("reader");
    stock_ok(port, &[]);
    drop(srv);
    (rest, took, top)
}

/// A server's UDP sender goes on past a reverse test's block count until
/// the client's TEST_END (so a client that lost datagrams still gets its
/// count), but a client that never sends TEST_END is still cut off: by
/// `--rcv-timeout`, as sending past the count is not progress, and by
/// `--max-duration`.
#[test]
fn a_reverse_count_client_that_never_ends_is_cut_off_by_the_limits() {
    for (args, tag, code) in [
        (&["--rcv-timeout", "1000"][..], 31u8, 144u8),
        (&["--max-duration", "1"], 32, 160),
    ] {
        let (rest, took, top) = reverse_count_client_that_never_ends(args, tag);
        // The scenario: the server sent past the 64-datagram count, paced
        // as the test asked (1,000 datagrams a second), not as fast as it can.
        assert!(top > 64, "{args:?}: the server stopped at datagram {top}");
        let paced = 1.1 * 1000.0 * (took.as_secs_f64() + 0.05);
        assert!(
            f64::from(top) <= paced,
            "{args:?}: datagram {top} arrived within {took:?}"
        );
        assert_eq!(
            rest.get(..5),
            Some(&[0xFE, 0, 0, 0, code][..]),
            "{args:?}: SERVER_ERROR {code}: {rest:?}"
        );
        assert!(
            took >= Duration::from_millis(900) && took < Duration::from_secs(4),
            "{args:?}: ended after {took:?}"
        );
    }
}

#[test]
fn bad_limit_and_auth_flags_are_one_line_and_exit_2() {
    for args in [
        &["-s", "--max-tests", "0"][..],
        &["-s", "--max-bitrate", "fast"],
        &["-s", "--allow", "10.1.2.3/8"],
        &["-s", "--handshake-timeout", "5"],
        &["-s", "--max-rr-size", "0"],
        &["-s", "--max-rr-size", "2M"],
        &["-s", "--max-rr-size", "lots"],
        &["-s", "--max-rr-burst", "5000"],
        &["-c", "127.0.0.1", "--max-rr-burst", "2"],
        &["-s", "--rsa-private-key-path", "/nonexistent/key.pem"],
        &["-s", "--username", "mario"],
        &["-c", "127.0.0.1", "--max-tests", "2"],
        &["-c", "127.0.0.1", "--username", "mario"],
    ] {
        let out = run(plumb_bin(), args, Duration::from_secs(10));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("plumb: "), "{args:?}: {err}");
    }
}
