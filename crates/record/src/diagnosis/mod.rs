//! The diagnosis: what limits a transfer, as `plumb why` and `plumb lab
//! --why` write it (the `diagnosis` object of a `-J` document, of each
//! running connection, of each connection of a capture). `plumb-diagnose`
//! builds these types; the printers read them.
//!
//! - `finding`: a [`Limit`], a [`Finding`] weighed against the measured
//!   rate, the numbers behind it ([`EvidenceLine`], [`EvidenceKind`]), how
//!   sure it is ([`Confidence`]), where it stands ([`Status`]) and a change
//!   to make ([`Fix`]);
//! - `figures`: the link and target [`Figures`] of one answer;
//! - `latency`: the latency-under-load verdict ([`LatencyVerdict`]);
//! - `answer`: the whole answer, [`Diagnosis`], and how its `limit` is
//!   written.

mod answer;
mod figures;
mod finding;
mod latency;

pub use answer::Diagnosis;
pub use figures::Figures;
pub use finding::{Confidence, EvidenceKind, EvidenceLine, Finding, Fix, Limit, Status};
pub use latency::{LatencyEvidence, LatencyVerdict, Verdict};
