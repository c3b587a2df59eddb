//! The result of a handshake: what the peer offers ([`Offer`]), how it was
//! read ([`Method`]) and one target's `-J` entry ([`Handshake`]).

use serde::Serialize;

/// What a handshake shows of the peer. `None` is unknown: the connect path
/// cannot see an option this host did not offer itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Offer {
    /// It offers window scaling (RFC 7323 §2).
    pub window_scaling: Option<bool>,
    /// Its window scale shift: its receive window is the field × 2^shift.
    pub wscale: Option<u8>,
    /// It offers selective acknowledgements (RFC 2018).
    pub sack: Option<bool>,
    /// It offers timestamps (RFC 7323 §3).
    pub timestamps: Option<bool>,
    /// It accepts ECN (RFC 3168: ECE without CWR on its SYN-ACK).
    pub ecn: Option<bool>,
    /// Its MSS in bytes: the one it offers (SYN path) or the one in use
    /// (connect path: bounded by this host's path MTU too).
    pub mss: Option<u32>,
    /// The window of its SYN-ACK in bytes (never scaled, RFC 7323 §2.2).
    pub initial_window: Option<u32>,
}

/// How the handshake was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// A raw SYN and the peer's SYN-ACK: what the peer offers.
    Syn,
    /// `connect()` and `TCP_INFO`: what both ends negotiated.
    Connect,
}

/// One target's handshake: the `-J` document's entry.
#[derive(Debug, Clone, Serialize)]
pub struct Handshake {
    /// The target as given (`nas.example:445`).
    pub target: String,
    /// The address reached.
    pub address: String,
    /// How it was read.
    pub method: Method,
    /// `offered` (the peer's own options) or `negotiated` (both ends').
    pub shows: &'static str,
    /// Handshakes completed.
    pub handshakes: usize,
    /// The handshake RTT: the fastest, in ms.
    pub rtt_min_ms: f64,
    /// The handshake RTT: the median, in ms.
    pub rtt_median_ms: f64,
    /// The SYN-ACK's IP TTL as it arrived (SYN path only).
    pub ttl: Option<u8>,
    /// What the peer offers (or what was negotiated).
    pub offer: Offer,
    /// What it means for a transfer, most important first.
    pub meaning: Vec<String>,
    /// Caveats: why the connect path ran, which options it cannot see.
    pub notes: Vec<String>,
}
