//! nuttcp's wire protocol against Debian 12's nuttcp 6.1.2 on loopback:
//! `plumb -c --tool nuttcp` against a stock `nuttcp -S`, and a stock
//! `nuttcp` client against `plumb -s --tools nuttcp`, over TCP and UDP,
//! each way (`-R` / nuttcp's `-r`), and with the data connection turned
//! round (`--flip` / `-F`), and nuttcp's client in its parse format
//! (`-fparse`) as well as its default one. Each run compares plumb's own
//! byte count with nuttcp's own within 1 % (a UDP run only when the kernel dropped no
//! datagram for a full buffer meanwhile; otherwise a counted skip). A malformed request gets a one-line refusal
//! and the server goes on serving.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// The nuttcp binary, or `None` (the test then records a skip).
fn nuttcp() -> Option<&'static str> {
    let ok = Command::new("nuttcp")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some("nuttcp")
}

/// A control port with the three after it free for data, taken at once.
fn ports() -> u16 {
    port_block(4)
}

/// A `nuttcp -S` in the foreground on `ctl`, killed when dropped.
struct NuttcpServer(Child);

impl NuttcpServer {
    fn start(ctl: u16) -> NuttcpServer {
        let child = Command::new("nuttcp")
            .args([
                "-S",
                "--nofork",
                "-P",
                &ctl.to_string(),
                "-p",
                &(ctl + 1).to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nuttcp -S starts");
        let s = NuttcpServer(child);
        wait_listening(ctl);
        s
    }
}

impl Drop for NuttcpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The kernel's count of UDP datagrams dropped for a full receive buffer
/// (`RcvbufErrors` in /proc/net/snmp), host-wide.
fn udp_buffer_drops() -> u64 {
    let text = std::fs::read_to_string("/proc/net/snmp").unwrap_or_default();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.starts_with("Udp:"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let (Some(names), Some(values)) = (rows.first(), rows.get(1)) else {
        return 0;
    };
    names
        .iter()
        .position(|n| *n == "RcvbufErrors")
        .and_then(|i| values.get(i))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Whether two byte counts agree within 1 %.
fn within_1pct(a: f64, b: f64) -> bool {
    a > 0.0 && b > 0.0 && (a - b).abs() <= 0.01 * a.max(b)
}

/// plumb's client against `nuttcp -S` with `args`, `-J`: the document.
fn plumb_against_nuttcp(args: &[&str]) -> Value {
    let ctl = ports();
    let _srv = NuttcpServer::start(ctl);
    let p = ctl.to_string();
    let mut a = vec![
        "-c",
        "127.0.0.1",
        "--tool",
        "nuttcp",
        "-p",
        &p,
        "-t",
        "2",
        "-J",
    ];
    a.extend_from_slice(args);
    let out = run(plumb_bin(), &a, Duration::from_secs(40));
    let v = json(&out, "plumb client");
    assert_clean(&v, "plumb client");
    v
}

/// Checks plumb's own count against nuttcp's in a client document: the
/// sending side's when plumb sent, the receiving side's when it received.
fn client_counts_agree(v: &Value, what: &str) {
    let sent = num(v, "end.sum_sent.bytes");
    let received = num(v, "end.sum_received.bytes");
    assert!(
        within_1pct(sent, received),
        "{what}: sent {sent} and received {received} differ by over 1 %"
    );
}

/// Returns from the test, as a counted skip, when nuttcp is not installed.
macro_rules! need_nuttcp {
    () => {
        if nuttcp().is_none() {
            plumb_testkit::skip_tool!("nuttcp is not installed (apt-get install nuttcp)");
            return;
        }
    };
}

#[test]
fn plumb_client_against_nuttcp_server() {
    need_nuttcp!();
    for (what, args) in [
        ("tcp send", vec![]),
        ("tcp receive", vec!["-R"]),
        ("tcp send --flip", vec!["--flip"]),
        ("tcp receive --flip", vec!["-R", "--flip"]),
        ("udp send", vec!["-u", "-b", "10M"]),
        ("udp receive", vec!["-u", "-b", "10M", "-R"]),
        ("udp send -P 2", vec!["-u", "-b", "10M", "-P", "2"]),
        (
            "udp receive -P 3 -i 1",
            vec!["-u", "-b", "10M", "-P", "3", "-R", "-i", "1"],
        ),
    ] {
        let drops = udp_buffer_drops();
        let v = plumb_against_nuttcp(&args);
        let streams = args
            .iter()
            .position(|a| *a == "-P")
            .map_or(1, |i| args[i + 1].parse().expect("a count"));
        assert_eq!(v["start"]["test_start"]["num_streams"], streams, "{what}");
        // The scenario: one socket per stream, on data ports one apart.
        let ports: Vec<u64> = v["start"]["connected"]
            .as_array()
            .expect("connected")
            .iter()
            .map(|c| match c["remote_port"].as_u64() {
                Some(0) | None => c["local_port"].as_u64().expect("a port"),
                Some(p) => p,
            })
            .collect();
        let first = ports.first().copied().unwrap_or(0);
        assert_eq!(
            ports,
            (first..first + streams).collect::<Vec<_>>(),
            "{what}"
        );
        if args.contains(&"-u") && udp_buffer_drops() > drops {
            // The scenario: no datagram lost. A receiver that fell behind on
            // a busy host (nuttcp keeps the system's small UDP buffer) drops
            // them in the kernel, which counts them.
            plumb_testkit::skip_premise!(
                "{what}: the kernel dropped UDP datagrams for a full buffer"
            );
            continue;
        }
        client_counts_agree(&v, what);
    }
}

#[test]
fn plumb_client_prints_nuttcps_summary() {
    need_nuttcp!();
    let ctl = ports();
    let _srv = NuttcpServer::start(ctl);
    let p = ctl.to_string();
    let out = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "--tool", "nuttcp", "-p", &p, "-t", "1"],
        Duration::from_secs(30),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let brief = text
        .lines()
        .find(|l| l.contains(" MB / ") && l.contains("%TX") && l.contains("%RX"))
        .unwrap_or_else(|| panic!("no nuttcp summary line in {text}"));
    assert!(
        brief.contains(" Mbps ") && brief.contains(" retrans"),
        "{brief}"
    );
    assert!(
        text.contains("sender") && text.contains("receiver"),
        "{text}"
    );
}

#[test]
fn why_explains_a_test_against_nuttcp() {
    need_nuttcp!();
    let ctl = ports();
    let _srv = NuttcpServer::start(ctl);
    let p = ctl.to_string();
    let out = run(
        plumb_bin(),
        &[
            "-c",
            "127.0.0.1",
            "--tool",
            "nuttcp",
            "-p",
            &p,
            "-t",
            "2",
            "--why",
        ],
        Duration::from_secs(60),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The diagnosis names its evidence and that the peer is not plumb.
    assert!(
        text.contains("Evidence:") && text.contains("the peer is not plumb"),
        "{text}"
    );
}

/// A `plumb -s --tools nuttcp -1 -J` on `ctl`.
fn plumb_nuttcp_server(ctl: u16) -> Server {
    Server::start(plumb_bin(), &["-s", "--tools", "nuttcp", "-1", "-J"], ctl)
}

/// The first "MB in … real seconds" figure of a nuttcp client's `-v`
/// output: the client's own count (the server's follows it).
fn nuttcp_own_bytes(text: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.contains(" MB in ") && l.contains("real seconds"))
        .unwrap_or_else(|| panic!("no figures in nuttcp's output: {text}"));
    let mb: f64 = line
        .split_once(": ")
        .and_then(|(_, r)| r.split_whitespace().next())
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("unreadable figures: {line}"));
    mb * 1_048_576.0
}

#[test]
fn nuttcp_client_against_plumb_server() {
    need_nuttcp!();
    for (what, args, plumb_sends) in [
        ("tcp send", vec![], false),
        ("tcp receive", vec!["-r"], true),
        ("tcp send -F", vec!["-F"], false),
        ("tcp receive -F", vec!["-r", "-F"], true),
        (
            "tcp -w128 -l8192 -i1",
            vec!["-w128", "-l8192", "-i1"],
            false,
        ),
        ("udp send", vec!["-u", "-R", "10m", "-i1"], false),
        ("udp receive", vec!["-u", "-R", "10m", "-r"], true),
        // Several UDP streams, one port each: a nuttcp receiver reads them
        // in turn, and with -i fails the test on an interval without data.
        (
            "udp send -N2 -i1",
            vec!["-u", "-R", "10m", "-N2", "-i1"],
            false,
        ),
        (
            "udp receive -N3 -i1",
            vec!["-u", "-R", "10m", "-r", "-N3", "-i1"],
            true,
        ),
    ] {
        let ctl = ports();
        let drops = udp_buffer_drops();
        let srv = plumb_nuttcp_server(ctl);
        let mut a = vec!["-v"];
        a.extend_from_slice(&args);
        let text = stock_client_t2(ctl, &a, what);
        let theirs = nuttcp_own_bytes(&text);
        let s = json(&srv.finish(Duration::from_secs(20)), "plumb server");
        assert_clean(&s, "plumb server");
        let path = if plumb_sends {
            "end.sum_sent.bytes"
        } else {
            "end.sum_received.bytes"
        };
        let ours = num(&s, path);
        if args.contains(&"-u") && udp_buffer_drops() > drops {
            plumb_testkit::skip_premise!(
                "{what}: the kernel dropped UDP datagrams for a full buffer"
            );
            continue;
        }
        assert!(
            within_1pct(ours, theirs),
            "{what}: plumb counted {ours}, nuttcp {theirs}"
        );
    }
}

/// The figures of a nuttcp client's one-line summary, by the keys its
/// `-fparse` form uses (`megabytes`, `real_seconds`, `rate_Mbps`,
/// `tx_cpu`, `rx_cpu`, and for UDP `drop` and `pkt`), read from either
/// form; `None` when the output has no summary.
fn nuttcp_summary(text: &str) -> Option<Vec<(String, f64)>> {
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains("real_seconds=") || (l.contains(" MB / ") && l.contains("%TX")))?;
    if line.contains("real_seconds=") {
        return Some(
            line.split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
                .collect(),
        );
    }
    // "  2.3906 MB /   2.01 sec =    9.9997 Mbps 87 %TX 0 %RX 0 / 306 drop/pkt 0.00 %loss"
    let w: Vec<&str> = line.split_whitespace().collect();
    let keys = [
        (0, "megabytes"),
        (3, "real_seconds"),
        (6, "rate_Mbps"),
        (8, "tx_cpu"),
        (10, "rx_cpu"),
        (12, "drop"),
        (14, "pkt"),
    ];
    Some(
        keys.iter()
            .filter_map(|(i, k)| Some((k.to_string(), w.get(*i)?.parse().ok()?)))
            .collect(),
    )
}

/// One figure of a summary, failing the test when it is missing.
fn figure(summary: &[(String, f64)], key: &str, text: &str) -> f64 {
    summary
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no {key} in nuttcp's summary: {text}"))
}

#[test]
fn nuttcp_client_summary_in_either_format_against_plumb_server() {
    need_nuttcp!();
    // The client's summary shows the server's closing figures: for a
    // sending client the bytes and seconds, the server's CPU, and for UDP
    // received by the client, the datagrams the server sent. Against a
    // server that answered in the wrong format they read 0.
    for (what, args, plumb_sends) in [
        ("tcp send -fparse", vec!["-fparse"], false),
        ("tcp receive -fparse", vec!["-fparse", "-r"], true),
        (
            "tcp send -fparse -i1 -frunningtotal",
            vec!["-fparse", "-i1", "-frunningtotal", "-T3"],
            false,
        ),
        (
            "udp send -fparse -i1",
            vec!["-fparse", "-u", "-R", "10m", "-i1", "-T3"],
            false,
        ),
        (
            "udp receive -fparse",
            vec!["-fparse", "-u", "-R", "10m", "-r"],
            true,
        ),
        ("tcp send, default format", vec![], false),
        ("tcp receive, default format", vec!["-r"], true),
        (
            "udp receive, default format",
            vec!["-u", "-R", "10m", "-r"],
            true,
        ),
    ] {
        let ctl = ports();
        let drops = udp_buffer_drops();
        let srv = plumb_nuttcp_server(ctl);
        let text = stock_client_t2(ctl, &args, what);
        let s = json(&srv.finish(Duration::from_secs(20)), "plumb server");
        assert_clean(&s, "plumb server");
        let udp = args.contains(&"-u");
        if udp && udp_buffer_drops() > drops {
            plumb_testkit::skip_premise!(
                "{what}: the kernel dropped UDP datagrams for a full buffer"
            );
            continue;
        }
        let sum = nuttcp_summary(&text).unwrap_or_else(|| panic!("{what}: no summary in {text}"));
        let parse = args.contains(&"-fparse");
        assert_eq!(
            text.contains("real_seconds="),
            parse,
            "{what}: the summary is not in the asked format: {text}"
        );
        let ours = num(
            &s,
            if plumb_sends {
                "end.sum_sent.bytes"
            } else {
                "end.sum_received.bytes"
            },
        );
        let mb = figure(&sum, "megabytes", &text);
        let secs = figure(&sum, "real_seconds", &text);
        assert!(
            within_1pct(mb * 1_048_576.0, ours) && secs > 0.0,
            "{what}: nuttcp's summary says {mb} MB in {secs} s, plumb counted {ours} bytes: {text}"
        );
        let rate = figure(&sum, "rate_Mbps", &text);
        assert!(
            within_1pct(rate, mb * 8.388_608 / secs),
            "{what}: {rate} Mbps for {mb} MB in {secs} s"
        );
        // The server's CPU is the figure plumb's record has.
        let cpu = num(&s, "end.cpu_utilization_percent.host_total").round();
        let theirs = figure(&sum, if plumb_sends { "tx_cpu" } else { "rx_cpu" }, &text);
        assert_eq!(theirs, cpu, "{what}: the server's CPU: {text}");
        if parse && plumb_sends {
            // The client finds no RTT in a server's -fparse lines.
            assert!(!text.contains("rtt_ms="), "{what}: {text}");
        }
        if udp && plumb_sends {
            let pkt = figure(&sum, "pkt", &text);
            let sent = num(&s, "end.sum_sent.packets");
            assert!(
                within_1pct(pkt, sent) && figure(&sum, "drop", &text) == 0.0,
                "{what}: nuttcp says the server sent {pkt} datagrams, plumb {sent}: {text}"
            );
        }
        if args.contains(&"-i1") {
            // A sending client prints the interval lines as they come (the
            // parse form's last one only after the data, which it drops).
            let lines: Vec<&str> = text.lines().filter(|l| l.contains(" real_sec=")).collect();
            assert!(
                !lines.is_empty()
                    && lines
                        .iter()
                        .all(|l| !l.starts_with("megabytes=0.0000 ") && l.contains(" rate_Mbps=")),
                "{what}: interval lines: {text}"
            );
            if args.contains(&"-frunningtotal") {
                assert!(
                    lines.iter().all(|l| l.contains(" total_megabytes=")),
                    "{what}: {text}"
                );
            }
            if udp {
                assert!(
                    lines
                        .iter()
                        .all(|l| l.contains(" drop=") && l.contains(" data_loss=")),
                    "{what}: {text}"
                );
            }
        }
    }
}

#[test]
fn an_output_option_plumb_cannot_honour_is_refused_by_name() {
    need_nuttcp!();
    let ctl = ports();
    let _srv = Server::start(plumb_bin(), &["-s", "--tools", "nuttcp"], ctl);
    let (c, d) = (ctl.to_string(), (ctl + 1).to_string());
    // -fdebugretrans asks a transmitting server for its kernel's TCP
    // figures in nuttcp's own debug lines.
    let out = run(
        "nuttcp",
        &[
            "-P",
            &c,
            "-p",
            &d,
            "-T1",
            "-r",
            "-fdebugretrans",
            "127.0.0.1",
        ],
        Duration::from_secs(20),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("Error:")).collect();
    assert!(
        !out.status.success() && errors.len() == 1 && errors[0].contains("-fdebugretrans"),
        "{err}"
    );
    // The server goes on: the same option with the client sending changes
    // nothing the server sends, and runs.
    let out = run(
        "nuttcp",
        &["-P", &c, "-p", &d, "-T1", "-fdebugretrans", "127.0.0.1"],
        Duration::from_secs(20),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("Mbps"), "{text}");
}

/// Sends `bytes` to the server's control port and reads its answer to the
/// close (bounded: the server closes, or the read times out).
fn exchange(ctl: u16, bytes: &[u8]) -> String {
    let mut s = connect(ctl);
    s.set_read_timeout(Some(Duration::from_secs(15)))
        .expect("timeout");
    let _ = s.write_all(bytes);
    let mut out = Vec::new();
    let _ = std::io::Read::read_to_end(&mut s, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// A stock 6.1.2 client's request for a 1 s send (captured on loopback).
const STOCK_REQUEST: &str = "buflen = 65536, nbuf = 2147483647, win = 0, nstream = 1, rate = 4294967295, port = 25001, trans = 1, braindead = 0, timeout = 1.000000, udp = 0, vers = 6.1.2, interval = 0.000000, reverse = 0, format = 2048, traceroute = 0, irate = 0, thirdparty = _NULL_ , multicast = 0 , datamss = 0 , tos = 0 , nbuf_bytes = 0 , rate_pps = 0 , nodelay = 0";

#[test]
fn a_second_client_is_told_the_server_is_busy() {
    need_nuttcp!();
    let ctl = ports();
    let _srv = Server::start(plumb_bin(), &["-s", "--tools", "nuttcp"], ctl);
    let (c, d) = (ctl.to_string(), (ctl + 1).to_string());
    let first = Command::new("nuttcp")
        .args(["-P", &c, "-p", &d, "-T4", "127.0.0.1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nuttcp runs");
    let guard = Killed(first);
    // The scenario: the first test is running (its data connection is up;
    // the server's data listener lives only until that connection comes).
    let t0 = Instant::now();
    while !connected(ctl + 1) && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    if !connected(ctl + 1) {
        plumb_testkit::skip_premise!("the first nuttcp test did not start within 5 s");
        return;
    }
    let out = run(
        "nuttcp",
        &["-P", &c, "-p", &d, "-T1", "127.0.0.1"],
        Duration::from_secs(20),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("busy"), "{err}");
    let first = guard.wait(Duration::from_secs(20));
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
}

#[test]
fn a_data_port_in_use_is_refused_with_its_reason_and_the_server_goes_on() {
    need_nuttcp!();
    let ctl = ports();
    let _srv = Server::start(plumb_bin(), &["-s", "--tools", "nuttcp"], ctl);
    let (c, d) = (ctl.to_string(), (ctl + 1).to_string());
    // The scenario: another program holds the UDP port of a test's second
    // stream, and the TCP data port.
    let udp = std::net::UdpSocket::bind(("127.0.0.1", ctl + 2)).expect("bind UDP");
    let tcp = std::net::TcpListener::bind(("127.0.0.1", ctl + 1)).expect("listen TCP");
    for (what, args) in [("udp -N2", vec!["-u", "-N2", "-R", "10m"]), ("tcp", vec![])] {
        let mut a = vec!["-P", c.as_str(), "-p", d.as_str(), "-T1"];
        a.extend_from_slice(&args);
        a.push("127.0.0.1");
        let out = run("nuttcp", &a, Duration::from_secs(20));
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "{what}: the test ran: {text}");
        assert!(text.contains("Address already in use"), "{what}: {text}");
    }
    // Nothing was sent to the program that holds the TCP port.
    tcp.set_nonblocking(true).expect("nonblocking");
    assert!(
        tcp.accept().is_err(),
        "a data connection reached the other program"
    );
    drop((udp, tcp));
    stock_client_t2(ctl, &["-u", "-N2", "-R", "10m"], "after the refusals");
}

/// A stock `nuttcp -T2 ARGS 127.0.0.1` against the server on control port
/// `ctl` (data on `ctl + 1`): its standard output, after checking it
/// succeeded.
fn stock_client_t2(ctl: u16, args: &[&str], what: &str) -> String {
    let (c, d) = (ctl.to_string(), (ctl + 1).to_string());
    let mut a = vec!["-P", c.as_str(), "-p", d.as_str(), "-T2"];
    a.extend_from_slice(args);
    a.push("127.0.0.1");
    let out = run("nuttcp", &a, Duration::from_secs(40));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{what}: nuttcp failed: {text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Whether an established TCP connection has `port` at either end.
fn connected(port: u16) -> bool {
    let want = format!(":{port:04X}");
    ["tcp", "tcp6"].iter().any(|f| {
        std::fs::read_to_string(format!("/proc/net/{f}")).is_ok_and(|t| {
            t.lines().skip(1).any(|l| {
                let c: Vec<&str> = l.split_whitespace().collect();
                c.len() > 3 && (c[1].ends_with(&want) || c[2].ends_with(&want)) && c[3] == "01"
            })
        })
    })
}

/// A child killed when dropped, unless waited for.
struct Killed(Child);

impl Killed {
    fn wait(mut self, limit: Duration) -> std::process::Output {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if let Ok(Some(_)) = self.0.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let mut out = Vec::new();
        let mut err = Vec::new();
        if let Some(mut o) = self.0.stdout.take() {
            let _ = std::io::Read::read_to_end(&mut o, &mut out);
        }
        if let Some(mut e) = self.0.stderr.take() {
            let _ = std::io::Read::read_to_end(&mut e, &mut err);
        }
        let status = self.0.wait().expect("status");
        std::process::Output {
            status,
            stdout: out,
            stderr: err,
        }
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_servers_limits_are_refused_with_their_reason() {
    need_nuttcp!();
    let ctl = ports();
    let _srv = Server::start(
        plumb_bin(),
        &["-s", "--tools", "nuttcp", "--max-duration", "1"],
        ctl,
    );
    let (c, d) = (ctl.to_string(), (ctl + 1).to_string());
    let stock = run(
        "nuttcp",
        &["-P", &c, "-p", &d, "-T5", "127.0.0.1"],
        Duration::from_secs(20),
    );
    let err = String::from_utf8_lossy(&stock.stderr);
    assert!(
        !stock.status.success() && err.contains("allows 1 s"),
        "{err}"
    );
    let ours = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "--tool", "nuttcp", "-p", &c, "-t", "5"],
        Duration::from_secs(20),
    );
    let err = String::from_utf8_lossy(&ours.stderr);
    assert!(
        !ours.status.success() && err.contains("allows 1 s"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn a_silent_data_connection_ends_at_the_receive_timeout() {
    let ctl = ports();
    let _srv = Server::start(
        plumb_bin(),
        &["-s", "--tools", "nuttcp", "--rcv-timeout", "1000"],
        ctl,
    );
    let mut s = connect(ctl);
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let req = STOCK_REQUEST
        .replace("timeout = 1.000000", "timeout = 30.000000")
        .replace("port = 25001", &format!("port = {}", ctl + 1));
    s.write_all(format!("HELO nuttcp v6.1.2\n{req}\n").as_bytes())
        .expect("write");
    let mut r = BufReader::new(s.try_clone().expect("clone"));
    let mut answer = String::new();
    for _ in 0..2 {
        answer.clear();
        let _ = r.read_line(&mut answer);
    }
    assert_eq!(answer, "OK v6.1.2\n");
    // The data connection, silent: the 30 s test ends after about 1 s.
    let t0 = Instant::now();
    while !listening(ctl + 1) && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let _data = connect(ctl + 1);
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut r, &mut rest);
    let took = t0.elapsed();
    assert!(
        took < Duration::from_secs(15),
        "the test ran {took:?}: {rest}"
    );
}

#[test]
fn client_refuses_what_nuttcp_cannot_do() {
    // Refused before any connection: no server is needed.
    for (args, want) in [
        (vec!["--bidir"], "--bidir"),
        (vec!["-n", "1M"], "-n/-k"),
        (vec!["-u", "--flip"], "--flip"),
        (vec!["-O", "1"], "-O"),
    ] {
        let mut a = vec!["-c", "127.0.0.1", "--tool", "nuttcp", "-p", "1"];
        a.extend_from_slice(&args);
        let out = run(plumb_bin(), &a, Duration::from_secs(10));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} ran");
        assert!(
            err.contains(want) && err.trim_end().lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    let out = run(
        plumb_bin(),
        &["-s", "--flip", "-p", "1"],
        Duration::from_secs(10),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("client flag"),
        "{err}"
    );
    let out = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "--flip"],
        Duration::from_secs(10),
    );
    assert!(
        !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--tool nuttcp")
    );
}

#[test]
fn malformed_request_is_refused_and_the_server_goes_on() {
    need_nuttcp!();
    let ctl = ports();
    let _srv = Server::start(plumb_bin(), &["-s", "--tools", "nuttcp"], ctl);
    let mut s = connect(ctl);
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s.write_all(b"HELO nuttcp v6.1.2\nbuflen = 65536, nstream = 99999, garbage\n")
        .expect("write");
    let mut lines = Vec::new();
    let mut r = BufReader::new(s);
    for _ in 0..5 {
        let mut l = String::new();
        if r.read_line(&mut l).unwrap_or(0) == 0 {
            break;
        }
        lines.push(l.trim_end().to_string());
    }
    assert_eq!(
        lines.first().map(String::as_str),
        Some("HELO nuttcp v6.1.2"),
        "{lines:?}"
    );
    // As a stock server refuses: KO, the reason on one line, KO.
    assert_eq!(lines.get(1).map(String::as_str), Some("KO"), "{lines:?}");
    let refusal = lines.get(2).cloned().unwrap_or_default();
    assert!(
        refusal.contains("Error:") && refusal.contains("key = value"),
        "{lines:?}"
    );
    assert_eq!(lines.get(3).map(String::as_str), Some("KO"), "{lines:?}");
    // Other hostile openings are refused the same way: an overlong line,
    // binary bytes, another protocol's greeting.
    let long = "x".repeat(5000);
    for bytes in [
        long.as_bytes(),
        b"\x00\x01\x02\n",
        b"GET / HTTP/1.0\r\n\r\n",
    ] {
        let text = exchange(ctl, bytes);
        let errors: Vec<&str> = text.lines().filter(|l| l.contains("Error:")).collect();
        assert!(errors.len() == 1 && text.ends_with("KO\n"), "{text}");
    }
    // A request naming a data port below 1024 is refused the same way.
    let mut s = connect(ctl);
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s.write_all(
        format!(
            "HELO nuttcp v6.1.2\n{}\n",
            STOCK_REQUEST.replace("port = 25001", "port = 80")
        )
        .as_bytes(),
    )
    .expect("write");
    let mut text = String::new();
    let _ = std::io::Read::read_to_string(&mut s, &mut text);
    assert!(
        text.contains("below 1024") && text.ends_with("KO\n"),
        "{text}"
    );
    // A stock client is served next.
    let (c, d) = (ctl.to_string(), (ctl + 1).to_string());
    let out = run(
        "nuttcp",
        &["-P", &c, "-p", &d, "-T1", "127.0.0.1"],
        Duration::from_secs(30),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("Mbps"), "{text}");
}
