//! Each class `plumb why` gives a flow, proved in the lab on a flow whose
//! class is known, from a tcpdump capture beside the server (`why -r`) and
//! live (`why -p PORT -J`, sock_diag):
//!
//! - short: 60,000 B over HTTP across 50 ms (python3's http.server and
//!   curl), with its round trips counted from tshark's timestamps;
//! - request/response: 500 exchanges with a server that waits 20 ms
//!   before each answer, 10 ms away (`tests/live/classes.py`);
//! - interactive: a keystroke every 200 ms, echoed;
//! - many flows: 100 GETs of 10-60 kB and two 10 MiB downloads, whose text
//!   is the class summary and the two bulk flows' verdicts.
//!
//! Each test checks with tshark that the scenario holds (the download's
//! flights, the 20 ms gaps, the keystrokes' spacing, the flows' sizes)
//! before it asserts a verdict. Lab tests need root, /dev/net/tun,
//! tcpdump, tshark, python3 and curl; elsewhere each skip is counted
//! (`plumb_testkit`).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use common::*;
use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The lab and every program the scenarios run; a missing one is a
/// counted skip.
fn can_run() -> bool {
    if !can_lab() || tcpdump_missing() {
        return false;
    }
    for (tool, flag) in [("python3", "-V"), ("curl", "-V"), ("tshark", "-v")] {
        let works = std::process::Command::new(tool)
            .arg(flag)
            .output()
            .is_ok_and(|o| o.status.success());
        if !works {
            plumb_testkit::skip_tool!("the class lab tests need {tool}");
            return false;
        }
    }
    true
}

/// `tests/live/NAME`.
fn script(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/live")
        .join(name)
        .display()
        .to_string()
}

/// A shell loop that waits, at most `secs`, for `path` to exist.
fn wait_for(path: &str, secs: u32) -> String {
    format!(
        "for i in $(seq {}); do [ -e {path} ] && break; sleep 0.05; done",
        secs * 20
    )
}

/// One scenario across `plumb lab` with `link`'s flags: `far` (shell, in
/// the far namespace: it starts the server, may set `S` to its pid for the
/// end to stop it, and creates `$D/ready`) runs beside a tcpdump of every
/// TCP packet, started first and stopped 1.5 s after `near` is done
/// (libpcap hands packets over a block at a time, at the latest a second
/// after the block opened: a stop any sooner loses the transfer's end);
/// `near` (shell, in the near namespace) starts once `$D/ready` exists.
/// `D` is the scratch directory in both, removed when the test ends.
/// Returns it with `far.pcap` in it.
fn scenario(name: &str, link: &[&str], far: &str, near: &str) -> TempDir {
    let dir = TempDir::new(&format!("classes-{name}"));
    let d = dir.display();
    let far = format!(
        "D={d}; S=; \
         tcpdump -i any -U -Z root -s 128 -w $D/far.pcap tcp 2>$D/tcpdump.err & T=$!; \
         for i in $(seq 200); do grep -q 'listening on' $D/tcpdump.err && break; sleep 0.05; done\n\
         {far}\n\
         {}; sleep 1.5; [ -n \"$S\" ] && kill $S; kill -INT $T; wait; touch $D/far.done",
        wait_for("$D/near.done", 60)
    );
    let near = format!(
        "D={d}; {}; [ -e $D/ready ] || exit 3\n{near}\ntouch $D/near.done; {}",
        wait_for("$D/ready", 10),
        wait_for("$D/far.done", 20)
    );
    let mut args = vec!["lab"];
    args.extend_from_slice(link);
    args.extend(["--far-exec", &far, "--exec", &near]);
    let (out, notes) = run_lab(&args, Duration::from_secs(90));
    assert!(out.status.success(), "plumb lab ({name}): {notes}");
    for f in ["far.pcap", "far.done"] {
        assert!(dir.join(f).exists(), "{name}: no {f}: {notes}");
    }
    dir
}

/// `plumb why -r PCAP -J` and its text (`plumb why -r PCAP`).
fn why_capture(pcap: &Path) -> (Value, String) {
    let p = pcap.to_str().expect("utf-8 path");
    let o = run(
        plumb_bin(),
        &["why", "-r", p, "-J"],
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "why -r {p} -J: {o:?}");
    let doc = json(&o, "plumb why -r -J");
    let o = run(plumb_bin(), &["why", "-r", p], Duration::from_secs(60));
    assert!(o.status.success(), "why -r {p}: {o:?}");
    (doc, String::from_utf8_lossy(&o.stdout).into_owned())
}

/// The `-J` document a `plumb why -p` run left in `path`.
fn live_doc(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let err = std::fs::read_to_string(path.with_extension("err")).unwrap_or_default();
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: no -J ({e}): {text} {err}", path.display()))
}

/// The live rows of `doc` with `port` at the end `end` ("local_port" or
/// "remote_port").
fn rows<'a>(doc: &'a Value, end: &str, port: u16) -> Vec<&'a Value> {
    doc["connections"]
        .as_array()
        .map(|a| a.iter().filter(|c| c[end] == port).collect())
        .unwrap_or_default()
}

/// tshark's fields `fields` of the packets of `pcap` that pass `filter`.
fn tshark(pcap: &Path, filter: &str, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = std::process::Command::new("tshark");
    cmd.arg("-r")
        .arg(pcap)
        .args(["-Y", filter, "-T", "fields", "-E", "separator=;"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let o = cmd.output().expect("tshark runs");
    assert!(o.status.success(), "tshark: {o:?}");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.split(';').map(str::to_string).collect())
        .collect()
}

/// `60203` as plumb writes it: `60,203`.
fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The explained flow whose client (the data's receiver here) is
/// `near_port`.
fn flow_to(doc: &Value, near_port: u16) -> &Value {
    let want = format!("198.18.0.1:{near_port}");
    doc["explained"]
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|x| x["flow"]["receiver"] == want || x["flow"]["sender"] == want)
        })
        .unwrap_or_else(|| panic!("no flow of {want}: {doc:#}"))
}

/// curl's `-w '%{size_download} %{local_port}\n'` lines: (body bytes,
/// client port) per transfer.
fn curl_transfers(path: &Path) -> Vec<(u64, u16)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let mut f = l.split_whitespace().map(|x| x.parse::<u64>().ok());
            match (f.next().flatten(), f.next().flatten()) {
                (Some(b), Some(p)) => (b, u16::try_from(p).expect("a port")),
                _ => panic!(
                    "{}: not curl's line: {:?}",
                    path.display(),
                    l.chars().take(200).collect::<String>()
                ),
            }
        })
        .collect()
}

/// One download as tshark shows it beside the server: the server's
/// payload (each byte once), its flights (bytes, segments), its segments
/// sent again (a tail-loss probe, a retransmission), the full segment size
/// and the handshake's RTT.
#[derive(Debug)]
struct Download {
    payload: u64,
    flights: Vec<(u64, u64)>,
    resent: u64,
    mss: u64,
    rtt: f64,
}

/// The server's data on the connection from `near_port` to `server_port`,
/// cut into flights: a segment at least half a round trip after the one
/// before opens a new one (a flight leaves within the link's time for it,
/// here about a millisecond, and the next a round trip later). A segment
/// of the capture may be a GSO packet of several: it counts as
/// ceil(len / mss) segments. A segment that carries no byte past the
/// highest sent is counted as sent again, in no flight.
fn download(pcap: &Path, server_port: u16, near_port: u16) -> Download {
    let fields = [
        "frame.time_epoch",
        "tcp.srcport",
        "tcp.len",
        "tcp.flags.syn",
        "tcp.flags.ack",
        "tcp.analysis.initial_rtt",
        "tcp.options.mss_val",
        "tcp.options.timestamp.tsval",
        "tcp.seq",
    ];
    let filter = format!("tcp.port == {near_port} && tcp.port == {server_port}");
    let pkts = tshark(pcap, &filter, &fields);
    let from_server = |p: &Vec<String>| p[1] == server_port.to_string();
    let syn_ack = pkts
        .iter()
        .find(|p| from_server(p) && p[3] == "1" && p[4] == "1")
        .unwrap_or_else(|| panic!("no SYN-ACK from {server_port} to {near_port}"));
    let mss = syn_ack[6].parse::<u64>().expect("the SYN-ACK's MSS")
        - if syn_ack[7].is_empty() { 0 } else { 12 };
    let rtt: f64 = pkts
        .iter()
        .find_map(|p| p[5].parse().ok())
        .expect("tshark's initial RTT");
    let mut flights: Vec<(u64, u64)> = Vec::new();
    let mut last: Option<f64> = None;
    // tshark's sequence numbers are relative: the first data byte is 1.
    let (mut high, mut resent) = (1, 0);
    for p in pkts.iter().filter(|p| from_server(p)) {
        let len: u64 = p[2].parse().unwrap_or(0);
        let seq: u64 = p[8].parse().unwrap_or(0);
        if len == 0 {
            continue;
        }
        if seq + len <= high {
            resent += 1;
            continue;
        }
        let t: f64 = p[0].parse().expect("a time");
        if last.is_none_or(|l| t - l >= rtt / 2.0) {
            flights.push((0, 0));
        }
        last = Some(t);
        let f = flights.last_mut().expect("a flight");
        f.0 += len;
        f.1 += len.div_ceil(mss);
        high = seq + len;
    }
    Download {
        payload: high - 1,
        flights,
        resent,
        mss,
        rtt,
    }
}

/// Slow start's round trips for `bytes` from a first flight of `first`
/// bytes that doubles each round trip.
fn slow_start_rounds(bytes: u64, first: u64) -> u64 {
    let (mut sent, mut flight, mut rounds) = (0, first, 0);
    while sent < bytes {
        sent += flight;
        flight *= 2;
        rounds += 1;
    }
    rounds
}

/// The 60,000 B file three times, each on its own connection (curl, one
/// GET each; python's http.server answers HTTP/1.0 and closes), across a
/// 100 Mbit/s link of 50 ms, with cubic's slow start from Linux's 10
/// segments. tshark sees each download as the handshake and three flights
/// of the server's data (10 + 20 + the rest of the segments): four round
/// trips, three for the data and one before it (the request's round trip
/// is the first flight's). The capture must say exactly that, with the
/// first flight's bytes as the initial window.
///
/// Live, `plumb why -p 8000 -J` samples both ends every 100 ms across all
/// three. A download is over within about five round trips, so each end
/// sees a part of it, and the class is the part's: the client's socket
/// (from its SYN to the server's ACK of its FIN, about 250 ms) always
/// spans two samples and receives in between; it must be short. The
/// server's socket is established about 170 ms (from the handshake's ACK
/// to the client's FIN, which comes with its last ACK), and a sample of
/// its handshake (a request socket, without TCP_INFO) is no baseline: two
/// samples catch it in about one download of three (seven runs of three
/// downloads: 1, 2, 1, 1, 1, 0, 1), the others close before a second
/// sample. What it cannot see: the handshake, the request and the round
/// trips before its first sample. What it must get right: a period in
/// which the server sent is short.
#[test]
fn a_60_kb_download_is_short_with_its_round_trips() {
    if !can_run() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    const BODY: u64 = 60_000;
    const DOWNLOADS: usize = 3;
    let plumb = plumb_bin();
    let far = format!(
        "mkdir -p $D/www && head -c {BODY} /dev/zero > $D/www/f60k; \
         (cd $D/www && exec python3 {} 8000 cubic >/dev/null 2>&1) & S=$!; \
         for i in $(seq 200); do ss -ltnH 'sport = :8000' | grep -q . && break; sleep 0.05; done; \
         {plumb} why -p 8000 --for 4 -J >$D/far.json 2>$D/far.err & touch $D/ready",
        script("http_server.py")
    );
    let near = format!(
        "{plumb} why -p 8000 --for 4 -J >$D/near.json 2>$D/near.err & W=$!; sleep 0.5; \
         for i in $(seq {DOWNLOADS}); do \
           curl -s -o $D/body -w '%{{size_download}} %{{local_port}}\\n' \
             http://$PLUMB_FAR:8000/f60k >>$D/curl.out; sleep 0.4; \
         done; wait $W"
    );
    let dir = scenario("short", &["--rate", "100m", "--rtt", "50ms"], &far, &near);
    let pcap = dir.join("far.pcap");
    let (doc, _) = why_capture(&pcap);
    let got = curl_transfers(&dir.join("curl.out"));
    assert_eq!(got.len(), DOWNLOADS, "curl's transfers: {got:?}");
    for (body, port) in got {
        let dl = download(&pcap, 8000, port);
        // The scenario: the whole file and its headers, each byte sent
        // once, in three flights of which the first is Linux's initial
        // window of 10 segments.
        let at = format!("download to port {port}: {dl:?}");
        let first = dl.flights.first().copied().unwrap_or_default();
        if body != BODY
            || dl.resent > 0
            || dl.flights.len() != 3
            || first.1 != 10
            || (dl.rtt - 0.05).abs() > 0.005
        {
            plumb_testkit::skip_premise!("not the 60 kB download in 3 flights: {at}");
            return;
        }
        let x = flow_to(&doc, port);
        let (shape, d) = (&x["shape"], &x["diagnosis"]);
        let summary = d["summary"].as_str().unwrap_or("");
        assert_eq!(x["class"], "short", "{at}: {}", x["class_why"]);
        assert!(d["limit"].is_null(), "{at}: {summary}");
        assert_eq!(x["flow"]["handshake"], true, "{at}");
        // Every byte the server sent is the one run.
        assert_eq!(shape["bytes"], dl.payload, "{at}: {shape}");
        assert_eq!(shape["longest_run"]["bytes"], dl.payload, "{at}: {shape}");
        // The round trips: three flights for the data, the handshake
        // before them.
        let flights = dl.flights.len() as u64;
        assert!(
            x["class_why"]
                .as_str()
                .is_some_and(|w| w.contains(&format!("took {flights} data round trip(s)"))),
            "{at}: {}",
            x["class_why"]
        );
        assert!(
            summary.contains(&format!("{} round trips of ", flights + 1))
                && summary.contains(&format!("({flights} for its data, 1 before it)")),
            "{at}: {summary}"
        );
        // Slow start: the initial window is the first flight, and from it
        // the payload takes as many round trips as it took flights.
        assert_eq!(
            shape["longest_run"]["first_round_bytes"], first.0,
            "{at}: {shape}"
        );
        let need = slow_start_rounds(dl.payload, first.0);
        assert_eq!(need, flights, "{at}: slow start from {} B", first.0);
        assert!(
            summary.contains(&format!(
                "initial window of {} B (its first flight) needs {need} round trip(s) for its largest run of {} B",
                grouped(first.0),
                grouped(dl.payload)
            )),
            "{at}: {summary}"
        );
        eprintln!(
            "short: port {port}: {} B in flights {:?} (mss {}, RTT {:.2} ms): {summary}",
            dl.payload,
            dl.flights,
            dl.mss,
            dl.rtt * 1e3
        );
    }
    // Live: every period a socket was caught in, at either end.
    let (near, far) = (
        live_doc(&dir.join("near.json")),
        live_doc(&dir.join("far.json")),
    );
    let clients: Vec<&Value> = rows(&near, "remote_port", 8000)
        .into_iter()
        .filter(|c| !c["diagnosis"].is_null())
        .collect();
    if clients.is_empty() {
        plumb_testkit::skip_premise!("no download's client sampled twice: {near:#}");
        return;
    }
    for c in &clients {
        assert_eq!(c["this_host"], "receiver", "{c:#}");
        assert_eq!(c["class"], "short", "the client's end: {c:#}");
        assert!(c["diagnosis"]["limit"].is_null(), "{c:#}");
    }
    let servers = rows(&far, "local_port", 8000);
    let sending: Vec<&&Value> = servers
        .iter()
        .filter(|c| c["this_host"] == "sender")
        .collect();
    for c in &sending {
        assert_eq!(c["class"], "short", "the server's end: {c:#}");
        assert!(c["diagnosis"]["limit"].is_null(), "{c:#}");
    }
    eprintln!(
        "short, live: {} client end(s) caught of {DOWNLOADS}, all short; server ends: {} seen, {} caught sending (short), the others {:?}",
        clients.len(),
        servers.len(),
        sending.len(),
        servers
            .iter()
            .filter(|c| c["this_host"] != "sender")
            .map(|c| (c["this_host"].clone(), c["class"].clone(), c["samples"].clone()))
            .collect::<Vec<_>>()
    );
}

/// The value of the diagnosis's evidence line whose text contains `what`.
fn evidence(d: &Value, what: &str) -> Option<f64> {
    d["evidence"]
        .as_array()?
        .iter()
        .find(|e| e["what"].as_str().is_some_and(|w| w.contains(what)))?["value"]
        .as_f64()
}

/// 500 requests of 32 B on one connection, each answered with 64 B by a
/// server that waits 20 ms first (`classes.py`, at real-time priority),
/// across a 10 ms round trip: tshark sees 500 of each, alternating, and
/// the gaps before the answers average 20 ms at the server. The capture
/// names it request/response with the server's time within 10 % of 20 ms
/// (and equal to tshark's gaps less the capture point's round trip to the
/// server); live, the client's end does too, from a 3 s period inside the
/// exchanges: the period per exchange less the RTT.
#[test]
fn five_hundred_exchanges_with_a_20_ms_server_are_request_response() {
    if !can_run() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    const N: usize = 500;
    const WAIT: f64 = 0.020;
    let (plumb, py) = (plumb_bin(), script("classes.py"));
    let far = format!(
        "python3 {py} rr-server port=9000 wait={WAIT} up=$D/ready secs=60 & S=$!; {}",
        wait_for("$D/ready", 10)
    );
    let near = format!(
        "python3 {py} rr-client host=$PLUMB_FAR port=9000 n={N} up=$D/connected secs=60 & C=$!; \
         {}; sleep 1; {plumb} why -p 9000 --for 3 -J >$D/near.json 2>$D/near.err; wait $C",
        wait_for("$D/connected", 10)
    );
    let dir = scenario("rr", &["--rate", "100m", "--rtt", "10ms"], &far, &near);
    let pcap = dir.join("far.pcap");
    // The scenario, from tshark: N requests and N answers alternating, and
    // the server's gaps.
    let data = tshark(
        &pcap,
        "tcp.port == 9000 && tcp.len > 0",
        &["frame.time_epoch", "tcp.srcport", "tcp.len"],
    );
    let mut gaps = Vec::new();
    let mut asked: Option<f64> = None;
    let (mut requests, mut odd) = (0, 0);
    for p in &data {
        let t: f64 = p[0].parse().expect("a time");
        match (p[1] == "9000", p[2].as_str(), asked) {
            (false, "32", None) => {
                requests += 1;
                asked = Some(t);
            }
            (true, "64", Some(at)) => {
                gaps.push(t - at);
                asked = None;
            }
            _ => odd += 1,
        }
    }
    let mean_gap = gaps.iter().sum::<f64>() / gaps.len().max(1) as f64;
    if (requests, gaps.len(), odd) != (N, N, 0) || (mean_gap / WAIT - 1.0).abs() > 0.10 {
        plumb_testkit::skip_premise!(
            "{requests} requests, {} answers, {odd} other data segments, gaps of {:.3} ms on average",
            gaps.len(),
            mean_gap * 1e3
        );
        return;
    }
    let (doc, _) = why_capture(&pcap);
    let xs = doc["explained"].as_array().expect("explained");
    assert_eq!(xs.len(), 1, "{doc:#}");
    let x = &xs[0];
    let (shape, d) = (&x["shape"], &x["diagnosis"]);
    let summary = d["summary"].as_str().unwrap_or("");
    assert_eq!(x["class"], "request_response", "{}", x["class_why"]);
    assert_eq!(shape["exchanges"], N, "{shape}");
    let st = &shape["server_time"];
    assert_eq!(st["exchanges"], N, "{st}");
    let mean = st["mean_s"].as_f64().expect("server_time.mean_s");
    let path = st["path_s"].as_f64().expect("server_time.path_s");
    assert!(
        (mean / WAIT - 1.0).abs() <= 0.10,
        "the server's time {mean} s: {summary}"
    );
    assert!(
        (mean + path - mean_gap).abs() <= 1e-4,
        "the server's time {mean} s + the path {path} s vs tshark's gaps {mean_gap} s"
    );
    assert!(d["limit"].is_null(), "{summary}");
    assert!(summary.contains("the server's time dominates"), "{summary}");
    // Live, the client's end.
    let near = live_doc(&dir.join("near.json"));
    let c = rows(&near, "remote_port", 9000);
    assert_eq!(c.len(), 1, "{near:#}");
    let c = c[0];
    assert_eq!(c["class"], "request_response", "{c:#}");
    let live = evidence(&c["diagnosis"], "server's time per exchange (mean)")
        .unwrap_or_else(|| panic!("no server time live: {c:#}"));
    assert!(
        (live / (WAIT * 1e3) - 1.0).abs() <= 0.10,
        "live: the server's time {live} ms: {}",
        c["diagnosis"]["summary"]
    );
    eprintln!(
        "request/response: tshark's gaps {:.3} ms; capture {:.3} ms (+ path {:.3} ms); live {live:.3} ms: {summary}",
        mean_gap * 1e3,
        mean * 1e3,
        path * 1e3
    );
}

/// A keystroke (3 B) every 200 ms for 4 s, echoed by the server, 20 ms
/// away: from the capture and live at both ends, interactive, no fix, and
/// "not a throughput problem".
#[test]
fn keystrokes_every_200_ms_are_interactive() {
    if !can_run() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    const KEYS: usize = 20;
    const EVERY: f64 = 0.2;
    let (plumb, py) = (plumb_bin(), script("classes.py"));
    let far = format!(
        "python3 {py} echo-server port=9000 up=$D/ready secs=30 & S=$!; {}; \
         ({}; sleep 0.5; {plumb} why -p 9000 --for 2 -J >$D/far.json 2>$D/far.err) &",
        wait_for("$D/ready", 10),
        wait_for("$D/connected", 10)
    );
    let near = format!(
        "python3 {py} keys-client host=$PLUMB_FAR port=9000 n={KEYS} every={EVERY} up=$D/connected & C=$!; \
         {}; sleep 0.5; {plumb} why -p 9000 --for 2 -J >$D/near.json 2>$D/near.err; wait $C",
        wait_for("$D/connected", 10)
    );
    let dir = scenario("keys", &["--rate", "100m", "--rtt", "20ms"], &far, &near);
    let pcap = dir.join("far.pcap");
    // The scenario: KEYS keystrokes of 3 B about 200 ms apart, each echoed.
    let data = tshark(
        &pcap,
        "tcp.port == 9000 && tcp.len > 0",
        &["frame.time_epoch", "tcp.srcport", "tcp.len"],
    );
    let keys: Vec<f64> = data
        .iter()
        .filter(|p| p[1] != "9000" && p[2] == "3")
        .map(|p| p[0].parse().expect("a time"))
        .collect();
    let echoes = data
        .iter()
        .filter(|p| p[1] == "9000" && p[2] == "3")
        .count();
    let spaced = keys
        .windows(2)
        .all(|w| ((w[1] - w[0]) / EVERY - 1.0).abs() <= 0.10);
    if keys.len() != KEYS || echoes != KEYS || data.len() != 2 * KEYS || !spaced {
        plumb_testkit::skip_premise!(
            "{} keystrokes ({} echoed, {} data segments), at {:?}",
            keys.len(),
            echoes,
            data.len(),
            keys.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>()
        );
        return;
    }
    let (doc, text) = why_capture(&pcap);
    let xs = doc["explained"].as_array().expect("explained");
    assert_eq!(xs.len(), 1, "{doc:#}");
    let from_capture = &xs[0];
    assert!(
        text.contains(", interactive: ") && text.contains("not a throughput problem"),
        "{text}"
    );
    let near = live_doc(&dir.join("near.json"));
    let far = live_doc(&dir.join("far.json"));
    let (n, f) = (
        rows(&near, "remote_port", 9000),
        rows(&far, "local_port", 9000),
    );
    assert_eq!((n.len(), f.len()), (1, 1), "{near:#} {far:#}");
    for (who, x) in [
        ("capture", from_capture),
        ("client", n[0]),
        ("server", f[0]),
    ] {
        let d = &x["diagnosis"];
        let summary = d["summary"].as_str().unwrap_or("");
        assert_eq!(x["class"], "interactive", "{who}: {x:#}");
        assert!(d["limit"].is_null(), "{who}: {summary}");
        assert!(
            d["fixes"].as_array().is_some_and(Vec::is_empty),
            "{who}: {:#}",
            d["fixes"]
        );
        assert!(
            summary.starts_with("Interactive: idle")
                && summary.contains("not a throughput problem"),
            "{who}: {summary}"
        );
        eprintln!("interactive, {who}: {summary}");
    }
}

/// 100 GETs of 10,000 to 59,995 B (505 B apart, one curl, each on its own
/// connection: python's http.server answers HTTP/1.0 and closes), then two
/// downloads of 10 MiB, across 100 Mbit/s and 10 ms. The text (no -V) is
/// the class table, the two bulk flows ranked and their two verdicts, in
/// under 60 lines; in `-J` every flow has a class: the GETs' (under 64 KiB,
/// the least a bulk run carries) never bulk, the downloads bulk.
#[test]
fn a_hundred_gets_and_two_downloads_show_the_two_bulk_flows() {
    if !can_run() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    const GETS: u64 = 100;
    let size = |i: u64| 10_000 + 505 * i;
    let big: u64 = 10 << 20;
    let far = format!(
        "mkdir -p $D/www && for i in $(seq 0 {}); do head -c $((10000 + 505 * i)) /dev/zero > $D/www/g$i; done; \
         truncate -s {big} $D/www/big; \
         (cd $D/www && exec python3 {} 8000 cubic >/dev/null 2>&1) & S=$!; \
         for i in $(seq 200); do ss -ltnH 'sport = :8000' | grep -q . && break; sleep 0.05; done; \
         touch $D/ready",
        GETS - 1,
        script("http_server.py")
    );
    let w = "-w '%{size_download} %{local_port}\\n'";
    let near = format!(
        "U=; for i in $(seq 0 {}); do U=\"$U -o /dev/null http://$PLUMB_FAR:8000/g$i\"; done; \
         curl -s {w} $U >$D/gets.out; \
         for i in 1 2; do curl -s -o /dev/null {w} http://$PLUMB_FAR:8000/big >>$D/bulk.out; done",
        GETS - 1
    );
    let dir = scenario("many", &["--rate", "100m", "--rtt", "10ms"], &far, &near);
    let pcap = dir.join("far.pcap");
    // The scenario: each GET its own connection with the size asked for,
    // the two downloads whole; tshark sees those 102 connections and the
    // server's payload on each at least its body.
    let gets = curl_transfers(&dir.join("gets.out"));
    let bulk = curl_transfers(&dir.join("bulk.out"));
    let sizes: Vec<u64> = gets.iter().map(|g| g.0).collect();
    let ports: std::collections::BTreeSet<u16> = gets.iter().chain(&bulk).map(|g| g.1).collect();
    // The server's payload per connection, each byte once: the highest
    // relative sequence sent (the first data byte is 1; a resent copy,
    // as a tail-loss probe, adds nothing).
    let payload: BTreeMap<u16, u64> = tshark(
        &pcap,
        "tcp.srcport == 8000 && tcp.len > 0",
        &["tcp.dstport", "tcp.seq", "tcp.len"],
    )
    .iter()
    .fold(BTreeMap::new(), |mut m, p| {
        let end = p[1].parse::<u64>().unwrap_or(0) + p[2].parse::<u64>().unwrap_or(0);
        let e = m.entry(p[0].parse().expect("a port")).or_default();
        *e = (end - 1).max(*e);
        m
    });
    // Each transfer's payload is its body and its headers.
    let mut wrong: Vec<String> = gets
        .iter()
        .chain(&bulk)
        .filter(|(b, p)| payload.get(p).is_none_or(|n| n <= b || *n >= b + 1000))
        .map(|(b, p)| format!("port {p}: {b} B of body, {:?} B sent", payload.get(p)))
        .collect();
    if sizes != (0..GETS).map(size).collect::<Vec<_>>() {
        wrong.push(format!("the GETs' bodies: {sizes:?}"));
    }
    if bulk.iter().map(|b| b.0).collect::<Vec<_>>() != [big, big] {
        wrong.push(format!("the downloads: {bulk:?}"));
    }
    if ports.len() != 102 || payload.len() != 102 {
        wrong.push(format!(
            "{} client ports, {} connections with data from the server",
            ports.len(),
            payload.len()
        ));
    }
    if !wrong.is_empty() {
        plumb_testkit::skip_premise!("not the 102 transfers asked for: {wrong:?}");
        return;
    }
    let (doc, text) = why_capture(&pcap);
    let xs = doc["explained"].as_array().expect("explained");
    assert_eq!(xs.len(), 102, "{text}");
    for (b, p) in &gets {
        let x = flow_to(&doc, *p);
        let class = x["class"].as_str().unwrap_or("none");
        assert!(
            ["short", "request_response", "interactive"].contains(&class),
            "the GET of {b} B to port {p}: {class}: {}",
            x["class_why"]
        );
    }
    for (_, p) in &bulk {
        let x = flow_to(&doc, *p);
        assert_eq!(x["class"], "bulk", "port {p}: {}", x["class_why"]);
    }
    // The text: the table, the two ranked, their two verdicts, and no
    // other flow's.
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() < 60, "{} lines:\n{text}", lines.len());
    assert!(text.contains("Flows by class"), "{text}");
    let count_of = |class: &str| -> Option<u64> {
        lines
            .iter()
            .find(|l| l.trim_start().starts_with(class) && l.contains("flow(s)"))?
            .trim_start()
            .strip_prefix(class)?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    assert_eq!(count_of("bulk"), Some(2), "{text}");
    let others: u64 = ["interactive", "request/response", "short"]
        .iter()
        .map(|c| count_of(c).unwrap_or(0))
        .sum();
    assert_eq!(others, GETS, "{text}");
    let verdicts: Vec<&&str> = lines
        .iter()
        .filter(|l| {
            l.split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        })
        .collect();
    assert_eq!(verdicts.len(), 2, "{text}");
    for (_, p) in &bulk {
        assert!(
            verdicts
                .iter()
                .any(|v| v.contains(&format!("198.18.0.1:{p}, bulk: "))),
            "no verdict for the download to port {p}:\n{text}"
        );
    }
    eprintln!("many flows: {} lines:\n{text}", lines.len());
}
