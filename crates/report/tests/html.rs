//! The HTML report's chart data — series, scales, ticks — from documents
//! recorded on loopback and in the lab: plumb `-J`, plumb `--json-stream`,
//! a plumb lab run with its diagnosis, iperf3 3.12 `-J` (forward `-P 2` and
//! `-R`) and iperf3 3.22 `-J` (`-P 2`, `-R`, UDP) and `--json-stream`, each
//! against a server of its own version; plumb `--latency`, `--rr` and `--crr`
//! documents, and `plumb why -J` on running connections (in the lab and on
//! loopback). Expected values are read from the documents themselves; how
//! each fixture was recorded is in `tests/fixtures/README.md`.

use plumb_report::chart::{Quantity, Scale, Style};
use plumb_report::format;
use plumb_report::html::{self, Input, RunData};
use serde_json::{json, Value};

fn load(name: &str) -> Value {
    let text = fixture_text(name);
    serde_json::from_str(&text)
        .ok()
        .or_else(|| plumb_report::json::document_from_events(&text))
        .unwrap_or_else(|| panic!("{name} is not a document"))
}

/// The document as the report reads it: the record's types.
fn rec(doc: &Value) -> plumb_report::input::Document {
    plumb_report::input::Document::from_value(doc.clone())
        .unwrap_or_else(|e| panic!("not a document: {e}"))
}

fn data(doc: &Value) -> RunData {
    html::run_data(&rec(doc)).unwrap_or_else(|e| panic!("run_data: {e}"))
}

fn intervals(doc: &Value) -> &Vec<Value> {
    doc["intervals"].as_array().expect("intervals")
}

/// Ticks are evenly spaced by 1, 2 or 5 × 10^k, start at or below the data
/// and end at or above it.
fn check_ticks(s: &Scale, lo: f64, hi: f64) {
    assert!(s.ticks.len() >= 2, "{s:?}");
    let step = s.ticks[1] - s.ticks[0];
    let m = step / 10f64.powf(step.log10().floor());
    assert!(
        [1.0, 2.0, 5.0].iter().any(|n| (m - n).abs() < 1e-9),
        "step {step} in {s:?}"
    );
    for w in s.ticks.windows(2) {
        assert!(((w[1] - w[0]) - step).abs() < step * 1e-9, "{s:?}");
    }
    assert!(s.min <= lo && s.max >= hi, "{lo}..{hi} not within {s:?}");
    assert!(s.max - hi < step + 1e-9, "{s:?} too tall for {hi}");
}

#[test]
fn plumb_two_streams_series_sum_and_limit_shares() {
    let doc = load("plumb-p2.json");
    let d = data(&doc);
    let iv = intervals(&doc);
    assert_eq!(d.producer, doc["start"]["version"].as_str().unwrap_or(""));
    assert_eq!(d.streams.len(), 2);
    for (k, s) in d.streams.iter().enumerate() {
        // One step per interval, and the last repeated at the end.
        assert_eq!(s.rate.len(), iv.len() + 1);
        for (i, v) in iv.iter().enumerate() {
            let st = &v["streams"][k];
            assert_eq!(
                s.rate[i],
                (
                    st["start"].as_f64().unwrap_or(-1.0),
                    st["bits_per_second"].as_f64().unwrap_or(-1.0)
                )
            );
            assert_eq!(s.cwnd[i].1, st["snd_cwnd"].as_f64().unwrap_or(-1.0));
            assert_eq!(s.rtt_us[i].1, st["rtt"].as_f64().unwrap_or(-1.0));
            let share = st["plumb"]["rwnd_limited_us"].as_f64().unwrap_or(-1.0)
                / 1e6
                / st["seconds"].as_f64().unwrap_or(1.0)
                * 100.0;
            assert!((s.rwnd_limited_pct[i].1 - share).abs() < 1e-9);
        }
    }
    // The sum is iperf3's, and it is the streams' total.
    for (i, (_, sum)) in d.sum.iter().enumerate().take(iv.len()) {
        let parts: f64 = d.streams.iter().map(|s| s.rate[i].1).sum();
        assert!(
            (sum - parts).abs() / sum < 1e-3,
            "interval {i}: {sum} vs {parts}"
        );
    }
    let c = html::throughput_chart(&d).expect("throughput");
    assert_eq!(c.series.len(), 3, "two streams and their sum");
    assert_eq!(c.series[2].style, Style::Sum);
    let ys = c.y_scale();
    let top = d.sum.iter().map(|p| p.1).fold(0.0, f64::max);
    check_ticks(&ys, 0.0, top);
    assert_eq!(ys.unit, if top >= 1e9 { "Gbit/s" } else { "Mbit/s" });
    let xs = c.x_scale();
    assert!((xs.max - d.end_s).abs() < 1e-9 && xs.min == 0.0, "{xs:?}");
    let l = html::limited_chart(&d).expect("plumb records limit shares");
    assert_eq!(l.series.len(), 4);
    assert_eq!(l.y_scale().ticks, vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
    let r = html::rtt_chart(&d).expect("rtt");
    let max_rtt = d
        .streams
        .iter()
        .flat_map(|s| s.rtt_us.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    check_ticks(&r.y_scale(), 0.0, max_rtt);
    assert_eq!(r.y_scale().unit, if max_rtt >= 1e3 { "ms" } else { "µs" });
}

#[test]
fn lab_run_prediction_windows_and_receive_window_share() {
    let doc = load("plumb-lab-rwin.json");
    let d = data(&doc);
    let predicted = doc["diagnosis"]["predicted_bps"]
        .as_f64()
        .expect("diagnosis");
    assert_eq!(d.predicted.as_ref().map(|p| p.0), Some(predicted));
    let c = html::throughput_chart(&d).expect("throughput");
    // One stream (no sum drawn for one) and the prediction as a flat line.
    assert_eq!(c.series.len(), 2);
    let pred = &c.series[1];
    assert_eq!(pred.style, Style::Reference);
    assert!(pred.points.iter().all(|p| p.1 == predicted));
    assert!(pred.name.contains("receive window"), "{}", pred.name);
    let ys = c.y_scale();
    assert_eq!(ys.unit, "Mbit/s", "a 9 Mbit/s run in Mbit/s");
    check_ticks(
        &ys,
        0.0,
        d.streams[0]
            .rate
            .iter()
            .map(|p| p.1)
            .fold(predicted, f64::max),
    );
    // The receiver's window as the sender saw it, and the congestion window.
    let w = html::window_chart(&d).expect("windows");
    assert_eq!(w.series.len(), 2);
    assert!(matches!(w.series[1].style, Style::Dashed(0)));
    let rwnd = &d.streams[0].rwnd;
    assert!(rwnd.iter().all(|p| p.1 <= 17_520.0), "{rwnd:?}");
    assert_eq!(w.y_scale().unit, "kB");
    // rwnd-limited time shows up in some interval (the fixture's counters say so).
    let any = intervals(&doc).iter().any(|v| {
        v["streams"][0]["plumb"]["rwnd_limited_us"]
            .as_u64()
            .unwrap_or(0)
            > 0
    });
    assert_eq!(any, d.streams[0].rwnd_limited_pct.iter().any(|p| p.1 > 0.0));
    assert!(any);
}

#[test]
fn iperf3_3_12_forward_and_reverse() {
    let doc = load("iperf3-3.12-p2.json");
    let d = data(&doc);
    assert!(d.producer.starts_with("iperf 3.12"), "{}", d.producer);
    assert_eq!(d.streams.len(), 2);
    assert!(d.streams.iter().all(|s| s.sender && !s.cwnd.is_empty()));
    // iperf3 records no limit counters: no chart, not an empty one.
    assert!(d.streams.iter().all(|s| s.rwnd_limited_pct.is_empty()));
    assert!(html::limited_chart(&d).is_none());
    assert!(html::window_chart(&d).is_some());
    let c = html::throughput_chart(&d).expect("throughput");
    assert_eq!(c.series.len(), 3);
    let top = d.sum.iter().map(|p| p.1).fold(0.0, f64::max);
    check_ticks(&c.y_scale(), 0.0, top);

    // -R: this end only received, so TCP's state is the server's to record.
    let doc = load("iperf3-3.12-reverse.json");
    let d = data(&doc);
    assert_eq!(d.streams.len(), 1);
    assert!(!d.streams[0].sender);
    assert!(html::window_chart(&d).is_none() && html::rtt_chart(&d).is_none());
    assert_eq!(html::throughput_chart(&d).map(|c| c.series.len()), Some(1));
    let page = html::render(&[Input {
        name: "r".into(),
        doc: rec(&doc),
    }])
    .expect("render");
    assert!(page.contains("this end only received"));
    // UDP: no TCP state to miss.
    let mut doc = load("iperf3-3.12-p2.json");
    doc["start"]["test_start"]["protocol"] = json!("UDP");
    let page = html::render(&[Input {
        name: "u".into(),
        doc: rec(&doc),
    }])
    .expect("render");
    assert!(page.contains("this was a UDP test") && !page.contains("limit counters ("));
}

/// One stream's rate steps are the document's intervals, with the last one
/// repeated at the end.
fn check_rates(doc: &Value, d: &RunData) {
    let iv = intervals(doc);
    for (k, s) in d.streams.iter().enumerate() {
        assert_eq!(s.rate.len(), iv.len() + 1, "stream {k}");
        for (i, v) in iv.iter().enumerate() {
            let st = &v["streams"][k];
            assert_eq!(
                s.rate[i],
                (
                    st["start"].as_f64().unwrap_or(-1.0),
                    st["bits_per_second"].as_f64().unwrap_or(-1.0)
                )
            );
        }
    }
    // The chart ends where the last stream's last interval ends.
    let end = iv.last().and_then(|v| v["streams"].as_array()).map(|ss| {
        ss.iter()
            .map(|st| st["end"].as_f64().unwrap_or(-1.0))
            .fold(0.0, f64::max)
    });
    assert_eq!(Some(d.end_s), end);
}

fn page(doc: Value) -> String {
    html::render(&[Input {
        name: "x".into(),
        doc: rec(&doc),
    }])
    .expect("render")
}

#[test]
fn iperf3_3_22_forward_reverse_udp_and_json_stream() {
    // -P 2: 3.22 adds "reorder" per stream and "fq_rate" at the start; the
    // series are read as from 3.12.
    let doc = load("iperf3-3.22-p2.json");
    let d = data(&doc);
    assert!(d.producer.starts_with("iperf 3.22"), "{}", d.producer);
    assert_eq!(d.streams.len(), 2);
    check_rates(&doc, &d);
    for (k, s) in d.streams.iter().enumerate() {
        assert!(s.sender);
        for (i, v) in intervals(&doc).iter().enumerate() {
            let st = &v["streams"][k];
            assert_eq!(s.cwnd[i].1, st["snd_cwnd"].as_f64().unwrap_or(-1.0));
            assert_eq!(s.rwnd[i].1, st["snd_wnd"].as_f64().unwrap_or(-1.0));
            assert_eq!(s.rtt_us[i].1, st["rtt"].as_f64().unwrap_or(-1.0));
            assert_eq!(
                s.retransmits[i].1,
                st["retransmits"].as_f64().unwrap_or(-1.0)
            );
        }
    }
    assert!(d.streams.iter().all(|s| s.rwnd_limited_pct.is_empty()));
    assert!(html::limited_chart(&d).is_none());
    let c = html::throughput_chart(&d).expect("throughput");
    assert_eq!(c.series.len(), 3, "two streams and their sum");
    assert_eq!(c.series[2].style, Style::Sum);
    let top = d.sum.iter().map(|p| p.1).fold(0.0, f64::max);
    let ys = c.y_scale();
    check_ticks(&ys, 0.0, top);
    assert_eq!(ys.unit, if top >= 1e9 { "Gbit/s" } else { "Mbit/s" });
    let w = html::window_chart(&d).expect("windows");
    let top_w = d
        .streams
        .iter()
        .flat_map(|s| s.cwnd.iter().chain(&s.rwnd).map(|p| p.1))
        .fold(0.0, f64::max);
    check_ticks(&w.y_scale(), 0.0, top_w);
    let r = html::rtt_chart(&d).expect("rtt");
    let max_rtt = d
        .streams
        .iter()
        .flat_map(|s| s.rtt_us.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    check_ticks(&r.y_scale(), 0.0, max_rtt);
    let p = page(doc);
    assert!(
        p.contains("iperf 3.22 does not record TCP_INFO") && !p.contains("the congestion window"),
        "the page names what 3.22 leaves out"
    );

    // -R: this end only received.
    let doc = load("iperf3-3.22-reverse.json");
    let d = data(&doc);
    assert_eq!(d.streams.len(), 1);
    assert!(!d.streams[0].sender);
    check_rates(&doc, &d);
    assert!(html::window_chart(&d).is_none() && html::rtt_chart(&d).is_none());
    let c = html::throughput_chart(&d).expect("throughput");
    assert_eq!(c.series.len(), 1);
    check_ticks(
        &c.y_scale(),
        0.0,
        d.streams[0].rate.iter().map(|p| p.1).fold(0.0, f64::max),
    );
    assert!(page(doc).contains("this end only received"));

    // UDP at -b 50M: the rate is the one asked for, and no TCP state at all.
    let doc = load("iperf3-3.22-udp.json");
    assert_eq!(doc["start"]["test_start"]["protocol"], "UDP");
    let d = data(&doc);
    assert_eq!(d.streams.len(), 1);
    check_rates(&doc, &d);
    let s = &d.streams[0];
    assert!(s.cwnd.is_empty() && s.rtt_us.is_empty() && s.retransmits.is_empty());
    assert!(html::window_chart(&d).is_none() && html::rtt_chart(&d).is_none());
    let ys = html::throughput_chart(&d).expect("throughput").y_scale();
    assert_eq!(ys.unit, "Mbit/s", "a 50 Mbit/s run in Mbit/s");
    check_ticks(&ys, 0.0, s.rate.iter().map(|p| p.1).fold(0.0, f64::max));
    let p = page(doc);
    assert!(p.contains("this was a UDP test") && !p.contains("limit counters ("));

    // --json-stream: the events make the same document shape.
    let doc = load("iperf3-3.22-stream.jsonl");
    let d = data(&doc);
    assert!(d.producer.starts_with("iperf 3.22"), "{}", d.producer);
    assert_eq!(d.streams.len(), 1);
    assert!(!intervals(&doc).is_empty());
    check_rates(&doc, &d);
    assert!(!d.streams[0].cwnd.is_empty() && !d.streams[0].rtt_us.is_empty());
    assert!(doc["end"]["sum_sent"].is_object(), "the end event is kept");
}

#[test]
fn json_stream_log_gives_the_same_series_as_its_document() {
    let doc = load("plumb-stream.jsonl");
    let d = data(&doc);
    assert_eq!(d.streams.len(), 1);
    assert_eq!(d.streams[0].rate.len(), intervals(&doc).len() + 1);
    assert!(d.streams[0].rate.iter().all(|p| p.1 > 0.0));
}

#[test]
fn latency_panel_appears_when_the_keys_exist() {
    let mut doc = load("plumb-p2.json");
    let input = |doc: &Value| Input {
        name: "x".into(),
        doc: rec(doc),
    };
    let without = html::render(&[input(&doc)]).expect("render");
    assert!(!without.contains("data-chart=\"latency\""));
    doc["end"]["plumb"]["latency"] = json!({
        "p50_us": 110.0, "p99_us": 480.0, "p99_9_us": 1900.0, "p90_us": 230.0,
        "buckets": [{"le_us": 100, "count": 40}, {"le_us": 200, "count": 45},
                    {"le_us": 500, "count": 14}, {"le_us": 2000, "count": 1}]
    });
    let l = html::latency(&rec(&doc)).expect("latency");
    assert_eq!(l.sets.len(), 1);
    let d = &l.sets[0];
    let ps: Vec<f64> = d.percentiles.iter().map(|p| p.0).collect();
    assert_eq!(ps, vec![50.0, 90.0, 99.0, 99.9]);
    assert_eq!(d.cdf.first(), Some(&(100.0, 0.4)));
    assert_eq!(d.cdf.last(), Some(&(2000.0, 1.0)));
    assert_eq!(d.count, Some(100.0));
    let c = html::latency_chart(&l).expect("cdf");
    // 99 % are within 500 µs: the axis ends there, and the title names the 2 ms tail.
    assert_eq!(c.x_range, Some((0.0, 500.0)));
    assert_eq!(c.x_scale().unit, "µs");
    assert!(c.title.contains("2 ms"), "{}", c.title);
    assert_eq!(c.y_scale().ticks.last(), Some(&1.0));
    let with = html::render(&[input(&doc)]).expect("render");
    assert!(with.contains("data-chart=\"latency\"") && with.contains("p99.9"));
    // Buckets in any order.
    doc["end"]["plumb"]["latency"] =
        json!({"buckets": [{"le_us": 50, "count": 1}, {"le_us": 10, "count": 3}]});
    let l = html::latency(&rec(&doc)).expect("latency");
    assert_eq!(l.sets[0].cdf, vec![(10.0, 0.75), (50.0, 1.0)]);
}

/// A distribution's percentiles, extremes and buckets are the document's,
/// in µs whatever unit the keys name (`factor` µs per unit).
fn check_distribution(d: &html::Distribution, o: &Value, unit: &str, factor: f64) {
    let key = |k: &str| o[format!("{k}_{unit}")].as_f64();
    for (p, us) in &d.percentiles {
        let k = format!("p{}", p.to_string().replace('.', "_"));
        let want = key(&k).unwrap_or_else(|| panic!("{}: no {k}_{unit}", d.name)) * factor;
        assert!((us - want).abs() < 1e-9, "{}: {k} {us} vs {want}", d.name);
    }
    let names: Vec<String> = d
        .percentiles
        .iter()
        .map(|(p, _)| format!("p{}", p.to_string().replace('.', "_")))
        .collect();
    assert_eq!(names, ["p50", "p90", "p99", "p99_9"], "{}", d.name);
    assert_eq!(d.min_us, key("min").map(|v| v * factor));
    assert_eq!(d.max_us, key("max").map(|v| v * factor));
    assert_eq!(d.mean_us, key("mean").map(|v| v * factor));
    let buckets = o["buckets"].as_array().expect("buckets");
    let total: f64 = buckets.iter().filter_map(|b| b["count"].as_f64()).sum();
    assert_eq!(d.count, Some(total), "{}", d.name);
    assert_eq!(d.cdf.len(), buckets.len(), "{}", d.name);
    let mut acc = 0.0;
    for (pt, b) in d.cdf.iter().zip(buckets) {
        acc += b["count"].as_f64().unwrap_or(-1.0);
        let le = b[format!("le_{unit}")].as_f64().expect("le") * factor;
        assert!((pt.0 - le).abs() < 1e-9 && (pt.1 - acc / total).abs() < 1e-12);
    }
    assert_eq!(d.cdf.last().map(|p| p.1), Some(1.0));
    // Every percentile lies where the histogram's CDF says it does.
    for (p, us) in &d.percentiles {
        let below = d
            .cdf
            .iter()
            .take_while(|c| c.0 < *us)
            .last()
            .map_or(0.0, |c| c.1);
        assert!(
            below <= p / 100.0 + 1e-9,
            "{}: p{p} {us} µs, {below}",
            d.name
        );
    }
}

/// The CDF chart: one line per distribution, from the minimum (at 0) up the
/// buckets; an axis that ends once every line passed 99 %, with ticks.
fn check_cdf_chart(l: &html::Latency) -> plumb_report::chart::Chart {
    let c = html::latency_chart(l).expect("a CDF");
    assert_eq!(c.series.len(), l.sets.len());
    for (s, d) in c.series.iter().zip(&l.sets) {
        assert_eq!(s.name, d.name);
        assert_eq!(s.points.first(), Some(&(d.min_us.expect("min"), 0.0)));
        assert_eq!(&s.points[1..], d.cdf.as_slice());
        assert!(s
            .points
            .windows(2)
            .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
    }
    let xs = c.x_scale();
    let reach = c
        .series
        .iter()
        .map(|s| s.points.iter().find(|p| p.1 >= 0.99).map_or(0.0, |p| p.0))
        .fold(0.0, f64::max);
    let slowest = l.sets.iter().filter_map(|d| d.max_us).fold(0.0, f64::max);
    if c.x_range.is_some() {
        assert!((xs.max - reach).abs() < 1e-9, "{xs:?} vs {reach}");
        assert!(c.title.contains(&format::time_us(slowest)), "{}", c.title);
    } else {
        // Not clipped: then no round trip lay more than 5 % past where the
        // lines reach 99 %.
        assert!(
            reach == 0.0 || slowest <= 1.05 * reach,
            "{slowest} vs {reach}"
        );
    }
    check_ticks(&xs, 0.0, xs.max);
    assert_eq!(xs.unit, if xs.max >= 1e3 { "ms" } else { "µs" });
    assert_eq!(c.y_scale().ticks.first(), Some(&0.0));
    assert_eq!(c.y_scale().ticks.last(), Some(&1.0));
    c
}

#[test]
fn latency_under_load_idle_against_loaded_from_a_recorded_document() {
    // plumb -c 127.0.0.1 --latency -t 3 -b 100M -J, against a plumb server.
    let doc = load("plumb-latency.json");
    let raw = &doc["end"]["plumb"]["latency"];
    let l = html::latency(&rec(&doc)).expect("latency");
    let names: Vec<&str> = l.sets.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["idle", "loaded"]);
    for d in &l.sets {
        let o = &raw[&d.name];
        // Times are in ms in the document, µs here.
        check_distribution(d, o, "ms", 1e3);
        assert_eq!(
            d.count,
            o["probes"].as_f64(),
            "every probe is in the histogram"
        );
    }
    let c = check_cdf_chart(&l);
    assert_eq!(c.id, "latency");
    assert!(matches!(c.series[0].style, Style::Palette(0)));
    assert!(matches!(c.series[1].style, Style::Palette(1)));
    // The load's cost and responsiveness, as the document states them.
    let fig = |k: &str| {
        l.figures
            .iter()
            .find(|f| f.0 == k)
            .map(|f| f.1.to_string())
            .unwrap_or_else(|| panic!("no figure {k}: {:?}", l.figures))
    };
    let inc = raw["increase_p50_ms"].as_f64().expect("increase");
    assert_eq!(fig("load added, median"), format::time_us(inc * 1e3));
    let rpm = raw["loaded"]["rpm"].as_f64().expect("rpm");
    assert_eq!(fig("RPM loaded").replace(',', ""), format!("{rpm:.0}"));
    // What the probes cost beside the load they measured.
    let cost = &raw["probe_cost"];
    let wire = cost["wire_bits_per_second"].as_f64().expect("probe_cost");
    let load = fig("the probes' own load");
    assert!(load.starts_with(&format::rate(wire)), "{load}");
    let share = cost["share_of_load"].as_f64().expect("share") * 100.0;
    assert!(share < 1.0 && load.contains("% of the load"), "{load}");
    // --latency records no latency per interval: no chart of it.
    assert!(l.intervals.is_empty());
    assert!(html::latency_interval_chart(&l).is_none());
    let p = page(doc.clone());
    assert!(
        p.contains("<th>idle</th><th>loaded</th>"),
        "idle and loaded side by side"
    );
    assert!(p.contains("under load (--latency)"));
    assert_eq!(p.matches("data-chart=\"latency\"").count(), 1);
    assert!(!p.contains("data-chart=\"latency-intervals\""));
    // Without its histograms, the CDF is drawn through the percentiles.
    let mut bare = doc.clone();
    for side in ["idle", "loaded"] {
        bare["end"]["plumb"]["latency"][side]
            .as_object_mut()
            .expect("side")
            .remove("buckets");
    }
    let l = html::latency(&rec(&bare)).expect("latency");
    let c = html::latency_chart(&l).expect("a CDF through the percentiles");
    assert!(c.title.contains("through the percentiles"), "{}", c.title);
    for (s, d) in c.series.iter().zip(&l.sets) {
        assert!(d.cdf.is_empty());
        assert_eq!(d.count, raw[&d.name]["probes"].as_f64());
        // min at 0, each percentile at its fraction, max at 1.
        assert_eq!(s.points.len(), d.percentiles.len() + 2);
        assert_eq!(s.points.first(), Some(&(d.min_us.expect("min"), 0.0)));
        assert_eq!(s.points.last(), Some(&(d.max_us.expect("max"), 1.0)));
        assert!(s
            .points
            .iter()
            .any(|p| p.1 == 0.5 && Some(p.0) == d.percentiles.first().map(|x| x.1)));
    }
}

#[test]
fn request_response_round_trips_and_their_intervals_from_recorded_documents() {
    // plumb -c 127.0.0.1 --rr -t 2 -J, against a plumb server.
    let doc = load("plumb-rr.json");
    let raw = &doc["end"]["plumb"]["latency"];
    let l = html::latency(&rec(&doc)).expect("latency");
    assert_eq!(l.sets.len(), 1);
    let d = &l.sets[0];
    assert_eq!(d.name, "round trip");
    check_distribution(d, raw, "us", 1.0);
    assert_eq!(
        d.count,
        raw["transactions"].as_f64(),
        "every transaction is in the histogram"
    );
    // A rare slow round trip does not set the axis (check_cdf_chart holds
    // the clip both ways).
    check_cdf_chart(&l);
    // Per interval: p50 and p99, as steps over the test's intervals.
    let iv = intervals(&doc);
    let names: Vec<&str> = l.intervals.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(names, ["p50", "p99"]);
    for (name, pts) in &l.intervals {
        assert_eq!(pts.len(), iv.len() + 1, "{name}");
        for (pt, v) in pts.iter().zip(iv) {
            let key = format!("{name}_us");
            assert_eq!(pt.0, v["sum"]["start"].as_f64().unwrap_or(-1.0));
            assert_eq!(Some(pt.1), v["plumb"]["latency"][&key].as_f64());
        }
        assert_eq!(
            pts.last().map(|p| p.0),
            iv.last().and_then(|v| v["sum"]["end"].as_f64())
        );
    }
    let ic = html::latency_interval_chart(&l).expect("per-interval chart");
    assert!(ic.steps && ic.series.len() == 2);
    let top = l
        .intervals
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    check_ticks(&ic.y_scale(), 0.0, top);
    assert_eq!(ic.y_scale().unit, if top >= 1e3 { "ms" } else { "µs" });
    let fig = l
        .figures
        .iter()
        .find(|f| f.0 == "transactions/s")
        .expect("rate");
    let tps = raw["transactions_per_second"].as_f64().expect("tps");
    assert_eq!(fig.1.to_string().replace(',', ""), format!("{tps:.0}"));
    let p = page(doc.clone());
    assert!(p.contains("request/response (TCP RR, 1 B out, 1 B back)"));
    assert!(p.contains("data-chart=\"latency\"") && p.contains("data-chart=\"latency-intervals\""));

    // --crr: the round trip, and its connect and request/response parts.
    let doc = load("plumb-crr.json");
    let raw = &doc["end"]["plumb"]["latency"];
    let l = html::latency(&rec(&doc)).expect("latency");
    let names: Vec<&str> = l.sets.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["round trip", "connect", "request/response"]);
    check_distribution(&l.sets[0], raw, "us", 1.0);
    check_distribution(&l.sets[1], &raw["connect"], "us", 1.0);
    check_distribution(&l.sets[2], &raw["request_response"], "us", 1.0);
    for d in &l.sets {
        assert_eq!(d.count, raw["connections"].as_f64(), "{}", d.name);
    }
    check_cdf_chart(&l);
    let names: Vec<&str> = l.intervals.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(
        names,
        ["p50", "p99", "connect, p50", "request/response, p50"]
    );
    assert!(l.figures.iter().any(|f| f.0 == "connections/s"));
    let p = page(doc);
    assert!(p.contains("<th>round trip</th><th>connect</th><th>request/response</th>"));
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one walk over both recorded live documents, checking every part of the page they make"
)]
fn live_connections_each_with_identity_and_verdict_busiest_first() {
    // plumb why --peer 198.18.0.2 --for 3 -J --link 1g, in the near namespace
    // of plumb lab --rate 1gbit --rtt 15ms, beside a plumb client clamped to
    // --rwin 17520 and one paced at -b 50M (each with its control connection);
    // and plumb why --port 5303 --for 2 -J on loopback beside plumb -c -P 2
    // -b 150M, which sees both ends of each connection (senders, receivers).
    for name in ["plumb-live-lab.json", "plumb-live-loopback.json"] {
        let doc = load(name);
        let conns = doc["connections"].as_array().expect("connections");
        let d = data(&doc);
        assert!(d.streams.is_empty(), "{name}: nothing over time");
        let filter = doc["live"]["filter"].as_str().expect("filter");
        assert!(d.producer.contains(filter), "{name}: {}", d.producer);
        let live = html::live_connections(&rec(&doc)).expect("live");
        assert_eq!(live.len(), conns.len());
        assert!(
            live.windows(2).all(|w| w[0].rate() >= w[1].rate()),
            "{name}: busiest first"
        );
        let p = page(doc.clone());
        // No chart: the document holds totals, not samples; the page says so.
        assert!(!p.contains("<svg class=\"chart\""), "{name}");
        assert!(p.contains("No charts: plumb why on running connections"));
        // One table row per connection, one verdict box per busy one.
        let table = p
            .split("<table class=\"compare live\">")
            .nth(1)
            .and_then(|t| t.split("</table>").next())
            .expect("the connections table");
        assert_eq!(table.matches("<tr>").count(), conns.len() + 1, "{name}");
        let busy: Vec<&html::LiveConn> = live
            .iter()
            .filter(|c| c.diagnosis.is_some() && !c.is_idle())
            .collect();
        assert!(!busy.is_empty());
        assert_eq!(
            p.matches("class=\"verdict conn\"").count(),
            busy.len(),
            "{name}"
        );
        assert!(
            !p.contains("class=\"verdict\">"),
            "{name}: no verdict outside the connections"
        );
        let esc = |s: &str| s.replace('\'', "&#39;").replace('>', "&gt;");
        let mut at = 0;
        for c in &busy {
            // Its identity, then its verdict, in the busiest-first order.
            let head = p[at..]
                .find(&format!("{}</b>", c.name().replace('>', "&gt;")))
                .map(|k| k + at)
                .unwrap_or_else(|| panic!("{name}: no block for {}", c.name()));
            let summary = c.diagnosis.as_ref().and_then(|d| d.summary.as_deref());
            let summary = esc(summary.expect("summary"));
            let s = p[head..].find(&summary).expect("its summary") + head;
            let who = format!(
                "{} (pid {})",
                c.command.as_deref().expect("command"),
                c.pid.expect("pid")
            );
            assert!(p[head..s].contains(&who), "{name}: {who}");
            let end = if c.this_host.as_deref() == Some("sender") {
                "this host sends"
            } else {
                "this host receives"
            };
            assert!(p[head..s].contains(end), "{name}");
            at = s;
        }
        // In the table: measured against predicted, and the fix with its rate.
        for c in &live {
            let dg = c.diagnosis.clone().unwrap_or_default();
            let measured = format::rate(c.rate());
            assert!(table.contains(&measured), "{name}: {measured}");
            if let Some(pr) = dg.predicted_bps {
                assert!(table.contains(&format::rate(pr)), "{name}");
            }
            if let Some(e) = dg.fixes.first().and_then(|f| f.expected_bps) {
                assert!(
                    table.contains(&format!("→ about {}", format::rate(e))),
                    "{name}"
                );
            }
        }
        // Whatever order the document lists them in.
        let mut shuffled = doc.clone();
        if let Some(a) = shuffled["connections"].as_array_mut() {
            a.reverse();
        }
        let rates = |d: &Value| -> Vec<f64> {
            html::live_connections(&rec(d))
                .expect("live")
                .iter()
                .map(html::LiveConn::rate)
                .collect()
        };
        assert_eq!(rates(&shuffled), rates(&doc), "{name}");
    }
    // The lab's: the clamped transfer is named with its predicted rate and fix.
    let doc = load("plumb-live-lab.json");
    let rwnd = html::live_connections(&rec(&doc))
        .expect("live")
        .into_iter()
        .find(|c| c.diagnosis.as_ref().and_then(|d| d.limit.as_deref()) == Some("receive_window"))
        .expect("the --rwin 17520 transfer");
    assert_eq!(rwnd.limit(), "receive window");
    assert!(rwnd.diagnosis.and_then(|d| d.predicted_bps).is_some());
    // Two transfers and their control connections, the paced one first.
    let order: Vec<f64> = html::live_connections(&rec(&doc))
        .expect("live")
        .iter()
        .map(html::LiveConn::rate)
        .collect();
    assert_eq!(order.len(), 4);
    assert!(
        order[0] > order[1] && order[1] > 0.0 && order[2] == 0.0,
        "{order:?}"
    );
    // One that closed before a second sample has no verdict: its note stands
    // in the table, last, and it gets no verdict box.
    let mut closed = doc.clone();
    let boxes = page(closed.clone())
        .matches("class=\"verdict conn\"")
        .count();
    let note = "closed before a second sample: nothing to measure";
    if let Some(c) = closed["connections"].get_mut(0) {
        c["diagnosis"] = Value::Null;
        c["closed"] = json!(true);
        c["note"] = json!(note);
        c.as_object_mut().map(|o| o.remove("rate_bps"));
    }
    let c0 = &closed["connections"][0];
    let side = |k: &str| c0[k].as_str().unwrap_or("?").to_string();
    let gone = format!("{} → {}", side("local"), side("remote"));
    let live = html::live_connections(&rec(&closed)).expect("live");
    assert_eq!(live.last().map(html::LiveConn::name), Some(gone.clone()));
    assert_eq!(live[live.len() - 1].limit(), note);
    let p = page(closed);
    assert!(p.contains(note));
    assert_eq!(p.matches("class=\"verdict conn\"").count(), boxes - 1);
    assert!(!p.contains(&format!("{}</b>", gone.replace('>', "&gt;"))));
    // A connections entry that is not an object is a bad document.
    let e = html::run_data(&rec(&json!({"live": {}, "connections": [1]}))).expect_err("bad");
    assert!(e.0.contains("connections"), "{e}");
    // Nothing matched: a page that says so.
    let p = page(
        json!({"live": {"filter": "--port 9", "seconds": 1.0}, "connections": [], "diagnosis": null}),
    );
    assert!(p.contains("No connection matched."));
}

#[test]
fn page_order_and_comparison() {
    let a = load("plumb-lab-rwin.json");
    let b = load("iperf3-3.12-p2.json");
    let inputs = [
        Input {
            name: "before".into(),
            doc: rec(&a),
        },
        Input {
            name: "after".into(),
            doc: rec(&b),
        },
    ];
    let page = html::render(&inputs).expect("render");
    let at = |s: &str| page.find(s).unwrap_or_else(|| panic!("{s} missing"));
    // Comparison first, then each run: verdict, charts, configuration.
    assert!(at("data-chart=\"compare\"") < at("<article"));
    assert!(at("class=\"verdict\"") < at("data-chart=\"throughput\""));
    assert!(at("data-chart=\"throughput\"") < at("Test configuration"));
    let docs: Vec<html::Document> = inputs
        .iter()
        .map(|i| html::Document::of(i).expect("a report"))
        .collect();
    let runs: Vec<&RunData> = docs.iter().map(|d| &d.run).collect();
    let c = html::compare_chart(&docs.iter().collect::<Vec<_>>());
    let end = runs.iter().map(|r| r.end_s).fold(0.0, f64::max);
    assert_eq!(c.x_range, Some((0.0, end)));
    // Each run's sum, plus the prediction of the run that has one.
    assert_eq!(c.series.len(), 3);
    assert_eq!(c.series[0].name, "before");
    assert!(c.series.iter().any(|s| s.name == "after"));
    // Everything is inline: no reference to anything outside the page.
    for needle in ["src=", "href=", "url(", "@import", "<script"] {
        assert!(!page.contains(needle), "{needle}");
    }
    assert!(page.contains("default-src 'none'"));
}

/// A `plumb top` log or a live page beside tests is shown, not compared:
/// it has no test's throughput or verdict to set beside theirs.
#[test]
fn only_tests_are_compared() {
    let top =
        plumb_report::top::document_from_top(&fixture_text("plumb-top.ndjson")).expect("a top log");
    let input = |name: &str, doc: plumb_report::input::Document| Input {
        name: name.into(),
        doc,
    };
    let page = html::render(&[
        input("top.ndjson", top.clone()),
        input("p2.json", rec(&load("plumb-p2.json"))),
    ])
    .expect("render");
    assert!(!page.contains("<h2>Compared</h2>"));
    assert!(page.contains("<h1>plumb report: 2 documents</h1>"));
    let page = html::render(&[
        input("top.ndjson", top),
        input("p2.json", rec(&load("plumb-p2.json"))),
        input("live.json", rec(&load("plumb-live-loopback.json"))),
        input("rwin.json", rec(&load("plumb-lab-rwin.json"))),
    ])
    .expect("render");
    let compared = &page[page.find("<h2>Compared</h2>").expect("compared")..];
    let compared = &compared[..compared.find("</section>").expect("its end")];
    assert!(compared.contains("<th>p2.json</th>") && compared.contains("<th>rwin.json</th>"));
    assert!(!compared.contains("top.ndjson") && !compared.contains("live.json"));
    assert!(page.contains("<h1>plumb report: 4 documents</h1>"));
}

#[test]
fn documents_that_are_not_reports() {
    for (text, why) in [
        ("[1]", "not a JSON object"),
        (r#"{"intervals": []}"#, "no \"start\""),
        (
            r#"{"start": {}, "error": "unable to connect"}"#,
            "unable to connect",
        ),
        (
            r#"{"start": {}, "intervals": [{"streams": [{"socket": 1}]}]}"#,
            "missing field `start`",
        ),
        (
            r#"{"start": {}, "intervals": [{}]}"#,
            "missing field `streams`",
        ),
    ] {
        let e = plumb_report::input::read_text(text, "x.json").expect_err("not a report");
        assert!(
            e.contains(why) && e.starts_with("x.json"),
            "{e} lacks {why}"
        );
    }
    // A diagnosis alone (plumb why -J from the model) is a verdict-only page.
    let doc = json!({"diagnosis": {"summary": "Limited by the receive window: x", "predicted_bps": 9.3e6}});
    let page = html::render(&[Input {
        name: "model".into(),
        doc: rec(&doc),
    }])
    .expect("render");
    assert!(
        page.contains("Limited by the receive window: x") && !page.contains("<svg class=\"chart\"")
    );
    assert!(page.contains("a diagnosis alone"));
    // The model's rate is not a measurement: the page does not call it one.
    let doc = json!({"diagnosis": {"summary": "s", "measured_bps": 3.5e7, "predicted_bps": 3.5e7}});
    let page = html::render(&[Input {
        name: "model".into(),
        doc: rec(&doc),
    }])
    .expect("render");
    assert!(page.contains(">predicted<") && !page.contains(">measured<"));
    let mut test = load("plumb-lab-rwin.json");
    test["diagnosis"]["measured_bps"] = doc["diagnosis"]["measured_bps"].clone();
    assert!(html::render(&[Input {
        name: "test".into(),
        doc: rec(&test),
    }])
    .expect("render")
    .contains(">measured<"));
    let s = Scale::new(Quantity::Bytes, 0.0, 17_376.0, 5);
    assert_eq!((s.unit, s.label(s.ticks[1]).as_str()), ("kB", "5"));
}

/// The `<tr>` of the configuration table whose first cell is `key`, as text.
fn row<'a>(page: &'a str, key: &str) -> Option<&'a str> {
    let start = page.find(&format!("<tr><td>{key}</td><td>"))?;
    let rest = &page[start..];
    Some(&rest[..rest.find("</tr>")?])
}

#[test]
fn both_hosts_systems_are_named_or_said_to_be_missing() {
    // A plumb client whose plumb server sent its system (docs/protocol.md §6.2).
    let mut doc = load("plumb-p2.json");
    let far = "Linux far-end 6.1.0-28-amd64 #1 SMP Debian x86_64";
    doc["end"]["plumb"]["remote"]["system"] = json!(far);
    let own = doc["start"]["system_info"]
        .as_str()
        .expect("system_info")
        .to_string();
    let p = page(doc.clone());
    let hosts = html::Hosts::of(&rec(&doc));
    assert!(hosts.far_known);
    assert!(
        row(&p, "this host (client)").is_some_and(|r| r.contains(&own)),
        "{p}"
    );
    assert!(
        row(&p, "the far host (server)").is_some_and(|r| r.contains(far)),
        "{p}"
    );
    assert!(p.contains("<th>this host (client)</th><th>far host (server)</th>"));
    assert!(!p.contains("not recorded"));
    // A far system is escaped like any other text.
    doc["end"]["plumb"]["remote"]["system"] = json!("<b>x</b>");
    assert!(page(doc.clone()).contains("&lt;b&gt;x&lt;/b&gt;"));

    // The same client against a stock iperf3 server: nothing under remote.
    doc["end"]["plumb"]["remote"] = Value::Null;
    let p = page(doc.clone());
    let far_row = row(&p, "the far host (server)").expect("far row");
    assert!(
        far_row.contains("not recorded: the far end is not plumb"),
        "{far_row}"
    );
    assert!(
        p.contains("The far host (server)&#39;s sysctls were not recorded"),
        "{p}"
    );

    // An older plumb server: extras, but no system.
    let mut old = load("plumb-p2.json");
    old["end"]["plumb"]["remote"]
        .as_object_mut()
        .expect("remote")
        .remove("system");
    let p = page(old);
    assert!(row(&p, "the far host (server)")
        .is_some_and(|r| r.contains("not recorded: the far plumb did not send this")));

    // iperf3's own document: its writer's system, and a plain note for the rest.
    for name in ["iperf3-3.12-p2.json", "iperf3-3.22-reverse.json"] {
        let doc = load(name);
        let own = doc["start"]["system_info"].as_str().expect("system_info");
        let p = page(doc.clone());
        assert!(
            row(&p, "this host (client)").is_some_and(|r| r.contains(own)),
            "{name}"
        );
        let far_row = row(&p, "the far host (server)").expect("far row");
        assert!(
            far_row.contains("not recorded: iperf3 does not exchange"),
            "{name}: {far_row}"
        );
        assert!(
            p.contains("Neither host&#39;s sysctls were recorded"),
            "{name}"
        );
        assert!(!html::Hosts::of(&rec(&doc)).far_known);
    }
}

#[test]
fn a_lab_run_names_both_ends_as_this_machine() {
    let mut doc = load("plumb-lab-rwin.json");
    let own = doc["start"]["system_info"]
        .as_str()
        .expect("system_info")
        .to_string();
    doc["end"]["plumb"]["remote"]["system"] = json!(own);
    let p = page(doc);
    let near = row(&p, "client (this machine, near namespace of the lab)").expect("near row");
    let far = row(&p, "server (this machine, far namespace of the lab)").expect("far row");
    assert!(near.contains(&own) && far.contains(&own));
    assert!(p.contains("<th>client (near)</th><th>server (far)</th>"));
    assert!(!p.contains("this host"), "the lab has no far host");
}

fn fixture_text(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The rows of a `plumb top --json` log, as written.
fn top_rows(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a row"))
        .collect()
}

fn finite(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    points
        .iter()
        .copied()
        .filter(|p| p.0.is_finite() && p.1.is_finite())
        .collect()
}

#[test]
fn top_log_draws_each_busy_connection_over_time() {
    use plumb_report::top;
    let text = fixture_text("plumb-top.ndjson");
    assert!(top::is_top_log(&text));
    let rows = top_rows(&text);
    let doc = top::document_from_top(&text).expect("a top log");
    let t = top::top_data(&doc).expect("top data");
    let key = |r: &Value| format!("{} → {}", r["local"], r["remote"]).replace('"', "");
    let mut all: Vec<String> = rows.iter().map(key).collect();
    all.sort();
    all.dedup();
    let busy: Vec<String> = all
        .iter()
        .filter(|k| {
            rows.iter()
                .any(|r| key(r) == **k && r["direction"] != "idle")
        })
        .cloned()
        .collect();
    let intervals: Vec<u64> = rows.iter().filter_map(|r| r["interval"].as_u64()).collect();
    let (first, last) = (intervals.iter().min(), intervals.iter().max());
    assert_eq!((Some(&t.first), Some(&t.last)), (first, last));
    let n = t.last - t.first + 1;
    assert!(n >= 3, "the fixture has several intervals");
    assert_eq!(t.rows as usize, rows.len());
    assert_eq!(t.seen as usize, all.len());
    // Both ends of the loopback transfer are busy; the control connection idles.
    assert_eq!(busy.len(), 2, "{busy:?}");
    assert_eq!(t.conns.len(), busy.len());
    assert_eq!(t.left_idle as usize, all.len() - busy.len());
    assert_eq!(t.left_busy, 0);
    // Busiest first, by the rates summed over the intervals.
    let sum = |c: &top::TopConn| c.samples.iter().map(|s| s.rate_bps).sum::<f64>();
    assert!(sum(&t.conns[0]) >= sum(&t.conns[1]));
    let senders = t.conns.iter().filter(|c| c.sends()).count();
    assert_eq!(senders, 1);
    assert_eq!(t.conns.iter().filter(|c| c.receives()).count(), 1);

    // Throughput: one series per connection, one step per interval and the
    // last again at its end, each the row's rate; receivers dashed.
    let c = top::throughput_chart(&t).expect("throughput");
    assert_eq!(c.series.len(), busy.len());
    for s in &c.series {
        let conn = t
            .conns
            .iter()
            .find(|c| s.name.contains(&format!("{} → {}", c.local, c.remote)))
            .expect("named by its connection");
        assert_eq!(finite(&s.points).len() as u64, n + 1, "{}", s.name);
        for (k, p) in s.points.iter().take(n as usize).enumerate() {
            let row = rows
                .iter()
                .find(|r| {
                    key(r) == format!("{} → {}", conn.local, conn.remote)
                        && r["interval"] == t.first + k as u64
                })
                .expect("a row per interval");
            assert_eq!(
                *p,
                (
                    (t.first + k as u64 - 1) as f64,
                    row["rate_bps"].as_f64().unwrap_or(-1.0)
                )
            );
        }
        let dashed = matches!(s.style, Style::Dashed(_));
        assert_eq!(dashed, !conn.sends(), "{}", s.name);
    }
    let ys = c.y_scale();
    assert_eq!(ys.unit, "Mbit/s");
    let xs = c.x_scale();
    assert_eq!(
        (xs.min, xs.max, xs.unit),
        ((t.first - 1) as f64, t.last as f64, "intervals")
    );

    // RTT: the sender's, in µs on loopback; windows: its cwnd, and the
    // receiver's window seen from both ends.
    let r = top::rtt_chart(&t).expect("rtt");
    assert_eq!(r.series.len(), senders);
    assert_eq!(finite(&r.series[0].points).len() as u64, n + 1);
    assert_eq!((r.y.0, r.y_scale().unit), (Quantity::Millis, "µs"));
    let w = top::window_chart(&t).expect("windows");
    assert_eq!(w.series.len(), senders + busy.len());
    assert!(w
        .series
        .iter()
        .all(|s| finite(&s.points).len() as u64 == n + 1));
    assert!(
        ["kB", "MB"].contains(&w.y_scale().unit),
        "{:?}",
        w.y_scale()
    );

    // The limit per interval: each reading of a drawn connection under a
    // mark named as the row named it, a mark per run of one limit.
    let page = html::render(&[Input {
        name: "plumb-top.ndjson".into(),
        doc,
    }])
    .expect("render");
    let drawn: Vec<&Value> = rows.iter().filter(|r| busy.contains(&key(r))).collect();
    assert_eq!(marked(&page, ""), drawn.len());
    let runs: usize = t.conns.iter().map(|c| c.limit_runs().len()).sum();
    assert_eq!(page.matches(" data-limit=").count(), runs);
    assert!(runs >= busy.len() && runs <= drawn.len());
    for (limit, mark) in [
        ("application", "application"),
        ("receive_window", "receive_window"),
    ] {
        let want = drawn
            .iter()
            .filter(|r| r["direction"] != "idle" && r["limit"] == limit)
            .count();
        assert_eq!(marked(&page, mark), want, "{limit}");
    }
    let unnamed = drawn
        .iter()
        .filter(|r| r["direction"] != "idle" && r["limit"].is_null())
        .count();
    assert_eq!(marked(&page, "none"), unnamed);
    assert!(page.contains("data-limit=\"application\"") && page.contains("class=\"mark s6\""));
    assert!(page.contains("busy, no limit named"));
    assert!(page.contains(&format!("1–{} application", t.last)));
    // 3 charts of series and the strip; a note for what was left out.
    assert_eq!(page.matches("<svg class=\"chart\"").count(), 4);
    assert!(page.contains("Left out: 2 connections idle in every reading"));
    assert!(page.contains("time (intervals)") && page.contains("rate (Mbit/s)"));
    assert!(!page.contains("No test in this document"));
}

/// The intervals under the limit strip's marks for `limit` (every mark's
/// when `limit` is empty), from their `data-intervals`.
fn marked(page: &str, limit: &str) -> usize {
    page.split(" data-limit=\"")
        .skip(1)
        .filter(|m| limit.is_empty() || m.starts_with(&format!("{limit}\"")))
        .map(|m| {
            m.split("data-intervals=\"")
                .nth(1)
                .and_then(|n| n.split('"').next())
                .and_then(|n| n.parse::<usize>().ok())
                .expect("a mark says how many intervals it covers")
        })
        .sum()
}

/// A log of `conns` busy connections over 3 intervals, the k-th at (k+1) Mbit/s,
/// the first missing its second interval, and two idle ones.
fn synthetic_top_log(conns: usize) -> String {
    let mut s = String::new();
    for i in 1..=3u64 {
        for k in 0..conns {
            if k == 0 && i == 2 {
                continue;
            }
            let limit = if i == 3 {
                "\"receive_window\""
            } else {
                "\"application\""
            };
            s += &format!(
                "{{\"interval\":{i},\"local\":\"10.0.0.1:{}\",\"remote\":\"10.0.0.2:873\",\"pid\":7,\"command\":\"rsync\",\
                 \"direction\":\"sender\",\"rate_bps\":{},\"rtt_ms\":15.2,\"cwnd_bytes\":1000000,\"window_bytes\":17520,\
                 \"retransmits\":1,\"limit\":{limit},\"congestion\":\"cubic\",\"full_scan\":true}}\n",
                40000 + k,
                (k + 1) as f64 * 1e6
            );
        }
        for k in 0..2 {
            s += &format!(
                "{{\"interval\":{i},\"local\":\"10.0.0.1:{}\",\"remote\":\"10.0.0.3:22\",\"pid\":null,\"command\":null,\
                 \"direction\":\"idle\",\"rate_bps\":0.0,\"rtt_ms\":1.0,\"cwnd_bytes\":14480,\"window_bytes\":65536,\
                 \"retransmits\":0,\"limit\":null,\"congestion\":\"cubic\",\"full_scan\":true}}\n",
                50000 + k
            );
        }
    }
    s
}

#[test]
fn top_log_draws_the_eight_busiest_and_says_what_it_left_out() {
    use plumb_report::top::{self, MAX_DRAWN};
    let text = synthetic_top_log(11);
    let doc = top::document_from_top(&text).expect("a top log");
    let t = top::top_data(&doc).expect("top data");
    assert_eq!(MAX_DRAWN, 8);
    assert_eq!(t.conns.len(), 8);
    assert_eq!((t.left_busy, t.left_idle, t.seen), (3, 2, 13));
    // The busiest (11 Mbit/s) first, down to 4 Mbit/s; 1-3 Mbit/s left out.
    let ports: Vec<&str> = t.conns.iter().map(|c| &c.local[9..]).collect();
    assert_eq!(
        ports,
        ["40010", "40009", "40008", "40007", "40006", "40005", "40004", "40003"]
    );
    // Summed over the intervals read: the slowest missed one of its three.
    let share = (2.0 + 2.0 * 3.0 + 3.0 * 3.0) / (2.0 + 3.0 * (2..=11).map(f64::from).sum::<f64>());
    assert!((t.left_busy_share - share).abs() < 1e-9);
    assert!((t.conns[0].mean_bps() - 11e6).abs() < 1.0);
    let c = top::throughput_chart(&t).expect("throughput");
    assert_eq!(c.series.len(), 8);
    assert!(c.series.iter().all(|s| s.points.len() == 4));
    let page = html::render(&[Input {
        name: "top".into(),
        doc,
    }])
    .expect("render");
    assert!(page.contains("3 more busy connections"), "{page}");
    assert!(page.contains("2 connections idle in every reading"));
    assert!(page.contains("1–2 application, 3 receive window"));
    assert!(page.contains("application (2 of 3), receive window (1 of 3)"));
    assert_eq!(marked(&page, ""), 8 * 3);
    assert_eq!(
        page.matches(" data-limit=").count(),
        8 * 2,
        "a mark per run"
    );
    assert_eq!(page.matches("class=\"mark s0\" data-limit").count(), 8);
    assert_eq!(marked(&page, "receive_window"), 8);
    assert_eq!(marked(&page, "application"), 8 * 2);

    // A connection missed in an interval (connection 40000, the only one
    // when there is one) gets a gap, not a line across it.
    let text = synthetic_top_log(1);
    let t = top::top_data(&top::document_from_top(&text).expect("log")).expect("data");
    let c = top::throughput_chart(&t).expect("throughput");
    let p = &c.series[0].points;
    assert_eq!(
        finite(p),
        vec![(0.0, 1e6), (1.0, 1e6), (2.0, 1e6), (3.0, 1e6)]
    );
    assert_eq!(p.iter().filter(|p| p.0.is_nan()).count(), 1);
    assert_eq!(t.conns[0].limit_runs().len(), 2);
    assert!(
        (t.conns[0].mean_bps() - 2e6 / 3.0).abs() < 1.0,
        "missing counts as idle"
    );
}

#[test]
fn top_logs_are_told_from_streams_and_bad_ones_are_refused() {
    use plumb_report::top;
    // Not top logs: a --json-stream log, a -J document, empty input.
    for name in [
        "plumb-stream.jsonl",
        "iperf3-3.22-stream.jsonl",
        "plumb-p2.json",
    ] {
        assert!(!top::is_top_log(&fixture_text(name)), "{name}");
    }
    assert!(!top::is_top_log("") && !top::is_top_log("\n\n"));
    let good = fixture_text("plumb-top.ndjson");
    let lines = good.lines().count();
    // Cut in its last line: refused, naming the line.
    let cut = &good[..good.len() - 40];
    assert!(top::is_top_log(cut));
    let e = top::document_from_top(cut).expect_err("truncated");
    assert!(e.starts_with(&format!("line {lines}: cut short")), "{e}");
    // A stray line, an event, a row without its rate, two logs joined.
    for (bad, why) in [
        (format!("{good}garbage\n"), "not JSON"),
        (
            format!("{good}{{\"event\":\"end\",\"data\":{{}}}}\n"),
            "--json-stream event",
        ),
        (
            good.replacen("\"rate_bps\":", "\"rate\":", 1),
            "no \"rate_bps\"",
        ),
        (
            good.replacen("\"limit\":\"application\"", "\"limit\":3", 1),
            "\"limit\" is not a string",
        ),
        (format!("{good}{good}"), "two logs joined"),
    ] {
        let e = top::document_from_top(&bad).expect_err(why);
        assert!(e.contains(why), "{e} lacks {why}");
    }
    // A top document is not mistaken for anything else, nor the reverse.
    let doc = top::document_from_top(&good).expect("good");
    assert!(html::run_data(&doc)
        .expect("run data")
        .producer
        .starts_with("plumb top --json"));
    assert!(top::top_data(&rec(&load("plumb-p2.json"))).is_none());
    assert!(html::live_connections(&doc).is_none());
}
