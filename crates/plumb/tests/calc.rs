//! `plumb calc` through the real binary: the worked figures users check against,
//! and every kind of bad input.

use std::process::{Command, Output};

use serde_json::Value;

fn plumb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(args)
        .output()
        .expect("run plumb")
}

fn calc_json(args: &[&str]) -> Value {
    let mut all = vec!["calc", "--json"];
    all.extend_from_slice(args);
    let out = plumb(&all);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing or not a number in {v}"))
}

#[test]
fn backup_scenario() {
    // Its old hosts send no TCP timestamps.
    let v = calc_json(&[
        "--rate",
        "1Gbit",
        "--rtt",
        "15ms",
        "--window",
        "17520",
        "--tcp-timestamps",
        "off",
    ]);
    assert!((num(&v, "window_limited_bps") - 9_344_000.0).abs() < 1.0);
    assert!((num(&v, "predicted_bps") - 9_344_000.0).abs() < 1.0);
    assert_eq!(v["limit"], "window");
    assert_eq!(v["streams_needed"], 108);
    assert_eq!(num(&v, "bdp_bytes"), 1_875_000.0);
    assert_eq!(v["window_needed_bytes"], 1_875_000);
    assert_eq!(num(&v, "rtt_ms"), 15.0);
    assert!(
        v["loss_limited_bps"].is_null(),
        "no --loss: null, not guessed"
    );
    assert!(v.get("frames_per_second").is_none(), "no --frame: absent");
    assert!((num(&v, "link_goodput_bps") / 1e6 - 949.28).abs() < 0.01);
}

#[test]
fn unscaled_window_over_100ms() {
    for w in ["65535", "64KiB", "64K"] {
        let v = calc_json(&["--rtt", "100ms", "--window", w]);
        assert_eq!(
            format!("{:.2}", num(&v, "window_limited_bps") / 1e6),
            "5.24",
            "{w}"
        );
        assert!(v["link_goodput_bps"].is_null());
    }
}

#[test]
fn bandwidth_delay_products() {
    assert_eq!(
        num(
            &calc_json(&["--rate", "10Mbps", "--rtt", "100ms"]),
            "bdp_bytes"
        ),
        125_000.0
    );
    assert_eq!(
        num(&calc_json(&["--rate", "1G", "--rtt", "0.01s"]), "bdp_bytes"),
        1_250_000.0
    );
    let v = calc_json(&["--rate", "1G", "--rtt", "10ms"]);
    assert_eq!(v["limit"], "link", "only the link bounds it");
}

#[test]
fn framing_efficiency() {
    let v = calc_json(&["--rate", "1G", "--tcp-timestamps", "off"]);
    assert_eq!(format!("{:.1}", num(&v, "efficiency") * 100.0), "94.9");
    assert_eq!(v["payload_bytes"], 1460);
    assert_eq!(v["wire_bytes_per_frame"], 1538);
    // Linux's header, the default; --timestamps is the old spelling of on.
    for ts in [
        calc_json(&["--rate", "1G"]),
        calc_json(&["--rate", "1G", "--tcp-timestamps", "on"]),
        calc_json(&["--rate", "1G", "--timestamps"]),
    ] {
        assert_eq!(ts["payload_bytes"], 1448);
        assert_eq!(ts["tcp_timestamps"], true);
        assert_eq!(
            format!("{:.1}", num(&ts, "link_goodput_bps") / 1e6),
            "941.5"
        );
    }
    let v6 = calc_json(&[
        "--rate",
        "1G",
        "--ipv6",
        "--vlan",
        "--tcp-timestamps",
        "off",
    ]);
    assert_eq!(v6["payload_bytes"], 1440);
    assert_eq!(v6["wire_bytes_per_frame"], 1542);
    let mss = calc_json(&["--rate", "1G", "--mss", "536", "--tcp-timestamps", "off"]);
    assert_eq!(mss["mtu_bytes"], 576);
}

#[test]
fn frame_rates() {
    let v = calc_json(&["--rate", "1G", "--frame", "64"]);
    assert_eq!(v["frames_per_second"], 1_488_095);
    assert_eq!(v["frames_per_second_min"], 1_487_946);
    assert_eq!(v["frames_per_second_max"], 1_488_244);
    assert_eq!(
        calc_json(&["--rate", "10G", "--frame", "64"])["frames_per_second"],
        14_880_952
    );
}

#[test]
fn mathis() {
    let v = calc_json(&[
        "--rtt",
        "100ms",
        "--loss",
        "0.01%",
        "--mss",
        "1460",
        "--tcp-timestamps",
        "off",
    ]);
    assert_eq!(format!("{:.1}", num(&v, "loss_limited_bps") / 1e6), "14.3");
    assert_eq!(v["limit"], "loss");
    let same = calc_json(&[
        "--rtt",
        "100ms",
        "--loss",
        "1e-4",
        "--tcp-timestamps",
        "off",
    ]);
    assert_eq!(num(&same, "loss_limited_bps"), num(&v, "loss_limited_bps"));
}

#[test]
fn distance() {
    let v = calc_json(&["--distance", "1000km"]);
    assert_eq!(format!("{:.0}", num(&v, "rtt_fibre_ms")), "10");
    assert_eq!(num(&v, "rtt_typical_ms"), 15.0);
    assert_eq!(num(&v, "rtt_ms"), 15.0, "predictions use the typical RTT");
}

#[test]
fn transfer_time() {
    let v = calc_json(&[
        "--rate", "1G", "--rtt", "15ms", "--window", "17520", "--size", "1TB",
    ]);
    let secs = num(&v, "transfer_seconds");
    assert!((secs - 8e12 / 9_344_000.0).abs() < 1e-3, "{secs}");
}

#[test]
fn text_names_the_limit_and_the_fix() {
    let out = plumb(&[
        "calc", "--rate", "1Gbit", "--rtt", "15ms", "--window", "17520",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "9.344 Mbit/s",
        "limited by the window",
        "1,875,000 B",
        "108 parallel streams",
        "window scaling",
    ] {
        assert!(text.contains(needle), "{needle:?} not in:\n{text}");
    }
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    for args in [
        &["calc", "--rate", "1Gbananas", "--rtt", "1ms"][..],
        &["calc", "--rate", "-1G"],
        &["calc", "--rate", "0", "--rtt", "1ms"],
        &["calc", "--rtt", "15ms", "--distance", "1000km"],
        &["calc", "--window", "0", "--rtt", "1ms"],
        &["calc", "--loss", "5", "--rtt", "1ms"],
        &["calc", "--loss", "0%", "--rtt", "1ms"],
        &["calc", "--rtt", "fast"],
        &["calc", "--mss", "1460", "--mtu", "1500", "--rate", "1G"],
        &["calc", "--mtu", "40", "--rate", "1G"],
        &["calc", "--rate", "1G", "--frame", "10"],
        &["calc", "--frame", "64"],
        &["calc"],
        &["calc", "--rtt", "1ms", "--bogus"],
        &["calc", "--rate", "1G", "--tcp-timestamps", "maybe"],
        &[
            "calc",
            "--rate",
            "1G",
            "--tcp-timestamps",
            "on",
            "--timestamps",
        ],
    ] {
        let out = plumb(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("plumb: "), "{err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    let out = plumb(&["calc", "--rate", "1Gbananas", "--rtt", "1ms"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("'1Gbananas'"),
        "quotes the bad value"
    );
}

#[test]
fn queue_delay_and_loaded_rtt() {
    let v = calc_json(&["--rate", "1Gbit", "--rtt", "15ms", "--queue", "100ms"]);
    assert!((num(&v, "queue_delay_ms") - 100.0).abs() < 1e-9);
    assert!((num(&v, "loaded_rtt_ms") - 115.0).abs() < 1e-9);
    assert_eq!(num(&v, "queue_bytes"), 12_500_000.0);
    // Bytes drain at the link rate: 2 MB at 100 Mb/s is 160 ms.
    let v = calc_json(&["--rate", "100Mbit", "--rtt", "10ms", "--queue", "2MB"]);
    assert!((num(&v, "queue_delay_ms") - 160.0).abs() < 1e-9);
    // One BDP adds one round trip.
    let v = calc_json(&["--rate", "1Gbit", "--rtt", "15ms", "--queue", "1BDP"]);
    assert!((num(&v, "queue_delay_ms") - 15.0).abs() < 1e-9);
    assert!((num(&v, "loaded_rtt_ms") - 30.0).abs() < 1e-9);
    // Without a round trip the loaded RTT is unknown, not guessed.
    let v = calc_json(&["--rate", "1Gbit", "--queue", "1MB"]);
    assert!(v["loaded_rtt_ms"].is_null());
    for bad in [
        vec!["calc", "--rate", "1Gbit", "--queue", "1BDP"],
        vec!["calc", "--queue", "2MB"],
        vec!["calc", "--rate", "1Gbit", "--queue", "lots"],
    ] {
        let out = plumb(&bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    }
}

fn why_model(args: &[&str]) -> Value {
    let mut all = vec!["why", "-J"];
    all.extend_from_slice(args);
    let out = plumb(&all);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

/// `plumb calc` and `plumb why` on the model alone are one model: for the
/// same path they give the same link goodput, window needed (the
/// bandwidth-delay product) and streams, under the same default header
/// (TCP timestamps on), and both say which header they assumed.
#[test]
fn calc_and_why_give_one_answer() {
    let paths: &[&[&str]] = &[
        &["--rate", "1g", "--rtt", "15ms", "--window", "17520"],
        &[
            "--rate",
            "1g",
            "--rtt",
            "15ms",
            "--window",
            "17520",
            "--tcp-timestamps",
            "off",
        ],
        &[
            "--rate",
            "10g",
            "--rtt",
            "80ms",
            "--window",
            "64KiB",
            "--tcp-timestamps",
            "on",
        ],
        &[
            "--rate", "1g", "--rtt", "100ms", "--window", "16MiB", "--loss", "0.01%",
        ],
        &["--rate", "100m", "--rtt", "2ms", "--window", "4MiB"],
    ];
    for path in paths {
        let c = calc_json(path);
        let why_args: Vec<&str> = path
            .iter()
            .map(|a| if *a == "--window" { "-w" } else { a })
            .collect();
        let d = &why_model(&why_args)["diagnosis"];
        let f = &d["figures"];
        let goodput = num(&c, "link_goodput_bps");
        assert!(
            (f["goodput_bps"].as_f64().expect("why's goodput") - goodput).abs() < 1e-3,
            "{path:?}: calc {goodput}, why {}",
            f["goodput_bps"]
        );
        assert_eq!(
            f["window_needed_bytes"], c["window_needed_bytes"],
            "{path:?}"
        );
        // calc counts one stream as enough (1); why names none needed (null).
        let calc_streams = c["streams_needed"].as_u64().filter(|n| *n > 1);
        assert_eq!(f["streams_needed"].as_u64(), calc_streams, "{path:?}");
        // Each says the header it assumed, the same one.
        let ts = !path.contains(&"off");
        assert_eq!(c["tcp_timestamps"], ts, "{path:?}");
        assert_eq!(c["payload_bytes"], if ts { 1448 } else { 1460 });
        let header = format!("TCP timestamps {}", if ts { "on" } else { "off" });
        let calc_text =
            String::from_utf8_lossy(&plumb(&[&["calc"][..], path].concat()).stdout).into_owned();
        assert!(
            calc_text
                .lines()
                .next()
                .is_some_and(|l| l.contains(&header)),
            "{calc_text}"
        );
        let why_text = String::from_utf8_lossy(&plumb(&[&["why"][..], &why_args].concat()).stdout)
            .into_owned();
        assert!(
            why_text
                .lines()
                .next()
                .is_some_and(|l| l.starts_with("Model: ") && l.contains(&header)),
            "{why_text}"
        );
    }
    // The backup scenario's figures, as the README quotes them.
    let c = calc_json(paths[1]);
    assert_eq!(format!("{:.1}", num(&c, "efficiency") * 100.0), "94.9");
    assert_eq!(c["window_needed_bytes"], 1_875_000);
    assert_eq!(c["streams_needed"], 108);
}

/// The README's `plumb calc` block is this build's output, byte for byte.
#[test]
fn the_readme_calc_block_is_what_calc_prints() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let start = readme
        .find("$ plumb calc ")
        .expect("a calc block in the README");
    let block = &readme[start..];
    let block = &block[..block.find("```").expect("the block's end")];
    let (command, shown) = block
        .split_once('\n')
        .expect("a command line, then its output");
    let args: Vec<&str> = command
        .trim_start_matches("$ plumb ")
        .split_whitespace()
        .collect();
    let out = plumb(&args);
    assert!(out.status.success(), "{command}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), shown, "{command}");
}
