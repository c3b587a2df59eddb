//! The UDP server report: what an iperf 2 server received, sent back in
//! answer to each of the sender's final (negative) datagrams. A zeroed
//! datagram header, then 40 bytes of base (flags, bytes, end time, lost,
//! out of order, datagrams, jitter), 60 bytes of latency extension and 12
//! bytes of upper words for the 64-bit counters: 128 bytes from 2.1.8.

use std::time::Duration;

use super::{be32, flags, Iperf2Error, DATAGRAM_LEN};

/// The report datagram's length as 2.1.8 sends it.
pub const REPORT_LEN: usize = DATAGRAM_LEN + BASE_LEN + EXTENSION_LEN + UPPER_LEN;
const BASE_LEN: usize = 40;
const EXTENSION_LEN: usize = 60;
const UPPER_LEN: usize = 12;

/// What the receiving server counted.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ServerReport {
    /// Bytes received.
    pub bytes: u64,
    /// From the first datagram to the last, as the server timed it.
    pub duration: Duration,
    /// Datagrams lost.
    pub lost: u64,
    /// Datagrams out of order.
    pub out_of_order: u64,
    /// Datagrams expected (the highest sequence number).
    pub datagrams: u64,
    /// RFC 3550 jitter.
    pub jitter: Duration,
}

impl ServerReport {
    /// The 128-byte datagram 2.1.8 sends (no latency extension: its words
    /// are zero and the flag that would announce them is clear).
    pub fn encode(&self) -> [u8; REPORT_LEN] {
        let mut b = [0u8; REPORT_LEN];
        let lo = |n: u64| n as u32;
        let hi = |n: u64| (n >> 32) as u32;
        let words: [(usize, u32); 13] = [
            (0, flags::VERSION1 | flags::SEQNO64B),
            (4, hi(self.bytes)),
            (8, lo(self.bytes)),
            (12, self.duration.as_secs() as u32),
            (16, self.duration.subsec_micros()),
            (20, lo(self.lost)),
            (24, lo(self.out_of_order)),
            (28, lo(self.datagrams)),
            (32, self.jitter.as_secs() as u32),
            (36, self.jitter.subsec_micros()),
            (BASE_LEN + EXTENSION_LEN, hi(self.lost)),
            (BASE_LEN + EXTENSION_LEN + 4, hi(self.out_of_order)),
            (BASE_LEN + EXTENSION_LEN + 8, hi(self.datagrams)),
        ];
        for (at, w) in words {
            let at = DATAGRAM_LEN + at;
            b[at..at + 4].copy_from_slice(&w.to_be_bytes());
        }
        b
    }

    /// Reads a report datagram (the datagram header included).
    ///
    /// # Errors
    /// Fewer bytes than the base needs, flags without the report's mark,
    /// or microseconds of a million or more.
    pub fn decode(d: &[u8]) -> Result<ServerReport, Iperf2Error> {
        let need = DATAGRAM_LEN + BASE_LEN;
        if d.len() < need {
            return Err(Iperf2Error::Short {
                what: "server report",
                have: d.len(),
                need,
            });
        }
        let b = &d[DATAGRAM_LEN..];
        let f = be32(b, 0);
        if f & flags::VERSION1 == 0 {
            return Err(Iperf2Error::NoHeader(f));
        }
        let wide = f & flags::SEQNO64B != 0 && b.len() >= BASE_LEN + EXTENSION_LEN + UPPER_LEN;
        let upper = |at: usize| {
            if wide {
                u64::from(be32(b, BASE_LEN + EXTENSION_LEN + at)) << 32
            } else {
                0
            }
        };
        let usecs = |at: usize| -> Result<u32, Iperf2Error> {
            let u = be32(b, at);
            if u >= 1_000_000 {
                return Err(Iperf2Error::BadField {
                    field: "microseconds",
                    value: i64::from(u),
                });
            }
            Ok(u)
        };
        Ok(ServerReport {
            bytes: (u64::from(be32(b, 4)) << 32) | u64::from(be32(b, 8)),
            duration: Duration::new(u64::from(be32(b, 12)), usecs(16)? * 1000),
            lost: upper(0) | u64::from(be32(b, 20)),
            out_of_order: upper(4) | u64::from(be32(b, 24)),
            datagrams: upper(8) | u64::from(be32(b, 28)),
            jitter: Duration::new(u64::from(be32(b, 32)), usecs(36)? * 1000),
        })
    }

    /// Whether a datagram the UDP sender reads back is a report (not a
    /// stale header acknowledgement).
    pub fn looks_like_report(d: &[u8]) -> bool {
        d.len() >= DATAGRAM_LEN + BASE_LEN && be32(d, DATAGRAM_LEN) & flags::VERSION1 != 0
    }
}
