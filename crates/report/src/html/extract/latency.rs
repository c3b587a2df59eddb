//! Latency as a test recorded it (`end.plumb.latency` and
//! `intervals[].plumb.latency`): each distribution's percentiles and CDF in
//! µs whatever unit its keys named, the headline figures, the percentiles
//! per interval, and what kind of test timed them.

use plumb_record::{
    BucketMs, BucketUs, Document as Record, Latency as Recorded, PercentilesUs, Probes, Real,
};

use super::real::num;
use super::series::{close_steps, step};

/// One latency distribution as plumb records it: percentile keys
/// (`p50_us`, `p99_9_ms`…), `min`/`mean`/`max`, and histogram buckets.
/// Every time is held here in µs, whatever unit its key named.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Distribution {
    /// What was timed: "round trip", "connect", "request/response", "idle"
    /// or "loaded".
    pub name: String,
    /// (percentile, µs), ascending.
    pub percentiles: Vec<(f64, f64)>,
    /// The fastest sample, µs.
    pub min_us: Option<f64>,
    /// The mean, µs.
    pub mean_us: Option<f64>,
    /// The slowest sample, µs.
    pub max_us: Option<f64>,
    /// How many samples: the histogram's total, else `probes` or `transactions`.
    pub count: Option<f64>,
    /// The CDF from the histogram: (upper bound µs, cumulative fraction).
    pub cdf: Vec<(f64, f64)>,
}

/// What a test recorded about latency (`end.plumb.latency`): request/response
/// round trips (`--rr`, `--crr`, in µs) or idle and loaded probes
/// (`--latency`, in ms).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Latency {
    /// The distributions, in the order the page shows them.
    pub sets: Vec<Distribution>,
    /// Headline figures: (label, value).
    pub figures: Vec<(String, Figure)>,
    /// Percentiles per interval (`intervals[].plumb.latency`): (name, step
    /// series in µs over the test's time).
    pub intervals: Vec<(String, Vec<(f64, f64)>)>,
    /// What kind of test timed them.
    pub kind: LatencyKind,
}

/// A headline figure's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Figure {
    /// A count or a rate of things (transactions/s, RPM).
    Count(f64),
    /// A time, µs.
    Time(f64),
    /// A load, bit/s, and its share of the test's load (0–1).
    Load {
        /// The load, bit/s.
        bps: f64,
        /// Its share of the whole load.
        share: Option<f64>,
    },
}

/// What kind of test recorded the latency, and how it was set up.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum LatencyKind {
    /// A new TCP connection per transaction (`--crr`).
    Crr,
    /// Request/response (`--rr`): its `test` name (`tcp_rr`, `udp_rr`) and
    /// the sizes each way, as the document wrote them.
    RequestResponse {
        /// `tcp_rr`, `udp_rr`…
        test: String,
        /// Bytes out, as written.
        request_bytes: Option<String>,
        /// Bytes back, as written.
        response_bytes: Option<String>,
    },
    /// Probes before and during a load (`--latency`): the probe interval
    /// of each phase, ms.
    UnderLoad {
        /// Before the load.
        idle_every_ms: Option<f64>,
        /// During it.
        loaded_every_ms: Option<f64>,
    },
    /// None of these.
    #[default]
    Other,
}

impl LatencyKind {
    fn of(raw: &Recorded) -> LatencyKind {
        match raw.test.as_deref() {
            Some("crr") => LatencyKind::Crr,
            Some(t) => LatencyKind::RequestResponse {
                test: t.to_string(),
                request_bytes: raw.request_bytes.map(|b| b.to_string()),
                response_bytes: raw.response_bytes.map(|b| b.to_string()),
            },
            None if raw.idle.is_some() => LatencyKind::UnderLoad {
                idle_every_ms: raw.probe_interval_ms.as_ref().and_then(|p| num(p.idle)),
                loaded_every_ms: raw.probe_interval_ms.as_ref().and_then(|p| num(p.loaded)),
            },
            None => LatencyKind::Other,
        }
    }
}

/// A distribution's min, mean and max, µs.
type Figures = [Option<f64>; 3];

/// Builds a distribution from its figures in µs, its histogram as
/// (upper bound µs, count) and the count to fall back on; `None` when it
/// has neither percentiles nor buckets.
fn build(
    name: &str,
    [min_us, mean_us, max_us]: Figures,
    percentiles: Vec<(f64, f64)>,
    mut pairs: Vec<(f64, f64)>,
    fallback_count: Option<f64>,
) -> Option<Distribution> {
    let mut d = Distribution {
        name: name.into(),
        percentiles,
        min_us,
        mean_us,
        max_us,
        ..Distribution::default()
    };
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = pairs.iter().map(|p| p.1).sum();
    if total > 0.0 {
        d.count = Some(total);
        let mut acc = 0.0;
        for (up, n) in pairs {
            acc += n;
            d.cdf.push((up, acc / total));
        }
    }
    if d.count.is_none() {
        d.count = fallback_count;
    }
    (!d.percentiles.is_empty() || !d.cdf.is_empty()).then_some(d)
}

/// The percentiles present, (percentile, value × `f`), ascending.
fn percentiles(values: [Option<Real>; 4], f: f64) -> Vec<(f64, f64)> {
    [50.0, 90.0, 99.0, 99.9]
        .into_iter()
        .zip(values)
        .filter_map(|(p, v)| Some((p, num(v?)? * f)))
        .collect()
}

/// A distribution recorded in µs (`p50_us`…, buckets with `le_us`).
pub fn distribution_us(
    name: &str,
    o: &PercentilesUs,
    fallback_count: Option<f64>,
) -> Option<Distribution> {
    let us = |v: Option<Real>| v.and_then(num);
    let pairs = (o.buckets.iter().flatten())
        .filter_map(|b: &BucketUs| Some((num(b.le_us)?, b.count as f64)))
        .collect();
    build(
        name,
        [us(o.min_us), us(o.mean_us), us(o.max_us)],
        percentiles([o.p50_us, o.p90_us, o.p99_us, o.p99_9_us], 1.0),
        pairs,
        fallback_count,
    )
}

/// A distribution of probes recorded in ms (`p50_ms`…, buckets with
/// `le_ms`), held in µs.
pub fn distribution_ms(name: &str, o: &Probes) -> Option<Distribution> {
    let us = |v: Option<Real>| v.and_then(num).map(|x| x * 1e3);
    let pairs = (o.buckets.iter().flatten())
        .filter_map(|b: &BucketMs| Some((num(b.le_ms)? * 1e3, b.count as f64)))
        .collect();
    build(
        name,
        [us(o.min_ms), us(o.mean_ms), us(o.max_ms)],
        percentiles([o.p50_ms, o.p90_ms, o.p99_ms, o.p99_9_ms], 1e3),
        pairs,
        o.probes.map(|p| p as f64),
    )
}

/// Reads `end.plumb.latency` (and `intervals[].plumb.latency`), if the test
/// measured latency.
pub fn latency(doc: &Record) -> Option<Latency> {
    let l = doc.end.as_ref()?.plumb.as_ref()?.latency.as_ref()?;
    let mut out = Latency {
        kind: LatencyKind::of(l),
        ..Latency::default()
    };
    let transactions = l.rate.transactions.map(|t| t as f64);
    out.sets
        .extend(distribution_us("round trip", &l.round_trip, transactions));
    for (o, name) in [
        (&l.connect, "connect"),
        (&l.request_response, "request/response"),
    ] {
        if let Some(o) = o {
            out.sets.extend(distribution_us(name, o, None));
        }
    }
    for (o, name) in [(&l.idle, "idle"), (&l.loaded, "loaded")] {
        if let Some(o) = o {
            out.sets.extend(distribution_ms(name, o));
        }
    }
    figures(l, &mut out.figures);
    if let Some(ivs) = &doc.intervals {
        out.intervals = per_interval(ivs);
    }
    (!out.sets.is_empty()).then_some(out)
}

/// The headline figures of `end.plumb.latency`.
fn figures(l: &Recorded, out: &mut Vec<(String, Figure)>) {
    let mut fig = |k: &str, v: Option<Figure>| {
        if let Some(v) = v {
            out.push((k.into(), v));
        }
    };
    let real = |v: Option<Real>| v.and_then(num).map(Figure::Count);
    let whole = |v: Option<u64>| v.map(|x| Figure::Count(x as f64));
    let r = &l.rate;
    if r.connections_per_second.is_some() {
        fig("connections/s", real(r.connections_per_second));
        fig("connections", whole(r.connections));
    } else {
        fig("transactions/s", real(r.transactions_per_second));
        fig("transactions", whole(r.transactions));
    }
    fig("lost", whole(r.lost));
    let ms = |v: &Option<Option<Real>>| v.flatten().and_then(num).map(|x| Figure::Time(x * 1e3));
    fig("load added, median", ms(&l.increase_p50_ms));
    fig(
        "load added, p99 over the idle median",
        ms(&l.increase_p99_ms),
    );
    let rpm = |p: &Option<Probes>| real(p.as_ref()?.rpm.flatten());
    fig("RPM idle", rpm(&l.idle));
    fig("RPM loaded", rpm(&l.loaded));
    fig("probes resent", whole(l.probe_retransmits.flatten()));
    let cost = l.probe_cost.as_ref().and_then(Option::as_ref);
    fig(
        "the probes' own load",
        cost.and_then(|c| {
            Some(Figure::Load {
                bps: num(c.wire_bits_per_second)?,
                share: c.share_of_load.flatten().and_then(num),
            })
        }),
    );
}

/// Percentiles per interval (request/response tests record these;
/// `--latency` does not): (name, step series in µs).
fn per_interval(ivs: &[plumb_record::Interval]) -> Vec<(String, Vec<(f64, f64)>)> {
    type Key = fn(&plumb_record::IntervalLatency) -> Option<Real>;
    let keys: [(Key, &str); 4] = [
        (|l| l.round_trip.p50_us, "p50"),
        (|l| l.round_trip.p99_us, "p99"),
        (|l| l.connect_p50_us, "connect, p50"),
        (|l| l.request_response_p50_us, "request/response, p50"),
    ];
    let mut series: Vec<Vec<(f64, f64)>> = vec![Vec::new(); keys.len()];
    let mut end = 0.0f64;
    for iv in ivs {
        let (Some(a), Some(b)) = (num(iv.sum.start), num(iv.sum.end)) else {
            continue;
        };
        let il = iv.plumb.as_ref().and_then(|p| p.latency.as_ref());
        for (s, (k, _)) in series.iter_mut().zip(keys) {
            step(s, a, il.and_then(k).and_then(num));
        }
        end = end.max(b);
    }
    let mut out = Vec::new();
    for (mut s, (_, name)) in series.into_iter().zip(keys) {
        close_steps(&mut s, end);
        if !s.is_empty() {
            out.push((name.into(), s));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Record {
        Record::parse(text).expect("a document")
    }

    /// `end.plumb.latency` of a document holding `latency`.
    fn recorded(latency: &str) -> Recorded {
        let d = doc(&format!(
            r#"{{"end": {{"plumb": {{"latency": {latency}}}}}}}"#
        ));
        d.end
            .and_then(|e| e.plumb?.latency)
            .expect("a latency object")
    }

    fn sum(start: f64, end: f64) -> String {
        format!(
            r#"{{"start": {start:?}, "end": {end:?}, "seconds": 1.0, "bytes": 0,
                "bits_per_second": 0, "omitted": false}}"#
        )
    }

    #[test]
    fn a_distribution_in_any_unit_is_held_in_micros() {
        let probes = recorded(
            r#"{"idle": {"p50_ms": 1.5, "p99_9_ms": 4, "min_ms": 0.9, "max_ms": 5, "mean_ms": null,
                "buckets": [{"le_ms": 1, "count": 1}, {"le_ms": 2, "count": 3}]}}"#,
        )
        .idle
        .expect("probes");
        let d = distribution_ms("idle", &probes).expect("a distribution");
        assert_eq!(d.percentiles, vec![(50.0, 1500.0), (99.9, 4000.0)]);
        assert_eq!((d.min_us, d.max_us), (Some(900.0), Some(5000.0)));
        // A mean written as null is no mean.
        assert_eq!(d.mean_us, None);
        assert_eq!(d.count, Some(4.0));
        assert_eq!(d.cdf, vec![(1000.0, 0.25), (2000.0, 1.0)]);
        // Neither percentiles nor buckets: nothing to show.
        let rt = recorded(r#"{"min_us": 1}"#).round_trip;
        assert_eq!(distribution_us("x", &rt, Some(3.0)), None);
        let rt = recorded(r#"{"p50_us": 1}"#).round_trip;
        assert_eq!(
            distribution_us("x", &rt, Some(3.0)).and_then(|d| d.count),
            Some(3.0)
        );
    }

    #[test]
    fn request_response_figures_intervals_and_kind() {
        let text = format!(
            r#"{{
            "end": {{"plumb": {{"latency": {{
                "test": "tcp_rr", "request_bytes": 100, "response_bytes": 200,
                "p50_us": 80, "p99_us": 120, "transactions_per_second": 12345.4,
                "transactions": 61000, "connect": {{"p50_us": 30}}
            }}}}}},
            "intervals": [
                {{"streams": [], "sum": {}, "plumb": {{"latency": {{"p50_us": 70}}}}}},
                {{"streams": [], "sum": {}, "plumb": {{"latency": {{"p50_us": 90}}}}}},
                {{"streams": [], "sum": {}}}
            ]
        }}"#,
            sum(0.0, 1.0),
            sum(1.0, 2.0),
            sum(0.0, 1.0).replacen("0.0", "null", 1),
        );
        let l = latency(&doc(&text)).expect("latency");
        let names: Vec<&str> = l.sets.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["round trip", "connect"]);
        assert_eq!(
            l.figures,
            vec![
                ("transactions/s".to_string(), Figure::Count(12345.4)),
                ("transactions".to_string(), Figure::Count(61000.0)),
            ]
        );
        assert_eq!(
            l.intervals,
            vec![(
                "p50".to_string(),
                vec![(0.0, 70.0), (1.0, 90.0), (2.0, 90.0)]
            )]
        );
        assert_eq!(
            l.kind,
            LatencyKind::RequestResponse {
                test: "tcp_rr".into(),
                request_bytes: Some("100".into()),
                response_bytes: Some("200".into()),
            }
        );
    }

    #[test]
    fn under_load_and_missing_latency() {
        let l = latency(&doc(r#"{"end": {"plumb": {"latency": {
            "idle": {"p50_ms": 1.0, "rpm": 1200}, "loaded": {"p50_ms": 9.0},
            "probe_interval_ms": {"idle": 100, "loaded": null},
            "increase_p50_ms": 8.0
        }}}}"#))
        .expect("latency");
        assert_eq!(l.sets.len(), 2);
        assert_eq!(
            l.kind,
            LatencyKind::UnderLoad {
                idle_every_ms: Some(100.0),
                loaded_every_ms: None
            }
        );
        assert!(l
            .figures
            .contains(&("load added, median".into(), Figure::Time(8000.0))));
        assert!(l
            .figures
            .contains(&("RPM idle".into(), Figure::Count(1200.0))));
        assert!(l.intervals.is_empty());
        assert_eq!(latency(&doc(r#"{"end": {}}"#)), None);
        // Keys but no percentiles: nothing to show.
        assert_eq!(
            latency(&doc(r#"{"end": {"plumb": {"latency": {"lost": 1}}}}"#)),
            None
        );
    }
}
