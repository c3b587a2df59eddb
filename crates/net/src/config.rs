//! Typed configurations for a client run and a server, as the command line
//! hands them over. Defaults are iperf3's.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

pub use plumb_proto::auth;
use plumb_proto::auth::{Padding, PrivateKey, PublicKey, UsersFile};

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
    /// `-Z`: send without copying (splice from a memfd).
    pub zerocopy: bool,
    /// `--rwin`: the receiver clamps its advertised window to exactly this (TCP_WINDOW_CLAMP).
    pub rwin: Option<u32>,
    /// `--sndbuf`: the sender's SO_SNDBUF only.
    pub sndbuf: Option<u32>,
    /// `--skip-rx-copy`: the receiver discards with MSG_TRUNC.
    pub skip_rx_copy: bool,
    /// `--total-bitrate`: `bandwidth` is the rate of all streams together,
    /// shared by one pacer on this end (peers are told each stream's share).
    pub total_bitrate: bool,
    /// `--fq-rate`: the kernel's pacing rate for each sending stream,
    /// bit/s (SO_MAX_PACING_RATE), 0 = none; sent to the peer as `fqrate`.
    pub fq_rate: u64,
    /// `-m`: the data streams are Multipath TCP (sent as `mptcp`).
    pub mptcp: bool,
    /// `--gsro`: UDP with GSO on the sending end and GRO on the receiving
    /// end, asked of the peer as iperf3 3.21+ asks (`gso`, `gro`).
    pub gsro: bool,
    /// `--rr`/`--crr`: a request/response test instead of a throughput test.
    pub rr: Option<plumb_proto::rr::RrParams>,
    /// `--latency`: probe idle and loaded latency beside a throughput test.
    pub latency: bool,
    /// `--busy-poll`: SO_BUSY_POLL µs on request/response sockets.
    pub busy_poll: Option<u32>,
    /// `-A n,m`'s m: the CPU the server pins this test to.
    pub server_affinity: Option<u32>,
    /// `-F`: TCP senders send this file's bytes, receivers write theirs to it.
    pub file: Option<std::path::PathBuf>,
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
            gsro: false,
            total_bitrate: false,
            fq_rate: 0,
            mptcp: false,
            rr: None,
            latency: false,
            busy_poll: None,
            server_affinity: None,
            file: None,
        }
    }
}

/// A client run.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientConfig {
    /// The peer's wire protocol: iperf3's (plumb's own), iperf 2's or nuttcp's.
    pub tool: plumb_proto::tool::Tool,
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
    /// `--username` with `--rsa-public-key-path`: authenticate to the server.
    pub auth: Option<ClientAuth>,
    /// This end's own socket options (`--bind-dev`, `--cntl-ka`,
    /// `--snd-timeout`, `--dont-fragment`).
    pub local: crate::local::LocalOptions,
    /// `-d`: trace the control connection on stderr.
    pub debug: bool,
    /// nuttcp's `-F`: the server opens the data connections (`--flip`).
    pub flip: bool,
}

/// What a client needs to authenticate (spec §10).
#[derive(Clone, PartialEq)]
pub struct ClientAuth {
    /// `--username`.
    pub username: String,
    /// From `IPERF3_PASSWORD`.
    pub password: String,
    /// The server's public key (`--rsa-public-key-path`).
    pub public_key: PublicKey,
    /// OAEP (iperf3 3.17+) or PKCS#1 v1.5 (`--use-pkcs1-padding`, for ≤3.16 servers).
    pub padding: Padding,
}

impl std::fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientAuth")
            .field("username", &self.username)
            .field("padding", &self.padding)
            .finish_non_exhaustive()
    }
}

/// What a server needs to check clients' tokens (spec §10).
#[derive(Clone, PartialEq)]
pub struct ServerAuth {
    /// `--rsa-private-key-path`.
    pub private_key: PrivateKey,
    /// `--authorized-users-path`.
    pub users: UsersFile,
    /// `--time-skew-threshold`, seconds.
    pub skew_secs: u64,
}

impl std::fmt::Debug for ServerAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerAuth")
            .field("users", &self.users)
            .field("skew_secs", &self.skew_secs)
            .finish_non_exhaustive()
    }
}

/// An address prefix for `--allow` / `--deny`, e.g. `10.0.0.0/8`, `::1/128`
/// or a bare address (a whole-address prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpPrefix {
    addr: IpAddr,
    len: u8,
}

impl IpPrefix {
    /// Parses `ADDR[/LEN]`; host bits beyond the prefix must be zero so a
    /// typo like `10.1.2.3/8` is caught rather than silently widened.
    pub fn parse(s: &str) -> Result<IpPrefix, String> {
        let (a, l) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let addr: IpAddr = a
            .trim()
            .parse()
            .map_err(|_| format!("invalid address prefix '{s}': '{a}' is not an IP address"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = match l {
            None => max,
            Some(l) => match l.trim().parse::<u8>() {
                Ok(n) if n <= max => n,
                _ => {
                    return Err(format!(
                        "invalid address prefix '{s}': length must be 0 to {max}"
                    ))
                }
            },
        };
        let p = IpPrefix { addr, len };
        if p.masked(addr) != addr {
            return Err(format!(
                "invalid address prefix '{s}': bits beyond /{len} are set (did you mean {}/{len}?)",
                p.masked(addr)
            ));
        }
        Ok(p)
    }

    fn masked(&self, ip: IpAddr) -> IpAddr {
        match ip {
            IpAddr::V4(v4) => {
                let m = u32::MAX.checked_shl(32 - u32::from(self.len)).unwrap_or(0);
                IpAddr::V4((u32::from(v4) & m).into())
            }
            IpAddr::V6(v6) => {
                let m = u128::MAX
                    .checked_shl(128 - u32::from(self.len))
                    .unwrap_or(0);
                IpAddr::V6((u128::from(v6) & m).into())
            }
        }
    }

    /// Whether `ip` is inside the prefix. IPv4-mapped IPv6 addresses (what a
    /// dual-stack listener reports for IPv4 peers) count as IPv4.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        ip.is_ipv4() == self.addr.is_ipv4() && self.masked(ip) == self.addr
    }
}

impl std::fmt::Display for IpPrefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it carries.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Who may use the server: `--deny` wins over `--allow`; with any `--allow`
/// given, only those prefixes may.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessList {
    /// `--allow` prefixes.
    pub allow: Vec<IpPrefix>,
    /// `--deny` prefixes.
    pub deny: Vec<IpPrefix>,
}

impl AccessList {
    /// Whether a peer at `ip` may connect.
    pub fn permits(&self, ip: IpAddr) -> bool {
        if self.deny.iter().any(|p| p.contains(ip)) {
            return false;
        }
        self.allow.is_empty() || self.allow.iter().any(|p| p.contains(ip))
    }
}

/// What an operator lets a stranger make the server do. `None` = no limit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    /// `--max-duration`: longest test (time + omit), and the wall-clock cap
    /// of tests bounded by bytes or blocks.
    pub max_duration: Option<Duration>,
    /// `--max-parallel`: most streams per direction.
    pub max_parallel: Option<u32>,
    /// `--max-bitrate`: most bit/s one test may ask for and use (all streams).
    pub max_bitrate: Option<u64>,
    /// `--max-total-bitrate`: most bit/s all running tests together may ask for.
    pub max_total_bitrate: Option<u64>,
    /// iperf3's `--server-bitrate-limit RATE[/SECS]`: most bit/s one test's
    /// data may average over the last SECS (no `-b` needed).
    pub bitrate_cap: Option<(u64, Duration)>,
    /// `--max-rr-size`: largest request or response of a `--rr`/`--crr`
    /// test, bytes (the protocol's own cap applies without it).
    pub max_rr_size: Option<u32>,
    /// `--max-rr-burst`: most request/response transactions in flight per stream.
    pub max_rr_burst: Option<u32>,
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
    /// `-d`: trace each control connection on stderr.
    pub debug: bool,
    /// iperf3's `--idle-timeout`: with no test or connection for this long
    /// the server opens its listening socket anew (with `-1`, it exits).
    pub idle_timeout: Option<Duration>,
    /// A control connection must send its cookie and parameters within this.
    pub handshake_timeout: Duration,
    /// `--rcv-timeout`: end a test whose peer has sent nothing for this long.
    pub rcv_timeout: Duration,
    /// Interval for the server's own report.
    pub interval: f64,
    /// `--max-tests`: tests that may run at once (iperf3: 1).
    pub max_tests: usize,
    /// Connections that may be mid-handshake at once; past this the oldest is dropped.
    pub max_pending: usize,
    /// Operator limits on what a test may ask for.
    pub limits: Limits,
    /// `--allow` / `--deny`.
    pub access: AccessList,
    /// Authentication, when the server requires it.
    pub auth: Option<Arc<ServerAuth>>,
    /// This end's own socket options: `--bind-dev` and `--snd-timeout` on
    /// the listener (inherited by every connection it accepts) and the UDP
    /// data sockets.
    pub local: crate::local::LocalOptions,
    /// With several tools on one server: the ports one tool's listener
    /// owns and hands to another tool's session (a nuttcp data connection
    /// on iperf 2's port).
    pub handoff: Option<Arc<crate::handoff::Handoff>>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            port: DEFAULT_PORT,
            bind: None,
            family: Family::Any,
            one_off: false,
            idle_timeout: None,
            debug: false,
            handshake_timeout: Duration::from_secs(10),
            rcv_timeout: Duration::from_secs(120),
            interval: 1.0,
            max_tests: 1,
            max_pending: 256,
            limits: Limits::default(),
            access: AccessList::default(),
            auth: None,
            local: crate::local::LocalOptions::default(),
            handoff: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes() {
        let p = IpPrefix::parse("10.0.0.0/8").expect("valid");
        assert!(p.contains("10.1.2.3".parse().expect("ip")));
        assert!(!p.contains("11.0.0.1".parse().expect("ip")));
        assert!(p.contains("::ffff:10.9.9.9".parse().expect("ip")));
        assert!(!p.contains("::1".parse().expect("ip")));
        let all = IpPrefix::parse("0.0.0.0/0").expect("valid");
        assert!(all.contains("1.2.3.4".parse().expect("ip")));
        let one = IpPrefix::parse("::1").expect("valid");
        assert!(one.contains("::1".parse().expect("ip")));
        assert_eq!(one.to_string(), "::1/128");
        assert!(IpPrefix::parse("10.1.2.3/8").is_err());
        assert!(IpPrefix::parse("10.0.0.0/33").is_err());
        assert!(IpPrefix::parse("nope/8").is_err());
        assert!(IpPrefix::parse("fe80::/10").is_ok());
    }

    #[test]
    fn deny_wins_and_allow_restricts() {
        let mut acl = AccessList::default();
        let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
        assert!(acl.permits(ip("127.0.0.1")));
        acl.allow
            .push(IpPrefix::parse("127.0.0.0/8").expect("valid"));
        assert!(acl.permits(ip("127.0.0.2")));
        assert!(!acl.permits(ip("::1")));
        acl.deny.push(IpPrefix::parse("127.0.0.2").expect("valid"));
        assert!(!acl.permits(ip("127.0.0.2")));
        assert!(acl.permits(ip("::ffff:127.0.0.1")));
    }
}
