//! Every JSON fixture in the workspace — iperf3 3.12 and 3.22 documents,
//! plumb's with `end.plumb`, lab and live documents — read into a
//! `Document` and written back equals the original as a `serde_json::Value`
//! (key order aside): nothing is dropped, nothing added, and no integer
//! turns into a float or back. The objects plumb adds for `plumb why` are
//! the exception: `diagnosis`, `live` and each of `connections` read into
//! today's types (a key an older plumb left out takes its empty value, its
//! word for `confidence` becomes `confidence_level`), and that reading is
//! what is written back.

use std::path::{Path, PathBuf};

use plumb_record::diagnosis::Diagnosis;
use plumb_record::{ConnectionRow, Document, EndSum, LiveSampling, Real};
use serde::Deserialize;
use serde_json::{json, Value};

/// The `*.json` files under every `fixtures` directory of the workspace's crates.
fn fixtures() -> Vec<PathBuf> {
    fn walk(dir: &Path, in_fixtures: bool, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                // target/ holds build output, not fixtures.
                if p.file_name().is_some_and(|n| n != "target") {
                    let fx = in_fixtures || p.file_name().is_some_and(|n| n == "fixtures");
                    walk(&p, fx, out);
                }
            } else if in_fixtures && p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
    }
    let crates = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/")
        .to_path_buf();
    let mut out = Vec::new();
    walk(&crates, false, &mut out);
    out.sort();
    out
}

/// The first path at which `a` and `b` differ, as `end.streams[0].sender`.
fn first_difference(a: &Value, b: &Value, at: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                let here = format!("{at}.{k}");
                match y.get(k) {
                    None => return Some(format!("{here}: dropped (was {v})")),
                    Some(w) => {
                        if let Some(d) = first_difference(v, w, &here) {
                            return Some(d);
                        }
                    }
                }
            }
            y.iter()
                .find(|(k, _)| !x.contains_key(*k))
                .map(|(k, w)| format!("{at}.{k}: added ({w})"))
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                return Some(format!("{at}: {} entries became {}", x.len(), y.len()));
            }
            x.iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (v, w))| first_difference(v, w, &format!("{at}[{i}]")))
        }
        _ if a == b => None,
        _ => Some(format!("{at}: {a} became {b}")),
    }
}

/// `v` with `diagnosis`, `live` and `connections` as their typed readings
/// write them.
fn additions_as_typed(v: &Value) -> Value {
    fn typed<T: for<'a> Deserialize<'a> + serde::Serialize>(v: &mut Value, key: &str) {
        if let Some(d) = v.get_mut(key).filter(|d| !d.is_null()) {
            let read = T::deserialize(&*d).unwrap_or_else(|e| panic!("{key}: {e}"));
            *d = serde_json::to_value(read).expect("serializes");
        }
    }
    let mut v = v.clone();
    typed::<Diagnosis>(&mut v, "diagnosis");
    typed::<LiveSampling>(&mut v, "live");
    typed::<Vec<ConnectionRow>>(&mut v, "connections");
    v
}

fn round_trip(v: &Value) -> Result<Value, String> {
    let doc: Document = serde_json::from_value(v.clone()).map_err(|e| format!("reads: {e}"))?;
    Ok(doc.to_value())
}

#[test]
fn every_fixture_round_trips_exactly() {
    let files = fixtures();
    assert!(
        files.len() >= 20,
        "found only {} fixtures: {files:?}",
        files.len()
    );
    let mut failures = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable fixture");
        let original: Value = serde_json::from_str(&text).expect("fixture is JSON");
        match round_trip(&original) {
            Err(e) => failures.push(format!("{}: {e}", f.display())),
            Ok(back) => {
                let original = additions_as_typed(&original);
                if let Some(d) = first_difference(&original, &back, "") {
                    failures.push(format!("{}: {d}", f.display()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn typed_fields_read_what_iperf3_wrote() {
    let text = include_str!("../../report/tests/fixtures/iperf3-3.22-udp.json");
    let doc = Document::parse(text).expect("reads");
    let end = doc.end.expect("end");
    assert!(matches!(end.sum, Some(EndSum::Udp(_))), "{:?}", end.sum);
    let start = doc.start.expect("start");
    assert_eq!(start.test_start.expect("test_start").protocol, "UDP");
    let text = include_str!("../../report/tests/fixtures/plumb-p2.json");
    let doc = Document::parse(text).expect("reads");
    let end = doc.end.expect("end");
    assert!(matches!(end.sum_sent, Some(EndSum::Tcp(_))));
    let plumb = end.plumb.expect("end.plumb");
    let local = plumb.local.flatten().expect("local");
    assert!(local
        .sysctl
        .expect("sysctl")
        .contains_key("net.ipv4.tcp_rmem"));
    assert!(
        plumb.extra.is_empty(),
        "end.plumb keys left untyped: {:?}",
        plumb.extra.keys()
    );
}

/// A key this version does not know, at the top, in `start`, in an interval
/// stream, in an end sum, in `end.plumb.local` and in a latency bucket,
/// comes back where it was, with its value.
#[test]
fn unknown_keys_survive_at_every_level() {
    let text = include_str!("../../report/tests/fixtures/plumb-rr.json");
    let mut v: Value = serde_json::from_str(text).expect("fixture is JSON");
    let new = json!({"nested": [1, 2.5, null], "flag": true});
    let places: [&[&str]; 8] = [
        &[],
        &["start"],
        &["start", "test_start"],
        &["intervals", "0", "streams", "0"],
        &["intervals", "0", "sum"],
        &["end", "sum_sent"],
        &["end", "plumb", "local"],
        &["end", "plumb", "latency"],
    ];
    for p in places {
        let pointer: String = p.iter().map(|s| format!("/{s}")).collect();
        let obj = v
            .pointer_mut(&pointer)
            .and_then(Value::as_object_mut)
            .unwrap_or_else(|| panic!("{pointer} is an object"));
        obj.insert("from_a_later_version".into(), new.clone());
    }
    let back = round_trip(&v).expect("reads");
    assert_eq!(first_difference(&v, &back, ""), None);
    let doc: Document = serde_json::from_value(v).expect("reads");
    assert_eq!(doc.extra["from_a_later_version"], new);
    let sent = doc.end.and_then(|e| e.sum_sent).expect("sum_sent");
    let EndSum::Tcp(sent) = sent else {
        panic!("a TCP sum: {sent:?}")
    };
    assert_eq!(sent.extra["from_a_later_version"], new);
}

#[test]
fn integers_and_floats_keep_their_form() {
    let v = json!({"start": {}, "intervals": [], "end": {
        "sum_sent": {"start": 0, "end": 10.000042, "seconds": 10.0, "bytes": 5,
                     "bits_per_second": 4, "sender": true},
        "cpu_utilization_percent": {"host_total": 0, "host_user": 0.0, "host_system": null,
            "remote_total": 1, "remote_user": 2.5, "remote_system": -0.5}}});
    assert_eq!(round_trip(&v), Ok(v));
    assert_eq!(Real::from(0u64).to_string(), "0");
    assert_eq!(Real::from(0.0).to_string(), "0.0");
}

/// iperf3 3.12 writes `start.sock_bufsize` and its neighbours once per
/// stream; the text reads, the last of each kept.
#[test]
fn a_key_written_twice_reads() {
    let text = include_str!("../../report/tests/fixtures/iperf3-3.12-p2.json");
    let start = Document::parse(text).expect("reads").start.expect("start");
    assert_eq!(start.sock_bufsize, Some(0));
}

#[test]
fn a_failed_test_and_a_live_document_round_trip() {
    for v in [
        json!({"start": {"connected": [], "version": "iperf 3.12", "system_info": "Linux"},
               "intervals": [], "end": {}, "error": "unable to connect to server"}),
        json!({"live": {"filter": "--port 22", "seconds": 2.0},
               "connections": [{"local": "127.0.0.1:22", "remote": "127.0.0.1:40000",
                 "local_port": 22, "remote_port": 40000, "pid": 1, "command": null,
                 "congestion": "cubic", "this_host": "idle", "class": null, "closed": true,
                 "diagnosis": null, "note": "closed before a second sample"}],
               "diagnosis": null}),
    ] {
        assert_eq!(round_trip(&v), Ok(v));
    }
    // A live document cut down still reads: each key left out is empty.
    let cut = json!({"connections": [{"pid": 1}], "live": {"seconds": 2}, "diagnosis": {}});
    let doc: Document = serde_json::from_value(cut).expect("reads");
    let conns = doc.connections.expect("connections");
    assert_eq!((conns[0].pid, conns[0].local.as_str()), (Some(1), ""));
    assert_eq!(doc.live.map(|l| l.seconds), Some(2.0));
    let d = doc.diagnosis.flatten().expect("a diagnosis");
    assert!(d.nothing_to_explain && d.summary.is_empty());
}

/// What plumb adds that is not what plumb writes reads as absent, and the
/// rest of the document still reads.
#[test]
fn a_diagnosis_or_connections_of_another_shape_read_as_absent() {
    let doc: Document = serde_json::from_value(json!({
        "diagnosis": "none", "connections": [1], "live": 3, "title": "t"}))
    .expect("reads");
    assert_eq!(
        (doc.diagnosis, doc.connections, doc.live),
        (None, None, None)
    );
    assert_eq!(doc.title.as_deref(), Some("t"));
}

/// Every key the fixtures hold under `start`, `intervals`, `end`, `lab`
/// and `model` has a typed field: nothing there is left to the `extra` maps, which are for
/// keys of versions to come.
#[test]
fn every_fixture_key_below_the_top_is_typed() {
    let mut untyped = Vec::new();
    for f in fixtures() {
        let text = std::fs::read_to_string(&f).expect("readable fixture");
        let doc = Document::parse(&text).expect("reads");
        // An `extra` map prints as `extra: {}` when empty.
        let debug = format!(
            "{:?} {:?} {:?} {:?} {:?}",
            doc.start, doc.intervals, doc.end, doc.lab, doc.model
        );
        for (i, _) in debug.match_indices("extra: {\"") {
            let key: String = debug[i + 9..].chars().take_while(|&c| c != ':').collect();
            untyped.push(format!("{}: {key}", f.display()));
        }
    }
    untyped.dedup();
    assert!(untyped.is_empty(), "{}", untyped.join("\n"));
}
