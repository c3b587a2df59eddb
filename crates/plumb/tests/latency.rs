//! Latency tests through the real binary on loopback (issue 16): `--rr`,
//! `--crr` and `-u --rr` plumb↔plumb with exact transaction counts, the
//! JSON they print, `--latency` beside a throughput test, a stock iperf3
//! server refusing `--rr` cleanly, and hostile request/response messages.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// plumb client against a `plumb -s -1 -J`; returns (client JSON, server JSON).
fn pp(args: &[&str]) -> (Value, Value) {
    plumb_pair(args)
}

/// A plumb client's text output against a `plumb -s -1`.
fn plumb_text(args: &[&str]) -> String {
    let port = port();
    let _srv = Server::start(plumb_bin(), &["-s", "-1"], port);
    let p = port.to_string();
    let mut a = vec!["-c", "127.0.0.1", "-p", &p];
    a.extend_from_slice(args);
    let out = run(plumb_bin(), &a, Duration::from_secs(30));
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Checks the percentile keys of a latency object and returns its p50, µs.
fn percentiles_in_order(l: &Value, what: &str) -> f64 {
    let keys = ["min_us", "p50_us", "p90_us", "p99_us", "p99_9_us", "max_us"];
    let v: Vec<f64> = keys
        .iter()
        .map(|k| {
            l[k].as_f64()
                .unwrap_or_else(|| panic!("{what}: {k} missing in {l}"))
        })
        .collect();
    assert!(v[0] > 0.0, "{what}: min {}", v[0]);
    assert!(
        v.windows(2).all(|w| w[0] <= w[1]),
        "{what}: not ordered {v:?}"
    );
    let mean = l["mean_us"].as_f64().expect("mean_us");
    assert!(
        v[0] <= mean && mean <= v[5],
        "{what}: mean {mean} outside {v:?}"
    );
    v[1]
}

/// The bucket counts add up to the transactions.
fn buckets_sum(l: &Value) -> u64 {
    l["buckets"]
        .as_array()
        .expect("buckets")
        .iter()
        .map(|b| {
            assert!(b["le_us"].as_f64().is_some(), "bucket without le_us: {b}");
            b["count"].as_u64().expect("count")
        })
        .sum()
}

/// Both ends moved exactly `n` transactions of `req` + `resp` bytes.
fn exact(c: &Value, s: &Value, n: u64, req: u64, resp: u64) -> Value {
    let l = c["end"]["plumb"]["latency"].clone();
    assert_eq!(l["transactions"].as_u64(), Some(n), "{l}");
    let bytes = (n * (req + resp)) as f64;
    assert_eq!(num(c, "end.sum_sent.bytes"), bytes, "client's own count");
    // The server's count comes back in its results: it answered exactly n.
    assert_eq!(num(c, "end.sum_received.bytes"), bytes, "server's count");
    assert_eq!(num(s, "end.sum_received.bytes"), bytes, "server JSON");
    assert_eq!(buckets_sum(&l), n);
    l
}

#[test]
fn tcp_rr_counts_exactly() {
    let (c, s) = pp(&[
        "--rr",
        "-k",
        "3000",
        "-P",
        "2",
        "--rr-burst",
        "3",
        "-l",
        "10",
        "--response-size",
        "200",
    ]);
    let l = exact(&c, &s, 3000, 10, 200);
    assert_eq!(l["test"], "tcp_rr");
    assert_eq!(l["burst"], 3);
    percentiles_in_order(&l, "tcp rr");
    assert!(l["transactions_per_second"].as_f64().unwrap_or(0.0) > 0.0);
}

#[test]
fn tcp_rr_timed_reports_every_interval() {
    let (c, _) = pp(&["--rr", "-t", "2", "-i", "0.5"]);
    let l = &c["end"]["plumb"]["latency"];
    let p50 = percentiles_in_order(l, "tcp rr");
    // Loopback: a 1-byte round trip is microseconds, not milliseconds.
    assert!(p50 < 5_000.0, "p50 {p50} us");
    let iv = c["intervals"].as_array().expect("intervals");
    assert!(iv.len() >= 3, "{} intervals", iv.len());
    let mut total = 0;
    for i in iv {
        let il = &i["plumb"]["latency"];
        total += il["transactions"].as_u64().expect("interval transactions");
        percentiles_in_order(il, "interval");
    }
    assert_eq!(Some(total), l["transactions"].as_u64(), "intervals add up");
    let tps = l["transactions_per_second"].as_f64().expect("tps");
    let secs = l["seconds"].as_f64().expect("seconds");
    assert!(
        (tps * secs - total as f64).abs() < 1.0,
        "{tps} x {secs} != {total}"
    );
}

/// TIME_WAIT sockets on loopback as (local port, peer port), from `ss`.
fn time_waits() -> Vec<(u16, u16)> {
    let out = std::process::Command::new("ss")
        .args(["-Htan", "state", "time-wait"])
        .output()
        .expect("ss (iproute2)");
    let port = |a: &str| a.rsplit(':').next().and_then(|p| p.parse::<u16>().ok());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let n = f.len();
            (n >= 2).then(|| Some((port(f[n - 2])?, port(f[n - 1])?)))?
        })
        .collect()
}

#[test]
fn crr_counts_exactly_and_splits_connect_time() {
    let (c, s) = pp(&["--crr", "-k", "400", "-l", "8", "--response-size", "64"]);
    let l = exact(&c, &s, 400, 8, 64);
    // The server closes first, so each connection's TIME_WAIT is on its
    // side: some port (the server's CRR listener) is the local end of at
    // least 400 TIME_WAITs and the far end of none. (Other tests' CRR
    // listeners use other ports.)
    let tw = time_waits();
    let mut local: std::collections::HashMap<u16, usize> = std::collections::HashMap::new();
    for (l, _) in &tw {
        *local.entry(*l).or_default() += 1;
    }
    let (server_port, n) = local
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .expect("time-waits");
    assert!(n >= 400, "{n} TIME_WAITs on port {server_port}");
    let client_side = tw.iter().filter(|(_, peer)| *peer == server_port).count();
    assert_eq!(
        client_side, 0,
        "TIME_WAITs on the client's side of port {server_port}"
    );
    assert_eq!(l["test"], "crr");
    let total = percentiles_in_order(&l, "crr");
    let conn = percentiles_in_order(&l["connect"], "connect");
    let rr = percentiles_in_order(&l["request_response"], "request/response");
    assert!(
        conn < total && rr < total,
        "connect {conn} + rr {rr} vs {total}"
    );
    assert_eq!(buckets_sum(&l["connect"]), 400);
    // Connections are what a CRR user counts: one per transaction, under
    // their own name, at the same rate.
    assert_eq!(l["connections"].as_u64(), Some(400));
    let cps = l["connections_per_second"].as_f64().expect("connections/s");
    let secs = l["seconds"].as_f64().expect("seconds");
    assert!(
        cps > 0.0 && (cps * secs - 400.0).abs() < 1.0,
        "{cps} connections/s over {secs} s"
    );
    let text = plumb_text(&["--crr", "-k", "50"]);
    assert!(text.contains("connections/s"), "{text}");
}

#[test]
fn udp_rr_counts_exactly() {
    let (c, s) = pp(&["-u", "--rr", "-k", "2000", "--rr-burst", "2", "-l", "64"]);
    let l = exact(&c, &s, 2000, 64, 64);
    assert_eq!(l["test"], "udp_rr");
    // --busy-poll travels to the server (which sets it on its sockets too)
    // without changing what is counted.
    let (c, s) = pp(&["--rr", "-k", "500", "--busy-poll", "20"]);
    exact(&c, &s, 500, 1, 1);
    // Both ends poll their sockets (UDP too) before sleeping: still exact.
    let (c, s) = pp(&["-u", "--rr", "-k", "500", "--busy-poll", "50", "-l", "64"]);
    exact(&c, &s, 500, 64, 64);
    assert_eq!(l["lost"], 0);
    percentiles_in_order(&l, "udp rr");
}

#[test]
fn udp_rr_takes_its_defaults_without_iperf3s_udp_cap() {
    // No -l: 16 B each way, the shortest datagram a server's parameters
    // allow (a shorter default was refused with error 20). No -b: no cap,
    // where a UDP throughput test gets iperf3's 1 Mbit/s; that cap would
    // hold 16 B each way to 4,096 transactions/s.
    let (c, s) = pp(&["-u", "--rr", "-t", "1"]);
    let l = &c["end"]["plumb"]["latency"];
    assert_eq!(
        (l["request_bytes"].as_u64(), l["response_bytes"].as_u64()),
        (Some(16), Some(16)),
        "{l}"
    );
    assert_eq!(c["start"]["target_bitrate"], 0, "{}", c["start"]);
    let tps = l["transactions_per_second"].as_f64().expect("tps");
    assert!(tps > 4_500.0, "{tps} transactions/s");
    // Every transaction answered: the server's byte count is 32 B each.
    let n = l["transactions"].as_u64().expect("transactions");
    assert_eq!(num(&s, "end.sum_received.bytes"), (n * 32) as f64);
    // An explicit -b still caps it.
    let (c, _) = pp(&["-u", "--rr", "-t", "1", "-b", "1M"]);
    let tps = c["end"]["plumb"]["latency"]["transactions_per_second"]
        .as_f64()
        .expect("tps");
    assert!(tps < 4_500.0, "{tps} transactions/s under -b 1M");
}

#[test]
fn rr_b_caps_the_bytes_of_both_directions() {
    let (c, _) = pp(&["--rr", "-t", "2", "-l", "100", "-b", "100K"]);
    let tps = c["end"]["plumb"]["latency"]["transactions_per_second"]
        .as_f64()
        .expect("tps");
    // 100 kbit/s over 200 B a transaction: 62.5 a second.
    assert!(
        (50.0..=66.0).contains(&tps),
        "{tps} transactions/s under -b 100K"
    );
}

#[test]
fn latency_probe_beside_a_throughput_test() {
    let (c, _) = pp(&["--latency", "-t", "2", "-b", "200M"]);
    let l = &c["end"]["plumb"]["latency"];
    let idle = l["idle"]["probes"].as_u64().expect("idle probes");
    let loaded = l["loaded"]["probes"].as_u64().expect("loaded probes");
    // One second of idle probes every 10 ms, then one every 100 ms for 2 s.
    assert!((50..=101).contains(&idle), "{idle} idle probes");
    assert!((10..=21).contains(&loaded), "{loaded} loaded probes");
    assert_eq!(l["probe_interval_ms"]["idle"], 10.0, "{l}");
    assert_eq!(l["probe_interval_ms"]["loaded"], 100.0, "{l}");
    for side in ["idle", "loaded"] {
        let p50 = l[side]["p50_ms"].as_f64().expect("p50_ms");
        assert!(p50 > 0.0 && p50 < 50.0, "{side} p50 {p50} ms");
        assert!(l[side]["rpm"].as_f64().expect("rpm") > 0.0);
    }
    assert!(l["increase_p50_ms"].as_f64().is_some());
    assert!(l["rpm_method"]
        .as_str()
        .expect("method")
        .contains("differences"));
    // The load still ran at its rate.
    let load = num(&c, "end.sum_received.bits_per_second");
    assert!(load > 150e6);
    // The probes' own cost, from the probe connection's TCP_INFO and its
    // thread's CPU: 1 B each way every 100 ms is about 15-25 kbit/s with
    // headers and framing, far under the issue's 1 % of the load.
    let cost = &l["probe_cost"];
    let wire = cost["wire_bits_per_second"].as_f64().expect("wire bits");
    // 21.6 kbit/s in three runs by hand; a loaded host sends fewer probes.
    assert!((10e3..30e3).contains(&wire), "{cost}");
    let share = cost["share_of_load"].as_f64().expect("share of load");
    assert!(
        (share * load / wire - 1.0).abs() < 1e-6 && share < 0.01,
        "{cost}"
    );
    let cpu = cost["thread_cpu_share_of_one_core"]
        .as_f64()
        .expect("probe thread CPU");
    assert!(cpu > 0.0 && cpu < 0.01, "{cost}");
}

#[test]
fn stock_iperf3_server_refuses_rr_cleanly() {
    for kind in ["--rr", "--crr", "--latency"] {
        let port = port();
        let _srv = Server::start(iperf3_bin(), &["-s", "-1"], port);
        let p = port.to_string();
        let t0 = Instant::now();
        let out = run(
            plumb_bin(),
            &["-c", "127.0.0.1", "-p", &p, kind, "-t", "2"],
            Duration::from_secs(20),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{kind}: {err}");
        assert!(err.contains("not plumb"), "{kind}: {err}");
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{kind}: {:?}",
            t0.elapsed()
        );
    }
}

#[test]
fn bad_rr_flags_are_usage_errors() {
    for args in [
        vec!["-c", "127.0.0.1", "--rr-burst", "2"],
        vec!["-c", "127.0.0.1", "--rr", "--rr-burst", "0"],
        vec!["-c", "127.0.0.1", "--rr", "--rr-burst", "5000"],
        vec!["-c", "127.0.0.1", "--crr", "-u"],
        vec!["-c", "127.0.0.1", "--crr", "--rr-burst", "2"],
        vec!["-c", "127.0.0.1", "--rr", "--latency"],
        vec!["-c", "127.0.0.1", "--rr", "-R"],
        vec!["-c", "127.0.0.1", "--rr", "-u", "-l", "4"],
        vec!["-c", "127.0.0.1", "--rr", "--response-size", "2M"],
        vec!["-c", "127.0.0.1", "--rr", "--busy-poll", "5000"],
    ] {
        let out = run(plumb_bin(), &args, Duration::from_secs(10));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

/// Cookie and parameters by hand; the server's reply bytes until it closes
/// or stops talking.
fn params_reply(port: u16, c: &[u8; 37], params: &str) -> (TcpStream, Vec<u8>) {
    let t0 = Instant::now();
    loop {
        let mut s = connect(port);
        s.write_all(c).expect("cookie");
        let mut b = [0u8; 1];
        let first = s.read(&mut b).ok().filter(|n| *n == 1).map(|_| b[0]);
        if first == Some(0xFF) && t0.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        assert_eq!(first, Some(9), "PARAM_EXCHANGE");
        s.write_all(&frame(params)).expect("params");
        let mut reply = vec![0u8; 16];
        let n = s.read(&mut reply).unwrap_or(0);
        reply.truncate(n);
        return (s, reply);
    }
}

/// A `--rr` test through the binary completes against the server.
fn rr_ok(port: u16) {
    let p = port.to_string();
    let out = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "-p", &p, "--rr", "-k", "100", "-J"],
        Duration::from_secs(20),
    );
    let c = json(&out, "client");
    assert_eq!(c["end"]["plumb"]["latency"]["transactions"], 100, "{c}");
}

fn threads(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("server alive")
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("Threads")
}

fn idle_threads(pid: u32) -> u64 {
    let t0 = Instant::now();
    loop {
        let n = threads(pid);
        if n == 1 || t0.elapsed() > Duration::from_secs(15) {
            return n;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

const RR_PARAMS: &str = r#"{"tcp":true,"omit":0,"time":1,"parallel":1,"len":1,"pacing_timer":1000,"client_version":"3.12","plumb":{"version":"0.1.0","rr":RR}}"#;

#[test]
fn hostile_rr_messages_leave_the_server_serving() {
    let port = port();
    let srv = Server::start(plumb_bin(), &["-s", "--handshake-timeout", "2000"], port);
    rr_ok(port);
    let base = idle_threads(srv.pid());
    // Out-of-range parameters: SERVER_ERROR 250, before any stream opens.
    for (i, rr) in [
        r#"{"burst":0}"#,
        r#"{"request":2000000}"#,
        r#"{"response":0}"#,
        r#"{"burst":4294967295,"request":1}"#,
    ]
    .iter()
    .enumerate()
    {
        let (_s, reply) = params_reply(port, &cookie(i as u8), &RR_PARAMS.replace("RR", rr));
        assert_eq!(reply.first(), Some(&0xFE), "{rr}: {reply:?}");
        assert_eq!(reply.get(1..5), Some(&250i32.to_be_bytes()[..]), "{rr}");
    }
    // CRR over UDP, refused the same way.
    let udp = RR_PARAMS
        .replace("\"tcp\":true", "\"udp\":true")
        .replace("RR", r#"{"mode":"crr","request":8,"response":8}"#);
    let (_s, reply) = params_reply(port, &cookie(9), &udp);
    assert_eq!(reply.first(), Some(&0xFE), "crr over udp: {reply:?}");
    // Unknown mode: the plumb object does not parse, so it is a plain
    // iperf3 test; the client here walks away, which the server survives.
    let (s, reply) = params_reply(
        port,
        &cookie(10),
        &RR_PARAMS.replace("RR", r#"{"mode":"x"}"#),
    );
    assert_eq!(reply.first(), Some(&10), "plain test: {reply:?}");
    drop(s);
    // A request/response stream that sends half a request and goes silent,
    // then a control connection that vanishes.
    let c = cookie(11);
    let (ctl, reply) = params_reply(port, &c, &RR_PARAMS.replace("RR", r#"{"request":100}"#));
    assert_eq!(reply.first(), Some(&10), "CREATE_STREAMS: {reply:?}");
    let mut data = connect(port);
    data.write_all(&c).expect("stream cookie");
    let mut greeting = [0u8; 10];
    data.read_exact(&mut greeting).expect("greeting");
    assert_eq!(&greeting[..8], b"plumbRR1");
    data.write_all(&[7; 40]).expect("half a request");
    std::thread::sleep(Duration::from_millis(300));
    drop(ctl);
    // A CRR test whose client opens CRR connections and sends nothing.
    let c = cookie(12);
    let (ctl, reply) = params_reply(
        port,
        &c,
        &RR_PARAMS.replace("RR", r#"{"mode":"crr","request":4}"#),
    );
    assert_eq!(reply.first(), Some(&10), "CREATE_STREAMS: {reply:?}");
    let mut data2 = connect(port);
    data2.write_all(&c).expect("stream cookie");
    data2.read_exact(&mut greeting).expect("greeting");
    let crr_port = u16::from_be_bytes([greeting[8], greeting[9]]);
    assert_ne!(crr_port, 0);
    let silent: Vec<TcpStream> = (0..5).map(|_| connect(crr_port)).collect();
    drop(ctl);
    drop(silent);
    drop(data);
    drop(data2);
    rr_ok(port);
    assert_eq!(idle_threads(srv.pid()), base, "threads left behind");
    // The CRR listener went with its test.
    assert!(!listening(crr_port), "CRR port {crr_port} still open");
}

#[test]
fn server_limits_cover_request_response_tests() {
    let port = port();
    let srv = Server::start(
        plumb_bin(),
        &[
            "-s",
            "--max-rr-size",
            "1K",
            "--max-rr-burst",
            "4",
            "--max-bitrate",
            "1M",
        ],
        port,
    );
    let p = port.to_string();
    let client = |extra: &[&str]| {
        let mut a = vec!["-c", "127.0.0.1", "-p", &p, "-t", "1"];
        a.extend_from_slice(extra);
        run(plumb_bin(), &a, Duration::from_secs(20))
    };
    // Sizes and bursts over the server's limits: refused (iperf3's protocol
    // carries a code, not text: the client names the limits, the server's
    // log says which one and by how much).
    for (args, words) in [
        (
            &["--rr", "--response-size", "2K", "-b", "100K"][..],
            "--max-rr-size",
        ),
        (&["--crr", "-l", "4K", "-b", "100K"], "--max-rr-size"),
        (&["--rr", "--rr-burst", "8", "-b", "100K"], "--max-rr-burst"),
        // No -b under --max-bitrate: an unlimited rate, refused as for any test.
        (&["--rr"], "bitrate"),
    ] {
        let out = client(args);
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "{args:?} ran: {all}");
        assert!(all.contains(words), "{args:?}: {all}");
    }
    // Within them it runs.
    let out = client(&["--rr", "--rr-burst", "4", "-l", "1K", "-b", "500K", "-J"]);
    let c = json(&out, "client");
    assert!(num(&c, "end.plumb.latency.transactions") > 0.0, "{c}");

    // A client that ignores its own -b: asks for 8 kbit/s (1-byte requests
    // and responses, 16 bits a transaction: 500 a second), then writes 20,000
    // requests at once. The server answers at the rate asked, not at the rate
    // the requests come.
    let c = cookie(20);
    let params = RR_PARAMS
        .replace("\"time\":1", "\"time\":2,\"bandwidth\":8000")
        .replace("RR", r#"{"request":1,"response":1}"#);
    let (mut ctl, reply) = params_reply(port, &c, &params);
    assert_eq!(reply.first(), Some(&10), "CREATE_STREAMS: {reply:?}");
    let mut data = connect(port);
    data.write_all(&c).expect("stream cookie");
    let mut greeting = [0u8; 10];
    data.read_exact(&mut greeting).expect("greeting");
    // TEST_START, TEST_RUNNING.
    let mut states = [0u8; 2];
    ctl.read_exact(&mut states).expect("test states");
    assert_eq!(states, [1, 2]);
    data.write_all(&[0x52; 20_000]).expect("requests");
    let t0 = Instant::now();
    let mut got = 0usize;
    let mut buf = [0u8; 4096];
    data.set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout");
    while t0.elapsed() < Duration::from_secs(1) {
        if let Ok(n) = data.read(&mut buf) {
            if n == 0 {
                break;
            }
            got += n;
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    // 500 a second, and the answers the server owed since it started (it
    // started before this clock): a generous bound, but far under 20,000.
    assert!(got > 0, "no answers");
    assert!(
        (got as f64) <= 500.0 * (secs + 0.5) + 10.0,
        "{got} answers in {secs:.2} s at 8 kbit/s"
    );
    drop(data);
    drop(ctl);
    let log = String::from_utf8_lossy(&srv.finish(Duration::from_millis(300)).stderr).into_owned();
    assert!(
        log.contains("messages of 2048 bytes asked, this server allows 1024"),
        "{log}"
    );
    assert!(log.contains("messages of 4096 bytes asked"), "{log}");
    assert!(
        log.contains("a burst of 8 asked, this server allows 4"),
        "{log}"
    );
}
