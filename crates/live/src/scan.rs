//! When to walk the whole socket table. A full sock_diag dump costs the
//! kernel a walk of its socket table and a `TCP_INFO` fill per socket (about
//! 35 ms of CPU at 20,000 sockets), whatever plumb does with the answer, so
//! a monitor that dumps every second spends several percent of a core on a
//! busy host to re-read connections that are idle. [`Schedule`] keeps that
//! discovery within a CPU budget: the connections that are busy, or were
//! busy lately, are read again every interval by a lookup of each
//! ([`crate::sys::Dumper::lookup`], no walk), and the full dump that finds
//! newly busy (or new) connections runs only as often as its measured cost
//! allows — a 2 ms dump still every second at the default 1 % of a core, a
//! 36 ms one every 4 s. Pure: the caller passes the interval's index and the
//! costs it measured.

/// Seconds a connection stays followed after it was last seen busy, at
/// least: a transfer that pauses between bursts is not dropped and found
/// again a scan later.
pub const HOLD_MIN_SECS: f64 = 5.0;

/// The default budget for full scans: 1 % of one core.
pub const DEFAULT_BUDGET: f64 = 0.01;

/// When each interval walks the table, from what the walks cost.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Seconds per interval.
    interval: f64,
    /// Share of one core full scans may use (0.01 = 1 %).
    budget: f64,
    /// Intervals between full scans when fixed by the caller.
    fixed: Option<u64>,
    /// CPU seconds of a full-scan interval, smoothed.
    cost: Option<f64>,
    /// CPU seconds per connection looked up, smoothed.
    lookup_cost: Option<f64>,
    /// The last interval that scanned.
    last_full: Option<u64>,
    /// Full scans so far.
    fulls: u64,
}

/// Half the weight to the newest measurement: a host whose connection count
/// changes is followed within a few scans, one slow scan does not set it.
fn smooth(old: Option<f64>, new: f64) -> Option<f64> {
    Some(old.map_or(new, |o| 0.5 * o + 0.5 * new))
}

impl Schedule {
    /// Full scans within `budget` (share of one core) at `interval` seconds.
    pub fn new(interval: f64, budget: f64) -> Schedule {
        Schedule {
            interval,
            budget: budget.max(1e-9),
            fixed: None,
            cost: None,
            lookup_cost: None,
            last_full: None,
            fulls: 0,
        }
    }

    /// A full scan every `n` intervals whatever it costs.
    pub fn every(interval: f64, n: u64) -> Schedule {
        Schedule {
            fixed: Some(n.max(1)),
            ..Schedule::new(interval, 1.0)
        }
    }

    /// Intervals from one full scan to the next: the measured cost over the
    /// budget, rounded up to whole intervals (1 until a scan is measured).
    pub fn period(&self) -> u64 {
        if let Some(n) = self.fixed {
            return n;
        }
        match self.cost {
            // The small epsilon keeps an exact multiple from rounding up.
            Some(c) => ((c / self.budget / self.interval) - 1e-9).ceil().max(1.0) as u64,
            None => 1,
        }
    }

    /// [`Schedule::period`] in seconds.
    pub fn period_secs(&self) -> f64 {
        self.period() as f64 * self.interval
    }

    /// Seconds a connection stays followed after it was last busy.
    pub fn hold_secs(&self) -> f64 {
        self.period_secs().max(HOLD_MIN_SECS)
    }

    /// The CPU share full scans use at the current cost and period.
    pub fn share(&self) -> Option<f64> {
        Some(self.cost? / self.period_secs())
    }

    /// Whether interval `i` dumps the whole table, with `hot` connections
    /// to look up otherwise. The first two intervals always do (a baseline,
    /// then every connection's first rate); then one every
    /// [`Schedule::period`] intervals, or sooner when looking up the hot
    /// connections one by one would cost more than a scan.
    pub fn full(&self, i: u64, hot: usize) -> bool {
        let Some(last) = self.last_full else {
            return true;
        };
        if self.fulls < 2 || i.saturating_sub(last) >= self.period() {
            return true;
        }
        if self.fixed.is_none() {
            if let (Some(c), Some(l)) = (self.cost, self.lookup_cost) {
                return hot as f64 * l >= c;
            }
        }
        false
    }

    /// Interval `i` scanned the table, costing `cpu_s` of CPU.
    pub fn scanned(&mut self, i: u64, cpu_s: f64) {
        self.last_full = Some(i);
        self.fulls += 1;
        // The first scan also pays for growing the buffers and computes no
        // rates: the second's cost replaces it.
        self.cost = if self.fulls == 2 {
            Some(cpu_s)
        } else {
            smooth(self.cost, cpu_s)
        };
    }

    /// An interval looked up `n` connections, costing `cpu_s` of CPU.
    pub fn looked_up(&mut self, n: usize, cpu_s: f64) {
        if n > 0 {
            self.lookup_cost = smooth(self.lookup_cost, cpu_s / n as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The intervals of `0..n` that scan, with `hot` connections and each
    /// scan costing `cost` CPU seconds.
    fn scans(s: &mut Schedule, n: u64, hot: usize, cost: f64) -> Vec<u64> {
        let mut v = Vec::new();
        for i in 0..n {
            if s.full(i, hot) {
                s.scanned(i, cost);
                v.push(i);
            } else {
                s.looked_up(hot, hot as f64 * 5e-6);
            }
        }
        v
    }

    #[test]
    fn the_first_two_intervals_scan_then_the_budget_sets_the_pace() {
        // 36 ms a scan at 1 % of a core: every 3.6 s, so every 4th second.
        let mut s = Schedule::new(1.0, DEFAULT_BUDGET);
        assert_eq!(scans(&mut s, 12, 1, 0.036), vec![0, 1, 5, 9]);
        assert_eq!(s.period(), 4);
        assert!((s.period_secs() - 4.0).abs() < 1e-9);
        assert!(s.share().is_some_and(|x| x <= DEFAULT_BUDGET));
        // A cheap scan (a small host, or a port filter) still runs every interval.
        let mut s = Schedule::new(1.0, DEFAULT_BUDGET);
        assert_eq!(scans(&mut s, 5, 1, 0.002), vec![0, 1, 2, 3, 4]);
        // Exactly the budget is not rounded up to the next interval.
        let mut s = Schedule::new(1.0, DEFAULT_BUDGET);
        scans(&mut s, 3, 0, 0.02);
        assert_eq!(s.period(), 2);
        // A shorter interval: 3.6 s is 15 intervals of 0.25 s.
        let mut s = Schedule::new(0.25, DEFAULT_BUDGET);
        scans(&mut s, 3, 0, 0.036);
        assert_eq!(s.period(), 15);
    }

    #[test]
    fn the_budget_holds_over_a_long_run_and_follows_the_cost() {
        let mut s = Schedule::new(1.0, DEFAULT_BUDGET);
        let cost = 0.036;
        let full = scans(&mut s, 1000, 2, cost);
        // Start-up's two scans aside, scans use at most the budget.
        let spent = (full.len() - 2) as f64 * cost;
        assert!(spent / 1000.0 <= DEFAULT_BUDGET, "{spent}");
        assert!(spent / 1000.0 >= DEFAULT_BUDGET * 0.8, "{spent}");
        // Scans never further apart than the period.
        assert!(full.windows(2).all(|w| w[1] - w[0] <= s.period()));
        // The host grows: the scan costs 4 times more, scans come rarer.
        let before = s.period();
        let mut i = 1000;
        for _ in 0..6 {
            while !s.full(i, 2) {
                i += 1;
            }
            s.scanned(i, cost * 4.0);
            i += 1;
        }
        assert!(s.period() >= 3 * before, "{} vs {before}", s.period());
        assert!(s.hold_secs() >= s.period_secs());
    }

    #[test]
    fn many_busy_connections_make_a_scan_cheaper_than_lookups() {
        let mut s = Schedule::new(1.0, DEFAULT_BUDGET);
        s.scanned(0, 0.036);
        s.scanned(1, 0.036);
        s.looked_up(100, 100.0 * 10e-6);
        assert!(!s.full(2, 100), "100 lookups cost 1 ms, less than a scan");
        assert!(s.full(2, 4000), "4000 lookups cost 40 ms, more than a scan");
    }

    #[test]
    fn a_fixed_period_ignores_costs() {
        let mut s = Schedule::every(0.25, 8);
        assert_eq!(scans(&mut s, 20, 5000, 0.5), vec![0, 1, 9, 17]);
        assert_eq!(s.period(), 8);
        assert!((s.period_secs() - 2.0).abs() < 1e-9);
        assert!((s.hold_secs() - HOLD_MIN_SECS).abs() < 1e-9);
    }
}
