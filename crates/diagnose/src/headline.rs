//! Putting a finding no rate model stands behind at the head of a
//! diagnosis (a capture's zero window or black hole, a sender stalled in
//! timeouts): the findings it outranks step down to binding or not
//! binding, and the diagnosis's limit, confidence, summary, evidence and
//! fixes become the new finding's.

use crate::summary::lead;
use plumb_record::diagnosis::Diagnosis;
use plumb_record::diagnosis::{Finding, Fix, Status};

/// Makes `f` the answer of `dg`, with `fixes` as its fixes. No rate model
/// stands behind such a finding, so the diagnosis predicts no rate.
pub fn put_first(dg: &mut Diagnosis, f: Finding, fixes: Vec<Fix>) {
    for g in dg.findings.iter_mut() {
        if g.status == Status::Primary {
            g.status = if g.candidate() {
                Status::Binding
            } else {
                Status::NotBinding
            };
        }
    }
    dg.limit = Some(f.limit);
    dg.nothing_to_explain = false;
    dg.predicted_bps = None;
    dg.tolerance = None;
    dg.confidence = Some(f.confidence);
    dg.confidence_level = Some(f.level);
    dg.summary = lead(&f, &dg.figures);
    dg.evidence = f.evidence.clone();
    dg.fixes = fixes;
    dg.findings.insert(0, f);
    dg.secondary = dg.findings.iter().skip(1).map(|f| f.limit).collect();
}
