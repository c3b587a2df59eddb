//! What limits a transfer, from the evidence a test recorded.
//!
//! This crate owns the diagnosis: [`evidence`] turns a test's `-J` document
//! (plumb's, or a stock iperf3's with thinner evidence) into typed
//! [`Evidence`] once; [`rules`] weigh that evidence against the `plumb-model`
//! formulas and name one primary [`Limit`] and any secondary ones, each with
//! the measured rate, the rate the model predicts from the evidence, the
//! evidence lines and a confidence; [`fixes`] say what to change on each OS
//! and what the model expects the change to yield; [`latency`] judges latency
//! under load (bufferbloat) when the test measured it. No I/O, no clock.
#![forbid(unsafe_code)]

pub mod evidence;
pub mod fixes;
pub mod latency;
pub mod rules;

pub use evidence::{Evidence, LinkSource};
pub use rules::{diagnose, Confidence, Diagnosis, EvidenceLine, Finding, Fix, Limit};
