//! The `start` object: what was set up before data flowed.
//!
//! iperf3 fills `start` as the test is set up and writes what it has when a
//! test fails early (a refused connection leaves only `connected`, `version`
//! and `system_info`), and newer versions add keys; so every key here is
//! optional.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Real;

/// iperf3's `start`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Start {
    /// The data streams' addresses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connected: Option<Vec<Connected>>,
    /// `"iperf 3.12"`, `"plumb 0.1.0"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// A `uname`-like line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_info: Option<String>,
    /// The wall-clock start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
    /// The client's peer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connecting_to: Option<HostPort>,
    /// The server's peer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_connection: Option<HostPort>,
    /// The test cookie.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cookie: Option<String>,
    /// MSS set with `-M`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_mss: Option<u64>,
    /// MSS of the control connection when `-M` was not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_mss_default: Option<u64>,
    /// Target rate per stream, bit/s (0: unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_bitrate: Option<u64>,
    /// Fair-queueing pacing rate, bit/s (0: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fq_rate: Option<u64>,
    /// Socket buffer asked for with `-w` (0: the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sock_bufsize: Option<u64>,
    /// SO_SNDBUF the kernel granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf_actual: Option<u64>,
    /// SO_RCVBUF the kernel granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcvbuf_actual: Option<u64>,
    /// The agreed parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_start: Option<TestStart>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One connected data stream, an entry of `start.connected`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Connected {
    /// The stream's local identifier (iperf3: its socket descriptor).
    pub socket: i32,
    /// Local address.
    pub local_host: String,
    /// Local port.
    pub local_port: u16,
    /// Peer address.
    pub remote_host: String,
    /// Peer port.
    pub remote_port: u16,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Connected {
    /// A stream's addresses as a producer knows them (no unknown keys).
    pub fn new(
        socket: i32,
        local_host: String,
        local_port: u16,
        remote_host: String,
        remote_port: u16,
    ) -> Connected {
        Connected {
            socket,
            local_host,
            local_port,
            remote_host,
            remote_port,
            extra: Map::new(),
        }
    }
}

/// `start.timestamp`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timestamp {
    /// RFC 7231 date: `Sun, 22 Nov 2026 02:38:32 GMT`.
    pub time: String,
    /// Seconds since the epoch.
    pub timesecs: u64,
    /// Milliseconds since the epoch (iperf3 3.17+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timemillisecs: Option<u64>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `start.connecting_to` / `start.accepted_connection`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostPort {
    /// Address or name.
    pub host: String,
    /// Port.
    pub port: u16,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `start.test_start`: the parameters both ends agreed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestStart {
    /// `"TCP"` or `"UDP"`.
    pub protocol: String,
    /// Streams per direction.
    pub num_streams: u64,
    /// Block (TCP) or datagram (UDP) size.
    pub blksize: u64,
    /// Seconds omitted at the start.
    pub omit: Real,
    /// Test duration, seconds (0 when bounded by bytes or blocks).
    pub duration: Real,
    /// Byte budget (`-n`), 0 if none.
    pub bytes: u64,
    /// Block budget (`-k`), 0 if none.
    pub blocks: u64,
    /// 1 when the server sends (`-R`).
    pub reverse: u64,
    /// TOS byte.
    pub tos: u64,
    /// Target rate per stream, bit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_bitrate: Option<u64>,
    /// 1 when both ends send (`--bidir`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bidir: Option<u64>,
    /// Fair-queueing pacing rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fqrate: Option<u64>,
    /// Reporting interval, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Real>,
    /// 1 when UDP GSO was asked for (iperf3 3.21+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gso: Option<u64>,
    /// 1 when UDP GRO was asked for (iperf3 3.21+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gro: Option<u64>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
