//! The answer: the primary limit, every finding behind it, the figures,
//! the fixes and what could not be known ([`Diagnosis`]).
//!
//! It is also the `diagnosis` object of plumb's `-J` documents: serialized,
//! its fields are that object's keys in their order, and the document's
//! `diagnosis` deserializes back into it.

use serde::{Deserialize, Serialize};

use crate::figures::Figures;
use crate::finding::{Confidence, EvidenceLine, Finding, Fix, Limit};
use crate::latency::LatencyVerdict;

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// The primary limit; `None` when nothing explains the rate
    /// ("unexplained", as the JSON says it).
    #[serde(with = "limit_or_unexplained")]
    pub limit: Option<Limit>,
    /// Other limits the evidence shows (their status is in `findings`).
    pub secondary: Vec<Limit>,
    /// Receiver-measured goodput, bit/s.
    pub measured_bps: f64,
    /// The primary limit's prediction, when it explains the measurement.
    pub predicted_bps: Option<f64>,
    /// Its tolerance.
    pub tolerance: Option<f64>,
    /// The link's TCP goodput, bit/s, when the link rate is known.
    pub link_bps: Option<f64>,
    /// How the link rate is known.
    pub link_source: Option<String>,
    /// The lead sentence.
    pub summary: String,
    /// The primary finding's confidence, 0–1.
    pub confidence: Option<f64>,
    /// The band the primary finding's confidence falls in.
    pub confidence_level: Option<Confidence>,
    /// The numbers behind the primary finding and the path.
    pub evidence: Vec<EvidenceLine>,
    /// Every finding, primary first, then by confidence.
    pub findings: Vec<Finding>,
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

/// `limit` in JSON: the limit's name, or `unexplained` (a `null` reads as
/// none too).
mod limit_or_unexplained {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::finding::Limit;

    pub(super) fn serialize<S: Serializer>(l: &Option<Limit>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(l.map_or("unexplained", Limit::name))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Limit>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Named {
            Limit(Limit),
            Other(Option<String>),
        }
        match Named::deserialize(d)? {
            Named::Limit(l) => Ok(Some(l)),
            Named::Other(None) => Ok(None),
            Named::Other(Some(w)) if w == "unexplained" => Ok(None),
            Named::Other(Some(w)) => Err(serde::de::Error::unknown_variant(
                &w,
                &["unexplained", "receive_window", "…"],
            )),
        }
    }
}
