//! [`Document`]: the whole `-J` document, iperf3's top-level keys and the
//! ones plumb adds.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{End, Interval, Lab, Model, Start};

/// One test's `-J` document (or a document plumb derives from one).
///
/// `start`, `intervals` and `end` are there in every iperf3 document and in
/// plumb's; the documents of `plumb live` have none of them. `plumb lab`
/// adds `lab` and `model`. The other objects plumb adds beside them —
/// `diagnosis`, and `live`'s `connections` and `live` — are carried in
/// [`Document::extra`] as read: their schema is the diagnosis's.
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
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
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
