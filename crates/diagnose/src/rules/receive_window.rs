//! The receive-window rule: the receiver's largest advertised window per
//! round trip predicts the rate, and TCP's `rwnd_limited` time shows the
//! window binding.

use std::collections::BTreeMap;

use super::context::Context;
use crate::finding::line;
use crate::human::{bytes, mbps, ms, pct};
use crate::seen::Seen;
use crate::tolerance::TOLERANCE;
use plumb_record::diagnosis::Limit;

/// The third field of `net.ipv4.tcp_rmem` ("min default max"), the most
/// receive-buffer autotuning grows to.
fn rmem_max(sysctls: &BTreeMap<String, String>) -> Option<u64> {
    mem_max(sysctls, "net.ipv4.tcp_rmem")
}

/// The maximum (third field) of a `tcp_rmem`/`tcp_wmem` triple, if it parses.
pub(crate) fn mem_max(sysctls: &BTreeMap<String, String>, key: &str) -> Option<u64> {
    sysctls.get(key)?.split_whitespace().nth(2)?.parse().ok()
}

/// Window / RTT, and TCP's rwnd_limited time: seen when the counters show
/// the window at all or its prediction is within a factor of two.
pub(crate) fn seen(cx: &Context) -> Option<Seen> {
    let ev = cx.ev;
    let (w, r) = ev.window().zip(cx.rtt)?;
    let measured = cx.measured;
    let rwnd = cx.rwnd;
    let predicted = w as f64 * 8.0 / r;
    let near = (0.5..=2.0).contains(&(measured / predicted.max(1.0)));
    if !(rwnd.is_some_and(|f| f >= 0.05) || near) {
        return None;
    }
    let what = if ev.window_is_clamp() {
        "most the receiver can advertise (its window clamp)"
    } else {
        "receiver's largest advertised window"
    };
    let mut e = vec![line(what, w as f64, "B")];
    if let Some(f) = rwnd {
        e.push(line(
            "time limited by the receive window (TCP_INFO rwnd_limited)",
            f * 100.0,
            "% of the test",
        ));
    }
    if let Some(b) = ev.rcvbuf_actual {
        e.push(line("receiver SO_RCVBUF granted", b as f64, "B"));
    }
    // The receiver's own ceiling for autotuning: with a plumb peer
    // it came across in the results, so it is the far host's when
    // the client sends.
    if let Some(m) = rmem_max(&ev.sysctl_receiver) {
        e.push(line("receiver's net.ipv4.tcp_rmem maximum", m as f64, "B"));
    }
    cx.rtt_lines(&mut e);
    let mut s = Seen::new(
        Limit::ReceiveWindow,
        "the receive window",
        format!(
            "{} per {} round trip allows {}{}",
            bytes(w),
            ms(r),
            mbps(predicted),
            rwnd.filter(|f| *f >= 0.05)
                .map_or(String::new(), |f| format!(
                    "; TCP counted {}% of the test limited by it",
                    pct(f)
                ))
        ),
    )
    .model(predicted, TOLERANCE)
    .counters(rwnd);
    cx.counters_missing(&mut s.missing);
    cx.rtt_missing(&mut s.missing);
    s.evidence = e;
    Some(s)
}

#[cfg(test)]
mod tests {
    use crate::payload::efficiency;
    use crate::testing::*;

    #[test]
    fn the_receivers_rmem_ceiling_is_evidence_for_the_receive_window() {
        let mut s = stream(17_520, 15_000, 5.0);
        s.rwnd_limited_us = Some(4_900_000);
        let mut e = ev(9.2e6, s);
        e.sysctl_receiver
            .insert("net.ipv4.tcp_rmem".into(), "4096 131072 6291456".into());
        // The sender's own value must not be the one shown.
        e.sysctl_sender
            .insert("net.ipv4.tcp_rmem".into(), "4096 131072 999".into());
        let d = diagnose(&e);
        assert_eq!(d.limit, Some(Limit::ReceiveWindow));
        let lines = &d.findings[0].evidence;
        let l = lines
            .iter()
            .find(|l| l.what == "receiver's net.ipv4.tcp_rmem maximum")
            .expect("the receiver's ceiling is cited");
        assert_eq!((l.value, l.unit.as_str()), (6_291_456.0, "B"));
        // A value that does not parse is left out, not guessed.
        e.sysctl_receiver
            .insert("net.ipv4.tcp_rmem".into(), "4096 lots".into());
        assert!(!diagnose(&e).findings[0]
            .evidence
            .iter()
            .any(|l| l.what.contains("tcp_rmem")));
    }

    #[test]
    fn backup_scenario_is_the_receive_window() {
        let mut s = stream(17_520, 15_000, 5.0);
        s.rwnd_limited_us = Some(4_900_000);
        s.bytes_sent = 5_800_000;
        let d = diagnose(&ev(9.2e6, s));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::ReceiveWindow));
        assert!((d.predicted_bps.unwrap_or(0.0) - 9_344_000.0).abs() < 1.0);
        assert_eq!(d.findings[0].level, Confidence::High);
        assert!(
            d.summary.starts_with(
                "Limited by the receive window: 17,520 B per 15 ms round trip allows 9.344 Mbit/s"
            ),
            "{}",
            d.summary
        );
        assert!(
            d.summary.contains("the link could carry 941.5 Mbit/s"),
            "{}",
            d.summary
        );
        let linux = d.fixes.iter().find(|f| f.os == "linux").expect("linux fix");
        assert!(linux
            .commands
            .iter()
            .any(|c| c.starts_with("sysctl -w net.core.rmem_max=")));
        // No receiver sysctls in this evidence: no line claims one.
        assert!(!d.findings[0]
            .evidence
            .iter()
            .any(|l| l.what.contains("tcp_rmem")));
        assert!(d
            .fixes
            .iter()
            .any(|f| f.os == "windows-legacy"
                && f.commands.iter().any(|c| c.contains("Tcp1323Opts"))));
        let par = d
            .fixes
            .iter()
            .find(|f| f.os == "application")
            .expect("streams alternative");
        // One set of figures, as plumb calc counts them: the streams of
        // 9.344 Mbit/s each that reach the line rate, the same number the
        // figures give.
        let goodput = 1e9 * efficiency(1448, true);
        let n = (1e9_f64 / 9_344_000.0).ceil() as u64;
        assert_eq!(n, 108);
        assert_eq!(d.figures.streams_needed, Some(n));
        assert!(
            par.commands[0].starts_with(&format!("{n} parallel streams (plumb -c HOST -P {n};")),
            "{:?}",
            par.commands
        );
        assert!(d
            .fixes
            .iter()
            .all(|f| f.expected_bps.is_none_or(|e| (e - goodput).abs() < 1.0)));
    }

    #[test]
    fn contradictory_counters_lower_confidence() {
        // TCP says rwnd-limited 60 % of the test, but the largest advertised
        // window would allow far more than was measured: still the window,
        // named by its counters, with less confidence than when it agrees.
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.rwnd_limited_us = Some(3_000_000);
        let d = diagnose(&ev(100e6, s.clone()));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::ReceiveWindow));
        assert_eq!(
            d.predicted_bps, None,
            "its prediction does not explain the rate"
        );
        s.max_snd_wnd = Some(190_000);
        let agreeing = diagnose(&ev(100e6, s));
        assert!(agreeing.findings[0].confidence > d.findings[0].confidence + 0.3);
        // 31 % with a contradicting window is not enough to name it.
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.rwnd_limited_us = Some(1_550_000);
        let d = diagnose(&ev(100e6, s));
        assert_eq!(status(&d, Limit::ReceiveWindow), Some(Status::NotBinding));
    }

    #[test]
    fn missing_evidence_lowers_confidence() {
        let full = diagnose(&ev(9.2e6, stream(17_520, 15_000, 5.0)));
        let mut s = stream(17_520, 15_000, 5.0);
        s.busy_us = None;
        s.rwnd_limited_us = None;
        s.sndbuf_limited_us = None;
        let thin = diagnose(&ev(9.2e6, s));
        assert_eq!(thin.limit, Some(Limit::ReceiveWindow));
        assert!(thin.findings[0].confidence < full.findings[0].confidence);
        assert!(!thin.findings[0].missing.is_empty());
    }
}
