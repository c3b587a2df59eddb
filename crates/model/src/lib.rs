//! The TCP performance model: pure arithmetic about links, windows and loss.
//!
//! This crate owns the formulas every other part of plumb compares measurements
//! against, and the unit-carrying types they are written in. It does no I/O,
//! reads no clock and prints nothing, so `plumb calc`, `plumb why` and the lab
//! all get the same answer for the same inputs.
//!
//! A tour:
//! - [`units`]: [`Rate`] (bits/s), [`Bytes`], [`Rtt`], [`LossRate`], [`Distance`],
//!   each parsed from what people type (`1Gbit`, `64KiB`, `15ms`, `0.01%`, `1000km`)
//!   and printed back in a form that parses to the same value.
//! - [`tcp`]: bandwidth-delay product, window-limited rate, window scaling,
//!   Mathis loss-limited rate.
//! - [`ethernet`]: framing overhead, goodput share, frame rate at line rate.
//! - [`distance`]: propagation delay in fibre and the rule-of-thumb RTT table.
//! - [`latency`]: a full queue's delay, the loaded round trip, responsiveness (RPM).
//! - [`predict`]: the minimum of all limits, with the binding one named.
//! - [`lab`]: that prediction for a lab link and a client's flags (streams,
//!   window clamp, send buffer, MSS, rate cap).
//! - [`slow_start`]: the round trips slow start needs for a transfer.
#![forbid(unsafe_code)]

pub mod distance;
pub mod ethernet;
pub mod lab;
pub mod latency;
pub mod predict;
pub mod slow_start;
pub mod tcp;
pub mod units;

pub use ethernet::Framing;
pub use lab::{lab_prediction, LabClient, LabLimit, LabLink, LabPrediction};
pub use predict::{Limit, PathInput, Prediction};
pub use units::{Bytes, Distance, LossRate, ParseError, Rate, Rtt};
