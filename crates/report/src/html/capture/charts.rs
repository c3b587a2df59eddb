//! A data direction's charts: the time-sequence graph (each bin's new data
//! as a vertical mark from its first to its last byte, retransmitted data
//! in another colour, the ACK line and the advertised window's right edge,
//! as Wireshark's tcptrace graph), throughput, RTT and the advertised
//! window over time. Drawn with [`crate::chart`] like every other chart.

use super::extract::DataDirection;
use crate::chart::{Chart, Quantity, Series, Style};

/// The chart id of the time-sequence graph (its marks get round caps).
pub const TSEQ: &str = "tseq";

fn chart(id: &str, title: String, y: (Quantity, &str), series: Vec<Series>, steps: bool) -> Chart {
    Chart {
        id: id.into(),
        title,
        x: (
            Quantity::Seconds,
            "time since the flow's first segment".into(),
        ),
        y: (y.0, y.1.into()),
        series,
        steps,
        x_range: None,
    }
}

/// Vertical marks from `a` to `b` at `t`, broken apart by non-finite points.
fn marks(v: &[(f64, f64, f64)]) -> Vec<(f64, f64)> {
    v.iter()
        .flat_map(|&(t, a, b)| [(t, a), (t, b), (f64::NAN, f64::NAN)])
        .collect()
}

/// The time-sequence graph.
pub fn tseq_chart(d: &DataDirection) -> Option<Chart> {
    if d.sent.is_empty() && d.resent.is_empty() {
        return None;
    }
    // The lines first, the marks over them: on a short path the ACK line
    // runs along the data.
    let mut series = Vec::new();
    if !d.ack.is_empty() {
        series.push(Series {
            name: "ACKed".into(),
            points: d.ack.clone(),
            style: Style::Palette(2),
        });
    }
    if !d.edge.is_empty() {
        series.push(Series {
            name: "advertised window's edge".into(),
            points: d.edge.clone(),
            style: Style::Dashed(1),
        });
    }
    series.push(Series {
        name: "data sent".into(),
        points: marks(&d.sent),
        style: Style::Palette(0),
    });
    if !d.resent.is_empty() {
        series.push(Series {
            name: "retransmitted".into(),
            points: marks(&d.resent),
            style: Style::Palette(3),
        });
    }
    Some(chart(
        TSEQ,
        format!("Time-sequence graph, {}", d.label),
        (Quantity::Bytes, "relative sequence"),
        series,
        false,
    ))
}

/// Throughput over time.
pub fn rate_chart(d: &DataDirection) -> Option<Chart> {
    if d.rate.is_empty() {
        return None;
    }
    let series = vec![Series {
        name: "payload sent, retransmissions included".into(),
        points: d.rate.clone(),
        style: Style::Palette(0),
    }];
    Some(chart(
        "capture-throughput",
        format!("Throughput, {}", d.label),
        (Quantity::Rate, "throughput"),
        series,
        true,
    ))
}

/// RTT from the capture point over time.
pub fn rtt_chart(d: &DataDirection) -> Option<Chart> {
    if d.rtt_ms.is_empty() {
        return None;
    }
    let series = vec![Series {
        name: "data to its ACK, from the capture point".into(),
        points: d.rtt_ms.clone(),
        style: Style::Palette(4),
    }];
    Some(chart(
        "capture-rtt",
        format!("RTT, {}", d.label),
        (Quantity::Millis, "RTT"),
        series,
        false,
    ))
}

/// The receiver's advertised window over time.
pub fn window_chart(d: &DataDirection) -> Option<Chart> {
    if d.window.is_empty() {
        return None;
    }
    let series = vec![Series {
        name: "advertised window (smallest per bin)".into(),
        points: d.window.clone(),
        style: Style::Palette(1),
    }];
    Some(chart(
        "capture-window",
        format!("Advertised window, {}", d.label),
        (Quantity::Bytes, "window"),
        series,
        true,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> DataDirection {
        DataDirection {
            label: "a → b".into(),
            sent: vec![(0.0, 0.0, 1000.0), (0.001, 1000.0, 2000.0)],
            resent: vec![(0.002, 0.0, 1000.0)],
            ack: vec![(0.003, 2000.0)],
            edge: vec![(0.003, 66_000.0)],
            rate: vec![(0.0, 8e6)],
            rtt_ms: vec![(0.003, 3.0)],
            window: vec![(0.003, 64_000.0)],
            bin_s: 1e-6,
        }
    }

    #[test]
    fn each_bin_is_one_mark_and_every_line_is_drawn() {
        let c = tseq_chart(&dir()).expect("data");
        assert_eq!(c.series.len(), 4);
        assert_eq!(c.series[2].points.len(), 6);
        let h = c.to_html();
        let data = h
            .split("data-series=\"2\" d=\"")
            .nth(1)
            .and_then(|d| d.split('"').next());
        assert_eq!(data.map(|d| d.matches('M').count()), Some(2), "{h}");
        assert!(h.contains("retransmitted") && h.contains("window&#39;s edge"));
        for c in [rate_chart(&dir()), rtt_chart(&dir()), window_chart(&dir())] {
            assert!(c.expect("drawn").to_html().contains("<path"));
        }
        let empty = DataDirection {
            sent: vec![],
            resent: vec![],
            ..dir()
        };
        assert!(tseq_chart(&empty).is_none());
    }
}
