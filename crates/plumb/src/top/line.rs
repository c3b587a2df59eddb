//! One line of `plumb top --json`: a connection in one interval, with the
//! keys the command documents. Without TCP_INFO (a dump that carried none)
//! the RTT, congestion window and window are unknown (`null`), not zero.

use std::fmt::Display;
use std::net::SocketAddr;

use serde::{Serialize, Serializer};

/// The NDJSON object.
#[derive(Debug, Serialize)]
pub(super) struct TopLine<'a> {
    /// The interval's number.
    pub interval: u64,
    /// Local address and port.
    #[serde(serialize_with = "display")]
    pub local: SocketAddr,
    /// Remote address and port.
    #[serde(serialize_with = "display")]
    pub remote: SocketAddr,
    /// The owning process (`null`: unknown).
    pub pid: Option<u32>,
    /// Its command name.
    pub command: Option<&'a str>,
    /// `sender`, `receiver` or `idle`.
    pub direction: &'static str,
    /// The interval's rate, bit/s.
    pub rate_bps: f64,
    /// Smoothed RTT, ms.
    pub rtt_ms: Option<f64>,
    /// Congestion window, bytes.
    pub cwnd_bytes: Option<u64>,
    /// The window the row shows, bytes.
    pub window_bytes: Option<u32>,
    /// Segments retransmitted in the interval.
    pub retransmits: u64,
    /// The limit named now (`null`: none, or idle).
    pub limit: Option<&'static str>,
    /// The connection's class over the interval (`null`: idle, not weighed).
    pub class: Option<&'static str>,
    /// The congestion control.
    pub congestion: Option<&'a str>,
    /// The interval was a full scan (every connection read), not a lookup of
    /// the followed ones.
    pub full_scan: bool,
}

/// An address as its text (`127.0.0.1:5201`, `[::1]:5201`).
fn display<S: Serializer>(v: &impl Display, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}
