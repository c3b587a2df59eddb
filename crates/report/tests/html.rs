//! The HTML report's chart data — series, scales, ticks — from documents
//! recorded on loopback and in the lab: plumb `-J`, plumb `--json-stream`,
//! a plumb lab run with its diagnosis, iperf3 3.12 `-J` (forward `-P 2` and
//! `-R`) and iperf3 3.22 `-J` (`-P 2`, `-R`, UDP) and `--json-stream`, each
//! against a server of its own version. Expected values are read from the
//! documents themselves.

use plumb_report::chart::{Quantity, Scale, Style};
use plumb_report::html::{self, Input, RunData};
use serde_json::{json, Value};

fn load(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text)
        .ok()
        .or_else(|| plumb_report::json::document_from_events(&text))
        .unwrap_or_else(|| panic!("{path} is not a document"))
}

fn data(doc: &Value) -> RunData {
    html::run_data(doc).unwrap_or_else(|e| panic!("run_data: {e}"))
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
        doc,
    }])
    .expect("render");
    assert!(page.contains("this end only received"));
    // UDP: no TCP state to miss.
    let mut doc = load("iperf3-3.12-p2.json");
    doc["start"]["test_start"]["protocol"] = json!("UDP");
    let page = html::render(&[Input {
        name: "u".into(),
        doc,
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
        doc,
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
        doc: doc.clone(),
    };
    let without = html::render(&[input(&doc)]).expect("render");
    assert!(!without.contains("data-chart=\"latency\""));
    doc["end"]["plumb"]["latency"] = json!({
        "p50_us": 110.0, "p99_us": 480.0, "p99_9_us": 1900.0, "p90_us": 230.0,
        "histogram": [[100, 40], [200, 45], [500, 14], [2000, 1]]
    });
    let l = html::latency(&doc).expect("latency");
    let ps: Vec<f64> = l.percentiles.iter().map(|p| p.0).collect();
    assert_eq!(ps, vec![50.0, 90.0, 99.0, 99.9]);
    assert_eq!(l.cdf.first(), Some(&(100.0, 0.4)));
    assert_eq!(l.cdf.last(), Some(&(2000.0, 1.0)));
    let c = html::latency_chart(&l).expect("cdf");
    assert_eq!(c.x_scale().unit, "ms");
    assert_eq!(c.y_scale().ticks.last(), Some(&1.0));
    let with = html::render(&[input(&doc)]).expect("render");
    assert!(with.contains("data-chart=\"latency\"") && with.contains("p99.9"));
    // Object buckets too.
    doc["end"]["plumb"]["latency"] =
        json!({"buckets": [{"le_us": 50, "count": 1}, {"le_us": 10, "count": 3}]});
    let l = html::latency(&doc).expect("latency");
    assert_eq!(l.cdf, vec![(10.0, 0.75), (50.0, 1.0)]);
}

#[test]
fn page_order_and_comparison() {
    let a = load("plumb-lab-rwin.json");
    let b = load("iperf3-3.12-p2.json");
    let inputs = [
        Input {
            name: "before".into(),
            doc: a.clone(),
        },
        Input {
            name: "after".into(),
            doc: b,
        },
    ];
    let page = html::render(&inputs).expect("render");
    let at = |s: &str| page.find(s).unwrap_or_else(|| panic!("{s} missing"));
    // Comparison first, then each run: verdict, charts, configuration.
    assert!(at("data-chart=\"compare\"") < at("<article"));
    assert!(at("class=\"verdict\"") < at("data-chart=\"throughput\""));
    assert!(at("data-chart=\"throughput\"") < at("Test configuration"));
    let runs: Vec<RunData> = inputs.iter().map(|i| data(&i.doc)).collect();
    let c = html::compare_chart(&inputs, &runs);
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

#[test]
fn documents_that_are_not_reports() {
    for (doc, why) in [
        (json!([1]), "not a JSON object"),
        (json!({"intervals": []}), "no \"start\""),
        (
            json!({"start": {}, "error": "unable to connect"}),
            "unable to connect",
        ),
        (
            json!({"start": {}, "intervals": [{"streams": [{"socket": 1}]}]}),
            "start/end",
        ),
        (
            json!({"start": {}, "intervals": [{}]}),
            "without \"streams\"",
        ),
    ] {
        let e = html::run_data(&doc).expect_err("not a report");
        assert!(e.0.contains(why), "{e} lacks {why}");
    }
    // A diagnosis alone (plumb why -J from the model) is a verdict-only page.
    let doc = json!({"diagnosis": {"summary": "Limited by the receive window: x", "predicted_bps": 9.3e6}});
    let page = html::render(&[Input {
        name: "model".into(),
        doc,
    }])
    .expect("render");
    assert!(
        page.contains("Limited by the receive window: x") && !page.contains("<svg class=\"chart\"")
    );
    assert!(page.contains("a diagnosis alone"));
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
    let hosts = html::Hosts::of(&doc);
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
        assert!(!html::Hosts::of(&doc).far_known);
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
