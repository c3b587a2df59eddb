//! `plumb why --from FILE` / `-r FILE` on packet captures: bad files are
//! one line and exit 2, the filters apply as a capture needs (`-p` only
//! when given, `--pid` refused), and the seed scenario captured with
//! tcpdump in the lab, at either end, names the receive window at the
//! test's own rate. The lab tests need root, /dev/net/tun and tcpdump;
//! elsewhere they are recorded as skipped (`plumb_testkit`).

mod common;

use std::path::Path;
use std::process::Output;
use std::sync::Mutex;
use std::time::Duration;

use common::*;
use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// An IPv4 TCP segment, raw IP (no link header): checksums are left zero,
/// which the reader does not check.
#[allow(clippy::too_many_arguments)]
fn segment(
    src: ([u8; 4], u16),
    dst: ([u8; 4], u16),
    seq: u32,
    ack: u32,
    flags: u8,
    window: u16,
    options: &[u8],
    len: usize,
) -> Vec<u8> {
    let tcp_len = 20 + options.len();
    let total = 20 + tcp_len + len;
    let mut p = vec![0x45, 0];
    p.extend_from_slice(&(total as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]);
    p.extend_from_slice(&src.0);
    p.extend_from_slice(&dst.0);
    p.extend_from_slice(&src.1.to_be_bytes());
    p.extend_from_slice(&dst.1.to_be_bytes());
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(&ack.to_be_bytes());
    p.push(((tcp_len / 4) as u8) << 4);
    p.push(flags);
    p.extend_from_slice(&window.to_be_bytes());
    p.extend_from_slice(&[0, 0, 0, 0]);
    p.extend_from_slice(options);
    p.resize(total, 0xab);
    p
}

/// What one end's SYN (or SYN-ACK) carries: its TTL as it arrived, its
/// window field and its option bytes.
struct Hello<'a> {
    ttl: u8,
    window: u16,
    options: &'a [u8],
}

/// The MSS option alone (1460 B).
const MSS_ONLY: [u8; 4] = [2, 4, 0x05, 0xb4];

/// A pcap (raw IP, µs) of a 1 s bulk transfer from 10.0.0.1:40000 to
/// 10.0.0.2:`port`, 17,520 B windows without scaling, 15 ms RTT.
fn transfer(port: u16) -> Vec<u8> {
    let syn = Hello {
        ttl: 64,
        window: 64240,
        options: &MSS_ONLY,
    };
    let syn_ack = Hello {
        ttl: 64,
        window: 17520,
        options: &MSS_ONLY,
    };
    transfer_between(port, &syn, &syn_ack)
}

/// [`transfer`] with the client's SYN and the server's SYN-ACK given. The
/// receiver's window stays 17,520 B unscaled: the SYN-ACK must not offer
/// window scaling.
fn transfer_between(port: u16, syn: &Hello, syn_ack: &Hello) -> Vec<u8> {
    const SYN: u8 = 0x02;
    const ACK: u8 = 0x10;
    let (c, s) = (([10, 0, 0, 1], 40000), ([10, 0, 0, 2], port));
    let ms = 1_000u64; // µs
    let hello = |h: &Hello, from, to, seq, ack, flags| {
        let mut p = segment(from, to, seq, ack, flags, h.window, h.options, 0);
        p[8] = h.ttl;
        p
    };
    let mut pkts: Vec<(u64, Vec<u8>)> = vec![
        (0, hello(syn, c, s, 1000, 0, SYN)),
        (15 * ms, hello(syn_ack, s, c, 5000, 1001, SYN | ACK)),
        (15 * ms + 20, segment(c, s, 1001, 5001, ACK, 502, &[], 0)),
    ];
    let mut next = 1001u32;
    for round in 0..66u64 {
        let t = 16 * ms + round * 15 * ms;
        for k in 0..12u64 {
            pkts.push((t + k * 10, segment(c, s, next, 5001, ACK, 502, &[], 1460)));
            next += 1460;
            if k % 2 == 1 {
                pkts.push((
                    t + 15 * ms - 1,
                    segment(s, c, 5001, next, ACK, 17520, &[], 0),
                ));
            }
        }
    }
    pkts.sort_by_key(|(t, _)| *t);
    let mut f = 0xa1b2_c3d4u32.to_le_bytes().to_vec();
    f.extend_from_slice(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&101u32.to_le_bytes());
    for (t, p) in pkts {
        let ts = 1_767_225_600_000_000 + t;
        f.extend_from_slice(&((ts / 1_000_000) as u32).to_le_bytes());
        f.extend_from_slice(&((ts % 1_000_000) as u32).to_le_bytes());
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(&p);
    }
    f
}

fn why(args: &[&str]) -> Output {
    let mut a = vec!["why"];
    a.extend_from_slice(args);
    run(plumb_bin(), &a, Duration::from_secs(60))
}

fn stderr_lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bad_files_are_one_line_and_exit_2() {
    let dir = TempDir::new("why-capture-bad");
    let good = transfer(873);
    let cases: [(&str, Vec<u8>); 5] = [
        ("empty", Vec::new()),
        ("truncated.pcap", good[..good.len() - 7].to_vec()),
        ("header-only.pcap", good[..24].to_vec()),
        // A gzip stream whose content is no capture.
        (
            "notpcap.gz",
            vec![
                0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            ],
        ),
        (
            "binary",
            vec![0xff, 0xfe, 0x00, 0x80, 0x81, 0x9f, 0x00, 0xc3],
        ),
    ];
    for (name, bytes) in cases {
        let path = dir.join(name);
        std::fs::write(&path, &bytes).expect("write");
        for flag in ["-r", "--from"] {
            let o = why(&[flag, path.to_str().expect("utf-8 path")]);
            assert_eq!(o.status.code(), Some(2), "{name}: {:?}", stderr_lines(&o));
            let lines = stderr_lines(&o);
            assert_eq!(lines.len(), 1, "{name}: {lines:?}");
            assert!(lines[0].starts_with("plumb: "), "{name}: {lines:?}");
            assert!(o.stdout.is_empty(), "{name}");
        }
    }
}

#[test]
fn the_port_default_does_not_filter_a_capture_and_pid_is_refused() {
    let dir = TempDir::new("why-capture-filters");
    let path = dir.join("rsync.pcap");
    std::fs::write(&path, transfer(873)).expect("write");
    let p = path.to_str().expect("utf-8 path");
    // The premise: the file holds one transfer, on port 873.
    let o = why(&["-r", p, "-J"]);
    assert!(o.status.success(), "{:?}", stderr_lines(&o));
    let v = json(&o, "plumb why -r -J");
    assert_eq!(v["explained"].as_array().map(Vec::len), Some(1));
    assert_eq!(v["explained"][0]["flow"]["receiver"], "10.0.0.2:873");
    assert_eq!(v["explained"][0]["diagnosis"]["limit"], "receive_window");
    // No -p: not filtered by 5201.
    let o = why(&["-r", p]);
    assert!(o.status.success(), "{:?}", stderr_lines(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("10.0.0.1:40000 -> 10.0.0.2:873"), "{text}");
    assert!(text.contains("Limited by the receive window"), "{text}");
    // Given, -p filters: either end matches, another port does not.
    for (port, found) in [("873", true), ("40000", true), ("5201", false)] {
        let o = why(&["-r", p, "-p", port]);
        assert_eq!(
            o.status.success(),
            found,
            "-p {port}: {:?}",
            stderr_lines(&o)
        );
    }
    for (peer, found) in [
        ("10.0.0.1", true),
        ("10.0.0.2:873", true),
        ("10.0.0.3", false),
    ] {
        let o = why(&["-r", p, "--peer", peer]);
        assert_eq!(o.status.success(), found, "--peer {peer}");
    }
    let o = why(&["-r", p, "--conn", "10.0.0.2:873,10.0.0.1:40000"]);
    assert!(o.status.success(), "{:?}", stderr_lines(&o));
    let o = why(&["-r", p, "--pid", "1"]);
    assert_eq!(o.status.code(), Some(2));
    let lines = stderr_lines(&o);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("a capture has no processes"), "{lines:?}");
}

/// Linux's SYN: MSS, SACK-permitted, timestamps, NOP, window scale 7.
const LINUX_SYN: [u8; 20] = [
    2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7,
];
/// Windows XP / 2003's SYN-ACK: MSS, NOP, NOP, SACK-permitted, no scaling.
const WINDOWS_LEGACY_SYN_ACK: [u8; 8] = [2, 4, 0x05, 0xb4, 1, 1, 4, 2];
/// A layout no stack in the table writes: timestamps first.
const ODD_SYN_ACK: [u8; 16] = [8, 10, 0, 0, 0, 9, 0, 0, 0, 1, 2, 4, 0x05, 0xb4, 4, 2];

/// `plumb why -r -J` on `pcap` (checked to explain one receive-window
/// transfer): its one explanation.
fn explained_window(dir: &TempDir, name: &str, pcap: &[u8]) -> Value {
    let path = dir.join(name);
    std::fs::write(&path, pcap).expect("write");
    let o = why(&["-r", path.to_str().expect("utf-8 path"), "-J"]);
    assert!(o.status.success(), "{name}: {:?}", stderr_lines(&o));
    let v = json(&o, "plumb why -r -J");
    assert_eq!(v["explained"].as_array().map(Vec::len), Some(1), "{name}");
    let x = v["explained"][0].clone();
    assert_eq!(x["diagnosis"]["limit"], "receive_window", "{name}");
    x
}

fn fix_order(x: &Value) -> Vec<String> {
    x["diagnosis"]["fixes"]
        .as_array()
        .expect("fixes")
        .iter()
        .map(|f| f["os"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn each_end_is_guessed_from_its_syn_and_a_confident_guess_orders_the_fixes() {
    let dir = TempDir::new("why-capture-os");
    let linux = Hello {
        ttl: 62,
        window: 64240,
        options: &LINUX_SYN,
    };
    let windows = Hello {
        ttl: 126,
        window: 17520,
        options: &WINDOWS_LEGACY_SYN_ACK,
    };
    let odd = Hello {
        ttl: 126,
        window: 17520,
        options: &ODD_SYN_ACK,
    };
    let known = explained_window(
        &dir,
        "windows.pcap",
        &transfer_between(445, &linux, &windows),
    );
    let unknown = explained_window(&dir, "odd.pcap", &transfer_between(445, &linux, &odd));
    // The premise: without a confident guess the rules' own order does
    // not start with the legacy Windows fix, and holds it.
    let plain = fix_order(&unknown);
    assert_ne!(
        plain.first().map(String::as_str),
        Some("windows-legacy"),
        "{plain:?}"
    );
    assert!(plain.iter().any(|o| o == "windows-legacy"), "{plain:?}");

    // Both ends guessed, sender first, each labelled a guess.
    let g = &known["os_guesses"];
    assert_eq!(g.as_array().map(Vec::len), Some(2), "{g}");
    assert_eq!(g[0]["host"], "10.0.0.1:40000");
    assert_eq!(g[0]["role"], "sender");
    assert_eq!(g[0]["os"], "Linux");
    assert_eq!(g[0]["fix_os"], "linux");
    assert_eq!(g[1]["host"], "10.0.0.2:445");
    assert_eq!(g[1]["role"], "receiver");
    assert_eq!(g[1]["from_syn_ack"], true);
    assert_eq!(g[1]["os"], "Windows XP / Server 2003 or older");
    assert_eq!(g[1]["fix_os"], "windows-legacy");
    for e in g.as_array().expect("guesses") {
        assert!(e["note"].as_str().unwrap_or("").contains("a guess"), "{e}");
    }
    // The window is the receiver's: its system's fix comes first, the
    // others keep their order.
    assert_eq!(known["fixes_first_for"], "windows-legacy");
    let order = fix_order(&known);
    assert_eq!(order[0], "windows-legacy", "{order:?}");
    let rest: Vec<&String> = plain.iter().filter(|o| *o != "windows-legacy").collect();
    assert_eq!(order[1..].iter().collect::<Vec<_>>(), rest);
    let notes: Vec<&str> = known["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        notes.iter().any(|n| n
            .starts_with("10.0.0.2:445 (receiver): Windows XP / Server 2003 or older, a guess of")),
        "{notes:?}"
    );

    // An unknown fingerprint: guessed, but nothing confident, and the
    // fixes stay as the rules ordered them.
    let u = &unknown["os_guesses"][1];
    assert_eq!(u["role"], "receiver");
    assert_eq!(u["os"], "unknown");
    assert_eq!(u["confidence"], "low");
    assert!(u["fix_os"].is_null(), "{u}");
    assert!(unknown["fixes_first_for"].is_null());
    let text = unknown["notes"].to_string();
    assert!(
        text.contains("10.0.0.2:445 (receiver): operating system unknown, no confident guess"),
        "{text}"
    );

    // The text names the guesses too.
    let o = why(&["-r", dir.join("windows.pcap").to_str().expect("utf-8 path")]);
    assert!(o.status.success(), "{:?}", stderr_lines(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(
            "10.0.0.1:40000 (sender): Linux, a guess of high confidence from its SYN: initial TTL 64"
        ),
        "{text}"
    );
    // What misleads a guess is said once.
    assert_eq!(
        text.matches("each operating system above is a guess")
            .count(),
        1,
        "{text}"
    );
}

/// The verdicts a capture page shows, in page order, unescaped.
fn page_verdicts(html: &str) -> Vec<String> {
    html.split("data-slot=\"verdict\"><p class=\"summary\">")
        .skip(1)
        .filter_map(|v| v.split("</p>").next())
        .map(|v| {
            v.replace("&#39;", "'")
                .replace("&quot;", "\"")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&")
        })
        .collect()
}

#[test]
fn a_capture_page_shows_each_flows_verdict() {
    let dir = TempDir::new("why-capture-report");
    let pcap = dir.join("backup.pcap");
    std::fs::write(&pcap, transfer(873)).expect("write");
    let p = pcap.to_str().expect("utf-8 path");
    // The premise: plumb why names the receive window for this transfer.
    let o = why(&["-r", p, "-J"]);
    assert!(o.status.success(), "{:?}", stderr_lines(&o));
    let v = json(&o, "plumb why -r -J");
    let summary = v["explained"][0]["diagnosis"]["summary"]
        .as_str()
        .expect("a summary")
        .to_string();
    assert!(
        summary.starts_with("Limited by the receive window"),
        "{summary}"
    );

    // plumb why --from CAPTURE --report: the verdict printed, and the page.
    let page = dir.join("why.html");
    let o = why(&["--from", p, "--report", page.to_str().expect("utf-8 path")]);
    assert!(o.status.success(), "{:?}", stderr_lines(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("Limited by the receive window"), "{text}");
    assert!(
        stderr_lines(&o)
            .iter()
            .any(|l| l.contains("report written to")),
        "{:?}",
        stderr_lines(&o)
    );
    let html = std::fs::read_to_string(&page).expect("the page was written");
    assert!(html.contains("backup.pcap"));
    assert!(html.contains("data-chart=\"tseq\""), "the flow's graph");
    assert_eq!(page_verdicts(&html), std::slice::from_ref(&summary));
    // Self-contained: nothing to load (the SVG namespace is a name, not a
    // request).
    assert!(!html.contains("src=") && !html.contains("href="));
    assert!(!html.contains("url(") && !html.contains("@import"));

    // plumb report CAPTURE gives the page the same verdict.
    let out = dir.join("report.html");
    let o = run(
        plumb_bin(),
        &["report", p, "-o", out.to_str().expect("utf-8 path")],
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{:?}", stderr_lines(&o));
    let html = std::fs::read_to_string(&out).expect("the page was written");
    assert_eq!(page_verdicts(&html), std::slice::from_ref(&summary));

    // A filter that leaves the flow out leaves its verdict off the page,
    // and the exit says nothing was explained.
    let o = why(&[
        "-r",
        p,
        "-p",
        "5201",
        "--report",
        page.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(o.status.code(), Some(1), "{:?}", stderr_lines(&o));
    let html = std::fs::read_to_string(&page).expect("the page was written");
    assert!(page_verdicts(&html).is_empty());
    assert!(
        html.contains("data-chart=\"tseq\""),
        "the flow is still drawn"
    );
}

/// The explained connection carrying the data in `pcap`, after checking
/// the premise: the capture holds the connection's handshake and at least
/// `min_packets` of its segments.
fn explained_transfer(pcap: &Path, min_packets: u64) -> Value {
    let o = why(&["-r", pcap.to_str().expect("utf-8 path"), "-J"]);
    assert!(
        o.status.success(),
        "{}: {:?}",
        pcap.display(),
        stderr_lines(&o)
    );
    let v = json(&o, "plumb why -r -J");
    let x = v["explained"][0].clone();
    assert_eq!(
        x["flow"]["handshake"],
        true,
        "{}: no handshake",
        pcap.display()
    );
    let packets = x["flow"]["packets"].as_u64().unwrap_or(0);
    assert!(
        packets >= min_packets,
        "{}: {packets} packets",
        pcap.display()
    );
    x
}

/// Runs `client` (a shell command) in the near namespace and `server` in
/// the far one, each beside a tcpdump of its own side, and returns the two
/// captures' paths. The far side stops its tcpdump when its server ends,
/// before the near side ends the lab.
fn captured(dir: &Path, client: &str, server: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let near = dir.join("near.pcap");
    let far = dir.join("far.pcap");
    let dump = |f: &Path| {
        format!(
            "tcpdump -i any -U -Z root -s 128 -w {} tcp 2>/dev/null & T=$!",
            f.display()
        )
    };
    let far_exec = format!("{}; {server}; sleep 0.5; kill -INT $T; wait $T", dump(&far));
    let near_exec = format!(
        "{}; sleep 2; {client}; sleep 2; kill -INT $T; wait $T; sleep 1",
        dump(&near)
    );
    let out = run(
        plumb_bin(),
        &[
            "lab",
            "--rate",
            "1g",
            "--rtt",
            "15ms",
            "--far-exec",
            &far_exec,
            "--exec",
            &near_exec,
        ],
        Duration::from_secs(120),
    );
    let left = leftovers();
    assert!(left.is_empty(), "the lab left {left:?} behind");
    assert!(
        out.status.success(),
        "plumb lab: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (near, far)
}

/// tshark's frames, both directions, for the conversation between `a` and
/// `b` (`-z conv,tcp`), when tshark runs.
fn tshark_frames(pcap: &Path, a: &str, b: &str) -> Option<u64> {
    let o = std::process::Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args(["-q", "-z", "conv,tcp"])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8_lossy(&o.stdout);
    let num = |s: &str| s.replace(',', "").parse::<u64>().ok();
    text.lines().find_map(|l| {
        let t: Vec<&str> = l.split_whitespace().collect();
        let ends = (*t.first()?, *t.get(2)?);
        if ends != (a, b) && ends != (b, a) {
            return None;
        }
        Some(num(t.get(3)?)? + num(t.get(6)?)?)
    })
}

fn tcpdump_missing() -> bool {
    let found = std::process::Command::new("tcpdump")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        plumb_testkit::skip_tool!("tcpdump is not installed");
    }
    !found
}

/// The seed scenario, `plumb -c … --rwin 17520`, captured at both ends:
/// each capture names the receive window, and its measured rate is within
/// 10 % of the test's own.
#[test]
fn the_seed_scenario_from_a_capture_at_either_end() {
    if !can_lab() || tcpdump_missing() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("why-capture-seed");
    let test = dir.join("test.json");
    let plumb = plumb_bin();
    let client = format!(
        "{plumb} -c $PLUMB_FAR --rwin 17520 -t 5 -J > {}",
        test.display()
    );
    let server = format!("{plumb} -s -1 >/dev/null 2>&1");
    let (near, far) = captured(&dir, &client, &server);
    let doc: Value = serde_json::from_slice(&std::fs::read(&test).expect("the test's -J"))
        .expect("the test's -J parses");
    let measured = num(&doc, "end.sum_received.bits_per_second");
    assert!(measured > 5e6, "the test itself: {measured}");
    for pcap in [&near, &far] {
        let x = explained_transfer(pcap, 3000);
        let d = &x["diagnosis"];
        assert_eq!(
            d["limit"],
            "receive_window",
            "{}: {}",
            pcap.display(),
            d["summary"]
        );
        let got = x["flow"]["measured_bps"].as_f64().unwrap_or(0.0);
        assert!(
            (got / measured - 1.0).abs() <= 0.10,
            "{}: {got} vs the test's {measured}",
            pcap.display()
        );
        // Wireshark counts the same segments for this connection.
        let (snd, rcv) = (
            x["flow"]["sender"].as_str().unwrap_or(""),
            x["flow"]["receiver"].as_str().unwrap_or(""),
        );
        match tshark_frames(pcap, snd, rcv) {
            Some(frames) => assert_eq!(
                Some(frames),
                x["flow"]["packets"].as_u64(),
                "{}: tshark's frames",
                pcap.display()
            ),
            None => plumb_testkit::skip_tool!("tshark is not installed: frames not compared"),
        }
        let predicted = d["predicted_bps"].as_f64().unwrap_or(0.0);
        assert!(
            (predicted / 9.344e6 - 1.0).abs() <= 0.10,
            "{}: predicted {predicted}",
            pcap.display()
        );
    }
}

/// The seed's own `iperf3 -c … -w 17520`: Linux grants about 21.7 kB for
/// it, and the capture names the receive window at the test's rate.
#[test]
fn iperf3_with_a_17520_byte_window_from_a_capture() {
    if !can_lab() || tcpdump_missing() {
        return;
    }
    let iperf3 = iperf3_bin();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("why-capture-iperf3");
    let test = dir.join("test.json");
    let client = format!(
        "{iperf3} -c $PLUMB_FAR -w 17520 -t 5 -J > {}",
        test.display()
    );
    let server = format!("{iperf3} -s -1 >/dev/null 2>&1");
    let (near, far) = captured(&dir, &client, &server);
    let doc: Value = serde_json::from_slice(&std::fs::read(&test).expect("the test's -J"))
        .expect("the test's -J parses");
    let measured = num(&doc, "end.sum_received.bits_per_second");
    assert!(measured > 5e6, "the test itself: {measured}");
    for pcap in [&near, &far] {
        let x = explained_transfer(pcap, 3000);
        let d = &x["diagnosis"];
        assert_eq!(
            d["limit"],
            "receive_window",
            "{}: {}",
            pcap.display(),
            d["summary"]
        );
        let got = x["flow"]["measured_bps"].as_f64().unwrap_or(0.0);
        assert!(
            (got / measured - 1.0).abs() <= 0.10,
            "{}: {got} vs the test's {measured}",
            pcap.display()
        );
    }
}

/// `--capture IFACE`: a plumb transfer on loopback, started once the packet
/// socket reads, is explained as a file's connection is; `--write` saves
/// what was read and `--from` reads it back; an unknown interface is one
/// line and exit 2.
#[test]
fn a_live_capture_of_loopback_explains_its_transfer() {
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
    });
    if !root {
        plumb_testkit::skip_lab!("--capture needs CAP_NET_RAW (root)");
        return;
    }
    let bad = why(&["--capture", "nosuch0", "--for", "1"]);
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(stderr_lines(&bad).len(), 1, "{:?}", stderr_lines(&bad));
    let port = common::port();
    let p = port.to_string();
    let dir = std::env::temp_dir().join(format!("plumb-livecap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let saved = dir.join("lo.pcapng");
    let saved_s = saved.display().to_string();
    let mut srv = std::process::Command::new(plumb_bin())
        .args(["-s", "-1", "-p", &p])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("server");
    // The capture starts first; the client waits a second for it.
    let client = std::thread::spawn({
        let p = p.clone();
        move || {
            std::thread::sleep(Duration::from_secs(1));
            run(
                plumb_bin(),
                &["-c", "127.0.0.1", "-p", &p, "-t", "1", "-b", "20M"],
                Duration::from_secs(20),
            )
        }
    });
    let out = why(&[
        "--capture",
        "lo",
        "-p",
        &p,
        "--for",
        "4",
        "--write",
        &saved_s,
        "-J",
    ]);
    let c = client.join().expect("client thread");
    let _ = srv.kill();
    let _ = srv.wait();
    assert!(
        c.status.success(),
        "the client failed: {}",
        String::from_utf8_lossy(&c.stderr)
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("-J");
    let flows = v["explained"].as_array().cloned().unwrap_or_default();
    assert!(!flows.is_empty(), "{v:#}");
    let back = why(&["-r", &saved_s, "-p", &p, "-J"]);
    assert!(
        back.status.success(),
        "{}",
        String::from_utf8_lossy(&back.stderr)
    );
    let w: Value = serde_json::from_slice(&back.stdout).expect("-J of the saved file");
    assert_eq!(
        w["explained"].as_array().map(Vec::len),
        Some(flows.len()),
        "{w:#}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
