//! Latency as a test recorded it (`end.plumb.latency` and
//! `intervals[].plumb.latency`): each distribution's percentiles and CDF in
//! µs whatever unit its keys named, the headline figures, the percentiles
//! per interval, and what kind of test timed them.

use serde_json::Value;

use super::series::{close_steps, step};
use super::{num, text};

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
    fn of(raw: &Value) -> LatencyKind {
        match raw["test"].as_str() {
            Some("crr") => LatencyKind::Crr,
            Some(t) => LatencyKind::RequestResponse {
                test: t.to_string(),
                request_bytes: text(&raw["request_bytes"]),
                response_bytes: text(&raw["response_bytes"]),
            },
            None if raw["idle"].is_object() => LatencyKind::UnderLoad {
                idle_every_ms: num(&raw["probe_interval_ms"]["idle"]),
                loaded_every_ms: num(&raw["probe_interval_ms"]["loaded"]),
            },
            None => LatencyKind::Other,
        }
    }
}

/// A key's time unit as a factor to µs: `_us` 1, `_ms` 1000.
fn time_key(k: &str) -> Option<(&str, f64)> {
    k.strip_suffix("_us")
        .map(|s| (s, 1.0))
        .or_else(|| k.strip_suffix("_ms").map(|s| (s, 1e3)))
}

/// Reads one distribution from an object of `pNN_us`/`pNN_ms` keys; `None`
/// when it has neither percentiles nor buckets.
pub fn distribution(name: &str, o: &serde_json::Map<String, Value>) -> Option<Distribution> {
    let mut d = Distribution {
        name: name.into(),
        ..Distribution::default()
    };
    for (k, v) in o {
        let (Some((stem, f)), Some(v)) = (time_key(k), num(v)) else {
            continue;
        };
        match stem {
            "min" => d.min_us = Some(v * f),
            "mean" => d.mean_us = Some(v * f),
            "max" => d.max_us = Some(v * f),
            _ => {
                if let Some(Ok(p)) = stem
                    .strip_prefix('p')
                    .map(|r| r.replace('_', ".").parse::<f64>())
                {
                    d.percentiles.push((p, v * f));
                }
            }
        }
    }
    d.percentiles.sort_by(|a, b| a.0.total_cmp(&b.0));
    let buckets = o
        .get("histogram")
        .or_else(|| o.get("buckets"))
        .and_then(Value::as_array);
    if let Some(b) = buckets {
        let mut pairs: Vec<(f64, f64)> = b
            .iter()
            .filter_map(|e| match e {
                Value::Array(a) => Some((num(a.first()?)?, num(a.get(1)?)?)),
                Value::Object(o) => {
                    let up = ["le_us", "le_ms", "upper_us", "upper_ms", "us", "ms"]
                        .iter()
                        .find_map(|k| {
                            let f = if k.ends_with("ms") { 1e3 } else { 1.0 };
                            Some(num(o.get(*k)?)? * f)
                        })?;
                    Some((up, num(o.get("count")?)?))
                }
                _ => None,
            })
            .collect();
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
    }
    if d.count.is_none() {
        d.count = ["probes", "transactions"]
            .iter()
            .find_map(|k| o.get(*k).and_then(num));
    }
    (!d.percentiles.is_empty() || !d.cdf.is_empty()).then_some(d)
}

/// Reads `end.plumb.latency` (and `intervals[].plumb.latency`), if the test
/// measured latency. The histogram is `buckets` or `histogram`: an array of
/// `[upper_us, count]` pairs or of objects with an upper bound (`le_us`,
/// `le_ms`, `upper_us`, `us`) and a `count`.
pub fn latency(doc: &Value) -> Option<Latency> {
    let l = doc["end"]["plumb"]["latency"].as_object()?;
    let mut out = Latency {
        kind: LatencyKind::of(&doc["end"]["plumb"]["latency"]),
        ..Latency::default()
    };
    out.sets.extend(distribution("round trip", l));
    for (key, name) in [
        ("connect", "connect"),
        ("request_response", "request/response"),
        ("idle", "idle"),
        ("loaded", "loaded"),
    ] {
        if let Some(o) = l.get(key).and_then(Value::as_object) {
            out.sets.extend(distribution(name, o));
        }
    }
    let mut fig = |k: &str, v: Option<Figure>| {
        if let Some(v) = v {
            out.figures.push((k.into(), v));
        }
    };
    let lv = &doc["end"]["plumb"]["latency"];
    let count = |v: &Value| num(v).map(Figure::Count);
    if l.contains_key("connections_per_second") {
        fig("connections/s", count(&lv["connections_per_second"]));
        fig("connections", count(&lv["connections"]));
    } else {
        fig("transactions/s", count(&lv["transactions_per_second"]));
        fig("transactions", count(&lv["transactions"]));
    }
    fig("lost", count(&lv["lost"]));
    let ms = |v: &Value| num(v).map(|x| Figure::Time(x * 1e3));
    fig("load added, median", ms(&lv["increase_p50_ms"]));
    fig(
        "load added, p99 over the idle median",
        ms(&lv["increase_p99_ms"]),
    );
    fig("RPM idle", count(&lv["idle"]["rpm"]));
    fig("RPM loaded", count(&lv["loaded"]["rpm"]));
    fig("probes resent", count(&lv["probe_retransmits"]));
    let cost = &lv["probe_cost"];
    fig(
        "the probes' own load",
        num(&cost["wire_bits_per_second"]).map(|bps| Figure::Load {
            bps,
            share: num(&cost["share_of_load"]),
        }),
    );

    // Per interval (request/response tests record these; --latency does not).
    if let Some(ivs) = doc["intervals"].as_array() {
        let keys = [
            ("p50_us", "p50"),
            ("p99_us", "p99"),
            ("connect_p50_us", "connect, p50"),
            ("request_response_p50_us", "request/response, p50"),
        ];
        let mut series: Vec<Vec<(f64, f64)>> = vec![Vec::new(); keys.len()];
        let mut end = 0.0f64;
        for iv in ivs {
            let t = &iv["sum"];
            let (Some(a), Some(b)) = (num(&t["start"]), num(&t["end"])) else {
                continue;
            };
            let il = &iv["plumb"]["latency"];
            for (s, (k, _)) in series.iter_mut().zip(keys) {
                step(s, a, num(&il[k]));
            }
            end = end.max(b);
        }
        for (s, (_, name)) in series.into_iter().zip(keys) {
            let mut s = s;
            close_steps(&mut s, end);
            if !s.is_empty() {
                out.intervals.push((name.into(), s));
            }
        }
    }
    (!out.sets.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_distribution_in_any_unit_is_held_in_micros() {
        let o = json!({"p50_ms": 1.5, "p99_9_us": 4000, "min_us": 900, "max_ms": 5,
                       "mean_us": "fast", "buckets": [[1000, 1], {"le_ms": 2, "count": 3}]});
        let d = distribution("idle", o.as_object().expect("object")).expect("a distribution");
        assert_eq!(d.percentiles, vec![(50.0, 1500.0), (99.9, 4000.0)]);
        assert_eq!((d.min_us, d.max_us), (Some(900.0), Some(5000.0)));
        // A mean that is a string is no mean.
        assert_eq!(d.mean_us, None);
        assert_eq!(d.count, Some(4.0));
        assert_eq!(d.cdf, vec![(1000.0, 0.25), (2000.0, 1.0)]);
        // Neither percentiles nor buckets: nothing to show.
        let o = json!({"min_us": 1, "probes": 3});
        assert_eq!(distribution("x", o.as_object().expect("object")), None);
    }

    #[test]
    fn request_response_figures_intervals_and_kind() {
        let doc = json!({
            "end": {"plumb": {"latency": {
                "test": "tcp_rr", "request_bytes": 100, "response_bytes": "200",
                "p50_us": 80, "p99_us": 120, "transactions_per_second": 12345.4,
                "transactions": 61000, "connect": {"p50_us": 30},
            }}},
            "intervals": [
                {"sum": {"start": 0.0, "end": 1.0}, "plumb": {"latency": {"p50_us": 70}}},
                {"sum": {"start": 1.0, "end": 2.0}, "plumb": {"latency": {"p50_us": 90}}},
                {"sum": {"start": "x"}},
            ],
        });
        let l = latency(&doc).expect("latency");
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
    fn under_load_and_missing_or_wrong_latency() {
        let doc = json!({"end": {"plumb": {"latency": {
            "idle": {"p50_ms": 1.0, "rpm": 1200}, "loaded": {"p50_ms": 9.0},
            "probe_interval_ms": {"idle": 100, "loaded": "often"},
            "increase_p50_ms": 8.0,
        }}}});
        let l = latency(&doc).expect("latency");
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
        assert_eq!(latency(&json!({"end": {}})), None);
        assert_eq!(latency(&json!({"end": {"plumb": {"latency": [1]}}})), None);
        // Keys but no percentiles: nothing to show.
        assert_eq!(
            latency(&json!({"end": {"plumb": {"latency": {"lost": 1}}}})),
            None
        );
    }
}
