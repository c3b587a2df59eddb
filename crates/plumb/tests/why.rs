//! `plumb why` through the binary: the model alone, a saved document, a live
//! stock iperf3 server (whose thin evidence must be admitted, not papered
//! over), and bad input. The lab scenarios, one per limit, are in lab.rs.

mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;

#[test]
fn the_model_alone_explains_the_backup() {
    let out = run(
        plumb_bin(),
        &["why", "--rate", "1g", "--rtt", "15ms", "-w", "17520"],
        Duration::from_secs(10),
    );
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    // First the path and the header assumed, then the answer.
    assert!(
        text.starts_with(
            "Model: 1 Gbit/s link, RTT 15 ms, window 17,520 B (IPv4, MTU 1500, TCP timestamps on: 1,448 B payload)\n\n\
             Limited by the receive window: 17,520 B per 15 ms round trip allows 9.344 Mbit/s"
        ),
        "{text}"
    );
    // The window needed is the bandwidth-delay product, as plumb calc says,
    // and a fix never lowers a stock kernel's 6 MiB autotuning maximum.
    assert!(
        text.contains("a window of the bandwidth-delay product, 1,875,000 B (1.875 MB), or 108 parallel streams"),
        "{text}"
    );
    assert!(
        text.contains("sysctl -w net.ipv4.tcp_rmem=\"4096 131072 6291456\""),
        "{text}"
    );
    for needle in [
        "sysctl -w net.core.rmem_max=",
        "Tcp1323Opts",
        "autotuninglevel=normal",
        "net.inet.tcp.autorcvbufmax",
    ] {
        assert!(text.contains(needle), "{needle} missing:\n{text}");
    }
    let out = run(
        plumb_bin(),
        &["why", "--rate", "1g", "--rtt", "15ms", "-w", "17520", "-J"],
        Duration::from_secs(10),
    );
    let v = json(&out, "why -J");
    assert_eq!(v["diagnosis"]["limit"], "receive_window");
    assert_eq!(v["diagnosis"]["measured_bps"], 9_344_000.0);
    let fixes = v["diagnosis"]["fixes"].as_array().expect("fixes");
    assert!(fixes
        .iter()
        .any(|f| f["os"] == "linux" && f["expected_bps"].as_f64().is_some_and(|e| e > 9e8)));
}

#[test]
fn a_saved_iperf3_document_is_explained() {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../diagnose/tests/fixtures/iperf3-3.12-forward.json"
    );
    let out = run(
        plumb_bin(),
        &["why", "--from", fixture, "-J"],
        Duration::from_secs(10),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out, "why --from");
    assert_eq!(
        v["end"]["sum_received"]["bytes"], 10_181_345_227u64,
        "the document is passed through"
    );
    assert_eq!(
        v["diagnosis"]["limit"], "cpu",
        "iperf3 3.12 used a whole core on loopback"
    );
    let unknown = v["diagnosis"]["unknown"].to_string();
    assert!(unknown.contains("not plumb"), "{unknown}");
}

#[test]
fn a_saved_json_stream_is_explained_like_its_document() {
    let port = port();
    let srv = Server::start(plumb_bin(), &["-s", "-1"], port);
    let p = port.to_string();
    let out = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "-p", &p, "-t", "2", "--json-stream"],
        Duration::from_secs(30),
    );
    srv.finish(Duration::from_secs(10));
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let end: Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["event"] == "end")
        .expect("end event")["data"]
        .clone();
    let dir = TempDir::new("why-stream");
    let path = dir.join("events.jsonl");
    std::fs::write(&path, &text).expect("write");
    let out = run(
        plumb_bin(),
        &[
            "why",
            "--from",
            path.to_str().expect("path"),
            "--link",
            "100g",
            "-J",
        ],
        Duration::from_secs(10),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out, "why --from stream");
    assert_eq!(
        v["end"]["sum_received"]["bytes"],
        end["sum_received"]["bytes"]
    );
    assert_eq!(v["intervals"].as_array().map(Vec::len), Some(2));
    assert!(v["diagnosis"]["limit"].is_string(), "{}", v["diagnosis"]);
}

#[test]
fn against_a_stock_iperf3_server_the_gaps_are_named() {
    let port = port();
    let srv = Server::start(iperf3_bin(), &["-s", "-1"], port);
    let p = port.to_string();
    // Reverse: the sender is the stock server, so its TCP counters are out of reach.
    let out = run(
        plumb_bin(),
        &["why", "127.0.0.1", "-p", &p, "-t", "2", "-R", "-J"],
        Duration::from_secs(30),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out, "why vs iperf3");
    assert_clean(&v, "why vs iperf3");
    let d = &v["diagnosis"];
    let unknown = d["unknown"].to_string();
    assert!(
        unknown.contains("the sending server is not plumb"),
        "{unknown}"
    );
    assert!(unknown.contains("peer is not plumb"), "{unknown}");
    // Loopback has no link speed: the answer says the link was estimated.
    assert!(
        d["link_source"]
            .as_str()
            .is_some_and(|s| s.contains("interface lo") || s.contains("best interval")),
        "{d}"
    );
    drop(srv);
}

#[test]
fn bad_why_input_is_one_line() {
    for (args, code) in [
        (&["why"][..], 2),
        (&["why", "--rate", "1g"], 2),
        (&["why", "--rate", "1g", "--rtt", "15ms"], 2),
        (&["why", "--from", "/nonexistent/plumb.json"], 1),
        (&["why", "--rate", "1g", "--rtt", "bogus", "-w", "1"], 2),
        (
            &[
                "why",
                "--rate",
                "1g",
                "--rtt",
                "15ms",
                "-w",
                "1",
                "--json-stream",
            ],
            2,
        ),
    ] {
        let out = run(plumb_bin(), args, Duration::from_secs(10));
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stderr)
                .trim_end()
                .lines()
                .count(),
            1,
            "{args:?}"
        );
    }
}

/// A flag that shapes a test, given where there is no test to run (a
/// capture file, an interface, live connections, the model), is refused in
/// one line naming it, before anything is read.
#[test]
fn test_flags_without_a_test_are_refused() {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../capture/tests/lab/stall-far.pcap");
    let file = file.to_str().expect("utf-8 path");
    for (args, flag) in [
        (&["why", "-r", file, "-t", "5"][..], "-t"),
        (&["why", "--capture", "lo", "-P", "2"], "-P"),
        (&["why", "--port", "873", "-R"], "-R"),
        (&["why", "--from", file, "-b", "10m"], "-b"),
        (
            &[
                "why", "--rate", "1g", "--rtt", "15ms", "-w", "17520", "-n", "1M",
            ],
            "-n",
        ),
    ] {
        let out = run(plumb_bin(), args, Duration::from_secs(10));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(&format!("{flag} shapes a test")), "{err}");
    }
    // Without the flag the same file is explained.
    let out = run(plumb_bin(), &["why", "-r", file], Duration::from_secs(10));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One answer, one set of figures: the streams and window in the model's
/// text, the `-P` of the streams fix, every "expect about" and the goodput
/// in the summary are the same numbers.
#[test]
fn the_model_alone_quotes_one_set_of_figures() {
    let out = run(
        plumb_bin(),
        &["why", "--rate", "1g", "--rtt", "15ms", "-w", "17520"],
        Duration::from_secs(10),
    );
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let after = |key: &str| -> String {
        let i = text
            .find(key)
            .unwrap_or_else(|| panic!("{key} missing:\n{text}"));
        text[i + key.len()..]
            .split(|c: char| !(c.is_ascii_digit() || c == ',' || c == '.'))
            .next()
            .unwrap_or_default()
            .to_string()
    };
    let streams = after("), or ");
    assert!(!streams.is_empty(), "{text}");
    assert!(
        text.contains(&format!(
            "{streams} parallel streams (plumb -c HOST -P {streams};"
        )),
        "{streams}:\n{text}"
    );
    let window = after("takes a window of the bandwidth-delay product, ");
    assert!(
        text.contains(&format!("let autotuning reach {window} B")),
        "{window}:\n{text}"
    );
    let goodput = after("the link could carry ");
    let expects: Vec<&str> = text
        .split("-> expect about ")
        .skip(1)
        .map(|s| s.split(' ').next().unwrap_or_default())
        .collect();
    assert!(!expects.is_empty(), "{text}");
    assert!(
        expects.iter().all(|e| *e == goodput),
        "{goodput} vs {expects:?}"
    );
}

/// Recorded lab runs with two causes in play, explained from the saved
/// document: MSS 536 with a 17,520 B window is the window (the MSS is seen,
/// not binding); bbr under 1 % loss at 532 Mbit/s is unexplained.
#[test]
fn recorded_lab_runs_are_ranked_by_evidence() {
    let fixture = |name: &str| {
        format!(
            "{}/../diagnose/tests/fixtures/lab-{name}.json",
            env!("CARGO_MANIFEST_DIR")
        )
    };
    let why = |name: &str| {
        let path = fixture(name);
        let out = run(
            plumb_bin(),
            &["why", "--from", &path, "--link", "1g", "-J"],
            Duration::from_secs(10),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        json(&out, "why --from lab run")["diagnosis"].clone()
    };
    let d = why("mss536-rwin");
    assert_eq!(d["limit"], "receive_window", "{d}");
    for key in [
        "secondary",
        "measured_bps",
        "predicted_bps",
        "link_bps",
        "evidence",
        "fixes",
        "unknown",
    ] {
        assert!(d.get(key).is_some(), "{key} missing: {d}");
    }
    let (m, p, t) = (
        d["measured_bps"].as_f64().unwrap_or(0.0),
        d["predicted_bps"].as_f64().unwrap_or(0.0),
        d["tolerance"].as_f64().unwrap_or(0.0),
    );
    assert!(m <= p * (1.0 + t) && m >= p / (1.0 + t), "{m} {p} {t}");
    assert!(d["confidence"]
        .as_f64()
        .is_some_and(|c| c > 0.0 && c <= 1.0));
    assert_eq!(d["secondary"][0], "path_mtu", "{d}");
    assert_eq!(d["findings"][1]["status"], "seen, not binding", "{d}");

    let d = why("bbr-loss");
    assert_eq!(d["limit"], "unexplained", "{d}");
    assert!(d["predicted_bps"].is_null(), "{d}");
    assert_eq!(d["fixes"].as_array().map(Vec::len), Some(0));
    assert!(
        d["summary"]
            .as_str()
            .is_some_and(|s| s.starts_with("Unexplained: 531.9 Mbit/s measured")),
        "{d}"
    );
}
