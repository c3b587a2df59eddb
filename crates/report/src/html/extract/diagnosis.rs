//! A verdict as the page shows it ([`Diagnosis`]): the `diagnosis` object
//! `plumb why` and `plumb lab --why` write, for a test or for each running
//! connection: its summary and rates, the fixes per system and the evidence.

use serde_json::Value;

use super::num;

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
    /// Reads `v`, if it is an object.
    pub fn of(v: &Value) -> Option<Diagnosis> {
        if !v.is_object() {
            return None;
        }
        let string = |k: &str| v[k].as_str().map(str::to_string);
        let list = |k: &str| v[k].as_array().map_or(&[][..], Vec::as_slice);
        Some(Diagnosis {
            summary: string("summary"),
            limit: string("limit"),
            measured_bps: num(&v["measured_bps"]),
            predicted_bps: num(&v["predicted_bps"]),
            link_bps: num(&v["link_bps"]),
            confidence: string("confidence"),
            fixes: list("fixes").iter().map(Fix::of).collect(),
            evidence: list("evidence").iter().map(Evidence::of).collect(),
        })
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
    fn of(f: &Value) -> Fix {
        let s = |v: &Value| v.as_str().unwrap_or("").to_string();
        Fix {
            os: s(&f["os"]),
            note: s(&f["note"]),
            expected_bps: num(&f["expected_bps"]),
            commands: f["commands"]
                .as_array()
                .map(|c| c.iter().map(s).collect())
                .unwrap_or_default(),
        }
    }
}

impl Evidence {
    fn of(e: &Value) -> Evidence {
        Evidence {
            what: e["what"].as_str().unwrap_or("").to_string(),
            value: num(&e["value"]),
            unit: e["unit"].as_str().map(str::to_string),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_verdict_with_its_fixes_and_evidence() {
        let d = Diagnosis::of(&json!({
            "summary": "Limited by the receive window", "limit": "receive_window",
            "measured_bps": 9.3e6, "predicted_bps": 9.4e6, "confidence": "high",
            "fixes": [
                {"os": "macos", "note": "raise it", "commands": ["sysctl a=1", 2]},
                {"os": "linux", "note": "raise rmem", "expected_bps": 9e8},
            ],
            "evidence": [{"what": "window", "value": 17520, "unit": "B"}],
        }))
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
        assert_eq!(Diagnosis::of(&Value::Null), None);
        assert_eq!(Diagnosis::of(&json!("receive window")), None);
        let d = Diagnosis::of(&json!({"predicted_bps": "9e6", "fixes": {"os": "linux"},
                                       "evidence": [{"value": "x"}]}))
        .expect("an object");
        assert_eq!(d.predicted_bps, None);
        assert!(d.fixes.is_empty() && d.linux_fix().is_none());
        assert_eq!(d.evidence, vec![Evidence::default()]);
        // Without a Linux fix, the first stands for it.
        let d = Diagnosis::of(&json!({"fixes": [{"os": "macos"}, {}]})).expect("an object");
        assert_eq!(d.linux_fix().map(|f| f.os.as_str()), Some("macos"));
    }
}
