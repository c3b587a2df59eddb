//! A verdict as the page shows it ([`Diagnosis`]): the `diagnosis` object
//! `plumb why` and `plumb lab --why` write, for a test or for each running
//! connection: its summary and rates, the fixes per system and the evidence.

use crate::input::views::{DiagnosisView, EvidenceView, FixView};

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
    /// Reads a `diagnosis` object's view.
    pub fn of(v: &DiagnosisView) -> Diagnosis {
        Diagnosis {
            summary: v.summary.get().cloned(),
            limit: v.limit.get().cloned(),
            measured_bps: v.measured_bps.get().copied(),
            predicted_bps: v.predicted_bps.get().copied(),
            link_bps: v.link_bps.get().copied(),
            confidence: v.confidence.get().cloned(),
            fixes: v
                .fixes
                .get()
                .into_iter()
                .flatten()
                .map(|f| Fix::of(&f.0))
                .collect(),
            evidence: (v.evidence.get().into_iter().flatten())
                .map(|e| Evidence::of(&e.0))
                .collect(),
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
    fn of(f: &FixView) -> Fix {
        Fix {
            os: f.os.get().cloned().unwrap_or_default(),
            note: f.note.get().cloned().unwrap_or_default(),
            expected_bps: f.expected_bps.get().copied(),
            commands: f
                .commands
                .get()
                .map(|c| {
                    c.iter()
                        .map(|l| l.get().cloned().unwrap_or_default())
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

impl Evidence {
    fn of(e: &EvidenceView) -> Evidence {
        Evidence {
            what: e.what.get().cloned().unwrap_or_default(),
            value: e.value.get().copied(),
            unit: e.unit.get().cloned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::views::Extras;

    /// The diagnosis of a document holding `diagnosis`, if it is an object.
    fn diagnosis(text: &str) -> Option<Diagnosis> {
        let doc = plumb_record::Document::parse(&format!(r#"{{"diagnosis": {text}}}"#))
            .expect("a document");
        Extras::of(&doc).diagnosis.as_ref().map(Diagnosis::of)
    }

    #[test]
    fn a_verdict_with_its_fixes_and_evidence() {
        let d = diagnosis(
            r#"{
            "summary": "Limited by the receive window", "limit": "receive_window",
            "measured_bps": 9.3e6, "predicted_bps": 9.4e6, "confidence": "high",
            "fixes": [
                {"os": "macos", "note": "raise it", "commands": ["sysctl a=1", 2]},
                {"os": "linux", "note": "raise rmem", "expected_bps": 9e8}
            ],
            "evidence": [{"what": "window", "value": 17520, "unit": "B"}]
        }"#,
        )
        .expect("an object");
        assert_eq!(d.summary.as_deref(), Some("Limited by the receive window"));
        assert_eq!((d.measured_bps, d.link_bps), (Some(9.3e6), None));
        assert_eq!(d.fixes[0].commands, ["sysctl a=1", ""]);
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
    fn missing_keys_and_wrong_types() {
        assert_eq!(diagnosis("null"), None);
        assert_eq!(diagnosis(r#""receive window""#), None);
        let d = diagnosis(
            r#"{"predicted_bps": "9e6", "fixes": {"os": "linux"}, "evidence": [{"value": "x"}]}"#,
        )
        .expect("an object");
        assert_eq!(d.predicted_bps, None);
        assert!(d.fixes.is_empty() && d.linux_fix().is_none());
        assert_eq!(d.evidence, vec![Evidence::default()]);
        // Without a Linux fix, the first stands for it.
        let d = diagnosis(r#"{"fixes": [{"os": "macos"}, {}]}"#).expect("an object");
        assert_eq!(d.linux_fix().map(|f| f.os.as_str()), Some("macos"));
    }
}
