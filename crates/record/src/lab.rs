//! The top-level `lab` object of a `plumb lab` document: the emulated link
//! as configured, as its probes measured it, and how the emulator kept up.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{nullable, Real};

/// `lab`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lab {
    /// The link asked for.
    pub configured: LabConfigured,
    /// The link as probed before the test (`null`: not probed).
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub measured: Option<Option<LabMeasured>>,
    /// How the emulator forwarded the test's traffic.
    pub emulator: LabEmulator,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `lab.configured`: the emulated link's settings (`null`: not set).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabConfigured {
    /// Link rate, bit/s.
    pub rate_bps: Real,
    /// Round-trip time, ms.
    pub rtt_ms: Real,
    /// Loss probability.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub loss: Option<Option<Real>>,
    /// Mean loss burst length.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub loss_burst: Option<Option<Real>>,
    /// Queue size as given (`64k`, `1bdp`).
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub queue: Option<Option<String>>,
    /// Delay jitter, ms.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub jitter_ms: Option<Option<Real>>,
    /// Random seed of loss and jitter.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub seed: Option<Option<u64>>,
    /// `--drop-over`: packets over this many IP bytes are dropped, both
    /// ways, with no ICMP (a path-MTU black hole); absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop_over_bytes: Option<u64>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `lab.measured`: the link as probed before the test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabMeasured {
    /// Smallest round trip, ms.
    pub rtt_min_ms: Real,
    /// Median round trip, ms.
    pub rtt_median_ms: Real,
    /// Rate, bit/s (`null`: not measured).
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub rate_bps: Option<Option<Real>>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `lab.emulator`: the near-to-far direction's forwarding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabEmulator {
    /// Segments delivered.
    pub segments_delivered: u64,
    /// Segments dropped at a full queue.
    pub segments_dropped_queue: u64,
    /// Segments dropped by the loss setting.
    pub segments_dropped_loss: u64,
    /// Deepest queue, bytes.
    pub max_queue_bytes: u64,
    /// Median lateness of a release, µs (`null`: nothing released).
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub release_error_p50_us: Option<Option<Real>>,
    /// 99th percentile lateness, µs.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub release_error_p99_us: Option<Option<Real>>,
    /// 99.9th percentile lateness, µs.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub release_error_p999_us: Option<Option<Real>>,
    /// Largest lateness, µs.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub release_error_max_us: Option<Option<Real>>,
    /// The forwarding threads ran at real-time priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realtime: Option<bool>,
    /// The forwarding threads polled rather than slept when idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_poll: Option<bool>,
    /// Segments the black hole (`--drop-over`) dropped near to far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments_dropped_too_big: Option<u64>,
    /// The same far to near (the results, the ACKs of a reverse test).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments_dropped_too_big_far_to_near: Option<u64>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
