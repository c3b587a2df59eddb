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
    let out = run(plumb_bin(), &a, Duration::from_secs(150));
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

/// A 10 Gb/s datacentre link: the lab configures it, reports its release
/// error's tail in order, and never delivers more than the link carries.
/// How fast the emulator goes is `bench/`'s to measure (docs/benchmarks.md,
/// "The lab's emulator"), not a test's: it is the machine's speed.
#[test]
fn ten_gbit_link_is_configured_and_never_exceeded() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let v = lab(
        // 10 Gbit/s for 15 ms is 18.75 MB in flight: past the 4 MiB that a
        // namespace's tcp_wmem allows one socket by default.
        &[
            "--rate",
            "10gbit",
            "--rtt",
            "15ms",
            "--tcp-buffer-max",
            "64M",
        ],
        &["-t", "4", "-O", "1"],
    );
    let measured = num(&v, "end.sum_received.bits_per_second");
    assert_eq!(num(&v, "lab.configured.rate_bps"), 10e9);
    // The release error's tail is reported in order.
    let tail = ["p50", "p99", "p999", "max"]
        .map(|q| num(&v, &format!("lab.emulator.release_error_{q}_us")));
    assert!(tail.windows(2).all(|w| w[0] <= w[1]), "{tail:?}");
    assert!(measured > 0.0, "nothing crossed the 10 Gbit/s lab link");
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
    // The far server gets 1 ms of CPU a second (0.1 % of one core, in 1 s
    // periods, the least quota the kernel takes): whatever the machine's
    // speed, copying 1 Gbit/s out of the socket takes more than that
    // (memory copies at 20 GB/s would need 6 ms a second), so the receiver
    // is throttled in every period and the link cannot fill. The kernel's
    // default 100 ms period allows no quota under 1 %, which a fast
    // receiver can stay within at 900 Mbit/s.
    let v = lab(
        &[
            "--rate",
            "1gbit",
            "--rtt",
            "15ms",
            "--far-cpu",
            "0.1%",
            "--far-cpu-period",
            "1s",
        ],
        &["-t", "6"],
    );
    // The premise first: the far server read its own cgroup's quota, and
    // the quota ran out in most of the periods the test ran.
    assert_eq!(num(&v, "end.plumb.remote.cgroup_cpu.quota_pct"), 0.1);
    let periods = num(&v, "end.plumb.remote.cgroup_cpu.periods");
    let throttled = num(&v, "end.plumb.remote.cgroup_cpu.throttled_periods");
    if !(periods >= 4.0 && throttled >= 0.5 * periods) {
        plumb_testkit::skip_premise!("the 0.1 % quota ran out in {throttled} of {periods} periods");
        return;
    }
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
    let summary = v["diagnosis"]["summary"].as_str().unwrap_or("");
    assert!(
        summary.contains("CPU quota (0.1% of one core)"),
        "{summary}"
    );
    // The near end runs under no quota and says nothing of one.
    assert!(v["end"]["plumb"]["local"]["cgroup_cpu"].is_null());
    // Read back as text: the quota, why it was named, and its fix first.
    let dir = TempDir::new("lab-quota");
    let saved = dir.join("quota.json");
    std::fs::write(&saved, v.to_string()).expect("save");
    let out = run(
        plumb_bin(),
        &["why", "--from", &saved.to_string_lossy()],
        Duration::from_secs(20),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("its cgroup's CPU quota ran out in")
            && text.contains("raise or remove the CPU quota of the cgroup that ran out (receiver: 0.1% of one core)"),
        "{text}"
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

#[test]
fn a_lost_udp_transaction_is_counted_after_a_second() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // A fifth of the requests lost on the way out. One transaction is in
    // flight, so each loss holds the stream for the 1 s loss timeout and
    // then counts: a 4 s test sees a few, each a second apart, and ends on
    // time rather than waiting for the lost answers.
    let t0 = std::time::Instant::now();
    let v = lab(
        &[
            "--rate", "100mbit", "--rtt", "2ms", "--loss", "20%", "--seed", "16",
        ],
        &["-u", "--rr", "-t", "4"],
    );
    let lost = num(&v, "end.plumb.latency.lost");
    let done = num(&v, "end.plumb.latency.transactions");
    assert!((1.0..=4.0).contains(&lost), "{lost} lost, {done} done");
    assert!(done >= 4.0, "{lost} lost, {done} done");
    let secs = num(&v, "end.plumb.latency.seconds");
    assert!(secs < 6.0, "the test took {secs} s");
    assert!(t0.elapsed() < Duration::from_secs(40), "{:?}", t0.elapsed());
}

/// What `plumb lab --latency` with one CUBIC stream filling a queue measured.
struct Bloat {
    doc: Value,
    /// Idle p50, ms.
    idle: f64,
    /// Loaded p50, p90 and p99, ms.
    loaded: [f64; 3],
    /// `calc --queue`'s figures for this link: queue delay and loaded RTT, ms.
    queue_ms: f64,
    loaded_rtt_ms: f64,
}

impl Bloat {
    /// What the load added to the idle median at loaded percentile `i`.
    fn added(&self, i: usize) -> f64 {
        self.loaded[i] - self.idle
    }
}

/// `plumb lab --latency` at 1 Gb/s and 15 ms with one CUBIC stream filling
/// `queue` (CUBIC, not the default BBR, which keeps its own queue short),
/// of `queue_bytes` wire bytes. `None` (a counted skip) when the scenario did
/// not hold: the queue never filled to 90 % and overflowed.
fn bufferbloat(queue: &str, queue_bytes: f64) -> Option<Bloat> {
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
    // The premise first: the stream filled the queue until it overflowed.
    let filled = num(&v, "lab.emulator.max_queue_bytes");
    let overflowed = num(&v, "lab.emulator.segments_dropped_queue");
    if filled < 0.9 * queue_bytes || overflowed < 1.0 {
        plumb_testkit::skip_premise!(
            "the {queue} queue ({queue_bytes} B) filled to {filled} B and dropped {overflowed} segments"
        );
        return None;
    }
    let idle = num(&v, "end.plumb.latency.idle.p50_ms");
    assert!(idle >= 15.0, "idle p50 {idle} ms is under the link's RTT");
    let loaded =
        ["p50_ms", "p90_ms", "p99_ms"].map(|k| num(&v, &format!("end.plumb.latency.loaded.{k}")));
    let b = Bloat {
        idle,
        loaded,
        queue_ms: num(&v, "model.queue_delay_ms"),
        loaded_rtt_ms: num(&v, "model.loaded_rtt_ms"),
        doc: v,
    };
    eprintln!(
        "{queue}: idle p50 {idle:.1} ms; loaded p50/p90/p99 {:.1}/{:.1}/{:.1} ms; added {:.1}/{:.1}/{:.1} ms; \
         calc --queue {} ms, loaded RTT {} ms; probe retransmits {}; emulator release error p99 {} us",
        loaded[0],
        loaded[1],
        loaded[2],
        b.added(0),
        b.added(1),
        b.added(2),
        b.queue_ms,
        b.loaded_rtt_ms,
        b.doc["end"]["plumb"]["latency"]["probe_retransmits"],
        b.doc["lab"]["emulator"]["release_error_p99_us"],
    );
    Some(b)
}

// Why the "100–130 ms above idle" is checked on the loaded round
// trip, and the increase against the prediction: a drop-tail queue of 100 ms
// at the link rate delays no packet by more than 100 ms (the emulator counts
// wire bytes, so 100 ms is exact), and a probe that finds it full is dropped
// and resent, not delayed. So the load can add at most 100 ms (plus host
// noise), and 100–130 ms is the band of the loaded RTT: calc --queue's
// 15 + 100 = 115 ms, ±13 %. Percentile p90, because CUBIC saws: at each loss
// it cuts its window to 0.7 of what filled link and queue (0.7 × 115 ms of
// data, 80.5 ms, of which 15 ms on the link), so the queue runs between
// 65.5 ms and full and the median probe sees about 80 ms of it, while a
// tenth of the probes find it (nearly) full; p99 is the one or two slowest
// of ~95 probes, where a single late wake-up on a busy host lands.
#[test]
fn a_deep_queue_is_bufferbloat_and_why_names_it() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // 100 ms at 1 Gbit/s: 12.5 MB on the wire.
    let Some(b) = bufferbloat("100ms", 12.5e6) else {
        return;
    };
    assert_eq!(b.queue_ms, 100.0, "calc --queue's figure");
    assert_eq!(b.loaded_rtt_ms, 115.0, "calc --queue's loaded RTT");
    // The band, on the loaded round trip near the top of the sawtooth.
    assert!(
        (100.0..=130.0).contains(&b.loaded[1]),
        "loaded p90 {} ms",
        b.loaded[1]
    );
    // Predicted by calc --queue within 15 %: the delay the full queue adds.
    let added = b.added(1);
    assert!(
        (added / b.queue_ms - 1.0).abs() <= 0.15,
        "the load added {added} ms at p90 vs {} ms predicted",
        b.queue_ms
    );
    // CUBIC's cut leaves the queue at least 65.5 ms deep: the median probe
    // waits most of a queue, and no more than the full queue.
    assert!(
        (55.0..=added + 1.0).contains(&b.added(0)),
        "the load added {} ms at the median",
        b.added(0)
    );
    let l = &b.doc["diagnosis"]["latency"];
    assert_eq!(l["verdict"], "bufferbloat", "{l}");
    let sentence = l["sentence"].as_str().unwrap_or("");
    assert!(sentence.contains("queue"), "{sentence}");
    assert!(l["fixes"].as_array().is_some_and(|f| f.len() >= 4), "{l}");
    // The bulk stream still filled the link.
    assert!(num(&b.doc, "end.sum_received.bits_per_second") > 850e6);
    // For throughput the full path is the limit: the window that only feeds
    // its queue is not, and no fix raises it (docs/diagnosis.md, "The path,
    // inferred").
    let d = &b.doc["diagnosis"];
    assert_eq!(d["limit"], "link", "{}", d["summary"]);
    let fixes = d["fixes"].to_string();
    assert!(
        !fixes.contains("rmem") && !fixes.contains("wmem"),
        "{fixes}"
    );
}

#[test]
fn a_one_bdp_queue_adds_far_less() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // One BDP, 1 Gbit/s × 15 ms: 1.875 MB.
    let Some(b) = bufferbloat("1BDP", 1.875e6) else {
        return;
    };
    assert!(
        (b.queue_ms - 15.0).abs() < 1e-9,
        "one BDP at 15 ms: {}",
        b.queue_ms
    );
    // The same percentile as the deep queue's: no more than this queue holds
    // (15 ms, +15 %), a sixth of what the 100 ms queue added.
    assert!(
        b.added(1) <= b.queue_ms * 1.15,
        "the load added {} ms at p90",
        b.added(1)
    );
    assert!(b.added(0) <= b.queue_ms, "median added {} ms", b.added(0));
    // The slowest probes are not the queue's: see the probe's retransmits
    // and the emulator's release error printed above.
    assert!(b.added(2) < 90.0, "the load added {} ms at p99", b.added(2));
}

/// The README's example of any program across the lab: a file served over
/// HTTP in far (python3's http.server) and fetched by curl in near. The
/// far side runs no sshd, so this, not rsync over ssh, is what the README
/// shows. The file arrives whole.
#[test]
fn the_readmes_http_transfer_crosses_the_lab() {
    if !can_lab() {
        return;
    }
    for tool in ["python3", "curl"] {
        let here = std::process::Command::new(tool)
            .arg("--version")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok();
        if !here {
            plumb_testkit::skip_tool!("{tool} is not installed (scripts/test installs it)");
            return;
        }
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("lab-http");
    let file = dir.join("backup.tar");
    let size = 20_000_000u64;
    std::fs::File::create(&file)
        .and_then(|f| f.set_len(size))
        .expect("the file to serve");
    // The README's command line, with the reader's backup/ as this test's directory.
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let far = "python3 -m http.server 8000 --directory backup/";
    let near = "curl -s --retry 10 --retry-connrefused -o /dev/null -w \"%{size_download} B in %{time_total} s\\n\" http://$PLUMB_FAR:8000/backup.tar";
    assert!(
        readme.contains(&format!("--far-exec '{far}'"))
            && readme.contains(&format!("--exec '{near}'")),
        "the README's example changed: change this test with it"
    );
    let far = far.replace("backup/", &dir.display().to_string());
    let args = [
        "lab",
        "--rate",
        "1g",
        "--rtt",
        "15ms",
        "--far-exec",
        &far,
        "--exec",
        near,
    ];
    let (out, notes) = run_lab(&args, Duration::from_secs(60));
    assert!(out.status.success(), "{notes}");
    // curl's line, after the lab's own: every byte arrived.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with(&format!("{size} B in "))),
        "{notes}"
    );
}
