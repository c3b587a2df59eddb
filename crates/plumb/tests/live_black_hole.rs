//! A live download stalled behind a path-MTU black hole: `python3 -m
//! http.server` (`tests/live/http_server.py`) in far sends a file to curl in
//! near across `plumb lab --drop-over 1400` (packets over 1400 B dropped
//! both ways, no ICMP sent back), and `plumb why -p 8000 -J` runs on far,
//! the sending host, while curl waits. With `net.ipv4.tcp_mtu_probing=0`
//! the server's HTTP headers (one small write) pass and every full-size
//! segment after them is lost: the socket sits in retransmission timeouts,
//! moving nothing, and must be named a sender stalled by the path MTU, not
//! an idle connection. With `=1` Linux falls back to smaller segments after
//! a few timeouts and the download goes on: sampled early, the stall still
//! takes a large part of the period and the shrunk segments name the hole.
//! Lab tests need root, /dev/net/tun, python3 and curl; elsewhere each skip
//! is counted (`plumb_testkit`).

mod common;

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use common::*;
use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The lab, python3 and curl, each missing one a counted skip.
fn can_run() -> bool {
    if !can_lab() {
        return false;
    }
    let works = |tool: &str, flag: &str| {
        std::process::Command::new(tool)
            .arg(flag)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !works("python3", "-V") {
        plumb_testkit::skip_tool!("the black-hole download test needs python3");
        return false;
    }
    if !works("curl", "-V") {
        plumb_testkit::skip_tool!("the black-hole download test needs curl");
        return false;
    }
    true
}

/// What one run left: the lab's notes, `plumb why`'s document from far
/// (the sender) and from near (the receiver), curl's exit code, the
/// response headers it received and the bytes of body it wrote.
struct Run {
    notes: String,
    why: Value,
    near: Value,
    curl_rc: i32,
    headers: Vec<u8>,
    body: u64,
}

/// The file's size: at 100 Mbit/s it takes longer than curl's 12 s, so
/// the download is still running (or stalled) whenever it is sampled.
const FILE: &str = "200M";

/// One download across `plumb lab --rate 100m --rtt 15ms --drop-over 1400`
/// with `tcp_mtu_probing=probing` in far (the sender). curl starts once the
/// server answers a first small request (which crosses the hole: all its
/// packets are small), marks its start, and gives up after 12 s. Far waits
/// (bounded) for that mark and `delay_ms` more, then samples port 8000 for
/// `secs` seconds; near does the same from curl's start.
fn download(name: &str, probing: u8, delay_ms: u32, secs: u32) -> Run {
    // Removed when dropped, also when the test fails.
    let dir = TempDir::new(&format!("live-bh-{name}"));
    let d = dir.display();
    let srv = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live/http_server.py");
    let plumb = plumb_bin();
    let delay = f64::from(delay_ms) / 1000.0;
    let far = format!(
        "sysctl -qw net.ipv4.tcp_mtu_probing={probing} || exit 1; \
         mkdir -p {d}/www && truncate -s {FILE} {d}/www/big && \
         (cd {d}/www && exec python3 {srv} 8000 cubic >/dev/null 2>&1) & srv=$!; \
         for i in $(seq 200); do [ -e {d}/started ] && break; sleep 0.1; done; sleep {delay}; \
         {plumb} why -p 8000 --for {secs} -J >{d}/why.json 2>{d}/why.err; \
         for i in $(seq 200); do [ -s {d}/curl.rc ] && break; sleep 0.1; done; \
         kill $srv; wait",
        srv = srv.display()
    );
    let near = format!(
        "for i in $(seq 100); do curl -s -o /dev/null http://$PLUMB_FAR:8000/ && break; \
         sleep 0.1; done; touch {d}/started; \
         (sleep {delay}; {plumb} why -p 8000 --for {secs} -J >{d}/near.json 2>{d}/near.err) & \
         curl -s -D {d}/headers -o {d}/body --max-time 12 http://$PLUMB_FAR:8000/big; \
         echo $? >{d}/curl.rc; wait; \
         for i in $(seq 150); do [ -s {d}/why.json ] && break; sleep 0.1; done"
    );
    let args = [
        "lab",
        "--rate",
        "100m",
        "--rtt",
        "15ms",
        "--drop-over",
        "1400",
        "--exec",
        &near,
        "--far-exec",
        &far,
    ];
    // The programs' output went to files; the notes are the lab's.
    let (out, notes) = run_lab(&args, Duration::from_secs(90));
    assert!(out.status.success(), "plumb {args:?}: {notes}");
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap_or_default();
    let doc = |f: &str, err: &str| -> Value {
        let text = String::from_utf8_lossy(&read(f)).into_owned();
        serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!(
                "{f}: plumb why -J gave no JSON ({e}): {text} {}",
                String::from_utf8_lossy(&read(err))
            )
        })
    };
    let (why, near) = (doc("why.json", "why.err"), doc("near.json", "near.err"));
    let curl_rc = String::from_utf8_lossy(&read("curl.rc"))
        .trim()
        .parse()
        .unwrap_or(-1);
    Run {
        notes,
        why,
        near,
        curl_rc,
        headers: read("headers"),
        body: read("body").len() as u64,
    }
}

/// Packets the black hole dropped far to near, from the lab's note
/// ("… over 1400 B (no ICMP sent; far->near: N)").
fn dropped_far_to_near(notes: &str) -> u64 {
    notes
        .split("far->near: ")
        .nth(1)
        .and_then(|rest| rest.split(')').next()?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no far->near black-hole count in the lab's notes: {notes}"))
}

/// The server's end of the download: the one sending connection on port
/// 8000, python3's.
fn sending(why: &Value) -> &Value {
    let all = why["connections"].as_array().expect("connections");
    let senders: Vec<&Value> = all.iter().filter(|c| c["this_host"] == "sender").collect();
    assert_eq!(senders.len(), 1, "one sending connection: {why:#}");
    let c = senders[0];
    assert_eq!(c["local_port"], 8000, "{c:#}");
    assert_eq!(c["command"], "python3", "{c:#}");
    c
}

/// The value of the diagnosis's evidence line whose text contains `what`.
fn evidence(c: &Value, what: &str) -> Option<f64> {
    c["diagnosis"]["evidence"]
        .as_array()?
        .iter()
        .find(|e| e["what"].as_str().is_some_and(|w| w.contains(what)))?["value"]
        .as_f64()
}

#[test]
fn a_download_stalled_behind_a_black_hole_is_named_from_the_sender() {
    if !can_run() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Sampled from 3.5 s into the stall for 5 s, as an admin looks at a
    // download that hangs: the RTO doubles from 0.2 s, so the period holds
    // one resend (near 6.2 s), and TCP_INFO's count of timeouts in a row
    // (4, then 5) says how long the head segment has been resent.
    let r = download("stall", 0, 3500, 5);
    // The premise: full-size packets died in the hole, curl gave up (28:
    // --max-time) with the headers and no byte of the file.
    assert!(dropped_far_to_near(&r.notes) >= 3, "{}", r.notes);
    assert_eq!(r.curl_rc, 28, "curl finished: {}", r.notes);
    assert_eq!(r.body, 0);
    let head = String::from_utf8_lossy(&r.headers);
    assert!(head.starts_with("HTTP/1.0 200"), "{head}");
    let c = sending(&r.why);
    let d = &c["diagnosis"];
    let summary = d["summary"].as_str().unwrap_or("");
    assert_eq!(d["limit"], "path_mtu", "{summary} {d:#}");
    // What was acknowledged is the response headers: the server's first
    // write, under the hole's size; nothing of the body. The kernel's
    // bytes_acked counts the SYN only on the end that opened the
    // connection; this one accepted it on a listening port, and the
    // figure is the headers' size exactly.
    let n = r.headers.len();
    assert!((100..1400).contains(&n), "{n} B of headers");
    assert!(
        summary.contains("stalled in retransmission timeouts")
            && summary.contains(&format!("while its first {n} bytes were")),
        "{n} B of headers: {head:?}\n{summary}"
    );
    let acked = evidence(c, "payload acknowledged");
    assert_eq!(acked, Some(n as f64), "{d:#}");
    let timeouts = evidence(c, "timeouts in a row").unwrap_or(0.0);
    assert!(timeouts >= 3.0, "{timeouts} timeouts in a row: {d:#}");
    eprintln!(
        "stall: {summary} (resends in the period: {:?})",
        evidence(c, "retransmitted segments")
    );
    // The receiving host has nothing outstanding and receives nothing: its
    // end is idle; the stall shows only in the sender's state.
    let rx = &r.near["connections"][0];
    assert_eq!(rx["remote_port"], 8000, "{rx:#}");
    assert_eq!(rx["command"], "curl", "{rx:#}");
    assert_eq!(rx["this_host"], "idle", "{rx:#}");
}

#[test]
fn a_download_that_falls_back_to_small_segments_is_named_when_sampled_early() {
    if !can_run() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Linux gives up on full-size segments after a few timeouts (about 1.5
    // to 3 s) and the download runs: a 4 s period from near the stall's
    // start keeps the stall a large share of it.
    let r = download("fallback", 1, 300, 4);
    // The premise: packets died in the hole, and the download moved on
    // (body bytes arrived) without finishing in 12 s.
    assert!(dropped_far_to_near(&r.notes) >= 3, "{}", r.notes);
    assert!(r.body > 1_000_000, "{} B of body: {}", r.body, r.notes);
    let c = sending(&r.why);
    let d = &c["diagnosis"];
    let summary = d["summary"].as_str().unwrap_or("");
    assert_eq!(d["limit"], "path_mtu", "{summary} {d:#}");
    assert!(
        summary.contains("stalled in retransmission timeouts")
            && summary.contains("-byte segments though the 1500-byte path MTU"),
        "{summary}"
    );
    eprintln!(
        "fallback: {summary} (resends in the period: {:?})",
        evidence(c, "retransmitted segments")
    );
}
