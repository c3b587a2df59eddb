//! The results message both sides exchange at the end of a test (spec §6), typed.
//!
//! This module owns [`Results`] and its encoding: the iperf3 keys in iperf3's
//! order with its JSON types, signed `-1` on output, both −1 spellings, ints
//! for floats and missing `start_time`/`end_time`/`omitted_*` on input. It
//! also owns plumb's extension object, sent under `"plumb"`, which iperf3
//! ignores. How a receiver matches streams by ID is the driver's business.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::lenient;

/// One side's results.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Results {
    /// Process CPU use, percent, user + system.
    #[serde(serialize_with = "lenient::finite")]
    pub cpu_util_total: f64,
    /// Process CPU use in user mode, percent.
    #[serde(serialize_with = "lenient::finite")]
    pub cpu_util_user: f64,
    /// Process CPU use in kernel mode, percent.
    #[serde(serialize_with = "lenient::finite")]
    pub cpu_util_system: f64,
    /// 1 = this side sends and has TCP retransmit counts, 0 = sends without
    /// counts (UDP), −1 = only receives.
    #[serde(deserialize_with = "lenient::signed")]
    pub sender_has_retransmits: i64,
    /// TCP congestion control algorithm in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion_used: Option<String>,
    /// The server's text report, when the client asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output_text: Option<String>,
    /// The server's whole `-J` document, when asked for and the server runs with `-J`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output_json: Option<serde_json::Value>,
    /// One entry per local stream, in local order (both directions in bidir).
    pub streams: Vec<StreamResult>,
    /// plumb↔plumb extras; iperf3 ignores the key, and an entry that does not
    /// parse is dropped rather than failing the exchange.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::ignore_invalid"
    )]
    pub plumb: Option<PlumbResults>,
}

/// One stream's counters in a [`Results`] message.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StreamResult {
    /// Stream ID (1, 3, 4, … — see [`crate::stream_id`]).
    #[serde(deserialize_with = "lenient::unsigned32")]
    pub id: u32,
    /// Bytes sent (sender) or received (receiver) after the omit period.
    #[serde(deserialize_with = "lenient::unsigned")]
    pub bytes: u64,
    /// TCP retransmits (sender with counts), else −1.
    #[serde(deserialize_with = "lenient::signed")]
    pub retransmits: i64,
    /// UDP jitter in seconds (receiver), else 0.
    #[serde(serialize_with = "lenient::finite")]
    pub jitter: f64,
    /// Lost UDP datagrams (receiver), else 0.
    #[serde(deserialize_with = "lenient::signed")]
    pub errors: i64,
    /// `errors` at the end of the omit period, for the peer to subtract (3.14+).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_signed"
    )]
    pub omitted_errors: Option<i64>,
    /// `packets` at the end of the omit period (3.14+; sent together with `omitted_errors`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_signed"
    )]
    pub omitted_packets: Option<i64>,
    /// Datagrams sent (sender) or highest sequence number seen (receiver); 0 for TCP.
    #[serde(deserialize_with = "lenient::signed")]
    pub packets: i64,
    /// Always 0 in practice; absent from pre-3.2 peers.
    #[serde(default, serialize_with = "lenient::finite")]
    pub start_time: f64,
    /// The stream's run time in seconds; absent from pre-3.2 peers.
    #[serde(default, serialize_with = "lenient::finite")]
    pub end_time: f64,
}

/// plumb↔plumb result extras, sent under `"plumb"`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PlumbResults {
    /// The sending plumb's version.
    pub version: String,
    /// System-wide CPU use during the test (not just this process).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_system_wide: Option<CpuTimes>,
    /// Relevant sysctl values, e.g. `net.ipv4.tcp_rmem`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub sysctl: BTreeMap<String, String>,
    /// Per-stream socket facts, matched to [`StreamResult`]s by `id`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<PlumbStreamInfo>,
}

/// System-wide CPU time shares over the test, percent of all CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuTimes {
    /// User mode.
    #[serde(serialize_with = "lenient::finite")]
    pub user: f64,
    /// User mode at low priority.
    #[serde(serialize_with = "lenient::finite")]
    pub nice: f64,
    /// Kernel mode, excluding interrupts.
    #[serde(serialize_with = "lenient::finite")]
    pub system: f64,
    /// Hard interrupts.
    #[serde(serialize_with = "lenient::finite")]
    pub irq: f64,
    /// Soft interrupts — where much of the network stack runs.
    #[serde(serialize_with = "lenient::finite")]
    pub softirq: f64,
    /// Waiting for I/O.
    #[serde(serialize_with = "lenient::finite")]
    pub iowait: f64,
    /// Taken by the hypervisor.
    #[serde(serialize_with = "lenient::finite")]
    pub steal: f64,
    /// Idle.
    #[serde(serialize_with = "lenient::finite")]
    pub idle: f64,
}

/// Socket facts about one stream that iperf3's results do not carry.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PlumbStreamInfo {
    /// The stream ID this describes.
    pub id: u32,
    /// SO_SNDBUF as the kernel reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sndbuf_actual: Option<u32>,
    /// SO_RCVBUF as the kernel reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rcvbuf_actual: Option<u32>,
    /// TCP_WINDOW_CLAMP in effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_clamp: Option<u32>,
    /// TCP_MAXSEG in effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mss: Option<u32>,
    /// Congestion control algorithm of this socket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
    /// TCP_INFO at the end of the test.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_info: Option<TcpInfoSummary>,
}

/// The TCP_INFO fields plumb's diagnosis uses; `None` where the kernel lacks one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TcpInfoSummary {
    /// Time with data in flight, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_time_us: Option<u64>,
    /// Time limited by the receive window, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rwnd_limited_us: Option<u64>,
    /// Time limited by the send buffer, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sndbuf_limited_us: Option<u64>,
    /// Most recent delivery rate, bits/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery_rate_bps: Option<u64>,
    /// Minimum RTT seen, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rtt_us: Option<u64>,
    /// Smoothed RTT, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<u64>,
    /// RTT variance, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rttvar_us: Option<u64>,
    /// Congestion window, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snd_cwnd_bytes: Option<u64>,
    /// Peer's advertised window, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snd_wnd: Option<u64>,
    /// Segments retransmitted over the connection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_retrans: Option<u64>,
    /// Bytes retransmitted over the connection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_retrans: Option<u64>,
    /// Path MTU, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pmtu: Option<u64>,
    /// Sender MSS, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snd_mss: Option<u64>,
    /// Receiver's space estimate (drives receive-buffer autotuning), bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rcv_space: Option<u64>,
}
