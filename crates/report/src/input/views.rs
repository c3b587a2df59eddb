//! The objects a document carries beside the record's types, read into
//! small typed views: `diagnosis` (`plumb why`, `plumb lab --why`) and
//! `plumb why`'s running connections (`live`, `connections`). The record
//! crate keeps them in [`Document::extra`] as read; each is deserialized
//! here once, leniently ([`Loose`]): a key of the wrong type reads as
//! absent, so one odd value does not lose the rest of the verdict.

use serde::Deserialize;

use super::loose::{Loose, Obj, Scalar};
use crate::top::TopData;
use plumb_record::Document;

/// A `diagnosis` object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct DiagnosisView {
    /// One sentence naming the limit.
    pub summary: Loose<String>,
    /// The limit's id.
    pub limit: Loose<String>,
    /// The rate measured, bit/s.
    pub measured_bps: Loose<f64>,
    /// The rate the model predicts, bit/s.
    pub predicted_bps: Loose<f64>,
    /// What the link carries, bit/s.
    pub link_bps: Loose<f64>,
    /// How sure the verdict is.
    pub confidence: Loose<String>,
    /// What to change, per system.
    pub fixes: Loose<Vec<Obj<FixView>>>,
    /// What the verdict rests on.
    pub evidence: Loose<Vec<Obj<EvidenceView>>>,
}

/// An entry of `diagnosis.fixes`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct FixView {
    /// The system's id.
    pub os: Loose<String>,
    /// What to change, in words.
    pub note: Loose<String>,
    /// The rate expected once changed, bit/s.
    pub expected_bps: Loose<f64>,
    /// The commands, one a line.
    pub commands: Loose<Vec<Loose<String>>>,
}

/// An entry of `diagnosis.evidence`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct EvidenceView {
    /// What was read.
    pub what: Loose<String>,
    /// Its value.
    pub value: Loose<f64>,
    /// Its unit.
    pub unit: Loose<String>,
}

/// `plumb why` on running connections: `live` and `connections`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveView {
    /// `live`: how the connections were chosen and sampled.
    pub about: LiveAbout,
    /// `connections`, in the document's order.
    pub connections: Vec<Obj<ConnView>>,
    /// Some entry of `connections` is not an object.
    pub stray_entry: bool,
}

/// The `live` object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct LiveAbout {
    /// The filter the connections matched.
    pub filter: Loose<String>,
    /// How long they were sampled, s.
    pub seconds: Loose<f64>,
}

/// An entry of `connections`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ConnView {
    /// This host's address and port.
    pub local: Loose<String>,
    /// The peer's.
    pub remote: Loose<String>,
    /// The owning process's command name.
    pub command: Loose<String>,
    /// Its pid.
    pub pid: Loose<u64>,
    /// `sender`, `receiver` or `idle`.
    pub this_host: Loose<String>,
    /// Its rate over the sampling, bit/s.
    pub rate_bps: Loose<f64>,
    /// Its verdict (an object, else none).
    pub diagnosis: Loose<DiagnosisObj>,
    /// Why there is no verdict.
    pub note: Loose<String>,
    /// The congestion control.
    pub congestion: Loose<String>,
    /// How many samples, as written.
    pub samples: Scalar,
    /// It closed while sampled.
    pub closed: Loose<bool>,
}

/// A `diagnosis` that is an object (anything else is no diagnosis).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiagnosisObj(pub DiagnosisView);

impl<'de> Deserialize<'de> for DiagnosisObj {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            v @ serde_json::Value::Object(_) => DiagnosisView::deserialize(v)
                .map(DiagnosisObj)
                .map_err(serde::de::Error::custom),
            _ => Err(serde::de::Error::custom("not an object")),
        }
    }
}

/// What a document carries beside the record's types, read once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extras {
    /// `diagnosis`, when it is an object.
    pub diagnosis: Option<DiagnosisView>,
    /// `live` and `connections`, when `connections` is an array and the
    /// document holds no test (`start`).
    pub live: Option<LiveView>,
    /// A `plumb top --json` log made into a document.
    pub top: Option<TopData>,
}

impl Extras {
    /// Reads the objects of `doc` that are kept in its unknown keys.
    pub fn of(doc: &Document) -> Extras {
        let diagnosis = doc
            .extra
            .get("diagnosis")
            .and_then(|v| DiagnosisObj::deserialize(v).ok())
            .map(|d| d.0);
        let live = match doc.extra.get("connections") {
            Some(serde_json::Value::Array(conns)) if doc.start.is_none() => Some(LiveView {
                about: doc
                    .extra
                    .get("live")
                    .and_then(|v| Obj::<LiveAbout>::deserialize(v).ok())
                    .map(|o| o.0)
                    .unwrap_or_default(),
                connections: conns
                    .iter()
                    .map(|c| Obj::<ConnView>::deserialize(c).unwrap_or_default())
                    .collect(),
                stray_entry: conns.iter().any(|c| !c.is_object()),
            }),
            _ => None,
        };
        Extras {
            diagnosis,
            live,
            top: super::top_log::top_data(doc),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extras(text: &str) -> Extras {
        Extras::of(&Document::parse(text).expect("a document"))
    }

    #[test]
    fn a_diagnosis_read_leniently() {
        let e = extras(
            r#"{"diagnosis": {"summary": "s", "measured_bps": "fast",
                "fixes": [{"os": "linux", "commands": ["a", 2]}, 3]}}"#,
        );
        let d = e.diagnosis.expect("an object");
        assert_eq!(d.summary.ok().as_deref(), Some("s"));
        assert_eq!(d.measured_bps, Loose::Wrong);
        let fixes = d.fixes.ok().expect("a list");
        assert_eq!(fixes.len(), 2);
        assert_eq!(fixes[1], Obj::default());
        assert!(extras(r#"{"diagnosis": "none"}"#).diagnosis.is_none());
    }

    #[test]
    fn running_connections_only_without_a_test() {
        let e = extras(r#"{"live": {"seconds": 2}, "connections": [{"pid": 7}, 1]}"#);
        let l = e.live.expect("live");
        assert_eq!(l.about.seconds.ok(), Some(2.0));
        assert_eq!(l.connections[0].0.pid.get(), Some(&7));
        assert!(l.stray_entry);
        assert!(extras(r#"{"start": {}, "connections": []}"#).live.is_none());
        assert!(extras(r#"{"connections": {}}"#).live.is_none());
    }
}
