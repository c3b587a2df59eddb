//! UDP data streams: the connect handshake values, the datagram header and
//! the receiver's loss/jitter bookkeeping (spec §5.2–§5.4).
//!
//! This module owns the bytes of a datagram's header and the arithmetic a
//! receiver does per datagram, kept identical to iperf3's so our numbers
//! match its JSON fields. It does not own sockets, pacing or payload filler.

use std::time::Duration;

use crate::error::ProtoError;

/// The client's "connect" datagram (ASCII `9876`).
pub const HELLO: [u8; 4] = *b"9876";
/// The hello of clients ≤3.11 on little-endian hosts; servers accept any hello.
pub const LEGACY_HELLO: [u8; 4] = [0x15, 0xCD, 0x5B, 0x07];
/// The server's reply (ASCII `6789`).
pub const REPLY: [u8; 4] = *b"6789";
/// The reply of servers ≤3.11 on little-endian hosts.
pub const LEGACY_REPLY: [u8; 4] = [0xB1, 0x68, 0xDE, 0x3A];

/// Smallest datagram payload iperf3 allows: the 64-bit header with no filler.
pub const MIN_DATAGRAM_LEN: usize = 16;
/// Largest UDP payload over IPv4.
pub const MAX_DATAGRAM_LEN: usize = 65_507;

/// Whether a datagram is the server's answer to [`HELLO`], current or legacy.
///
/// Only an exactly 4-byte datagram qualifies, so data datagrams (at least
/// [`MIN_DATAGRAM_LEN`] bytes) that arrive first in reverse mode never match.
pub fn is_reply(datagram: &[u8]) -> bool {
    datagram == REPLY || datagram == LEGACY_REPLY
}

/// Width of the sequence number field, chosen by `udp_counters_64bit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SeqWidth {
    /// 32-bit sequence numbers (the default).
    #[default]
    Bits32,
    /// 64-bit sequence numbers (`udp_counters_64bit`).
    Bits64,
}

impl SeqWidth {
    /// The width a test's `udp_counters_64bit` flag selects.
    pub fn from_counters_64bit(on: bool) -> SeqWidth {
        if on {
            SeqWidth::Bits64
        } else {
            SeqWidth::Bits32
        }
    }

    /// Header size for this width: 12 or 16 bytes.
    pub fn header_len(self) -> usize {
        match self {
            SeqWidth::Bits32 => 12,
            SeqWidth::Bits64 => 16,
        }
    }
}

/// The header at the start of every UDP data datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpHeader {
    /// Send time, seconds of the sender's monotonic clock.
    pub sec: u32,
    /// Send time, microseconds within the second.
    pub usec: u32,
    /// Sequence number, from 1.
    pub seq: u64,
}

impl UdpHeader {
    /// A header stamped with `now`, the sender's monotonic time.
    ///
    /// Seconds wrap at 2^32 like iperf3's 32-bit field; receivers only use differences.
    pub fn stamped(seq: u64, now: Duration) -> UdpHeader {
        UdpHeader {
            sec: now.as_secs() as u32,
            usec: now.subsec_micros(),
            seq,
        }
    }

    /// Writes the header into the first bytes of `datagram`, leaving the filler alone.
    ///
    /// With 32-bit counters the sequence number is truncated to 32 bits, as iperf3 does.
    pub fn encode(&self, width: SeqWidth, datagram: &mut [u8]) -> Result<(), ProtoError> {
        check_len(datagram.len())?;
        datagram[0..4].copy_from_slice(&self.sec.to_be_bytes());
        datagram[4..8].copy_from_slice(&self.usec.to_be_bytes());
        match width {
            SeqWidth::Bits32 => datagram[8..12].copy_from_slice(&(self.seq as u32).to_be_bytes()),
            SeqWidth::Bits64 => datagram[8..16].copy_from_slice(&self.seq.to_be_bytes()),
        }
        Ok(())
    }

    /// Reads the header of a received datagram.
    pub fn decode(datagram: &[u8], width: SeqWidth) -> Result<UdpHeader, ProtoError> {
        check_len(datagram.len())?;
        let word = |at: usize| {
            u32::from_be_bytes([
                datagram[at],
                datagram[at + 1],
                datagram[at + 2],
                datagram[at + 3],
            ])
        };
        let seq = match width {
            SeqWidth::Bits32 => u64::from(word(8)),
            SeqWidth::Bits64 => (u64::from(word(8)) << 32) | u64::from(word(12)),
        };
        Ok(UdpHeader {
            sec: word(0),
            usec: word(4),
            seq,
        })
    }
}

fn check_len(len: usize) -> Result<(), ProtoError> {
    if len < MIN_DATAGRAM_LEN {
        return Err(ProtoError::DatagramTooShort {
            len,
            min: MIN_DATAGRAM_LEN,
        });
    }
    Ok(())
}

/// How many recent sequence numbers the duplicate detector remembers.
pub const DUPLICATE_WINDOW: u64 = 65_536;
const WINDOW_WORDS: usize = (DUPLICATE_WINDOW / 64) as usize;

/// One UDP stream's receive statistics, computed exactly as iperf3 does.
///
/// Feed it every datagram received while the test is running (TEST_RUNNING),
/// in arrival order. Per datagram it neither allocates nor loops beyond the
/// sequence gap it has to clear in the duplicate window.
///
/// iperf3 counts a duplicate as out-of-order (and takes one off `lost`); those
/// numbers are kept as is so they match iperf3's `errors`/`packets` fields,
/// and [`UdpStats::duplicates`] counts duplicates exactly on the side.
#[derive(Debug, Clone)]
pub struct UdpReceiver {
    stats: UdpStats,
    prev_transit: Option<f64>,
    seen: SeenWindow,
}

/// A snapshot of a [`UdpReceiver`]'s counters.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UdpStats {
    /// Highest sequence number seen — iperf3's receiver "packets".
    pub max_seq: u64,
    /// Datagrams presumed lost — iperf3's "errors" / `lost_packets`.
    pub lost: u64,
    /// Datagrams that arrived with a sequence number at or below `max_seq`.
    pub out_of_order: u64,
    /// RFC 3550 interarrival jitter, seconds.
    pub jitter: f64,
    /// Datagrams recorded.
    pub received: u64,
    /// Datagrams whose sequence number was already seen within the last
    /// [`DUPLICATE_WINDOW`] numbers.
    pub duplicates: u64,
}

impl UdpStats {
    /// iperf3's loss percentage: 100 × lost / max_seq (0 before any datagram).
    pub fn lost_percent(&self) -> f64 {
        if self.max_seq == 0 {
            0.0
        } else {
            100.0 * self.lost as f64 / self.max_seq as f64
        }
    }
}

impl Default for UdpReceiver {
    fn default() -> UdpReceiver {
        UdpReceiver::new()
    }
}

impl UdpReceiver {
    /// A receiver that has seen nothing. Allocates the 8 KiB duplicate window once.
    pub fn new() -> UdpReceiver {
        UdpReceiver {
            stats: UdpStats::default(),
            prev_transit: None,
            seen: SeenWindow::new(),
        }
    }

    /// Counts one datagram with sequence number `seq`, sender stamp
    /// `send_sec`/`send_usec` and local monotonic `arrival` time.
    pub fn record(&mut self, seq: u64, send_sec: u32, send_usec: u32, arrival: Duration) {
        let s = &mut self.stats;
        s.received += 1;
        if seq > s.max_seq {
            // `seq > max_seq` rules out overflow in `max_seq + 1`.
            if seq > s.max_seq + 1 {
                s.lost = s.lost.saturating_add(seq - 1 - s.max_seq);
            }
            s.max_seq = seq;
        } else {
            s.out_of_order += 1;
            if s.lost > 0 {
                s.lost -= 1;
            }
        }
        if self.seen.insert(seq) == Seen::Again {
            s.duplicates += 1;
        }

        let transit = transit_secs(send_sec, send_usec, arrival);
        let prev = self.prev_transit.unwrap_or(transit);
        let d = (transit - prev).abs();
        self.prev_transit = Some(transit);
        // RFC 3550 §6.4.1 / RFC 1889 §A.8: J += (|D| - J) / 16.
        s.jitter += (d - s.jitter) / 16.0;
    }

    /// Counts one datagram from its decoded header.
    pub fn record_header(&mut self, header: &UdpHeader, arrival: Duration) {
        self.record(header.seq, header.sec, header.usec, arrival);
    }

    /// The counters so far (take one at the end of the omit period for `omitted_*`).
    pub fn stats(&self) -> UdpStats {
        self.stats
    }
}

/// `|arrival − send stamp|` in seconds, computed the way iperf3 does: both
/// times at microsecond resolution, the difference split into whole seconds
/// and microseconds, then `secs + usecs / 1e6` in floating point.
fn transit_secs(send_sec: u32, send_usec: u32, arrival: Duration) -> f64 {
    // iperf3 reads its clock in microseconds, truncating nanoseconds.
    let arrival_us = i128::try_from(arrival.as_micros()).unwrap_or(i128::MAX);
    let sent_us = i128::from(send_sec) * 1_000_000 + i128::from(send_usec);
    let diff = (arrival_us - sent_us).unsigned_abs();
    let secs = (diff / 1_000_000) as f64;
    let usecs = (diff % 1_000_000) as f64;
    secs + usecs / 1_000_000.0
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    First,
    Again,
    /// Too far below the highest number to remember.
    TooOld,
}

/// A bitmap of which of the last [`DUPLICATE_WINDOW`] sequence numbers arrived.
#[derive(Debug, Clone)]
struct SeenWindow {
    bits: Box<[u64; WINDOW_WORDS]>,
    /// Highest sequence number inserted (0 before any).
    top: u64,
}

impl SeenWindow {
    fn new() -> SeenWindow {
        SeenWindow {
            bits: Box::new([0; WINDOW_WORDS]),
            top: 0,
        }
    }

    fn slot(seq: u64) -> (usize, u64) {
        let index = seq % DUPLICATE_WINDOW;
        ((index / 64) as usize, 1 << (index % 64))
    }

    fn insert(&mut self, seq: u64) -> Seen {
        if seq > self.top {
            // Numbers between the old top and `seq` have not arrived; their
            // slots still hold numbers a window older, so clear them.
            if seq - self.top >= DUPLICATE_WINDOW {
                self.bits.fill(0);
            } else {
                for skipped in self.top + 1..seq {
                    let (word, mask) = SeenWindow::slot(skipped);
                    self.bits[word] &= !mask;
                }
            }
            self.top = seq;
            let (word, mask) = SeenWindow::slot(seq);
            self.bits[word] |= mask;
            return Seen::First;
        }
        if self.top - seq >= DUPLICATE_WINDOW {
            return Seen::TooOld;
        }
        let (word, mask) = SeenWindow::slot(seq);
        if self.bits[word] & mask != 0 {
            Seen::Again
        } else {
            self.bits[word] |= mask;
            Seen::First
        }
    }
}
