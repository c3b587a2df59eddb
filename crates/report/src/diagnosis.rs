//! A diagnosis in text, as `plumb why` and the commands that explain a test
//! or a connection print it: the lead sentence, how the answer stands
//! against the measurement, the evidence, what else was seen, what to
//! change on each system, what could not be known and the latency verdict.

use plumb_diagnose::rules::quota_of;
use plumb_diagnose::Evidence;
use plumb_model::units::{sig, thousands};
use plumb_model::Rate;
use plumb_record::diagnosis::LatencyVerdict;
use plumb_record::diagnosis::{Diagnosis, Limit, Status};

use crate::format::os_name;

/// A rate for people (`0 bit/s` for none).
fn rate(b: f64) -> String {
    Rate::from_bps(b).map_or_else(|| "0 bit/s".into(), Rate::human)
}

/// The line under the summary: the measurement, and how the answer stands
/// against it.
fn verdict(d: &Diagnosis, ev: &Evidence) -> String {
    // Data that passed at one instant has no rate: none is printed rather
    // than 0 bit/s.
    let mut s = if ev.duration_s > 0.0 {
        format!(
            "Measured {} over {} s",
            rate(d.measured_bps),
            sig(ev.duration_s, 3)
        )
    } else {
        "No rate measured: the data passed at one instant".to_string()
    };
    let Some(f) = d.primary() else {
        return s + "; nothing plumb models predicts this rate, so no fix is offered.";
    };
    let conf = format!("confidence {}, {}", sig(f.confidence, 2), f.level.word());
    match (f.explains, f.predicted_bps, f.tolerance) {
        (true, Some(p), Some(t)) => {
            s += &format!(
                "; the model predicts {} from this evidence, within the {}% it allows either way ({conf}).",
                rate(p),
                sig(t * 100.0, 2)
            );
        }
        _ => {
            let udp = ev.udp.is_some() && f.limit == Limit::Loss;
            // A cgroup quota's share is of its periods, not of the test.
            let quota = quota_of(f, ev);
            let share = f.binding_share.map_or(String::new(), |x| {
                if udp {
                    format!(" for {}% of the datagrams sent", sig(x * 100.0, 2))
                } else if let Some((_, t)) = quota {
                    format!(
                        ": its cgroup's CPU quota ran out in {}% of its periods",
                        sig(t, 2)
                    )
                } else {
                    format!(" {}% of the test", sig(x * 100.0, 2))
                }
            });
            let model = match f.predicted_bps {
                Some(p) => format!(
                    "its own model allows {}, which does not explain the rate",
                    rate(p)
                ),
                None => "it has no rate model".into(),
            };
            s += &format!(
                "; named because it was binding{share} by {}, not from a predicted rate: {model} ({conf}).",
                if quota.is_some() {
                    "the kernel's count"
                } else if f.limit == Limit::Cpu {
                    "the CPU it used or waited for"
                } else if udp {
                    "the receiver's datagram counts"
                } else {
                    "TCP's counters"
                }
            );
        }
    }
    s
}

/// The diagnosis as a network engineer would write it: the lead sentence,
/// the line under it (none when there is nothing to explain), then
/// [`sections`].
pub fn render(d: &Diagnosis, ev: &Evidence) -> String {
    if d.nothing_to_explain {
        // No rate to weigh (an idle connection, a flow whose class is the
        // answer): no line on how a model stands against it.
        return format!("{}\n{}", d.summary, sections(d));
    }
    format!("{}\n\n{}\n{}", d.summary, verdict(d, ev), sections(d))
}

/// The sections under the lead sentence and the verdict line, each after a
/// blank line: the evidence, what else was seen, what to change, what could
/// not be known and the latency verdict, those the answer has.
pub fn sections(d: &Diagnosis) -> String {
    let mut s = String::new();
    if !d.evidence.is_empty() {
        s += "\nEvidence:\n";
        for e in &d.evidence {
            let v = if e.unit == "B" {
                format!("{} B", thousands(e.value as u64))
            } else if e.unit.is_empty() {
                String::new()
            } else {
                format!("{} {}", sig(e.value, 4), e.unit)
            };
            s += &format!("  {:<60} {v}\n", e.what);
        }
    }
    let others: Vec<_> = d
        .findings
        .iter()
        .skip(usize::from(d.primary().is_some()))
        .collect();
    if !others.is_empty() {
        s += if d.limit.is_some() {
            "\nAlso seen:\n"
        } else {
            "\nSeen:\n"
        };
        for f in others {
            // A cause that does not bind has no confidence worth printing.
            let how = match f.status {
                Status::NotBinding => f.status.word().to_string(),
                _ => format!("{}, confidence {}", f.status.word(), sig(f.confidence, 2)),
            };
            s += &format!("  - {} ({how}): {}.\n", f.what, f.sentence);
        }
    }
    if !d.fixes.is_empty() {
        s += "\nWhat to change:\n";
        for f in &d.fixes {
            let expect = f
                .expected_bps
                .map_or(String::new(), |e| format!(" -> expect about {}", rate(e)));
            s += &format!("  {}: {}{expect}\n", os_name(&f.os), f.note);
            for c in &f.commands {
                s += &format!("      {c}\n");
            }
        }
    }
    if !d.unknown.is_empty() {
        s += "\nNot known from this test:\n";
        for u in &d.unknown {
            s += &format!("  - {u}\n");
        }
    }
    if let Some(l) = &d.latency {
        s += &latency(l);
    }
    s
}

/// The latency verdict in text, after the rest.
fn latency(v: &LatencyVerdict) -> String {
    let mut s = format!("\nLatency under load: {}\n", v.sentence);
    if !v.fixes.is_empty() {
        s += "Fixes for the queue (and their throughput cost):\n";
        for f in &v.fixes {
            s += &format!("  [{}] {}\n", f.os, f.commands.join("; "));
            s += &format!("      {}\n", f.note);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use plumb_diagnose::diagnose;
    use plumb_diagnose::evidence::LinkRate;
    use plumb_diagnose::{Evidence, LinkSource};
    use plumb_record::Document;

    /// A recorded `--latency` test explained with the link rate given: the
    /// summary leads, then the verdict line, the sections, and the latency
    /// verdict last.
    #[test]
    fn renders_every_section_in_order() {
        let text = include_str!("../tests/fixtures/plumb-latency.json");
        let doc = Document::parse(text).expect("a -J document");
        let link = Some(LinkRate {
            bps: 1e9,
            source: LinkSource::Given,
        });
        let ev = Evidence::from_document(&doc, link).expect("evidence");
        let d = diagnose(&ev);
        let s = super::render(&d, &ev);
        assert!(s.starts_with(&format!("{}\n\nMeasured ", d.summary)), "{s}");
        let at = |h: &str| s.find(h).unwrap_or_else(|| panic!("no {h:?} in {s}"));
        assert!(at("\nEvidence:\n") < at("\nWhat to change:\n"));
        assert!(at("\nWhat to change:\n") < at("\nLatency under load: "));
    }
}
