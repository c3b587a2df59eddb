//! What `plumb why -r` must hold on every capture, checked on one run's
//! text and `-J` document: it ends (no panic, no hang, an exit docs/why.md
//! gives), no share above 100 %, no limit named binding or printed as a cap
//! that the measured rate already exceeds beyond the model's tolerance, and
//! no tuning fix for a flow that is not bulk.

use serde_json::Value;

use super::{flow_name, Outcome, Run};

/// One property the corpus test holds plumb to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Check {
    /// Each form ends within the limit, without a panic, with exit 0, 1
    /// (nothing carried data) or 2 (a bad file) and the line that goes with
    /// it; both forms end alike.
    Runs,
    /// No share field above 1, no `%` evidence above 100, no "N% of" above
    /// 100 in the text.
    ShareOver100,
    /// A finding named primary or binding, with a rate model, predicts at
    /// least the measured rate / (1 + its tolerance).
    BindingBelowMeasured,
    /// The same for every other finding with a rate model: a cap printed
    /// beside the verdict that the measurement already beat, unless its
    /// sentence says the model does not hold here.
    CapBelowMeasured,
    /// No sysctl, socket-buffer, `-w`, `-b` (or Windows registry/netsh)
    /// fix for a flow whose `class` is not `bulk`.
    TuningForNonBulk,
    /// Report only, until flows carry a `class`: the tuning fixes given to
    /// a flow that looks short (under 64 KiB, or its data within 0.2 s).
    UnclassedShortTuned,
    /// plumb's retransmissions in a capture with duplicate frames exceed
    /// tshark's on the capture without them (`duplicates.rs`).
    DuplicateAsRetransmission,
    /// A flow's text, without `-V`, longer than 15 lines.
    LongFlowText,
    /// A hand-labelled flow is missing from plumb's `-J`.
    LabelFlowMissing,
    /// A hand-labelled flow's `class` differs from the label's.
    LabelClass,
    /// Report only, until flows carry a `class`: a labelled flow without one.
    LabelNotYetClassed,
    /// A hand-labelled bulk flow's limit differs from the label's cause.
    LabelCause,
}

impl Check {
    pub const ALL: [Check; 12] = [
        Check::Runs,
        Check::ShareOver100,
        Check::BindingBelowMeasured,
        Check::CapBelowMeasured,
        Check::TuningForNonBulk,
        Check::UnclassedShortTuned,
        Check::DuplicateAsRetransmission,
        Check::LongFlowText,
        Check::LabelFlowMissing,
        Check::LabelClass,
        Check::LabelNotYetClassed,
        Check::LabelCause,
    ];

    /// A stand-in that is printed, never failed on.
    pub fn report_only(self) -> bool {
        matches!(self, Check::UnclassedShortTuned | Check::LabelNotYetClassed)
    }
}

/// One way one file (and flow) broke one check.
#[derive(Clone, Debug)]
pub struct Violation {
    pub check: Check,
    pub file: String,
    /// "client -> server", or empty for the whole file.
    pub flow: String,
    pub what: String,
}

/// A share is a fraction; allow for its last bit only.
const EPSILON: f64 = 1e-9;

/// The words of a fix command that tune the hosts' TCP for throughput.
const TUNING: [&str; 10] = [
    "sysctl",
    "SO_SNDBUF",
    "SO_RCVBUF",
    "tcp_rmem",
    "tcp_wmem",
    "netsh",
    "reg add",
    " -w ",
    " -b ",
    "setsockopt",
];

/// Every check on one run (the duplicate and label checks live apart).
pub fn check_run(r: &Run, out: &mut Vec<Violation>) {
    runs(r, out);
    shares(r, out);
    flow_lengths(r, out);
    for x in r.flows() {
        rate_models(r, x, out);
        tuning(r, x, out);
    }
}

/// The most lines one flow takes in the text without `-V`.
const FLOW_LINES: usize = 15;

/// Each flow of the text (a line `N. A -> B, class: …` and those after it
/// up to a blank line) at most [`FLOW_LINES`] lines.
fn flow_lengths(r: &Run, out: &mut Vec<Violation>) {
    let mut current: Option<(&str, usize)> = None;
    let close = |c: Option<(&str, usize)>, out: &mut Vec<Violation>| {
        if let Some((head, n)) = c.filter(|c| c.1 > FLOW_LINES) {
            let what = format!("{n} lines: {head}");
            out.push(violation(Check::LongFlowText, r, String::new(), what));
        }
    };
    for line in r.text().lines() {
        let starts = line
            .split_once(". ")
            .is_some_and(|(n, rest)| n.parse::<u32>().is_ok() && rest.contains(" -> "));
        if starts {
            close(current.take(), out);
            current = Some((line, 1));
        } else if line.is_empty() {
            close(current.take(), out);
        } else if let Some(c) = current.as_mut() {
            c.1 += 1;
        }
    }
    close(current, out);
}

fn violation(check: Check, r: &Run, flow: String, what: String) -> Violation {
    Violation {
        check,
        file: r.file.clone(),
        flow,
        what,
    }
}

fn runs(r: &Run, out: &mut Vec<Violation>) {
    for (form, o) in [("-J", &r.json), ("text", &r.text)] {
        if let Outcome::Failed(why) = o {
            out.push(violation(
                Check::Runs,
                r,
                String::new(),
                format!("{form}: {why}"),
            ));
        }
    }
    let kind = |o: &Outcome| std::mem::discriminant(o);
    if kind(&r.json) != kind(&r.text) {
        let what = format!("-J and text end differently: {:?} / {:?}", r.json, r.text);
        out.push(violation(Check::Runs, r, String::new(), what));
    }
    if matches!(r.json, Outcome::Explained(_) | Outcome::NothingToExplain(_)) && r.doc.is_none() {
        let what = "-J printed no JSON document".to_string();
        out.push(violation(Check::Runs, r, String::new(), what));
    }
}

/// Shares in the document (keys ending `_share`, and `continuity`), `%`
/// evidence, and "N% of" in the text.
fn shares(r: &Run, out: &mut Vec<Violation>) {
    for x in r.flows() {
        let mut bad = Vec::new();
        walk(x, "", &mut bad);
        for what in bad {
            out.push(violation(Check::ShareOver100, r, flow_name(x), what));
        }
    }
    for (pct, context) in percents_of(r.text()) {
        if pct > 100.0 + EPSILON {
            let what = format!("text: {context:?}");
            out.push(violation(Check::ShareOver100, r, String::new(), what));
        }
    }
}

/// Collects every share over 1 and every `%` evidence value over 100 under
/// `v`, named by its path.
fn walk(v: &Value, path: &str, bad: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if m.get("unit").and_then(Value::as_str) == Some("%") {
                let value = m.get("value").and_then(Value::as_f64).unwrap_or(0.0);
                if value > 100.0 + EPSILON {
                    let what = m.get("what").and_then(Value::as_str).unwrap_or("?");
                    bad.push(format!("{path}: {what} = {value:.1} %"));
                }
            }
            for (k, x) in m {
                let share = k.ends_with("_share") || k == "continuity";
                if let (true, Some(f)) = (share, x.as_f64()) {
                    if !(-EPSILON..=1.0 + EPSILON).contains(&f) {
                        bad.push(format!("{path}.{k} = {f:.4}"));
                    }
                }
                walk(x, &format!("{path}.{k}"), bad);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                walk(x, &format!("{path}[{i}]"), bad);
            }
        }
        _ => {}
    }
}

/// Each "N% of" (or "N % of") in `text`: the number and the words around
/// it.
pub fn percents_of(text: &str) -> Vec<(f64, String)> {
    let mut v = Vec::new();
    for (i, _) in text.match_indices('%') {
        if !text[i + 1..].starts_with(" of") {
            continue;
        }
        let before = text[..i].trim_end();
        let start = before
            .rfind(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
            .map_or(0, |j| j + 1);
        let Ok(n) = before[start..].replace(',', "").parse::<f64>() else {
            continue;
        };
        let lo = text[..start]
            .char_indices()
            .rev()
            .nth(30)
            .map_or(0, |(j, _)| j);
        let hi = text[i..]
            .char_indices()
            .nth(30)
            .map_or(text.len(), |(j, _)| i + j);
        v.push((n, text[lo..hi].replace('\n', " ")));
    }
    v
}

/// Every finding with a rate model against the measured rate: named
/// binding (primary or binding) it is [`Check::BindingBelowMeasured`],
/// otherwise [`Check::CapBelowMeasured`].
fn rate_models(r: &Run, x: &Value, out: &mut Vec<Violation>) {
    let d = &x["diagnosis"];
    let Some(measured) = d["measured_bps"].as_f64().filter(|m| *m > 0.0) else {
        return;
    };
    for f in d["findings"].as_array().into_iter().flatten() {
        let Some(predicted) = f["predicted_bps"].as_f64() else {
            continue;
        };
        let tolerance = f["tolerance"].as_f64().unwrap_or(0.25);
        if predicted * (1.0 + tolerance) >= measured * (1.0 - EPSILON) {
            continue;
        }
        let status = f["status"].as_str().unwrap_or("");
        let sentence = f["sentence"].as_str().unwrap_or("");
        let check = if matches!(status, "primary" | "binding") {
            Check::BindingBelowMeasured
        } else if sentence.contains("does not hold here") {
            // Not printed as a cap: the sentence says the measurement beat
            // the model, and why.
            continue;
        } else {
            Check::CapBelowMeasured
        };
        let what = format!(
            "{} ({status}) predicts {} but {} was measured (tolerance {:.0} %): {}",
            f["limit"].as_str().unwrap_or("?"),
            mbit(predicted),
            mbit(measured),
            tolerance * 100.0,
            f["sentence"].as_str().unwrap_or("")
        );
        out.push(violation(check, r, flow_name(x), what));
    }
}

fn mbit(bps: f64) -> String {
    format!("{:.3} Mbit/s", bps / 1e6)
}

/// The flow's class, where `-J` gives one (on the explained flow or in its
/// `flow` object).
pub fn class(x: &Value) -> Option<&str> {
    x["class"].as_str().or_else(|| x["flow"]["class"].as_str())
}

/// Tuning fixes for a flow that is not bulk; while flows carry no class,
/// those for a flow that looks short are reported.
fn tuning(r: &Run, x: &Value, out: &mut Vec<Violation>) {
    let d = &x["diagnosis"];
    let tuned: Vec<&str> = d["fixes"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|f| f["commands"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .filter(|c| TUNING.iter().any(|t| c.contains(t)))
        .collect();
    let Some(first) = tuned.first() else { return };
    let limit = d["limit"].as_str().unwrap_or("none");
    let f = &x["flow"];
    let bytes = f["data_bytes"].as_u64().unwrap_or(0);
    let secs = f["duration_s"].as_f64().unwrap_or(0.0);
    let size = format!("{bytes} B in {secs:.3} s");
    let what = |c: &str| {
        format!(
            "{c} flow ({size}), {limit}: {} tuning fix(es), e.g. {first:?}",
            tuned.len()
        )
    };
    match class(x) {
        Some("bulk") => {}
        Some(c) => out.push(violation(Check::TuningForNonBulk, r, flow_name(x), what(c))),
        None if bytes < 65_536 || secs < 0.2 => out.push(violation(
            Check::UnclassedShortTuned,
            r,
            flow_name(x),
            what("unclassed, short-looking"),
        )),
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percents_are_read_with_their_words() {
        let t = "TCP counted 28% of the test; 1,234.5% of nothing; 7 % of it; 50%, no";
        let p: Vec<f64> = percents_of(t).into_iter().map(|(n, _)| n).collect();
        assert_eq!(p, vec![28.0, 1234.5, 7.0]);
    }
}
