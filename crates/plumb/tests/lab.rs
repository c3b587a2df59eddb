//! `plumb lab` and `plumb why` on emulated links whose truth is known: the
//! backup scenario, a full link, loss against Mathis, and one scenario per
//! limit `plumb why` can name. Needs root and /dev/net/tun (CI has both);
//! elsewhere each test is recorded as skipped (`plumb_testkit`). Lab runs are serialised (they
//! share two CPUs) and every one is checked to leave nothing behind.

mod common;

use std::sync::Mutex;
use std::time::Duration;

use common::*;
use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// `plumb lab --why -J LAB… -- CLIENT…`, checked for leftovers afterwards.
fn lab(lab_args: &[&str], client: &[&str]) -> Value {
    let mut a = vec!["lab", "--why", "-J"];
    a.extend_from_slice(lab_args);
    a.push("--");
    a.extend_from_slice(client);
    let out = run(plumb_bin(), &a, Duration::from_secs(60));
    let left = leftovers();
    assert!(left.is_empty(), "the lab left {left:?} behind");
    assert!(
        out.status.success(),
        "plumb {a:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out, "plumb lab");
    assert_clean(&v, "plumb lab");
    v
}

fn diag(v: &Value) -> (&str, f64, f64) {
    let d = &v["diagnosis"];
    (
        d["limit"].as_str().unwrap_or("none"),
        d["measured_bps"].as_f64().unwrap_or(0.0),
        d["predicted_bps"].as_f64().unwrap_or(0.0),
    )
}

#[test]
fn backup_scenario_with_the_old_window() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let v = lab(
        &["--rate", "1gbit", "--rtt", "15ms"],
        &["--rwin", "17520", "-t", "4"],
    );
    let measured = num(&v, "end.sum_received.bits_per_second");
    let model = num(&v, "model.predicted_bps");
    assert_eq!(model, 9_344_000.0, "the model's 17,520 B / 15 ms");
    assert!(
        (measured / model - 1.0).abs() <= 0.10,
        "measured {measured} vs 9.344 Mbit/s"
    );
    // TCP's own minimum RTT and the lab's probe both see 15 ms ± 5 %.
    let min_rtt = num(&v, "end.plumb.local.streams.0.tcp_info.min_rtt_us") / 1e3;
    assert!(
        (min_rtt / 15.0 - 1.0).abs() <= 0.05,
        "TCP min RTT {min_rtt} ms"
    );
    let probe = num(&v, "lab.measured.rtt_min_ms");
    assert!((probe / 15.0 - 1.0).abs() <= 0.05, "probe RTT {probe} ms");
    let (limit, m, p) = diag(&v);
    assert_eq!(limit, "receive_window", "{}", v["diagnosis"]["summary"]);
    assert!(
        (m / p - 1.0).abs() <= 0.15,
        "diagnosis predicted {p}, measured {m}"
    );
    assert_eq!(v["diagnosis"]["confidence_level"], "high");
    assert!(v["diagnosis"]["confidence"]
        .as_f64()
        .is_some_and(|c| c >= 0.75));
}

/// The 10 Gb/s datacentre link the lab must emulate: in CI at a bar well
/// under the 9 Gb/s, so the emulator's speed cannot silently
/// regress (the full figure is `bench/`'s, on a quiet machine).
#[test]
fn ten_gbit_link_carries_at_least_5_gbit() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let v = lab(
        &["--rate", "10gbit", "--rtt", "15ms"],
        &["-t", "4", "-O", "1"],
    );
    let measured = num(&v, "end.sum_received.bits_per_second");
    assert_eq!(num(&v, "lab.configured.rate_bps"), 10e9);
    assert!(
        measured >= 5e9,
        "measured {measured} bit/s on a 10 Gbit/s lab link"
    );
    assert!(
        measured <= num(&v, "model.link_goodput_bps") * 1.02,
        "faster than the link: {measured}"
    );
}

#[test]
fn autotuned_window_fills_the_link() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // -O 1 leaves slow start out, as a long backup would.
    let v = lab(
        &["--rate", "1gbit", "--rtt", "15ms"],
        &["-t", "4", "-O", "1"],
    );
    let measured = num(&v, "end.sum_received.bits_per_second");
    let goodput = num(&v, "model.link_goodput_bps");
    assert!(
        measured >= 0.85 * goodput,
        "measured {measured} of {goodput}"
    );
    assert_eq!(diag(&v).0, "link", "{}", v["diagnosis"]["summary"]);
}

#[test]
fn reno_under_random_loss_follows_mathis() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let v = lab(
        &[
            "--rate", "1gbit", "--rtt", "20ms", "--loss", "1%", "--seed", "7",
        ],
        &["-C", "reno", "-t", "5"],
    );
    let measured = num(&v, "end.sum_received.bits_per_second");
    let mathis = num(&v, "model.predicted_bps");
    assert_eq!(v["model"]["limit"], "loss");
    let ratio = measured / mathis;
    eprintln!(
        "Reno at 1 % loss, 20 ms: measured {:.2} Mbit/s, Mathis {:.2} Mbit/s: {} by {:.0} %",
        measured / 1e6,
        mathis / 1e6,
        if ratio < 1.0 {
            "below the model"
        } else {
            "above the model"
        },
        (ratio - 1.0).abs() * 100.0
    );
    // Seeded loss: five runs here gave 1.07-1.09x; the README claims 15 %.
    assert!(
        (ratio - 1.0).abs() <= 0.15,
        "measured {measured} vs Mathis {mathis}: not within 15 %"
    );
    assert_eq!(diag(&v).0, "loss", "{}", v["diagnosis"]["summary"]);
}

#[test]
fn small_send_buffer_is_named() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Both algorithms: under cubic the kernel does not count the time as
    // send-buffer limited, so the buffer's size has to name it.
    let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default();
    let mut ran = 0;
    for cc in ["cubic", "bbr"] {
        if !available.split_whitespace().any(|a| a == cc) {
            continue;
        }
        let v = lab(
            &["--rate", "1gbit", "--rtt", "15ms"],
            &["--sndbuf", "64K", "-t", "3", "-C", cc],
        );
        let (limit, m, p) = diag(&v);
        assert_eq!(limit, "send_buffer", "{cc}: {}", v["diagnosis"]["summary"]);
        assert!(
            (m / p - 1.0).abs() <= 0.35,
            "{cc}: predicted {p}, measured {m}"
        );
        ran += 1;
    }
    assert!(ran > 0, "neither cubic nor bbr is available: {available}");
}

#[test]
fn full_link_has_nothing_to_fix() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let v = lab(&["--rate", "200mbit", "--rtt", "5ms"], &["-t", "4"]);
    let (limit, m, p) = diag(&v);
    assert_eq!(limit, "link", "{}", v["diagnosis"]["summary"]);
    assert!(m >= 0.9 * p, "measured {m} of {p}");
}

#[test]
fn rate_cap_is_the_application() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let v = lab(
        &["--rate", "1gbit", "--rtt", "15ms"],
        &["-b", "50M", "-t", "4"],
    );
    let (limit, m, p) = diag(&v);
    assert_eq!(limit, "application", "{}", v["diagnosis"]["summary"]);
    assert!((m / p - 1.0).abs() <= 0.1, "predicted {p}, measured {m}");
    assert_eq!(v["model"]["limit"], "application");
}

#[test]
fn small_mss_is_path_mtu() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let v = lab(
        &["--rate", "1gbit", "--rtt", "15ms"],
        &["-M", "536", "-t", "4", "-O", "1"],
    );
    let (limit, m, p) = diag(&v);
    assert_eq!(limit, "path_mtu", "{}", v["diagnosis"]["summary"]);
    assert!((m / p - 1.0).abs() <= 0.15, "predicted {p}, measured {m}");
}

/// Issue 14: a small MSS and a small window on the same path. The MSS alone
/// would allow about 853 Mbit/s; the 17,520 B window allows 9.3, and that
/// is what the path carries, so the window is named and the MSS is seen,
/// not binding.
#[test]
fn small_mss_and_small_window_is_the_receive_window() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let v = lab(
        &["--rate", "1gbit", "--rtt", "15ms"],
        &["-M", "536", "--rwin", "17520", "-t", "4"],
    );
    let (limit, m, p) = diag(&v);
    assert_eq!(limit, "receive_window", "{}", v["diagnosis"]["summary"]);
    let tolerance = v["diagnosis"]["tolerance"].as_f64().unwrap_or(0.0);
    assert!(
        m <= p * (1.0 + tolerance) && m >= p / (1.0 + tolerance),
        "predicted {p}, measured {m}, tolerance {tolerance}"
    );
    let mtu = v["diagnosis"]["findings"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["limit"] == "path_mtu"))
        .expect("the small MSS is seen");
    assert_eq!(mtu["status"], "seen, not binding", "{mtu}");
}

#[test]
fn throttled_receiver_is_cpu() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // The far server gets 1 % of one CPU: its receiving thread wants more.
    let v = lab(
        &["--rate", "1gbit", "--rtt", "15ms", "--far-cpu", "1%"],
        &["-t", "4"],
    );
    let (limit, m, _) = diag(&v);
    assert_eq!(limit, "cpu", "{}", v["diagnosis"]["summary"]);
    assert!(
        m < 0.9 * 941.5e6,
        "a throttled receiver cannot fill the link: {m}"
    );
    let wait = num(&v, "end.plumb.remote.streams.0.thread_wait_us");
    let cpu = num(&v, "end.plumb.remote.streams.0.thread_cpu_us");
    assert!(
        wait > 5.0 * cpu,
        "the thread waited ({wait} µs) far more than it ran ({cpu} µs)"
    );
}

#[test]
fn any_program_runs_across_the_link() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = run(
        plumb_bin(),
        &[
            "lab",
            "--rate",
            "100m",
            "--rtt",
            "10ms",
            "--far-exec",
            "sleep 5",
            "--exec",
            "echo far=$PLUMB_FAR near=$PLUMB_NEAR",
        ],
        Duration::from_secs(30),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("far=198.18.0.2 near=198.18.0.1"), "{text}");
    assert!(leftovers().is_empty());
}

#[test]
fn bad_lab_flags_are_one_line_and_exit_2() {
    for args in [
        &["lab", "--rate", "fast"][..],
        &["lab", "--rtt", "-5ms"],
        &["lab", "--queue", "lots"],
        &["lab", "--loss", "5"],
        &["lab", "--loss-burst", "3"],
        &["lab", "--rtt", "20s"],
    ] {
        let out = run(plumb_bin(), args, Duration::from_secs(10));
        assert_eq!(
            out.status.code(),
            Some(2),
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

#[test]
fn rr_round_trip_is_the_lab_rtt() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let v = lab(&["--rate", "1gbit", "--rtt", "15ms"], &["--rr", "-t", "3"]);
    let p50 = num(&v, "end.plumb.latency.p50_us") / 1e3;
    assert!((p50 / 15.0 - 1.0).abs() <= 0.05, "RR p50 {p50} ms");
    // One transaction in flight: about one per round trip.
    let tps = num(&v, "end.plumb.latency.transactions_per_second");
    assert!((50.0..=70.0).contains(&tps), "{tps} transactions/s");
}

/// `plumb lab --latency` with one CUBIC stream filling `queue`; returns the
/// document and the delay the load added at worst (loaded p99 − idle p50).
fn bufferbloat(queue: &str) -> (Value, f64) {
    let v = lab(
        &[
            "--rate",
            "1gbit",
            "--rtt",
            "15ms",
            "--queue",
            queue,
            // The kernel's 4 MiB send buffer could not fill a deep queue.
            "--tcp-buffer-max",
            "64M",
            "--latency",
        ],
        &["-C", "cubic", "-t", "10"],
    );
    let idle = num(&v, "end.plumb.latency.idle.p50_ms");
    assert!(idle >= 15.0, "idle p50 {idle} ms is under the link's RTT");
    let added = num(&v, "end.plumb.latency.increase_p99_ms");
    (v, added)
}

#[test]
fn a_deep_queue_is_bufferbloat_and_why_names_it() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (v, added) = bufferbloat("100ms");
    // A full 100 ms drop-tail queue delays a probe by a little under 100 ms
    // (it must have room for the probe), so the band starts at 90.
    assert!((90.0..=130.0).contains(&added), "the load added {added} ms");
    let predicted = num(&v, "model.queue_delay_ms");
    assert_eq!(predicted, 100.0, "calc --queue's figure");
    assert!(
        (added / predicted - 1.0).abs() <= 0.15,
        "measured {added} ms vs predicted {predicted} ms"
    );
    let l = &v["diagnosis"]["latency"];
    assert_eq!(l["verdict"], "bufferbloat", "{l}");
    let sentence = l["sentence"].as_str().unwrap_or("");
    assert!(sentence.contains("queue"), "{sentence}");
    assert!(l["fixes"].as_array().is_some_and(|f| f.len() >= 4), "{l}");
    // The bulk stream still filled the link.
    assert!(num(&v, "end.sum_received.bits_per_second") > 850e6);
}

#[test]
fn a_one_bdp_queue_adds_far_less() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (v, added) = bufferbloat("1BDP");
    let predicted = num(&v, "model.queue_delay_ms");
    assert!(
        (predicted - 15.0).abs() < 1e-9,
        "one BDP at 15 ms: {predicted}"
    );
    // At the median the load adds no more than the queue holds; at worst far
    // less than the deep queue's 90+ ms. (Two runs on this machine: p99 28
    // and 39 ms against the 15 ms prediction — a tail the model does not
    // explain yet; p50 9-10 ms.)
    let median = num(&v, "end.plumb.latency.increase_p50_ms");
    eprintln!("one BDP: the load added p50 {median} ms, p99 {added} ms");
    assert!(median <= predicted, "median added {median} ms");
    assert!(added < 90.0, "the load added {added} ms at worst");
}
