//! The lead sentence of an answer: "Limited by" the primary cause, or
//! "Unexplained" with what was measured and what would have told more.

use plumb_model::units::sig;

use crate::evidence::{Evidence, LinkSource};
use crate::human::{mbps, ms};
use plumb_record::diagnosis::Figures;
use plumb_record::diagnosis::{Finding, Limit};

/// The lead sentence when `f` is the primary finding: "Limited by" its
/// cause, its clause, and what the link could carry. Public so that other
/// evidence sources (a live connection) that add findings of their own word
/// the answer the same way.
pub fn lead(f: &Finding, figures: &Figures) -> String {
    format!(
        "Limited by {}: {}{}.",
        f.what,
        f.sentence,
        match figures.goodput_bps {
            Some(g) if figures.goodput_is_lower_bound => format!(
                "; the best interval reached {} (the link rate is not known)",
                mbps(g)
            ),
            Some(g) if f.limit != Limit::Link => format!("; the link could carry {}", mbps(g)),
            _ => String::new(),
        }
    )
}

/// The lead sentence when nothing explains the rate: what was measured, and
/// what would have told more.
pub(crate) fn unexplained(ev: &Evidence, figures: &Figures, findings: &[Finding]) -> String {
    let mut s = format!("Unexplained: {} measured", mbps(ev.measured_bps));
    if ev.duration_s > 0.0 {
        s += &format!(" over {} s", sig(ev.duration_s, 3));
    }
    if let Some(r) = figures.rtt_s {
        s += &format!(" at {} RTT", ms(r));
    }
    match (figures.goodput_bps, &ev.link) {
        (Some(g), Some(l)) if !matches!(l.source, LinkSource::BestInterval) => {
            s += &format!(
                ", {}% of the {} a {} link carries",
                sig(ev.measured_bps / g * 100.0, 3),
                mbps(g),
                mbps(l.bps)
            );
        }
        _ => {}
    }
    s += "; no cause plumb models predicts this rate";
    if !findings.is_empty() {
        s += " (what was seen is listed below, with what each allows)";
    }
    if ev.link.is_none()
        || ev
            .link
            .as_ref()
            .is_some_and(|l| matches!(l.source, LinkSource::BestInterval))
    {
        s += "; give --link with the link rate so plumb can tell a full link from a limited one";
    }
    s + "."
}
