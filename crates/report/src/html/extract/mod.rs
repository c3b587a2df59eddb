//! The `-J` document read into the typed values the page is drawn from.
//!
//! Everything below [`crate::html`]'s charts, panels and page takes a
//! [`Document`] (or a part of one), built here from the record's types
//! ([`plumb_record::Document`]). A key that is missing reads as absent
//! (`None`, an empty series): the page leaves out what the document does
//! not say. Only what makes a document no report at all is a
//! [`BadDocument`].

pub mod bad;
pub mod config;
pub mod diagnosis;
pub mod latency;
pub mod live;
mod real;
pub mod series;

use crate::top::TopData;

use bad::BadDocument;
use config::Config;
use diagnosis::Diagnosis;
use latency::Latency;
use live::Live;
use real::num;
use series::RunData;

/// One document to report on.
#[derive(Debug, Clone)]
pub struct Input {
    /// Its name on the page (the file name).
    pub name: String,
    /// The `-J` document.
    pub doc: plumb_record::Document,
}

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
        let top = crate::top::top_data(doc);
        Ok(Document {
            name: i.name.clone(),
            run: series::run_data_with(doc, top.as_ref())?,
            error: doc.error.clone(),
            diagnosis: diagnosis::verdict_of(doc).map(Diagnosis::of),
            config: Config::of(doc),
            latency: latency::latency(doc),
            live: Live::of(doc),
            top,
            received_bps: doc
                .end
                .as_ref()
                .and_then(|e| e.sum_received.as_ref())
                .and_then(|s| num(s.bits_per_second())),
            model_predicted_bps: doc.model.as_ref().and_then(|m| num(m.predicted_bps)),
            version: doc.start.as_ref().and_then(|s| s.version.clone()),
        })
    }

    /// Whether this is the record of a test, which the page compares with
    /// other tests: not a `plumb top` log nor running connections.
    pub fn is_test(&self) -> bool {
        self.top.is_none() && self.live.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(text: &str) -> Input {
        Input {
            name: "t.json".into(),
            doc: plumb_record::Document::parse(text).expect("a document"),
        }
    }

    #[test]
    fn a_document_is_read_once_into_its_parts() {
        let d = Document::of(&input(
            r#"{
            "start": {"version": "plumb 0.1.0"},
            "intervals": [],
            "end": {"sum_received": {"start": 0, "end": 1, "seconds": 1, "bytes": 1,
                                     "bits_per_second": 9.4e8}},
            "diagnosis": {"summary": "s", "limit": "receive_window"},
            "error": "cut short"
        }"#,
        ))
        .expect("a report");
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
        let d = Document::of(&input(
            r#"{"start": {}, "intervals": [], "end": {}, "diagnosis": "none"}"#,
        ))
        .expect("a report");
        assert_eq!(d.run.producer, "unknown program");
        assert_eq!((d.error, d.diagnosis, d.received_bps), (None, None, None));
        assert_eq!(d.version, None);
        // Not a report at all: said, with why.
        let e = Document::of(&input(r#"{"intervals": []}"#)).expect_err("no start");
        assert!(e.0.contains("no \"start\""), "{e}");
    }
}
