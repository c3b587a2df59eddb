//! `-b` on a request/response stream: after each transaction the stream
//! sleeps until the bits it has moved are due at the rate, so requests and
//! responses together stay within it (a server holds its answers to it too).

use std::time::{Duration, Instant};

use crate::datathread::POLL_SLICE;

/// Holds a stream's transactions to `-b`: after each, sleeps until the bits
/// moved so far are due at the rate.
pub(crate) struct TransactionPace {
    bps: u64,
    start: Instant,
    bits: u128,
}

/// When `bits` are due at `bps`, counted from the stream's start.
fn due(bits: u128, bps: u64) -> Duration {
    let due_ns = bits * 1_000_000_000 / u128::from(bps);
    Duration::from_nanos(u64::try_from(due_ns).unwrap_or(u64::MAX))
}

impl TransactionPace {
    /// A pace at `bps` bit/s; `None` (unpaced) without a rate or at 0.
    pub(crate) fn new(bps: Option<u64>) -> Option<TransactionPace> {
        bps.filter(|b| *b > 0).map(|bps| TransactionPace {
            bps,
            start: Instant::now(),
            bits: 0,
        })
    }

    /// Counts a transaction of `bytes` and sleeps until it is due, or until
    /// `stop()` turns true.
    pub(crate) fn after(pace: &mut Option<TransactionPace>, bytes: u64, stop: &dyn Fn() -> bool) {
        let Some(p) = pace.as_mut() else {
            return;
        };
        p.bits += u128::from(bytes) * 8;
        let due = due(p.bits, p.bps);
        // Sleeps in slices, so a stop is seen within one.
        loop {
            let now = p.start.elapsed();
            if now >= due || stop() {
                return;
            }
            std::thread::sleep((due - now).min(POLL_SLICE));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_fall_due_at_the_rate() {
        assert_eq!(due(0, 8_000), Duration::ZERO);
        // 1000 bytes at 8 kbit/s: one second.
        assert_eq!(due(8_000, 8_000), Duration::from_secs(1));
        assert_eq!(due(1, 1_000_000_000), Duration::from_nanos(1));
        // Far past what a Duration of nanoseconds holds: saturates.
        assert_eq!(
            due(u128::MAX / 1_000_000_000, 1),
            Duration::from_nanos(u64::MAX)
        );
    }

    #[test]
    fn no_rate_is_no_pace() {
        assert!(TransactionPace::new(None).is_none());
        assert!(TransactionPace::new(Some(0)).is_none());
        let mut none = None;
        // Unpaced: returns at once.
        TransactionPace::after(&mut none, u64::MAX, &|| false);
    }

    #[test]
    fn a_stop_ends_the_wait() {
        let mut p = TransactionPace::new(Some(1));
        let t0 = Instant::now();
        // 1 byte at 1 bit/s is due in 8 s; the stop ends the wait at once.
        TransactionPace::after(&mut p, 1, &|| true);
        assert!(t0.elapsed() < Duration::from_secs(1));
    }
}
