//! A fixed-size log-linear histogram of durations, for release-time errors.
//!
//! Owns: counting nanosecond values into 16 sub-buckets per power of two
//! (relative error ≤ 6.25 %), without allocating per sample. Percentiles
//! report the upper edge of their bucket, so they never understate.

use std::ops::AddAssign;
use std::time::Duration;

const SUB_BITS: u32 = 4;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB;

/// Histogram of durations with nanosecond input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histogram {
    buckets: Vec<u64>,
    count: u64,
    sum_ns: u128,
    max_ns: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

fn index(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // ≥ SUB_BITS
    let shift = e - SUB_BITS;
    ((e - SUB_BITS + 1) as usize) * SUB + ((v >> shift) as usize & (SUB - 1))
}

fn upper_edge(i: usize) -> u64 {
    if i < SUB {
        return i as u64;
    }
    let e = (i / SUB) as u32 + SUB_BITS - 1;
    let shift = e - SUB_BITS;
    let lower = ((SUB + i % SUB) as u64) << shift;
    lower + ((1u64 << shift) - 1)
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Histogram {
        Histogram {
            buckets: vec![0; BUCKETS],
            count: 0,
            sum_ns: 0,
            max_ns: 0,
        }
    }

    /// Adds one sample.
    #[inline]
    pub fn record(&mut self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.buckets[index(ns)] += 1;
        self.count += 1;
        self.sum_ns += u128::from(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Largest sample.
    pub fn max(&self) -> Duration {
        Duration::from_nanos(self.max_ns)
    }

    /// Mean of the samples (zero if empty).
    pub fn mean(&self) -> Duration {
        if self.count == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos((self.sum_ns / u128::from(self.count)) as u64)
    }

    /// The value at quantile `q` (0–1), as the upper edge of its bucket but
    /// never above the maximum; zero if empty.
    pub fn quantile(&self, q: f64) -> Duration {
        if self.count == 0 {
            return Duration::ZERO;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Duration::from_nanos(upper_edge(i).min(self.max_ns));
            }
        }
        self.max()
    }

    /// Fraction of samples at or below `d` (bucket resolution).
    pub fn fraction_below(&self, d: Duration) -> f64 {
        if self.count == 0 {
            return 1.0;
        }
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let below: u64 = self.buckets[..index(ns)].iter().sum();
        below as f64 / self.count as f64
    }

    /// Forgets all samples.
    pub fn clear(&mut self) {
        self.buckets.fill(0);
        self.count = 0;
        self.sum_ns = 0;
        self.max_ns = 0;
    }
}

/// `p50 … p99 … p99.9 … max … (n samples)`, or `no samples`: the one line
/// the examples print per histogram.
impl std::fmt::Display for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.count == 0 {
            return f.write_str("no samples");
        }
        write!(
            f,
            "p50 {:.1?} p99 {:.1?} p99.9 {:.1?} max {:.1?} ({} samples)",
            self.quantile(0.5),
            self.quantile(0.99),
            self.quantile(0.999),
            self.max(),
            self.count
        )
    }
}

impl AddAssign<&Histogram> for Histogram {
    fn add_assign(&mut self, o: &Histogram) {
        for (a, b) in self.buckets.iter_mut().zip(&o.buckets) {
            *a += b;
        }
        self.count += o.count;
        self.sum_ns += o.sum_ns;
        self.max_ns = self.max_ns.max(o.max_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn one_line_per_histogram() {
        let mut h = Histogram::new();
        assert_eq!(h.to_string(), "no samples");
        for us in [10, 20, 30, 40] {
            h.record(Duration::from_micros(us));
        }
        let line = h.to_string();
        assert!(line.starts_with("p50 20."), "{line}");
        assert!(line.ends_with("max 40.0µs (4 samples)"), "{line}");
    }

    #[test]
    fn quantiles_of_uniform_samples() {
        let mut h = Histogram::new();
        for us in 1..=1000u64 {
            h.record(Duration::from_micros(us));
        }
        let p50 = h.quantile(0.5).as_nanos() as f64;
        let p99 = h.quantile(0.99).as_nanos() as f64;
        assert!((500_000.0..=500_000.0 * 1.0625).contains(&p50), "{p50}");
        assert!((990_000.0..=990_000.0 * 1.0625).contains(&p99), "{p99}");
        assert_eq!(h.max(), Duration::from_micros(1000));
        assert_eq!(h.quantile(1.0), Duration::from_micros(1000));
        assert_eq!(h.count(), 1000);
    }

    proptest! {
        #[test]
        fn bucket_contains_value(v in any::<u64>()) {
            let i = index(v);
            prop_assert!(i < BUCKETS);
            prop_assert!(upper_edge(i) >= v);
            if i > 0 {
                prop_assert!(upper_edge(i - 1) < v);
            }
        }
    }
}
