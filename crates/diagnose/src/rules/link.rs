//! The link rule: the link's goodput. More than it can carry means the
//! stated link rate is wrong, not that the link limits; a rate known only
//! from the best interval predicts nothing (it is the measurement itself).

use plumb_model::units::sig;

use super::context::Context;
use crate::evidence::LinkSource;
use crate::finding::line;
use crate::human::mbps;
use crate::path::PathFull;
use crate::seen::Seen;
use crate::tolerance::{explains, TOLERANCE};
use plumb_record::diagnosis::{EvidenceKind, Limit};

/// The link, when its goodput explains the measured rate. A measurement
/// the stated link cannot carry adds a line to `unknown` instead.
pub(crate) fn seen(cx: &Context, unknown: &mut Vec<String>) -> Option<Seen> {
    let ev = cx.ev;
    let measured = cx.measured;
    let (g, l) = cx.link_goodput().zip(cx.stated_link())?;
    if measured > 1.1 * g {
        unknown.push(format!(
            "the link rate: {} measured is more than a {} link carries, so the link is faster than stated",
            mbps(measured),
            mbps(l.bps)
        ));
        return None;
    }
    if !explains(measured, g, TOLERANCE) {
        return None;
    }
    if let Some(p) = cx
        .path
        .as_ref()
        .filter(|_| l.source == LinkSource::Inferred)
    {
        return Some(inferred(cx, p, g));
    }
    let mut s = Seen::new(
        Limit::Link,
        "the link itself",
        format!(
            "{} is {}% of the {} a {} link carries as {} payload. Nothing to fix",
            mbps(measured),
            sig(measured / g * 100.0, 3),
            mbps(g),
            mbps(l.bps),
            if ev.tcp { "TCP" } else { "UDP" }
        ),
    )
    .model(g, TOLERANCE);
    if matches!(l.source, LinkSource::Interface(_)) {
        s.missing
            .push("the link rate (the interface's speed was used)".into());
    }
    if cx.mss.is_none() && ev.tcp {
        s.missing.push(format!("the MSS ({} B assumed)", cx.full));
    }
    s.evidence = vec![
        line("link rate", l.bps / 1e6, "Mbit/s").stating(EvidenceKind::LinkRate),
        line(
            if ev.tcp {
                "link TCP goodput"
            } else {
                "link UDP goodput"
            },
            g / 1e6,
            "Mbit/s",
        ),
    ];
    Some(s)
}

/// The path's bottleneck as `path` inferred it: the rate the path carries,
/// the common link it matches when it does, and how it was inferred; its
/// confidence is the inference's.
fn inferred(cx: &Context, p: &PathFull, g: f64) -> Seen {
    let which = p.common_bps.map_or(String::new(), |c| {
        format!(" — what a {} link carries", mbps(c))
    });
    let mut s = Seen::new(
        Limit::Link,
        "the path",
        format!(
            "the path is full: about {}{which}; {}. Nothing to fix on this host; --link states the rate",
            mbps(cx.measured),
            p.how()
        ),
    )
    .model(g, TOLERANCE);
    s.ceiling = Some(p.confidence);
    s.evidence = vec![
        line(
            "link rate (inferred from the path)",
            p.link_bps / 1e6,
            "Mbit/s",
        )
        .stating(EvidenceKind::LinkRate),
        line("link TCP goodput", g / 1e6, "Mbit/s"),
        line(
            "standing queue (smoothed RTT above the minimum)",
            p.queue_s * 1e3,
            "ms",
        ),
    ];
    if let Some(c) = p.cwnd_share {
        s.evidence.push(line(
            "time limited only by the congestion window",
            c * 100.0,
            "% of the test",
        ));
    }
    if let Some(b) = p.bbr_bw_bps {
        s.evidence.push(line(
            "BBR's bottleneck bandwidth estimate",
            b / 1e6,
            "Mbit/s",
        ));
    }
    cx.rtt_lines(&mut s.evidence);
    s
}

#[cfg(test)]
mod tests {
    use crate::testing::*;

    #[test]
    fn full_link_needs_no_fix() {
        let d = diagnose(&ev(935e6, stream(8 << 20, 15_000, 5.0)));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Link));
        assert!(d.summary.contains("Nothing to fix"), "{}", d.summary);
    }

    /// Without a stated link the best interval stands in for it, but it is
    /// the measurement itself: it predicts nothing and names no full link.
    #[test]
    fn a_link_from_the_best_interval_names_nothing() {
        let mut e = ev(935e6, stream(8 << 20, 15_000, 5.0));
        e.link = Some(LinkRate {
            bps: 950e6,
            source: LinkSource::BestInterval,
        });
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, None, "{}", d.summary);
        assert!(d.summary.contains("give --link"), "{}", d.summary);
    }

    #[test]
    fn a_link_slower_than_measured_is_not_believed() {
        let d = diagnose(&ev(3e9, stream(8 << 20, 100, 5.0)));
        consistent(&d);
        assert_ne!(d.limit, Some(Limit::Link));
        assert!(
            d.unknown.iter().any(|u| u.contains("faster than stated")),
            "{:?}",
            d.unknown
        );
    }

    #[test]
    fn udp_over_a_200_mbit_lab_link_is_the_link_with_its_loss_shown() {
        // plumb lab --rate 200mbit --rtt 15ms -- -u -b 1G -t 3
        let e = fixture("lab-udp-over-link.json", Some(200e6));
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Link), "{}", d.summary);
        // UDP goodput of 1448-byte datagrams: 1448 / (1448 + 8 + 20 + 38).
        let g = 200e6 * 1448.0 / 1514.0;
        assert!((d.link_bps.unwrap_or(0.0) - g).abs() < 1.0);
        assert!(d.summary.contains("as UDP payload"), "{}", d.summary);
        assert_eq!(status(&d, Limit::Loss), Some(Status::NotBinding));
        // The receiver's socket dropped nothing: its CPU is not the limit.
        let cpu = d.findings.iter().filter(|f| f.limit == Limit::Cpu);
        assert!(cpu.clone().all(|f| f.status == Status::NotBinding));
        let offer = d
            .fixes
            .iter()
            .find(|f| f.os == "application")
            .expect("offer less");
        assert_eq!(offer.commands, vec!["plumb -c HOST -u -b 191M".to_string()]);
        no_tcp_claims(&d);
    }
}
