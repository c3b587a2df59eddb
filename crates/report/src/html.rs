//! The HTML report: one self-contained page from one or more `-J` documents.
//!
//! This module owns what the page shows and in which order. It reads the
//! same JSON the `-J` sink writes (plumb's, or a stock iperf3's, optionally
//! with the `diagnosis`, `model` and `lab` objects `plumb why`/`plumb lab`
//! add), turns it into [`RunData`] (per-stream series over time) and then
//! into [`Chart`]s and tables. Each section of a run is a [`Panel`]: a
//! function that returns nothing when the document holds nothing for it, so
//! a new kind of result (UDP loss, live connections) is one new entry in
//! [`PANELS`]. The page loads nothing: inline SVG and CSS, no script, and a
//! Content-Security-Policy that forbids any request.

use std::fmt::Write as _;

use serde_json::Value;

use crate::chart::{esc, Chart, Quantity, Series, Style};
use crate::format::{figures, figures_trimmed, rate, thousands, time_us};

/// One document to report on.
#[derive(Debug, Clone)]
pub struct Input {
    /// Its name on the page (the file name).
    pub name: String,
    /// The `-J` document.
    pub doc: Value,
}

/// One stream's values over the test's intervals, as step series: each
/// interval's value at its start, and the last one again at its end.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamData {
    /// "stream 1", with "(receiving)" for a receiver.
    pub label: String,
    /// This end sent on the stream (TCP state is only known at the sender).
    pub sender: bool,
    /// Goodput, bit/s.
    pub rate: Vec<(f64, f64)>,
    /// Congestion window, bytes.
    pub cwnd: Vec<(f64, f64)>,
    /// The window the receiver advertised, bytes.
    pub rwnd: Vec<(f64, f64)>,
    /// Smoothed RTT, µs.
    pub rtt_us: Vec<(f64, f64)>,
    /// Retransmitted segments per interval.
    pub retransmits: Vec<(f64, f64)>,
    /// Share of the interval limited by the receive window, %.
    pub rwnd_limited_pct: Vec<(f64, f64)>,
    /// Share of the interval limited by the send buffer, %.
    pub sndbuf_limited_pct: Vec<(f64, f64)>,
}

/// What the charts of one run are drawn from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunData {
    /// The program that wrote the document ("plumb 0.1.0", "iperf 3.12").
    pub producer: String,
    /// Each stream.
    pub streams: Vec<StreamData>,
    /// The sum over the streams (one direction), bit/s.
    pub sum: Vec<(f64, f64)>,
    /// The other direction's sum in a `--bidir` test, bit/s.
    pub sum_reverse: Vec<(f64, f64)>,
    /// The rate the model predicts, bit/s, and what it is.
    pub predicted: Option<(f64, String)>,
    /// The end of the last interval, s.
    pub end_s: f64,
}

/// Why a document cannot be reported on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadDocument(pub String);

impl std::fmt::Display for BadDocument {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadDocument {}

pub(crate) fn num(v: &Value) -> Option<f64> {
    v.as_f64().filter(|x| x.is_finite())
}

/// Pushes one interval's value as a step: at the interval's start, and
/// (for the last interval) again at its end — see [`close_steps`].
fn step(series: &mut Vec<(f64, f64)>, start: f64, value: Option<f64>) {
    if let Some(v) = value {
        series.push((start, v));
    }
}

fn close_steps(series: &mut Vec<(f64, f64)>, end: f64) {
    if let Some(&(x, v)) = series.last() {
        if end > x {
            series.push((end, v));
        }
    }
}

/// Reads the series the charts need from a `-J` document.
pub fn run_data(doc: &Value) -> Result<RunData, BadDocument> {
    let obj = doc
        .as_object()
        .ok_or_else(|| BadDocument("not a JSON object".into()))?;
    let why = obj
        .get("error")
        .and_then(Value::as_str)
        .map_or(String::new(), |e| format!(" (the test failed: {e})"));
    if !obj.get("start").is_some_and(Value::is_object) {
        if let Some(t) = crate::top::TopData::from_doc(doc) {
            // plumb top --json: the connections over time, in their own panel.
            return Ok(RunData {
                producer: t.producer(),
                ..RunData::default()
            });
        }
        if let Some(conns) = obj.get("connections").and_then(Value::as_array) {
            // plumb why on running connections: each has its own diagnosis.
            if conns.iter().any(|c| !c.is_object()) {
                return Err(BadDocument(
                    "a \"connections\" entry that is not an object".into(),
                ));
            }
            let live = &doc["live"];
            let mut producer = String::from("plumb why on running connections");
            if let Some(f) = live["filter"].as_str() {
                let _ = write!(producer, ", {f}");
            }
            if let Some(t) = num(&live["seconds"]) {
                let _ = write!(producer, ", sampled for {} s", figures_trimmed(t));
            }
            return Ok(RunData {
                producer,
                ..RunData::default()
            });
        }
        if obj.get("diagnosis").is_some_and(Value::is_object) {
            // A diagnosis without a test (plumb why -J from the model alone, or
            // of live connections): the verdict is the whole report.
            return Ok(RunData {
                producer: "plumb why".into(),
                ..RunData::default()
            });
        }
        return Err(BadDocument(format!(
            "not an iperf3/plumb -J document: no \"start\" object{why}"
        )));
    }
    let intervals = obj
        .get("intervals")
        .and_then(Value::as_array)
        .ok_or_else(|| BadDocument(format!("no \"intervals\" array{why}")))?;
    let mut d = RunData {
        producer: doc["start"]["version"]
            .as_str()
            .unwrap_or("unknown program")
            .to_string(),
        ..RunData::default()
    };
    // Streams are keyed by socket and direction; their order is the first interval's.
    let mut keys: Vec<(i64, bool)> = Vec::new();
    let mut last_end = 0.0f64;
    for iv in intervals {
        let Some(streams) = iv["streams"].as_array() else {
            return Err(BadDocument("an interval without \"streams\"".into()));
        };
        for s in streams {
            let (Some(start), Some(end)) = (num(&s["start"]), num(&s["end"])) else {
                return Err(BadDocument(
                    "an interval stream without start/end times".into(),
                ));
            };
            let key = (s["socket"].as_i64().unwrap_or(0), s["sender"] != false);
            let k = match keys.iter().position(|x| *x == key) {
                Some(k) => k,
                None => {
                    keys.push(key);
                    d.streams.push(StreamData {
                        label: String::new(),
                        sender: key.1,
                        ..StreamData::default()
                    });
                    keys.len() - 1
                }
            };
            let st = &mut d.streams[k];
            let secs = (end - start).max(1e-9);
            step(&mut st.rate, start, num(&s["bits_per_second"]));
            step(&mut st.cwnd, start, num(&s["snd_cwnd"]));
            step(&mut st.rwnd, start, num(&s["snd_wnd"]).filter(|w| *w > 0.0));
            step(&mut st.rtt_us, start, num(&s["rtt"]).filter(|r| *r > 0.0));
            step(&mut st.retransmits, start, num(&s["retransmits"]));
            let p = &s["plumb"];
            let share = |key: &str| num(&p[key]).map(|us| (us / 1e6 / secs * 100.0).min(100.0));
            step(&mut st.rwnd_limited_pct, start, share("rwnd_limited_us"));
            step(
                &mut st.sndbuf_limited_pct,
                start,
                share("sndbuf_limited_us"),
            );
            last_end = last_end.max(end);
        }
        if let Some(start) = num(&iv["sum"]["start"]) {
            step(&mut d.sum, start, num(&iv["sum"]["bits_per_second"]));
        }
        if let Some(start) = num(&iv["sum_bidir_reverse"]["start"]) {
            step(
                &mut d.sum_reverse,
                start,
                num(&iv["sum_bidir_reverse"]["bits_per_second"]),
            );
        }
    }
    let bidir = !d.sum_reverse.is_empty();
    for (k, st) in d.streams.iter_mut().enumerate() {
        st.label = match (bidir, st.sender) {
            (true, true) => format!("stream {} (sending)", k + 1),
            (true, false) => format!("stream {} (receiving)", k + 1),
            _ => format!("stream {}", k + 1),
        };
        for s in [
            &mut st.rate,
            &mut st.cwnd,
            &mut st.rwnd,
            &mut st.rtt_us,
            &mut st.retransmits,
            &mut st.rwnd_limited_pct,
            &mut st.sndbuf_limited_pct,
        ] {
            close_steps(s, last_end);
        }
    }
    close_steps(&mut d.sum, last_end);
    close_steps(&mut d.sum_reverse, last_end);
    d.end_s = last_end;
    d.predicted = if let Some(p) = num(&doc["diagnosis"]["predicted_bps"]) {
        let limit = doc["diagnosis"]["limit"].as_str().unwrap_or("model");
        Some((p, format!("predicted ({})", limit.replace('_', " "))))
    } else {
        num(&doc["model"]["predicted_bps"]).map(|p| {
            let limit = doc["model"]["limit"].as_str().unwrap_or("model");
            (p, format!("predicted ({limit})"))
        })
    };
    Ok(d)
}

fn predicted_line(d: &RunData, start: f64, end: f64, style: Style) -> Option<Series> {
    let (p, name) = d.predicted.clone()?;
    Some(Series {
        name,
        points: vec![(start, p), (end.max(start + 1e-3), p)],
        style,
    })
}

fn chart(id: &str, title: &str, y: (Quantity, &str), series: Vec<Series>) -> Chart {
    Chart {
        id: id.into(),
        title: title.into(),
        x: (Quantity::Seconds, "time".into()),
        y: (y.0, y.1.into()),
        series,
        steps: true,
        x_range: None,
    }
}

/// Throughput over time: each stream, their sum, the model's prediction.
pub fn throughput_chart(d: &RunData) -> Option<Chart> {
    let mut series: Vec<Series> = d
        .streams
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.rate.is_empty())
        .map(|(k, s)| Series {
            name: s.label.clone(),
            points: s.rate.clone(),
            style: Style::Palette(k),
        })
        .collect();
    if series.is_empty() {
        return None;
    }
    if series.len() > 1 && !d.sum.is_empty() {
        let name = if d.sum_reverse.is_empty() {
            "sum"
        } else {
            "sum (sending)"
        };
        series.push(Series {
            name: name.into(),
            points: d.sum.clone(),
            style: Style::Sum,
        });
    }
    if !d.sum_reverse.is_empty() {
        series.push(Series {
            name: "sum (receiving)".into(),
            points: d.sum_reverse.clone(),
            style: Style::Dashed(7),
        });
    }
    series.extend(predicted_line(d, 0.0, d.end_s, Style::Reference));
    Some(chart(
        "throughput",
        "Throughput over time",
        (Quantity::Rate, "goodput"),
        series,
    ))
}

fn per_stream(
    d: &RunData,
    pick: fn(&StreamData) -> &Vec<(f64, f64)>,
    suffix: &str,
    dashed: bool,
) -> Vec<Series> {
    d.streams
        .iter()
        .enumerate()
        .filter(|(_, s)| !pick(s).is_empty())
        .map(|(k, s)| Series {
            name: format!("{}{suffix}", s.label),
            points: pick(s).clone(),
            style: if dashed {
                Style::Dashed(k)
            } else {
                Style::Palette(k)
            },
        })
        .collect()
}

/// The congestion window and the window the receiver advertised.
pub fn window_chart(d: &RunData) -> Option<Chart> {
    let mut s = per_stream(d, |s| &s.cwnd, ": congestion window", false);
    s.extend(per_stream(d, |s| &s.rwnd, ": receiver's window", true));
    (!s.is_empty()).then(|| {
        chart(
            "windows",
            "Congestion window (solid) and the receiver's advertised window (dashed)",
            (Quantity::Bytes, "window"),
            s,
        )
    })
}

/// The smoothed RTT.
pub fn rtt_chart(d: &RunData) -> Option<Chart> {
    let s = per_stream(d, |s| &s.rtt_us, "", false);
    (!s.is_empty()).then(|| {
        chart(
            "rtt",
            "Round-trip time (TCP's smoothed RTT)",
            (Quantity::Micros, "RTT"),
            s,
        )
    })
}

/// Retransmitted segments per interval.
pub fn retransmit_chart(d: &RunData) -> Option<Chart> {
    let s = per_stream(d, |s| &s.retransmits, "", false);
    (!s.is_empty()).then(|| {
        chart(
            "retransmits",
            "Retransmitted segments per interval",
            (Quantity::Count, "segments"),
            s,
        )
    })
}

/// The share of each interval the receive window or the send buffer held
/// the sender back (TCP_INFO, plumb only).
pub fn limited_chart(d: &RunData) -> Option<Chart> {
    let mut s = per_stream(d, |s| &s.rwnd_limited_pct, ": receive window", false);
    s.extend(per_stream(
        d,
        |s| &s.sndbuf_limited_pct,
        ": send buffer",
        true,
    ));
    (!s.is_empty()).then(|| {
        chart(
            "limited",
            "Share of each interval limited by the receive window (solid) or the send buffer (dashed)",
            (Quantity::Percent, "time limited"),
            s,
        )
    })
}

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
    /// Headline figures: (label, value as text).
    pub figures: Vec<(String, String)>,
    /// Percentiles per interval (`intervals[].plumb.latency`): (name, step
    /// series in µs over the test's time).
    pub intervals: Vec<(String, Vec<(f64, f64)>)>,
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
    let mut out = Latency::default();
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
    let mut fig = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            out.figures.push((k.into(), v));
        }
    };
    let lv = &doc["end"]["plumb"]["latency"];
    let count = |v: &Value| num(v).map(thousands);
    if l.contains_key("connections_per_second") {
        fig("connections/s", count(&lv["connections_per_second"]));
        fig("connections", count(&lv["connections"]));
    } else {
        fig("transactions/s", count(&lv["transactions_per_second"]));
        fig("transactions", count(&lv["transactions"]));
    }
    fig("lost", count(&lv["lost"]));
    let ms = |v: &Value| num(v).map(|x| time_us(x * 1e3));
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
        num(&cost["wire_bits_per_second"]).map(|b| match num(&cost["share_of_load"]) {
            Some(s) => format!("{} ({} % of the load)", rate(b), figures_trimmed(s * 100.0)),
            None => rate(b),
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

/// The latency CDF chart: one line per distribution. A distribution without
/// a histogram is drawn through its percentiles. The axis ends where every
/// line has reached 99 %, so that a rare slow sample does not squeeze the
/// rest into the left edge (the table holds the tail); the title says how
/// far the slowest went.
pub fn latency_chart(l: &Latency) -> Option<Chart> {
    let mut series = Vec::new();
    let mut from_percentiles = false;
    for (k, d) in l.sets.iter().enumerate() {
        let points = if d.cdf.is_empty() {
            from_percentiles = true;
            let mut p: Vec<(f64, f64)> = d.min_us.map(|m| (m, 0.0)).into_iter().collect();
            p.extend(d.percentiles.iter().map(|(p, us)| (*us, p / 100.0)));
            p.extend(d.max_us.map(|m| (m, 1.0)));
            p
        } else {
            // No sample was faster than the minimum: the line starts there at 0.
            let mut p: Vec<(f64, f64)> = d
                .min_us
                .filter(|m| d.cdf.first().is_some_and(|f| *m < f.0))
                .map(|m| (m, 0.0))
                .into_iter()
                .collect();
            p.extend(d.cdf.iter().copied());
            p
        };
        if points.len() >= 2 {
            series.push(Series {
                name: d.name.clone(),
                points,
                style: Style::Palette(k),
            });
        }
    }
    if series.is_empty() {
        return None;
    }
    let reach = |s: &Series| {
        s.points
            .iter()
            .find(|p| p.1 >= 0.99)
            .or(s.points.last())
            .map_or(0.0, |p| p.0)
    };
    let cut = series.iter().map(reach).fold(0.0, f64::max);
    let far = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .chain(l.sets.iter().filter_map(|d| d.max_us))
        .fold(0.0, f64::max);
    let mut title = String::from("Latency: cumulative distribution");
    if from_percentiles {
        title += " (drawn through the percentiles where no histogram was recorded)";
    }
    let x_range = (far > cut * 1.05 && cut > 0.0).then(|| {
        let slowest = l.sets.iter().filter_map(|d| d.max_us).fold(0.0, f64::max);
        title += &format!(
            "; the axis ends where every line has reached 99 % (the slowest sample took {})",
            time_us(if slowest > 0.0 { slowest } else { far })
        );
        (0.0, cut)
    });
    Some(Chart {
        id: "latency".into(),
        title,
        x: (Quantity::Micros, "latency".into()),
        y: (Quantity::Fraction, "fraction of samples".into()),
        series,
        steps: false,
        x_range,
    })
}

/// Percentiles per interval (request/response tests).
pub fn latency_interval_chart(l: &Latency) -> Option<Chart> {
    let series: Vec<Series> = l
        .intervals
        .iter()
        .enumerate()
        .map(|(k, (name, pts))| Series {
            name: name.clone(),
            points: pts.clone(),
            style: Style::Palette(k),
        })
        .collect();
    (!series.is_empty()).then(|| {
        chart(
            "latency-intervals",
            "Round trip per interval",
            (Quantity::Micros, "round trip"),
            series,
        )
    })
}

/// One section of a run: its HTML, or nothing when the document holds
/// nothing for it.
pub type Panel = fn(&Input, &RunData) -> Option<String>;

/// The sections of a run, top to bottom. A new kind of result is one more
/// entry here.
pub const PANELS: &[Panel] = &[
    error_panel,
    verdict_panel,
    live_panel,
    crate::top::panel,
    |_, d| throughput_chart(d).map(|c| c.to_html()),
    |_, d| window_chart(d).map(|c| c.to_html()),
    |_, d| rtt_chart(d).map(|c| c.to_html()),
    |_, d| retransmit_chart(d).map(|c| c.to_html()),
    |_, d| limited_chart(d).map(|c| c.to_html()),
    latency_panel,
    missing_panel,
    config_panel,
];

/// Whether `doc` is `plumb why` on running connections (no test's `start`,
/// a `connections` array): a look at its keys, nothing sorted.
pub fn is_live(doc: &Value) -> bool {
    !doc["start"].is_object() && doc["connections"].is_array()
}

/// The connections of a document of `plumb why` on running connections,
/// busiest first (those without a diagnosis last); `None` for any other
/// document.
pub fn live_connections(doc: &Value) -> Option<Vec<&Value>> {
    if !is_live(doc) {
        return None;
    }
    let mut v: Vec<&Value> = doc["connections"].as_array()?.iter().collect();
    // Busiest first; one closed before it could be measured comes last.
    let measured = |c: &Value| c["diagnosis"].is_object();
    v.sort_by(|a, b| {
        measured(b)
            .cmp(&measured(a))
            .then(conn_rate(b).total_cmp(&conn_rate(a)))
    });
    Some(v)
}

/// A live connection's rate over the sampling, bit/s.
pub fn conn_rate(c: &Value) -> f64 {
    num(&c["rate_bps"])
        .or_else(|| num(&c["diagnosis"]["measured_bps"]))
        .unwrap_or(0.0)
}

/// A live connection as the page names it: "local → remote".
pub fn conn_name(c: &Value) -> String {
    format!(
        "{} → {}",
        c["local"].as_str().unwrap_or("?"),
        c["remote"].as_str().unwrap_or("?")
    )
}

fn conn_process(c: &Value) -> String {
    process_name(c["command"].as_str(), c["pid"].as_u64(), "process unknown")
}

/// A connection's owner as a page names it: `rsync (pid 42)`, `pid 42`, or
/// `unknown` when neither is known.
pub(crate) fn process_name(cmd: Option<&str>, pid: Option<u64>, unknown: &str) -> String {
    match (cmd, pid) {
        (Some(cmd), Some(pid)) => format!("{cmd} (pid {pid})"),
        (None, Some(pid)) => format!("pid {pid}"),
        _ => unknown.into(),
    }
}

fn conn_end(c: &Value) -> &'static str {
    match c["this_host"].as_str() {
        Some("sender") => "sends",
        Some("receiver") => "receives",
        Some("idle") => "idle",
        _ => "–",
    }
}

/// The limit a live connection's verdict names, in words.
pub fn conn_limit(c: &Value) -> String {
    let dg = &c["diagnosis"];
    if !dg.is_object() {
        return c["note"].as_str().unwrap_or("no diagnosis").to_string();
    }
    match dg["limit"].as_str() {
        Some(l) => l.replace('_', " "),
        None if c["this_host"] == "idle" => "none: idle".into(),
        None => "none named".into(),
    }
}

/// The first fix (the one for this host's system) with its expected rate.
fn first_fix(dg: &Value) -> String {
    dg["fixes"]
        .as_array()
        .and_then(|f| f.first())
        .map_or("–".into(), |f| {
            let e =
                num(&f["expected_bps"]).map_or(String::new(), |e| format!(" → about {}", rate(e)));
            format!("{}{e}", f["note"].as_str().unwrap_or(""))
        })
}

/// `plumb why` on running connections: each connection's identity and
/// verdict, busiest first. The document keeps each connection's totals over
/// the sampling, not the samples, so there is no chart to draw.
fn live_panel(i: &Input, _: &RunData) -> Option<String> {
    let conns = live_connections(&i.doc)?;
    let live = &i.doc["live"];
    let mut s = String::from("<section class=\"live\"><h3>Running connections</h3>");
    let _ = write!(
        s,
        "<p class=\"sub\">{} TCP connection{} matching {}, sampled through sock_diag for {} s; busiest first.</p>",
        conns.len(),
        if conns.len() == 1 { "" } else { "s" },
        esc(live["filter"].as_str().unwrap_or("the filter")),
        num(&live["seconds"]).map_or("–".into(), figures_trimmed)
    );
    if conns.is_empty() {
        s.push_str("<p class=\"note\">No connection matched.</p></section>");
        return Some(s);
    }
    s.push_str(
        "<table class=\"compare live\"><tr><th>#</th><th>connection</th><th>process</th><th>this host</th>\
         <th>measured</th><th>limit</th><th>predicted</th><th>fix</th></tr>",
    );
    for (n, c) in conns.iter().enumerate() {
        let dg = &c["diagnosis"];
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            n + 1,
            esc(&conn_name(c)),
            esc(&conn_process(c)),
            conn_end(c),
            esc(&rate(conn_rate(c))),
            esc(&conn_limit(c)),
            num(&dg["predicted_bps"]).map_or("–".into(), rate),
            esc(&first_fix(dg))
        );
    }
    s.push_str("</table>");
    for (n, c) in conns.iter().enumerate() {
        let dg = &c["diagnosis"];
        if !dg.is_object() || c["this_host"] == "idle" {
            continue;
        }
        let mut about = vec![
            conn_process(c),
            format!("this host {}", conn_end(c)),
            rate(conn_rate(c)),
        ];
        about.extend(c["congestion"].as_str().map(str::to_string));
        about.extend(text(&c["samples"]).map(|n| format!("{n} samples")));
        if c["closed"] == true {
            about.push("closed while sampled".into());
        }
        let head = format!(
            "<p class=\"conn\"><b>#{} {}</b> <span class=\"sub\">{}</span></p>",
            n + 1,
            esc(&conn_name(c)),
            esc(&about.join(" · "))
        );
        s.push_str(&verdict_html(dg, "verdict conn", &head, true));
    }
    s.push_str("</section>");
    Some(s)
}

/// A test that failed says so first (its document may hold nothing else).
fn error_panel(i: &Input, _: &RunData) -> Option<String> {
    let e = i.doc["error"].as_str()?;
    Some(format!(
        "<section class=\"verdict failed\"><p class=\"summary\">The test failed: {}</p></section>",
        esc(e)
    ))
}

fn verdict_panel(i: &Input, d: &RunData) -> Option<String> {
    let dg = &i.doc["diagnosis"];
    if is_live(&i.doc) {
        // Each running connection has its own verdict, in the live panel.
        return None;
    }
    if d.streams.is_empty() && !dg.is_object() {
        return None;
    }
    if !dg.is_object() {
        return Some(
            "<section class=\"verdict none\"><p>No diagnosis: the document holds too little evidence to name a limit.</p></section>"
                .into(),
        );
    }
    // A diagnosis alone is the model's (plumb why --rate --rtt): its
    // "measured" rate is the model's own, not a measurement.
    Some(verdict_html(dg, "verdict", "", i.doc["start"].is_object()))
}

/// A `diagnosis` object as the verdict box: `head` (HTML) above the summary;
/// `measured` when its rate was measured.
fn verdict_html(dg: &Value, class: &str, head: &str, measured: bool) -> String {
    let mut s = format!("<section class=\"{class}\">{head}");
    let _ = write!(
        s,
        "<p class=\"summary\">{}</p><table class=\"figures\"><tr>",
        esc(dg["summary"].as_str().unwrap_or("No limit named."))
    );
    let cell = |s: &mut String, k: &str, v: Option<f64>| {
        if let Some(v) = v {
            let _ = write!(s, "<td><span class=\"k\">{k}</span><b>{}</b></td>", rate(v));
        }
    };
    if measured {
        cell(&mut s, "measured", num(&dg["measured_bps"]));
    }
    cell(&mut s, "predicted", num(&dg["predicted_bps"]));
    cell(&mut s, "link carries", num(&dg["link_bps"]));
    if let Some(c) = dg["confidence"].as_str() {
        let _ = write!(
            s,
            "<td><span class=\"k\">confidence</span><b>{}</b></td>",
            esc(c)
        );
    }
    s.push_str("</tr></table>");
    if let Some(fixes) = dg["fixes"].as_array().filter(|f| !f.is_empty()) {
        s.push_str("<h3>What to change</h3><ul class=\"fixes\">");
        for (n, f) in fixes.iter().enumerate() {
            if n == 1 && fixes.len() > 2 {
                // The first fix is the one for this host's system; the rest fold.
                s.push_str("</ul><details><summary>Other systems</summary><ul class=\"fixes\">");
            }
            let expect = num(&f["expected_bps"]).map_or(String::new(), |e| {
                format!(" → expect about <b>{}</b>", rate(e))
            });
            let _ = write!(
                s,
                "<li><b>{}</b>: {}{expect}",
                esc(crate::format::os_name(f["os"].as_str().unwrap_or(""))),
                esc(f["note"].as_str().unwrap_or(""))
            );
            if let Some(cmds) = f["commands"].as_array().filter(|c| !c.is_empty()) {
                s.push_str("<pre>");
                for c in cmds {
                    let _ = writeln!(s, "{}", esc(c.as_str().unwrap_or("")));
                }
                s.push_str("</pre>");
            }
            s.push_str("</li>");
        }
        s.push_str("</ul>");
        if fixes.len() > 2 {
            s.push_str("</details>");
        }
    }
    if let Some(ev) = dg["evidence"].as_array().filter(|e| !e.is_empty()) {
        s.push_str("<details><summary>Evidence</summary><table class=\"kv\">");
        for e in ev {
            let v = num(&e["value"]).map_or(String::new(), |v| {
                if e["unit"] == "B" {
                    format!("{} B", v as u64)
                } else {
                    format!("{} {}", figures(v), e["unit"].as_str().unwrap_or(""))
                }
            });
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td></tr>",
                esc(e["what"].as_str().unwrap_or("")),
                esc(&v)
            );
        }
        s.push_str("</table></details>");
    }
    s.push_str("</section>");
    s
}

fn latency_panel(i: &Input, _: &RunData) -> Option<String> {
    let l = latency(&i.doc)?;
    let raw = &i.doc["end"]["plumb"]["latency"];
    let what = match raw["test"].as_str() {
        Some("crr") => "a new TCP connection per transaction (--crr)".to_string(),
        Some(t) => format!(
            "request/response ({}, {} B out, {} B back)",
            t.replace('_', " ").to_uppercase(),
            text(&raw["request_bytes"]).unwrap_or_else(|| "?".into()),
            text(&raw["response_bytes"]).unwrap_or_else(|| "?".into())
        ),
        None if raw["idle"].is_object() => {
            let every = |k: &str| {
                num(&raw["probe_interval_ms"][k]).map_or("–".into(), |m| time_us(m * 1e3))
            };
            format!(
                "under load (--latency): 1-byte probes every {} before the load, every {} during it",
                every("idle"),
                every("loaded")
            )
        }
        None => "latency".into(),
    };
    let mut s = format!(
        "<section class=\"latency\"><h3>Latency</h3><p class=\"sub\">{}</p>",
        esc(&what)
    );
    if !l.figures.is_empty() {
        s.push_str("<table class=\"figures\"><tr>");
        for (k, v) in &l.figures {
            let _ = write!(
                s,
                "<td><span class=\"k\">{}</span><b>{}</b></td>",
                esc(k),
                esc(v)
            );
        }
        s.push_str("</tr></table>");
    }
    // Percentiles side by side, one column per distribution (idle against loaded).
    let mut ps: Vec<f64> = l
        .sets
        .iter()
        .flat_map(|d| d.percentiles.iter().map(|p| p.0))
        .collect();
    ps.sort_by(f64::total_cmp);
    ps.dedup();
    s.push_str("<table class=\"compare lat\"><tr><th></th>");
    for d in &l.sets {
        let _ = write!(s, "<th>{}</th>", esc(&d.name));
    }
    s.push_str("</tr>");
    let cell = |v: Option<f64>| v.map_or("–".to_string(), time_us);
    let row = |s: &mut String, name: &str, f: &dyn Fn(&Distribution) -> Option<String>| {
        if l.sets.iter().all(|d| f(d).is_none()) {
            return;
        }
        let _ = write!(s, "<tr><th>{}</th>", esc(name));
        for d in &l.sets {
            let _ = write!(s, "<td>{}</td>", esc(&f(d).unwrap_or_else(|| "–".into())));
        }
        s.push_str("</tr>");
    };
    row(&mut s, "min", &|d| d.min_us.map(|v| cell(Some(v))));
    for p in ps {
        let name = format!("p{p}");
        row(&mut s, &name, &|d| {
            d.percentiles
                .iter()
                .find(|x| x.0 == p)
                .map(|x| cell(Some(x.1)))
        });
    }
    row(&mut s, "max", &|d| d.max_us.map(|v| cell(Some(v))));
    row(&mut s, "mean", &|d| d.mean_us.map(|v| cell(Some(v))));
    row(&mut s, "samples", &|d| d.count.map(thousands));
    s.push_str("</table>");
    if let Some(c) = latency_chart(&l) {
        s.push_str(&c.to_html());
    }
    if let Some(c) = latency_interval_chart(&l) {
        s.push_str(&c.to_html());
    }
    s.push_str("</section>");
    Some(s)
}

/// What the document's writer did not record, said rather than drawn empty.
fn missing_panel(i: &Input, d: &RunData) -> Option<String> {
    if crate::top::is_top_doc(&i.doc) {
        // The top panel says what it drew and what it left out.
        return None;
    }
    if let Some(conns) = live_connections(&i.doc) {
        let samples = conns.iter().filter_map(|c| c["samples"].as_u64()).max();
        return Some(format!(
            "<p class=\"note\">No charts: plumb why on running connections keeps each connection's totals over the time it sampled{}, not the samples themselves, so there is nothing over time to draw.</p>",
            samples.map_or(String::new(), |n| format!(" ({n} samples at most)"))
        ));
    }
    if d.streams.is_empty() {
        let what = if i.doc["start"].is_object() {
            "No intervals in this document."
        } else {
            "No test in this document: a diagnosis alone."
        };
        return Some(format!("<p class=\"note\">{what}</p>"));
    }
    let mut gaps = Vec::new();
    let senders = d.streams.iter().any(|s| s.sender);
    if i.doc["start"]["test_start"]["protocol"] == "UDP" {
        gaps.push("TCP's state and limit counters: this was a UDP test".to_string());
    } else if !senders {
        gaps.push("TCP's state (window, RTT, retransmits): it is recorded by the sending end, and this end only received (a -R test: see the server's document)".to_string());
    } else {
        if d.streams.iter().all(|s| s.cwnd.is_empty()) {
            gaps.push("the congestion window".into());
        }
        if d.streams.iter().all(|s| s.rwnd_limited_pct.is_empty()) {
            gaps.push(format!(
                "the share of each interval limited by the receive window or the send buffer ({} does not record TCP_INFO's limit counters)",
                d.producer
            ));
        }
    }
    (!gaps.is_empty()).then(|| {
        let mut s = String::from("<p class=\"note\">Not in this document: ");
        s.push_str(&esc(&gaps.join("; ")));
        s.push_str(".</p>");
        s
    })
}

fn kv_rows(s: &mut String, rows: &[(String, String)]) {
    for (k, v) in rows {
        let _ = write!(s, "<tr><td>{}</td><td>{}</td></tr>", esc(k), esc(v));
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The two ends of a test as the page names them, and what the document
/// says about each one's system.
#[derive(Debug, Clone, PartialEq)]
pub struct Hosts {
    /// The end that wrote the document: "this host (client)", or in the lab
    /// "client (this machine, near namespace of the lab)".
    pub near: String,
    /// The other end, likewise.
    pub far: String,
    /// Short column names: "client", "server", "this host".
    pub near_short: String,
    /// The far end's short name.
    pub far_short: String,
    /// The writer's system line, when the document has one.
    pub near_system: Option<String>,
    /// The far end's system line, or a sentence saying why it is not known.
    pub far_system: String,
    /// The far end's system is known (it sent it).
    pub far_known: bool,
    why_not: &'static str,
}

impl Hosts {
    /// Reads who wrote `doc` and what it holds about both ends.
    ///
    /// iperf3 writes only its own `start.system_info`; a plumb peer sends its
    /// system and sysctls in its results, which the writer keeps under
    /// `end.plumb.remote` (docs/protocol.md §6.2). In `plumb lab` both ends
    /// run on this machine, in two network namespaces (whose `net.*` sysctls
    /// may differ).
    pub fn of(doc: &Value) -> Hosts {
        let st = &doc["start"];
        let plumb = &doc["end"]["plumb"];
        let (near_role, far_role) = if st["accepted_connection"].is_object() {
            ("server", "client")
        } else if st["connecting_to"].is_object() || doc["lab"].is_object() {
            ("client", "server")
        } else {
            ("", "")
        };
        let (near, far, near_short, far_short) = if doc["lab"].is_object() {
            (
                "client (this machine, near namespace of the lab)".to_string(),
                "server (this machine, far namespace of the lab)".to_string(),
                "client (near)".to_string(),
                "server (far)".to_string(),
            )
        } else if near_role.is_empty() {
            (
                "this host".to_string(),
                "the other host".to_string(),
                "this host".to_string(),
                "the other host".to_string(),
            )
        } else {
            (
                format!("this host ({near_role})"),
                format!("the far host ({far_role})"),
                format!("this host ({near_role})"),
                format!("far host ({far_role})"),
            )
        };
        let writer_is_plumb = st["version"]
            .as_str()
            .is_some_and(|v| v.starts_with("plumb"));
        let remote = plumb["remote"].as_object();
        let far_given = remote
            .and_then(|r| r.get("system"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let why_not = if !writer_is_plumb {
            "iperf3 does not exchange the hosts' systems or sysctls; its document holds only its own system"
        } else if !doc["end"].is_object() {
            "the test ended before the ends exchanged results"
        } else if remote.is_none() {
            "the far end is not plumb (a stock iperf3, say) and does not send its system or sysctls"
        } else {
            "the far plumb did not send this (an older version, or its /proc hides it)"
        };
        Hosts {
            near,
            far,
            near_short,
            far_short,
            near_system: text(&st["system_info"]).or_else(|| text(&plumb["local"]["system"])),
            far_system: far_given
                .map_or_else(|| format!("not recorded: {why_not}"), str::to_string),
            far_known: far_given.is_some(),
            why_not,
        }
    }

    /// A note for the sysctls table: `None` when the far end's are there.
    fn sysctls_missing(&self, near: bool, far: bool) -> Option<String> {
        match (near, far) {
            (_, true) => None,
            (true, false) => Some(format!(
                "The {}'s sysctls were not recorded: {}.",
                self.far_short, self.why_not
            )),
            (false, false) => Some(format!(
                "Neither host's sysctls were recorded: {}.",
                self.why_not
            )),
        }
    }
}

fn config_panel(i: &Input, _: &RunData) -> Option<String> {
    let doc = &i.doc;
    let st = &doc["start"];
    if !st.is_object() {
        return None;
    }
    let t = &st["test_start"];
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut add = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            rows.push((k.into(), v));
        }
    };
    let hosts = Hosts::of(doc);
    add("written by", text(&st["version"]));
    add(&hosts.near, hosts.near_system.clone());
    add(&hosts.far, Some(hosts.far_system.clone()));
    add("time", text(&st["timestamp"]["time"]));
    add(
        "server",
        st["connecting_to"]["host"]
            .as_str()
            .map(|h| format!("{h} port {}", st["connecting_to"]["port"])),
    );
    add("protocol", text(&t["protocol"]));
    add("streams", text(&t["num_streams"]));
    add("duration", text(&t["duration"]).map(|d| format!("{d} s")));
    add("block size", text(&t["blksize"]).map(|b| format!("{b} B")));
    let dir = if t["bidir"].as_i64().unwrap_or(0) != 0 {
        "both ways (--bidir)"
    } else if t["reverse"].as_i64().unwrap_or(0) != 0 {
        "server to client (-R)"
    } else {
        "client to server"
    };
    add("direction", Some(dir.into()));
    add(
        "congestion control (sender)",
        text(&doc["end"]["sender_tcp_congestion"]),
    );
    add(
        "congestion control (receiver)",
        text(&doc["end"]["receiver_tcp_congestion"]),
    );
    add(
        "send buffer granted",
        text(&st["sndbuf_actual"]).map(|b| format!("{b} B")),
    );
    add(
        "receive buffer granted",
        text(&st["rcvbuf_actual"]).map(|b| format!("{b} B")),
    );
    let cpu = &doc["end"]["cpu_utilization_percent"];
    add(
        &format!("CPU, {}", hosts.near_short),
        num(&cpu["host_total"]).map(|c| format!("{} %", figures(c))),
    );
    add(
        &format!("CPU, {}", hosts.far_short),
        num(&cpu["remote_total"]).map(|c| format!("{} %", figures(c))),
    );
    let mut s =
        String::from("<section class=\"config\"><h3>Test configuration</h3><table class=\"kv\">");
    kv_rows(&mut s, &rows);
    s.push_str("</table>");

    // Both hosts' sysctls side by side (plumb records them; iperf3 does not).
    let local = doc["end"]["plumb"]["local"]["sysctl"].as_object();
    let remote = doc["end"]["plumb"]["remote"]["sysctl"].as_object();
    if local.is_some() || remote.is_some() {
        let mut keys: Vec<&String> = local
            .iter()
            .chain(remote.iter())
            .flat_map(|m| m.keys())
            .collect();
        keys.sort();
        keys.dedup();
        let _ = write!(
            s,
            "<h3>Sysctls</h3><table class=\"kv sysctl\"><tr><th>key</th><th>{}</th><th>{}</th></tr>",
            esc(&hosts.near_short),
            esc(&hosts.far_short)
        );
        let missing = |m: Option<&serde_json::Map<String, Value>>| {
            if m.is_some() {
                "–"
            } else {
                "not recorded"
            }
        };
        for k in keys {
            let get = |m: Option<&serde_json::Map<String, Value>>| {
                m.and_then(|m| m.get(k))
                    .and_then(text)
                    .unwrap_or_else(|| missing(m).into())
            };
            let (a, b) = (get(local), get(remote));
            let differ = if local.is_some() && remote.is_some() && a != b {
                " class=\"differ\""
            } else {
                ""
            };
            let _ = write!(
                s,
                "<tr{differ}><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(k),
                esc(&a),
                esc(&b)
            );
        }
        s.push_str("</table>");
    }
    if let Some(why) = hosts.sysctls_missing(local.is_some(), remote.is_some()) {
        let _ = write!(s, "<p class=\"note\">{}</p>", esc(&why));
    }
    let lab = &doc["lab"];
    if lab.is_object() {
        let c = &lab["configured"];
        let m = &lab["measured"];
        let e = &lab["emulator"];
        let mut rows = Vec::new();
        let mut add = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                rows.push((k.to_string(), v));
            }
        };
        add("link rate", num(&c["rate_bps"]).map(rate));
        add(
            "round trip",
            num(&c["rtt_ms"]).map(|r| format!("{} ms", figures(r))),
        );
        add(
            "loss",
            num(&c["loss"]).map(|l| format!("{} %", figures(l * 100.0))),
        );
        add("queue", text(&c["queue"]));
        add("seed", text(&c["seed"]));
        add(
            "measured round trip (min)",
            num(&m["rtt_min_ms"]).map(|r| format!("{} ms", figures(r))),
        );
        add("measured link rate", num(&m["rate_bps"]).map(rate));
        add("segments delivered", text(&e["segments_delivered"]));
        add("dropped by the queue", text(&e["segments_dropped_queue"]));
        add(
            "dropped by the loss model",
            text(&e["segments_dropped_loss"]),
        );
        add(
            "release error p50 / p99",
            num(&e["release_error_p50_us"])
                .zip(num(&e["release_error_p99_us"]))
                .map(|(a, b)| format!("{} / {} µs", figures(a), figures(b))),
        );
        s.push_str("<h3>Lab link (emulated)</h3><table class=\"kv\">");
        kv_rows(&mut s, &rows);
        s.push_str("</table>");
    }
    s.push_str("</section>");
    Some(s)
}

const CSS: &str = r#"
:root{--bg:#fff;--fg:#1a1a1a;--muted:#5a5a5a;--grid:#dcdcdc;--card:#f4f6f8;--accent:#0072B2;
--c0:#0072B2;--c1:#E69F00;--c2:#009E73;--c3:#D55E00;--c4:#CC79A7;--c5:#56B4E9;--c6:#8C6D00;--c7:#000000;}
@media (prefers-color-scheme:dark){:root{--bg:#15181c;--fg:#e8e8e8;--muted:#a8a8a8;--grid:#3a3f45;--card:#1f242a;--accent:#56B4E9;
--c0:#56B4E9;--c1:#E69F00;--c2:#2FBF8F;--c3:#F07A3A;--c4:#E08BC0;--c5:#9AD3F5;--c6:#F0E442;--c7:#ffffff;}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:60rem;padding:1rem 1.25rem;background:var(--bg);color:var(--fg);
font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
h1{font-size:1.5rem;margin:.2rem 0}h2{font-size:1.2rem;margin:1.6rem 0 .4rem;border-bottom:1px solid var(--grid)}
h3{font-size:1rem;margin:1rem 0 .3rem}
.sub,.note{color:var(--muted)}
.verdict{background:var(--card);border-left:4px solid var(--accent);padding:.6rem .9rem;margin:.6rem 0}
.verdict.none{border-left-color:var(--grid)}.verdict.failed{border-left-color:var(--c3)}
.summary{font-size:1.1rem;font-weight:600;margin:.2rem 0 .5rem}
table{border-collapse:collapse}
.figures td{padding:.2rem 1.2rem .2rem 0;vertical-align:top}
.figures .k{display:block;font-size:.8rem;color:var(--muted)}
.kv td,.kv th{padding:.15rem .8rem .15rem 0;text-align:left;vertical-align:top;border-bottom:1px solid var(--grid)}
.kv td:first-child{color:var(--muted)}
.sysctl tr.differ td{font-weight:600}
.fixes{padding-left:1.1rem}.fixes li{margin:.3rem 0}
pre{background:var(--bg);border:1px solid var(--grid);padding:.3rem .5rem;overflow-x:auto;font-size:.85rem;margin:.2rem 0}
figure{margin:.8rem 0}figcaption{font-weight:600;font-size:.95rem}
svg.chart{width:100%;height:auto;display:block}
.grid{stroke:var(--grid);stroke-width:1}
.frame{fill:none;stroke:var(--muted);stroke-width:1}
.tick{fill:var(--muted);font-size:11px}
.axis{fill:var(--fg);font-size:12px}
.series{fill:none;stroke-width:2;stroke-linejoin:round}
.s0{stroke:var(--c0);fill:var(--c0)}.s1{stroke:var(--c1);fill:var(--c1)}.s2{stroke:var(--c2);fill:var(--c2)}.s3{stroke:var(--c3);fill:var(--c3)}
.s4{stroke:var(--c4);fill:var(--c4)}.s5{stroke:var(--c5);fill:var(--c5)}.s6{stroke:var(--c6);fill:var(--c6)}.s7{stroke:var(--c7);fill:var(--c7)}
path.series{fill:none}
.dash{stroke-dasharray:6 4}
.sum{stroke:var(--fg);stroke-width:3}
.ref{stroke:var(--c3);stroke-width:2;stroke-dasharray:8 5}
.legend{list-style:none;padding:0;margin:.2rem 0 0;display:flex;flex-wrap:wrap;gap:.2rem 1.1rem;font-size:.85rem}
.legend svg{vertical-align:middle;margin-right:.35rem}
table.compare td,table.compare th{padding:.25rem .8rem .25rem 0;border-bottom:1px solid var(--grid);text-align:left;vertical-align:top}
table.lat td,table.lat tr:first-child th{text-align:right;font-variant-numeric:tabular-nums}
table.live td{font-size:.9rem}
.verdict.conn{border-left-color:var(--c2)}p.conn{margin:.1rem 0 .4rem}
.mark{stroke-width:1}.mark.none{fill:var(--grid);stroke:var(--grid)}.mark.idle{fill:none;stroke:var(--muted);stroke-dasharray:2 2}
.mark.other{fill:var(--muted);stroke:var(--muted)}.rowlabel{fill:var(--fg);font-size:11px}
footer{margin-top:2rem;font-size:.8rem;color:var(--muted)}
@page{size:A4;margin:14mm}
@media print{:root{--bg:#fff;--fg:#000;--muted:#444;--grid:#ccc;--card:#f2f2f2;--c0:#0072B2;--c1:#E69F00;--c2:#009E73;--c3:#D55E00;--c4:#CC79A7;--c5:#56B4E9;--c6:#8C6D00;--c7:#000}
body{max-width:none;padding:0;font-size:10.5pt}figure,.verdict,table{break-inside:avoid}h2{break-after:avoid}details{display:block}details>*{display:block}}
"#;

/// The whole page for one or more documents.
pub fn render(inputs: &[Input]) -> Result<String, BadDocument> {
    let runs: Vec<RunData> = inputs
        .iter()
        .map(|i| run_data(&i.doc).map_err(|e| BadDocument(format!("{}: {e}", i.name))))
        .collect::<Result<_, _>>()?;
    // Only tests are compared: a `plumb top` log or a live-connections page
    // has no test's throughput, limit or verdict to set beside one (its
    // column and line were empty).
    let (tests, test_runs): (Vec<Input>, Vec<RunData>) = inputs
        .iter()
        .zip(&runs)
        .filter(|(i, _)| !crate::top::is_top_doc(&i.doc) && !is_live(&i.doc))
        .map(|(i, r)| (i.clone(), r.clone()))
        .unzip();
    let title = if inputs.len() == 1 {
        format!("plumb report: {}", inputs[0].name)
    } else if tests.len() == inputs.len() {
        format!("plumb report: {} runs compared", inputs.len())
    } else {
        format!("plumb report: {} documents", inputs.len())
    };
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"color-scheme\" content=\"light dark\">\
         <title>{}</title><style>{CSS}</style></head><body><h1>{}</h1>",
        esc(&title),
        esc(&title)
    );
    if tests.len() > 1 {
        s.push_str(&compare_section(&tests, &test_runs));
    }
    for (i, d) in inputs.iter().zip(&runs) {
        let _ = write!(
            s,
            "<article class=\"run\"><h2>{}</h2><p class=\"sub\">{}</p>",
            esc(&i.name),
            esc(&d.producer)
        );
        for panel in PANELS {
            if let Some(html) = panel(i, d) {
                s.push_str(&html);
            }
        }
        s.push_str("</article>");
    }
    s.push_str("<footer>Written by plumb report. Everything on this page is inline: it loads nothing.</footer></body></html>\n");
    Ok(s)
}

/// The overlaid throughput of several runs, one series each.
pub fn compare_chart(inputs: &[Input], runs: &[RunData]) -> Chart {
    let end = runs.iter().map(|r| r.end_s).fold(0.0, f64::max);
    let mut series = Vec::new();
    for (k, (i, d)) in inputs.iter().zip(runs).enumerate() {
        let pts = if d.sum.is_empty() {
            d.streams
                .first()
                .map(|s| s.rate.clone())
                .unwrap_or_default()
        } else {
            d.sum.clone()
        };
        series.push(Series {
            name: i.name.clone(),
            points: pts,
            style: Style::Palette(k),
        });
        if let Some(p) = predicted_line(d, 0.0, d.end_s, Style::Dashed(k)) {
            series.push(Series {
                name: format!("{}: {}", i.name, p.name),
                ..p
            });
        }
    }
    Chart {
        x_range: Some((0.0, end)),
        ..chart(
            "compare",
            "Throughput of each run (sum of its streams; dashed: its prediction)",
            (Quantity::Rate, "goodput"),
            series,
        )
    }
}

fn compare_section(inputs: &[Input], runs: &[RunData]) -> String {
    let mut s = String::from("<section class=\"compare\"><h2>Compared</h2>");
    s.push_str(&compare_chart(inputs, runs).to_html());
    s.push_str("<table class=\"compare\"><tr><th></th>");
    for i in inputs {
        let _ = write!(s, "<th>{}</th>", esc(&i.name));
    }
    s.push_str("</tr>");
    type Cell = fn(&Value) -> String;
    let rows: [(&str, Cell); 6] = [
        ("limit", |d| {
            d["diagnosis"]["limit"]
                .as_str()
                .map_or("–".into(), |l| l.replace('_', " "))
        }),
        ("measured", |d| {
            num(&d["diagnosis"]["measured_bps"])
                .or_else(|| num(&d["end"]["sum_received"]["bits_per_second"]))
                .map_or("–".into(), rate)
        }),
        ("predicted", |d| {
            num(&d["diagnosis"]["predicted_bps"])
                .or_else(|| num(&d["model"]["predicted_bps"]))
                .map_or("–".into(), rate)
        }),
        ("verdict", |d| {
            d["diagnosis"]["summary"]
                .as_str()
                .unwrap_or("–")
                .to_string()
        }),
        ("fix (Linux)", |d| {
            d["diagnosis"]["fixes"]
                .as_array()
                .and_then(|f| f.iter().find(|f| f["os"] == "linux").or(f.first()))
                .map_or("–".into(), |f| {
                    let e = num(&f["expected_bps"])
                        .map_or(String::new(), |e| format!(" → about {}", rate(e)));
                    format!("{}{e}", f["note"].as_str().unwrap_or(""))
                })
        }),
        ("written by", |d| {
            d["start"]["version"].as_str().unwrap_or("–").to_string()
        }),
    ];
    for (name, f) in rows {
        let _ = write!(s, "<tr><th>{name}</th>");
        for i in inputs {
            let _ = write!(s, "<td>{}</td>", esc(&f(&i.doc)));
        }
        s.push_str("</tr>");
    }
    s.push_str("</table></section>");
    s
}
