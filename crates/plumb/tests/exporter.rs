//! `plumb exporter` over real HTTP on loopback: a probe of a local plumb
//! server gives OpenMetrics that `promtool check metrics` accepts, with the
//! limit; so do probes of a stock `nuttcp -S` and `iperf -s` (`tool=`),
//! whose byte counts agree with the peer's; the safety rules (allow list,
//! malformed queries, one probe per target, `--max-probes`) refuse quickly;
//! a burst of 50 probes leaves no threads or descriptors behind.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// Tests that move data run one at a time: two CPUs, and a lab's diagnosis
/// must not see another test's loopback traffic as its CPU limit.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An exporter process, killed when dropped.
struct Exporter {
    child: Child,
    port: u16,
}

impl Exporter {
    fn start(port: u16, extra: &[&str]) -> Exporter {
        let listen = format!("127.0.0.1:{port}");
        let child = Command::new(plumb_bin())
            .args(["exporter", "--listen", &listen])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start plumb exporter");
        let mut e = Exporter { child, port };
        let t0 = Instant::now();
        while !listening(port) {
            if let Ok(Some(st)) = e.child.try_wait() {
                panic!("plumb exporter exited early: {st}");
            }
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "exporter did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        e
    }

    fn get(&self, path: &str, headers: &[&str]) -> (u16, String, String) {
        http_get(self.port, path, headers)
    }

    /// Threads and open descriptors of the exporter process.
    fn threads_and_fds(&self) -> (usize, usize) {
        let pid = self.child.id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
        let threads = status
            .lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("Threads:");
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .expect("fd dir")
            .count();
        (threads, fds)
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 GET on a fresh connection: (status, content type, body).
fn http_get(port: u16, path: &str, headers: &[&str]) -> (u16, String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to exporter");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for h in headers {
        req += h;
        req += "\r\n";
    }
    req += "\r\n";
    s.write_all(req.as_bytes()).expect("send request");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read response");
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"));
    let ctype = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    (status, ctype, body.to_string())
}

/// `promtool check metrics` on `text`; None when promtool is not installed.
fn promtool(text: &str) -> Option<(bool, String)> {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("feed promtool");
    let out = child.wait_with_output().expect("promtool output");
    let msg =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    Some((out.status.success(), msg))
}

fn assert_promtool(text: &str, what: &str) {
    match promtool(text) {
        Some((ok, msg)) => assert!(ok, "promtool rejects {what}: {msg}\n{text}"),
        None => plumb_testkit::skip_tool!(
            "promtool check of {what}: promtool is not installed (Debian's prometheus; scripts/test installs it)"
        ),
    }
}

fn sample(text: &str, name_and_labels: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name_and_labels)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

#[test]
fn probe_of_a_local_server_gives_openmetrics_with_the_limit() {
    let _one = serial();
    let srv = Server::start(plumb_bin(), &["-s"], port());
    let exp = Exporter::start(port(), &[]);
    let q = format!("/probe?target=127.0.0.1&port={}&time=1", srv.port);
    let (status, ctype, body) = exp.get(&q, &[]);
    assert_eq!(status, 200, "{body}");
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    assert!(body.ends_with("# EOF\n"), "{body}");
    assert_eq!(sample(&body, "plumb_up"), Some(1.0), "{body}");
    let rcvd = sample(&body, "plumb_received_bytes").expect("received bytes");
    let tput = sample(
        &body,
        "plumb_throughput_bytes_per_second{side=\"receiver\"}",
    )
    .expect("receiver throughput");
    let secs = sample(&body, "plumb_test_duration_seconds").expect("duration");
    assert!(rcvd > 0.0 && tput > 0.0, "{body}");
    // The throughput is the bytes over the time, as the receiver counted both.
    assert!(
        (tput * secs - rcvd).abs() / rcvd < 0.02,
        "{tput} * {secs} vs {rcvd}"
    );
    assert!(
        sample(&body, "plumb_rtt_seconds").is_some_and(|r| r > 0.0 && r < 0.1),
        "{body}"
    );
    let limit = body
        .lines()
        .find(|l| l.starts_with("plumb_limit_info{limit=\""))
        .expect("plumb_limit_info");
    assert!(limit.ends_with(" 1.0") || limit.ends_with(" 1"), "{limit}");
    // A predicted rate is exported when the cause has a rate model; CPU, an
    // application and "unexplained" have none (plumb why says so too), and
    // on loopback the limit is often the CPU.
    let name = limit
        .split('"')
        .nth(1)
        .expect("plumb_limit_info has a limit label");
    let modelled = !matches!(name, "cpu" | "application" | "unexplained" | "none");
    assert_eq!(
        body.contains("plumb_limit_predicted_bytes_per_second{limit="),
        modelled,
        "limit {name}: {body}"
    );
    assert_promtool(&body, "a TCP probe");

    // UDP: jitter and loss.
    let (status, _, body) = exp.get(&format!("{q}&udp=1&bitrate=10M"), &[]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(sample(&body, "plumb_up"), Some(1.0), "{body}");
    assert!(
        sample(&body, "plumb_udp_jitter_seconds").is_some(),
        "{body}"
    );
    assert!(
        sample(&body, "plumb_udp_packets").is_some_and(|n| n > 10.0),
        "{body}"
    );
    assert!(
        sample(&body, "plumb_udp_loss_ratio").is_some_and(|r| (0.0..=1.0).contains(&r)),
        "{body}"
    );
    assert_promtool(&body, "a UDP probe");

    // Reverse: the server sends.
    let (status, _, body) = exp.get(&format!("{q}&reverse=1"), &[]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(sample(&body, "plumb_up"), Some(1.0), "{body}");

    // The exporter's own metrics count the three, in both formats.
    let (status, ctype, own) = exp.get("/metrics", &[]);
    assert_eq!(status, 200);
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    assert_eq!(
        sample(&own, "plumb_exporter_probes_total{result=\"success\"}"),
        Some(3.0),
        "{own}"
    );
    let (_, ctype, text) = exp.get("/metrics", &["Accept: text/plain;version=0.0.4"]);
    assert!(ctype.starts_with("text/plain"), "{ctype}");
    assert_promtool(&text, "/metrics");
}

#[test]
fn refusals_are_quick_and_one_line() {
    let exp = Exporter::start(
        port(),
        &["--target-allow", "127.0.0.1/32", "--max-time", "2"],
    );
    let cases: &[(&str, u16, &str)] = &[
        ("/probe?target=127.0.0.2", 403, "not in --target-allow"),
        ("/probe?target=127.0.0.1&port=99999", 400, "invalid port"),
        ("/probe?target=127.0.0.1&time=abc", 400, "invalid time"),
        ("/probe?target=127.0.0.1&bogus=1", 400, "unknown parameter"),
        ("/probe?port=5201", 400, "missing parameter 'target'"),
        ("/probe?target=%zz", 400, "percent"),
        (
            "/probe?target=127.0.0.1&tool=iperf",
            400,
            "invalid tool 'iperf'",
        ),
        (
            "/probe?target=127.0.0.1&tool=nuttcp&port=65535",
            400,
            "tool=nuttcp does not take",
        ),
        (
            "/probe?target=127.0.0.2&tool=nuttcp",
            403,
            "not in --target-allow",
        ),
        ("/nothing", 404, "not found"),
    ];
    for (path, want, words) in cases {
        let t0 = Instant::now();
        let (status, _, body) = exp.get(path, &[]);
        assert_eq!(status, *want, "{path}: {body}");
        assert!(body.contains(words), "{path}: {body}");
        assert_eq!(
            body.trim_end().lines().count(),
            1,
            "{path}: one line, got {body:?}"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(2),
            "{path} took {:?}",
            t0.elapsed()
        );
    }
    // The scrape timeout leaves too little time for a test.
    let (status, _, body) = exp.get(
        "/probe?target=127.0.0.1",
        &["X-Prometheus-Scrape-Timeout-Seconds: 1"],
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("scrape timeout"), "{body}");
    // Nothing listens: the probe answers, quickly, that the target is down.
    let closed = port();
    let t0 = Instant::now();
    let (status, _, body) = exp.get(&format!("/probe?target=127.0.0.1&port={closed}"), &[]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(sample(&body, "plumb_up"), Some(0.0), "{body}");
    assert!(
        t0.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t0.elapsed()
    );
    // tool=auto with no server of any tool there: down too, as quickly.
    let t0 = Instant::now();
    let (status, _, body) = exp.get(
        &format!("/probe?target=127.0.0.1&tool=auto&port={closed}"),
        &[],
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(sample(&body, "plumb_up"), Some(0.0), "{body}");
    assert!(!body.contains("plumb_probe_tool_info"), "{body}");
    assert!(
        t0.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t0.elapsed()
    );
    let (_, _, own) = exp.get("/metrics", &[]);
    assert_eq!(
        sample(&own, "plumb_exporter_probes_total{result=\"bad_request\"}"),
        Some(8.0),
        "{own}"
    );
    assert_eq!(
        sample(&own, "plumb_exporter_probes_total{result=\"forbidden\"}"),
        Some(2.0),
        "{own}"
    );
    assert_eq!(
        sample(&own, "plumb_exporter_probes_total{result=\"failure\"}"),
        Some(2.0),
        "{own}"
    );
}

#[test]
fn the_test_time_is_capped_by_max_time_and_the_scrape_timeout() {
    let _one = serial();
    let srv = Server::start(plumb_bin(), &["-s"], port());
    let exp = Exporter::start(port(), &["--max-time", "1"]);
    let (_, _, body) = exp.get(
        &format!("/probe?target=127.0.0.1&port={}&time=30", srv.port),
        &[],
    );
    assert_eq!(
        sample(&body, "plumb_probe_test_time_seconds"),
        Some(1.0),
        "{body}"
    );
    let secs = sample(&body, "plumb_test_duration_seconds").expect("duration");
    assert!((0.9..1.5).contains(&secs), "ran {secs} s with --max-time 1");
    let exp = Exporter::start(port(), &[]);
    let (_, _, body) = exp.get(
        &format!("/probe?target=127.0.0.1&port={}&time=30", srv.port),
        &["X-Prometheus-Scrape-Timeout-Seconds: 2.5"],
    );
    assert_eq!(
        sample(&body, "plumb_probe_test_time_seconds"),
        Some(1.0),
        "{body}"
    );
    let probe = sample(&body, "plumb_probe_duration_seconds").expect("probe duration");
    assert!(
        probe < 2.5,
        "the probe took {probe} s of a 2.5 s scrape timeout"
    );
}

#[test]
fn a_burst_of_50_probes_is_bounded_and_leaves_nothing_behind() {
    let _one = serial();
    let srv = Server::start(plumb_bin(), &["-s", "--max-tests", "8"], port());
    let exp = Exporter::start(port(), &["--max-probes", "2"]);
    // Warm up: tiny_http's pool keeps a few threads; measure after one request.
    let _ = exp.get("/metrics", &[]);
    let (threads0, fds0) = exp.threads_and_fds();
    let eport = exp.port;
    let sport = srv.port;
    let t0 = Instant::now();
    let workers: Vec<_> = (0..50)
        .map(|i| {
            std::thread::spawn(move || {
                // Five targets, all the one server (it listens on every loopback address).
                let q = format!("/probe?target=127.0.0.{}&port={sport}&time=1", 1 + i % 5);
                let t = Instant::now();
                let (status, _, body) = http_get(eport, &q, &[]);
                (status, body, t.elapsed())
            })
        })
        .collect();
    let mut peak = 0;
    while t0.elapsed() < Duration::from_secs(2) {
        peak = peak.max(exp.threads_and_fds().0);
        std::thread::sleep(Duration::from_millis(20));
    }
    let results: Vec<_> = workers
        .into_iter()
        .map(|w| w.join().expect("worker"))
        .collect();
    let ok = results.iter().filter(|r| r.0 == 200).count();
    let refused: Vec<_> = results
        .iter()
        .filter(|r| r.0 == 429 || r.0 == 503)
        .collect();
    assert_eq!(
        ok + refused.len(),
        50,
        "only 200, 429 and 503: {:?}",
        results.iter().map(|r| r.0).collect::<Vec<_>>()
    );
    assert!(
        (1..=2).contains(&ok),
        "{ok} probes ran; --max-probes 2 and all started together"
    );
    for r in &refused {
        assert!(
            r.2 < Duration::from_secs(1),
            "a refusal took {:?}: {}",
            r.2,
            r.1
        );
    }
    for r in results.iter().filter(|r| r.0 == 200) {
        assert_eq!(sample(&r.1, "plumb_up"), Some(1.0), "{}", r.1);
    }
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "the burst took {:?}",
        t0.elapsed()
    );
    let (_, _, own) = exp.get("/metrics", &[]);
    let counted: f64 = ["success", "failure", "busy_target", "busy_full"]
        .iter()
        .filter_map(|r| {
            sample(
                &own,
                &format!("plumb_exporter_probes_total{{result=\"{r}\"}}"),
            )
        })
        .sum();
    assert_eq!(counted, 50.0, "{own}");
    assert_eq!(
        sample(&own, "plumb_exporter_probes_running"),
        Some(0.0),
        "{own}"
    );
    // Connection threads beyond tiny_http's pool of four end 5 s after their
    // last request; wait for that, bounded.
    let t1 = Instant::now();
    let (mut threads, mut fds) = exp.threads_and_fds();
    while (threads > threads0 || fds > fds0) && t1.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(200));
        (threads, fds) = exp.threads_and_fds();
    }
    assert!(
        threads <= threads0,
        "threads {threads0} before, {threads} after (peak {peak})"
    );
    assert!(fds <= fds0, "descriptors {fds0} before, {fds} after");
    assert!(
        peak > threads0,
        "the burst was not seen ({peak} threads at most)"
    );
}

// ---- Probes of stock nuttcp and iperf 2 servers (tool=) ----

/// Whether `program flag` runs and prints `says` (on stdout or stderr).
fn says(program: &str, flag: &str, says: &str) -> bool {
    Command::new(program).arg(flag).output().is_ok_and(|o| {
        String::from_utf8_lossy(&o.stdout).contains(says)
            || String::from_utf8_lossy(&o.stderr).contains(says)
    })
}

/// Returns from the test, as a counted skip, when `program` is not the peer.
macro_rules! need_peer {
    ($program:literal, $flag:literal, $says:literal, $why:literal) => {
        if !says($program, $flag, $says) {
            plumb_testkit::skip_tool!($why);
            return;
        }
    };
}

/// A stock `nuttcp -S --nofork` with its control port on `ctl` and its data
/// port the next (as plumb's client asks for), killed when dropped.
fn nuttcp_server() -> Server {
    let (ctl, data) = (port(), port());
    assert_eq!(data, ctl + 1, "consecutive test ports");
    let c = ctl.to_string();
    // Server::start_ready adds `-p DATA`; ready once the control port listens.
    let mut srv = Server::start_ready("nuttcp", &["-S", "--nofork", "-P", &c], data, |_| true);
    wait_listening(ctl);
    srv.port = ctl;
    srv
}

/// Whether two byte counts agree within 1 %.
fn within_1pct(a: f64, b: f64) -> bool {
    a > 0.0 && b > 0.0 && (a - b).abs() <= 0.01 * a.max(b)
}

/// A successful probe's checks, whatever the tool: the tool named, the bytes
/// both sides counted non-zero, the receiver's throughput its bytes over its
/// time, and a text promtool accepts. Returns (sent, received) bytes.
fn assert_tool_probe(body: &str, tool: &str, what: &str) -> (f64, f64) {
    assert_eq!(sample(body, "plumb_up"), Some(1.0), "{what}: {body}");
    assert_eq!(
        sample(body, &format!("plumb_probe_tool_info{{tool=\"{tool}\"}}")),
        Some(1.0),
        "{what}: {body}"
    );
    let sent = sample(body, "plumb_sent_bytes").expect("sent bytes");
    let rcvd = sample(body, "plumb_received_bytes").expect("received bytes");
    let tput = sample(body, "plumb_throughput_bytes_per_second{side=\"receiver\"}")
        .expect("receiver throughput");
    let secs = sample(body, "plumb_test_duration_seconds").expect("duration");
    assert!(sent > 0.0 && rcvd > 0.0 && tput > 0.0, "{what}: {body}");
    assert!(
        (tput * secs - rcvd).abs() / rcvd < 0.02,
        "{what}: {tput} B/s * {secs} s vs {rcvd} B"
    );
    assert!(
        body.lines()
            .any(|l| l.starts_with("plumb_limit_info{limit=\"")),
        "{what}: a diagnosis: {body}"
    );
    assert_promtool(body, what);
    (sent, rcvd)
}

/// `tool=nuttcp` against a stock `nuttcp -S`: plumb's count and nuttcp's
/// (the receiver's figures are the server's own when plumb sends, the
/// sender's when it receives) agree within 1 %, each way; `--max-time`
/// caps the test, one probe of a target runs at a time whatever its tool,
/// and `tool=auto` finds the server on the port `port=` names.
#[test]
fn probes_of_a_stock_nuttcp_server_give_the_same_metrics() {
    need_peer!(
        "nuttcp",
        "-V",
        "nuttcp-",
        "nuttcp is not installed (apt-get install nuttcp)"
    );
    let _one = serial();
    let srv = nuttcp_server();
    let exp = Exporter::start(port(), &["--max-time", "1"]);
    let q = format!(
        "/probe?target=127.0.0.1&tool=nuttcp&port={}&time=30",
        srv.port
    );
    let (status, ctype, body) = exp.get(&q, &[]);
    assert_eq!(status, 200, "{body}");
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    let (sent, rcvd) = assert_tool_probe(&body, "nuttcp", "a nuttcp probe");
    assert!(
        within_1pct(sent, rcvd),
        "plumb sent {sent}, nuttcp received {rcvd}"
    );
    assert_eq!(
        sample(&body, "plumb_probe_test_time_seconds"),
        Some(1.0),
        "--max-time 1 caps time=30: {body}"
    );
    let secs = sample(&body, "plumb_test_duration_seconds").expect("duration");
    assert!((0.9..1.5).contains(&secs), "ran {secs} s with --max-time 1");

    let (status, _, body) = exp.get(&format!("{q}&reverse=1"), &[]);
    assert_eq!(status, 200, "{body}");
    let (sent, rcvd) = assert_tool_probe(&body, "nuttcp", "a reverse nuttcp probe");
    assert!(
        within_1pct(sent, rcvd),
        "nuttcp sent {sent}, plumb received {rcvd}"
    );

    // While a nuttcp probe of 127.0.0.1 runs, another of it (iperf3's, the
    // default) is refused at once.
    let (eport, q2) = (exp.port, q.clone());
    let first = std::thread::spawn(move || http_get(eport, &q2, &[]));
    let t0 = Instant::now();
    loop {
        let (_, _, own) = exp.get("/metrics", &[]);
        if sample(&own, "plumb_exporter_probes_running") == Some(1.0) {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the nuttcp probe did not start: {own}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, _, body) = exp.get("/probe?target=127.0.0.1&port=1", &[]);
    assert_eq!(status, 429, "{body}");
    let (status, _, body) = first.join().expect("the first probe");
    assert_eq!(status, 200, "{body}");
    assert_eq!(sample(&body, "plumb_up"), Some(1.0), "{body}");

    let (status, _, body) = exp.get(
        &format!("/probe?target=127.0.0.1&tool=auto&port={}&time=1", srv.port),
        &[],
    );
    assert_eq!(status, 200, "{body}");
    assert_tool_probe(&body, "nuttcp", "tool=auto against nuttcp");
}

/// `iperf -s -y C`'s lines (per connection; its sum line, id -1, left out):
/// the bytes each counted.
fn iperf2_csv_bytes(text: &str) -> Vec<f64> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.trim().split(',').collect();
            if f.len() < 9 || f[5].starts_with('-') {
                return None;
            }
            f[7].parse().ok()
        })
        .collect()
}

/// `tool=iperf2` against a stock `iperf -s`: the bytes the probe reports
/// are iperf 2's own count within 1 %; a reverse probe (its test capped by
/// the scrape timeout) and `tool=auto` succeed too.
#[test]
fn probes_of_a_stock_iperf2_server_agree_with_its_count() {
    need_peer!(
        "iperf",
        "-v",
        "iperf version 2.",
        "iperf 2 (Debian's iperf) is not installed"
    );
    let _one = serial();
    let exp = Exporter::start(port(), &[]);
    let srv = Server::start("iperf", &["-s", "-y", "C"], port());
    let (status, _, body) = exp.get(
        &format!(
            "/probe?target=127.0.0.1&tool=iperf2&port={}&time=1",
            srv.port
        ),
        &[],
    );
    assert_eq!(status, 200, "{body}");
    let (_, rcvd) = assert_tool_probe(&body, "iperf2", "an iperf 2 probe");
    // SIGINT, as a person ends it: iperf 2 then prints what it holds back.
    let _ = Command::new("kill")
        .args(["-INT", &srv.pid().to_string()])
        .status();
    let out = srv.finish(Duration::from_secs(10));
    let theirs = iperf2_csv_bytes(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(theirs.len(), 1, "one connection: {theirs:?}");
    assert!(
        within_1pct(rcvd, theirs[0]),
        "the probe says {rcvd} B received, iperf 2 counted {}",
        theirs[0]
    );

    let srv = Server::start("iperf", &["-s"], port());
    let q = format!("/probe?target=127.0.0.1&port={}", srv.port);
    // The scrape timeout caps an iperf 2 probe's test as any other's.
    let (status, _, body) = exp.get(
        &format!("{q}&tool=iperf2&reverse=1&time=30"),
        &["X-Prometheus-Scrape-Timeout-Seconds: 2.5"],
    );
    assert_eq!(status, 200, "{body}");
    assert_tool_probe(&body, "iperf2", "a reverse iperf 2 probe");
    assert_eq!(
        sample(&body, "plumb_probe_test_time_seconds"),
        Some(1.0),
        "a 2.5 s scrape timeout leaves 1 s of test: {body}"
    );
    let (status, _, body) = exp.get(&format!("{q}&tool=auto&time=1"), &[]);
    assert_eq!(status, 200, "{body}");
    assert_tool_probe(&body, "iperf2", "tool=auto against iperf 2");
}

// ---- A real Prometheus scraping the exporter ----

/// A child process killed (and reaped) when dropped, also when a test panics.
struct Proc(Option<Child>);

impl Proc {
    fn spawn(c: &mut Command) -> Proc {
        Proc(Some(
            c.stdin(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {c:?}: {e}")),
        ))
    }

    fn alive(&mut self) -> bool {
        self.0
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A directory removed when dropped.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(what: &str) -> TempDir {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("plumb-{what}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Whether Prometheus and curl can run; when not, the calling test is
/// recorded as skipped (a failure under `PLUMB_REQUIRE_TOOLS=1`) and returns.
fn have_prometheus_and_curl() -> bool {
    let missing: Vec<&str> = ["prometheus", "curl"]
        .into_iter()
        .filter(|p| !have(p))
        .collect();
    if !missing.is_empty() {
        plumb_testkit::skip_tool!(
            "{} not installed (Debian's prometheus and curl; scripts/test installs them)",
            missing.join(" and ")
        );
    }
    missing.is_empty()
}

/// Percent-encodes a PromQL expression for a query string.
fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"_-.".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Prometheus's scrape config: the blackbox pattern, each target a plumb
/// server handed to the exporter as `?target=`.
fn prometheus_config(exporter: &str, server: &str, sport: u16, link: Option<&str>) -> String {
    let link = link.map_or(String::new(), |l| format!("      link: ['{l}']\n"));
    format!(
        "global:\n  scrape_interval: 3s\n  scrape_timeout: 3s\n\
         scrape_configs:\n  - job_name: plumb\n    metrics_path: /probe\n    params:\n      port: ['{sport}']\n      time: ['1']\n{link}\
         \x20   static_configs:\n      - targets: ['{server}']\n\
         \x20   relabel_configs:\n\
         \x20     - source_labels: [__address__]\n        target_label: __param_target\n\
         \x20     - source_labels: [__param_target]\n        target_label: instance\n\
         \x20     - target_label: __address__\n        replacement: '{exporter}'\n"
    )
}

/// Runs Prometheus (through `wrap`, e.g. `ip netns exec NS`) with `config`,
/// waits (bounded) until it has scraped the probe twice, and returns the
/// instant-query results of `queries` as JSON text.
fn prometheus_scrapes(wrap: &[&str], config: &str, queries: &[&str]) -> Vec<String> {
    let dir = TempDir::new("prometheus");
    let cfg = dir.0.join("prometheus.yml");
    std::fs::write(&cfg, config).expect("write prometheus.yml");
    let pport = port();
    let listen = format!("127.0.0.1:{pport}");
    let mut argv: Vec<String> = wrap.iter().map(|s| s.to_string()).collect();
    argv.extend([
        "prometheus".to_string(),
        format!("--config.file={}", cfg.display()),
        format!("--storage.tsdb.path={}", dir.0.join("data").display()),
        format!("--web.listen-address={listen}"),
    ]);
    let log = std::fs::File::create(dir.0.join("log")).expect("log file");
    let mut prom = Proc::spawn(
        Command::new(&argv[0])
            .args(&argv[1..])
            .stdout(Stdio::null())
            .stderr(log),
    );
    // Queries go through curl in the same namespace as Prometheus.
    let get = |path: &str| -> String {
        let mut c = Command::new(if wrap.is_empty() { "curl" } else { wrap[0] });
        if !wrap.is_empty() {
            c.args(&wrap[1..]).arg("curl");
        }
        let out = c
            .args(["-s", "--max-time", "5", &format!("http://{listen}{path}")])
            .output()
            .expect("curl");
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let t0 = Instant::now();
    let scrapes = "/api/v1/query?query=".to_string() + &encode("count_over_time(plumb_up[5m])");
    loop {
        assert!(
            prom.alive(),
            "prometheus exited: {}",
            std::fs::read_to_string(dir.0.join("log")).unwrap_or_default()
        );
        let r = get(&scrapes);
        let n = r
            .split("\"value\":[")
            .nth(1)
            .and_then(|v| v.split('"').nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        if n >= 2.0 {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(40),
            "Prometheus did not scrape twice in 40 s: {r}\n{}",
            std::fs::read_to_string(dir.0.join("log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    queries
        .iter()
        .map(|q| get(&("/api/v1/query?query=".to_string() + &encode(q))))
        .collect()
}

#[test]
fn prometheus_scrapes_throughput_and_limit_through_the_exporter() {
    let _one = serial();
    if !have_prometheus_and_curl() {
        return;
    }
    let srv = Server::start(plumb_bin(), &["-s"], port());
    let exp = Exporter::start(port(), &[]);
    let config = prometheus_config(
        &format!("127.0.0.1:{}", exp.port),
        "127.0.0.1",
        srv.port,
        None,
    );
    let r = prometheus_scrapes(
        &[],
        &config,
        &[
            "plumb_throughput_bytes_per_second{side=\"receiver\"}",
            "plumb_limit_info",
            "plumb_up",
        ],
    );
    assert!(r[0].contains("\"status\":\"success\""), "{}", r[0]);
    assert!(
        r[0].contains("\"__name__\":\"plumb_throughput_bytes_per_second\""),
        "{}",
        r[0]
    );
    assert!(r[0].contains("\"instance\":\"127.0.0.1\""), "{}", r[0]);
    assert!(r[1].contains("\"limit\":\""), "{}", r[1]);
    assert!(r[2].contains("\"1\"]"), "plumb_up is 1: {}", r[2]);
}

fn wait_listening_in(p: &mut Proc, port: u16, what: &str) {
    let pid = p.0.as_ref().map_or(0, Child::id);
    let t0 = Instant::now();
    while !listening_in(pid, port) {
        assert!(p.alive(), "{what} exited early");
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{what} did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn prometheus_finds_the_receive_window_on_a_lab_link() {
    let _one = serial();
    if !can_lab() {
        return;
    }
    if !have_prometheus_and_curl() {
        return;
    }
    let names;
    {
        // Declared first, dropped last: the lab outlives everything run in it.
        let lab = HeldLab::start(&["--rate", "1gbit", "--rtt", "15ms"]);
        names = [lab.near.clone(), lab.far.clone()];
        // The far host's receive buffer is clamped as an old or misconfigured
        // host's is: autotuning may not grow past 64 KB (its namespace's sysctl only).
        let serve = format!(
            "sysctl -q -w net.ipv4.tcp_rmem='4096 65536 65536' && exec {} -s -p 5201",
            plumb_bin()
        );
        let mut srv = Proc::spawn(
            lab.exec(&lab.far)
                .args(["sh", "-c", &serve])
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        wait_listening_in(&mut srv, 5201, "the far plumb server");
        let eport = port();
        let listen = format!("127.0.0.1:{eport}");
        let mut exp = Proc::spawn(
            lab.exec(&lab.near)
                .args([
                    plumb_bin(),
                    "exporter",
                    "--listen",
                    &listen,
                    "--target-allow",
                    "198.18.0.0/15",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        wait_listening_in(&mut exp, eport, "the exporter");
        let config = prometheus_config(&listen, &lab.far_addr, 5201, Some("1g"));
        let wrap = ["ip", "netns", "exec", lab.near.as_str()];
        let r = prometheus_scrapes(
            &wrap,
            &config,
            &[
                "plumb_limit_info",
                "plumb_throughput_bytes_per_second{side=\"receiver\"}",
                "plumb_rtt_seconds",
            ],
        );
        assert!(r[0].contains("\"limit\":\"receive_window\""), "{}", r[0]);
        // 64 KB per 15 ms round trip is at most 35 Mbit/s (4.4 MB/s); the link is 1 Gbit/s.
        let value = |s: &str| -> f64 {
            s.split("\"value\":[")
                .nth(1)
                .and_then(|v| v.split('"').nth(1))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no value in {s}"))
        };
        let tput = value(&r[1]);
        assert!(
            tput > 0.0 && tput < 4.4e6,
            "{tput} B/s through a 64 KB window"
        );
        let rtt = value(&r[2]);
        assert!((0.015..0.1).contains(&rtt), "RTT {rtt} s on a 15 ms link");
        drop(exp);
        drop(srv);
    }
    let left = String::from_utf8_lossy(
        &Command::new("ip")
            .args(["netns", "list"])
            .output()
            .expect("ip netns")
            .stdout,
    )
    .to_string();
    for n in &names {
        assert!(
            !left.contains(n.as_str()),
            "namespace {n} left behind: {left}"
        );
    }
}

#[test]
fn bad_flags_are_usage_errors_and_sigterm_stops_it() {
    for args in [
        &["exporter", "--max-probes", "0"][..],
        &["exporter", "--target-allow", "10.1.2.3/8"],
        &["exporter", "--max-time", "0"],
        &["exporter", "--listen", "nowhere"],
        &["exporter", "--live-port", "80"],
        &["exporter", "--live-flows", "--live-port", "x"],
        &[
            "exporter",
            "--live-flows",
            "--live-port",
            "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17",
        ],
    ] {
        let out = run(plumb_bin(), args, Duration::from_secs(10));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
    // With the sampler running too: SIGTERM stops both.
    let mut exp = Exporter::start(port(), &["--live-flows"]);
    let (status, _, body) = exp.get("/", &[]);
    assert_eq!(status, 200);
    assert!(body.contains("/probe?target="), "{body}");
    // A HEAD of /probe would run a test for nothing: refused.
    let mut s = TcpStream::connect(("127.0.0.1", exp.port)).expect("connect");
    s.write_all(b"HEAD /probe?target=127.0.0.1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("send");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut head = String::new();
    let _ = s.read_to_string(&mut head);
    assert!(head.starts_with("HTTP/1.1 405"), "{head}");
    let pid = exp.child.id().to_string();
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
    let t0 = Instant::now();
    let st = loop {
        if let Ok(Some(st)) = exp.child.try_wait() {
            break st;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(3),
            "still running after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(st.success(), "exit after SIGTERM: {st}");
}

/// Series of the metric family `name` in `text` (sample lines only).
fn series(text: &str, name: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && l.starts_with(name))
        .map(|l| l.rsplit_once(' ').map_or(l, |(s, _)| s).to_string())
        .collect()
}

/// The sending socket's busy and receive-window-limited time so far, ms, as
/// `ss -ti` shows them for the connection to `port`.
fn sender_chrono(port: u16) -> Option<(u64, u64)> {
    let out = Command::new("ss")
        .args(["-tinH", "state", "established"])
        .arg(format!("( dport = :{port} )"))
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let ms = |key: &str| -> Option<u64> {
        let at = text.find(key)? + key.len();
        let digits: String = text[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    Some((ms("busy:")?, ms("rwnd_limited:").unwrap_or(0)))
}

/// `--live-flows`: a loopback transfer into a slow receiver (the sender held
/// by the receive window, checked with `ss` first); both ends' seconds and
/// bytes on its port grow between two scrapes, the series stay the fixed
/// set (limits × {port, other}), and promtool accepts the text.
#[test]
fn live_flows_count_seconds_and_bytes_by_limit_only() {
    if Command::new("python3").arg("-V").output().is_err() {
        plumb_testkit::skip_tool!("no python3 (scripts/test installs it)");
        return;
    }
    let _one = serial();
    let data_port = port();
    let dp = data_port.to_string();
    let exp = Exporter::start(
        port(),
        &["--live-flows", "--live-port", &dp, "--live-port", "1"],
    );
    let py = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live/peer.py");
    let py = py.display().to_string();
    let end = |role: &str, dir: &str, extra: &[&str]| {
        Proc::spawn(
            Command::new("python3")
                .args([py.as_str(), role, dir, "host=127.0.0.1", "secs=6"])
                .arg(format!("port={dp}"))
                .args(extra)
                .stdout(Stdio::null()),
        )
    };
    // A receiver that reads 4 KiB every 10 ms through an 8 KiB buffer: the
    // sender waits on its window whatever the machine's speed (with a fast
    // reader, loopback's few-µs RTT keeps a small window only partly full).
    let _recv = end("role=listen", "dir=recv", &["rcvbuf=8192", "slow=1"]);
    std::thread::sleep(Duration::from_millis(500));
    let _send = end("role=connect", "dir=send", &[]);
    // Summed over every limit: which limit each end's interval gets is the
    // live rules' (tested in live.rs and the lab tests), not the counters'.
    let total = |t: &str, name: &str| -> f64 {
        t.lines()
            .filter(|l| l.starts_with(name) && l.contains(&format!("port=\"{dp}\"")))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    let secs = |t: &str| total(t, "plumb_live_limited_seconds_total");
    // Bounded: the first scrape that sees the transfer, within 5 s.
    let t0 = Instant::now();
    let first = loop {
        let (_, _, t) = exp.get("/metrics", &[]);
        if secs(&t) > 0.0 || t0.elapsed() > Duration::from_secs(5) {
            break t;
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    let before = sender_chrono(data_port);
    std::thread::sleep(Duration::from_secs(2));
    let (_, _, second) = exp.get("/metrics", &[]);
    let after = sender_chrono(data_port);
    // The premise: between the scrapes the kernel saw the sender held by
    // the receive window for most of its busy time.
    match (before, after) {
        (Some((b0, r0)), Some((b1, r1))) if b1 > b0 && (r1 - r0) * 2 >= b1 - b0 => {}
        _ => {
            plumb_testkit::skip_premise!(
                "the sender was not receive-window limited between the scrapes: busy/rwnd_limited ms {before:?} then {after:?}"
            );
            return;
        }
    }
    // Both ends are this host's: two connections' seconds for each second
    // of wall time, give or take the sampler's one-second tick.
    let (s1, s2) = (secs(&first), secs(&second));
    assert!(
        s1 > 0.0 && s2 - s1 >= 2.0,
        "seconds on port {dp} did not grow with both ends: {s1} then {s2}\n{second}"
    );
    assert!(
        total(&second, "plumb_live_bytes_total") > total(&first, "plumb_live_bytes_total"),
        "bytes did not grow\n{second}"
    );
    // Nothing was limited on port 1 (nobody uses it).
    for l in ["receive_window", "none", "application"] {
        assert_eq!(
            sample(
                &second,
                &format!(
                    "plumb_live_limited_seconds_total{{class=\"bulk\",limit=\"{l}\",port=\"1\"}}"
                )
            ),
            Some(0.0),
            "{second}"
        );
    }
    // (9 bulk limits + 3 other classes) × (2 ports + other), before and
    // after: no per-connection series.
    for t in [&first, &second] {
        let s = series(t, "plumb_live_limited_seconds_total");
        assert_eq!(s.len(), 36, "{s:?}");
        assert!(s.iter().all(|l| !l.contains("127.0.0.1")), "{s:?}");
        assert_eq!(series(t, "plumb_live_bytes_total").len(), 36, "{t}");
    }
    let (_, _, text) = exp.get("/metrics", &["Accept: text/plain;version=0.0.4"]);
    assert_promtool(&text, "/metrics with live flows");
}
