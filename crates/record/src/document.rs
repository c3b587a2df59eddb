//! [`Document`]: the whole `-J` document, iperf3's top-level keys and the
//! ones plumb adds.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::diagnosis::Diagnosis;
use crate::{ConnectionRow, End, Interval, Lab, LiveSampling, Model, Start, TopLine};

/// One test's `-J` document (or a document plumb derives from one).
///
/// `start`, `intervals` and `end` are there in every iperf3 document and in
/// plumb's; the documents of `plumb why` on running connections have none
/// of them, and `live` and `connections` instead. `plumb lab` adds `lab`
/// and `model`; `plumb why` and `plumb lab --why` add `diagnosis`, written
/// last. These objects plumb adds are read leniently (`tolerant`): one
/// that is not what plumb writes reads as absent rather than failing the
/// document, as a page drawn from it would leave it out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// What was set up before data flowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Start>,
    /// Every reporting interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervals: Option<Vec<Interval>>,
    /// The totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<End>,
    /// `-T` title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `--extra-data`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_data: Option<String>,
    /// `--get-server-output` from a server without `-J`: its text report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output_text: Option<String>,
    /// `--get-server-output` from a server with `-J`: its document, as the
    /// server (any iperf3) wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output_json: Option<Value>,
    /// The first error, when the test failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `plumb lab`: the emulated link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab: Option<Lab>,
    /// `plumb lab`: the model's prediction for the link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Model>,
    /// `plumb why` on running connections: what was sampled.
    #[serde(
        default,
        deserialize_with = "tolerant::or_absent",
        skip_serializing_if = "Option::is_none"
    )]
    pub live: Option<LiveSampling>,
    /// `plumb why` on running connections: one row per connection.
    #[serde(
        default,
        deserialize_with = "tolerant::or_absent",
        skip_serializing_if = "Option::is_none"
    )]
    pub connections: Option<Vec<ConnectionRow>>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// The diagnosis (`null` in a document of running connections where
    /// none was found; see [`crate::nullable`]).
    #[serde(
        default,
        deserialize_with = "tolerant::nullable_or_absent",
        skip_serializing_if = "Option::is_none"
    )]
    pub diagnosis: Option<Option<Diagnosis>>,
    /// A `plumb top --json` log read whole: its rows, in the log's order.
    /// A log is one JSON object a line, not one document, so this is never
    /// a key of a document's JSON; a reader of logs fills it.
    #[serde(skip)]
    pub top_rows: Option<Vec<TopLine>>,
}

impl Document {
    /// The document with `diagnosis` as its diagnosis, in place of any it
    /// carried: `plumb why -J` and `plumb lab --why -J` write it so, the
    /// document's keys first and `diagnosis` last.
    pub fn with_diagnosis(self, diagnosis: Diagnosis) -> Document {
        Document {
            diagnosis: Some(Some(diagnosis)),
            ..self
        }
    }
}

/// Reading the objects plumb adds, leniently: what is not one of them
/// reads as absent.
mod tolerant {
    use serde::de::IgnoredAny;
    use serde::{Deserialize, Deserializer};

    /// A `T`, else nothing.
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OrNot<T> {
        Is(T),
        Not(IgnoredAny),
    }

    /// A `T`, `null`, else nothing.
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NullOrNot<T> {
        Is(T),
        Null(()),
        Not(IgnoredAny),
    }

    /// A key that holds a `T`; anything else reads as absent.
    pub(super) fn or_absent<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        Ok(match OrNot::deserialize(d)? {
            OrNot::Is(v) => Some(v),
            OrNot::Not(_) => None,
        })
    }

    /// A key that holds a `T` or `null` (`Some(None)`); anything else reads
    /// as absent.
    pub(super) fn nullable_or_absent<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        Ok(match NullOrNot::deserialize(d)? {
            NullOrNot::Is(v) => Some(Some(v)),
            NullOrNot::Null(()) => Some(None),
            NullOrNot::Not(_) => None,
        })
    }
}

impl Document {
    /// Reads a document from its text. Goes through a `Value`, so that a key
    /// written twice keeps its last value as other JSON readers do: iperf3
    /// 3.12 writes `start.sock_bufsize` and its neighbours once per stream,
    /// which `serde_json::from_str::<Document>` refuses as a duplicate field.
    pub fn parse(text: &str) -> serde_json::Result<Self> {
        Self::from_value(serde_json::from_str(text)?)
    }

    /// Reads a document from a `Value`.
    pub fn from_value(v: Value) -> serde_json::Result<Self> {
        serde_json::from_value(v)
    }

    /// The document as a `Value`.
    pub fn to_value(&self) -> Value {
        // Serializing these types cannot fail: every map key is a string and
        // every number is finite or written as null.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
