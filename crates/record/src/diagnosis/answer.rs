//! The answer `plumb-diagnose` gives: the primary limit, every finding
//! behind it, the figures, the fixes and what could not be known
//! ([`Diagnosis`]).
//!
//! It is also the `diagnosis` object of plumb's `-J` documents: serialized,
//! its fields are that object's keys in their order, and the document's
//! `diagnosis` deserializes back into it.

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};

use super::figures::Figures;
use super::finding::{Confidence, EvidenceLine, Finding, Fix, Limit};
use super::latency::LatencyVerdict;

/// The answer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Diagnosis {
    /// The primary limit; `None` when nothing explains the rate
    /// ("unexplained", as the JSON says it).
    #[serde(deserialize_with = "limit_or_unexplained::deserialize")]
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
    /// Nothing to explain (an idle connection): no limit at all, which the
    /// JSON writes as `"limit": null`, apart from an unexplained rate.
    #[serde(skip)]
    pub nothing_to_explain: bool,
}

/// The `diagnosis` object: every field in order, `limit` as its name,
/// `"unexplained"`, or `null` when there was nothing to explain.
impl Serialize for Diagnosis {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut o = s.serialize_struct("Diagnosis", 16)?;
        let limit = (!self.nothing_to_explain).then(|| self.limit_name());
        o.serialize_field("limit", &limit)?;
        o.serialize_field("secondary", &self.secondary)?;
        o.serialize_field("measured_bps", &self.measured_bps)?;
        o.serialize_field("predicted_bps", &self.predicted_bps)?;
        o.serialize_field("tolerance", &self.tolerance)?;
        o.serialize_field("link_bps", &self.link_bps)?;
        o.serialize_field("link_source", &self.link_source)?;
        o.serialize_field("summary", &self.summary)?;
        o.serialize_field("confidence", &self.confidence)?;
        o.serialize_field("confidence_level", &self.confidence_level)?;
        o.serialize_field("evidence", &self.evidence)?;
        o.serialize_field("findings", &self.findings)?;
        o.serialize_field("figures", &self.figures)?;
        o.serialize_field("fixes", &self.fixes)?;
        o.serialize_field("unknown", &self.unknown)?;
        o.serialize_field("latency", &self.latency)?;
        o.end()
    }
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

/// `limit` read from JSON: the limit's name, or `unexplained` (a `null`
/// reads as none too).
mod limit_or_unexplained {
    use serde::{Deserialize, Deserializer};

    use crate::diagnosis::finding::Limit;

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
