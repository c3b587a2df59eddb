//! The `end` object: every stream's totals from both ends, their sums, CPU
//! use, and plumb's evidence under `end.plumb`.
//!
//! A test that fails before its end writes `"end": {}`, so every key of
//! [`End`] is optional. A TCP stream's totals are a `sender` and a
//! `receiver` side; a UDP stream's one `udp` object. The sums have a TCP
//! and a UDP shape ([`EndSum`]).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{EndPlumb, Real};

/// iperf3's `end`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct End {
    /// Every stream, in local order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<Vec<EndStream>>,
    /// UDP: the forward direction's receiving totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum: Option<EndSum>,
    /// What the forward direction's senders sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_sent: Option<EndSum>,
    /// What the forward direction's receivers received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_received: Option<EndSum>,
    /// `--bidir` UDP: the reverse direction's receiving totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_bidir_reverse: Option<EndSum>,
    /// `--bidir`: what the reverse direction's senders sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_sent_bidir_reverse: Option<EndSum>,
    /// `--bidir`: what the reverse direction's receivers received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_received_bidir_reverse: Option<EndSum>,
    /// CPU use of both ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_utilization_percent: Option<CpuUtilization>,
    /// TCP: congestion control of the sending end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_tcp_congestion: Option<String>,
    /// TCP: congestion control of the receiving end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_tcp_congestion: Option<String>,
    /// plumb's evidence beyond iperf3's schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plumb: Option<EndPlumb>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// An entry of `end.streams`: `sender` and `receiver` for TCP, `udp` for UDP.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EndStream {
    /// TCP: the sending end's totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<TcpEndSide>,
    /// TCP: the receiving end's totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver: Option<TcpEndSide>,
    /// UDP: the stream's totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpEndStream>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One side of a TCP stream's totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TcpEndSide {
    /// The stream's local identifier.
    pub socket: i32,
    /// Start, seconds (0).
    pub start: Real,
    /// End, seconds.
    pub end: Real,
    /// Seconds the stream ran on this side.
    pub seconds: Real,
    /// Bytes moved after the omit period.
    pub bytes: u64,
    /// `bytes` as a rate.
    pub bits_per_second: Real,
    /// The sender: segments retransmitted, where counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<i64>,
    /// The sender: largest congestion window, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_snd_cwnd: Option<u64>,
    /// The sender: largest peer window, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_snd_wnd: Option<u64>,
    /// The sender: largest smoothed RTT, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rtt: Option<u64>,
    /// The sender: smallest smoothed RTT, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rtt: Option<u64>,
    /// The sender: mean smoothed RTT, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_rtt: Option<u64>,
    /// The sender: reordering seen (iperf3 3.20+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder: Option<u64>,
    /// The local stream sends (iperf3 3.2+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<bool>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A UDP stream's totals: the sender's bytes and duration with the
/// receiver's loss figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UdpEndStream {
    /// The stream's local identifier.
    pub socket: i32,
    /// Start, seconds (0).
    pub start: Real,
    /// End, seconds.
    pub end: Real,
    /// Seconds the sender ran.
    pub seconds: Real,
    /// Bytes sent.
    pub bytes: u64,
    /// `bytes` as a rate.
    pub bits_per_second: Real,
    /// RFC 3550 jitter at the end, ms.
    pub jitter_ms: Real,
    /// Datagrams lost.
    pub lost_packets: i64,
    /// Datagrams expected.
    pub packets: i64,
    /// Loss, percent.
    pub lost_percent: Real,
    /// Datagrams that arrived out of order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_of_order: Option<i64>,
    /// The local stream sends (iperf3 3.2+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<bool>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A direction's totals (`sum`, `sum_sent`, `sum_received` and their
/// `_bidir_reverse` twins): a UDP sum carries loss figures, a TCP one the
/// sender's retransmits. Read as UDP when the loss keys are all there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EndSum {
    /// A UDP test's sum.
    Udp(UdpSum),
    /// A TCP test's sum.
    Tcp(TcpSum),
}

/// A TCP test's direction totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TcpSum {
    /// Start, seconds (0).
    pub start: Real,
    /// The longest stream's end.
    pub end: Real,
    /// The longest stream's seconds.
    pub seconds: Real,
    /// Bytes of every stream.
    pub bytes: u64,
    /// `bytes` as a rate.
    pub bits_per_second: Real,
    /// `sum_sent`: retransmits of every stream, where counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<i64>,
    /// The local streams send (iperf3 3.2+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<bool>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A UDP test's direction totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UdpSum {
    /// Start, seconds (0).
    pub start: Real,
    /// The longest stream's end.
    pub end: Real,
    /// The longest stream's seconds.
    pub seconds: Real,
    /// Bytes of every stream.
    pub bytes: u64,
    /// `bytes` as a rate.
    pub bits_per_second: Real,
    /// Mean jitter of the streams, ms (0 in `sum_sent`).
    pub jitter_ms: Real,
    /// Datagrams lost (0 in `sum_sent`).
    pub lost_packets: i64,
    /// Datagrams expected, or sent in `sum_sent`.
    pub packets: i64,
    /// Loss, percent.
    pub lost_percent: Real,
    /// `sum_sent` is the sending side's, the others the receiving side's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<bool>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl EndSum {
    /// Bytes of every stream.
    pub fn bytes(&self) -> u64 {
        match self {
            EndSum::Udp(u) => u.bytes,
            EndSum::Tcp(t) => t.bytes,
        }
    }

    /// The rate.
    pub fn bits_per_second(&self) -> Real {
        match self {
            EndSum::Udp(u) => u.bits_per_second,
            EndSum::Tcp(t) => t.bits_per_second,
        }
    }

    /// The direction's seconds.
    pub fn seconds(&self) -> Real {
        match self {
            EndSum::Udp(u) => u.seconds,
            EndSum::Tcp(t) => t.seconds,
        }
    }
}

/// `end.cpu_utilization_percent`: CPU use of both ends, percent of one
/// CPU's time over the test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuUtilization {
    /// This process, user + system.
    pub host_total: Real,
    /// This process, user.
    pub host_user: Real,
    /// This process, system.
    pub host_system: Real,
    /// The peer process, user + system.
    pub remote_total: Real,
    /// The peer process, user.
    pub remote_user: Real,
    /// The peer process, system.
    pub remote_system: Real,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
