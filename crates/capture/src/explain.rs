//! A capture's connections explained: each one that carried data, busiest
//! first, given its class ([`crate::class`]); a bulk one weighed by the
//! diagnosis rules over its [`evidence`], with what
//! only a capture shows added the way `plumb-live` adds what only a live
//! socket shows: numbers beside the finding they bear on, a zero window
//! held long enough named as the receiving application, and a sender that
//! held its own flight said to be the application or its send buffer,
//! which one capture point cannot tell apart. With a guesser, each end's
//! operating system guessed from its SYN is added, and a confident guess
//! puts its system's fix first ([`crate::os`]). A path-MTU black hole,
//! when the segments show one (from either side of it), heads the answer
//! ([`crate::pmtu`]).

use plumb_diagnose::class::class_diagnosis;
use plumb_diagnose::evidence::LinkRate;
use plumb_diagnose::rules::{lead, BINDING_SHARE};
use plumb_diagnose::{diagnose, Evidence};
use plumb_record::capture::{Explanation, HostGuess};
use plumb_record::class::{Classification, FlowClass, Rule};
use plumb_record::diagnosis::{Diagnosis, Limit};
use plumb_record::diagnosis::{EvidenceLine, Finding, Fix};

use crate::analysis::Analysis;
use crate::class::class_of;
use crate::connection::Connection;
use crate::continuity;
use crate::evidence::{data_direction, evidence, through_stall, FlowEvidence};
use crate::filter::CaptureFilters;
use crate::headline::put_first;
use crate::notes::notes;
use crate::os::{caveat, fix_first, guesses, sentence, OsGuess};
use crate::pmtu;

/// One connection explained: its entry of the `-J` document, and the
/// evidence weighed (which the text's rendering of the verdict reads).
#[derive(Debug, Clone)]
pub struct Explained {
    /// The document's entry.
    pub entry: Explanation,
    /// The evidence weighed.
    pub evidence: Evidence,
}

/// An explained connection reads as its entry.
impl std::ops::Deref for Explained {
    type Target = Explanation;

    fn deref(&self) -> &Explanation {
        &self.entry
    }
}

/// Every connection of `a` that matches `f` and carried data, busiest
/// (most new data) first, explained with `link` when given.
pub fn explain_all(
    a: &Analysis,
    f: &CaptureFilters,
    link: Option<&LinkRate>,
    os: Option<OsGuess<'_>>,
) -> Vec<Explained> {
    let mut conns: Vec<&Connection> = a
        .connections
        .iter()
        .filter(|c| f.matches(c))
        .filter(|c| data_direction(c).0.timing.new_bytes > 0)
        .collect();
    conns.sort_by_key(|c| std::cmp::Reverse(data_direction(c).0.timing.new_bytes));
    conns
        .into_iter()
        .map(|c| explain(c, link.cloned(), os))
        .collect()
}

/// Explains one connection: its class first; a bulk flow's rate weighed
/// by the rules, any other's answer the class's own. A path-MTU black hole
/// heads either: a stall matters whatever the flow's class.
pub fn explain(c: &Connection, link: Option<LinkRate>, os: Option<OsGuess<'_>>) -> Explained {
    let link_given = link.is_some();
    let mut fe = evidence(c, link);
    let (cls, shape) = class_of(c, &fe);
    let stalled = cls.rule == Rule::StalledRun || pmtu::black_hole_seen(c);
    if stalled {
        through_stall(c, &mut fe);
    }
    let mut dg = if cls.class == FlowClass::Bulk {
        bulk(c, &mut fe, link_given)
    } else {
        class_diagnosis(&shape, &cls, fe.summary.measured_bps)
    };
    pmtu::black_hole(c, &fe, &mut dg);
    pmtu::far_black_hole(c, &fe, &mut dg);
    let (notes, os_guesses, fixes_first_for) = notes_and_guesses(c, &fe, &mut dg, os);
    let Classification { class, why, .. } = cls;
    Explained {
        entry: Explanation {
            class,
            class_why: why,
            shape,
            notes,
            os_guesses,
            fixes_first_for,
            flow: fe.summary,
            diagnosis: dg,
        },
        evidence: fe.evidence,
    }
}

/// A bulk flow's rate weighed by the rules, with what only a capture shows.
fn bulk(c: &Connection, fe: &mut FlowEvidence, link_given: bool) -> Diagnosis {
    let mut dg = diagnose(&fe.evidence);
    if continuity::bursts(fe) && dg.link_source.as_deref() == Some("inferred") {
        no_path(fe, &mut dg);
    }
    if continuity::worth_inferring(&dg, link_given) {
        infer_path(fe, &mut dg);
    }
    reword(&mut dg);
    capture_findings(c, fe, &mut dg);
    dg
}

/// What only a capture shows, put beside the findings it bears on: the
/// zero-window time, the ICMP MTU, a receiver that did not scale, the
/// sender-side causes one capture point cannot tell apart, and a flow too
/// short to have a rate.
fn capture_findings(c: &Connection, fe: &FlowEvidence, dg: &mut Diagnosis) {
    let (_, back, _) = data_direction(c);
    let s = &fe.summary;
    // Zero-window time and the ICMP MTU beside the findings they bear on.
    let mut zero = Vec::new();
    if back.zero_window.episodes > 0 {
        zero.push(EvidenceLine::new(
            "zero-window episodes (receiver)",
            back.zero_window.episodes as f64,
            "episodes",
        ));
        zero.push(EvidenceLine::new(
            "time at zero window",
            s.zero_window_s,
            "s",
        ));
    }
    add_lines(dg, Limit::ReceiveWindow, &zero);
    if let Some(m) = c.icmp_mtu {
        let l = [EvidenceLine::new(
            "smallest MTU in ICMP too-big messages",
            f64::from(m),
            "B",
        )];
        add_lines(dg, Limit::PathMtu, &l);
    }
    // The receiver that did not scale its window, in the window's sentence.
    let syns = [&c.client.syn, &c.server.syn];
    let unscaled = syns.iter().all(|s| s.is_some())
        && syns
            .iter()
            .any(|s| s.as_ref().is_some_and(|s| s.options.window_scale.is_none()));
    if unscaled {
        amend(
            dg,
            Limit::ReceiveWindow,
            "; the receiver advertises it without window scaling (the handshake did not agree on it), so it can never exceed 65,535 B",
        );
    }
    amend(
        dg,
        Limit::Application,
        "; from one capture point an application that did not write and a full send buffer look alike (plumb why --port PORT on the sending host tells them apart)",
    );
    let share = s.zero_window_s / s.duration_s.max(1e-9);
    if share >= BINDING_SHARE {
        receiving_application(dg, share, zero);
    }
    crate::opening::still_opening(c, fe, dg);
    continuity::sender_held(dg, fe);
    if s.duration_s <= 0.0 && dg.limit.is_none() {
        // One segment, or one burst within the capture's clock: a rate of
        // "0 bit/s" would be a figure the capture never showed.
        dg.summary = format!(
            "No rate to explain: all {} B of data passed the capture point at one instant (one segment, or a burst within the clock's resolution); a longer transfer is needed to name a limit.",
            plumb_diagnose::rules::human_count(s.data_bytes)
        );
    }
}

/// The capture's notes, each end's OS guess and, when one is confident,
/// its system's fixes put first.
fn notes_and_guesses(
    c: &Connection,
    fe: &FlowEvidence,
    dg: &mut Diagnosis,
    os: Option<OsGuess<'_>>,
) -> (Vec<String>, Vec<HostGuess>, Option<String>) {
    let mut notes = notes(c, fe, dg);
    let os_guesses = os.map_or_else(Vec::new, |g| guesses(c, fe.client_sends, g));
    notes.extend(os_guesses.iter().map(sentence));
    notes.extend(caveat(&os_guesses));
    let fixes_first_for = fix_first(dg, &os_guesses);
    if let Some(os) = &fixes_first_for {
        notes.push(format!(
            "the {os} fixes come first: the system guessed, with confidence, at the end they are made on"
        ));
    }
    (notes, os_guesses, fixes_first_for)
}

/// Weighs `fe` again without the path the diagnosis inferred from its RTT
/// above the minimum, when the data passed in bursts ([`continuity::bursts`]):
/// the inference reads the flight as the sender's congestion window, which
/// is withheld here, since no bottleneck was kept busy.
fn no_path(fe: &mut FlowEvidence, dg: &mut Diagnosis) {
    let mut e = fe.evidence.clone();
    e.streams.iter_mut().for_each(|s| s.max_cwnd = None);
    *dg = diagnose(&e);
    fe.evidence = e;
}

/// Weighs `fe` again with the path [`continuity::full_path`] infers from the
/// data's spacing; the path stands (in `fe` and `dg`) only when the answer
/// then is the link, as the diagnosis's own inference does.
fn infer_path(fe: &mut FlowEvidence, dg: &mut Diagnosis) {
    let Some(path) = continuity::full_path(fe) else {
        return;
    };
    let mut e = fe.evidence.clone();
    e.link = Some(path);
    e.unknown.retain(|u| !u.starts_with("the link rate"));
    e.unknown.push(
        "the link rate: inferred from the data's spacing in the capture, not stated (--link states it)"
            .into(),
    );
    let d = diagnose(&e);
    if d.limit != Some(Limit::Link) {
        return;
    }
    *dg = d;
    fe.evidence = e;
    amend(dg, Limit::Link, &continuity::full_path_clause(fe));
}

/// The engine's words for TCP_INFO's counters, and what a capture's
/// equivalents are: the same shares, measured on the wire.
const WORDS: [(&str, &str); 4] = [
    (
        "receiver's largest advertised window",
        "receiver's advertised window (mean while data was in flight)",
    ),
    (
        "time limited by the receive window (TCP_INFO rwnd_limited)",
        "time the flight stood at the receive window (capture)",
    ),
    (
        "sender busy (TCP_INFO busy_time)",
        "sender with data in flight (capture)",
    ),
    ("TCP counted", "the capture shows"),
];

/// Says the counters' shares are the capture's, not TCP_INFO's.
fn reword(dg: &mut Diagnosis) {
    let fix = |t: &mut String| {
        for (from, to) in WORDS {
            if t.contains(from) {
                *t = t.replace(from, to);
            }
        }
    };
    fix(&mut dg.summary);
    for f in &mut dg.findings {
        fix(&mut f.sentence);
        f.evidence.iter_mut().for_each(|e| fix(&mut e.what));
    }
    dg.evidence.iter_mut().for_each(|e| fix(&mut e.what));
}

/// Adds `lines` to the finding of `limit`, and to the answer's evidence
/// when it is the answer.
fn add_lines(dg: &mut Diagnosis, limit: Limit, lines: &[EvidenceLine]) {
    if lines.is_empty() {
        return;
    }
    for f in dg.findings.iter_mut().filter(|f| f.limit == limit) {
        f.evidence.extend(lines.iter().cloned());
    }
    if dg.limit == Some(limit) {
        let at = dg.findings[0].evidence.len().min(dg.evidence.len());
        let at = at.saturating_sub(lines.len());
        dg.evidence.splice(at..at, lines.iter().cloned());
    }
}

/// Appends `clause` to the sentence of `limit`'s finding, and rewords the
/// lead sentence when it is the answer.
fn amend(dg: &mut Diagnosis, limit: Limit, clause: &str) {
    let Some(i) = dg.findings.iter().position(|f| f.limit == limit) else {
        return;
    };
    dg.findings[i].sentence += clause;
    if dg.limit == Some(limit) && i == 0 {
        dg.summary = lead(&dg.findings[0], &dg.figures);
    }
}

/// A receiver at zero window for `share` of the data time: its application
/// did not read. No rate model, so no prediction; the share binds as a
/// TCP limit counter would.
fn receiving_application(dg: &mut Diagnosis, share: f64, lines: Vec<EvidenceLine>) {
    let share = share.min(1.0);
    let sentence = format!(
        "it did not read: the receiver advertised a zero window {:.0}% of the transfer, so the sender had to stop",
        share * 100.0
    );
    let f = Finding {
        missing: vec!["the receiving host's CPU and its application's reads".into()],
        evidence: lines,
        ..Finding::unmodelled(
            Limit::Application,
            "the receiving application",
            &sentence,
            share,
            share,
        )
    };
    let fix = Fix {
        os: "application".into(),
        commands: vec!["read the socket sooner and in larger reads; move slow work (disk, decompression) off the reading thread".into()],
        expected_bps: None,
        note: "let the receiving application keep up".into(),
    };
    put_first(dg, f, fix);
}
