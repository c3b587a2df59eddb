//! A verdict as the page shows it ([`Diagnosis`]): the `diagnosis` object
//! `plumb why` and `plumb lab --why` write, for a test or for each running
//! connection: its summary and rates, the fixes per system and the evidence.

use plumb_record::diagnosis::{Diagnosis as Verdict, EvidenceLine};
use plumb_record::Document as Record;

/// A `diagnosis` object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diagnosis {
    /// One sentence naming the limit.
    pub summary: Option<String>,
    /// The limit's id (`receive_window`, `application`…).
    pub limit: Option<String>,
    /// The rate measured, bit/s (the model's own when there was no test).
    pub measured_bps: Option<f64>,
    /// The rate the model predicts, bit/s.
    pub predicted_bps: Option<f64>,
    /// What the link carries, bit/s.
    pub link_bps: Option<f64>,
    /// How sure the verdict is (`high`, `medium`…).
    pub confidence: Option<String>,
    /// What to change, the fix for this host's system first.
    pub fixes: Vec<Fix>,
    /// What the verdict rests on.
    pub evidence: Vec<Evidence>,
}

/// One fix: what to change on one system, and the rate to expect after.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fix {
    /// The system's id (`linux`, `windows-legacy`…; empty when not given).
    pub os: String,
    /// What to change, in words (empty when not given).
    pub note: String,
    /// The rate expected once changed, bit/s.
    pub expected_bps: Option<f64>,
    /// The commands that change it, one a line (a non-string is empty).
    pub commands: Vec<String>,
}

/// One reading a verdict rests on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    /// What was read (empty when not given).
    pub what: String,
    /// Its value.
    pub value: Option<f64>,
    /// Its unit (`B`, `ms`, `%`…).
    pub unit: Option<String>,
}

impl Diagnosis {
    /// The verdict as the page shows it.
    pub fn of(v: &Verdict) -> Diagnosis {
        Diagnosis {
            summary: Some(v.summary.clone()).filter(|s| !s.is_empty()),
            // `null` (nothing to explain) names no limit; a rate nothing
            // explains is "unexplained".
            limit: (!v.nothing_to_explain).then(|| v.limit_name().to_string()),
            measured_bps: Some(v.measured_bps),
            predicted_bps: v.predicted_bps,
            link_bps: v.link_bps,
            // The band in words is shown where the document gives it in
            // words only (`confidence` a word, as an older plumb wrote it);
            // a number's band stays with the findings.
            confidence: v
                .confidence_level
                .filter(|_| v.confidence.is_none())
                .map(|c| c.word().to_string()),
            fixes: v.fixes.iter().map(Fix::of).collect(),
            evidence: v.evidence.iter().map(Evidence::of).collect(),
        }
    }

    /// The fix for Linux, else the first.
    pub fn linux_fix(&self) -> Option<&Fix> {
        self.fixes
            .iter()
            .find(|f| f.os == "linux")
            .or(self.fixes.first())
    }
}

impl Fix {
    fn of(f: &plumb_record::diagnosis::Fix) -> Fix {
        Fix {
            os: f.os.clone(),
            note: f.note.clone(),
            expected_bps: f.expected_bps,
            commands: f.commands.clone(),
        }
    }
}

impl Evidence {
    fn of(e: &EvidenceLine) -> Evidence {
        Evidence {
            what: e.what.clone(),
            value: Some(e.value),
            unit: Some(e.unit.clone()),
        }
    }
}

/// The verdict `doc` holds, if it holds one.
pub fn verdict_of(doc: &Record) -> Option<&Verdict> {
    doc.diagnosis.as_ref().and_then(Option::as_ref)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The diagnosis of a document holding `diagnosis`, if it is one.
    fn diagnosis(text: &str) -> Option<Diagnosis> {
        let doc = Record::parse(&format!(r#"{{"diagnosis": {text}}}"#)).expect("a document");
        verdict_of(&doc).map(Diagnosis::of)
    }

    #[test]
    fn a_verdict_with_its_fixes_and_evidence() {
        let d = diagnosis(
            r#"{
            "summary": "Limited by the receive window", "limit": "receive_window",
            "measured_bps": 9.3e6, "predicted_bps": 9.4e6, "confidence": "high",
            "fixes": [
                {"os": "macos", "note": "raise it", "commands": ["sysctl a=1", "sysctl b=2"]},
                {"os": "linux", "note": "raise rmem", "expected_bps": 9e8}
            ],
            "evidence": [{"what": "window", "value": 17520, "unit": "B"}]
        }"#,
        )
        .expect("an object");
        assert_eq!(d.summary.as_deref(), Some("Limited by the receive window"));
        assert_eq!((d.measured_bps, d.link_bps), (Some(9.3e6), None));
        assert_eq!(d.fixes[0].commands, ["sysctl a=1", "sysctl b=2"]);
        // The band, given in words.
        assert_eq!(d.confidence.as_deref(), Some("high"));
        assert_eq!(d.linux_fix().map(|f| f.note.as_str()), Some("raise rmem"));
        assert_eq!(
            d.evidence,
            vec![Evidence {
                what: "window".into(),
                value: Some(17520.0),
                unit: Some("B".into())
            }]
        );
    }

    #[test]
    fn missing_keys_and_other_shapes() {
        assert_eq!(diagnosis("null"), None);
        assert_eq!(diagnosis(r#""receive window""#), None);
        assert_eq!(diagnosis(r#"{"predicted_bps": "9e6"}"#), None);
        let d =
            diagnosis(r#"{"predicted_bps": 9e6, "confidence": 0.9, "confidence_level": "high"}"#)
                .expect("an object");
        assert_eq!(
            (d.summary.as_deref(), d.limit.as_deref(), d.predicted_bps),
            (None, None, Some(9e6))
        );
        assert!(d.fixes.is_empty() && d.linux_fix().is_none());
        // A band given as a number is not repeated in words.
        assert_eq!(d.confidence, None);
        // Without a Linux fix, the first stands for it.
        let d = diagnosis(r#"{"fixes": [{"os": "macos"}, {}]}"#).expect("an object");
        assert_eq!(d.linux_fix().map(|f| f.os.as_str()), Some("macos"));
    }
}
