//! What a TCP handshake says, and the probe that reads it: `plumb
//! handshake`'s pure half and, beside it, its I/O.
//!
//! - [`wire`]: the SYN plumb sends (every option, ECE|CWR) and the SYN-ACK
//!   it reads back, byte by byte, with the Internet checksum;
//! - [`target`]: `HOST:PORT` as the command takes it;
//! - [`caveat`]: what a reading cannot show, and why;
//! - [`meaning`]: what the options mean for a transfer, in words, with
//!   plumb-model's arithmetic;
//! - [`os`]: a guess at the sending host's operating system from its SYN
//!   or SYN-ACK, and which OS's fix to put first;
//! - [`document`]: the `-J` entry (`plumb_record::handshake::Handshake`),
//!   assembled from what was observed;
//! - [`probe`]: the I/O — a raw SYN sent and its SYN-ACK read, or
//!   `connect()` and `TCP_INFO` — that fills an [`Observed`]; its one
//!   `unsafe` call (`recvmsg` with the IPv6 hop limit) is fenced in `sys`.
//!
//! Every module but `probe` and `sys` is pure: bytes and values in, values
//! out, no sockets or clocks.

pub mod caveat;
pub mod document;
pub mod meaning;
pub mod os;
pub mod probe;
mod sys;
pub mod target;
pub mod wire;

pub use caveat::Caveat;
pub use document::{entry, Observed};
