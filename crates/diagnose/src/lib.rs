//! What limits a transfer, from the evidence a test recorded.
//!
//! This crate owns the rules of the diagnosis. [`diagnose`] is the one
//! entry point: it takes typed [`Evidence`] and returns a [`Diagnosis`]
//! naming the primary [`Limit`] only when its prediction explains the
//! measured rate within a stated tolerance or TCP's counters show it
//! binding, else "unexplained". Every finding carries its prediction (or
//! none, for a cause with no rate model), its status and a confidence
//! computed from the evidence. No I/O, no clock.
//!
//! The answer's types — [`Diagnosis`], [`Limit`], `Finding`, `EvidenceLine`,
//! `Fix`, `Figures`, the latency verdict and the flow class types — are the
//! record's ([`plumb_record::diagnosis`], [`plumb_record::class`]): this
//! crate builds them, and every printer reads them without it.
//!
//! [`Diagnosis`]: plumb_record::diagnosis::Diagnosis
//! [`Limit`]: plumb_record::diagnosis::Limit
//!
//! The modules, from the plain types up; none uses a module that uses it:
//!
//! - `finding`: the evidence line every rule writes. Uses no other.
//! - `tolerance`: the bars every rule is weighed against (how far a
//!   prediction may stray, how much of the test a counter must cover).
//! - `payload`, `human`: the payload share of the wire or a buffer; numbers
//!   in words.
//! - [`latency`]: the latency-under-load verdict (bufferbloat) and its
//!   fixes, when the test measured it.
//! - [`evidence`]: what a test recorded, as typed [`Evidence`]; any source
//!   (a `-J` document, the model alone, a live connection) builds it.
//! - `read`: the only module that reads the test document: a
//!   [`plumb_record::Document`] (plumb's, or a stock iperf3's with thinner
//!   evidence) into [`Evidence`] and its latency probes.
//! - [`path`]: the path's bottleneck inferred from the sender's evidence
//!   (a standing queue, cwnd-limited time) when no link rate was given.
//! - `figures`: the link and target figures of one answer, computed once
//!   so that the summary, the fixes and every "expect about" agree.
//! - `seen`: what a rule reports before it is weighed.
//! - [`rules`]: one file per rule (receive window, send buffer, application,
//!   UDP loss, CPU, path MTU, loss, link, congestion), each weighing its own
//!   evidence against the `plumb-model` formulas, with what they all read in
//!   `rules::context`.
//! - `summary`: the lead sentence ("Limited by …", "Unexplained: …").
//! - [`fixes`]: what to change on each OS for a limit, and what the model
//!   expects the change to yield, from the answer's figures.
//! - `weigh`: weighs each observation into a finding, picks the primary and
//!   builds the [`Diagnosis`] around it, with its summary and fixes.
//! - [`class`]: a flow's class (short, request/response, interactive,
//!   bulk) from its shape, named before any cause, and the answer for a flow
//!   that is not bulk.
//! - [`diagnose`] (in [`rules`]) sits on top: it asks each rule in turn and
//!   hands what they saw to `weigh`.
//! - `testing` (tests only): evidence and fixtures the tests share.
#![forbid(unsafe_code)]

pub mod class;
pub mod evidence;
mod figures;
mod finding;
pub mod fixes;
mod headline;
mod human;
pub mod latency;
pub mod path;
mod payload;
mod read;
pub mod rules;
mod seen;
mod stall;
mod summary;
#[cfg(test)]
mod testing;
mod tolerance;
mod weigh;

pub use evidence::{Evidence, LinkSource};
pub use headline::put_first;
pub use rules::diagnose;
