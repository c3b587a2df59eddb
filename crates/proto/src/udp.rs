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
    // iperf3 reads its clock in microseconds, truncating nanoseconds. 64-bit
    // arithmetic on purpose: this runs once per datagram, and 128-bit
    // division was a third of the 64-byte receive path. A u64 of
    // microseconds lasts half a million years; a later arrival saturates.
    let arrival_us = arrival
        .as_secs()
        .saturating_mul(1_000_000)
        .saturating_add(u64::from(arrival.subsec_micros()));
    let sent_us = u64::from(send_sec) * 1_000_000 + u64::from(send_usec);
    let diff = arrival_us.abs_diff(sent_us);
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

    /// Clears the slots of `count` (< window) numbers from `from` on, a word
    /// at a time, so even a hostile jump costs at most ~1000 word operations.
    fn clear_span(&mut self, from: u64, count: u64) {
        let mut index = from % DUPLICATE_WINDOW;
        let mut left = count;
        while left > 0 {
            let bit = index % 64;
            let n = left.min(64 - bit);
            let mask = if n == 64 {
                u64::MAX
            } else {
                ((1u64 << n) - 1) << bit
            };
            self.bits[(index / 64) as usize] &= !mask;
            left -= n;
            index = (index + n) % DUPLICATE_WINDOW;
        }
    }

    fn insert(&mut self, seq: u64) -> Seen {
        if seq > self.top {
            // Numbers between the old top and `seq` have not arrived; their
            // slots still hold numbers a window older, so clear them.
            if seq - self.top >= DUPLICATE_WINDOW {
                self.bits.fill(0);
            } else {
                self.clear_span(self.top + 1, seq - self.top - 1);
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    #[test]
    fn handshake_values() {
        assert_eq!(HELLO, [0x39, 0x38, 0x37, 0x36]);
        assert_eq!(REPLY, [0x36, 0x37, 0x38, 0x39]);
        assert!(is_reply(&REPLY));
        assert!(is_reply(&LEGACY_REPLY));
        assert!(!is_reply(&HELLO));
        assert!(!is_reply(b"678"));
        // A data datagram starting with the reply bytes is still data.
        assert!(!is_reply(b"6789\0\0\0\0\0\0\0\x01\0\0\0\0"));
    }

    #[test]
    fn decodes_the_captured_first_datagram() {
        let mut datagram = vec![0xAA; 32768];
        datagram[..12].copy_from_slice(&[0, 0, 0x01, 0x71, 0, 0x05, 0xfe, 0x25, 0, 0, 0, 1]);
        let header = UdpHeader::decode(&datagram, SeqWidth::Bits32).expect("decodes");
        assert_eq!(
            header,
            UdpHeader {
                sec: 369,
                usec: 392_741,
                seq: 1
            }
        );
    }

    #[test]
    fn encodes_32_and_64_bit_headers() {
        let header = UdpHeader {
            sec: 0x0102_0304,
            usec: 999_999,
            seq: 0x1_0000_0005,
        };
        let mut d32 = [0xEE; 16];
        header.encode(SeqWidth::Bits32, &mut d32).expect("fits");
        assert_eq!(
            d32,
            [1, 2, 3, 4, 0, 0x0F, 0x42, 0x3F, 0, 0, 0, 5, 0xEE, 0xEE, 0xEE, 0xEE]
        );
        // 32-bit counters truncate, as iperf3's do.
        assert_eq!(
            UdpHeader::decode(&d32, SeqWidth::Bits32).map(|h| h.seq),
            Ok(5)
        );

        let mut d64 = [0xEE; 20];
        header.encode(SeqWidth::Bits64, &mut d64).expect("fits");
        assert_eq!(&d64[8..16], &[0, 0, 0, 1, 0, 0, 0, 5]);
        assert_eq!(&d64[16..], &[0xEE; 4]);
        assert_eq!(UdpHeader::decode(&d64, SeqWidth::Bits64), Ok(header));
    }

    #[test]
    fn datagrams_below_16_bytes_are_refused() {
        let err = UdpHeader::decode(&[0; 15], SeqWidth::Bits32).expect_err("too short");
        assert_eq!(
            err.to_string(),
            "UDP datagram of 15 bytes is shorter than the 16-byte minimum"
        );
        let header = UdpHeader {
            sec: 0,
            usec: 0,
            seq: 1,
        };
        assert_eq!(
            header.encode(SeqWidth::Bits64, &mut [0; 12]),
            Err(ProtoError::DatagramTooShort { len: 12, min: 16 })
        );
    }

    #[test]
    fn stamps_come_from_the_monotonic_time() {
        let header = UdpHeader::stamped(7, Duration::new(369, 392_741_999));
        assert_eq!(
            header,
            UdpHeader {
                sec: 369,
                usec: 392_741,
                seq: 7
            }
        );
    }

    fn feed(seqs: &[u64]) -> UdpStats {
        let mut rx = UdpReceiver::new();
        for &seq in seqs {
            rx.record(seq, 0, 0, Duration::ZERO);
        }
        rx.stats()
    }

    #[test]
    fn in_order_stream_has_no_loss() {
        let s = feed(&[1, 2, 3, 4]);
        assert_eq!(
            (s.max_seq, s.lost, s.out_of_order, s.duplicates, s.received),
            (4, 0, 0, 0, 4)
        );
        assert_eq!(s.lost_percent(), 0.0);
    }

    #[test]
    fn gap_counts_as_loss() {
        let s = feed(&[1, 2, 6, 7]);
        assert_eq!((s.max_seq, s.lost, s.out_of_order), (7, 3, 0));
        assert!((s.lost_percent() - 300.0 / 7.0).abs() < 1e-12);
    }

    #[test]
    fn late_arrivals_are_taken_back_from_loss() {
        // 5 opens a gap of 2 (3, 4); both arrive late.
        let s = feed(&[1, 2, 5, 3, 4, 6]);
        assert_eq!(
            (s.max_seq, s.lost, s.out_of_order, s.duplicates),
            (6, 0, 2, 0)
        );
    }

    #[test]
    fn duplicates_are_out_of_order_for_iperf3_and_counted_apart() {
        // iperf3 would report 0 lost here although 2 never arrived: the
        // duplicate 3 cancels the loss. Its numbers are kept; `duplicates` tells.
        let s = feed(&[1, 3, 3]);
        assert_eq!(
            (s.max_seq, s.lost, s.out_of_order, s.duplicates),
            (3, 0, 1, 1)
        );
        // With no loss to take back, loss stays at 0.
        let s = feed(&[1, 2, 2, 2, 1]);
        assert_eq!(
            (s.max_seq, s.lost, s.out_of_order, s.duplicates),
            (2, 0, 3, 3)
        );
    }

    #[test]
    fn duplicate_window_forgets_old_numbers() {
        let far = 1 + DUPLICATE_WINDOW;
        let s = feed(&[1, far, 1, 1, 2, 2]);
        // 1 is now too old to be judged; 2 is just inside the window.
        assert_eq!(s.duplicates, 1);
        assert_eq!(s.out_of_order, 4);
        let s = feed(&[1, far, far - 1, far - 1, far]);
        assert_eq!(s.duplicates, 2);
        // A slot reused after the window wrapped is not mistaken for a duplicate.
        let s = feed(&[
            5,
            5 + DUPLICATE_WINDOW - 1,
            5 + DUPLICATE_WINDOW,
            5 + DUPLICATE_WINDOW - 1,
        ]);
        assert_eq!(s.duplicates, 1);
    }

    #[test]
    fn jitter_matches_rfc3550_by_hand() {
        // Sent every 10 ms; transits 5, 7, 4, 4 ms.
        let sends = [(100, 0), (100, 10_000), (100, 20_000), (100, 30_000)];
        let arrivals = [100.005, 100.017, 100.024, 100.034];
        let mut rx = UdpReceiver::new();
        for (i, ((sec, usec), at)) in sends.iter().zip(arrivals).enumerate() {
            rx.record(i as u64 + 1, *sec, *usec, Duration::from_secs_f64(at));
        }
        // J1 = 0; J2 = 0.002/16 = 0.000125; J3 = J2 + (0.003 - J2)/16 = 0.0003046875;
        // J4 = J3 * 15/16 = 0.00028564453125.
        let jitter = rx.stats().jitter;
        assert!((jitter - 0.000_285_644_531_25).abs() < 1e-15, "{jitter}");
    }

    #[test]
    fn transit_is_absolute_and_microsecond_truncated() {
        // The sender's uptime is ahead of ours: |arrival − stamp|.
        let t = transit_secs(369, 392_741, Duration::from_millis(10_500));
        assert_eq!(t, 358.0 + 892_741.0 / 1_000_000.0);
        // Nanoseconds are dropped as iperf3's clock reading does.
        assert_eq!(
            transit_secs(1, 0, Duration::new(1, 1_999)),
            1.0 / 1_000_000.0
        );
        // The first datagram only primes the filter.
        let mut rx = UdpReceiver::new();
        rx.record(1, 0, 0, Duration::from_secs(3));
        assert_eq!(rx.stats().jitter, 0.0);
    }

    proptest! {
        /// The 64-bit arithmetic agrees with exact 128-bit arithmetic for any
        /// stamp a peer can send and any arrival within ~35,000 years.
        #[test]
        fn transit_matches_wide_arithmetic(sec in any::<u32>(), usec in any::<u32>(), at_s in 0u64..(1 << 40), at_ns in 0u32..1_000_000_000) {
            let arrival = Duration::new(at_s, at_ns);
            let a = i128::try_from(arrival.as_micros()).expect("fits");
            let d = (a - (i128::from(sec) * 1_000_000 + i128::from(usec))).unsigned_abs();
            let wide = (d / 1_000_000) as f64 + (d % 1_000_000) as f64 / 1_000_000.0;
            prop_assert_eq!(transit_secs(sec, usec, arrival), wide);
        }
    }

    proptest! {
        #[test]
        fn header_round_trip(sec in any::<u32>(), usec in any::<u32>(), seq in any::<u64>(), len in 16usize..64) {
            let header = UdpHeader { sec, usec, seq };
            let mut buf = vec![0u8; len];
            header.encode(SeqWidth::Bits64, &mut buf).expect("long enough");
            prop_assert_eq!(UdpHeader::decode(&buf, SeqWidth::Bits64), Ok(header));
            header.encode(SeqWidth::Bits32, &mut buf).expect("long enough");
            let back = UdpHeader::decode(&buf, SeqWidth::Bits32).expect("decodes");
            prop_assert_eq!(back, UdpHeader { seq: seq & 0xFFFF_FFFF, ..header });
        }

        #[test]
        fn duplicates_are_exact_within_the_window(seqs in proptest::collection::vec(0u64..2000, 0..300)) {
            let s = feed(&seqs);
            let mut seen = HashSet::new();
            let expected = seqs.iter().filter(|seq| !seen.insert(**seq)).count() as u64;
            prop_assert_eq!(s.duplicates, expected);
            prop_assert!(s.duplicates <= s.out_of_order);
            prop_assert_eq!(s.received, seqs.len() as u64);
            prop_assert_eq!(s.max_seq, seqs.iter().copied().max().unwrap_or(0));
        }

        #[test]
        fn duplicates_match_a_reference_across_window_jumps(
            seqs in proptest::collection::vec(
                prop_oneof![0u64..300_000, (0u64..300_000).prop_map(|s| s / 64 * 64)], 0..300),
        ) {
            let s = feed(&seqs);
            let mut seen = HashSet::new();
            let mut top = 0;
            let mut expected = 0;
            for &seq in &seqs {
                if seq <= top && top - seq < DUPLICATE_WINDOW && seen.contains(&seq) {
                    expected += 1;
                }
                seen.insert(seq);
                top = top.max(seq);
            }
            prop_assert_eq!(s.duplicates, expected);
        }

        #[test]
        fn any_sequence_is_handled(seqs in proptest::collection::vec(any::<u64>(), 0..50),
                                   stamps in proptest::collection::vec((any::<u32>(), any::<u32>(), any::<u64>()), 50)) {
            let mut rx = UdpReceiver::new();
            for (seq, (sec, usec, nanos)) in seqs.iter().zip(stamps) {
                rx.record(*seq, sec, usec, Duration::from_nanos(nanos));
            }
            let s = rx.stats();
            prop_assert!(s.jitter.is_finite() && s.jitter >= 0.0);
            prop_assert!(s.lost < u64::MAX);
        }
    }
}
