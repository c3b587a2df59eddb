//! What a handshake shows of the peer: each option offered, refused or
//! unknown.

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
