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
    assert!(
        text.starts_with(
            "Limited by the receive window: 17,520 B per 15 ms round trip allows 9.344 Mbit/s"
        ),
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
    let port = port(28_000);
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
    let port = port(28_000);
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
