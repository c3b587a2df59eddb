//! Why a target's handshake could not be read.

use std::io;

/// Why a target's handshake could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// The name does not resolve.
    #[error("cannot resolve {0}")]
    Resolve(String),
    /// The peer answered with a RST: nothing listens there.
    #[error("connection refused: nothing listens on that port")]
    Refused,
    /// No SYN-ACK came.
    #[error("no answer")]
    Timeout,
    /// The raw path was asked for and this process may not open raw sockets.
    #[error("a raw SYN needs root (CAP_NET_RAW)")]
    NoRawSocket,
    /// Any other failure of the kernel's.
    #[error("{0}")]
    Io(#[from] io::Error),
}
