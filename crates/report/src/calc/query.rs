//! What `plumb calc` knows besides the path and its prediction: where the
//! RTT came from, and what a full bottleneck queue adds.

use plumb_model::{Distance, Rtt};

/// The queue's delay when full and the loaded round trip, seconds.
#[derive(Debug, Clone, Copy)]
pub struct QueuePrediction {
    /// The delay a full queue adds to every round trip, seconds.
    pub delay: f64,
    /// The round trip of a flow that keeps the queue full, seconds (with an RTT).
    pub loaded_rtt: Option<f64>,
}

/// Where the RTT came from.
#[derive(Debug, Clone, Copy)]
pub enum RttSource {
    /// `--rtt`.
    Given,
    /// `--distance`: the typical RTT for it, and light's in fibre alone.
    Distance {
        /// The one-way path length.
        d: Distance,
        /// The round trip of light in fibre over it.
        floor: Rtt,
    },
}
