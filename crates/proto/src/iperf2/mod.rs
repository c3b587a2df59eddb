//! iperf 2's wire protocol (2.1.8, Debian 12's), sans-IO: the client's test
//! header, the server's header acknowledgement, the UDP datagram header and
//! the UDP server report. The byte layouts are written down in
//! `docs/protocol-iperf2.md`; every decoder caps what it reads and says in
//! one line what was wrong with a peer's bytes.
//!
//! iperf 2 has no control connection: a TCP test is one connection per
//! stream whose first bytes are the test header; a UDP test is a flow of
//! datagrams, each starting with [`Datagram`] and the first (all, in
//! fact) carrying the test header after it. A UDP sender ends with
//! datagrams whose sequence number is negative, and the receiver answers
//! each with a [`ServerReport`].

mod ack;
mod datagram;
mod error;
mod header;
mod report;

pub use ack::{HeaderAck, ACK_LEN};
pub use datagram::{Datagram, DATAGRAM_LEN};
pub use error::Iperf2Error;
pub use header::{
    flags, upper, Amount, Mode, TestHeader, EXT_LEN, MAX_HEADER_LEN, TCP_HEADER_LEN,
    UDP_HEADER_LEN, V1_LEN,
};
pub use report::{ServerReport, REPORT_LEN};

/// The version 2.1.8 announces in its header and acknowledgement: major
/// and minor words as iperf 2 packs them (2.1 and 8 with release word 3).
pub const VERSION_2_1_8: (u32, u32) = (0x0002_0001, 0x0008_0003);

/// A big-endian `u32` at `at`; the caller has checked the length.
fn be32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(w)
}

#[cfg(test)]
mod fixtures;
