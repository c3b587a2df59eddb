//! The pScheduler tool plugin (`contrib/pscheduler/plumb/`) against the
//! contract pScheduler holds its tools to: each executable fed the JSON
//! pScheduler sends it (shapes as in perfSONAR's pscheduler-server and the
//! tool plugins' own example inputs), its output checked against the schemas
//! pScheduler validates (python-pscheduler's jsonval `Tool` enumeration, the
//! throughput test's result schema). `run` runs real plumb client and server
//! processes on loopback.

mod common;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

fn plugin(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../contrib/pscheduler/plumb")
        .join(name)
}

fn have_python() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        plumb_testkit::skip_tool!("the pScheduler plugin needs python3 (scripts/test installs it)");
    }
    ok
}

/// Runs one executable with `input` on stdin (bounded in time).
fn call(name: &str, input: &Value, env: &[(&str, String)], limit: Duration) -> Output {
    let mut c = Command::new(plugin(name));
    c.env("PLUMB_BIN", plumb_bin())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {name}: {e}"));
    let text = input.to_string();
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write input");
    let t0 = Instant::now();
    while matches!(child.try_wait(), Ok(None)) {
        if t0.elapsed() > limit {
            let _ = child.kill();
            panic!("{name} ran past {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// Runs an executable that must succeed and print one JSON object.
fn ok_json(name: &str, input: &Value, env: &[(&str, String)], limit: Duration) -> Value {
    let out = call(name, input, env, limit);
    assert!(
        out.status.success(),
        "{name} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{name} printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

fn throughput(spec: Value) -> Value {
    json!({ "type": "throughput", "spec": spec })
}

#[test]
fn enumerate_matches_the_tool_schema() {
    if !have_python() {
        return;
    }
    let v = ok_json("enumerate", &Value::Null, &[], Duration::from_secs(10));
    // python-pscheduler jsonval PluginEnumeration/Tool: required and allowed keys.
    let allowed = [
        "schema",
        "name",
        "description",
        "version",
        "tests",
        "preference",
        "maintainer",
        "scheduling-class",
    ];
    for k in [
        "name",
        "description",
        "version",
        "tests",
        "preference",
        "maintainer",
    ] {
        assert!(v.get(k).is_some(), "enumerate lacks {k}: {v}");
    }
    for k in keys(&v) {
        assert!(
            allowed.contains(&k),
            "enumerate has {k}, which the schema forbids"
        );
    }
    assert_eq!(v["name"], "plumb");
    assert_eq!(v["tests"], json!(["throughput"]));
    assert!(v["preference"].is_i64(), "{v}");
    assert!(v["maintainer"]["name"].is_string(), "{v}");
}

#[test]
fn can_run_accepts_what_it_maps_and_names_what_it_cannot() {
    if !have_python() {
        return;
    }
    let t = Duration::from_secs(10);
    let yes = ok_json(
        "can-run",
        &throughput(
            json!({"schema": 1, "dest": "psdev2", "duration": "PT5S", "parallel": 3, "udp": true, "bandwidth": 100000000, "reverse": true}),
        ),
        &[],
        t,
    );
    assert_eq!(yes, json!({"can-run": true}));
    let no = ok_json(
        "can-run",
        &throughput(json!({"schema": 1, "dest": "psdev2", "fq-rate": 1000000, "flow-label": 7})),
        &[],
        t,
    );
    assert_eq!(no["can-run"], false, "{no}");
    let reasons = no["reasons"].to_string();
    assert!(
        reasons.contains("fq-rate") && reasons.contains("flow-label"),
        "{reasons}"
    );
    let bad = ok_json(
        "can-run",
        &throughput(json!({"schema": 1, "dest": "psdev2", "duration": "ten seconds"})),
        &[],
        t,
    );
    assert_eq!(bad["can-run"], false, "{bad}");
    let other = ok_json(
        "can-run",
        &json!({"type": "latency", "spec": {"dest": "psdev2"}}),
        &[],
        t,
    );
    assert_eq!(other["can-run"], false, "{other}");
    // Not JSON: a failure with a message, not a traceback.
    let out = Command::new(plugin("can-run"))
        .stdin(Stdio::null())
        .output()
        .expect("run can-run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not JSON") && !err.contains("Traceback"),
        "{err}"
    );
}

#[test]
fn duration_reserves_setup_omit_test_and_server_time() {
    if !have_python() {
        return;
    }
    let t = Duration::from_secs(10);
    let d = |spec: Value| ok_json("duration", &throughput(spec), &[], t)["duration"].clone();
    // Default link RTT 200 ms: 4 s setup; 2 s server start and 2 s shutdown.
    assert_eq!(d(json!({"dest": "x", "duration": "PT5S"})), "PT13S");
    // A 50 ms path sets up in the 1 s minimum; omit adds its seconds.
    assert_eq!(
        d(json!({"dest": "x", "duration": "PT1M", "link-rtt": "PT0.05S", "omit": "PT2S"})),
        "PT67S"
    );
    // No duration: plumb's (and iperf3's) 10 s.
    assert_eq!(d(json!({"dest": "x"})), "PT18S");
    let out = call(
        "duration",
        &throughput(json!({"dest": "x", "duration": "5 s"})),
        &[],
        t,
    );
    assert!(!out.status.success(), "an invalid duration must fail");
}

#[test]
fn participant_data_gives_the_server_port() {
    if !have_python() {
        return;
    }
    let t = Duration::from_secs(10);
    let test = throughput(json!({"dest": "psdev2", "duration": "PT5S", "schema": 1}));
    let p0 = ok_json(
        "participant-data",
        &json!({"participant": 0, "test": test}),
        &[],
        t,
    );
    assert!(p0.get("server-port").is_none(), "{p0}");
    let p1 = ok_json(
        "participant-data",
        &json!({"participant": 1, "test": test}),
        &[("PLUMB_PSCHEDULER_PORT", "15999".into())],
        t,
    );
    assert_eq!(p1["server-port"], 15999, "{p1}");
    let out = call(
        "participant-data",
        &json!({"participant": 2, "test": test}),
        &[],
        t,
    );
    assert!(!out.status.success(), "participant 2 must fail");
}

/// The throughput test's result schema: allowed top-level keys (plus the
/// plugin's `plumb-diagnosis`) and throughput-data keys.
fn check_result(r: &Value) {
    let top = [
        "schema",
        "succeeded",
        "error",
        "diags",
        "mss",
        "mtu",
        "tcp-window-size",
        "requested-tcp-window-size",
        "intervals",
        "summary",
        "plumb-diagnosis",
    ];
    for k in keys(r) {
        assert!(
            top.contains(&k),
            "result key {k} is not in the throughput schema"
        );
    }
    for k in ["succeeded", "diags", "intervals", "summary"] {
        assert!(r.get(k).is_some(), "result lacks {k}: {r}");
    }
    let data = [
        "throughput-bits",
        "throughput-bytes",
        "receiver-throughput-bits",
        "sent",
        "lost",
        "jitter",
        "stream-id",
        "start",
        "end",
        "rtt",
        "tcp-window-size",
        "retransmits",
        "omitted",
    ];
    let mut items: Vec<&Value> = vec![&r["summary"]["summary"]];
    items.extend(r["summary"]["streams"].as_array().into_iter().flatten());
    for iv in r["intervals"].as_array().into_iter().flatten() {
        items.push(&iv["summary"]);
        items.extend(iv["streams"].as_array().into_iter().flatten());
    }
    for d in items {
        for k in keys(d) {
            assert!(
                data.contains(&k),
                "throughput-data key {k} not in the schema: {d}"
            );
        }
        for k in ["sent", "lost", "retransmits", "tcp-window-size"] {
            if let Some(v) = d.get(k) {
                assert!(v.is_u64() || v.is_null(), "{k} must be an integer: {d}");
            }
        }
    }
}

fn run_input(spec: &Value, participant: u32, port: u16, parts: usize) -> Value {
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    // ISO 8601 UTC without a time zone, as pScheduler's example inputs.
    let out = Command::new("date")
        .args(["-u", "-d", &format!("@{start}"), "+%Y-%m-%dT%H:%M:%S"])
        .output()
        .expect("date");
    let start = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let pdata: Vec<Value> = (0..parts)
        .map(|i| {
            if i == 1 {
                json!({"server-port": port})
            } else {
                json!({})
            }
        })
        .collect();
    json!({
        "schema": 1,
        "task-uuid": "00000000-0000-0000-0000-000000000000",
        "schedule": {"start": start, "duration": "PT12S"},
        "test": {"type": "throughput", "spec": spec},
        "participant": participant,
        "participant-data": pdata,
    })
}

/// Runs both participants of a two-participant test: (client, server).
fn run_both(spec: &Value, port: u16) -> (Value, Value) {
    let server_in = run_input(spec, 1, port, 2);
    let server = std::thread::spawn(move || {
        ok_json(
            "run",
            &server_in,
            &[("PLUMB_PSCHEDULER_PORT", port.to_string())],
            Duration::from_secs(30),
        )
    });
    let client = ok_json(
        "run",
        &run_input(spec, 0, port, 2),
        &[("PLUMB_PSCHEDULER_PORT", port.to_string())],
        Duration::from_secs(30),
    );
    (client, server.join().expect("server participant"))
}

#[test]
fn run_and_merged_results_measure_on_loopback() {
    if !have_python() {
        return;
    }
    let port = port();
    let spec = json!({"schema": 1, "dest": "127.0.0.1", "duration": "PT2S", "link-rtt": "PT0.001S", "parallel": 2});
    let (client, server) = run_both(&spec, port);
    check_result(&client);
    check_result(&server);
    assert_eq!(client["succeeded"], true, "{client}");
    assert_eq!(server["succeeded"], true, "{server}");
    let sum = &client["summary"]["summary"];
    let bits = sum["throughput-bits"].as_f64().expect("throughput-bits");
    let rbits = sum["receiver-throughput-bits"]
        .as_f64()
        .expect("receiver-throughput-bits");
    let bytes = sum["throughput-bytes"].as_f64().expect("throughput-bytes");
    let secs = sum["end"].as_f64().expect("end") - sum["start"].as_f64().expect("start");
    assert!(bits > 0.0 && rbits > 0.0, "{sum}");
    assert!(
        (bytes * 8.0 / secs - bits).abs() / bits < 0.02,
        "bits/s is bytes over time: {sum}"
    );
    assert_eq!(
        client["summary"]["streams"].as_array().map(Vec::len),
        Some(2),
        "two streams"
    );
    assert!(
        client["intervals"].as_array().is_some_and(|a| a.len() >= 2),
        "{client}"
    );
    let d = &client["plumb-diagnosis"];
    assert!(d["limit"].is_string() || d["limit"].is_null(), "{d}");
    assert!(d["summary"].as_str().is_some_and(|s| !s.is_empty()), "{d}");
    assert!(
        client["diags"]
            .as_str()
            .is_some_and(|s| s.contains("plumb why:")),
        "{client}"
    );

    let merged = ok_json(
        "merged-results",
        &json!({"test": {"type": "throughput", "spec": spec}, "results": [client, server]}),
        &[],
        Duration::from_secs(10),
    );
    check_result(&merged);
    assert_eq!(merged["succeeded"], true);
    assert_eq!(merged["summary"], client["summary"]);
    let diags = merged["diags"].as_str().expect("diags");
    assert!(
        diags.contains("Participant 0:") && diags.contains("Participant 1:"),
        "{diags}"
    );
    // A failed server fails the merge.
    let failed = ok_json(
        "merged-results",
        &json!({"test": {"type": "throughput", "spec": spec}, "results": [client, {"succeeded": false, "error": "boom", "diags": ""}]}),
        &[],
        Duration::from_secs(10),
    );
    assert_eq!(failed["succeeded"], false, "{failed}");
    let out = call(
        "merged-results",
        &json!({"test": {"type": "throughput", "spec": spec}, "results": [client]}),
        &[],
        Duration::from_secs(10),
    );
    assert!(
        !out.status.success(),
        "one result of a two-participant test must fail"
    );
}

/// pScheduler's CPU affinity becomes `-A`: the client's `n,m` (so the
/// server runs the test's threads on m, whoever serves), the server
/// participant's own `-A m`; both ends run with it. `can-run` refuses a
/// negative CPU, and a server CPU in a single-ended test without a client
/// CPU (only the client's `n,m` could ask the far server).
#[test]
fn cpu_affinity_becomes_dash_a_at_each_end() {
    if !have_python() {
        return;
    }
    let allowed = plumb_net::host::current_thread_affinity().unwrap_or_default();
    if !(allowed.contains(&0) && allowed.contains(&1)) {
        plumb_testkit::skip_tool!(
            "CPU affinity 0 and 1 needs CPUs 0 and 1 (allowed here: {allowed:?})"
        );
        return;
    }
    let port = port();
    let spec = json!({"schema": 1, "dest": "127.0.0.1", "duration": "PT1S", "link-rtt": "PT0.001S",
        "client-cpu-affinity": 0, "server-cpu-affinity": 1});
    let t = Duration::from_secs(10);
    assert_eq!(
        ok_json("can-run", &throughput(spec.clone()), &[], t),
        json!({"can-run": true})
    );
    let (client, server) = run_both(&spec, port);
    assert_eq!(client["succeeded"], true, "{client}");
    assert_eq!(server["succeeded"], true, "{server}");
    let argv = |r: &Value| r["diags"].as_str().unwrap_or("").to_string();
    assert!(argv(&client).contains(" -A 0,1"), "{}", argv(&client));
    assert!(argv(&server).contains(" -A 1"), "{}", argv(&server));

    for (bad, want) in [
        (
            json!({"client-cpu-affinity": -1}),
            "invalid client-cpu-affinity",
        ),
        (
            json!({"server-cpu-affinity": "one"}),
            "invalid server-cpu-affinity",
        ),
        (
            json!({"single-ended": true, "server-cpu-affinity": 1}),
            "needs client-cpu-affinity",
        ),
    ] {
        let mut s = json!({"schema": 1, "dest": "psdev2"});
        for (k, v) in bad.as_object().expect("object") {
            s[k] = v.clone();
        }
        let no = ok_json("can-run", &throughput(s), &[], t);
        assert_eq!(no["can-run"], false, "{no}");
        assert!(no["reasons"].to_string().contains(want), "{no}");
    }
}

#[test]
fn run_with_no_server_fails_in_the_result() {
    if !have_python() {
        return;
    }
    let port = port();
    // single-ended: participant 0 alone, against a port where nothing listens.
    let spec = json!({"schema": 1, "dest": "127.0.0.1", "duration": "PT1S", "single-ended": true, "single-ended-port": port});
    let t0 = Instant::now();
    let r = ok_json(
        "run",
        &run_input(&spec, 0, port, 1),
        &[],
        Duration::from_secs(20),
    );
    check_result(
        &json!({"intervals": [], "summary": {}, "diags": r["diags"], "succeeded": r["succeeded"], "error": r["error"]}),
    );
    assert_eq!(r["succeeded"], false, "{r}");
    assert!(r["error"].as_str().is_some_and(|e| !e.is_empty()), "{r}");
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t0.elapsed()
    );
}

#[test]
fn loopback_runs_both_ends_in_participant_0() {
    if !have_python() {
        return;
    }
    let port = port();
    let spec = json!({"schema": 1, "dest": "127.0.0.1", "duration": "PT1S", "loopback": true, "udp": true, "bandwidth": 10000000});
    let r = ok_json(
        "run",
        &run_input(&spec, 0, port, 1),
        &[("PLUMB_PSCHEDULER_PORT", port.to_string())],
        Duration::from_secs(20),
    );
    check_result(&r);
    assert_eq!(r["succeeded"], true, "{r}");
    let s = &r["summary"]["summary"];
    assert!(
        s["jitter"].is_number() && s["lost"].is_u64() && s["sent"].is_u64(),
        "{s}"
    );
}
