//! What limits a transfer, from the evidence a test recorded.
//!
//! This crate owns the diagnosis: [`evidence`] turns a test's `-J` document
//! (plumb's, or a stock iperf3's with thinner evidence) into typed
//! [`Evidence`] once (any other source — the model alone, a live
//! connection — builds the same struct); [`rules`] weigh that evidence
//! against the `plumb-model` formulas and name the primary [`Limit`] only
//! when its prediction explains the measured rate within a stated tolerance
//! or TCP's counters show it binding, else "unexplained"; every finding
//! carries its prediction (or none, for a cause with no rate model), its
//! status and a confidence computed from the evidence; [`fixes`] say what
//! to change on each OS and what the model expects the change to yield,
//! from one set of link and target [`Figures`]; [`latency`] judges latency
//! under load (bufferbloat) when the test measured it. No I/O, no clock.
#![warn(clippy::too_many_lines)]
#![forbid(unsafe_code)]

mod diagnosis;
pub mod evidence;
mod figures;
mod finding;
pub mod fixes;
mod human;
pub mod latency;
mod payload;
pub mod rules;
mod tolerance;

pub use evidence::{Evidence, LinkSource};
pub use rules::{
    diagnose, Confidence, Diagnosis, EvidenceLine, Figures, Finding, Fix, Limit, Status,
};
