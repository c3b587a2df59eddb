//! What `plumb calc` knows besides the path and its prediction: where the
//! RTT came from, and what a full bottleneck queue adds.

use plumb_model::latency::{self, QueueSize};
use plumb_model::{distance, Distance, Rate, Rtt};

/// The queue's delay when full and the loaded round trip, seconds.
#[derive(Debug, Clone, Copy)]
pub struct QueuePrediction {
    /// The delay a full queue adds to every round trip, seconds.
    pub delay: f64,
    /// The round trip of a flow that keeps the queue full, seconds (with an RTT).
    pub loaded_rtt: Option<f64>,
}

impl QueuePrediction {
    /// What a full queue of `queue` (`1.5BDP`, `2MB`, `20ms`) adds on a link
    /// of `rate`; a BDP multiple needs the RTT. `Err` is the one-line reason.
    pub fn of(queue: &str, rate: Rate, rtt: Option<Rtt>) -> Result<QueuePrediction, String> {
        let size = QueueSize::parse(queue)?;
        let delay = latency::queue_delay_secs(size, rate, rtt).ok_or_else(|| {
            format!("invalid queue '{queue}': a BDP multiple needs --rtt or --distance")
        })?;
        Ok(QueuePrediction {
            delay,
            loaded_rtt: rtt.map(|r| latency::loaded_rtt_secs(r, delay)),
        })
    }
}

/// Where the RTT came from.
#[derive(Debug, Clone, Copy)]
pub enum RttSource {
    /// `--rtt`.
    Given,
    /// `--distance`: the typical RTT for it, and light's in fibre alone.
    Distance {
        /// The one-way path length.
        d: Distance,
        /// The round trip of light in fibre over it.
        floor: Rtt,
    },
}

impl RttSource {
    /// The RTT to compute with and where it came from: `--rtt` as given,
    /// else the typical RTT of `--distance`.
    pub fn of(rtt: Option<Rtt>, distance: Option<Distance>) -> (Option<Rtt>, Option<RttSource>) {
        match (rtt, distance) {
            (Some(r), _) => (Some(r), Some(RttSource::Given)),
            (None, Some(d)) => (
                Some(distance::typical_rtt(d)),
                Some(RttSource::Distance {
                    d,
                    floor: distance::fibre_rtt(d),
                }),
            ),
            (None, None) => (None, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queue in bytes, time or BDP multiples; a BDP multiple needs the RTT.
    #[test]
    fn a_full_queue_adds_its_delay() {
        let rate = Rate::parse("100Mbit").expect("rate");
        let rtt = Rtt::parse("20ms").expect("rtt");
        let q = QueuePrediction::of("1BDP", rate, Some(rtt)).expect("a queue");
        assert!((q.delay - 0.020).abs() < 1e-9, "{q:?}");
        assert!(
            q.loaded_rtt.is_some_and(|l| (l - 0.040).abs() < 1e-9),
            "{q:?}"
        );
        let q = QueuePrediction::of("10ms", rate, None).expect("a queue");
        assert!(
            (q.delay - 0.010).abs() < 1e-9 && q.loaded_rtt.is_none(),
            "{q:?}"
        );
        let e = QueuePrediction::of("2BDP", rate, None).expect_err("no RTT");
        assert_eq!(
            e,
            "invalid queue '2BDP': a BDP multiple needs --rtt or --distance"
        );
        assert!(QueuePrediction::of("deep", rate, Some(rtt)).is_err());
        let d = Distance::parse("1000km").expect("distance");
        let (r, source) = RttSource::of(None, Some(d));
        assert!(r.is_some() && matches!(source, Some(RttSource::Distance { .. })));
        let (r, source) = RttSource::of(Some(rtt), Some(d));
        assert_eq!(r, Some(rtt));
        assert!(matches!(source, Some(RttSource::Given)));
    }
}
