//! Typed configurations for a client run and a server, as the command line
//! hands them over. Defaults are iperf3's.

use std::net::IpAddr;
use std::time::Duration;

/// iperf3's default port.
pub const DEFAULT_PORT: u16 = 5201;
/// iperf3's default TCP block: 128 KiB.
pub const DEFAULT_TCP_LEN: u32 = 128 * 1024;
/// iperf3's default UDP rate: 1 Mbit/s (2^20 bit/s, as iperf3 sends it).
pub const DEFAULT_UDP_RATE: u64 = 1024 * 1024;
/// Most streams one test may have per direction (iperf3's limit).
pub const MAX_STREAMS: u32 = 128;

/// Transport of the data streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// TCP.
    #[default]
    Tcp,
    /// UDP.
    Udp,
}

/// Address family preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Family {
    /// Whatever the name resolves to first.
    #[default]
    Any,
    /// IPv4 only (`-4`).
    V4,
    /// IPv6 only (`-6`).
    V6,
}

/// What the client asks the server to run.
#[derive(Debug, Clone, PartialEq)]
pub struct TestSpec {
    /// TCP or UDP.
    pub transport: Transport,
    /// Seconds to run (ignored when `bytes` or `blocks` is set and `time_given` is false).
    pub time: f64,
    /// Whether `-t` was given explicitly.
    pub time_given: bool,
    /// `-n`: stop after this many bytes (0 = no limit).
    pub bytes: u64,
    /// `-k`: stop after this many blocks (0 = no limit).
    pub blocks: u64,
    /// `-O`: seconds left out of the statistics at the start.
    pub omit: f64,
    /// `-i`: reporting interval, seconds (0 = none).
    pub interval: f64,
    /// `-P`: streams per direction.
    pub parallel: u32,
    /// `-R`.
    pub reverse: bool,
    /// `--bidir`.
    pub bidir: bool,
    /// `-l`: block or datagram size; `None` = iperf3's default for the transport.
    pub len: Option<u32>,
    /// `-b`: bit/s per stream; `None` = default (unlimited TCP, 1 Mbit/s UDP).
    pub bandwidth: Option<u64>,
    /// `-w`: SO_SNDBUF and SO_RCVBUF on both ends.
    pub window: Option<u32>,
    /// `-M`: TCP MSS.
    pub mss: Option<u32>,
    /// `-N`: TCP_NODELAY on data sockets.
    pub nodelay: bool,
    /// `-C`: congestion control.
    pub congestion: Option<String>,
    /// `-S` / `--dscp`: the TOS byte.
    pub tos: u8,
    /// `-T`.
    pub title: Option<String>,
    /// `--extra-data`.
    pub extra_data: Option<String>,
    /// `--get-server-output`.
    pub get_server_output: bool,
    /// `--udp-counters-64bit`.
    pub udp_counters_64bit: bool,
    /// `--repeating-payload`.
    pub repeating_payload: bool,
    /// `-Z`: send with sendfile.
    pub zerocopy: bool,
    /// `--rwin`: the receiver clamps its advertised window to exactly this (TCP_WINDOW_CLAMP).
    pub rwin: Option<u32>,
    /// `--sndbuf`: the sender's SO_SNDBUF only.
    pub sndbuf: Option<u32>,
    /// `--skip-rx-copy`: the receiver discards with MSG_TRUNC.
    pub skip_rx_copy: bool,
}

impl Default for TestSpec {
    fn default() -> Self {
        TestSpec {
            transport: Transport::Tcp,
            time: 10.0,
            time_given: false,
            bytes: 0,
            blocks: 0,
            omit: 0.0,
            interval: 1.0,
            parallel: 1,
            reverse: false,
            bidir: false,
            len: None,
            bandwidth: None,
            window: None,
            mss: None,
            nodelay: false,
            congestion: None,
            tos: 0,
            title: None,
            extra_data: None,
            get_server_output: false,
            udp_counters_64bit: false,
            repeating_payload: false,
            zerocopy: false,
            rwin: None,
            sndbuf: None,
            skip_rx_copy: false,
        }
    }
}

/// A client run.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientConfig {
    /// Server name or address.
    pub host: String,
    /// Server port.
    pub port: u16,
    /// `-B`: local address to bind.
    pub bind: Option<IpAddr>,
    /// `--cport`: first local data port.
    pub cport: Option<u16>,
    /// `-4` / `-6`.
    pub family: Family,
    /// `--connect-timeout`.
    pub connect_timeout: Option<Duration>,
    /// `--rcv-timeout`: give up when no data arrives for this long.
    pub rcv_timeout: Duration,
    /// The test.
    pub spec: TestSpec,
}

/// A server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Port to listen on.
    pub port: u16,
    /// `-B`: address to listen on.
    pub bind: Option<IpAddr>,
    /// `-4` / `-6`.
    pub family: Family,
    /// `-1`: serve one test, then exit.
    pub one_off: bool,
    /// A control connection must send its cookie and parameters within this.
    pub handshake_timeout: Duration,
    /// `--rcv-timeout`: end a test whose peer has sent nothing for this long.
    pub rcv_timeout: Duration,
    /// Interval for the server's own report.
    pub interval: f64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            port: DEFAULT_PORT,
            bind: None,
            family: Family::Any,
            one_off: false,
            handshake_timeout: Duration::from_secs(10),
            rcv_timeout: Duration::from_secs(120),
            interval: 1.0,
        }
    }
}
