//! An entry of `intervals`: every stream over one reporting interval, and
//! their sums.
//!
//! iperf3 writes one object shape for TCP and UDP streams, with the keys of
//! the kind at hand: TCP_INFO figures for a sending TCP stream, `packets`
//! for a sending UDP stream, loss and jitter for a receiving one.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Real;

/// One reporting interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Every stream, in local order.
    pub streams: Vec<IntervalStream>,
    /// The forward direction's sum (every stream, outside `--bidir`).
    pub sum: IntervalSum,
    /// `--bidir`: the reverse direction's sum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_bidir_reverse: Option<IntervalSum>,
    /// plumb's figures for the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plumb: Option<IntervalPlumb>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One stream over one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalStream {
    /// The stream's local identifier.
    pub socket: i32,
    /// Interval start, seconds from the test's start.
    pub start: Real,
    /// Interval end.
    pub end: Real,
    /// `end - start`.
    pub seconds: Real,
    /// Bytes sent (a sender) or received (a receiver).
    pub bytes: u64,
    /// `bytes` as a rate.
    pub bits_per_second: Real,
    /// Sending TCP: segments retransmitted in the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<i64>,
    /// Sending TCP: congestion window, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snd_cwnd: Option<u64>,
    /// Sending TCP: the peer's advertised window, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snd_wnd: Option<u64>,
    /// Sending TCP: smoothed RTT, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt: Option<u64>,
    /// Sending TCP: RTT variance, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rttvar: Option<u64>,
    /// Sending TCP: path MTU, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pmtu: Option<u64>,
    /// Sending TCP: reordering seen (iperf3 3.20+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder: Option<u64>,
    /// Sending TCP: what limited the stream, from TCP_INFO (plumb only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plumb: Option<LimitedTime>,
    /// Receiving UDP: RFC 3550 jitter, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<Real>,
    /// Receiving UDP: datagrams lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<i64>,
    /// UDP: datagrams sent (a sender) or expected (a receiver).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets: Option<i64>,
    /// Receiving UDP: `lost_packets` as a percentage of `packets`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_percent: Option<Real>,
    /// Inside the `-O` omit period.
    pub omitted: bool,
    /// The local stream sends (iperf3 3.2+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<bool>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A direction's sum over one interval (`sum`, `sum_bidir_reverse`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalSum {
    /// Earliest stream start.
    pub start: Real,
    /// Latest stream end.
    pub end: Real,
    /// `end - start`.
    pub seconds: Real,
    /// Bytes of every stream.
    pub bytes: u64,
    /// `bytes` as a rate.
    pub bits_per_second: Real,
    /// Sending TCP: retransmits of every stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<i64>,
    /// Receiving UDP: mean jitter of the streams, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<Real>,
    /// Receiving UDP: datagrams lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<i64>,
    /// UDP: datagrams sent or expected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets: Option<i64>,
    /// Receiving UDP: loss, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_percent: Option<Real>,
    /// Any stream inside the omit period.
    pub omitted: bool,
    /// The streams send (iperf3 3.2+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<bool>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `intervals[].streams[].plumb`: time a sending TCP stream had data in
/// flight over the interval, and the parts of it the receive window and the
/// send buffer held it back, µs (differences of TCP_INFO's `busy_time`,
/// `rwnd_limited`, `sndbuf_limited`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitedTime {
    /// Time with data in flight.
    pub busy_us: u64,
    /// Time limited by the peer's receive window.
    pub rwnd_limited_us: u64,
    /// Time limited by the send buffer.
    pub sndbuf_limited_us: u64,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `intervals[].plumb`: plumb's figures for one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalPlumb {
    /// Request/response tests: the interval's latency and rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<crate::IntervalLatency>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
