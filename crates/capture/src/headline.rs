//! Putting a finding only a capture makes at the head of a diagnosis, with
//! the one fix that goes with it (`plumb_diagnose::put_first` does the
//! reordering).

use plumb_record::diagnosis::Diagnosis;
use plumb_record::diagnosis::{Finding, Fix};

/// Makes `f` the answer of `dg`, with `fix` as its one fix.
pub fn put_first(dg: &mut Diagnosis, f: Finding, fix: Fix) {
    plumb_diagnose::put_first(dg, f, vec![fix]);
}
