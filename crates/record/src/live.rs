//! The parts of the `-J` document of `plumb why` on running connections
//! (a [`crate::Document`] with `live`, `connections` and `diagnosis`, the
//! first row's diagnosis that there is, `null` for none): the filter and
//! the sampling time ([`LiveSampling`]) and one row per connection
//! ([`ConnectionRow`]: who, which way the data goes, its rate and its
//! diagnosis).

use serde::{Deserialize, Serialize};

use crate::class::FlowClass;
use crate::diagnosis::Diagnosis;

/// `live`: the filter in words and the seconds sampled. Read, a key left
/// out takes its empty value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LiveSampling {
    /// The filter, in words (`--port 5201`).
    pub filter: String,
    /// Seconds sampled.
    pub seconds: f64,
}

/// One connection. Read, a key left out takes its empty value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConnectionRow {
    /// Local address and port.
    pub local: String,
    /// Remote address and port.
    pub remote: String,
    /// Local port.
    pub local_port: u16,
    /// Remote port.
    pub remote_port: u16,
    /// The owning process (`null`: unknown).
    pub pid: Option<u32>,
    /// Its command name (`null`: unknown).
    pub command: Option<String>,
    /// The congestion control (`null`: not reported).
    pub congestion: Option<String>,
    /// `sender`, `receiver` or `idle`.
    pub this_host: String,
    /// Its class over the period (`null`: nothing measured).
    pub class: Option<FlowClass>,
    /// The class rule that fits, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_why: Option<String>,
    /// The connection closed while sampled.
    pub closed: bool,
    /// Its rate, bit/s (left out when there were too few samples).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<f64>,
    /// Samples taken (left out when there were too few).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<u32>,
    /// `plumb why`'s diagnosis object (`null`: nothing to measure).
    pub diagnosis: Option<Diagnosis>,
    /// Why there is no diagnosis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}
