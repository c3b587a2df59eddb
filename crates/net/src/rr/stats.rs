//! The statistics of request/response and probe latency: the streams'
//! counts and histograms ([`crate::datathread::RrCounters`]) summed over an
//! interval or the whole test, and turned into the document's latency
//! objects ([`plumb_record::Latency`], [`plumb_record::IntervalLatency`];
//! percentiles from `hdrhistogram`, nanoseconds in, µs or ms out).

use hdrhistogram::Histogram;
use plumb_proto::rr::{RrMode, RrParams};
use plumb_record::{IntervalLatency, Latency, PercentilesUs, Probes, Real, Summary, Transactions};
use std::sync::atomic::Ordering::Relaxed;

use crate::datathread::{latency_histogram, Counters, MAX_NS};

/// Nanoseconds per µs, the unit of request/response latency.
const NS_PER_US: f64 = 1e3;
/// Nanoseconds per ms, the unit of `--latency` probes.
const NS_PER_MS: f64 = 1e6;

/// Percentiles of `h` (ns) divided by `div` into the record's unit, with
/// buckets a quarter of an octave wide from 1 µs (enough to draw the
/// shape, at most ~130 of them); `None` when `h` is empty.
pub(crate) fn percentiles(h: &Histogram<u64>, div: f64) -> Option<Summary> {
    if h.is_empty() {
        return None;
    }
    let v = |x: u64| x as f64 / div;
    let buckets = h
        .iter_log(1000, 2f64.powf(0.25))
        .filter(|b| b.count_since_last_iteration() > 0)
        .map(|b| (v(b.value_iterated_to()), b.count_since_last_iteration()))
        .collect();
    Some(Summary {
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
fn count(tx: u64, lost: u64, secs: f64, p: RrParams, udp: bool) -> Transactions {
    Transactions::counted(
        tx,
        if secs > 0.0 { tx as f64 / secs } else { 0.0 },
        p.mode == RrMode::Crr,
        udp.then_some(lost),
    )
}

/// The round trips of `h` (ns) in µs, with their buckets when `buckets`.
fn us(h: &Histogram<u64>, buckets: bool) -> PercentilesUs {
    PercentilesUs::from_summary(percentiles(h, NS_PER_US).as_ref(), buckets)
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
) -> IntervalLatency {
    let Gathered {
        tx,
        lost,
        rtt,
        conn,
        rr,
    } = gather(counters, Span::Interval);
    // CRR: the medians of the handshake and of request to response, when
    // connections were made in the interval.
    let crr = p.mode == RrMode::Crr && !conn.is_empty();
    let median = |h: &Histogram<u64>| {
        crr.then(|| Real::float(h.value_at_percentile(50.0) as f64 / NS_PER_US))
    };
    IntervalLatency {
        round_trip: us(&rtt, false),
        rate: count(tx, lost, secs, p, udp),
        connect_p50_us: median(&conn),
        request_response_p50_us: median(&rr),
        ..IntervalLatency::default()
    }
}

/// The whole test over `counters`, which ran `secs`.
pub fn end<'a>(
    counters: impl Iterator<Item = &'a Counters>,
    p: RrParams,
    udp: bool,
    secs: f64,
) -> Latency {
    let Gathered {
        tx,
        lost,
        rtt,
        conn,
        rr,
    } = gather(counters, Span::Total);
    let crr = p.mode == RrMode::Crr;
    Latency {
        test: Some(
            match (p.mode, udp) {
                (RrMode::Crr, _) => "crr",
                (RrMode::Rr, true) => "udp_rr",
                (RrMode::Rr, false) => "tcp_rr",
            }
            .into(),
        ),
        request_bytes: Some(u64::from(p.request)),
        response_bytes: Some(u64::from(p.response)),
        burst: Some(u64::from(p.burst)),
        seconds: Some(Real::float(secs)),
        rate: count(tx, lost, secs, p, udp),
        round_trip: us(&rtt, true),
        // CRR: the two phases of each transaction.
        connect: crr.then(|| us(&conn, true)),
        request_response: crr.then(|| us(&rr, true)),
        ..Latency::default()
    }
}

/// One side of the `--latency` probes from their round trips in ms.
pub fn probe_side(samples_ms: &[f64]) -> Probes {
    let mut h = latency_histogram();
    for &x in samples_ms {
        let _ = h.record(((x * NS_PER_MS) as u64).clamp(1, MAX_NS));
    }
    Probes::from_summary(
        percentiles(&h, NS_PER_MS).as_ref(),
        samples_ms.len() as u64,
        plumb_model::latency::rpm(samples_ms),
    )
}

/// What the load added to the probes' round trips, ms: the loaded median
/// and p99 each less the idle median (`None` where a side has no probe).
pub fn increases(idle: &Probes, loaded: &Probes) -> (Option<f64>, Option<f64>) {
    let idle_p50 = idle.p50_ms.map(Real::get);
    let less_idle = |l: Option<Real>| l.map(Real::get).zip(idle_p50).map(|(l, i)| l - i);
    (less_idle(loaded.p50_ms), less_idle(loaded.p99_ms))
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
        assert_eq!(p.buckets.iter().map(|b| b.1).sum::<u64>(), 100);
        assert!(p.buckets.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(p.buckets.last().expect("a bucket").0 >= 100.0);
        let ms = percentiles(&h, NS_PER_MS).expect("values");
        assert!(near(ms.max, 0.1), "{ms:?}");
    }

    #[test]
    fn counts_name_connections_for_crr_and_losses_for_udp() {
        let c = count(10, 2, 2.0, tcp_rr(), false);
        assert_eq!(
            (
                c.transactions,
                c.transactions_per_second,
                c.connections,
                c.lost
            ),
            (Some(10), Some(Real::float(5.0)), None, None)
        );
        let c = count(10, 2, 0.0, crr(), true);
        assert_eq!(
            (c.transactions_per_second, c.connections, c.lost),
            (Some(Real::float(0.0)), Some(10), Some(2))
        );
        assert_eq!(c.connections_per_second, Some(Real::float(0.0)));
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
        assert_eq!(i.rate.transactions, Some(3));
        assert_eq!(i.rate.transactions_per_second, Some(Real::float(2.0)));
        assert_eq!(i.rate.lost, Some(1));
        assert!(near(got(i.round_trip.max_us), 30.0));
        assert!(i.round_trip.buckets.is_none(), "an interval has no buckets");
        let (connect, rr) = (got(i.connect_p50_us), got(i.request_response_p50_us));
        assert!(near(connect, 10.0) && near(rr, 10.0), "{i:?}");
        assert_eq!(a.bytes.load(Relaxed), 200);
        // The next interval starts from zero.
        let i = interval([&a, &b].into_iter(), crr(), true, 1.0);
        assert_eq!((i.rate.transactions, i.rate.lost), (Some(0), Some(0)));
        assert_eq!(i.round_trip, PercentilesUs::default());
        assert_eq!((i.connect_p50_us, i.request_response_p50_us), (None, None));
        // The end sums the whole test.
        let e = end([&a, &b].into_iter(), crr(), false, 3.0);
        assert_eq!(e.test.as_deref(), Some("crr"));
        assert_eq!(e.rate.transactions, Some(3));
        assert_eq!(e.rate.connections, Some(3));
        assert_eq!(e.rate.lost, None);
        assert!(near(got(e.round_trip.min_us), 10.0));
        assert!(e.round_trip.buckets.is_some());
        let connect = e.connect.expect("CRR phases");
        assert!(near(got(connect.max_us), 15.0));
        assert!(e.request_response.is_some());
        let e = end([&a].into_iter(), tcp_rr(), true, 3.0);
        assert_eq!(e.test.as_deref(), Some("udp_rr"));
        assert_eq!((e.connect, e.request_response), (None, None));
        assert_eq!(e.seconds, Some(Real::float(3.0)));
    }

    /// A figure that must be there.
    fn got(v: Option<Real>) -> f64 {
        v.expect("a figure").get()
    }

    #[test]
    fn probe_sides_and_what_the_load_added() {
        let idle = probe_side(&[1.0, 1.0, 1.0]);
        let loaded = probe_side(&[5.0, 5.0, 9.0]);
        assert_eq!(idle.probes, Some(3));
        assert!(near(got(idle.p50_ms), 1.0));
        assert!(idle.rpm.flatten().is_some());
        assert!(idle.buckets.is_some());
        let (p50, p99) = increases(&idle, &loaded);
        assert!((p50.expect("p50") - 4.0).abs() < 0.01, "{p50:?}");
        assert!((p99.expect("p99") - 8.0).abs() < 0.01, "{p99:?}");
        let none = probe_side(&[]);
        assert_eq!((none.probes, none.rpm), (Some(0), Some(None)));
        assert_eq!((none.min_ms, none.buckets.clone()), (None, None));
        assert_eq!(increases(&none, &loaded), (None, None));
        assert_eq!(increases(&idle, &none), (None, None));
    }
}
