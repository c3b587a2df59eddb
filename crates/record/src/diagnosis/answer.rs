//! The answer `plumb-diagnose` gives: the primary limit, every finding
//! behind it, the figures, the fixes and what could not be known
//! ([`Diagnosis`]).
//!
//! It is also the `diagnosis` object of plumb's `-J` documents: serialized,
//! its fields are that object's keys in their order, and the document's
//! `diagnosis` deserializes back into it. Read, a key left out takes its
//! empty value, so a diagnosis written by hand or cut down still reads.

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};

use super::figures::Figures;
use super::finding::{Confidence, EvidenceLine, Finding, Fix, Limit};
use super::latency::LatencyVerdict;

/// The answer.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(from = "read::Read")]
pub struct Diagnosis {
    /// The primary limit; `None` when nothing explains the rate
    /// ("unexplained", as the JSON says it).
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
    /// JSON writes as `"limit": null` (and a reader takes from a `null` or
    /// absent `limit`), apart from an unexplained rate.
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

/// The `diagnosis` object as read: every key may be left out, and `limit`
/// is a name, `"unexplained"` or `null`.
mod read {
    use serde::{Deserialize, Deserializer};

    use crate::diagnosis::answer::Diagnosis;
    use crate::diagnosis::figures::Figures;
    use crate::diagnosis::finding::{Confidence, EvidenceLine, Finding, Fix, Limit};
    use crate::diagnosis::latency::LatencyVerdict;

    /// The object's keys, each with its empty value when left out. An
    /// older plumb wrote `confidence` as its band's word and findings of
    /// fewer keys: the word reads as `confidence_level`, and findings that
    /// are not today's read as none.
    #[derive(Default, Deserialize)]
    #[serde(default)]
    pub(super) struct Read {
        #[serde(deserialize_with = "limit_word")]
        limit: Word,
        secondary: Vec<Limit>,
        measured_bps: f64,
        predicted_bps: Option<f64>,
        tolerance: Option<f64>,
        link_bps: Option<f64>,
        link_source: Option<String>,
        summary: String,
        confidence: Option<NumberOrWord>,
        confidence_level: Option<Confidence>,
        evidence: Vec<EvidenceLine>,
        #[serde(deserialize_with = "or_empty")]
        findings: Vec<Finding>,
        figures: Figures,
        fixes: Vec<Fix>,
        unknown: Vec<String>,
        latency: Option<LatencyVerdict>,
    }

    /// `confidence`: 0–1, or a band's word.
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumberOrWord {
        Number(f64),
        Word(Confidence),
    }

    /// A list of `T`s, else none.
    fn or_empty<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum OrNot<T> {
            Is(Vec<T>),
            Not(serde::de::IgnoredAny),
        }
        Ok(match OrNot::deserialize(d)? {
            OrNot::Is(v) => v,
            OrNot::Not(_) => Vec::new(),
        })
    }

    /// What `limit` says.
    #[derive(Default)]
    enum Word {
        /// `null`, or left out: nothing to explain.
        #[default]
        Nothing,
        /// `"unexplained"`.
        Unexplained,
        /// A limit's name.
        Named(Limit),
    }

    fn limit_word<'de, D: Deserializer<'de>>(d: D) -> Result<Word, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Named {
            Limit(Limit),
            Other(Option<String>),
        }
        match Named::deserialize(d)? {
            Named::Limit(l) => Ok(Word::Named(l)),
            Named::Other(None) => Ok(Word::Nothing),
            Named::Other(Some(w)) if w == "unexplained" => Ok(Word::Unexplained),
            Named::Other(Some(w)) => Err(serde::de::Error::unknown_variant(
                &w,
                &["unexplained", "receive_window", "…"],
            )),
        }
    }

    impl From<Read> for Diagnosis {
        fn from(r: Read) -> Diagnosis {
            let (limit, nothing_to_explain) = match r.limit {
                Word::Nothing => (None, true),
                Word::Unexplained => (None, false),
                Word::Named(l) => (Some(l), false),
            };
            let (confidence, confidence_level) = match r.confidence {
                Some(NumberOrWord::Number(c)) => (Some(c), r.confidence_level),
                Some(NumberOrWord::Word(w)) => (None, r.confidence_level.or(Some(w))),
                None => (None, r.confidence_level),
            };
            Diagnosis {
                limit,
                secondary: r.secondary,
                measured_bps: r.measured_bps,
                predicted_bps: r.predicted_bps,
                tolerance: r.tolerance,
                link_bps: r.link_bps,
                link_source: r.link_source,
                summary: r.summary,
                confidence,
                confidence_level,
                evidence: r.evidence,
                findings: r.findings,
                figures: r.figures,
                fixes: r.fixes,
                unknown: r.unknown,
                latency: r.latency,
                nothing_to_explain,
            }
        }
    }
}
