//! The path-MTU black hole named from a capture: the data's head segment
//! sent [`BLACK_HOLE_SENDS`] times or more at full size and never
//! acknowledged at that size, while something smaller passed (a smaller
//! segment acknowledged, the sender's smaller resend of the same bytes, or
//! at least the handshake), and no ICMP "too big" message quoting the
//! connection in the capture (with one, the ICMP MTU stands beside the
//! rules' own path-MTU finding instead). It heads the diagnosis: a sender
//! that waits seconds for segments that can never pass is limited by the
//! path's MTU whatever else the numbers show.
//!
//! Past the black hole (beside the receiver) none of that is seen: there
//! the answer rests on [`crate::farhole`]'s proof that the sender had sent
//! more than arrived after a silence, and says it is seen from there.

use plumb_diagnose::fixes::for_limit;
use plumb_diagnose::rules::human_count;
use plumb_record::diagnosis::{Diagnosis, Limit};
use plumb_record::diagnosis::{EvidenceLine, Finding};

use crate::blackhole::{LostRun, BLACK_HOLE_SENDS};
use crate::connection::Connection;
use crate::evidence::{data_direction, FlowEvidence};
use crate::farhole::{FarStall, Proof};
use crate::headline::put_first;

/// What passed while the full-size segments did not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Passed {
    /// The sender resent the lost bytes in segments of this size, and the
    /// ACK moved past them.
    Fallback(u32),
    /// A smaller segment of this size was acknowledged.
    Acked(u32),
    /// Only the handshake: no data segment was acknowledged.
    Handshake,
}

/// The black hole in `c`'s data direction, if its segments show one: the
/// full-size run lost, and what passed instead.
fn found(c: &Connection) -> Option<(LostRun, Passed)> {
    let (data, _, _) = data_direction(c);
    let b = &data.black_hole;
    let lost = b.lost?;
    // Full size: the largest the sender put on the wire, and larger than
    // any segment that passed. An ICMP message says what happened itself.
    if c.icmp_too_big > 0
        || lost.sends < BLACK_HOLE_SENDS
        || lost.len < data.timing.largest_wire_segment
        || lost.len <= b.acked_max
    {
        return None;
    }
    let passed = match (b.fallback, b.acked_max) {
        (Some(f), _) => Passed::Fallback(f),
        (None, a) if a > 0 => Passed::Acked(a),
        _ if c.handshake.complete => Passed::Handshake,
        _ => return None,
    };
    Some((lost, passed))
}

/// The sender's own segments show a black hole in `c`.
pub fn black_hole_seen(c: &Connection) -> bool {
    found(c).is_some()
}

/// Makes a black hole in `c`'s data direction the answer of `dg`.
pub fn black_hole(c: &Connection, fe: &FlowEvidence, dg: &mut Diagnosis) {
    if let Some((lost, passed)) = found(c) {
        answer(finding(lost, passed, fe.summary.duration_s), fe, dg);
    }
}

/// Makes a black hole proved past it (beside the receiver) the answer of
/// `dg`, when the sender's own segments did not already.
pub fn far_black_hole(c: &Connection, fe: &FlowEvidence, dg: &mut Diagnosis) {
    if dg.limit == Some(Limit::PathMtu) || c.icmp_too_big > 0 || !c.handshake.complete {
        return;
    }
    let (data, _, _) = data_direction(c);
    let Some(s) = data.far_hole.found else { return };
    answer(far_finding(s, fe.summary.duration_s), fe, dg);
}

/// Puts `f` first with the path-MTU fixes.
fn answer(f: Finding, fe: &FlowEvidence, dg: &mut Diagnosis) {
    // One story: the sender that seemed to hold its data, and the resends
    // read as loss, are the black hole's own doing, not causes beside it.
    dg.findings.retain(|f| {
        !matches!(
            f.limit,
            Limit::PathMtu | Limit::Application | Limit::SendBuffer | Limit::Loss
        )
    });
    let fixes = for_limit(Limit::PathMtu, &fe.evidence, &dg.figures, &dg.findings);
    let Some(first) = fixes.first().cloned() else {
        return;
    };
    put_first(dg, f, first);
    // Both systems' fixes, with no rate promised: the capture holds no
    // model of what the path carries once the segments fit.
    dg.fixes = fixes
        .into_iter()
        .map(|mut x| {
            x.expected_bps = None;
            x
        })
        .collect();
}

/// The cause's name.
const BLACK_HOLE: &str = "a path-MTU black hole";
/// Why no ICMP told the sender.
const FILTERED: &str = "ICMP 'fragmentation needed' is probably filtered";
/// What points at the drop.
const MISSING: &str = "the path's MTU: tracepath from the sender finds where it drops";

/// The share of the capture's data time a stall of `stalled_s` took.
fn share(stalled_s: f64, duration_s: f64) -> f64 {
    if duration_s > 0.0 {
        (stalled_s / duration_s).min(1.0)
    } else {
        1.0
    }
}

/// The evidence line for the ICMP "too big" messages the capture holds:
/// none, or the rule would not speak. With a unit, or the text would show
/// no figure (an empty unit is a label).
fn no_icmp() -> EvidenceLine {
    EvidenceLine::new("ICMP too-big messages in the capture", 0.0, "messages")
}

/// The finding, in what the capture showed.
fn finding(lost: LostRun, passed: Passed, duration_s: f64) -> Finding {
    let stalled_s = f64::from(lost.stalled_ms) / 1e3;
    let (what_passed, size) = match passed {
        Passed::Fallback(p) => (
            format!(", then the sender resent them as {p}-byte ones, which passed (as Linux does with net.ipv4.tcp_mtu_probing=1)"),
            Some(p),
        ),
        Passed::Acked(p) => (format!(" while {p}-byte ones passed"), Some(p)),
        Passed::Handshake => (" while the handshake passed".to_string(), None),
    };
    let mut evidence = vec![
        EvidenceLine::new(
            "full-size segment sent without an ACK",
            f64::from(lost.sends),
            "times",
        ),
        EvidenceLine::new("its payload", f64::from(lost.len), "B"),
        EvidenceLine::new("first copy to the last", stalled_s, "s"),
    ];
    if let Some(p) = size {
        evidence.push(EvidenceLine::new(
            "largest segment that passed",
            f64::from(p),
            "B",
        ));
    }
    evidence.push(no_icmp());
    let share = share(stalled_s, duration_s);
    let confidence = if size.is_some() { 0.8 } else { 0.6 };
    let sentence = format!(
        "{}-byte segments were sent {} times and never acknowledged{what_passed}: {BLACK_HOLE} — {FILTERED}",
        lost.len, lost.sends
    );
    Finding {
        missing: vec![MISSING.into()],
        evidence,
        ..Finding::unmodelled(Limit::PathMtu, BLACK_HOLE, &sentence, share, confidence)
    }
}

/// The finding from past the black hole, in what arrived there. Less sure
/// than the sender's side, which sees the full-size copies themselves.
fn far_finding(s: FarStall, duration_s: f64) -> Finding {
    let silence_s = f64::from(s.silence_ms) / 1e3;
    let stopped = format!(
        "the sender's segments stopped arriving after {} B for {silence_s:.1} s",
        human_count(u64::from(s.arrived))
    );
    let sentence = match s.fallback {
        Some(f) => format!(
            "{stopped}, then came back as {f}-byte ones where {} were agreed (as Linux's tcp_mtu_probing=1 does after full-size segments vanish), with {} B it had sent beyond them missing — {FILTERED}",
            s.full,
            human_count(u64::from(s.unseen))
        ),
        None => format!(
            "{stopped}; its later {} carries sequence {}: {} B it sent never arrived here, while its small segments did — {FILTERED}",
            match s.proof {
                Proof::Data => "segment",
                Proof::Ack => "ACK",
                Proof::Fin => "FIN",
                Proof::Rst => "RST",
            },
            human_count(u64::from(s.proof_seq)),
            human_count(u64::from(s.unseen))
        ),
    };
    let mut evidence = vec![
        EvidenceLine::new("silence before the sender's next segment", silence_s, "s"),
        EvidenceLine::new("data that arrived before it", f64::from(s.arrived), "B"),
        EvidenceLine::new("agreed full segment size", f64::from(s.full), "B"),
    ];
    if let Some(f) = s.fallback {
        evidence.push(EvidenceLine::new(
            "first data segment after the silence",
            f64::from(f),
            "B",
        ));
    }
    evidence.push(EvidenceLine::new(
        "bytes sent that never arrived",
        f64::from(s.unseen),
        "B",
    ));
    evidence.push(no_icmp());
    Finding {
        missing: vec![MISSING.into()],
        evidence,
        ..Finding::unmodelled(
            Limit::PathMtu,
            &format!("{BLACK_HOLE} before this capture point"),
            &sentence,
            share(silence_s, duration_s),
            0.6,
        )
    }
}
