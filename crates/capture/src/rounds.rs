//! New data per round trip over one run, in the few numbers that tell a
//! flight still growing when the transfer ended (a congestion window that
//! was still opening: slow start, or congestion avoidance from a small
//! start) from one that stayed level (a receive window, a send buffer, an
//! application's pace). Rounds are counted from the run's first segment in
//! steps of the handshake's round trip; a round with no data is skipped,
//! and the round the run ended in, cut short, is left out.

use serde::Serialize;

/// Rounds kept at each end of the run.
const KEPT: usize = 4;

/// The run's rounds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Rounds {
    /// Completed rounds with data.
    pub count: u32,
    /// New bytes in the first [`KEPT`] of them.
    pub first: [u32; KEPT],
    /// New bytes in the last [`KEPT`] of them, oldest first once full.
    pub last: [u32; KEPT],
    /// The most new bytes in one round.
    pub peak: u32,
    #[serde(skip)]
    index: u32,
    #[serde(skip)]
    bytes: u32,
}

impl Rounds {
    /// `len` new bytes `since_ns` after the run's first segment, with
    /// rounds of `round_ns`.
    pub(crate) fn add(&mut self, since_ns: u64, round_ns: u64, len: u64) {
        let i = u32::try_from(since_ns / round_ns.max(1)).unwrap_or(u32::MAX);
        if i != self.index {
            self.complete();
            self.index = i;
        }
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        self.bytes = self.bytes.saturating_add(len);
    }

    fn complete(&mut self) {
        let b = std::mem::take(&mut self.bytes);
        if b == 0 {
            return;
        }
        let n = self.count as usize;
        if n < KEPT {
            self.first[n] = b;
        }
        self.last[n % KEPT] = b;
        self.count = self.count.saturating_add(1);
        self.peak = self.peak.max(b);
    }

    /// The mean of the first kept rounds and of the last, bytes, once
    /// twice [`KEPT`] rounds were completed.
    pub fn ends(&self) -> Option<(f64, f64)> {
        if (self.count as usize) < 2 * KEPT {
            return None;
        }
        let mean = |v: &[u32; KEPT]| v.iter().map(|b| f64::from(*b)).sum::<f64>() / KEPT as f64;
        Some((mean(&self.first), mean(&self.last)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A flight growing by a segment a round over twelve rounds, the last
    /// one cut short: eleven completed, the first four and last four kept.
    #[test]
    fn a_growing_flight_shows_at_its_ends() {
        let mut r = Rounds::default();
        for k in 0..12u64 {
            for s in 0..(10 + k) {
                r.add(k * 40 * MS + s * MS, 40 * MS, 1448);
            }
        }
        assert_eq!(r.count, 11);
        assert_eq!(r.first, [14_480, 15_928, 17_376, 18_824]);
        let (a, b) = r.ends().expect("enough rounds");
        assert!(
            (a - 16_652.0).abs() < 1.0 && (b - 26_788.0).abs() < 1.0,
            "{a} {b}"
        );
        assert_eq!(r.peak, 20 * 1448);
    }

    #[test]
    fn empty_rounds_are_skipped_and_few_rounds_say_nothing() {
        let mut r = Rounds::default();
        r.add(0, 10 * MS, 100);
        r.add(35 * MS, 10 * MS, 100);
        r.add(45 * MS, 10 * MS, 100);
        assert_eq!(r.count, 2);
        assert_eq!(r.ends(), None);
    }
}
