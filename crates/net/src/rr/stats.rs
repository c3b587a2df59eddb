//! The statistics of request/response and probe latency: the streams'
//! counts and histograms ([`crate::datathread::RrCounters`]) summed over an
//! interval or the whole test, and turned into the typed records of
//! [`plumb_report::latency`] (percentiles from `hdrhistogram`, nanoseconds
//! in, µs or ms out).

use hdrhistogram::Histogram;
use plumb_proto::rr::{RrMode, RrParams};
use plumb_report::latency::{
    Bucket, CrrMedians, CrrPhases, Percentiles, ProbeSide, RrCount, RrEnd, RrInterval, RrKind,
};
use std::sync::atomic::Ordering::Relaxed;

use crate::datathread::{latency_histogram, Counters, MAX_NS};

/// Nanoseconds per µs, the unit of request/response latency.
const NS_PER_US: f64 = 1e3;
/// Nanoseconds per ms, the unit of `--latency` probes.
const NS_PER_MS: f64 = 1e6;

/// Percentiles of `h` (ns) divided by `div` into the record's unit, with
/// buckets a quarter of an octave wide from 1 µs (enough to draw the
/// shape, at most ~130 of them); `None` when `h` is empty.
pub(crate) fn percentiles(h: &Histogram<u64>, div: f64) -> Option<Percentiles> {
    if h.is_empty() {
        return None;
    }
    let v = |x: u64| x as f64 / div;
    let buckets = h
        .iter_log(1000, 2f64.powf(0.25))
        .filter(|b| b.count_since_last_iteration() > 0)
        .map(|b| Bucket {
            le: v(b.value_iterated_to()),
            count: b.count_since_last_iteration(),
        })
        .collect();
    Some(Percentiles {
        min: v(h.min()),
        p50: v(h.value_at_percentile(50.0)),
        p90: v(h.value_at_percentile(90.0)),
        p99: v(h.value_at_percentile(99.0)),
        p99_9: v(h.value_at_percentile(99.9)),
        max: v(h.max()),
        mean: h.mean() / div,
        buckets,
    })
}

/// `tx` transactions over `secs`, with the UDP losses of a UDP test.
fn count(tx: u64, lost: u64, secs: f64, p: RrParams, udp: bool) -> RrCount {
    RrCount {
        transactions: tx,
        per_second: if secs > 0.0 { tx as f64 / secs } else { 0.0 },
        connections: p.mode == RrMode::Crr,
        lost: udp.then_some(lost),
    }
}

/// Which counts [`gather`] sums.
#[derive(Clone, Copy)]
enum Span {
    /// This interval's, taken: the interval counters start again from zero.
    Interval,
    /// The whole test's so far, read.
    Total,
}

/// The counts and histograms of all `counters` over one span.
struct Gathered {
    tx: u64,
    lost: u64,
    rtt: Histogram<u64>,
    conn: Histogram<u64>,
    rr: Histogram<u64>,
}

fn gather<'a>(counters: impl Iterator<Item = &'a Counters>, span: Span) -> Gathered {
    let mut g = Gathered {
        tx: 0,
        lost: 0,
        rtt: latency_histogram(),
        conn: latency_histogram(),
        rr: latency_histogram(),
    };
    for c in counters {
        let r = &c.rr;
        match span {
            Span::Interval => {
                g.tx += r.interval_transactions.swap(0, Relaxed);
                g.lost += r.interval_lost.swap(0, Relaxed);
                r.rtt.take_interval(&mut g.rtt);
                r.connect.take_interval(&mut g.conn);
                r.reqresp.take_interval(&mut g.rr);
            }
            Span::Total => {
                g.tx += r.transactions.load(Relaxed);
                g.lost += r.lost.load(Relaxed);
                r.rtt.add_total(&mut g.rtt);
                r.connect.add_total(&mut g.conn);
                r.reqresp.add_total(&mut g.rr);
            }
        }
    }
    g
}

/// One interval over `counters` (`secs` long), resetting their interval
/// counts and histograms.
pub fn interval<'a>(
    counters: impl Iterator<Item = &'a Counters>,
    p: RrParams,
    udp: bool,
    secs: f64,
) -> RrInterval {
    let Gathered {
        tx,
        lost,
        rtt,
        conn,
        rr,
    } = gather(counters, Span::Interval);
    RrInterval {
        round_trip: percentiles(&rtt, NS_PER_US),
        count: count(tx, lost, secs, p, udp),
        crr_p50_us: (p.mode == RrMode::Crr && !conn.is_empty()).then(|| CrrMedians {
            connect: conn.value_at_percentile(50.0) as f64 / NS_PER_US,
            request_response: rr.value_at_percentile(50.0) as f64 / NS_PER_US,
        }),
    }
}

/// The whole test over `counters`, which ran `secs`.
pub fn end<'a>(
    counters: impl Iterator<Item = &'a Counters>,
    p: RrParams,
    udp: bool,
    secs: f64,
) -> RrEnd {
    let Gathered {
        tx,
        lost,
        rtt,
        conn,
        rr,
    } = gather(counters, Span::Total);
    RrEnd {
        kind: match (p.mode, udp) {
            (RrMode::Crr, _) => RrKind::Crr,
            (RrMode::Rr, true) => RrKind::UdpRr,
            (RrMode::Rr, false) => RrKind::TcpRr,
        },
        request_bytes: p.request,
        response_bytes: p.response,
        burst: p.burst,
        seconds: secs,
        count: count(tx, lost, secs, p, udp),
        round_trip: percentiles(&rtt, NS_PER_US),
        crr: (p.mode == RrMode::Crr).then(|| CrrPhases {
            connect: percentiles(&conn, NS_PER_US),
            request_response: percentiles(&rr, NS_PER_US),
        }),
    }
}

/// One side of the `--latency` probes from their round trips in ms.
pub fn probe_side(samples_ms: &[f64]) -> ProbeSide {
    let mut h = latency_histogram();
    for &x in samples_ms {
        let _ = h.record(((x * NS_PER_MS) as u64).clamp(1, MAX_NS));
    }
    ProbeSide {
        probes: samples_ms.len(),
        rpm: plumb_model::latency::rpm(samples_ms),
        round_trip: percentiles(&h, NS_PER_MS),
    }
}

/// What the load added to the probes' round trips, ms: the loaded median
/// and p99 each less the idle median (`None` where a side has no probe).
pub fn increases(idle: &ProbeSide, loaded: &ProbeSide) -> (Option<f64>, Option<f64>) {
    let idle_p50 = idle.round_trip.as_ref().map(|p| p.p50);
    let loaded = loaded.round_trip.as_ref();
    (
        loaded.map(|p| p.p50).zip(idle_p50).map(|(l, i)| l - i),
        loaded.map(|p| p.p99).zip(idle_p50).map(|(l, i)| l - i),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn tcp_rr() -> RrParams {
        RrParams::default()
    }

    fn crr() -> RrParams {
        RrParams {
            mode: RrMode::Crr,
            ..RrParams::default()
        }
    }

    #[test]
    fn an_empty_histogram_has_no_percentiles() {
        assert_eq!(percentiles(&latency_histogram(), NS_PER_US), None);
    }

    /// Within hdrhistogram's three significant digits of `want`.
    fn near(got: f64, want: f64) -> bool {
        (got - want).abs() <= want.abs() * 1e-3
    }

    #[test]
    fn percentiles_are_in_the_unit_asked() {
        let mut h = latency_histogram();
        for us in 1..=100u64 {
            h.record(us * 1000).expect("in bounds");
        }
        let p = percentiles(&h, NS_PER_US).expect("values");
        for (got, want) in [
            (p.min, 1.0),
            (p.p50, 50.0),
            (p.p90, 90.0),
            (p.p99, 99.0),
            (p.p99_9, 100.0),
            (p.max, 100.0),
            (p.mean, 50.5),
        ] {
            assert!(near(got, want), "{got} for {want}: {p:?}");
        }
        assert_eq!(p.buckets.iter().map(|b| b.count).sum::<u64>(), 100);
        assert!(p.buckets.windows(2).all(|w| w[0].le < w[1].le));
        assert!(p.buckets.last().expect("a bucket").le >= 100.0);
        let ms = percentiles(&h, NS_PER_MS).expect("values");
        assert!(near(ms.max, 0.1), "{ms:?}");
    }

    #[test]
    fn counts_name_connections_for_crr_and_losses_for_udp() {
        let c = count(10, 2, 2.0, tcp_rr(), false);
        assert_eq!(
            (c.transactions, c.per_second, c.connections, c.lost),
            (10, 5.0, false, None)
        );
        let c = count(10, 2, 0.0, crr(), true);
        assert_eq!((c.per_second, c.connections, c.lost), (0.0, true, Some(2)));
    }

    #[test]
    fn an_interval_takes_its_counts_and_the_end_keeps_them_all() {
        let a = Counters::default();
        let b = Counters::default();
        for (c, us) in [(&a, 10), (&a, 20), (&b, 30)] {
            c.rr.rtt.record(Duration::from_micros(us));
            c.rr.connect.record(Duration::from_micros(us / 2));
            c.rr.reqresp.record(Duration::from_micros(us / 2));
            c.rr.done(c, 100);
        }
        b.rr.lose();
        let i = interval([&a, &b].into_iter(), crr(), true, 1.5);
        assert_eq!(i.count.transactions, 3);
        assert_eq!(i.count.per_second, 2.0);
        assert_eq!(i.count.lost, Some(1));
        assert!(near(i.round_trip.as_ref().expect("round trips").max, 30.0));
        let m = i.crr_p50_us.expect("CRR medians");
        assert!(
            near(m.connect, 10.0) && near(m.request_response, 10.0),
            "{m:?}"
        );
        assert_eq!(a.bytes.load(Relaxed), 200);
        // The next interval starts from zero.
        let i = interval([&a, &b].into_iter(), crr(), true, 1.0);
        assert_eq!((i.count.transactions, i.count.lost), (0, Some(0)));
        assert_eq!((i.round_trip, i.crr_p50_us), (None, None));
        // The end sums the whole test.
        let e = end([&a, &b].into_iter(), crr(), false, 3.0);
        assert_eq!(e.kind, RrKind::Crr);
        assert_eq!(e.count.transactions, 3);
        assert_eq!(e.count.lost, None);
        assert!(near(e.round_trip.as_ref().expect("round trips").min, 10.0));
        let phases = e.crr.expect("CRR phases");
        assert!(near(phases.connect.expect("handshakes").max, 15.0));
        let e = end([&a].into_iter(), tcp_rr(), true, 3.0);
        assert_eq!((e.kind, e.crr), (RrKind::UdpRr, None));
    }

    #[test]
    fn probe_sides_and_what_the_load_added() {
        let idle = probe_side(&[1.0, 1.0, 1.0]);
        let loaded = probe_side(&[5.0, 5.0, 9.0]);
        assert_eq!(idle.probes, 3);
        assert!(near(idle.round_trip.as_ref().expect("probes").p50, 1.0));
        assert!(idle.rpm.is_some());
        let (p50, p99) = increases(&idle, &loaded);
        assert!((p50.expect("p50") - 4.0).abs() < 0.01, "{p50:?}");
        assert!((p99.expect("p99") - 8.0).abs() < 0.01, "{p99:?}");
        let none = probe_side(&[]);
        assert_eq!(
            (none.probes, none.rpm, none.round_trip.clone()),
            (0, None, None)
        );
        assert_eq!(increases(&none, &loaded), (None, None));
        assert_eq!(increases(&idle, &none), (None, None));
    }
}
