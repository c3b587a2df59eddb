//! The answer: the primary limit, every finding behind it, the figures,
//! the fixes and what could not be known ([`Diagnosis`]).

use serde::Serialize;

use crate::figures::Figures;
use crate::finding::{EvidenceLine, Finding, Fix, Limit};
use crate::latency::LatencyVerdict;

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnosis {
    /// The primary limit; `None` when nothing explains the rate
    /// ("unexplained").
    pub limit: Option<Limit>,
    /// Other limits the evidence shows (their status is in `findings`).
    pub secondary: Vec<Limit>,
    /// Receiver-measured goodput, bit/s.
    pub measured_bps: f64,
    /// The primary limit's prediction, when it explains the measurement.
    pub predicted_bps: Option<f64>,
    /// Its tolerance.
    pub tolerance: Option<f64>,
    /// The primary finding's confidence, 0–1.
    pub confidence: Option<f64>,
    /// The link's TCP goodput, bit/s, when the link rate is known.
    pub link_bps: Option<f64>,
    /// How the link rate is known.
    pub link_source: Option<String>,
    /// The lead sentence.
    pub summary: String,
    /// Every finding, primary first, then by confidence.
    pub findings: Vec<Finding>,
    /// The numbers behind the primary finding and the path.
    pub evidence: Vec<EvidenceLine>,
    /// The answer's link and target figures.
    pub figures: Figures,
    /// What to change.
    pub fixes: Vec<Fix>,
    /// What could not be known.
    pub unknown: Vec<String>,
    /// Latency under load, when the test measured it.
    pub latency: Option<LatencyVerdict>,
}

impl Diagnosis {
    /// The limit's JSON name, `unexplained` when there is none.
    pub fn limit_name(&self) -> &'static str {
        self.limit.map_or("unexplained", Limit::name)
    }

    /// The primary finding.
    pub fn primary(&self) -> Option<&Finding> {
        self.limit.and(self.findings.first())
    }
}
