//! A direction's data over time, as the capture point saw it: RTT samples
//! (new data to the ACK that covers it, one timed segment at a time, none
//! across a retransmission: Karn's rule), the span and volume of new data
//! with its best second, the time the sender had data in flight, the time
//! its flight stood at the peer's advertised window, the time that window
//! stood under 3/4 of the largest it had reached, and how continuously
//! data passed the capture point (the round trip cut in eighths: a path
//! that is full carries data in every one, a sender held by its window,
//! buffer or application sends a burst a round trip and pauses).
//!
//! The times are accumulated between consecutive segments of the
//! connection: between two segments nothing the capture point sees changes,
//! so the flight and the window at one segment hold until the next. What
//! they mean depends on where the capture was taken: at the sender the
//! flight is the sender's; nearer the receiver the ACKs have not reached the
//! sender yet and the flight seen is smaller than the sender's (see
//! docs/capture.md).

use serde::Serialize;

/// Data→ACK round-trip samples at the capture point.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct RttSamples {
    /// Samples taken.
    pub samples: u64,
    /// Smallest, ns.
    pub min_ns: Option<u64>,
    /// Mean, ns.
    pub mean_ns: Option<u64>,
    #[serde(skip)]
    sum_ns: u128,
    /// The segment being timed: its end sequence and when it was seen.
    #[serde(skip)]
    timed: Option<(u32, u64)>,
}

impl RttSamples {
    /// New data ending at `end` seen at `ts`: timed if nothing is.
    pub(crate) fn sent(&mut self, end: u32, ts: u64) {
        if self.timed.is_none() {
            self.timed = Some((end, ts));
        }
    }

    /// A retransmission starting at `seq`: a timed segment it covers could
    /// be acknowledged for either copy, so it is not timed (Karn).
    pub(crate) fn resent(&mut self, seq: u32) {
        if self
            .timed
            .is_some_and(|(end, _)| crate::seq::seq_gt(end, seq))
        {
            self.timed = None;
        }
    }

    /// The peer acknowledged up to `ack` at `ts`.
    pub(crate) fn acked(&mut self, ack: u32, ts: u64) {
        let Some((end, sent)) = self.timed else {
            return;
        };
        if crate::seq::seq_gt(end, ack) {
            return;
        }
        self.timed = None;
        let s = ts.saturating_sub(sent);
        self.samples += 1;
        self.sum_ns += u128::from(s);
        self.min_ns = Some(self.min_ns.map_or(s, |m| m.min(s)));
        self.mean_ns = Some((self.sum_ns / u128::from(self.samples)) as u64);
    }
}

/// New data over time, and the time the flight was up or at the window.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct DataTiming {
    /// Payload bytes sent for the first time (retransmissions excluded).
    pub new_bytes: u64,
    /// First data segment's time, ns.
    pub first_data_ns: Option<u64>,
    /// Last data segment's time, ns.
    pub last_data_ns: Option<u64>,
    /// Last data segment's time, a resend included, ns: a transfer that
    /// stalls resending lasts until its last resend.
    pub last_sent_ns: Option<u64>,
    /// The most new data in one second (whole seconds from the first data
    /// segment), bytes.
    pub best_second_bytes: u64,
    /// Time with data in flight at the capture point, ns.
    pub busy_ns: u64,
    /// Time the flight stood within one MSS of the peer's advertised
    /// window (known scale only), ns.
    pub window_limited_ns: u64,
    /// Payload of the largest segment no larger than the peer's MSS
    /// option: the segment size on the wire, never a super-segment.
    pub largest_wire_segment: u32,
    /// The peer's advertised window averaged over the time with data in
    /// flight (known scale only), bytes: the window the sender faced, which
    /// a short-lived peak (a window that grows before a fixed receive
    /// buffer clamps it) does not stand for.
    pub mean_window_bytes: Option<u64>,
    /// Time over the data transfer (from the first data segment to the
    /// last, or while data is in flight) with the peer's window known, ns:
    /// the time `window_shrank_ns` is a share of.
    pub window_known_ns: u64,
    /// Of that time, the peer's window stood under 3/4 of the largest it
    /// had advertised over the transfer before, ns: its buffer held data
    /// its application had not read (the test a live connection's samples
    /// of the sender's window take). A zero window counts, flight or not.
    pub window_shrank_ns: u64,
    /// The largest window so far (a scaled window is at most 2^30 B).
    #[serde(skip)]
    window_max: u32,
    /// Window time with nothing in flight, counted once more data follows
    /// (a stall inside the transfer, not the idle tail after it).
    #[serde(skip)]
    window_idle: (u64, u64),
    /// Eighths of the handshake RTT from the first data segment to the
    /// last (handshake known only).
    pub slots: u32,
    /// Of them, those in which a data segment passed the capture point.
    pub slots_with_data: u32,
    #[serde(skip)]
    bin: (u64, u64),
    #[serde(skip)]
    window_sum: (u128, u64),
    /// The first data segment's time, ns (the slots' origin).
    #[serde(skip)]
    slot_t0: u64,
    /// The slots' length, ns (0 until the first data segment).
    #[serde(skip)]
    slot_ns: u32,
}

/// Slots per round trip for [`DataTiming::continuity`].
pub const SLOTS_PER_RTT: u64 = 8;
/// The fewest slots (two round trips) a continuity share is given for.
pub const MIN_SLOTS: u64 = 2 * SLOTS_PER_RTT;

impl DataTiming {
    /// `len` new bytes seen at `ts`.
    pub(crate) fn new_data(&mut self, ts: u64, len: u32) {
        let first = *self.first_data_ns.get_or_insert(ts);
        self.last_data_ns = Some(ts);
        let (known, shrank) = std::mem::take(&mut self.window_idle);
        self.window_known_ns += known;
        self.window_shrank_ns += shrank;
        self.new_bytes += u64::from(len);
        let second = ts.saturating_sub(first) / 1_000_000_000;
        if second != self.bin.0 {
            self.bin = (second, 0);
        }
        self.bin.1 += u64::from(len);
        self.best_second_bytes = self.best_second_bytes.max(self.bin.1);
    }

    /// A data segment (new or resent) seen at `ts`, the handshake RTT being
    /// `rtt_ns`: marks its slot as holding data.
    pub(crate) fn passed(&mut self, ts: u64, rtt_ns: Option<u64>) {
        let Some(rtt) = rtt_ns.filter(|r| *r >= SLOTS_PER_RTT) else {
            return;
        };
        if self.slot_ns == 0 {
            // An eighth of an RTT past 34 s does not fit: no share then.
            let Ok(len) = u32::try_from(rtt / SLOTS_PER_RTT) else {
                return;
            };
            (self.slot_ns, self.slot_t0) = (len, ts);
        }
        let i = ts.saturating_sub(self.slot_t0) / u64::from(self.slot_ns);
        // u32 slots: 136 years of 1 s round trips, 15 h of 100 µs ones.
        let i = u32::try_from(i).unwrap_or(u32::MAX - 1);
        if self.slots_with_data == 0 || i >= self.slots {
            self.slots_with_data = self.slots_with_data.saturating_add(1);
            self.slots = i + 1;
        }
    }

    /// The share of eighth-RTT slots, first data segment to last, in which
    /// data passed the capture point; `None` under [`MIN_SLOTS`] slots or
    /// without the handshake's RTT.
    pub fn continuity(&self) -> Option<f64> {
        (u64::from(self.slots) >= MIN_SLOTS)
            .then(|| f64::from(self.slots_with_data) / f64::from(self.slots))
    }

    /// A data segment, new or resent (not a keep-alive), seen at `ts`.
    pub(crate) fn sent(&mut self, ts: u64) {
        self.last_sent_ns = Some(self.last_sent_ns.map_or(ts, |l| l.max(ts)));
    }

    /// A data segment of `len` bytes against the peer's MSS option.
    pub(crate) fn segment_size(&mut self, len: u32, peer_mss: Option<u16>) {
        if peer_mss.is_none_or(|m| len <= u32::from(m)) {
            self.largest_wire_segment = self.largest_wire_segment.max(len);
        }
    }

    /// `dt` ns passed with `flight` bytes in flight against `window`.
    pub(crate) fn elapse(&mut self, dt: u64, flight: u64, window: Option<u64>, mss: u32) {
        if let Some(w) = window.filter(|_| self.first_data_ns.is_some()) {
            let shrank = if w.saturating_mul(4) < u64::from(self.window_max).saturating_mul(3) {
                dt
            } else {
                0
            };
            if flight == 0 {
                self.window_idle.0 += dt;
                self.window_idle.1 += shrank;
            } else {
                self.window_known_ns += dt;
                self.window_shrank_ns += shrank;
            }
            self.window_max = self.window_max.max(u32::try_from(w).unwrap_or(u32::MAX));
        }
        if flight == 0 {
            return;
        }
        self.busy_ns += dt;
        let Some(w) = window else {
            return;
        };
        if flight + u64::from(mss) >= w {
            self.window_limited_ns += dt;
        }
        let (sum, time) = &mut self.window_sum;
        *sum += u128::from(w) * u128::from(dt);
        *time += dt;
        self.mean_window_bytes = Some((*sum / u128::from((*time).max(1))) as u64);
    }

    /// The share of the time with data in flight and a known window that
    /// the window stood shrunk (see [`Self::window_shrank_ns`]); `None`
    /// when no such time passed.
    pub fn window_shrank_share(&self) -> Option<f64> {
        (self.window_known_ns > 0)
            .then(|| self.window_shrank_ns as f64 / self.window_known_ns as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `windows` in force for 10 ms each, with a full flight.
    fn over(windows: &[u64]) -> DataTiming {
        let mut t = DataTiming::default();
        t.new_data(0, 1460);
        for &w in windows {
            t.elapse(10_000_000, 8000, Some(w), 1460);
        }
        t
    }

    #[test]
    fn a_window_that_only_grows_never_shrank() {
        let t = over(&[17_520, 32_000, 64_000, 64_000, 128_000]);
        assert_eq!(t.window_known_ns, 50_000_000);
        assert_eq!(t.window_shrank_share(), Some(0.0));
    }

    #[test]
    fn a_window_under_three_quarters_of_its_largest_shrank() {
        // 64 kB, then a receiver that falls behind: 40 kB (under 48 kB)
        // twice, 50 kB (not under 3/4), 8 kB, then back to 64 kB.
        let t = over(&[64_000, 40_000, 40_000, 50_000, 8_000, 64_000]);
        assert_eq!(t.window_shrank_ns, 30_000_000);
        assert_eq!(t.window_shrank_share(), Some(0.5));
    }

    #[test]
    fn a_stall_inside_the_transfer_counts_and_the_idle_tail_does_not() {
        let mut t = over(&[64_000]);
        // A zero window with nothing in flight for 30 ms, then more data.
        t.elapse(30_000_000, 0, Some(0), 1460);
        t.new_data(40_000_000, 1460);
        assert_eq!(t.window_shrank_ns, 30_000_000);
        // After the last data: idle, the window half-open, never counted.
        t.elapse(100_000_000, 0, Some(20_000), 1460);
        assert_eq!(t.window_known_ns, 40_000_000);
        assert_eq!(t.window_shrank_share(), Some(0.75));
    }

    #[test]
    fn before_data_or_without_a_known_window_there_is_no_sample() {
        let mut t = DataTiming::default();
        t.elapse(10_000_000, 0, Some(64_000), 1460);
        t.new_data(10_000_000, 1460);
        t.elapse(10_000_000, 8000, None, 1460);
        assert_eq!(t.window_shrank_share(), None);
    }
}
