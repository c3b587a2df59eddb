//! `plumb exporter` over real HTTP on loopback: a probe of a local plumb
//! server gives OpenMetrics that `promtool check metrics` accepts, with the
//! limit; the safety rules (allow list, malformed queries, one probe per
//! target, `--max-probes`) refuse quickly; a burst of 50 probes leaves no
//! threads or descriptors behind.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

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
        None => {
            eprintln!("skipped: promtool check of {what} (Debian's prometheus is not installed)")
        }
    }
}

fn sample(text: &str, name_and_labels: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name_and_labels)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

#[test]
fn probe_of_a_local_server_gives_openmetrics_with_the_limit() {
    let srv = Server::start(plumb_bin(), &["-s"], port(32_000));
    let exp = Exporter::start(port(32_000), &[]);
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
    assert!(
        body.contains("plumb_limit_predicted_bytes_per_second{limit="),
        "{body}"
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
        port(32_000),
        &["--target-allow", "127.0.0.1/32", "--max-time", "2"],
    );
    let cases: &[(&str, u16, &str)] = &[
        ("/probe?target=127.0.0.2", 403, "not in --target-allow"),
        ("/probe?target=127.0.0.1&port=99999", 400, "invalid port"),
        ("/probe?target=127.0.0.1&time=abc", 400, "invalid time"),
        ("/probe?target=127.0.0.1&bogus=1", 400, "unknown parameter"),
        ("/probe?port=5201", 400, "missing parameter 'target'"),
        ("/probe?target=%zz", 400, "percent"),
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
    let closed = port(32_000);
    let t0 = Instant::now();
    let (status, _, body) = exp.get(&format!("/probe?target=127.0.0.1&port={closed}"), &[]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(sample(&body, "plumb_up"), Some(0.0), "{body}");
    assert!(
        t0.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t0.elapsed()
    );
    let (_, _, own) = exp.get("/metrics", &[]);
    assert_eq!(
        sample(&own, "plumb_exporter_probes_total{result=\"bad_request\"}"),
        Some(6.0),
        "{own}"
    );
    assert_eq!(
        sample(&own, "plumb_exporter_probes_total{result=\"forbidden\"}"),
        Some(1.0),
        "{own}"
    );
    assert_eq!(
        sample(&own, "plumb_exporter_probes_total{result=\"failure\"}"),
        Some(1.0),
        "{own}"
    );
}

#[test]
fn the_test_time_is_capped_by_max_time_and_the_scrape_timeout() {
    let srv = Server::start(plumb_bin(), &["-s"], port(32_000));
    let exp = Exporter::start(port(32_000), &["--max-time", "1"]);
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
    let exp = Exporter::start(port(32_000), &[]);
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
    let srv = Server::start(plumb_bin(), &["-s", "--max-tests", "8"], port(32_000));
    let exp = Exporter::start(port(32_000), &["--max-probes", "2"]);
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
