//! The loss rule: retransmissions (or a given loss probability) against
//! Mathis, for loss-based congestion control. BBR does not back off on
//! random loss, so under it the loss is shown with no prediction.

use plumb_model::tcp;
use plumb_model::units::sig;
use plumb_model::{Bytes, LossRate, Rtt};

use super::context::Context;
use crate::finding::line;
use crate::human::{mbps, ms};
use crate::seen::Seen;
use crate::tolerance::explains;
use plumb_record::diagnosis::{EvidenceLine, Limit};

/// The tolerance of the Mathis loss bound. Its constant depends on the ACK
/// strategy and loss pattern (√(3/2) = 1.22, used here, for periodic loss
/// without delayed ACKs; √(3/4) = 0.87 with them; random loss moves it
/// again), retransmissions only approximate losses, and
/// CUBIC gains on Reno as the BDP grows: a factor of 1.5 either way. The
/// recorded Reno and CUBIC runs at 0.8–0.9 % retransmitted measured 1.02 and
/// 1.07 of it.
pub const MATHIS_TOLERANCE: f64 = 0.5;

/// Loss of at least 0.1 %, or any loss Mathis explains under Reno/CUBIC.
pub(crate) fn seen(cx: &Context) -> Option<Seen> {
    let ev = cx.ev;
    let (p, r) = cx.loss.filter(|p| *p > 0.0).zip(cx.rtt)?;
    let (full, n) = (cx.full, cx.n);
    let m = cx.mss.unwrap_or(full);
    let bbr = ev.congestion.as_deref() == Some("bbr");
    let mathis = LossRate::from_probability(p.min(1.0))
        .zip(Rtt::from_secs(r))
        .map(|(l, t)| tcp::mathis_rate(Bytes(m), t, l).bps() * n);
    let fits = mathis.is_some_and(|x| explains(cx.measured, x, MATHIS_TOLERANCE));
    if !(p >= 1e-3 || (fits && !bbr)) {
        return None;
    }
    let given = ev.loss_probability.is_some();
    let what = if given {
        format!("{}% loss", sig(p * 100.0, 2))
    } else {
        format!("{}% of segments retransmitted", sig(p * 100.0, 2))
    };
    let mut s = if bbr {
        Seen::new(
            Limit::Loss,
            "packet loss",
            format!("{what}; BBR does not back off on random loss, and plumb has no loss model for it, so it predicts no rate"),
        )
    } else {
        let x = mathis.unwrap_or(0.0);
        // Said as a cap only where the measurement does not beat it.
        let verb = if crate::weigh::beaten(Some(x), Some(MATHIS_TOLERANCE), cx.measured) {
            "would cap"
        } else {
            "caps"
        };
        Seen::new(
            Limit::Loss,
            "packet loss",
            format!(
                "{what} at {} RTT {verb} {} at {} (Mathis)",
                ms(r),
                if n > 1.0 {
                    format!("{n} Reno/CUBIC streams")
                } else {
                    "a Reno/CUBIC stream".into()
                },
                mbps(x)
            ),
        )
        .model(x, MATHIS_TOLERANCE)
    };
    if ev.congestion.is_none() {
        s.missing
            .push("the sender's congestion control (Mathis models Reno/CUBIC)".into());
    }
    if cx.mss.is_none() {
        s.missing.push(format!("the MSS ({full} B assumed)"));
    }
    cx.rtt_missing(&mut s.missing);
    s.evidence = evidence(cx, p, given);
    Some(s)
}

/// The loss (given, or the retransmissions behind it), the RTT and the
/// congestion control.
fn evidence(cx: &Context, p: f64, given: bool) -> Vec<EvidenceLine> {
    let ev = cx.ev;
    let retr: u64 = ev.streams.iter().filter_map(|s| s.retransmits).sum();
    let mut e = if given {
        vec![line("loss (given)", p * 100.0, "%")]
    } else {
        vec![
            line("retransmitted segments", retr as f64, "segments"),
            line("retransmission rate", p * 100.0, "%"),
        ]
    };
    cx.rtt_lines(&mut e);
    if let Some(cc) = &ev.congestion {
        e.push(line(&format!("congestion control {cc}"), 0.0, ""));
    }
    e
}

#[cfg(test)]
mod tests {
    use crate::testing::*;

    #[test]
    fn loss_matches_mathis() {
        let mut s = stream(8 << 20, 20_000, 5.0);
        // 1 % of segments retransmitted.
        s.bytes_sent = 1448 * 100_000;
        s.retransmits = Some(1000);
        let mathis = 1448.0 * 8.0 / 0.020 * 1.2247 / 0.1;
        let d = diagnose(&ev(mathis * 0.9, s.clone()));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Loss));
        assert!((d.predicted_bps.unwrap_or(0.0) / mathis - 1.0).abs() < 0.01);
        // Three times Mathis: the loss does not explain it.
        let d = diagnose(&ev(mathis * 3.0, s));
        consistent(&d);
        assert_eq!(status(&d, Limit::Loss), Some(Status::NotBinding));
    }

    /// Loss under BBR: no Mathis, so loss never binds by prediction; the
    /// link, if full, is the answer.
    #[test]
    fn loss_under_bbr() {
        let mut s = stream(8 << 20, 20_000, 5.0);
        s.bytes_sent = 1448 * 100_000;
        s.retransmits = Some(2000);
        let mut e = ev(300e6, s);
        e.congestion = Some("bbr".into());
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, None, "{}", d.summary);
        assert_eq!(status(&d, Limit::Loss), Some(Status::NotBinding));
        e.measured_bps = 900e6;
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Link), "{}", d.summary);
        assert_eq!(status(&d, Limit::Loss), Some(Status::NotBinding));
    }

    /// BBR under 1 % loss carried 532 Mbit/s of 941.5: Mathis does not
    /// apply, the autotuned send buffer's 31 % sndbuf_limited comes with a
    /// size that allows 2.4 times the rate. Nothing explains it.
    #[test]
    fn loss_under_bbr_recorded() {
        let d = diagnose(&recorded("bbr-loss", 1e9));
        consistent(&d);
        assert_eq!(d.limit, None, "{}", d.summary);
        assert_eq!(d.limit_name(), "unexplained");
        let loss = d
            .findings
            .iter()
            .find(|f| f.limit == Limit::Loss)
            .expect("loss seen");
        assert_eq!(loss.status, Status::NotBinding);
        assert_eq!(loss.predicted_bps, None, "no loss model for BBR");
        assert!(d.summary.contains("531.9 Mbit/s measured"), "{}", d.summary);
        // The same loss under Reno: Mathis explains it.
        let d = diagnose(&recorded("reno-loss", 1e9));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Loss), "{}", d.summary);
    }
}
