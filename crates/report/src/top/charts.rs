//! The charts of a top log over its intervals: throughput, RTT and windows
//! per connection as step series ([`steps`]), and the strip of the limit
//! named in each interval ([`limit_strip`]).

use std::fmt::Write as _;

use super::data::{Sample, TopData};
use crate::chart::{esc, Chart, Quantity, Series, Style};

impl TopData {
    /// A chart over the log's intervals.
    pub(super) fn chart(
        &self,
        id: &str,
        title: &str,
        y: (Quantity, &str),
        series: Vec<Series>,
    ) -> Chart {
        Chart {
            id: id.into(),
            title: title.into(),
            x: (Quantity::Intervals, "time".into()),
            y: (y.0, y.1.into()),
            series,
            steps: true,
            x_range: Some((self.first.saturating_sub(1) as f64, self.last as f64)),
        }
    }
}

/// A step series of one reading per interval: each value from its
/// interval's start (`interval - 1`) to its end; a missing reading or value
/// breaks the line (a point that is not finite).
pub fn steps(samples: &[Sample], pick: impl Fn(&Sample) -> Option<f64>) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut open: Option<(u64, f64)> = None;
    for s in samples {
        let v = pick(s).filter(|v| v.is_finite());
        match (open, v) {
            (Some((i, _)), Some(v)) if s.interval == i + 1 => {
                out.push((i as f64, v));
                open = Some((s.interval, v));
            }
            (prev, v) => {
                if let Some((i, pv)) = prev {
                    out.push((i as f64, pv));
                    out.push((f64::NAN, f64::NAN));
                }
                open = v.map(|v| {
                    out.push((s.interval as f64 - 1.0, v));
                    (s.interval, v)
                });
            }
        }
    }
    match open {
        Some((i, v)) => out.push((i as f64, v)),
        None => {
            if out.last().is_some_and(|p| p.0.is_nan()) {
                out.pop();
            }
        }
    }
    out
}

/// Throughput over time, one line per drawn connection (receivers dashed,
/// drawn over the senders: on one host both ends of a transfer carry the
/// same rate).
pub fn throughput_chart(t: &TopData) -> Option<Chart> {
    let mut series: Vec<Series> = t
        .conns
        .iter()
        .enumerate()
        .map(|(k, c)| Series {
            name: format!("{} ({})", c.label(k), c.role()),
            points: steps(&c.samples, |s| Some(s.rate_bps)),
            style: if c.sends() {
                Style::Palette(k)
            } else {
                Style::Dashed(k)
            },
        })
        .collect();
    series.sort_by_key(|s| matches!(s.style, Style::Dashed(_)));
    (!series.is_empty()).then(|| {
        t.chart(
            "top-throughput",
            "Throughput of each connection (dashed: this host receives)",
            (Quantity::Rate, "rate"),
            series,
        )
    })
}

/// The smoothed RTT of the connections this host sends on.
pub fn rtt_chart(t: &TopData) -> Option<Chart> {
    let series: Vec<Series> = t
        .conns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.sends())
        .map(|(k, c)| Series {
            name: c.label(k),
            points: steps(&c.samples, |s| s.rtt_ms.filter(|r| *r > 0.0)),
            style: Style::Palette(k),
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    (!series.is_empty()).then(|| {
        t.chart(
            "top-rtt",
            "Round-trip time (TCP's smoothed RTT, at the sending end)",
            (Quantity::Millis, "RTT"),
            series,
        )
    })
}

/// The congestion window of the connections this host sends on (solid),
/// and the receiver's advertised window of every drawn one (dashed).
pub fn window_chart(t: &TopData) -> Option<Chart> {
    let mut series = Vec::new();
    for (k, c) in t.conns.iter().enumerate().filter(|(_, c)| c.sends()) {
        series.push(Series {
            name: format!("#{}: congestion window", k + 1),
            points: steps(&c.samples, |s| s.cwnd_bytes.filter(|w| *w > 0.0)),
            style: Style::Palette(k),
        });
    }
    for (k, c) in t.conns.iter().enumerate() {
        series.push(Series {
            name: format!("#{}: receiver's window", k + 1),
            points: steps(&c.samples, |s| s.window_bytes),
            style: Style::Dashed(k),
        });
    }
    series.retain(|s| !s.points.is_empty());
    (!series.is_empty()).then(|| {
        t.chart(
            "top-windows",
            "Congestion window (solid, at the sending end) and the receiver's advertised window (dashed)",
            (Quantity::Bytes, "window"),
            series,
        )
    })
}

/// The palette colour of a limit, the same on every page.
fn limit_class(s: &Sample) -> (&'static str, String) {
    if s.direction == "idle" {
        return ("mark idle", "idle".into());
    }
    let Some(l) = s.limit.as_deref() else {
        return ("mark none", "none".into());
    };
    let class = match l {
        "receive_window" => "mark s0",
        "send_buffer" => "mark s1",
        "congestion" => "mark s2",
        "loss" => "mark s3",
        "link" => "mark s4",
        "cpu" => "mark s5",
        "application" => "mark s6",
        "path_mtu" => "mark s7",
        _ => "mark other",
    };
    (class, l.to_string())
}

/// The limit named per interval: one row per drawn connection, a mark per
/// run of intervals with one limit (`data-intervals` says how many),
/// coloured by limit, with a legend of the limits present.
pub fn limit_strip(t: &TopData) -> Option<String> {
    if t.conns.is_empty() {
        return None;
    }
    const W: f64 = 720.0;
    const LEFT: f64 = 64.0;
    const RIGHT: f64 = 14.0;
    const TOP: f64 = 10.0;
    const ROW: f64 = 18.0;
    const GAP: f64 = 6.0;
    const BOTTOM: f64 = 42.0;
    let ph = t.conns.len() as f64 * (ROW + GAP) - GAP;
    let h = TOP + ph + BOTTOM;
    let xs = t
        .chart("x", "", (Quantity::Count, ""), Vec::new())
        .x_scale();
    let pw = W - LEFT - RIGHT;
    let px = |v: f64| LEFT + xs.frac(v).clamp(0.0, 1.0) * pw;
    let title = "Limit named in each interval (one row per connection; hover for the interval)";
    let mut s = format!(
        "<figure class=\"chart-box\"><figcaption>{title}</figcaption>\
         <svg class=\"chart\" data-chart=\"top-limits\" viewBox=\"0 0 {W} {h}\" role=\"img\" aria-label=\"{title}\" xmlns=\"http://www.w3.org/2000/svg\">"
    );
    crate::chart::x_grid(&mut s, &xs, px, TOP, TOP + ph);
    let mut present: Vec<(&'static str, String)> = Vec::new();
    for (k, c) in t.conns.iter().enumerate() {
        let y = TOP + k as f64 * (ROW + GAP);
        let _ = write!(
            s,
            "<text class=\"rowlabel\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">#{}</text>",
            LEFT - 6.0,
            y + ROW / 2.0 + 4.0,
            k + 1
        );
        // One mark per run of intervals with the same limit, so a day of
        // readings is as many marks as the limit changed.
        for (from, to, label, first) in c.limit_runs() {
            let (class, key) = limit_class(first);
            let (x0, x1) = (px(from as f64 - 1.0), px(to as f64));
            let when = if from == to {
                format!("interval {from}")
            } else {
                format!("intervals {from}–{to}")
            };
            let _ = write!(
                s,
                "<rect class=\"{class}\" data-limit=\"{}\" data-intervals=\"{}\" x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{ROW}\"><title>#{} {when}: {}</title></rect>",
                esc(&key),
                to - from + 1,
                x0 + 0.5,
                (x1 - x0 - 1.0).max(0.5),
                k + 1,
                esc(&label)
            );
            if !present.iter().any(|p| p.0 == class && p.1 == key) {
                present.push((class, key));
            }
        }
    }
    let _ = write!(
        s,
        "<text class=\"axis\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">time (intervals)</text></svg><ul class=\"legend\">",
        LEFT + pw / 2.0,
        h - 6.0
    );
    for (class, key) in present {
        let name = match key.as_str() {
            "none" => "busy, no limit named".to_string(),
            "idle" => "idle".to_string(),
            l => l.replace('_', " "),
        };
        let _ = write!(
            s,
            "<li><svg class=\"key\" viewBox=\"0 0 16 10\" width=\"16\" height=\"10\"><rect class=\"{class}\" x=\"1\" y=\"1\" width=\"14\" height=\"8\"/></svg>{}</li>",
            esc(&name)
        );
    }
    s.push_str("</ul></figure>");
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(interval: u64, v: f64) -> Sample {
        Sample {
            interval,
            direction: "sender".into(),
            rate_bps: v,
            rtt_ms: None,
            cwnd_bytes: None,
            window_bytes: None,
            retransmits: None,
            limit: None,
        }
    }

    #[test]
    fn steps_run_from_each_interval_start_and_break_at_gaps() {
        let s = [sample(1, 1.0), sample(2, 2.0), sample(4, 4.0)];
        let p = steps(&s, |s| Some(s.rate_bps));
        assert_eq!(p.len(), 6);
        assert_eq!(&p[..3], &[(0.0, 1.0), (1.0, 2.0), (2.0, 2.0)]);
        assert!(p[3].0.is_nan());
        assert_eq!(&p[4..], &[(3.0, 4.0), (4.0, 4.0)]);
        // A missing value breaks the line too, and nothing trails.
        let p = steps(&s, |s| (s.interval != 4).then_some(s.rate_bps));
        assert_eq!(p, vec![(0.0, 1.0), (1.0, 2.0), (2.0, 2.0)]);
        assert!(steps(&s, |_| None).is_empty());
    }
}
