//! A path-MTU black hole in the lab (`plumb lab --drop-over 1400`: packets
//! over 1400 B dropped, no ICMP sent back), captured with tcpdump at both
//! ends of a plumb test, and `plumb why -r` on each capture. With
//! `net.ipv4.tcp_mtu_probing=0` in the sender's namespace the transfer
//! stalls after the handshake and its first small write; with `=1` Linux
//! gives up on the full size after a few timeouts and goes on with smaller
//! segments. Each capture names the black hole: the sender's from the
//! full-size copies it resent, the receiver's from the silence and the
//! sender's later proof that it had sent more than arrived. The lab tests
//! need root, /dev/net/tun and tcpdump; elsewhere they are recorded as
//! skipped (`plumb_testkit`).

mod common;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use common::*;
use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The black hole's limit, IP bytes: full-size segments (1500 B) are over
/// it, the handshake and Linux's fallback segments (tcp_base_mss 1024) are
/// under it.
const DROP_OVER: &str = "1400";

/// One lab run: the lab's own notes, the client's `-J` if it
/// wrote one, and the two captures.
struct Run {
    notes: String,
    doc: Option<Value>,
    near: PathBuf,
    far: PathBuf,
}

/// A plumb test across a 100 Mbit/s, 15 ms lab with the black hole (both
/// directions), `tcp_mtu_probing` set to `probing` in both namespaces (the
/// server's results, over 1400 B, cross the hole the other way), tcpdump
/// and `plumb why --capture` of the namespace's lab device beside each end
/// (see [`live_of`]).
/// The client is stopped with SIGINT if it has not ended in time: after
/// 15 s when it stalls (its results cannot cross either), 30 s when it
/// falls back (the end of its test waits out more timeouts). The far side
/// marks when its captures are closed and the near side waits for it
/// (bounded).
fn black_hole_run(dir: &Path, probing: u8) -> Run {
    let (near, far) = (dir.join("near.pcap"), dir.join("far.pcap"));
    let (test, done) = (dir.join("test.json"), dir.join("far.done"));
    let plumb = plumb_bin();
    let dump = |f: &Path| {
        let live = live_of(f);
        format!(
            "tcpdump -i any -U -Z root -s 128 -w {} tcp 2>/dev/null & T=$!; \
             DEV=$(ip -o link show | awk -F': ' '$2 != \"lo\" {{print $2; exit}}'); \
             {plumb} why --capture $DEV --for 100 -p 5201 -J > {} 2> {} & L=$!",
            f.display(),
            live.display(),
            live.with_extension("err").display()
        )
    };
    let stop = "kill -INT $T; kill -TERM $L; wait $T; wait $L";
    let limit = if probing == 0 { 15 } else { 30 };
    let far_exec = format!(
        "sysctl -qw net.ipv4.tcp_mtu_probing={probing} && {}; timeout 45 {plumb} -s -1 >/dev/null 2>&1; sleep 1.5; {stop}; touch {}",
        dump(&far),
        done.display()
    );
    let near_exec = format!(
        "sysctl -qw net.ipv4.tcp_mtu_probing={probing} && {}; sleep 2; \
         timeout -s INT {limit} {plumb} -c $PLUMB_FAR -t 5 --why --link 100m -J > {}; \
         sleep 2; {stop}; \
         for i in $(seq 40); do [ -e {} ] && break; sleep 0.5; done",
        dump(&near),
        test.display(),
        done.display()
    );
    let args = [
        "lab",
        "--rate",
        "100m",
        "--rtt",
        "15ms",
        "--drop-over",
        DROP_OVER,
        "--far-exec",
        &far_exec,
        "--exec",
        &near_exec,
    ];
    let (out, notes) = run_lab(&args, Duration::from_secs(120));
    assert!(
        out.status.success() || !notes.is_empty(),
        "plumb lab: {notes}"
    );
    let doc = std::fs::read(&test)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    Run {
        notes,
        doc,
        near,
        far,
    }
}

/// The `-J` document `plumb why --capture` wrote beside the capture `pcap`.
fn live_of(pcap: &Path) -> PathBuf {
    pcap.with_extension("live.json")
}

/// `plumb why --capture`'s verdict on the connection `x` (the file's
/// explained data connection): it read what the kernel passed it (read +
/// dropped = received) and names what the file names, with the same
/// summary.
fn live_agrees(pcap: &Path, x: &Value) {
    let path = live_of(pcap);
    let at = path.display().to_string();
    let live = live_capture_doc(&path);
    let y = data_connection(&live, x["flow"]["client"].as_str());
    assert_eq!(y["flow"]["handshake"], true, "{at}");
    assert_eq!(
        y["diagnosis"]["limit"], x["diagnosis"]["limit"],
        "{at}: {}",
        y["diagnosis"]["summary"]
    );
    eprintln!("{at}: live: {}", y["diagnosis"]["summary"]);
}

/// The test's own `--why` names the black hole, in words that say how:
/// `words` is in its summary.
fn the_test_names_it(r: &Run, words: &str) -> Value {
    let doc = r.doc.clone().expect("the test's -J");
    let d = &doc["diagnosis"];
    assert_eq!(d["limit"], "path_mtu", "{d}");
    let summary = d["summary"].as_str().unwrap_or("");
    assert!(
        summary.contains("stalled in retransmission timeouts") && summary.contains(words),
        "{summary}"
    );
    doc
}

/// The near→far segments the black hole dropped, from the lab's note
/// ("… N over 1400 B (no ICMP sent; …").
fn dropped_too_big(notes: &str) -> u64 {
    let at = format!(" over {DROP_OVER} B (no ICMP sent");
    notes
        .lines()
        .find_map(|l| {
            let head = &l[..l.find(&at)?];
            head.rsplit(' ').next()?.parse().ok()
        })
        .unwrap_or_else(|| panic!("no black-hole count in the lab's notes: {notes}"))
}

fn why_json(pcap: &Path) -> Value {
    let o = run(
        plumb_bin(),
        &["why", "-r", pcap.to_str().expect("utf-8 path"), "-J"],
        Duration::from_secs(60),
    );
    assert!(
        o.status.success(),
        "{}: {}",
        pcap.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    json(&o, "plumb why -r -J")
}

/// The test's data connection: the one whose client sent the most new
/// data (the control connection carries a few hundred bytes), or, given
/// `sender`, the one that sender ("ADDR:PORT") sent from.
fn data_connection(v: &Value, sender: Option<&str>) -> Value {
    let all = v["explained"].as_array().expect("explained");
    match sender {
        Some(s) => all.iter().find(|x| x["flow"]["client"] == s),
        None => all
            .iter()
            .max_by_key(|x| x["flow"]["data_bytes"].as_u64().unwrap_or(0)),
    }
    .cloned()
    .unwrap_or_else(|| panic!("no data connection {sender:?} in {v}"))
}

/// tshark's count of `sender`'s ("ADDR:PORT") frames flagged as resent
/// data of any kind, as why_capture.rs's oracle counts them (Wireshark
/// calls a resend that fills a gap soon after it opened out-of-order);
/// `None` when tshark cannot run.
fn tshark_retransmissions(pcap: &Path, sender: &str) -> Option<u64> {
    let o = std::process::Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args([
            "-Y",
            "tcp.analysis.retransmission || tcp.analysis.fast_retransmission \
             || tcp.analysis.spurious_retransmission || tcp.analysis.out_of_order",
            "-T",
            "fields",
            "-E",
            "separator=:",
            "-e",
            "ip.src",
            "-e",
            "tcp.srcport",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    Some(
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| *l == sender)
            .count() as u64,
    )
}

/// The near capture's verdict on the data connection: path_mtu, from the
/// full-size segments resent without an ACK, its numbers in the evidence,
/// and tshark counting the same retransmissions (within 5 % or 2).
fn names_the_black_hole(pcap: &Path) -> Value {
    let x = data_connection(&why_json(pcap), None);
    let f = &x["flow"];
    let d = &x["diagnosis"];
    let at = pcap.display();
    assert_eq!(f["handshake"], true, "{at}: the handshake was captured");
    assert_eq!(f["icmp_too_big"], 0, "{at}: no ICMP came back");
    assert_eq!(d["limit"], "path_mtu", "{at}: {}", d["summary"]);
    let summary = d["summary"].as_str().unwrap_or("");
    assert!(
        summary.contains("1448-byte segments were sent")
            && summary.contains("never acknowledged")
            && summary.contains("a path-MTU black hole"),
        "{at}: {summary}"
    );
    let line = |what: &str| {
        d["evidence"]
            .as_array()
            .and_then(|e| e.iter().find(|l| l["what"] == what))
            .and_then(|l| l["value"].as_f64())
    };
    assert!(
        line("full-size segment sent without an ACK").unwrap_or(0.0) >= 3.0,
        "{at}: {}",
        d["evidence"]
    );
    assert_eq!(line("its payload"), Some(1448.0), "{at}");
    let sender = f["sender"].as_str().unwrap_or("");
    match tshark_retransmissions(pcap, sender) {
        Some(t) => {
            let mine =
                f["retransmits"].as_u64().unwrap_or(0) + f["out_of_order"].as_u64().unwrap_or(0);
            assert!(
                mine.abs_diff(t) <= 2.max(t / 20),
                "{at}: retransmissions {mine} vs tshark's {t}"
            );
        }
        None => plumb_testkit::skip_tool!("tshark is not installed: its analysis not compared"),
    }
    x
}

/// tcp_mtu_probing=0: the sender resends its full-size head segment at
/// each timeout and the transfer stalls. Near the sender the capture names
/// the black hole; beside the receiver no full-size segment ever arrived,
/// so that capture holds the handshake, the 37-byte first write and a
/// silence, until the client stops and its ACK of the server's FIN carries
/// the sequence number past all it had sent: that capture names the black
/// hole too, as seen from past it.
#[test]
fn a_black_hole_stalls_the_transfer_and_the_senders_capture_names_it() {
    if !can_lab() || tcpdump_missing() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("black-hole-stall");
    let r = black_hole_run(&dir, 0);
    // The premise: the black hole dropped full-size segments.
    let dropped = dropped_too_big(&r.notes);
    assert!(dropped > 0, "{}", r.notes);
    let x = names_the_black_hole(&r.near);
    let f = &x["flow"];
    // Stalled: next to nothing new got through.
    assert!(
        f["data_bytes"].as_u64().unwrap_or(u64::MAX) < 100_000,
        "{}",
        f["data_bytes"]
    );
    let summary = x["diagnosis"]["summary"].as_str().unwrap_or("");
    assert!(summary.contains("37-byte ones passed"), "{summary}");
    let far = data_connection(&why_json(&r.far), f["client"].as_str());
    assert_eq!(far["flow"]["handshake"], true);
    assert!(
        far["flow"]["data_bytes"].as_u64().unwrap_or(u64::MAX) <= 37,
        "the far end saw no full-size segment: {}",
        far["flow"]
    );
    names_it_from_past_it(&far);
    assert!(
        far["diagnosis"]["summary"]
            .as_str()
            .is_some_and(|s| s.contains("stopped arriving after 37 B")),
        "{}",
        far["diagnosis"]
    );
    live_agrees(&r.near, &x);
    live_agrees(&r.far, &far);
    // The test never got its results (they are over 1400 B too): it was
    // interrupted, and its --why weighed the client's own state.
    let doc = the_test_names_it(&r, "first 37 bytes were");
    assert_eq!(doc["error"], "interrupted");
    eprintln!(
        "stall: {dropped} dropped; near: {summary}; far: {}; the test's --why: {}",
        far["diagnosis"]["summary"],
        r.doc
            .as_ref()
            .map_or(Value::Null, |d| d["diagnosis"]["summary"].clone())
    );
}

/// tcp_mtu_probing=1: after the full-size timeouts Linux resends the head
/// in smaller segments, which pass, and the transfer goes on. Near the
/// sender the capture names the black hole and the size that got through;
/// beside the receiver, the silence and the smaller size the head came
/// back in.
#[test]
fn a_sender_with_mtu_probing_recovers_and_the_capture_names_the_size_that_passed() {
    if !can_lab() || tcpdump_missing() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("black-hole-probing");
    let r = black_hole_run(&dir, 1);
    let dropped = dropped_too_big(&r.notes);
    assert!(dropped > 0, "{}", r.notes);
    let x = names_the_black_hole(&r.near);
    let f = &x["flow"];
    // Recovered: data flowed after the fallback.
    assert!(
        f["data_bytes"].as_u64().unwrap_or(0) > 1_000_000,
        "{}",
        f["data_bytes"]
    );
    let summary = x["diagnosis"]["summary"].as_str().unwrap_or("").to_string();
    assert!(
        summary.contains("then the sender resent them as") && summary.contains("which passed"),
        "{summary}"
    );
    let passed = x["diagnosis"]["evidence"]
        .as_array()
        .and_then(|e| {
            e.iter()
                .find(|l| l["what"] == "largest segment that passed")
        })
        .and_then(|l| l["value"].as_f64())
        .unwrap_or(0.0);
    assert!((500.0..1400.0).contains(&passed), "{passed}");
    let far = data_connection(&why_json(&r.far), f["client"].as_str());
    // Beside the receiver no full-size copy ever arrived (GRO merges the
    // smaller segments back to 1448 B and more there, so later sizes say
    // nothing): after the silence the head came back alone in a smaller
    // segment, and data from further on arrived before the gap was filled.
    assert_eq!(far["flow"]["handshake"], true);
    names_it_from_past_it(&far);
    assert!(
        far["diagnosis"]["summary"].as_str().is_some_and(
            |s| s.contains("then came back as") && s.contains("where 1448 were agreed")
        ),
        "{}",
        far["diagnosis"]
    );
    live_agrees(&r.near, &x);
    live_agrees(&r.far, &far);
    // The test itself completed (both ends fell back), and its own --why
    // names the black hole from its intervals' stall and the segments the
    // sender shrank while the path MTU stayed 1500 B.
    let doc = the_test_names_it(&r, "segments though the 1500-byte path MTU");
    assert!(doc["error"].is_null(), "{}", doc["error"]);
    // Its intervals end with the test: the wait for the results, which
    // crossed the hole too, is not reported as time with no data.
    let last = doc["intervals"]
        .as_array()
        .and_then(|i| i.last())
        .and_then(|i| i["sum"]["end"].as_f64())
        .unwrap_or(f64::MAX);
    assert!(last < 5.5, "the last interval ends at {last} s");
    // Each capture's rate is the test's, within 10 %.
    let measured = doc["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap_or(0.0);
    for (end, y) in [("near", &x), ("far", &far)] {
        let got = y["flow"]["measured_bps"].as_f64().unwrap_or(0.0);
        assert!(
            (got / measured - 1.0).abs() <= 0.10,
            "{end}: {got} vs the test's {measured}"
        );
    }
    eprintln!(
        "probing: {dropped} dropped; near: {summary}; far: {} ({}); the test's --why: {}",
        far["diagnosis"]["limit"],
        far["diagnosis"]["summary"],
        r.doc
            .as_ref()
            .map_or(Value::Null, |d| d["diagnosis"]["summary"].clone())
    );
}

/// The receiver's capture names the black hole as seen from past it, with
/// no ICMP in it.
fn names_it_from_past_it(far: &Value) {
    let d = &far["diagnosis"];
    assert_eq!(far["flow"]["icmp_too_big"], 0);
    assert_eq!(d["limit"], "path_mtu", "{d}");
    assert!(
        d["summary"]
            .as_str()
            .is_some_and(|s| s.contains("a path-MTU black hole before this capture point")),
        "{d}"
    );
}

/// The lab captures kept as fixtures (crates/capture/tests/lab/README.md):
/// `plumb why -r` names the black hole on the data connection of each,
/// from the receiver's end as from the sender's. No lab needed.
#[test]
fn plumb_why_names_the_black_hole_in_the_kept_lab_captures_from_either_end() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../capture/tests/lab");
    for (name, client) in [
        ("stall-far.pcap", "198.18.0.1:60318"),
        ("stall-near.pcap", "198.18.0.1:60318"),
        ("probing-far.pcap", "198.18.0.1:55714"),
        ("probing-near.pcap", "198.18.0.1:55714"),
    ] {
        let file = dir.join(name);
        assert!(file.is_file(), "{}", file.display());
        let x = data_connection(&why_json(&file), Some(client));
        let d = &x["diagnosis"];
        assert_eq!(d["limit"], "path_mtu", "{name}: {d}");
        let far = d["summary"]
            .as_str()
            .is_some_and(|s| s.contains("before this capture point"));
        assert_eq!(far, name.contains("far"), "{name}: {}", d["summary"]);
    }
}
