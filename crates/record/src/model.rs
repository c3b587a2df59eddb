//! The top-level `model` object of a `plumb lab` document: the throughput
//! plumb's model predicted for the link, beside what was measured.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{nullable, Real};

/// `model`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// Predicted goodput, bit/s.
    pub predicted_bps: Real,
    /// What limits it (`"link"`, `"window"`, `"application"`, …).
    pub limit: String,
    /// Measured goodput, bit/s (`null`: the test ended before its summary).
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub measured_bps: Option<Option<Real>>,
    /// The window the prediction assumed, bytes (`null`: none binds).
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub window_bytes: Option<Option<u64>>,
    /// Streams.
    pub streams: u64,
    /// The link's goodput, bit/s (`null`: unknown).
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub link_goodput_bps: Option<Option<Real>>,
    /// `--latency`: the delay the link's full queue adds, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_delay_ms: Option<Real>,
    /// `--latency`: the loaded round trip that delay makes, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_rtt_ms: Option<Real>,
    /// `--latency`: what the load added to the median round trip, as the
    /// client's probes measured it, ms (`null`: not measured).
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub measured_increase_p50_ms: Option<Option<Real>>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
