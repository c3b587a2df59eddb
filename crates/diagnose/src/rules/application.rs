//! The application rule: a rate cap (`-b`), or a sender that had nothing
//! to send for part of the test.

use super::context::Context;
use crate::finding::line;
use crate::human::{mbps, pct};
use crate::seen::Seen;
use crate::tolerance::TOLERANCE;
use plumb_record::diagnosis::{EvidenceKind, Limit};

/// A rate cap predicts itself; without one, the time the sender was not
/// busy shows the application setting the pace (no rate model).
pub(crate) fn seen(cx: &Context) -> Option<Seen> {
    let ev = cx.ev;
    let measured = cx.measured;
    let idle = cx.busy.map(|b| 1.0 - b);
    if let Some(target) = ev.target_bps {
        let e = vec![
            line(
                "application rate cap (-b × streams)",
                target / 1e6,
                "Mbit/s",
            ),
            line("measured", measured / 1e6, "Mbit/s").stating(EvidenceKind::Goodput),
        ];
        let sentence = match ev.udp.and_then(|u| u.sent_bps) {
            Some(sent) => format!(
                "the sender was asked for {}, sent {} and the receiver got {}",
                mbps(target),
                mbps(sent),
                mbps(measured)
            ),
            None => format!(
                "the sender was asked for {} and sent {}",
                mbps(target),
                mbps(measured)
            ),
        };
        let mut s = Seen::new(Limit::Application, "the application", sentence)
            .model(target, TOLERANCE)
            .counters(idle);
        s.evidence = e;
        Some(s)
    } else if let Some(i) = idle.filter(|i| *i >= 0.05) {
        let mut s = Seen::new(
            Limit::Application,
            "the application",
            format!(
                "the sender had nothing to send {}% of the test; the application, not TCP, set the pace (no rate model: plumb predicts no rate for it)",
                pct(i)
            ),
        )
        .counters(idle);
        s.evidence = vec![line(
            "sender busy (TCP_INFO busy_time)",
            (1.0 - i) * 100.0,
            "% of the test",
        )];
        Some(s)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::*;

    #[test]
    fn rate_cap_is_the_application() {
        let mut e = ev(49.8e6, stream(8 << 20, 15_000, 5.0));
        e.target_bps = Some(50e6);
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Application));
        assert_eq!(d.predicted_bps, Some(50e6));
        // A window that allows 60 Mbit/s competes: the cap is closer.
        let mut e = ev(49.8e6, stream(112_500, 15_000, 5.0));
        e.target_bps = Some(50e6);
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Application), "{:?}", d.findings);
        assert_eq!(status(&d, Limit::ReceiveWindow), Some(Status::Binding));
        // The window's 9.3 Mbit/s against a 50 Mbit/s cap: the window.
        let mut e = ev(9.2e6, stream(17_520, 15_000, 5.0));
        e.target_bps = Some(50e6);
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::ReceiveWindow));
        assert_eq!(status(&d, Limit::Application), Some(Status::NotBinding));
    }

    #[test]
    fn idle_sender_is_the_application() {
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.busy_us = Some(1_000_000);
        let d = diagnose(&ev(100e6, s));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Application));
        assert_eq!(d.predicted_bps, None, "no rate model for an idle sender");
    }

    #[test]
    fn udp_cap_on_a_1_gbit_lab_link_is_the_application() {
        let e = fixture("lab-udp-cap.json", Some(1e9));
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Application), "{}", d.summary);
        assert!(
            d.summary.contains("asked for 100 Mbit/s, sent"),
            "{}",
            d.summary
        );
        no_tcp_claims(&d);
    }
}
