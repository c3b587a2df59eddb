//! The path-MTU rules: segments far below what Ethernet carries (the link
//! full of small segments is what it predicts), and segments the sender
//! shrank below what its path MTU allows (no rate model: a sign of a
//! black hole, reported beside the answer).

use plumb_model::units::sig;

use super::context::Context;
use crate::evidence::LinkSource;
use crate::finding::line;
use crate::human::mbps;
use crate::payload::efficiency;
use crate::seen::Seen;
use crate::tolerance::TOLERANCE;
use plumb_record::diagnosis::Limit;

/// An MSS under 1200 B on a link whose rate is stated or read from the
/// interface.
pub(crate) fn seen(cx: &Context) -> Option<Seen> {
    let (m, l) = cx.mss.zip(cx.stated_link())?;
    if m >= 1200 {
        return None;
    }
    let (ts, full) = (cx.ts, cx.full);
    let predicted = l.bps * efficiency(m, ts);
    let mut s = Seen::new(
        Limit::PathMtu,
        "a small MSS",
        format!(
            "{m}-byte segments put {}% of the wire into payload, against {}% at {full} B; the link carries at most {} this way",
            sig(efficiency(m, ts) * 100.0, 3),
            sig(efficiency(full, ts) * 100.0, 3),
            mbps(predicted)
        ),
    )
    .model(predicted, TOLERANCE);
    if matches!(l.source, LinkSource::Interface(_)) {
        s.missing
            .push("the link rate (the interface's speed was used)".into());
    }
    s.evidence = vec![line("segment payload (TCP_INFO snd_mss)", m as f64, "B")];
    Some(s)
}

/// Payload bytes a segment can have under `pmtu` at the most headers a
/// TCP segment carries here: IPv6 (40 B) + TCP (20 B) + timestamps (12 B).
/// A sender below this shrank its segments for a reason of its own.
pub(crate) const MOST_HEADERS: u64 = 72;

/// Segments of at least 1200 B (smaller ones are [`seen`]'s) yet below what
/// the path MTU TCP holds allows. The MTU was not lowered by ICMP (that
/// lowers the path MTU itself), so the sender shrank its segments on its
/// own: Linux's MTU probing does so when full-size segments vanish with no
/// ICMP "fragmentation needed" (a black hole), and finds the size that
/// passes. A peer that announced a smaller MSS looks the same here.
pub(crate) fn lowered(cx: &Context) -> Option<Seen> {
    let m = cx.mss.filter(|m| *m >= 1200)?;
    let pmtu = cx.ev.streams.iter().find_map(|s| s.pmtu)?;
    if m + MOST_HEADERS >= pmtu {
        return None;
    }
    let allowed = pmtu.saturating_sub(if cx.ts { 52 } else { 40 });
    let mut s = Seen::new(
        Limit::PathMtu,
        "segments shrunk below the path MTU",
        format!(
            "{m}-byte segments, though the {pmtu}-byte path MTU TCP holds (no ICMP lowered it) carries {allowed}-byte ones over IPv4: the sender shrank them itself, as Linux's MTU probing (net.ipv4.tcp_mtu_probing) does after full-size segments vanish where ICMP is filtered (a path-MTU black hole; the stall it costs has no rate model), unless the peer announced a smaller MSS"
        ),
    );
    s.evidence = vec![
        line("segment payload (TCP_INFO snd_mss)", m as f64, "B"),
        line("path MTU (TCP_INFO pmtu)", pmtu as f64, "B"),
    ];
    Some(s)
}

#[cfg(test)]
mod tests {
    use crate::testing::*;

    #[test]
    fn small_mss_is_path_mtu() {
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.mss = Some(524);
        let d = diagnose(&ev(840e6, s.clone()));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::PathMtu), "{:?}", d.findings);
        // The same MSS with 9 Mbit/s measured: it does not explain it.
        let d = diagnose(&ev(9e6, s));
        consistent(&d);
        assert_ne!(d.limit, Some(Limit::PathMtu), "{:?}", d.findings);
        assert_eq!(status(&d, Limit::PathMtu), Some(Status::NotBinding));
    }

    #[test]
    fn segments_shrunk_under_a_full_path_mtu_are_seen_not_binding() {
        // The lab's black hole over 1400 B: probing settled at 1347 B
        // while the path MTU stayed 1500.
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.mss = Some(1347);
        let d = diagnose(&ev(54e6, s.clone()));
        consistent(&d);
        assert_eq!(status(&d, Limit::PathMtu), Some(Status::NotBinding));
        let f = d.findings.iter().find(|f| f.limit == Limit::PathMtu);
        assert!(
            f.is_some_and(|f| f.sentence.contains("black hole")),
            "{f:?}"
        );
        // Full-size segments for IPv4 and IPv6, with and without
        // timestamps, say nothing.
        for full in [1448, 1460, 1428, 1440] {
            s.mss = Some(full);
            let d = diagnose(&ev(54e6, s.clone()));
            assert_eq!(status(&d, Limit::PathMtu), None, "{full}");
        }
        // An ICMP-lowered path MTU carries the smaller segments itself.
        s.mss = Some(1348);
        s.pmtu = Some(1400);
        assert_eq!(status(&diagnose(&ev(54e6, s)), Limit::PathMtu), None);
    }
}
