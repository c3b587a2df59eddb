//! Building the record's finding types ([`plumb_record::diagnosis`]): the
//! evidence line every rule writes.

use plumb_record::diagnosis::EvidenceLine;

/// An [`EvidenceLine`] from borrowed words.
pub(crate) fn line(what: &str, value: f64, unit: &str) -> EvidenceLine {
    EvidenceLine::new(what, value, unit)
}
