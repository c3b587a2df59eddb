//! One flow of a capture in text. By default the verdict first and at most
//! [`MAX_LINES`] lines: the flow and its class, the lead sentence, how the
//! measurement stands against the model, a few figures, what else was
//! seen, and one system's fix. `verbose` adds the capture's notes (where it
//! was taken, each end's options and operating system), every figure,
//! every system's fixes and what a capture cannot know.

use plumb_diagnose::rules::{human_count, human_rate};
use plumb_diagnose::Evidence;
use plumb_model::units::{sig, thousands};
use plumb_record::capture::Explanation;
use plumb_record::class::FlowClass;
use plumb_record::diagnosis::{Diagnosis, EvidenceLine, Fix};

use crate::format::os_name;

/// The most lines one flow takes without `verbose`.
pub const MAX_LINES: usize = 15;

/// Figures shown without `verbose`.
const FIGURES: usize = 4;
/// Other findings shown without `verbose`.
const ALSO: usize = 2;
/// Commands of the fix shown without `verbose`.
const COMMANDS: usize = 3;

/// Flow `n`, explained.
/// `evidence` is what its verdict weighed (none: the verdict alone).
pub fn render(n: usize, x: &Explanation, evidence: Option<&Evidence>, verbose: bool) -> String {
    let mut s = head(n, x);
    if verbose {
        for note in &x.notes {
            s += &format!("   - {note}\n");
        }
        s += &format!("   - class {}: {}\n", x.class.words(), x.class_why);
        s += "\n";
        s += &full(x, evidence);
        return s;
    }
    let d = &x.diagnosis;
    s += &format!("   {}\n", d.summary);
    if let Some(v) = verdict(x) {
        s += &format!("   {v}\n");
    }
    // A class's answer says its figures in its sentence.
    if !d.nothing_to_explain {
        s += &figures(&d.evidence);
    }
    s += &also(d);
    s += &fixes(d, x.fixes_first_for.is_some());
    s
}

/// `1. A -> B, bulk: 1,022,443 B in 1.25 s, 6.53 Mbit/s`; no rate for a
/// flow that is not bulk, nor for data that passed at one instant.
fn head(n: usize, x: &Explanation) -> String {
    let f = &x.flow;
    let rate = if f.duration_s > 0.0 && x.class == FlowClass::Bulk {
        format!(", {}", human_rate(f.measured_bps))
    } else {
        String::new()
    };
    format!(
        "{n}. {} -> {}, {}: {} B in {} s{rate}\n",
        f.sender,
        f.receiver,
        x.class.words(),
        human_count(f.data_bytes),
        sig(f.duration_s, 3),
    )
}

/// How the answer stands against the measurement, in plain words; none
/// for a flow whose answer is its class.
fn verdict(x: &Explanation) -> Option<String> {
    let d = &x.diagnosis;
    if d.nothing_to_explain {
        return None;
    }
    let measured = format!(
        "Measured {} over {} s",
        human_rate(d.measured_bps),
        sig(x.flow.duration_s, 3)
    );
    let Some(f) = d.primary() else {
        return Some(format!(
            "{measured}; nothing plumb models explains this rate, so no fix is offered."
        ));
    };
    Some(match (f.explains, f.predicted_bps, f.tolerance) {
        (true, Some(p), Some(t)) => format!(
            "{measured}; the model predicts {}, within the {}% it allows either way.",
            human_rate(p),
            sig(t * 100.0, 2)
        ),
        _ => format!(
            "{measured}; named from what the capture shows it held {}% of the time (no rate model).",
            sig(f.binding_share.unwrap_or(0.0).clamp(0.0, 1.0) * 100.0, 2)
        ),
    })
}

/// A figure: `what value unit`.
fn figure(e: &EvidenceLine) -> String {
    match e.unit.as_str() {
        "" => e.what.clone(),
        "B" => format!("{} {} B", e.what, thousands(e.value as u64)),
        u => format!("{} {} {u}", e.what, sig(e.value, 4)),
    }
}

/// The first figures, two to a line.
fn figures(ev: &[EvidenceLine]) -> String {
    let shown: Vec<String> = ev.iter().take(FIGURES).map(figure).collect();
    let mut s = String::new();
    for (i, pair) in shown.chunks(2).enumerate() {
        let lead = if i == 0 { "Figures:" } else { "        " };
        s += &format!("   {lead} {}\n", pair.join("; "));
    }
    s
}

/// The other findings, one line each.
fn also(d: &Diagnosis) -> String {
    let others: Vec<_> = d
        .findings
        .iter()
        .skip(usize::from(d.primary().is_some()))
        .take(ALSO)
        .collect();
    let mut s = String::new();
    for f in others {
        let lead = if d.limit.is_some() {
            "Also seen"
        } else {
            "Seen"
        };
        s += &format!("   {lead}: {}: {}.\n", f.what, f.sentence);
    }
    s
}

/// The first fix with its first commands, or for a flow that is not bulk
/// every note of what helps.
fn fixes(d: &Diagnosis, guessed: bool) -> String {
    let Some(first) = d.fixes.first() else {
        return String::new();
    };
    if d.nothing_to_explain {
        let mut s = "   What helps:\n".to_string();
        for f in d.fixes.iter().take(4) {
            s += &format!("     - {}\n", f.note);
        }
        return s;
    }
    let mut s = format!(
        "   Fix ({}{}): {}{}\n",
        os_name(&first.os),
        if guessed { ", the system guessed" } else { "" },
        first.note,
        expect(first)
    );
    for c in first.commands.iter().take(COMMANDS) {
        s += &format!("       {c}\n");
    }
    let more = d.fixes.len() - 1 + first.commands.len().saturating_sub(COMMANDS);
    if more > 0 {
        s += "   -V shows every system's fixes, the capture's notes and what it cannot know.\n";
    }
    s
}

fn expect(f: &Fix) -> String {
    f.expected_bps.map_or(String::new(), |e| {
        format!(" -> expect about {}", human_rate(e))
    })
}

/// Everything: the diagnosis as a test's.
fn full(x: &Explanation, evidence: Option<&Evidence>) -> String {
    crate::diagnosis::render(&x.diagnosis, evidence.unwrap_or(&Evidence::default()))
}
