//! A sender stalled in retransmission timeouts by a path-MTU black hole, as
//! its own TCP state shows it. Where a router drops packets too big for the
//! next link and a firewall filters the ICMP "fragmentation needed" that
//! should say so, full-size segments vanish while small ones pass: the
//! sender resends its head segment at each timeout, its congestion window
//! down to one segment, and writes nothing more. Linux with
//! `net.ipv4.tcp_mtu_probing=1` gives up on the full size after a few
//! timeouts and goes on in smaller segments; without it the transfer never
//! moves again.
//!
//! Two pictures name it, each with the stall in the sender's intervals:
//! segments shrunk below what the path MTU TCP holds allows (the fallback),
//! or a first small write acknowledged and not one full-size segment after
//! it (no fallback). A stall whose full-size segments were acknowledged
//! before is an outage or heavy loss, not this. The time lost has no rate
//! model; past [`STALL_SHARE`] of the test it is the answer.

use plumb_model::units::sig;

use crate::evidence::{Evidence, StreamTcp};
use crate::finding::line;
use crate::fixes::for_limit;
use crate::headline::put_first;
use crate::rules::path_mtu::MOST_HEADERS;
use plumb_record::diagnosis::Diagnosis;
use plumb_record::diagnosis::{EvidenceLine, Finding, Limit};

/// The share of the test a stall must take to be the answer: beyond it the
/// time lost outweighs what any rate model of the rest explains.
pub const STALL_SHARE: f64 = 0.2;

/// Retransmissions a black hole has cost at least: the head segment sent
/// three times, each after a timeout.
const RESENDS: u64 = 3;

/// What the sender's state shows past the stall.
enum After {
    /// It went on in segments of this size, below what the path MTU allows.
    Shrunk { mss: u64, pmtu: u64 },
    /// Its first `acked` bytes were acknowledged, no full-size segment was.
    NeverAcked { mss: u64, acked: u64 },
}

/// Makes a black-hole stall the answer of `dg` when `ev` shows one.
pub(crate) fn black_hole(ev: &Evidence, dg: &mut Diagnosis) {
    if !ev.tcp || ev.duration_s <= 0.0 {
        return;
    }
    let Some((s, after)) = ev.streams.iter().find_map(|s| stalled(s, ev.duration_s)) else {
        return;
    };
    let f = finding(s, &after, ev.duration_s);
    // The rules' own note on shrunk segments is this finding's evidence now.
    dg.findings.retain(|g| g.limit != Limit::PathMtu);
    let mut fixes = for_limit(Limit::PathMtu, ev, &dg.figures, &dg.findings);
    // No model says what the path carries once the segments fit.
    for x in &mut fixes {
        x.expected_bps = None;
    }
    put_first(dg, f, fixes);
}

/// The stream's black-hole stall, if its state shows one.
fn stalled(s: &StreamTcp, duration_s: f64) -> Option<(&StreamTcp, After)> {
    let stall_s = s.stalled_us? as f64 / 1e6;
    let (mss, pmtu) = (s.mss?, s.pmtu?);
    if stall_s < STALL_SHARE * duration_s || resends(s)? < RESENDS {
        return None;
    }
    if mss + MOST_HEADERS < pmtu {
        return Some((s, After::Shrunk { mss, pmtu }));
    }
    let acked = s.payload_acked?;
    (acked > 0 && acked < mss).then_some((s, After::NeverAcked { mss, acked }))
}

/// The head segment's resends the evidence shows: the retransmissions
/// counted, or the timeouts in a row at the end where a sampled period
/// holds fewer of them (each timeout resent it once).
fn resends(s: &StreamTcp) -> Option<u64> {
    match (s.retransmits, s.timeouts) {
        (None, None) => None,
        (r, t) => Some(r.unwrap_or(0).max(t.unwrap_or(0))),
    }
}

/// The finding, in the sender's own figures.
fn finding(s: &StreamTcp, after: &After, duration_s: f64) -> Finding {
    let stall_s = s.stalled_us.unwrap_or(0) as f64 / 1e6;
    let stalled = format!(
        "the sender stalled in retransmission timeouts for {} s of the {} s measured (nothing acknowledged, a congestion window of one or two segments)",
        sig(stall_s, 2),
        sig(duration_s, 3)
    );
    let mut evidence = vec![line("time stalled in timeouts", stall_s, "s")];
    let (sentence, confidence) = match *after {
        After::Shrunk { mss, pmtu } => {
            evidence.push(line("segment payload (TCP_INFO snd_mss)", mss as f64, "B"));
            evidence.push(line("path MTU (TCP_INFO pmtu)", pmtu as f64, "B"));
            (
                format!(
                    "{stalled}, then went on in {mss}-byte segments though the {pmtu}-byte path MTU TCP holds allows larger ones: MTU probing (net.ipv4.tcp_mtu_probing) shrank them after full-size segments vanished — a path-MTU black hole; ICMP 'fragmentation needed' is probably filtered"
                ),
                0.8,
            )
        }
        After::NeverAcked { mss, acked } => {
            evidence.push(line("segment payload (TCP_INFO snd_mss)", mss as f64, "B"));
            evidence.push(line(
                "payload acknowledged (TCP_INFO bytes_acked, less the SYN)",
                acked as f64,
                "B",
            ));
            (
                format!(
                    "{stalled}: its {mss}-byte segments were resent and never acknowledged, while its first {acked} bytes were — a path-MTU black hole; ICMP 'fragmentation needed' is probably filtered (or the path failed just after the connection opened)"
                ),
                0.6,
            )
        }
    };
    evidence.extend(resent(s));
    Finding {
        missing: vec!["the path's MTU: tracepath from the sender finds where it drops".into()],
        evidence,
        ..Finding::unmodelled(
            Limit::PathMtu,
            "a path-MTU black hole",
            &sentence,
            (stall_s / duration_s).min(1.0),
            confidence,
        )
    }
}

/// The resend counts the evidence has.
fn resent(s: &StreamTcp) -> Vec<EvidenceLine> {
    let mut out = Vec::new();
    if let Some(n) = s.retransmits {
        out.push(line("retransmitted segments", n as f64, "segments"));
    }
    if let Some(n) = s.timeouts {
        out.push(line(
            "timeouts in a row (TCP_INFO retransmits)",
            n as f64,
            "timeouts",
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::testing::*;

    /// The lab's black hole over 1400 B with `tcp_mtu_probing=1`: 2 s of
    /// a 5.2 s test stalled, then 1347-byte segments under a 1500-byte
    /// path MTU.
    fn fell_back() -> StreamTcp {
        let mut s = stream(8 << 20, 15_000, 5.2);
        s.mss = Some(1347);
        s.pmtu = Some(1500);
        s.retransmits = Some(639);
        s.stalled_us = Some(2_000_000);
        s
    }

    #[test]
    fn a_stall_then_shrunk_segments_is_the_black_hole() {
        let d = diagnose(&ev(31e6, fell_back()));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::PathMtu), "{}", d.summary);
        assert!(
            d.summary
                .contains("stalled in retransmission timeouts for 2 s")
                && d.summary.contains("1347-byte segments"),
            "{}",
            d.summary
        );
        // One path-MTU finding: the rules' shrunk-segment note is in it.
        let n = d
            .findings
            .iter()
            .filter(|f| f.limit == Limit::PathMtu)
            .count();
        assert_eq!(n, 1, "{:?}", d.findings);
        assert!(d.fixes.iter().all(|f| f.expected_bps.is_none()));
        assert!(d.predicted_bps.is_none());
    }

    #[test]
    fn the_labs_black_hole_tests_name_it() {
        // plumb -c across `plumb lab --rate 100m --rtt 15ms --drop-over
        // 1400`, with tcp_mtu_probing=1 (it completed) and =0 (interrupted
        // while its results were black-holed too).
        for (file, words) in [
            ("lab-black-hole-probing.json", "1347-byte segments"),
            ("lab-black-hole-stall.json", "first 37 bytes were"),
        ] {
            let d = diagnose(&fixture(file, Some(100e6)));
            consistent(&d);
            assert_eq!(d.limit, Some(Limit::PathMtu), "{file}: {}", d.summary);
            assert!(d.summary.contains(words), "{file}: {}", d.summary);
        }
    }

    #[test]
    fn a_short_stall_or_full_size_segments_are_not_it() {
        // Under a fifth of the test: a finding beside the answer only.
        let mut s = fell_back();
        s.stalled_us = Some(900_000);
        let d = diagnose(&ev(31e6, s));
        assert_ne!(d.limit, Some(Limit::PathMtu), "{}", d.summary);
        // Full-size segments, acknowledged well past the first segment: a
        // stall, but no sign of the MTU (an outage, heavy loss).
        let mut s = fell_back();
        s.mss = Some(1448);
        s.payload_acked = Some(5_000_000);
        let d = diagnose(&ev(31e6, s));
        assert_ne!(d.limit, Some(Limit::PathMtu), "{}", d.summary);
        // No stall recorded (a stock iperf3 document): nothing.
        let mut s = fell_back();
        s.stalled_us = None;
        assert_ne!(diagnose(&ev(31e6, s)).limit, Some(Limit::PathMtu));
    }

    #[test]
    fn a_stall_with_only_the_first_small_write_acknowledged_is_the_black_hole() {
        // tcp_mtu_probing=0: the 37-byte cookie passed, nothing after it.
        let mut s = fell_back();
        s.mss = Some(1448);
        s.payload_acked = Some(37);
        s.retransmits = Some(7);
        s.stalled_us = Some(4_000_000);
        let d = diagnose(&ev(0.0, s.clone()));
        assert_eq!(d.limit, Some(Limit::PathMtu), "{}", d.summary);
        assert!(d.summary.contains("first 37 bytes were"), "{}", d.summary);
        // Too few resends for a black hole.
        s.retransmits = Some(2);
        assert_ne!(diagnose(&ev(0.0, s)).limit, Some(Limit::PathMtu));
    }
}
