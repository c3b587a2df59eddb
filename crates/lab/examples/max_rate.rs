//! Finds the highest link rate the emulator sustains with one TCP stream at
//! 15 ms RTT: tries 1, 2, 4 and 8 Gbit/s links and reports goodput and the
//! forwarders' release-time error. Needs root.
//!
//! ```text
//! cargo run --release -p plumb-lab --example max_rate -- [--normal-priority] [--no-idle-poll] [--cc NAME] [--secs N] [--detail] [--spin US] [RATE_GBPS…]
//! ```
//!
//! TCP buffers in the lab namespaces are raised to 4 × BDP (the kernel's
//! default 4 MiB send buffer would cap one flow at ~2 Gbit/s at 15 ms).
//! Numbers depend on what else the machine is doing; the load average is
//! printed with each run.

use std::time::Duration;

use plumb_lab::emu::{bdp_bytes, Rate};
use plumb_lab::measure::TransferOptions;
use plumb_lab::{Lab, LabConfig, LabStats};

type AnyError = Box<dyn std::error::Error>;

/// The command line.
struct Options {
    rates: Vec<f64>,
    realtime: Option<i32>,
    idle_poll: bool,
    cc: Option<String>,
    secs: f64,
    detail: bool,
    spin: Option<Duration>,
}

fn parse_args() -> Result<Options, AnyError> {
    let mut o = Options {
        rates: Vec::new(),
        realtime: Some(10),
        idle_poll: true,
        cc: None,
        secs: 4.0,
        detail: false,
        spin: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--normal-priority" => o.realtime = None,
            "--no-idle-poll" => o.idle_poll = false,
            "--cc" => o.cc = args.next(),
            "--detail" => o.detail = true,
            "--spin" => {
                let us: u64 = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .ok_or("--spin MICROSECONDS")?;
                o.spin = Some(Duration::from_micros(us));
            }
            "--secs" => o.secs = args.next().and_then(|s| s.parse().ok()).ok_or("--secs N")?,
            g => o.rates.push(
                g.parse::<f64>()
                    .map_err(|_| format!("not a rate in Gbit/s: {g:?}"))?,
            ),
        }
    }
    if o.rates.is_empty() {
        o.rates = vec![1.0, 2.0, 4.0, 8.0];
    }
    Ok(o)
}

fn main() -> Result<(), AnyError> {
    let o = parse_args()?;
    Lab::install_signal_cleanup()?;
    println!(
        "{:>6} {:>9} {:>9} {:>6} {:>8} {:>8} | release error near→far: {:>8} {:>8} {:>8} {:>8} | far→near p99 | load",
        "link", "probe", "goodput", "ideal", "retrans", "q-drops", "p50", "p99", "p99.9", "max"
    );
    let mut best = None;
    let mut best_timed = None;
    for &g in &o.rates {
        let (share, p99) = run_rate(&o, g)?;
        if share >= 0.9 {
            best = Some(g);
            if p99 < Duration::from_micros(100) {
                best_timed = Some(g);
            }
        }
    }
    let show = |b: Option<f64>| b.map_or("none".to_owned(), |g| format!("{g} Gbit/s"));
    println!(
        "highest link rate carried at ≥ 90 % of ideal goodput: {}",
        show(best)
    );
    println!(
        "  … and with near→far release error p99 < 100 µs: {}",
        show(best_timed)
    );
    Ok(())
}

/// One link of `g` Gbit/s: a transfer over it, its line printed; the share
/// of ideal goodput and the near→far release error's p99.
fn run_rate(o: &Options, g: f64) -> Result<(f64, Duration), AnyError> {
    let rtt = Duration::from_millis(15);
    let rate = Rate::from_gbps(g).ok_or("bad rate")?;
    let mut cfg = LabConfig::new(rate, rtt);
    cfg.realtime = o.realtime;
    cfg.idle_poll = o.idle_poll;
    if let Some(spin) = o.spin {
        cfg.spin = spin;
    }
    let buf = (4 * bdp_bytes(rate, rtt)).clamp(4 << 20, 1 << 30);
    cfg.tcp_buffer_max = Some(u32::try_from(buf).unwrap_or(u32::MAX));
    let lab = Lab::start(cfg)?;
    let probe = lab.probe()?;
    let r = lab.tcp_transfer(&TransferOptions {
        duration: Duration::from_secs_f64(o.secs),
        warmup: Duration::from_secs_f64(o.secs * 0.4),
        congestion: o.cc.clone(),
        ..TransferOptions::default()
    })?;
    let s = lab.stats();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let ideal = rate.bps() as f64 * 1448.0 / 1538.0;
    let share = r.goodput_bps / ideal;
    let e = &s.near_to_far.release_error;
    println!(
        "{:>4.0}G {:>7.0}M {:>7.0}M {:>5.0}% {:>8} {:>8} | {:>33} {:>8.0?} {:>8.0?} {:>8.0?} {:>8.0?} | {:>12.0?} | {}",
        g,
        probe.rate.map_or(0.0, |r| r.bps() as f64 / 1e6),
        r.goodput_bps / 1e6,
        share * 100.0,
        r.sender.total_retrans,
        s.near_to_far.link.dropped_queue.segments,
        "",
        e.quantile(0.5),
        e.quantile(0.99),
        e.quantile(0.999),
        e.max(),
        s.far_to_near.release_error.quantile(0.99),
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    if o.detail {
        print_detail(&lab, &s)?;
    }
    if !s.near_to_far.realtime && o.realtime.is_some() {
        println!("       (forwarders did not get real-time priority)");
    }
    lab.stop()?;
    Ok((share, e.quantile(0.99)))
}

/// `--detail`: the far side's non-zero receive-queue counters and both
/// forwarders' timing.
fn print_detail(lab: &Lab, s: &LabStats) -> Result<(), AnyError> {
    let h = lab.spawn_in(plumb_lab::Side::Far, || {
        Ok(std::fs::read_to_string("/proc/thread-self/net/netstat").unwrap_or_default())
    })?;
    let text = h.join().map_err(|_| "netstat thread panicked")??;
    let lines: Vec<&str> = text.lines().collect();
    let mut shown = Vec::new();
    for pair in lines.chunks(2) {
        if let [names, values] = pair {
            for (n, v) in names.split_whitespace().zip(values.split_whitespace()) {
                let keep = [
                    "Prune",
                    "Collapse",
                    "OFO",
                    "RcvQDrop",
                    "RcvPruned",
                    "Backlog",
                ];
                if v != "0" && keep.iter().any(|k| n.contains(k)) {
                    shown.push(format!("{n}={v}"));
                }
            }
        }
    }
    println!(
        "       far netstat (since the lab started, warm-up included): {}",
        shown.join(" ")
    );
    for (name, d) in [("near→far", &s.near_to_far), ("far→near", &s.far_to_near)] {
        println!(
            "       {name}: write {}; wake late {}; frames read {} ({} GSO), written {}",
            d.write_time, d.wake_late, d.frames_read, d.gso_frames_read, d.frames_written,
        );
    }
    Ok(())
}
