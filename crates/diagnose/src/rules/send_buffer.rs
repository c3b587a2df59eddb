//! The send-buffer rule: the sender's socket buffer, its payload per round
//! trip, and TCP's `sndbuf_limited` time.

use super::context::Context;
use super::receive_window::mem_max;
use crate::finding::line;
use crate::human::{bytes, mbps, ms, pct};
use crate::payload::sndbuf_payload;
use crate::seen::Seen;
use plumb_record::diagnosis::Limit;

/// The tolerance of the send-buffer model, wider because the payload share
/// of a buffer ([`sndbuf_payload`]) is itself an estimate: in the lab the
/// rate was 0.9–1.24 of the prediction (cubic 1.19, bbr 0.997 in the
/// recorded 64 KiB runs).
pub const SNDBUF_TOLERANCE: f64 = 0.35;

/// The buffer's payload per RTT, and TCP's sndbuf_limited time. Both
/// count: under cubic, Linux 6.18 left sndbuf_limited at 0 while a
/// 128 KiB buffer held a 1 Gb/s, 15 ms path to 66 Mbit/s (the lab,
/// --sndbuf 64K). An autotuned buffer follows the congestion window, and
/// the RTT it is divided by grows with the queue, so its size cannot
/// explain a rate alone (under a 1 % CPU quota at the receiver a 4 MiB
/// buffer over a 63 ms RTT "allowed" the measured 425 Mbit/s); it is shown
/// when the counters point at it, and a size that allows far more than
/// was measured raises the counters' bar.
pub(crate) fn seen(cx: &Context) -> Option<Seen> {
    let ev = cx.ev;
    let r = cx.rtt?;
    let sndbuf = cx.sndbuf;
    let buf: Option<u64> = {
        let b: Vec<u64> = ev.streams.iter().filter_map(|s| s.sndbuf_actual).collect();
        (!b.is_empty()).then(|| b.iter().sum())
    };
    let allows = buf.map(|b| sndbuf_payload(b) * 8.0 / r);
    let fixed = !ev.streams.is_empty() && ev.streams.iter().all(|s| s.sndbuf_set);
    if !(sndbuf.is_some_and(|f| f >= 0.05) || (fixed && allows.is_some())) {
        return None;
    }
    let mut e = Vec::new();
    if let Some(f) = sndbuf {
        e.push(line(
            "time limited by the send buffer (TCP_INFO sndbuf_limited)",
            f * 100.0,
            "% of the test",
        ));
    }
    if let Some(b) = buf {
        e.push(line(
            &format!(
                "sender SO_SNDBUF granted ({})",
                if fixed { "set by hand" } else { "autotuned" }
            ),
            b as f64,
            "B",
        ));
    }
    // The sender's ceiling for autotuning its buffer: the far host's
    // with a plumb peer when the server sends (-R).
    if let Some(m) = mem_max(&ev.sysctl_sender, "net.ipv4.tcp_wmem") {
        e.push(line("sender's net.ipv4.tcp_wmem maximum", m as f64, "B"));
    }
    cx.rtt_lines(&mut e);
    let mut s = Seen::new(
        Limit::SendBuffer,
        "the sender's socket buffer",
        format!(
            "{} of send buffer per {} round trip allows about {}{}",
            buf.map_or("its".to_string(), bytes),
            ms(r),
            allows.map_or_else(|| "an unknown rate".into(), mbps),
            sndbuf
                .filter(|f| *f >= 0.05)
                .map_or(String::new(), |f| format!(
                    "; TCP counted {}% of the test limited by it",
                    pct(f)
                ))
        ),
    )
    .counters(sndbuf);
    if let Some(p) = allows {
        s = s.model(p, SNDBUF_TOLERANCE);
        s.bound_only = !fixed;
    } else {
        s.missing.push("the sender's granted SO_SNDBUF".into());
    }
    cx.rtt_missing(&mut s.missing);
    s.evidence = e;
    Some(s)
}

#[cfg(test)]
mod tests {
    use crate::testing::*;

    #[test]
    fn the_senders_wmem_ceiling_is_evidence_for_the_send_buffer() {
        let e = {
            let mut e = recorded("sndbuf-cubic", 1e9);
            e.sysctl_sender
                .insert("net.ipv4.tcp_wmem".into(), "4096 16384 4194304".into());
            e.sysctl_receiver
                .insert("net.ipv4.tcp_wmem".into(), "4096 16384 777".into());
            e
        };
        let d = diagnose(&e);
        let f = d
            .findings
            .iter()
            .find(|f| f.limit == Limit::SendBuffer)
            .expect("the send buffer is seen");
        let l = f
            .evidence
            .iter()
            .find(|l| l.what == "sender's net.ipv4.tcp_wmem maximum")
            .expect("the sender's ceiling is cited");
        assert_eq!(l.value, 4_194_304.0);
    }

    #[test]
    fn send_buffer() {
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.sndbuf_limited_us = Some(4_500_000);
        s.sndbuf_actual = Some(131_072);
        s.sndbuf_set = true;
        let d = diagnose(&ev(53e6, s.clone()));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::SendBuffer));
        let p = d.predicted_bps.unwrap_or(0.0);
        assert!((p - 0.8 * 131_072.0 * 8.0 / 0.015).abs() < 1.0, "{p}");
        assert!(d
            .fixes
            .iter()
            .any(|f| f.commands.iter().any(|c| c.contains("wmem_max"))));
        // Autotuned, the same size is only a bound: the counters name it,
        // and the answer quotes no predicted rate.
        s.sndbuf_set = false;
        let d = diagnose(&ev(53e6, s));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::SendBuffer));
        assert_eq!(d.predicted_bps, None);
    }

    /// Cubic on Linux 6.18 leaves `sndbuf_limited` at 0 while a fixed send
    /// buffer holds the rate (lab: --sndbuf 64K, 1 Gb/s, 15 ms: 66 Mbit/s,
    /// cwnd 990 kB): the buffer's size must name it, not the congestion window.
    #[test]
    fn fixed_send_buffer_without_counters() {
        let mut s = stream(8 << 20, 15_700, 5.0);
        s.sndbuf_actual = Some(131_072);
        s.sndbuf_set = true;
        s.max_cwnd = Some(990_432);
        let d = diagnose(&ev(66.5e6, s.clone()));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::SendBuffer), "{:?}", d.findings);
        // Only the model speaks (ratio 1.24 of a 35 % band): not high.
        assert!(
            d.findings[0].level < Confidence::High,
            "{:?}",
            d.findings[0]
        );
        // The same size, autotuned, says nothing about the limit.
        s.sndbuf_set = false;
        let d = diagnose(&ev(66.5e6, s.clone()));
        assert_ne!(d.limit, Some(Limit::SendBuffer), "{:?}", d.findings);
        // A fixed buffer far larger than the rate needs is seen, not binding.
        s.sndbuf_set = true;
        s.sndbuf_actual = Some(4 << 20);
        let d = diagnose(&ev(66.5e6, s));
        assert_eq!(status(&d, Limit::SendBuffer), Some(Status::NotBinding));
    }
}
