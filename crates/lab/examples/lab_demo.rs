//! Starts a lab, prints the probe next to the configuration, runs one TCP
//! transfer and prints the lab's counters. Needs root.
//!
//! `cargo run --release -p plumb-lab --example lab_demo -- [rate_mbps] [rtt_ms] [seconds] [cc]`

use std::time::Duration;

use plumb_lab::emu::Rate;
use plumb_lab::measure::TransferOptions;
use plumb_lab::{Lab, LabConfig, Side};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, d: f64| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let rate = Rate::from_mbps(arg(0, 1000.0)).ok_or("bad rate")?;
    let rtt = Duration::from_secs_f64(arg(1, 15.0) / 1000.0);
    let secs = arg(2, 3.0);
    Lab::install_signal_cleanup()?;
    let mut cfg = LabConfig::new(rate, rtt);
    // PLUMB_LAB_RT=<prio> sets the forwarders' SCHED_FIFO priority; 0 = normal.
    if let Ok(v) = std::env::var("PLUMB_LAB_RT") {
        cfg.realtime = v.parse().ok().filter(|&p| p > 0);
    }
    cfg.tcp_buffer_max = std::env::var("PLUMB_LAB_TCPBUF")
        .ok()
        .and_then(|v| v.parse().ok());
    let lab = Lab::start(cfg)?;
    println!(
        "lab {} / {} up, offloads {:#x}",
        lab.namespace_name(Side::Near),
        lab.namespace_name(Side::Far),
        lab.offloads()
    );
    let p = lab.probe()?;
    println!(
        "rtt: configured {:?}, measured min {:?} median {:?} ({} samples, {} lost)",
        p.configured_rtt, p.rtt_min, p.rtt_median, p.rtt_samples, p.rtt_lost
    );
    println!(
        "rate: configured {}, measured {} ({}/{} burst packets)",
        p.configured_rate,
        p.rate.map_or("-".into(), |r| r.to_string()),
        p.burst_received,
        p.burst_sent
    );
    let opts = TransferOptions {
        duration: Duration::from_secs_f64(secs),
        congestion: args.get(3).cloned(),
        ..TransferOptions::default()
    };
    let r = lab.tcp_transfer(&opts)?;
    println!(
        "tcp: goodput {:.1} Mbit/s after warm-up ({:.1} overall), min_rtt {:?}, retrans {}",
        r.goodput_bps / 1e6,
        r.overall_bps / 1e6,
        r.sender.min_rtt,
        r.sender.total_retrans
    );
    let s = lab.stats();
    for (name, d) in [("near→far", &s.near_to_far), ("far→near", &s.far_to_near)] {
        println!(
            "{name}: read {} ({} gso) written {} | dropped queue {} loss {} | max queue {} B | release error {}",
            d.frames_read,
            d.gso_frames_read,
            d.frames_written,
            d.link.dropped_queue.segments,
            d.link.dropped_loss.segments,
            d.link.max_queue_bytes,
            d.release_error,
        );
        println!(
            "    write time {} | wake late {}",
            d.write_time, d.wake_late
        );
    }
    for side in [Side::Near, Side::Far] {
        println!("{side:?} device: {:?}", lab.device_counters(side)?);
    }
    lab.stop()?;
    Ok(())
}
