//! iperf3's `--server-bitrate-limit RATE[/SECS]`: a test whose data, all
//! streams and both directions together, averages more than RATE over the
//! last SECS (5 by default) is ended by the server. Unlike `--max-bitrate`
//! nothing is refused up front: a client asking for no rate runs until its
//! traffic goes over.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How often a sample of the bytes moved is kept.
const STEP: Duration = Duration::from_millis(250);

/// The bytes moved so far, sampled every [`STEP`] over the last window.
#[derive(Debug, Default)]
pub(crate) struct RateCap {
    samples: VecDeque<(Instant, u64)>,
}

impl RateCap {
    /// Takes the bytes moved so far; the average rate in bit/s over the
    /// last `window` when a whole window has been seen and that average
    /// is over `bps`.
    pub(crate) fn over(
        &mut self,
        now: Instant,
        moved: u64,
        bps: u64,
        window: Duration,
    ) -> Option<f64> {
        if self
            .samples
            .back()
            .is_none_or(|(t, _)| now.duration_since(*t) >= STEP)
        {
            self.samples.push_back((now, moved));
        }
        // Keep the newest sample at least a window old, and those after it.
        while self
            .samples
            .get(1)
            .is_some_and(|(t, _)| now.duration_since(*t) >= window)
        {
            self.samples.pop_front();
        }
        let (t0, b0) = *self.samples.front()?;
        let dt = now.duration_since(t0);
        if dt < window || dt.is_zero() {
            return None;
        }
        let avg = moved.saturating_sub(b0) as f64 * 8.0 / dt.as_secs_f64();
        (avg > bps as f64).then_some(avg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `rate_bps` of traffic for `secs`, sampled every 100 ms; the
    /// first time the cap speaks, in seconds, and its average.
    fn run(rate_bps: u64, cap_bps: u64, window: Duration, secs: u64) -> Option<(f64, f64)> {
        let t0 = Instant::now();
        let mut cap = RateCap::default();
        (1..=secs * 10).find_map(|i| {
            let at = Duration::from_millis(100 * i);
            let moved = rate_bps / 8 * i / 10;
            cap.over(t0 + at, moved, cap_bps, window)
                .map(|avg| (at.as_secs_f64(), avg))
        })
    }

    #[test]
    fn under_the_cap_runs_on() {
        assert_eq!(
            run(90_000_000, 100_000_000, Duration::from_secs(5), 20),
            None
        );
    }

    #[test]
    fn over_the_cap_ends_once_a_window_is_seen() {
        let (at, avg) =
            run(200_000_000, 100_000_000, Duration::from_secs(5), 20).unwrap_or_default();
        assert!((5.0..=5.5).contains(&at), "at {at} s");
        assert!((avg - 200e6).abs() < 1e6, "average {avg}");
        let (at, _) = run(200_000_000, 100_000_000, Duration::from_secs(2), 20).unwrap_or_default();
        assert!((2.0..=2.5).contains(&at), "at {at} s");
    }

    #[test]
    fn a_burst_averaged_over_the_window() {
        // 1 s at 400 Mbit/s, then nothing: 80 Mbit/s over 5 s.
        let t0 = Instant::now();
        let mut cap = RateCap::default();
        let mut spoke = false;
        for i in 1..=100u64 {
            let moved = 50_000_000 * i.min(10) / 10;
            let w = Duration::from_secs(5);
            spoke |= cap
                .over(t0 + Duration::from_millis(100 * i), moved, 100_000_000, w)
                .is_some();
        }
        assert!(!spoke);
    }
}
