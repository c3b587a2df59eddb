//! The latency-under-load verdict of a diagnosis ([`LatencyVerdict`]):
//! `plumb-diagnose` judges the probes' figures ([`LatencyEvidence`]) and
//! writes it; `diagnosis.latency` carries it.

use serde::{Deserialize, Serialize};

use super::finding::Fix;

/// The probes' figures, ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyEvidence {
    /// Median idle round trip.
    pub idle_p50_ms: f64,
    /// Median loaded round trip.
    pub loaded_p50_ms: f64,
    /// 99th-percentile loaded round trip: the queue at its fullest.
    pub loaded_p99_ms: f64,
    /// Loaded responsiveness, round trips per minute.
    pub loaded_rpm: Option<f64>,
    /// The delay the model predicts for the bottleneck's full queue, when its
    /// size is known (the lab's `--queue`).
    pub predicted_queue_ms: Option<f64>,
}

impl LatencyEvidence {
    /// What the load added at its worst (the queue when full), ms.
    pub fn added_ms(&self) -> f64 {
        (self.loaded_p99_ms - self.idle_p50_ms).max(0.0)
    }
}

/// The verdict on latency under load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyVerdict {
    /// `bufferbloat` or `fine`.
    pub verdict: Verdict,
    /// Delay the load added at its worst (loaded p99 − idle p50), ms.
    pub added_ms: f64,
    /// Delay the load added at the median, ms.
    pub added_p50_ms: f64,
    /// The model's full-queue delay, when the queue size is known, ms.
    pub predicted_ms: Option<f64>,
    /// The queue that delay implies at the link rate, bytes.
    pub queue_bytes: Option<f64>,
    /// One sentence.
    pub sentence: String,
    /// The figures.
    pub evidence: LatencyEvidence,
    /// What to change, with the throughput each change costs.
    pub fixes: Vec<Fix>,
}

/// Whether the load's queue is bloat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The queue added more than 10 ms and more than the idle RTT.
    Bufferbloat,
    /// It did not.
    Fine,
}
