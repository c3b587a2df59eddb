//! The engine's record of one test, in the terms iperf3 reports it: what
//! the measuring engine pushes into a [`Sink`](crate::Sink) as the test runs
//! (its start, each interval, its end), before any printer sums or formats
//! it.
//!
//! Every number here was measured (locally, or by the peer and sent in its
//! results); printers only sum and format. Times are seconds from the start of
//! the test, rates are derived from bytes and seconds by the printers. The
//! JSON printer turns these records into the [`Document`](crate::Document)'s
//! parts; a data stream's addresses are the document's own [`Connected`].

use serde_json::Value;

use crate::{Connected, EndPlumb, IntervalPlumb};

/// Transport of the data streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// TCP streams.
    Tcp,
    /// UDP flows.
    Udp,
}

impl Protocol {
    /// `"TCP"` / `"UDP"`, as in iperf3's `test_start.protocol`.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
        }
    }
}

/// Which end of the test this record describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The side that connected and keeps time.
    Client,
    /// The side that accepted.
    Server,
}

/// The agreed test parameters, as iperf3's `start.test_start`.
#[derive(Debug, Clone, PartialEq)]
pub struct TestStart {
    /// TCP or UDP.
    pub protocol: Protocol,
    /// Streams per direction.
    pub num_streams: u32,
    /// Block (TCP) or datagram (UDP) size.
    pub blksize: u64,
    /// Seconds omitted at the start.
    pub omit: f64,
    /// Test duration, seconds (0 when bounded by bytes or blocks).
    pub duration: f64,
    /// Byte budget (`-n`), 0 if none.
    pub bytes: u64,
    /// Block budget (`-k`), 0 if none.
    pub blocks: u64,
    /// The server sends (`-R`).
    pub reverse: bool,
    /// Both send (`--bidir`).
    pub bidir: bool,
    /// TOS byte.
    pub tos: u32,
    /// Target rate per stream, bit/s, 0 if unlimited.
    pub target_bitrate: u64,
    /// Reporting interval, seconds.
    pub interval: f64,
}

/// What was set up before data flowed: iperf3's `start` object.
#[derive(Debug, Clone, PartialEq)]
pub struct StartRecord {
    /// Client or server.
    pub role: Role,
    /// `"plumb 0.1.0"`.
    pub version: String,
    /// uname-like line.
    pub system_info: String,
    /// Wall-clock start, seconds since the epoch.
    pub timesecs: u64,
    /// Milliseconds part of the wall-clock start.
    pub timemillis: u32,
    /// The client's peer (host, port).
    pub connecting_to: Option<(String, u16)>,
    /// The server's peer (host, port).
    pub accepted_connection: Option<(String, u16)>,
    /// The test cookie (36 characters).
    pub cookie: String,
    /// MSS set with `-M`.
    pub tcp_mss: Option<u32>,
    /// MSS the control connection got when `-M` was not given.
    pub tcp_mss_default: Option<u32>,
    /// Socket buffer requested with `-w` (0 = default).
    pub sock_bufsize: u64,
    /// SO_SNDBUF the kernel granted, read back.
    pub sndbuf_actual: u64,
    /// SO_RCVBUF the kernel granted, read back.
    pub rcvbuf_actual: u64,
    /// The parameters.
    pub test: TestStart,
    /// The data streams.
    pub connected: Vec<Connected>,
    /// `-T` title.
    pub title: Option<String>,
    /// `--extra-data`.
    pub extra_data: Option<String>,
}

/// TCP_INFO of a sending stream at the end of an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TcpSample {
    /// Retransmitted segments during the interval.
    pub retransmits: u64,
    /// Congestion window, bytes.
    pub snd_cwnd: u64,
    /// Peer's advertised window, bytes.
    pub snd_wnd: u64,
    /// Smoothed RTT, µs.
    pub rtt: u64,
    /// RTT variance, µs.
    pub rttvar: u64,
    /// Path MTU, bytes.
    pub pmtu: u64,
    /// What limited the stream during the interval, from TCP_INFO's
    /// cumulative counters (plumb only; `None` where the kernel lacks them).
    pub limited: Option<LimitedTime>,
}

/// Time a sending stream spent with data in flight, and the parts of it the
/// receive window and the send buffer held it back, over one interval, µs
/// (the differences of TCP_INFO's `busy_time`, `rwnd_limited`,
/// `sndbuf_limited`, Linux 4.10+).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitedTime {
    /// Time with data in flight.
    pub busy_us: u64,
    /// Time limited by the peer's receive window.
    pub rwnd_limited_us: u64,
    /// Time limited by the send buffer.
    pub sndbuf_limited_us: u64,
}

/// Per-kind numbers of one stream over one interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum IntervalDetail {
    /// A TCP stream; `Some` when it sends and TCP_INFO was read.
    Tcp(Option<TcpSample>),
    /// A sending UDP stream.
    UdpSender {
        /// Datagrams sent in the interval.
        packets: u64,
    },
    /// A receiving UDP stream.
    UdpReceiver {
        /// RFC 3550 jitter at the end of the interval, ms.
        jitter_ms: f64,
        /// Datagrams lost in the interval.
        lost: i64,
        /// Datagrams expected in the interval (by sequence number).
        packets: i64,
    },
}

/// One stream over one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamInterval {
    /// Local identifier (see [`Connected::socket`]).
    pub socket: i32,
    /// Interval start, seconds from test start.
    pub start: f64,
    /// Interval end.
    pub end: f64,
    /// Bytes moved (sent by a sender, received by a receiver).
    pub bytes: u64,
    /// The local stream sends.
    pub sender: bool,
    /// Inside the `-O` omit period.
    pub omitted: bool,
    /// Per-kind details.
    pub detail: IntervalDetail,
}

/// One reporting interval of all streams.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalRecord {
    /// Every stream, in local order.
    pub streams: Vec<StreamInterval>,
    /// plumb's extras for the interval (request/response latency), under `"plumb"`.
    pub plumb: Option<IntervalPlumb>,
}

/// One direction's totals of a stream.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Totals {
    /// Bytes moved after the omit period.
    pub bytes: u64,
    /// Seconds the stream ran on that side.
    pub seconds: f64,
}

/// TCP sender statistics over the whole test.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TcpEnd {
    /// Largest congestion window seen, bytes.
    pub max_snd_cwnd: u64,
    /// Largest peer window seen, bytes.
    pub max_snd_wnd: u64,
    /// Largest smoothed RTT, µs.
    pub max_rtt: u64,
    /// Smallest smoothed RTT, µs.
    pub min_rtt: u64,
    /// Mean of the interval RTT samples, µs.
    pub mean_rtt: u64,
}

/// UDP receiver statistics over the whole test.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UdpEnd {
    /// RFC 3550 jitter at the end, ms.
    pub jitter_ms: f64,
    /// Datagrams lost.
    pub lost: i64,
    /// Datagrams expected (highest sequence seen), or sent when nothing was received.
    pub packets: i64,
    /// Datagrams sent by the sender.
    pub sent_packets: i64,
    /// Datagrams that arrived out of order.
    pub out_of_order: i64,
}

/// One stream's totals from both ends.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamEnd {
    /// Local identifier.
    pub socket: i32,
    /// The local stream sends.
    pub sender: bool,
    /// What the sending end sent.
    pub sent: Totals,
    /// What the receiving end received.
    pub received: Totals,
    /// TCP retransmits counted by the sender, if it could count them.
    pub retransmits: Option<i64>,
    /// TCP_INFO summary, when the local stream sends TCP.
    pub tcp: Option<TcpEnd>,
    /// UDP loss and jitter, for UDP streams.
    pub udp: Option<UdpEnd>,
}

/// CPU use of both ends, percent of one CPU's time over the test, as iperf3.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuUtil {
    /// This process, user + system.
    pub host_total: f64,
    /// This process, user.
    pub host_user: f64,
    /// This process, system.
    pub host_system: f64,
    /// The peer process, user + system.
    pub remote_total: f64,
    /// The peer process, user.
    pub remote_user: f64,
    /// The peer process, system.
    pub remote_system: f64,
}

/// The end of a test: iperf3's `end` object, plus plumb's extras.
#[derive(Debug, Clone, PartialEq)]
pub struct EndRecord {
    /// TCP or UDP.
    pub protocol: Protocol,
    /// Whether this was a `--bidir` test.
    pub bidir: bool,
    /// Every stream, in local order.
    pub streams: Vec<StreamEnd>,
    /// CPU of both ends.
    pub cpu: CpuUtil,
    /// Congestion control of the sending end (TCP).
    pub sender_tcp_congestion: Option<String>,
    /// Congestion control of the receiving end (TCP).
    pub receiver_tcp_congestion: Option<String>,
    /// plumb's evidence beyond iperf3's schema, under the key `"plumb"`.
    pub plumb: Option<EndPlumb>,
    /// The server's report, when `--get-server-output` asked for it: text…
    pub server_output_text: Option<String>,
    /// …or its JSON document, as the server (any iperf3) wrote it.
    pub server_output_json: Option<Value>,
}

impl StreamEnd {
    /// Bits per second of a direction's totals (0 for a zero duration).
    pub fn rate(t: Totals) -> f64 {
        if t.seconds > 0.0 {
            t.bytes as f64 * 8.0 / t.seconds
        } else {
            0.0
        }
    }
}
