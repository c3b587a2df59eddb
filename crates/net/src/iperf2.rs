//! Tests against iperf 2 (2.1.8) peers: plumb's client against `iperf -s`
//! ([`client`]) and plumb's server answering `iperf -c` ([`server`]), over
//! the sans-IO wire format of `plumb_proto::iperf2`. Both report through
//! the same [`Sink`](plumb_record::Sink) records as an iperf3 test, built
//! by `meter` from per-stream counters.
//!
//! iperf 2 has no control connection: each TCP stream carries its own
//! test header, and a UDP flow's datagrams do; the only result that comes
//! back is the UDP receiver's server report.

mod admit;
pub mod client;
mod flow;
mod meter;
pub mod server;
mod watch;

/// iperf 2's default TCP buffer (`-l`): 128 KiB.
pub const TCP_LEN: u32 = 128 * 1024;
/// iperf 2's default UDP datagram over IPv4 (`-l`).
pub const UDP_LEN: u32 = 1470;
