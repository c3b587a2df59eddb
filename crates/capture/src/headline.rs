//! Putting a finding only a capture makes at the head of a diagnosis: the
//! rules' findings it outranks step down to binding or not binding, and the
//! diagnosis's limit, confidence, summary, evidence and fixes become the
//! new finding's.

use plumb_diagnose::rules::{lead, Finding, Fix, Status};
use plumb_diagnose::Diagnosis;

/// Makes `f` the answer of `dg`, with `fix` as its one fix. No rate model
/// stands behind such a finding, so the diagnosis predicts no rate.
pub fn put_first(dg: &mut Diagnosis, f: Finding, fix: Fix) {
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
    dg.predicted_bps = None;
    dg.tolerance = None;
    dg.confidence = Some(f.confidence);
    dg.confidence_level = Some(f.level);
    dg.summary = lead(&f, &dg.figures);
    dg.evidence = f.evidence.clone();
    dg.fixes = vec![fix];
    dg.findings.insert(0, f);
    dg.secondary = dg.findings.iter().skip(1).map(|f| f.limit).collect();
}
