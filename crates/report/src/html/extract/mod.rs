//! The `-J` document read into the typed values the page is drawn from.
//!
//! This is the one place the report reads `serde_json::Value`: everything
//! below [`crate::html`]'s charts, panels and page takes a [`Document`] (or
//! a part of one) and never looks at JSON. A key that is missing or holds
//! the wrong type reads as absent (`None`, an empty series): the page
//! leaves out what the document does not say. Only what makes a document
//! no report at all is a [`BadDocument`].

pub mod config;
pub mod diagnosis;
pub mod latency;
pub mod live;
pub mod series;

use serde_json::Value;

use crate::top::TopData;

use config::Config;
use diagnosis::Diagnosis;
use latency::Latency;
use live::Live;
use series::RunData;

/// One document to report on.
#[derive(Debug, Clone)]
pub struct Input {
    /// Its name on the page (the file name).
    pub name: String,
    /// The `-J` document.
    pub doc: Value,
}

/// Why a document cannot be reported on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadDocument(pub String);

impl std::fmt::Display for BadDocument {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadDocument {}

/// One document as the page draws it: every value a panel, a chart or the
/// comparison shows, read once.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// Its name on the page.
    pub name: String,
    /// The series over time, and who wrote the document.
    pub run: RunData,
    /// The test's error (`error`), when it failed.
    pub error: Option<String>,
    /// The verdict (`diagnosis`), when the document holds one as an object.
    pub diagnosis: Option<Diagnosis>,
    /// The test's setup and both hosts, when there was a test (`start`).
    pub config: Option<Config>,
    /// What the test measured of latency (`end.plumb.latency`).
    pub latency: Option<Latency>,
    /// `plumb why` on running connections.
    pub live: Option<Live>,
    /// A `plumb top --json` log.
    pub top: Option<TopData>,
    /// The receiver's total rate (`end.sum_received.bits_per_second`).
    pub received_bps: Option<f64>,
    /// The rate the model alone predicts (`model.predicted_bps`), bit/s.
    pub model_predicted_bps: Option<f64>,
    /// The writer's version string (`start.version`), when it is a string.
    pub version: Option<String>,
}

impl Document {
    /// Reads everything the page shows of `i`.
    pub fn of(i: &Input) -> Result<Document, BadDocument> {
        let doc = &i.doc;
        Ok(Document {
            name: i.name.clone(),
            run: series::run_data(doc)?,
            error: doc["error"].as_str().map(str::to_string),
            diagnosis: Diagnosis::of(&doc["diagnosis"]),
            config: Config::of(doc),
            latency: latency::latency(doc),
            live: Live::of(doc),
            top: TopData::from_doc(doc),
            received_bps: num(&doc["end"]["sum_received"]["bits_per_second"]),
            model_predicted_bps: num(&doc["model"]["predicted_bps"]),
            version: doc["start"]["version"].as_str().map(str::to_string),
        })
    }

    /// Whether this is the record of a test, which the page compares with
    /// other tests: not a `plumb top` log nor running connections.
    pub fn is_test(&self) -> bool {
        self.top.is_none() && self.live.is_none()
    }
}

/// A finite number, or nothing (a string, `null`, a missing key).
pub(crate) fn num(v: &Value) -> Option<f64> {
    v.as_f64().filter(|x| x.is_finite())
}

/// A scalar as the document wrote it (`"cubic"`, `5201`, `true`); nothing
/// for `null`, an array or an object.
pub(crate) fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(doc: Value) -> Input {
        Input {
            name: "t.json".into(),
            doc,
        }
    }

    #[test]
    fn scalars_and_numbers() {
        assert_eq!(num(&json!(1.5)), Some(1.5));
        assert_eq!(num(&json!("1.5")), None);
        assert_eq!(num(&Value::Null), None);
        assert_eq!(text(&json!(5201)), Some("5201".into()));
        assert_eq!(text(&json!(true)), Some("true".into()));
        assert_eq!(text(&json!({"a": 1})), None);
    }

    #[test]
    fn a_document_is_read_once_into_its_parts() {
        let doc = json!({
            "start": {"version": "plumb 0.1.0", "test_start": {"protocol": "TCP"}},
            "intervals": [],
            "end": {"sum_received": {"bits_per_second": 9.4e8}},
            "diagnosis": {"summary": "s", "limit": "receive_window"},
            "error": "cut short",
        });
        let d = Document::of(&input(doc)).expect("a report");
        assert_eq!(d.name, "t.json");
        assert_eq!(d.run.producer, "plumb 0.1.0");
        assert_eq!(d.error.as_deref(), Some("cut short"));
        assert_eq!(d.received_bps, Some(9.4e8));
        assert_eq!(d.version.as_deref(), Some("plumb 0.1.0"));
        assert!(d.config.is_some() && d.latency.is_none() && d.is_test());
        assert_eq!(
            d.diagnosis.and_then(|g| g.limit).as_deref(),
            Some("receive_window")
        );
    }

    #[test]
    fn missing_keys_and_wrong_types_read_as_absent() {
        let doc = json!({
            "start": {"version": 3},
            "intervals": [],
            "end": {"sum_received": {"bits_per_second": "fast"}},
            "diagnosis": "none",
            "error": 7,
        });
        let d = Document::of(&input(doc)).expect("a report");
        assert_eq!(d.run.producer, "unknown program");
        assert_eq!((d.error, d.diagnosis, d.received_bps), (None, None, None));
        assert_eq!(d.version, None);
        // Not a report at all: said, with why.
        let e = Document::of(&input(json!({"intervals": []}))).expect_err("no start");
        assert!(e.0.contains("no \"start\""), "{e}");
    }
}
