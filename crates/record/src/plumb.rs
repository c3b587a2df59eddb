//! `end.plumb`: the evidence plumb adds to iperf3's `end`, which iperf3's
//! parsers ignore — each end's system, CPU, sysctls, cgroup quota, CPU
//! placement and per-stream socket facts, the UDP path's settings, and the
//! latency figures.
//!
//! `local` and `remote` are the two ends' `plumb` objects of the results
//! exchange (`null` for an end that sent none, a stock iperf3 peer); every
//! key in them is optional, as a peer's may lack any.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{nullable, Latency, Real};

/// `end.plumb`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EndPlumb {
    /// This end's facts (`null`: none).
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub local: Option<Option<PlumbSide>>,
    /// The peer's facts (`null`: a peer that sent none).
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub remote: Option<Option<PlumbSide>>,
    /// UDP tests: each fact from the end that plays the part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpSummary>,
    /// Request/response tests and `--latency`: the latency figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    /// A server's own document: other tests that ran alongside this one
    /// (the same count its results send as `remote.concurrent_tests`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent_tests: Option<u64>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One end's facts: `end.plumb.local` / `end.plumb.remote`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlumbSide {
    /// The end's plumb version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The end's `uname` line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// System-wide CPU use during the test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_system_wide: Option<CpuTimes>,
    /// Relevant sysctls by name (`net.ipv4.tcp_rmem`), as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sysctl: Option<BTreeMap<String, String>>,
    /// Per-stream socket facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<Vec<PlumbStream>>,
    /// A server: other tests running alongside this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent_tests: Option<u64>,
    /// UDP tests: how this end moved datagrams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<PlumbUdp>,
    /// The CPU quota of the end's cgroup, where one applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_cpu: Option<CgroupCpu>,
    /// The CPUs the test may run on (`0-3,6`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus_allowed: Option<String>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// System-wide CPU time shares over the test, percent of all CPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuTimes {
    /// User mode.
    pub user: Real,
    /// User mode at low priority.
    pub nice: Real,
    /// Kernel mode, excluding interrupts.
    pub system: Real,
    /// Hard interrupts.
    pub irq: Real,
    /// Soft interrupts.
    pub softirq: Real,
    /// Waiting for I/O.
    pub iowait: Real,
    /// Taken by the hypervisor.
    pub steal: Real,
    /// Idle.
    pub idle: Real,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One stream's socket facts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlumbStream {
    /// The stream ID of the results exchange.
    pub id: u64,
    /// SO_SNDBUF as the kernel reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf_actual: Option<u64>,
    /// A sending stream whose SO_SNDBUF was set (fixed, not autotuned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf_set: Option<bool>,
    /// SO_RCVBUF as the kernel reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcvbuf_actual: Option<u64>,
    /// TCP_WINDOW_CLAMP in effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_clamp: Option<u64>,
    /// TCP_MAXSEG in effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mss: Option<u64>,
    /// Congestion control of the socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
    /// TCP_INFO at the end of the test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_info: Option<TcpInfo>,
    /// CPU time of the stream's thread, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_cpu_us: Option<u64>,
    /// Time the stream's thread waited for a CPU, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_wait_us: Option<u64>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The TCP_INFO fields plumb's diagnosis reads; each absent where the
/// kernel lacks it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpInfo {
    /// Time with data in flight, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_time_us: Option<u64>,
    /// Time limited by the receive window, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwnd_limited_us: Option<u64>,
    /// Time limited by the send buffer, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf_limited_us: Option<u64>,
    /// Most recent delivery rate, bit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_rate_bps: Option<u64>,
    /// Smallest RTT seen, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rtt_us: Option<u64>,
    /// Smoothed RTT, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<u64>,
    /// RTT variance, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rttvar_us: Option<u64>,
    /// Congestion window, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snd_cwnd_bytes: Option<u64>,
    /// The peer's advertised window, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snd_wnd: Option<u64>,
    /// Segments retransmitted over the connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_retrans: Option<u64>,
    /// Bytes retransmitted over the connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_retrans: Option<u64>,
    /// Sequence space the peer acknowledged (the SYN's byte included): what
    /// reached it, whether or not its results ever came back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_acked: Option<u64>,
    /// Path MTU, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pmtu: Option<u64>,
    /// Sender MSS, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snd_mss: Option<u64>,
    /// The receiver's space estimate, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcv_space: Option<u64>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// How one end of a UDP test moved its datagrams.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlumbUdp {
    /// The client asked for GSO and GRO (`--gsro`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gsro: Option<bool>,
    /// A sending end: datagrams per send message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gso_segments: Option<u64>,
    /// Datagrams per GSO message the client asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gso_segments_asked: Option<u64>,
    /// A receiving end: whether `UDP_GRO` was on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gro: Option<bool>,
    /// A receiving end: what one arrival time covers (`"datagram"`,
    /// `"gro_batch"`, `"read_batch"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_resolution: Option<String>,
    /// A receiving end: how long a receive polls before it sleeps, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_poll_us: Option<u64>,
    /// A receiving end: reads the kernel cut short.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated_reads: Option<u64>,
    /// A receiving end: packets dropped at its sockets (buffer full).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_drops: Option<u64>,
    /// SO_SNDBUF/SO_RCVBUF asked for, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_buffer_requested: Option<u64>,
    /// SO_SNDBUF as the kernel reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf_granted: Option<u64>,
    /// SO_RCVBUF as the kernel reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcvbuf_granted: Option<u64>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A cgroup's CPU quota and how often it held the end back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CgroupCpu {
    /// The quota, percent of one core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_pct: Option<Real>,
    /// Enforcement periods with work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub periods: Option<u64>,
    /// Of those, periods in which the quota ran out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_periods: Option<u64>,
    /// Time its threads were held back, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_us: Option<u64>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `end.plumb.udp`: what a UDP test used, each fact from the end that plays
/// the part; `null` for a fact only a stock iperf3 peer knows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpSummary {
    /// The client asked for GSO and GRO.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub gsro: Option<Option<bool>>,
    /// The sending end's datagrams per send message.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub gso_segments: Option<Option<u64>>,
    /// Datagrams per GSO message the client asked for.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub gso_segments_asked: Option<Option<u64>>,
    /// The receiving end's `UDP_GRO`.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub gro: Option<Option<bool>>,
    /// The receiving end's jitter resolution.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub jitter_resolution: Option<Option<String>>,
    /// The receiving end's receive poll, µs.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub receive_poll_us: Option<Option<u64>>,
    /// The receiving end's cut reads.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub truncated_reads: Option<Option<u64>>,
    /// The receiving end's socket drops.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub socket_drops: Option<Option<u64>>,
    /// This end's socket buffer request, bytes.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub socket_buffer_requested: Option<Option<u64>>,
    /// This end's SO_SNDBUF.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub sndbuf_granted: Option<Option<u64>>,
    /// This end's SO_RCVBUF.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub rcvbuf_granted: Option<Option<u64>>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
