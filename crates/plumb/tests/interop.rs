//! Interop with Debian's iperf3 (3.12) in both directions, through the real
//! binaries on loopback: a stock client against `plumb -s`, and `plumb -c`
//! against a stock `iperf3 -s`. Each run checks both sides' JSON.

mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;

#[derive(Clone, Copy, PartialEq)]
enum Who {
    Plumb,
    Iperf3,
}

fn bin(w: Who) -> &'static str {
    match w {
        Who::Plumb => plumb_bin(),
        Who::Iperf3 => iperf3_bin(),
    }
}

/// Runs one test: returns (client JSON, server JSON).
fn pair(client: Who, server: Who, args: &[&str]) -> (Value, Value) {
    let port = port();
    let srv = Server::start(bin(server), &["-s", "-1", "-J"], port);
    let mut cargs = vec!["-c", "127.0.0.1", "-J"];
    cargs.extend_from_slice(args);
    let p = port.to_string();
    cargs.extend_from_slice(&["-p", &p]);
    let out = run(bin(client), &cargs, Duration::from_secs(30));
    let c = json(&out, "client");
    let s = json(&srv.finish(Duration::from_secs(10)), "server");
    assert_clean(&c, "client");
    assert_clean(&s, "server");
    (c, s)
}

/// How the two ends' TCP byte counts must relate.
#[derive(Clone, Copy)]
enum Count {
    /// Stock iperf3 receives: it stops counting at TEST_END, so bytes in
    /// flight then are missing from its count: at most what the sender's and
    /// receiver's socket buffers can hold.
    StockReceives,
    /// Stock iperf3 sends, plumb receives. iperf3 3.12 counts exactly; from
    /// 3.16 each stream has its own thread, and a write that completes after
    /// the main thread took its totals is on the wire (plumb counts it) but
    /// not in iperf3's sent count: less than one 128 KiB block per stream.
    StockSends,
}

/// The largest buffer autotuning may grow to, from `net.ipv4.tcp_rmem` or
/// `tcp_wmem` (their third field).
fn tcp_mem_max(name: &str) -> f64 {
    let text = std::fs::read_to_string(format!("/proc/sys/net/ipv4/{name}")).expect(name);
    text.split_whitespace()
        .nth(2)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name}: {text:?}"))
}

/// TCP: the receiver's count matches what the sender sent, as `count` says.
fn check_tcp(c: &Value, s: &Value, count: Count, reverse_group: &str) {
    let sent = num(c, &format!("end.sum_sent{reverse_group}.bytes"));
    let recv = num(c, &format!("end.sum_received{reverse_group}.bytes"));
    assert!(sent > 1e6, "sent only {sent} B");
    let threaded = iperf3_version() >= (3, 16);
    let streams = c["end"]["streams"].as_array().map_or(1, Vec::len) as f64;
    match count {
        Count::StockSends if threaded => {
            assert!(
                recv >= sent && recv - sent < streams * 131_072.0,
                "received {recv} for {sent} sent by {streams} threaded stream(s)"
            );
        }
        Count::StockSends => {
            assert_eq!(sent, recv, "bytes sent {sent} != received {recv}")
        }
        Count::StockReceives => {
            let in_flight = streams * (tcp_mem_max("tcp_rmem") + tcp_mem_max("tcp_wmem"));
            assert!(
                recv <= sent && sent - recv <= in_flight.max(0.02 * sent),
                "received {recv} of {sent}, more missing than {in_flight} B of buffers"
            )
        }
    }
    let bps = num(
        c,
        &format!("end.sum_received{reverse_group}.bits_per_second"),
    );
    assert!(bps > 1e8, "implausibly slow on loopback: {bps} bit/s");
    // Both ends report the same test.
    assert_eq!(c["start"]["cookie"], s["start"]["cookie"]);
}

fn check_udp(c: &Value, target: f64) {
    let recv = num(c, "end.sum_received.bits_per_second");
    let lost = num(c, "end.sum.lost_percent");
    assert!(
        recv > 0.7 * target && recv < 1.1 * target,
        "UDP received {recv} bit/s for target {target}"
    );
    assert!(lost < 5.0, "UDP loss {lost}%");
    assert!(num(c, "end.sum.packets") > 100.0);
}

/// A plumb end's document beside a stock peer: its own system, and no far
/// system or sysctls (iperf3 sends none, and ignores the ones plumb sends —
/// the stock end's clean document above shows it took plumb's results).
fn check_no_far_system(plumb: &Value, stock: &Value) {
    let own = plumb["start"]["system_info"].as_str().expect("system_info");
    assert_eq!(plumb["end"]["plumb"]["local"]["system"].as_str(), Some(own));
    assert!(
        plumb["end"]["plumb"]["remote"].is_null(),
        "{}",
        plumb["end"]["plumb"]
    );
    // iperf3 records its own system only.
    assert!(stock["start"]["system_info"].is_string());
    assert!(stock["end"]["plumb"].is_null());
}

#[test]
fn stock_client_to_plumb_server_tcp() {
    let (c, s) = pair(Who::Iperf3, Who::Plumb, &["-t", "2"]);
    check_tcp(&c, &s, Count::StockSends, "");
    check_no_far_system(&s, &c);
}

#[test]
fn plumb_client_to_stock_server_tcp() {
    let (c, s) = pair(Who::Plumb, Who::Iperf3, &["-t", "2"]);
    check_tcp(&c, &s, Count::StockReceives, "");
    check_no_far_system(&c, &s);
}

#[test]
fn stock_client_to_plumb_server_reverse() {
    let (c, s) = pair(Who::Iperf3, Who::Plumb, &["-t", "2", "-R"]);
    check_tcp(&c, &s, Count::StockReceives, "");
    assert_eq!(c["end"]["sum_received"]["sender"], false);
}

#[test]
fn plumb_client_to_stock_server_reverse() {
    let (c, s) = pair(Who::Plumb, Who::Iperf3, &["-t", "2", "-R"]);
    check_tcp(&c, &s, Count::StockSends, "");
}

#[test]
fn stock_client_to_plumb_server_parallel() {
    let (c, s) = pair(Who::Iperf3, Who::Plumb, &["-t", "2", "-P", "4"]);
    check_tcp(&c, &s, Count::StockSends, "");
    assert_eq!(c["end"]["streams"].as_array().map(Vec::len), Some(4));
    assert_eq!(s["end"]["streams"].as_array().map(Vec::len), Some(4));
}

#[test]
fn plumb_client_to_stock_server_parallel() {
    let (c, s) = pair(Who::Plumb, Who::Iperf3, &["-t", "2", "-P", "4"]);
    check_tcp(&c, &s, Count::StockReceives, "");
    assert_eq!(c["end"]["streams"].as_array().map(Vec::len), Some(4));
}

#[test]
fn stock_client_to_plumb_server_bidir() {
    let (c, s) = pair(Who::Iperf3, Who::Plumb, &["-t", "2", "--bidir"]);
    check_tcp(&c, &s, Count::StockSends, "");
    check_tcp(&c, &s, Count::StockReceives, "_bidir_reverse");
}

#[test]
fn plumb_client_to_stock_server_bidir() {
    let (c, s) = pair(Who::Plumb, Who::Iperf3, &["-t", "2", "--bidir"]);
    check_tcp(&c, &s, Count::StockReceives, "");
    check_tcp(&c, &s, Count::StockSends, "_bidir_reverse");
}

#[test]
fn stock_client_to_plumb_server_udp() {
    let (c, _) = pair(Who::Iperf3, Who::Plumb, &["-t", "2", "-u", "-b", "200M"]);
    check_udp(&c, 200e6);
}

#[test]
fn plumb_client_to_stock_server_udp() {
    let (c, _) = pair(Who::Plumb, Who::Iperf3, &["-t", "2", "-u", "-b", "200M"]);
    check_udp(&c, 200e6);
}

#[test]
fn stock_client_to_plumb_server_udp_reverse() {
    let (c, _) = pair(
        Who::Iperf3,
        Who::Plumb,
        &["-t", "2", "-u", "-b", "200M", "-R"],
    );
    check_udp(&c, 200e6);
}

#[test]
fn plumb_client_to_stock_server_udp_reverse() {
    let (c, _) = pair(
        Who::Plumb,
        Who::Iperf3,
        &["-t", "2", "-u", "-b", "200M", "-R"],
    );
    check_udp(&c, 200e6);
}

/// `--get-server-output` against a `-J` server returns the server's JSON
/// document, in both directions.
fn check_server_output(client: Who, server: Who) {
    let (c, s) = pair(client, server, &["-t", "1", "--get-server-output"]);
    let so = &c["server_output_json"];
    assert!(so.is_object(), "no server_output_json: {c}");
    assert_eq!(so["start"]["cookie"], c["start"]["cookie"]);
    assert_eq!(
        num(so, "end.sum_received.bytes"),
        num(&s, "end.sum_received.bytes")
    );
    check_tcp(
        &c,
        &s,
        if server == Who::Plumb {
            Count::StockSends
        } else {
            Count::StockReceives
        },
        "",
    );
}

#[test]
fn stock_client_gets_plumb_server_output() {
    check_server_output(Who::Iperf3, Who::Plumb);
}

#[test]
fn plumb_client_gets_stock_server_output() {
    check_server_output(Who::Plumb, Who::Iperf3);
}

/// A reverse TCP test with a byte count: plumb's server sends exactly the
/// count, and the stock client, which ends when it has received it, gets all
/// of it.
#[test]
fn stock_client_to_plumb_server_reverse_byte_count() {
    let (c, s) = pair(Who::Iperf3, Who::Plumb, &["-n", "1M", "-R"]);
    assert_eq!(num(&s, "end.sum_sent.bytes"), 1_048_576.0);
    assert_eq!(num(&c, "end.sum_received.bytes"), 1_048_576.0);
}

/// A forward UDP test with a byte count against a stock server: plumb's
/// client ends it once it has sent the count, in whole datagrams.
#[test]
fn plumb_client_to_stock_server_udp_byte_count() {
    let (c, s) = pair(
        Who::Plumb,
        Who::Iperf3,
        &["-u", "-b", "200M", "-l", "1000", "-n", "1M"],
    );
    // 1,048,576 B in 1,000-byte datagrams: 1,049 of them.
    assert_eq!(num(&c, "end.sum_sent.bytes"), 1_049_000.0);
    assert_eq!(num(&c, "end.sum_sent.packets"), 1049.0);
    assert!(num(&s, "end.sum_received.bytes") <= 1_049_000.0);
}
