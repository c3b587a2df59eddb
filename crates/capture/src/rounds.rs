//! New data per round trip over one run, summarised in a few numbers that
//! tell a flight still growing when the transfer ended (a congestion
//! window still opening: congestion avoidance from a small start) from
//! one that grew in slow start and then stayed level (a receive window, a
//! send buffer, an application's pace). Rounds are counted from the run's
//! first segment in steps of the handshake's round trip; a round with no
//! data is skipped, and the round the run ended in, cut short, is left out.
//!
//! However long the run, the rounds are kept as [`BUCKETS`] buckets, each
//! the sum of a power of two of consecutive rounds (two neighbours merge
//! when the run outgrows them), so the memory is fixed and the series is
//! seen whole at a coarser grain.

use serde::Serialize;

/// Buckets the rounds are kept in.
const BUCKETS: usize = 16;
/// How much more the last quarter of the rounds carried than the first.
pub const GROWTH: f64 = 1.3;
/// How much the rounds of the second half still grew across it, a line
/// fitted to them (1.1: by a tenth of their mean): still growing at the
/// end, not level after slow start.
pub const STILL_GROWING: f64 = 1.1;

/// The open run's rounds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Rounds {
    /// Bytes per bucket.
    sum: [u32; BUCKETS],
    /// Rounds with data per bucket.
    filled: [u16; BUCKETS],
    /// Rounds per bucket (a power of two, 0 before the first round).
    width: u32,
    /// The round being filled, and its bytes so far.
    index: u32,
    bytes: u32,
    /// Completed rounds with data, and the most bytes in one.
    count: u32,
    peak: u32,
}

/// What a run's rounds came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Growth {
    /// Completed rounds with data.
    pub rounds: u32,
    /// The most new bytes in one round.
    pub peak: u32,
    /// Mean bytes per round over the first quarter of the rounds.
    pub first: u32,
    /// Over the last quarter.
    pub last: u32,
    /// The last quarter carried [`GROWTH`] times the first, and the
    /// second half still grew by [`STILL_GROWING`].
    pub growing: bool,
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
        self.width = self.width.max(1);
        while (self.index / self.width) as usize >= BUCKETS {
            self.merge();
        }
        let k = (self.index / self.width) as usize;
        self.sum[k] = self.sum[k].saturating_add(b);
        self.filled[k] = self.filled[k].saturating_add(1);
        self.count = self.count.saturating_add(1);
        self.peak = self.peak.max(b);
    }

    /// Halves the grain: each pair of buckets becomes one.
    fn merge(&mut self) {
        for j in 0..BUCKETS / 2 {
            self.sum[j] = self.sum[2 * j].saturating_add(self.sum[2 * j + 1]);
            self.filled[j] = self.filled[2 * j].saturating_add(self.filled[2 * j + 1]);
        }
        self.sum[BUCKETS / 2..].fill(0);
        self.filled[BUCKETS / 2..].fill(0);
        self.width = self.width.saturating_mul(2);
    }

    /// The summary, the round cut short at the end left out.
    pub(crate) fn growth(&self) -> Growth {
        let means: Vec<f64> = (0..BUCKETS)
            .filter(|k| self.filled[*k] > 0)
            .map(|k| f64::from(self.sum[k]) / f64::from(self.filled[k]))
            .collect();
        let n = means.len();
        let q = (n / 4).max(1);
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let (first, last) = if n >= 4 {
            (mean(&means[..q]), mean(&means[n - q..]))
        } else {
            (0.0, 0.0)
        };
        Growth {
            rounds: self.count,
            peak: self.peak,
            first: first as u32,
            last: last as u32,
            growing: self.count >= 8
                && n >= 4
                && last >= GROWTH * first
                && rise(&means[n / 2..]) >= STILL_GROWING - 1.0,
        }
    }
}

/// The rise of a straight line fitted to `v` across it, as a share of
/// `v`'s mean: a level series gives about 0 however noisy, a growing one
/// its growth.
fn rise(v: &[f64]) -> f64 {
    let n = v.len() as f64;
    if v.len() < 2 {
        return 0.0;
    }
    let mx = (n - 1.0) / 2.0;
    let my = v.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in v.iter().enumerate() {
        let dx = i as f64 - mx;
        sxy += dx * (y - my);
        sxx += dx * dx;
    }
    if my <= 0.0 || sxx <= 0.0 {
        return 0.0;
    }
    sxy / sxx * (n - 1.0) / my
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// `per(k)` segments of 1,448 B in round k, for `n` rounds and one
    /// more cut short.
    fn run(n: u64, per: impl Fn(u64) -> u64) -> Rounds {
        let mut r = Rounds::default();
        for k in 0..=n {
            for s in 0..per(k) {
                r.add(k * 40 * MS + s * 100_000, 40 * MS, 1448);
            }
        }
        r
    }

    /// Congestion avoidance from 10 segments, a segment more per round:
    /// still growing at the end.
    #[test]
    fn a_flight_growing_to_the_end_is_growing() {
        let g = run(24, |k| 10 + k).growth();
        assert_eq!(g.rounds, 24);
        assert_eq!(g.peak, 33 * 1448);
        assert!(g.growing, "{g:?}");
        assert!(f64::from(g.last) > GROWTH * f64::from(g.first), "{g:?}");
    }

    /// Slow start to a ceiling of 90 segments, then level for 240 rounds
    /// (a send buffer): grew, but not at the end.
    #[test]
    fn slow_start_then_level_is_not_growing() {
        let g = run(250, |k| (10 << k.min(4)).min(90)).growth();
        assert!(!g.growing, "{g:?}");
        assert_eq!(g.peak, 90 * 1448);
        // Level from the start: not growing either.
        assert!(!run(30, |_| 20).growth().growing);
    }

    #[test]
    fn a_fitted_line_reads_through_noise() {
        assert!((rise(&[10.0, 11.0, 12.0, 13.0]) - 3.0 / 11.5).abs() < 1e-9);
        assert!(rise(&[10.0, 14.0, 10.0, 10.0, 14.0, 10.0]).abs() < 0.01);
        assert_eq!(rise(&[5.0]), 0.0);
    }

    #[test]
    fn empty_rounds_are_skipped_and_few_rounds_say_nothing() {
        let mut r = Rounds::default();
        r.add(0, 10 * MS, 100);
        r.add(35 * MS, 10 * MS, 100);
        r.add(45 * MS, 10 * MS, 100);
        let g = r.growth();
        assert_eq!(g.rounds, 2);
        assert!(!g.growing);
    }
}
