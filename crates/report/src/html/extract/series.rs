//! The series over time a test's charts are drawn from ([`RunData`]): each
//! stream's rate, windows, RTT, retransmits and limit shares per interval,
//! their sums, the model's prediction, and who wrote the document. Also
//! what a document that holds no test is (a `plumb top` log, running
//! connections, a diagnosis alone), for the page's subtitle.

use std::fmt::Write as _;

use serde_json::Value;

use super::{num, BadDocument};
use crate::format::figures_trimmed;

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

/// Pushes one interval's value as a step: at the interval's start, and
/// (for the last interval) again at its end — see [`close_steps`].
pub(super) fn step(series: &mut Vec<(f64, f64)>, start: f64, value: Option<f64>) {
    if let Some(v) = value {
        series.push((start, v));
    }
}

/// Ends a step series at `end`: its last value held to the end of the
/// last interval.
pub(super) fn close_steps(series: &mut Vec<(f64, f64)>, end: f64) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stream(start: f64, end: f64, extra: Value) -> Value {
        let mut s = json!({"socket": 5, "start": start, "end": end, "bits_per_second": 1e9});
        if let (Some(s), Some(e)) = (s.as_object_mut(), extra.as_object()) {
            s.extend(e.clone());
        }
        s
    }

    #[test]
    fn each_stream_is_a_step_series_held_to_the_last_end() {
        let doc = json!({
            "start": {"version": "plumb 0.1.0"},
            "intervals": [
                {"streams": [stream(0.0, 1.0, json!({"snd_cwnd": 1000, "rtt": 15000,
                    "plumb": {"rwnd_limited_us": 250_000}}))],
                 "sum": {"start": 0.0, "bits_per_second": 1e9}},
                {"streams": [stream(1.0, 2.0, json!({"snd_cwnd": 2000, "rtt": 0}))],
                 "sum": {"start": 1.0, "bits_per_second": 2e9}},
            ],
            "diagnosis": {"predicted_bps": 5e8, "limit": "receive_window"},
        });
        let d = run_data(&doc).expect("a test");
        assert_eq!(d.producer, "plumb 0.1.0");
        assert_eq!(d.end_s, 2.0);
        let s = &d.streams[0];
        assert_eq!((s.label.as_str(), s.sender), ("stream 1", true));
        assert_eq!(s.rate, vec![(0.0, 1e9), (1.0, 1e9), (2.0, 1e9)]);
        assert_eq!(s.cwnd, vec![(0.0, 1000.0), (1.0, 2000.0), (2.0, 2000.0)]);
        // An RTT of 0 is no reading.
        assert_eq!(s.rtt_us, vec![(0.0, 15000.0), (2.0, 15000.0)]);
        // 250 ms of a 1 s interval.
        assert_eq!(s.rwnd_limited_pct, vec![(0.0, 25.0), (2.0, 25.0)]);
        assert!(s.rwnd.is_empty() && s.retransmits.is_empty());
        assert_eq!(d.sum, vec![(0.0, 1e9), (1.0, 2e9), (2.0, 2e9)]);
        assert_eq!(
            d.predicted,
            Some((5e8, "predicted (receive window)".to_string()))
        );
    }

    #[test]
    fn bidir_streams_are_named_by_direction() {
        let doc = json!({
            "start": {},
            "intervals": [{
                "streams": [stream(0.0, 1.0, json!({})),
                            stream(0.0, 1.0, json!({"socket": 7, "sender": false}))],
                "sum_bidir_reverse": {"start": 0.0, "bits_per_second": 3.0},
            }],
            "model": {"predicted_bps": 4.0},
        });
        let d = run_data(&doc).expect("a test");
        assert_eq!(d.producer, "unknown program");
        let labels: Vec<&str> = d.streams.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["stream 1 (sending)", "stream 2 (receiving)"]);
        assert_eq!(d.sum_reverse, vec![(0.0, 3.0), (1.0, 3.0)]);
        assert_eq!(d.predicted, Some((4.0, "predicted (model)".to_string())));
    }

    #[test]
    fn missing_keys_and_wrong_types() {
        // A rate that is a string is no reading; the stream is still there.
        let doc = json!({"start": {}, "intervals": [{"streams": [
            {"start": 0.0, "end": 1.0, "bits_per_second": "fast"}]}]});
        let d = run_data(&doc).expect("a test");
        assert_eq!(d.streams.len(), 1);
        assert!(d.streams[0].rate.is_empty());
        assert_eq!(d.predicted, None);
        // Times that are not numbers, intervals that are not an array.
        let e = run_data(&json!({"start": {}, "intervals": [{"streams": [
            {"start": "0", "end": 1.0}]}]}))
        .expect_err("no start time");
        assert!(e.0.contains("start/end"), "{e}");
        let e = run_data(&json!({"start": {}, "intervals": {}})).expect_err("no array");
        assert!(e.0.contains("no \"intervals\" array"), "{e}");
        let e = run_data(&json!({"intervals": [], "error": "refused"})).expect_err("no start");
        assert!(e.0.contains("the test failed: refused"), "{e}");
    }

    #[test]
    fn documents_without_a_test_name_what_they_are() {
        let live = json!({"live": {"filter": "--port 22", "seconds": 2.0}, "connections": []});
        assert_eq!(
            run_data(&live).expect("live").producer,
            "plumb why on running connections, --port 22, sampled for 2 s"
        );
        let model = json!({"diagnosis": {"summary": "s"}});
        assert_eq!(run_data(&model).expect("model").producer, "plumb why");
        assert!(run_data(&json!({"connections": [1]})).is_err());
    }
}
