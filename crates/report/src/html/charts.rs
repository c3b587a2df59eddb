//! The charts of a run, drawn from its typed series: throughput, windows,
//! RTT, retransmits and limit shares over time ([`RunData`]), latency's CDF
//! and its percentiles per interval ([`Latency`]), and the throughput of
//! several runs overlaid ([`compare_chart`]).

use super::extract::latency::Latency;
use super::extract::series::{RunData, StreamData};
use super::extract::Document;
use crate::chart::{Chart, Quantity, Series, Style};
use crate::format::time_us;

/// The model's prediction as a flat line from `start` to `end`.
fn predicted_line(d: &RunData, start: f64, end: f64, style: Style) -> Option<Series> {
    let (p, name) = d.predicted.clone()?;
    Some(Series {
        name,
        points: vec![(start, p), (end.max(start + 1e-3), p)],
        style,
    })
}

/// A chart over the test's time.
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

/// The overlaid throughput of several runs, one series each.
pub fn compare_chart(docs: &[&Document]) -> Chart {
    let end = docs.iter().map(|r| r.run.end_s).fold(0.0, f64::max);
    let mut series = Vec::new();
    for (k, doc) in docs.iter().enumerate() {
        let d = &doc.run;
        let pts = if d.sum.is_empty() {
            d.streams
                .first()
                .map(|s| s.rate.clone())
                .unwrap_or_default()
        } else {
            d.sum.clone()
        };
        series.push(Series {
            name: doc.name.clone(),
            points: pts,
            style: Style::Palette(k),
        });
        if let Some(p) = predicted_line(d, 0.0, d.end_s, Style::Dashed(k)) {
            series.push(Series {
                name: format!("{}: {}", doc.name, p.name),
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
