//! Which captured connections to explain: a port at either end, a peer at
//! either end (a capture has no "this host"), or one connection. Every
//! given part must match; nothing given matches everything.

use std::net::{IpAddr, SocketAddr};

use crate::connection::Connection;

/// A filter over captured connections.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaptureFilters {
    /// A port at either end.
    pub port: Option<u16>,
    /// An address, and port when given, at either end.
    pub peer: Option<(IpAddr, Option<u16>)>,
    /// Exactly this pair of ends, either way round.
    pub conn: Option<(SocketAddr, SocketAddr)>,
}

impl CaptureFilters {
    /// Whether `c` matches.
    pub fn matches(&self, c: &Connection) -> bool {
        let (Some(a), Some(b)) = (c.client_addr(), c.server_addr()) else {
            return false;
        };
        if self.port.is_some_and(|p| a.port() != p && b.port() != p) {
            return false;
        }
        if let Some((ip, port)) = self.peer {
            let is = |e: SocketAddr| e.ip() == ip && port.is_none_or(|p| p == e.port());
            if !is(a) && !is(b) {
                return false;
            }
        }
        if let Some((x, y)) = self.conn {
            if !((a == x && b == y) || (a == y && b == x)) {
                return false;
            }
        }
        true
    }
}
