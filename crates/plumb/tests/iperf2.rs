//! `--tool iperf2` against Debian's iperf 2.1.8 on loopback: plumb's client
//! against a stock `iperf -s [-u]`, and a stock `iperf -c` against
//! `plumb -s --tools iperf2`, over TCP and UDP, each way. Every pairing
//! compares plumb's `-J` with iperf 2's own numbers (its `-y C` lines, or
//! the text of its UDP server report): bytes within 1 %, UDP datagram and
//! loss counts equal. The server's refusals (iperf 2's dual test, a
//! malformed header) are one line each, and it keeps serving.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(30);

/// The iperf 2 binary, if `iperf -v` names version 2.
fn iperf2() -> Option<&'static str> {
    let out = Command::new("iperf").arg("-v").output().ok()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.contains("iperf version 2.").then_some("iperf")
}

macro_rules! need_iperf2 {
    () => {
        match iperf2() {
            Some(b) => b,
            None => {
                plumb_testkit::skip_tool!("iperf 2 (Debian's iperf) is not installed");
                return;
            }
        }
    };
}

/// Ends a server the way a person does (SIGINT), so that iperf 2 prints
/// what it holds back, and returns its output.
fn stop(srv: Server) -> Output {
    let _ = Command::new("kill")
        .args(["-INT", &srv.pid().to_string()])
        .status();
    srv.finish(Duration::from_secs(10))
}

/// One `-y C` line of iperf 2: bytes and, for UDP, (lost, total).
#[derive(Debug, Clone, Copy)]
struct Csv {
    bytes: u64,
    udp: Option<(u64, u64)>,
}

/// The per-stream `-y C` lines (the sum line, id -1, left out).
fn csv_lines(text: &str) -> Vec<Csv> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.trim().split(',').collect();
            if f.len() < 9 || f[5].starts_with('-') {
                return None;
            }
            let bytes = f[7].parse().ok()?;
            let udp = (f.len() >= 12)
                .then(|| Some((f[10].parse().ok()?, f[11].parse().ok()?)))
                .flatten();
            Some(Csv { bytes, udp })
        })
        .collect()
}

fn num(v: &Value, path: &[&str]) -> f64 {
    let mut x = v;
    for k in path {
        x = &x[*k];
    }
    x.as_f64()
        .unwrap_or_else(|| panic!("no number at {path:?} in {v}"))
}

fn assert_within_1pct(ours: f64, theirs: f64, what: &str) {
    assert!(theirs > 0.0, "{what}: iperf 2 counted nothing");
    let off = (ours - theirs).abs() / theirs;
    assert!(
        off <= 0.01,
        "{what}: plumb {ours} vs iperf 2 {theirs} ({:.2} % apart)",
        off * 100.0
    );
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `plumb -c --tool iperf2 -J ARGS` against a stock `iperf -s [-u] -y C`:
/// (plumb's document, iperf 2's lines).
fn plumb_to_iperf(bin: &str, udp: bool, args: &[&str]) -> (Value, Vec<Csv>) {
    let port = port();
    let mut sargs = vec!["-s", "-y", "C"];
    if udp {
        sargs.push("-u");
    }
    let srv = if udp {
        Server::start_ready(bin, &sargs, port, udp_bound)
    } else {
        Server::start(bin, &sargs, port)
    };
    let p = port.to_string();
    let mut cargs = vec![
        "-c",
        "127.0.0.1",
        "-p",
        &p,
        "--tool",
        "iperf2",
        "-J",
        "-t",
        "2",
    ];
    cargs.extend_from_slice(args);
    let out = run(plumb_bin(), &cargs, LIMIT);
    let doc = json(&out, "plumb client");
    assert!(out.status.success(), "plumb client failed: {}", text(&out));
    // iperf 2 prints a UDP reverse test's line after it has sent the last datagram.
    std::thread::sleep(Duration::from_millis(300));
    let lines = csv_lines(&String::from_utf8_lossy(&stop(srv).stdout));
    (doc, lines)
}

#[test]
fn plumb_client_tcp_sends_to_iperf_server() {
    let bin = need_iperf2!();
    let (doc, lines) = plumb_to_iperf(bin, false, &["-P", "2", "-w", "256K", "-i", "1"]);
    assert_eq!(
        lines.len(),
        2,
        "iperf 2 should count two streams: {lines:?}"
    );
    let theirs: u64 = lines.iter().map(|l| l.bytes).sum();
    let ours = num(&doc, &["end", "sum_sent", "bytes"]);
    assert_within_1pct(ours, theirs as f64, "TCP bytes plumb sent");
    let intervals = doc["intervals"].as_array().map_or(0, Vec::len);
    assert!(intervals >= 2, "-i 1 over 2 s: {intervals} intervals");
    assert_eq!(
        num(&doc, &["start", "sock_bufsize"]),
        256.0 * 1024.0,
        "-w 256K"
    );
    let granted = num(&doc, &["start", "sndbuf_actual"]);
    let range = 256.0 * 1024.0..4.0 * 1024.0 * 1024.0;
    assert!(range.contains(&granted), "-w 256K gave {granted}");
    // Each sending stream's TCP_INFO is in end.plumb, for --why.
    for i in 0..2 {
        let rtt = &doc["end"]["plumb"]["local"]["streams"][i]["tcp_info"]["rtt_us"];
        assert!(
            rtt.as_u64().is_some(),
            "stream {i}: {}",
            doc["end"]["plumb"]
        );
    }
}

#[test]
fn plumb_client_tcp_receives_from_iperf_server() {
    let bin = need_iperf2!();
    let (doc, lines) = plumb_to_iperf(bin, false, &["-R"]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let ours = num(&doc, &["end", "sum_received", "bytes"]);
    assert_within_1pct(ours, lines[0].bytes as f64, "TCP bytes plumb received");
}

#[test]
fn plumb_client_udp_sends_to_iperf_server() {
    let bin = need_iperf2!();
    let (doc, lines) = plumb_to_iperf(bin, true, &["-u", "-b", "10M", "-l", "1000"]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let Some((lost, total)) = lines[0].udp else {
        panic!("no UDP counts in iperf 2's line {lines:?}");
    };
    assert!(
        total > 1000,
        "a 10 Mbit/s test of 2 s sends thousands: {total}"
    );
    // plumb's receiver figures are the server report iperf 2 sent back.
    assert_eq!(num(&doc, &["end", "sum", "packets"]) as u64, total);
    assert_eq!(num(&doc, &["end", "sum", "lost_packets"]) as u64, lost);
    let ours = num(&doc, &["end", "sum", "bytes"]);
    assert_within_1pct(ours, lines[0].bytes as f64, "UDP bytes iperf 2 received");
}

#[test]
fn plumb_client_udp_receives_from_iperf_server() {
    let bin = need_iperf2!();
    let (doc, lines) = plumb_to_iperf(bin, true, &["-u", "-R", "-b", "5M"]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let ours = num(&doc, &["end", "sum", "bytes"]);
    assert_within_1pct(ours, lines[0].bytes as f64, "UDP bytes iperf 2 sent");
    let packets = num(&doc, &["end", "sum", "packets"]);
    assert!(
        packets > 500.0,
        "5 Mbit/s for 2 s is over 800 datagrams: {packets}"
    );
}

/// `iperf -c ARGS` against `plumb -s -1 --tools iperf2 -J`: (iperf 2's
/// output, plumb's document).
fn iperf_to_plumb(bin: &str, args: &[&str]) -> (Output, Value) {
    let port = port();
    let srv = Server::start(plumb_bin(), &["-s", "-1", "-J", "--tools", "iperf2"], port);
    let p = port.to_string();
    let mut cargs = vec!["-c", "127.0.0.1", "-p", &p, "-t", "2"];
    cargs.extend_from_slice(args);
    let out = run(bin, &cargs, LIMIT);
    assert!(out.status.success(), "iperf -c failed: {}", text(&out));
    let s = srv.finish(Duration::from_secs(15));
    (out, json(&s, "plumb server"))
}

#[test]
fn iperf_client_tcp_sends_to_plumb_server() {
    let bin = need_iperf2!();
    let (out, doc) = iperf_to_plumb(bin, &["-y", "C"]);
    let lines = csv_lines(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(lines.len(), 1, "{}", text(&out));
    let ours = num(&doc, &["end", "sum_received", "bytes"]);
    assert_within_1pct(
        ours,
        lines[0].bytes as f64,
        "TCP bytes plumb's server received",
    );
}

#[test]
fn iperf_client_tcp_receives_from_plumb_server() {
    let bin = need_iperf2!();
    let (out, doc) = iperf_to_plumb(bin, &["-R", "-y", "C"]);
    let lines = csv_lines(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(lines.len(), 1, "{}", text(&out));
    let ours = num(&doc, &["end", "sum_sent", "bytes"]);
    assert_within_1pct(ours, lines[0].bytes as f64, "TCP bytes plumb's server sent");
}

/// iperf 2's text server report: (lost, total) from `… 0.012 ms 0/1786 (0%)`.
fn server_report(text: &str) -> Option<(u64, u64)> {
    let after = text.split("Server Report:").nth(1)?;
    let line = after.lines().find(|l| l.contains(" ms "))?;
    line.split_whitespace().find_map(|w| {
        let (lost, total) = w.split_once('/')?;
        Some((lost.parse().ok()?, total.parse().ok()?))
    })
}

#[test]
fn iperf_client_udp_sends_to_plumb_server_and_gets_its_report() {
    let bin = need_iperf2!();
    let (out, doc) = iperf_to_plumb(bin, &["-u", "-b", "10M", "-e"]);
    let t = text(&out);
    assert!(
        !t.contains("did not receive ack"),
        "iperf 2 missed the report: {t}"
    );
    let Some((lost, total)) = server_report(&t) else {
        panic!("no Server Report in iperf 2's output: {t}");
    };
    assert!(total > 1000, "{t}");
    assert_eq!(num(&doc, &["end", "sum", "packets"]) as u64, total, "{t}");
    assert_eq!(
        num(&doc, &["end", "sum", "lost_packets"]) as u64,
        lost,
        "{t}"
    );
}

#[test]
fn iperf_client_udp_receives_from_plumb_server() {
    let bin = need_iperf2!();
    let (out, doc) = iperf_to_plumb(bin, &["-u", "-R", "-b", "5M", "-y", "C"]);
    let lines = csv_lines(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(lines.len(), 1, "{}", text(&out));
    let ours = num(&doc, &["end", "sum_sent", "bytes"]);
    assert_within_1pct(ours, lines[0].bytes as f64, "UDP bytes plumb's server sent");
}

#[test]
fn dual_and_tradeoff_tests_are_refused_in_one_line_and_the_client_exits() {
    let bin = need_iperf2!();
    for (flag, name) in [("-d", "dual test (-d)"), ("-r", "tradeoff test (-r)")] {
        let (serve, back) = (port(), port());
        let srv = Server::start(plumb_bin(), &["-s", "-1", "--tools", "iperf2"], serve);
        let (p, b) = (serve.to_string(), back.to_string());
        let out = try_run(
            bin,
            &["-c", "127.0.0.1", "-p", &p, "-t", "1", flag, "-L", &b],
            LIMIT,
        );
        assert!(
            out.is_ok(),
            "iperf -c {flag} did not exit against plumb's server"
        );
        let s = srv.finish(Duration::from_secs(10));
        let err = String::from_utf8_lossy(&s.stderr);
        let lines: Vec<&str> = err.lines().filter(|l| l.contains(name)).collect();
        assert_eq!(lines.len(), 1, "{flag}: server stderr: {err}");
    }
}

#[test]
fn client_refuses_what_iperf2_has_no_room_for_before_connecting() {
    // Port 1: nothing listens, so a refusal that waited for a connection
    // would say so instead.
    for (flag, want) in [("--bidir", "--bidir"), ("-O", "-O"), ("-Z", "-Z")] {
        let mut a = vec!["-c", "127.0.0.1", "-p", "1", "--tool", "iperf2", flag];
        if flag == "-O" {
            a.push("1");
        }
        let out = run(plumb_bin(), &a, Duration::from_secs(10));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert!(
            err.contains(&format!("--tool iperf2 does not take {want}"))
                && err.trim_end().lines().count() == 1,
            "{flag}: {err}"
        );
    }
}

#[test]
fn iperf_client_parallel_window_length_interval() {
    let bin = need_iperf2!();
    let port = port();
    let srv = Server::start(plumb_bin(), &["-s", "--tools", "iperf2"], port);
    let p = port.to_string();
    let args = [
        "-c",
        "127.0.0.1",
        "-p",
        &p,
        "-t",
        "2",
        "-P",
        "2",
        "-w",
        "256K",
        "-l",
        "64K",
        "-i",
        "1",
        "-y",
        "C",
    ];
    let out = run(bin, &args, LIMIT);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let second: Vec<&str> = stdout
        .lines()
        .filter(|l| {
            l.split(',').nth(6) == Some("1.0-2.0")
                && !l.split(',').nth(5).is_some_and(|id| id.starts_with('-'))
        })
        .collect();
    assert_eq!(second.len(), 2, "two streams' second interval: {stdout}");
    let s = stop(srv);
    let err = String::from_utf8_lossy(&s.stderr);
    let served = err.lines().filter(|l| l.contains("iperf 2 test:")).count();
    assert_eq!(served, 2, "server stderr: {err}");
    // The server reported each connection's intervals too.
    let report = String::from_utf8_lossy(&s.stdout);
    assert!(report.matches(" 1.00-").count() >= 2, "{report}");
}

#[test]
fn malformed_header_gets_one_line_and_the_server_keeps_serving() {
    let bin = need_iperf2!();
    let port = port();
    let srv = Server::start(plumb_bin(), &["-s", "--tools", "iperf2"], port);
    // Flags that mark no header, then bytes: what a stray client might send.
    let mut fake = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    fake.write_all(&[0x12, 0x34, 0, 0, 1, 2, 3, 4])
        .expect("write");
    // A header whose length field says 1 byte.
    let mut short = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    short.write_all(&[0x40, 0x01, 0x00, 0x02]).expect("write");
    let t0 = Instant::now();
    let p = port.to_string();
    let out = run(
        bin,
        &["-c", "127.0.0.1", "-p", &p, "-t", "1", "-y", "C"],
        LIMIT,
    );
    assert!(t0.elapsed() < LIMIT);
    let lines = csv_lines(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(lines.len(), 1, "the server stopped serving: {}", text(&out));
    assert!(lines[0].bytes > 0);
    drop((fake, short));
    let s = stop(srv);
    let err = String::from_utf8_lossy(&s.stderr);
    let no_header: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("no iperf 2 test header"))
        .collect();
    assert_eq!(no_header.len(), 1, "server stderr: {err}");
    let bad_len: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("header length 1 "))
        .collect();
    assert_eq!(bad_len.len(), 1, "server stderr: {err}");
}

/// The 76 bytes 2.1.8's `iperf -c … -u -t 1 -b 1M -l 100` opened its flow
/// with (captured on loopback; the proto crate's fixtures decode them).
const UDP_FIRST: &str = "000000016b0b6aaa000382c80000000048010098000000010000afc90000006400000000ffffff9c000000000000000000000000000200010008000300000000001000000000000000000000";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap_or(0))
        .collect()
}

#[test]
fn silent_peers_are_ended_in_one_line_each() {
    let _bin = need_iperf2!();
    let port = port();
    let args = [
        "-s",
        "--tools",
        "iperf2",
        "--handshake-timeout",
        "500",
        "--rcv-timeout",
        "1000",
    ];
    let srv = Server::start(plumb_bin(), &args, port);
    // A TCP connection that never sends its header.
    let silent = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    // A UDP flow that opens with a header and then goes quiet.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    udp.send_to(&unhex(UDP_FIRST), ("127.0.0.1", port))
        .expect("send");
    // A UDP datagram too short for the header.
    udp.send_to(&[0u8; 20], ("127.0.0.1", port)).expect("send");
    std::thread::sleep(Duration::from_millis(2500));
    drop(silent);
    let s = stop(srv);
    let err = String::from_utf8_lossy(&s.stderr);
    let count = |what: &str| err.lines().filter(|l| l.contains(what)).count();
    assert_eq!(count("no iperf 2 test header arrived in time"), 1, "{err}");
    assert_eq!(count("ended without its final datagram"), 1, "{err}");
    assert_eq!(
        count("shorter than"),
        0,
        "the flow's own address is counted, not refused: {err}"
    );
}

#[test]
fn iperf_client_enhanced_output_both_ways() {
    let bin = need_iperf2!();
    for (args, column) in [
        (&["-e"][..], "Write/Err"),
        (&["-e", "-R"][..], "Reads=Dist"),
    ] {
        let (out, doc) = iperf_to_plumb(bin, args);
        let t = text(&out);
        assert!(t.contains(column), "iperf 2's -e report: {t}");
        assert!(num(&doc, &["end", "sum_received", "bytes"]) > 0.0, "{t}");
    }
}

#[test]
fn the_wrong_peer_is_one_line_and_no_hang() {
    let port = port();
    let srv = Server::start(iperf3_bin(), &["-s"], port);
    let p = port.to_string();
    let out = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "-p", &p, "--tool", "iperf2", "-t", "2"],
        LIMIT,
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("plumb: error"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("iperf -s"), "{err}");
    drop(srv);
}

#[test]
fn why_explains_a_test_against_iperf_server() {
    let bin = need_iperf2!();
    let port = port();
    let srv = Server::start(bin, &["-s"], port);
    let p = port.to_string();
    let args = [
        "-c",
        "127.0.0.1",
        "-p",
        &p,
        "--tool",
        "iperf2",
        "-t",
        "2",
        "--why",
    ];
    let out = run(plumb_bin(), &args, LIMIT);
    assert!(out.status.success(), "{}", text(&out));
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(t.contains("Evidence:"), "{t}");
    // The sender's TCP_INFO reached the diagnosis.
    assert!(!t.contains("limit counters"), "{t}");
    drop(srv);
}
