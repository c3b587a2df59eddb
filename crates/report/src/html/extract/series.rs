//! The series over time a test's charts are drawn from ([`RunData`]): each
//! stream's rate, windows, RTT, retransmits and limit shares per interval,
//! their sums, the model's prediction, and who wrote the document. Also
//! what a document that holds no test is (a `plumb top` log, running
//! connections, a diagnosis alone), for the page's subtitle.

use std::fmt::Write as _;

use plumb_record::{Document as Record, IntervalStream};

use super::bad::BadDocument;
use super::diagnosis::verdict_of;
use super::real::num;
use crate::format::figures_trimmed;
use crate::top::TopData;

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
pub fn run_data(doc: &Record) -> Result<RunData, BadDocument> {
    run_data_with(doc, crate::top::top_data(doc).as_ref())
}

/// [`run_data`], with the document's `plumb top` log (if it is one) read
/// already.
pub(super) fn run_data_with(doc: &Record, top: Option<&TopData>) -> Result<RunData, BadDocument> {
    let why = doc
        .error
        .as_ref()
        .map_or(String::new(), |e| format!(" (the test failed: {e})"));
    let Some(start) = &doc.start else {
        return no_test(doc, top, &why);
    };
    let intervals = doc
        .intervals
        .as_ref()
        .ok_or_else(|| BadDocument(format!("no \"intervals\" array{why}")))?;
    let mut d = RunData {
        producer: start
            .version
            .as_deref()
            .unwrap_or("unknown program")
            .to_string(),
        ..RunData::default()
    };
    // Streams are keyed by socket and direction; their order is the first interval's.
    let mut keys: Vec<(i32, bool)> = Vec::new();
    let mut last_end = 0.0f64;
    for iv in intervals {
        for s in &iv.streams {
            let (Some(start), Some(end)) = (num(s.start), num(s.end)) else {
                return Err(BadDocument(
                    "an interval stream without start/end times".into(),
                ));
            };
            let key = (s.socket, s.sender != Some(false));
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
            step_stream(&mut d.streams[k], s, start, end);
            last_end = last_end.max(end);
        }
        if let Some(start) = num(iv.sum.start) {
            step(&mut d.sum, start, num(iv.sum.bits_per_second));
        }
        if let Some(r) = &iv.sum_bidir_reverse {
            if let Some(start) = num(r.start) {
                step(&mut d.sum_reverse, start, num(r.bits_per_second));
            }
        }
    }
    close_run(&mut d, last_end);
    let diagnosed = verdict_of(doc).and_then(|g| {
        let p = g.predicted_bps?;
        // `null` (nothing to explain) names no limit: the model's.
        let limit = if g.nothing_to_explain {
            "model"
        } else {
            g.limit_name()
        };
        Some((p, format!("predicted ({})", limit.replace('_', " "))))
    });
    d.predicted = diagnosed.or_else(|| {
        let m = doc.model.as_ref()?;
        Some((num(m.predicted_bps)?, format!("predicted ({})", m.limit)))
    });
    Ok(d)
}

/// One stream's readings of one interval (`start` to `end`, in seconds),
/// each a step of its series.
fn step_stream(st: &mut StreamData, s: &IntervalStream, start: f64, end: f64) {
    let secs = (end - start).max(1e-9);
    step(&mut st.rate, start, num(s.bits_per_second));
    step(&mut st.cwnd, start, s.snd_cwnd.map(|w| w as f64));
    let rwnd = s.snd_wnd.map(|w| w as f64).filter(|w| *w > 0.0);
    step(&mut st.rwnd, start, rwnd);
    let rtt = s.rtt.map(|r| r as f64).filter(|r| *r > 0.0);
    step(&mut st.rtt_us, start, rtt);
    step(&mut st.retransmits, start, s.retransmits.map(|r| r as f64));
    let share = |us: u64| (us as f64 / 1e6 / secs * 100.0).min(100.0);
    let p = s.plumb.as_ref();
    step(
        &mut st.rwnd_limited_pct,
        start,
        p.map(|p| share(p.rwnd_limited_us)),
    );
    step(
        &mut st.sndbuf_limited_pct,
        start,
        p.map(|p| share(p.sndbuf_limited_us)),
    );
}

/// Names the streams (by direction when the test ran both ways) and ends
/// every series at `end`, the last interval's end.
fn close_run(d: &mut RunData, end: f64) {
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
            close_steps(s, end);
        }
    }
    close_steps(&mut d.sum, end);
    close_steps(&mut d.sum_reverse, end);
    d.end_s = end;
}

/// What a document without a test's `start` is, for the page's subtitle:
/// a `plumb top` log, running connections, or a diagnosis alone.
fn no_test(doc: &Record, top: Option<&TopData>, why: &str) -> Result<RunData, BadDocument> {
    let producer = if let Some(t) = top {
        // plumb top --json: the connections over time, in their own panel.
        t.producer()
    } else if doc.connections.is_some() {
        // plumb why on running connections: each has its own diagnosis.
        let mut producer = String::from("plumb why on running connections");
        if let Some(l) = &doc.live {
            if !l.filter.is_empty() {
                let _ = write!(producer, ", {}", l.filter);
            }
            let _ = write!(producer, ", sampled for {} s", figures_trimmed(l.seconds));
        }
        producer
    } else if doc.live.is_some() {
        // What was sampled, without the connections: their list is not one.
        return Err(BadDocument(
            "a \"live\" object whose \"connections\" are not a list of connections".into(),
        ));
    } else if verdict_of(doc).is_some() {
        // A diagnosis without a test (plumb why -J from the model alone, or
        // of live connections): the verdict is the whole report.
        "plumb why".into()
    } else {
        return Err(BadDocument(format!(
            "not an iperf3/plumb -J document: no \"start\" object{why}"
        )));
    };
    Ok(RunData {
        producer,
        ..RunData::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An interval stream from `start` to `end` at 1 Gbit/s, with `extra`
    /// keys (`"snd_cwnd": 1000, `…).
    fn stream(start: f64, end: f64, extra: &str) -> String {
        format!(
            r#"{{"socket": 5, "start": {start:?}, "end": {end:?}, "seconds": 1.0, "bytes": 1,
                "bits_per_second": 1e9, "omitted": false{extra}}}"#
        )
    }

    /// An interval's sum.
    fn sum(start: f64, bps: f64) -> String {
        format!(
            r#"{{"start": {start:?}, "end": 1.0, "seconds": 1.0, "bytes": 1,
                "bits_per_second": {bps:?}, "omitted": false}}"#
        )
    }

    fn run(text: &str) -> Result<RunData, BadDocument> {
        run_data(&Record::parse(text).expect("a document"))
    }

    #[test]
    fn each_stream_is_a_step_series_held_to_the_last_end() {
        let limited = r#", "plumb": {"busy_us": 1000000, "rwnd_limited_us": 250000,
                          "sndbuf_limited_us": 0}"#;
        let doc = format!(
            r#"{{"start": {{"version": "plumb 0.1.0"}},
                "intervals": [
                    {{"streams": [{}], "sum": {}}},
                    {{"streams": [{}], "sum": {}}}
                ],
                "diagnosis": {{"predicted_bps": 5e8, "limit": "receive_window"}}}}"#,
            stream(
                0.0,
                1.0,
                &format!(r#", "snd_cwnd": 1000, "rtt": 15000{limited}"#)
            ),
            sum(0.0, 1e9),
            stream(1.0, 2.0, r#", "snd_cwnd": 2000, "rtt": 0"#),
            sum(1.0, 2e9),
        );
        let d = run(&doc).expect("a test");
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
        let doc = format!(
            r#"{{"start": {{}},
                "intervals": [{{"streams": [{}, {}], "sum": {}, "sum_bidir_reverse": {}}}],
                "model": {{"predicted_bps": 4.0, "limit": "model", "streams": 1}}}}"#,
            stream(0.0, 1.0, ""),
            stream(0.0, 1.0, r#", "socket": 7, "sender": false"#).replace(r#""socket": 5, "#, ""),
            sum(0.0, 1.0),
            sum(0.0, 3.0),
        );
        let d = run(&doc).expect("a test");
        assert_eq!(d.producer, "unknown program");
        let labels: Vec<&str> = d.streams.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["stream 1 (sending)", "stream 2 (receiving)"]);
        assert_eq!(d.sum_reverse, vec![(0.0, 3.0), (1.0, 3.0)]);
        assert_eq!(d.predicted, Some((4.0, "predicted (model)".to_string())));
    }

    #[test]
    fn missing_keys_and_unreadable_figures() {
        // A rate written as null is no reading; the stream is still there.
        let doc = format!(
            r#"{{"start": {{}}, "intervals": [{{"streams": [{}], "sum": {}}}]}}"#,
            stream(0.0, 1.0, "").replace("1e9", "null"),
            sum(0.0, 1.0),
        );
        let d = run(&doc).expect("a test");
        assert_eq!(d.streams.len(), 1);
        assert!(d.streams[0].rate.is_empty());
        assert_eq!(d.predicted, None);
        // Times that are not numbers.
        let doc = doc.replace(
            r#""start": 0.0, "end": 1.0, "seconds""#,
            r#""start": null, "end": 1.0, "seconds""#,
        );
        let e = run(&doc).expect_err("no start time");
        assert!(e.0.contains("start/end"), "{e}");
        let e = run(r#"{"start": {}}"#).expect_err("no intervals");
        assert!(e.0.contains("no \"intervals\" array"), "{e}");
        let e = run(r#"{"intervals": [], "error": "refused"}"#).expect_err("no start");
        assert!(e.0.contains("the test failed: refused"), "{e}");
    }

    #[test]
    fn documents_without_a_test_name_what_they_are() {
        let live = r#"{"live": {"filter": "--port 22", "seconds": 2.0}, "connections": []}"#;
        assert_eq!(
            run(live).expect("live").producer,
            "plumb why on running connections, --port 22, sampled for 2 s"
        );
        let model = r#"{"diagnosis": {"summary": "s"}}"#;
        assert_eq!(run(model).expect("model").producer, "plumb why");
        assert!(run(r#"{"connections": [1]}"#).is_err());
    }
}
