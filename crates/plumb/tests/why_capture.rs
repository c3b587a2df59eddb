//! `plumb why --from FILE` / `-r FILE` on packet captures: bad files are
//! one line and exit 2, a capture cut short is explained up to the cut
//! (one line on stderr, exit 0), the filters apply as a capture needs (`-p` only
//! when given, `--pid` refused), and the seed scenario captured with
//! tcpdump in the lab, at either end, names the receive window at the
//! test's own rate. The lab tests need root, /dev/net/tun and tcpdump;
//! elsewhere they are recorded as skipped (`plumb_testkit`).

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
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
    let cases: [(&str, Vec<u8>); 6] = [
        ("empty", Vec::new()),
        // Its file header cut: nothing says it is a capture.
        ("cut-header.pcap", good[..20].to_vec()),
        // Whole, or cut inside its first record: no packet to explain.
        ("header-only.pcap", good[..24].to_vec()),
        ("first-record-cut.pcap", good[..24 + 30].to_vec()),
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

/// Where each record of a little-endian pcap starts (after its 24-byte
/// file header), and its end.
fn pcap_records(pcap: &[u8]) -> Vec<(usize, usize)> {
    assert!(
        pcap.starts_with(&[0xd4, 0xc3, 0xb2, 0xa1]) || pcap.starts_with(&[0x4d, 0x3c, 0xb2, 0xa1]),
        "a little-endian pcap"
    );
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let caplen = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().expect("4 bytes"));
        let end = at + 16 + caplen as usize;
        assert!(end <= pcap.len(), "a whole file");
        out.push((at, end));
        at = end;
    }
    assert_eq!(at, pcap.len(), "a whole file");
    out
}

/// A little-endian pcapng's blocks: start, end and type of each.
fn pcapng_blocks(ng: &[u8]) -> Vec<(usize, usize, u32)> {
    assert!(ng.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a]), "a pcapng");
    let le = |at: usize| u32::from_le_bytes(ng[at..at + 4].try_into().expect("4 bytes"));
    let mut out = Vec::new();
    let mut at = 0;
    while at < ng.len() {
        let end = at + le(at + 4) as usize;
        out.push((at, end, le(at)));
        at = end;
    }
    assert_eq!(at, ng.len(), "a whole file");
    out
}

/// A pcapng of one interface with microsecond timestamps (as editcap and
/// tcpdump write it) as a pcap: the same link type, snaplen and packets.
fn pcapng_to_pcap(ng: &[u8]) -> Vec<u8> {
    let le = |at: usize| u32::from_le_bytes(ng[at..at + 4].try_into().expect("4 bytes"));
    let blocks = pcapng_blocks(ng);
    let idbs: Vec<_> = blocks.iter().filter(|b| b.2 == 1).collect();
    assert_eq!(idbs.len(), 1, "one interface");
    let (idb, idb_end, _) = *idbs[0];
    // No if_tsresol (option 9) but the default's: microseconds.
    let mut opt = idb + 16;
    while opt + 4 <= idb_end - 4 {
        let (code, len) = (
            u16::from_le_bytes([ng[opt], ng[opt + 1]]),
            u16::from_le_bytes([ng[opt + 2], ng[opt + 3]]),
        );
        assert!(code != 9 || ng[opt + 4] == 6, "microseconds");
        if code == 0 {
            break;
        }
        opt += 4 + usize::from(len).div_ceil(4) * 4;
    }
    let mut pcap = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    pcap.extend_from_slice(&[0; 8]);
    pcap.extend_from_slice(&ng[idb + 12..idb + 16]);
    pcap.extend_from_slice(
        &u32::from(u16::from_le_bytes([ng[idb + 8], ng[idb + 9]])).to_le_bytes(),
    );
    for &(at, _, kind) in &blocks {
        if kind != 6 {
            continue;
        }
        let us = (u64::from(le(at + 12)) << 32) | u64::from(le(at + 16));
        let caplen = le(at + 20) as usize;
        pcap.extend_from_slice(&((us / 1_000_000) as u32).to_le_bytes());
        pcap.extend_from_slice(&((us % 1_000_000) as u32).to_le_bytes());
        pcap.extend_from_slice(&ng[at + 20..at + 28]);
        pcap.extend_from_slice(&ng[at + 28..at + 28 + caplen]);
    }
    pcap
}

/// tshark's frame count on `file`, which it reads up to a cut (warning,
/// and exiting 2); `None` without tshark.
fn tshark_frames(file: &Path) -> Option<u64> {
    let o = std::process::Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(["-T", "fields", "-e", "frame.number"])
        .output()
        .ok()?;
    let err = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() && !err.contains("cut short") {
        return None;
    }
    Some(String::from_utf8_lossy(&o.stdout).lines().count() as u64)
}

/// `plumb why -r` on `file`, cut short: exit 0, one line on stderr naming
/// the packet the cut follows (tshark's frame count on the same file, when
/// tshark is here) and the byte, `read.truncated` in `-J` saying the same,
/// and the verdict `limit`. Returns the packet number and the byte.
fn explained_up_to_the_cut(file: &Path, limit: &Value) -> (u64, u64) {
    let p = file.to_str().expect("utf-8 path");
    let o = why(&["-r", p, "-J"]);
    let lines = stderr_lines(&o);
    assert_eq!(o.status.code(), Some(0), "{p}: {lines:?}");
    assert_eq!(lines.len(), 1, "{p}: {lines:?}");
    let v = json(&o, "plumb why -r -J on a cut capture");
    let t = &v["read"]["truncated"];
    let (after, at) = (
        t["after_packet"].as_u64().expect("after_packet"),
        t["at_byte"].as_u64().expect("at_byte"),
    );
    let said = format!(
        "plumb: {p}: cut short after packet {} at byte {}; ",
        group(after),
        group(at)
    );
    assert!(lines[0].starts_with(&said), "{lines:?} vs {said:?}");
    match tshark_frames(file) {
        Some(n) => assert_eq!(after, n, "{p}: packets before the cut, plumb vs tshark"),
        None => plumb_testkit::skip_tool!("tshark is not installed: the cut's packet not compared"),
    }
    let x = &v["explained"][0];
    assert_eq!(
        &x["diagnosis"]["limit"], limit,
        "{p}: {}",
        x["diagnosis"]["summary"]
    );
    // The text says the same, on stdout, with the same one line on stderr.
    let o = why(&["-r", p]);
    assert_eq!(o.status.code(), Some(0), "{p}");
    assert_eq!(stderr_lines(&o), lines);
    (after, at)
}

/// A count with thousands separators, as plumb prints it.
fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The record of `records` that byte `frac` of `len` falls in: the cut goes
/// 7 bytes into it (inside its header, whatever its size). Returns the cut
/// length, the packets before it and the record's start.
fn cut_inside(records: &[(usize, usize)], len: usize, frac: f64) -> (usize, u64, u64) {
    let target = (len as f64 * frac) as usize;
    let i = records
        .iter()
        .position(|&(start, end)| start <= target && target < end)
        .expect("a record there");
    (records[i].0 + 7, i as u64, records[i].0 as u64)
}

/// A lab capture of a black hole (`crates/capture/tests/lab/`,
/// probing-near.pcap, pcapng: 400 packets, the fallback in the first
/// fifth), cut inside a record at half, three quarters and nine tenths of
/// its length, as it is and as pcap, and gzip-compressed and cut: each is
/// read up to the cut, says where in one line, exits 0 and names the whole
/// file's cause.
#[test]
fn a_capture_cut_short_is_explained_up_to_the_cut() {
    let dir = TempDir::new("why-capture-cut");
    let lab =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../capture/tests/lab/probing-near.pcap");
    let ng = std::fs::read(&lab).expect("the lab capture");
    let o = why(&["-r", lab.to_str().expect("utf-8 path"), "-J"]);
    assert!(
        o.status.success() && stderr_lines(&o).is_empty(),
        "{:?}",
        stderr_lines(&o)
    );
    let v = json(&o, "plumb why -r -J");
    assert!(v["read"]["truncated"].is_null(), "whole: {}", v["read"]);
    let limit = v["explained"][0]["diagnosis"]["limit"].clone();
    assert_eq!(limit, "path_mtu", "the premise: the whole file's verdict");
    // Where each packet starts: pcapng's enhanced packet blocks, pcap's
    // records.
    let packets: Vec<(usize, usize)> = pcapng_blocks(&ng)
        .into_iter()
        .filter(|b| b.2 == 6)
        .map(|(s, e, _)| (s, e))
        .collect();
    let pcap = pcapng_to_pcap(&ng);
    let records = pcap_records(&pcap);
    assert_eq!((packets.len(), records.len()), (400, 400), "the premise");
    let whole = dir.join("whole.pcap");
    std::fs::write(&whole, &pcap).expect("write");
    let o = why(&["-r", whole.to_str().expect("utf-8 path"), "-J"]);
    assert_eq!(
        json(&o, "as pcap")["explained"][0]["diagnosis"]["limit"],
        limit
    );
    for frac in [0.5, 0.75, 0.9] {
        for (kind, bytes, starts) in [("pcapng", &ng, &packets), ("pcap", &pcap, &records)] {
            let (len, after, at) = cut_inside(starts, bytes.len(), frac);
            let file = dir.join(format!("cut-{frac}.{kind}"));
            std::fs::write(&file, &bytes[..len]).expect("write");
            let (n, b) = explained_up_to_the_cut(&file, &limit);
            assert_eq!(
                (n, b),
                (after, at),
                "{kind} cut at {len}: the packets before it, its record"
            );
        }
    }
    // gzip -c, cut at three quarters of the compressed stream.
    let gz = std::process::Command::new("gzip")
        .arg("-c")
        .arg(&whole)
        .output()
        .expect("gzip");
    assert!(gz.status.success());
    let file = dir.join("cut.pcap.gz");
    std::fs::write(&file, &gz.stdout[..gz.stdout.len() * 3 / 4]).expect("write");
    let (n, _) = explained_up_to_the_cut(&file, &limit);
    assert!(n > 100 && n < 400, "{n} packets before the gzip cut");
    // plumb report draws it up to the cut, saying so in the same line.
    let page = dir.join("cut.html");
    let p = file.to_str().expect("utf-8 path");
    let o = run(
        plumb_bin(),
        &["report", p, "-o", page.to_str().expect("utf-8 path")],
        Duration::from_secs(60),
    );
    let lines = stderr_lines(&o);
    assert!(o.status.success(), "{lines:?}");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with(&format!("plumb: {p}: cut short after packet {n} at byte ")),
        "{lines:?}"
    );
    assert!(page.is_file());
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

    // The text puts the guessed system's fix first and says it was
    // guessed; the guesses themselves are behind -V.
    let file = dir.join("windows.pcap");
    let file = file.to_str().expect("utf-8 path");
    let o = why(&["-r", file]);
    assert!(o.status.success(), "{:?}", stderr_lines(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("   Fix (Windows 2000/2003/XP, the system guessed): "),
        "{text}"
    );
    assert!(!text.contains("a guess of high confidence"), "{text}");
    let o = why(&["-r", file, "-V"]);
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

/// A lab run captured at both ends: the test's own `-J` document and
/// tcpdump's files beside the client (near: the data's sender) and beside
/// the server (far: its receiver). Beside each file, [`live_of`] names the
/// `-J` of `plumb why --capture` on the same namespace's device, run at
/// the same time.
struct Captured {
    doc: Value,
    near: PathBuf,
    far: PathBuf,
}

/// The `-J` document `plumb why --capture` wrote beside the capture
/// `pcap` in [`captured`].
fn live_of(pcap: &Path) -> PathBuf {
    pcap.with_extension("live.json")
}

/// The lab's port: plumb's server and iperf3's both listen on 5201.
const LAB_PORT: u16 = 5201;

/// Builds the lab with `lab` (its flags), runs `client` (a shell command
/// writing its `-J` to stdout) in the near namespace and `server` in the far
/// one, each beside a tcpdump of its own side and a `plumb why --capture`
/// of the namespace's lab device (its one interface besides lo), filtered
/// to the lab's port and saving what it read. Both captures start before
/// the client and end on a signal once it is done (SIGTERM ends plumb's
/// capture early, and it explains what it read). The far side stops its
/// captures when its server ends, before the near side ends the lab.
/// Both wait 1.5 s or more before stopping tcpdump: libpcap hands packets
/// over a ring block at a time, a block at the latest a second after it
/// opened, and SIGINT loses the block not yet handed over (the end of the
/// transfer).
fn captured(dir: &Path, lab: &[&str], client: &str, server: &str) -> Captured {
    let near = dir.join("near.pcap");
    let far = dir.join("far.pcap");
    let test = dir.join("test.json");
    let plumb = plumb_bin();
    let dump = |f: &Path| {
        let live = live_of(f);
        format!(
            "tcpdump -i any -U -Z root -s 128 -w {} tcp 2>/dev/null & T=$!; \
             DEV=$(ip -o link show | awk -F': ' '$2 != \"lo\" {{print $2; exit}}'); \
             {plumb} why --capture $DEV --for 100 -p {LAB_PORT} -J --write {} > {} 2> {} & L=$!",
            f.display(),
            f.with_extension("live.pcapng").display(),
            live.display(),
            live.with_extension("err").display()
        )
    };
    let stop = "kill -INT $T; kill -TERM $L; wait $T; wait $L";
    let far_exec = format!("{}; {server}; sleep 1.5; {stop}", dump(&far));
    let near_exec = format!(
        "{}; sleep 2; {client} > {}; sleep 2; {stop}; sleep 1",
        dump(&near),
        test.display()
    );
    let mut args = vec!["lab"];
    args.extend_from_slice(lab);
    args.extend(["--far-exec", &far_exec, "--exec", &near_exec]);
    let (out, notes) = run_lab(&args, Duration::from_secs(120));
    assert!(out.status.success(), "plumb lab: {notes}");
    let doc = serde_json::from_slice(&std::fs::read(&test).expect("the test's -J"))
        .expect("the test's -J parses");
    Captured { doc, near, far }
}

/// A plumb client with `flags` against a plumb server across a lab of
/// `rate` and `rtt` (and `lab`'s further flags). The client runs `--why
/// --link RATE -J`: its document carries the test's own diagnosis, weighed
/// against the link the lab really has.
fn plumb_captured(dir: &Path, rate: &str, rtt: &str, lab: &[&str], flags: &str) -> Captured {
    let plumb = plumb_bin();
    let client = format!("{plumb} -c $PLUMB_FAR {flags} --why --link {rate} -J");
    let server = format!("{plumb} -s -1 >/dev/null 2>&1");
    let mut args = vec!["--rate", rate, "--rtt", rtt];
    args.extend_from_slice(lab);
    captured(dir, &args, &client, &server)
}

/// What the capture must say of a scenario's cause.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Verdict {
    /// The test's own limit.
    TheTests,
    /// A sender-side cause (the application or the send buffer), saying
    /// that from one capture point the two cannot be told apart.
    SenderSide,
}

/// The limit `x` (an explained connection) names is the test's, or for
/// `Verdict::SenderSide` one of the sender's causes, saying that the two
/// cannot be told apart.
fn names_the_cause(at: &str, x: &Value, test: &Value, verdict: Verdict) {
    let d = &x["diagnosis"];
    match verdict {
        Verdict::TheTests => {
            assert_eq!(
                d["limit"], test["diagnosis"]["limit"],
                "{at}: {} (the test: {}; continuity {})",
                d["summary"], test["diagnosis"]["summary"], x["flow"]["continuity"]
            );
        }
        Verdict::SenderSide => {
            let limit = d["limit"].as_str().unwrap_or("none");
            assert!(
                ["application", "send_buffer"].contains(&limit),
                "{at}: {limit}: {} (continuity {})",
                d["summary"],
                x["flow"]["continuity"]
            );
            assert!(
                d["summary"]
                    .as_str()
                    .is_some_and(|s| s.contains("cannot be told apart") || s.contains("look alike")),
                "{at}: {}",
                d["summary"]
            );
        }
    }
}

/// `plumb why --capture`'s document beside `pcap` (see [`captured`]): the
/// socket's counts add up (read + dropped = passed; drops are reported,
/// not ruled out: a loaded machine drops), it saw the connection `x` the
/// file explains, handshake included, and names its cause as the file
/// does.
fn live_agrees(pcap: &Path, x: &Value, test: &Value, verdict: Verdict) {
    let path = live_of(pcap);
    let at = path.display().to_string();
    let err = std::fs::read_to_string(path.with_extension("err")).unwrap_or_default();
    let live = live_capture_doc(&path);
    let k = &live["kernel"];
    let same = |y: &&Value| {
        y["flow"]["sender"] == x["flow"]["sender"] && y["flow"]["receiver"] == x["flow"]["receiver"]
    };
    let flows = live["explained"].as_array().cloned().unwrap_or_default();
    let Some(y) = flows.iter().find(same) else {
        panic!(
            "{at}: no {} -> {}: {err}",
            x["flow"]["sender"], x["flow"]["receiver"]
        );
    };
    assert_eq!(y["flow"]["handshake"], true, "{at}: no handshake");
    names_the_cause(&at, y, test, verdict);
    eprintln!(
        "{at}: live: {}, {} packets ({} read, {} dropped by the kernel)",
        y["diagnosis"]["limit"], y["flow"]["packets"], k["read"], k["dropped"]
    );
}

/// Checks `pcap` against the test it captured: the capture's limit is the
/// test's (or, for `Verdict::SenderSide`, one of the sender's causes and
/// it says so), its measured rate within 10 % of the test's, and tshark's
/// analysis agrees with its counts; the live capture beside it names the
/// same cause ([`live_agrees`]). Returns the explained connection.
fn agrees(pcap: &Path, test: &Value, verdict: Verdict, min_packets: u64) -> Value {
    let x = explained_transfer(pcap, min_packets);
    let at = pcap.display();
    names_the_cause(&at.to_string(), &x, test, verdict);
    live_agrees(pcap, &x, test, verdict);
    let measured = num(test, "end.sum_received.bits_per_second");
    let got = x["flow"]["measured_bps"].as_f64().unwrap_or(0.0);
    assert!(
        (got / measured - 1.0).abs() <= 0.10,
        "{at}: {got} vs the test's {measured}"
    );
    match tshark_analysis(pcap) {
        Some(t) => tshark_agrees(pcap, &x["flow"], &t),
        None => plumb_testkit::skip_tool!("tshark is not installed: its analysis not compared"),
    }
    x
}

/// What tshark's analysis counts for one connection.
#[derive(Debug, Default)]
struct TsharkFlow {
    /// Frames, both directions.
    frames: u64,
    /// Per sender ("ADDR:PORT"): payload bytes (`tcp.len`), frames flagged
    /// `tcp.analysis.zero_window`, frames flagged as resent data of any
    /// kind (`retransmission`, `fast_retransmission`,
    /// `spurious_retransmission`, `out_of_order`: a frame may carry several,
    /// it counts once). Wireshark calls a segment below the highest sequence
    /// seen "out-of-order" when it comes within its out-of-order threshold
    /// (the initial RTT) of the highest one; the lab reorders nothing, so
    /// each is a retransmission, which is what a bulk sender's are. Last,
    /// frames flagged `tcp.analysis.window_full`.
    by_sender: HashMap<String, (u64, u64, u64, u64)>,
    /// `tcp.analysis.initial_rtt`, seconds.
    initial_rtt: Option<f64>,
}

/// tshark's per-packet analysis of `pcap` (one run, `-T fields`), per
/// connection keyed by its ends sorted; `None` when tshark cannot run.
fn tshark_analysis(pcap: &Path) -> Option<HashMap<(String, String), TsharkFlow>> {
    let fields = [
        "ip.src",
        "tcp.srcport",
        "ip.dst",
        "tcp.dstport",
        "tcp.len",
        "tcp.analysis.zero_window",
        "tcp.analysis.retransmission",
        "tcp.analysis.fast_retransmission",
        "tcp.analysis.spurious_retransmission",
        "tcp.analysis.out_of_order",
        "tcp.analysis.initial_rtt",
        "tcp.analysis.window_full",
    ];
    let mut cmd = std::process::Command::new("tshark");
    cmd.arg("-r")
        .arg(pcap)
        .args(["-Y", "tcp", "-T", "fields", "-E", "separator=;"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let o = cmd.output().ok().filter(|o| o.status.success())?;
    let mut flows: HashMap<(String, String), TsharkFlow> = HashMap::new();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let f: Vec<&str> = line.split(';').collect();
        assert_eq!(f.len(), fields.len(), "tshark: {line}");
        let (src, dst) = (format!("{}:{}", f[0], f[1]), format!("{}:{}", f[2], f[3]));
        let key = if src <= dst {
            (src.clone(), dst)
        } else {
            (dst, src.clone())
        };
        let flow = flows.entry(key).or_default();
        flow.frames += 1;
        let e = flow.by_sender.entry(src).or_default();
        e.0 += f[4].parse::<u64>().unwrap_or(0);
        e.1 += u64::from(!f[5].is_empty());
        e.2 += u64::from(f[6..10].iter().any(|s| !s.is_empty()));
        e.3 += u64::from(!f[11].is_empty());
        if let Ok(r) = f[10].parse::<f64>() {
            flow.initial_rtt = Some(r);
        }
    }
    Some(flows)
}

/// plumb's `flow` (from `why -r -J`) against tshark's analysis of the same
/// file: frames and payload bytes per direction equal; zero-window
/// episodes equal to the frames flagged zero window; retransmissions and
/// window-full segments within 5 % (or 2); the handshake RTT within 2 %. See
/// crates/capture/tests/README.md for what each side counts.
fn tshark_agrees(pcap: &Path, flow: &Value, t: &HashMap<(String, String), TsharkFlow>) {
    let at = pcap.display();
    let s = |k: &str| flow[k].as_str().unwrap_or("").to_string();
    let n = |k: &str| flow[k].as_u64().unwrap_or(0);
    let (snd, rcv) = (s("sender"), s("receiver"));
    let key = if snd <= rcv {
        (snd.clone(), rcv.clone())
    } else {
        (rcv.clone(), snd.clone())
    };
    let Some(theirs) = t.get(&key) else {
        panic!("{at}: tshark has no connection {key:?}");
    };
    let dir = |who: &str| theirs.by_sender.get(who).copied().unwrap_or_default();
    let (sent, rcvd) = (dir(&snd), dir(&rcv));
    assert_eq!(n("packets"), theirs.frames, "{at}: frames");
    assert_eq!(
        n("payload_bytes"),
        sent.0,
        "{at}: the sender's payload bytes"
    );
    assert_eq!(
        n("reverse_bytes"),
        rcvd.0,
        "{at}: the receiver's payload bytes"
    );
    assert_eq!(
        n("zero_window_episodes"),
        rcvd.1,
        "{at}: zero-window episodes vs frames"
    );
    // Wireshark flags a segment filling a gap as out-of-order or resent by
    // the same clock; plumb counts one that came within an RTT without
    // duplicate ACKs apart, as seen late (the lab reorders nothing, so
    // here each was resent after a loss before the capture point).
    let (mine, theirs_rx) = (n("retransmits") + n("out_of_order"), sent.2);
    assert!(
        mine.abs_diff(theirs_rx) <= 2.max(theirs_rx / 20),
        "{at}: retransmissions {mine} vs tshark's {theirs_rx}"
    );
    // Both flag a data segment ending exactly at the receiver's last ACK
    // plus its window.
    let full = n("window_full");
    assert!(
        full.abs_diff(sent.3) <= 2.max(sent.3 / 20),
        "{at}: window-full segments {full} vs tshark's {}",
        sent.3
    );
    match (flow["handshake_rtt_ms"].as_f64(), theirs.initial_rtt) {
        (Some(mine), Some(t)) => assert!(
            (mine / (t * 1e3) - 1.0).abs() <= 0.02,
            "{at}: handshake RTT {mine} ms vs tshark's {} ms",
            t * 1e3
        ),
        other => panic!("{at}: handshake RTT (plumb, tshark): {other:?}"),
    }
    eprintln!(
        "{at}: tshark agrees: {} frames, {} B sent, {} retransmissions (tshark {theirs_rx}), {full} window-full (tshark {}), RTT {:?} s",
        theirs.frames, sent.0, mine, sent.3, theirs.initial_rtt
    );
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
    let run = plumb_captured(&dir, "1g", "15ms", &[], "--rwin 17520 -t 5");
    let measured = num(&run.doc, "end.sum_received.bits_per_second");
    assert!(measured > 5e6, "the test itself: {measured}");
    assert_eq!(run.doc["diagnosis"]["limit"], "receive_window");
    for pcap in [&run.near, &run.far] {
        let x = agrees(pcap, &run.doc, Verdict::TheTests, 500);
        // The prediction is the window over the RTT, each side's own: the
        // test's is TCP's smoothed RTT, which the receiver's delayed ACKs
        // lift 1-2 ms above the path's 15 ms; far from the sender the
        // capture has the handshake's RTT and the receiver's short
        // data→ACK delay, so its prediction runs up to ~14 % higher.
        let theirs = num(&run.doc, "diagnosis.predicted_bps");
        let predicted = x["diagnosis"]["predicted_bps"].as_f64().unwrap_or(0.0);
        assert!(
            (predicted / theirs - 1.0).abs() <= 0.15,
            "{}: predicted {predicted}, the test {theirs}",
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
    let client = format!("{iperf3} -c $PLUMB_FAR -w 17520 -t 5 -J");
    let server = format!("{iperf3} -s -1 >/dev/null 2>&1");
    let run = captured(&dir, &["--rate", "1g", "--rtt", "15ms"], &client, &server);
    let measured = num(&run.doc, "end.sum_received.bits_per_second");
    assert!(measured > 5e6, "the test itself: {measured}");
    // iperf3's document carries no diagnosis: the cause is the window.
    let window = serde_json::json!({ "diagnosis": { "limit": "receive_window" } });
    for pcap in [&run.near, &run.far] {
        let x = explained_transfer(pcap, 3000);
        let d = &x["diagnosis"];
        assert_eq!(
            d["limit"],
            "receive_window",
            "{}: {}",
            pcap.display(),
            d["summary"]
        );
        live_agrees(pcap, &x, &window, Verdict::TheTests);
        let got = x["flow"]["measured_bps"].as_f64().unwrap_or(0.0);
        assert!(
            (got / measured - 1.0).abs() <= 0.10,
            "{}: {got} vs the test's {measured}",
            pcap.display()
        );
    }
}

/// A 64 KiB send buffer (`--sndbuf 64K`, cubic) at 1 Gbit/s, 15 ms: from
/// either end the capture names a sender-side cause and says that the
/// application and the send buffer cannot be told apart from there.
#[test]
fn a_small_send_buffer_from_a_capture_is_the_sender() {
    if !can_lab() || tcpdump_missing() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("why-capture-sndbuf");
    let run = plumb_captured(&dir, "1g", "15ms", &[], "--sndbuf 64K -C cubic -t 4");
    // The premise: the buffer held the transfer far below the link, and
    // the test itself names it (under cubic the rate varies from run to
    // run, 64-92 Mbit/s here, and at the top of that range the buffer's
    // model no longer explains it: the test is then unexplained).
    let measured = num(&run.doc, "end.sum_received.bits_per_second");
    let limit = run.doc["diagnosis"]["limit"].as_str().unwrap_or("none");
    if !(1e6..300e6).contains(&measured) || limit != "send_buffer" {
        plumb_testkit::skip_premise!(
            "a 64 KiB send buffer carried {measured} bit/s, the test named {limit}"
        );
        return;
    }
    for pcap in [&run.near, &run.far] {
        agrees(pcap, &run.doc, Verdict::SenderSide, 500);
    }
}

/// An application capped at 50 Mbit/s (`-b 50M`) on a 1 Gbit/s, 15 ms
/// path: from either end a sender-side cause, said to be indistinguishable
/// from the send buffer there.
#[test]
fn a_rate_capped_application_from_a_capture_is_the_sender() {
    if !can_lab() || tcpdump_missing() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("why-capture-cap");
    let run = plumb_captured(&dir, "1g", "15ms", &[], "-b 50M -t 4");
    // The premise: the cap held, at 50 Mbit/s within 10 %.
    let measured = num(&run.doc, "end.sum_received.bits_per_second");
    if (measured / 50e6 - 1.0).abs() > 0.10 {
        plumb_testkit::skip_premise!("-b 50M carried {measured} bit/s");
        return;
    }
    assert_eq!(
        run.doc["diagnosis"]["limit"], "application",
        "{}",
        run.doc["diagnosis"]["summary"]
    );
    for pcap in [&run.near, &run.far] {
        agrees(pcap, &run.doc, Verdict::SenderSide, 500);
    }
}

/// Reno across 1 % random loss (1 Gbit/s, 20 ms, seeded): each capture
/// names the loss, as the test does.
#[test]
fn a_lossy_link_from_a_capture_is_the_loss() {
    if !can_lab() || tcpdump_missing() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("why-capture-loss");
    let run = plumb_captured(
        &dir,
        "1g",
        "20ms",
        &["--loss", "1%", "--seed", "7"],
        "-C reno -t 5",
    );
    // The premise: the sender retransmitted.
    let retransmits = num(&run.doc, "end.sum_sent.retransmits");
    if retransmits < 10.0 {
        plumb_testkit::skip_premise!("1 % loss: {retransmits} retransmissions");
        return;
    }
    assert_eq!(
        run.doc["diagnosis"]["limit"], "loss",
        "{}",
        run.doc["diagnosis"]["summary"]
    );
    for pcap in [&run.near, &run.far] {
        agrees(pcap, &run.doc, Verdict::TheTests, 500);
    }
}

/// A full 200 Mbit/s, 15 ms path (plumb's default bbr): the capture, given no link rate,
/// names the link from either end, as the test does with the lab's rate.
#[test]
fn a_full_path_from_a_capture_is_the_link() {
    if !can_lab() || tcpdump_missing() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("why-capture-full");
    let run = plumb_captured(&dir, "200m", "15ms", &[], "-t 4");
    // The premise: the transfer filled the link (its TCP goodput: 1448 of
    // every 1514 + 24 wire bytes, about 188 Mbit/s).
    let measured = num(&run.doc, "end.sum_received.bits_per_second");
    if measured < 0.85 * 188e6 {
        plumb_testkit::skip_premise!("the 200 Mbit/s path carried {measured} bit/s");
        return;
    }
    assert_eq!(
        run.doc["diagnosis"]["limit"], "link",
        "{}",
        run.doc["diagnosis"]["summary"]
    );
    for pcap in [&run.near, &run.far] {
        agrees(pcap, &run.doc, Verdict::TheTests, 500);
    }
}

/// A 100 ms drop-tail queue on a 200 Mbit/s, 15 ms path, filled by cubic
/// with room to (64 MB buffers): for throughput the path is the limit and
/// no window fix is offered, from either end.
#[test]
fn a_deep_queue_from_a_capture_is_the_link_with_no_window_fix() {
    if !can_lab() || tcpdump_missing() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("why-capture-queue");
    let run = plumb_captured(
        &dir,
        "200m",
        "15ms",
        &["--queue", "100ms", "--tcp-buffer-max", "64M"],
        "-C cubic -t 5",
    );
    // The premise: the path was full and its queue stood deep (the mean
    // smoothed RTT at least 50 ms above the 15 ms path).
    let measured = num(&run.doc, "end.sum_received.bits_per_second");
    let rtt_ms = num(&run.doc, "end.streams.0.sender.mean_rtt") / 1e3;
    if measured < 0.85 * 188e6 || rtt_ms < 65.0 {
        plumb_testkit::skip_premise!("the queue: {measured} bit/s, mean RTT {rtt_ms} ms");
        return;
    }
    assert_eq!(
        run.doc["diagnosis"]["limit"], "link",
        "{}",
        run.doc["diagnosis"]["summary"]
    );
    for pcap in [&run.near, &run.far] {
        let x = agrees(pcap, &run.doc, Verdict::TheTests, 500);
        let fixes = x["diagnosis"]["fixes"].to_string();
        assert!(
            !fixes.contains("rmem") && !fixes.contains("wmem"),
            "{}: {fixes}",
            pcap.display()
        );
    }
}

/// `--capture IFACE`: a plumb transfer on loopback, started once the packet
/// socket reads, is explained as a file's connection is; `--write` saves
/// what was read and `--from` reads it back; `--report` writes the capture
/// page with the flow's verdict; an unknown interface, and tcpdump's
/// `any`, is one line and exit 2.
#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one live capture scenario: the refused interfaces, the transfer under capture, then the verdict, the pcapng and the page it writes, checked in order"
)]
fn a_live_capture_of_loopback_explains_its_transfer() {
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
    });
    if !root {
        plumb_testkit::skip_lab!("--capture needs CAP_NET_RAW (root)");
        return;
    }
    for iface in ["nosuch0", "any"] {
        let bad = why(&["--capture", iface, "--for", "1"]);
        assert_eq!(bad.status.code(), Some(2), "{iface}");
        assert_eq!(stderr_lines(&bad).len(), 1, "{:?}", stderr_lines(&bad));
    }
    let port = common::port();
    let p = port.to_string();
    let dir = std::env::temp_dir().join(format!("plumb-livecap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let saved = dir.join("lo.pcapng");
    let saved_s = saved.display().to_string();
    let page = dir.join("lo.html");
    let page_s = page.display().to_string();
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
        "--report",
        &page_s,
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
    // The socket's counts: every packet the filter passed was read or is
    // counted as dropped, and the file's packets are the ones read.
    let k = &v["kernel"];
    let (received, read, dropped) = (
        k["received"].as_u64().expect("kernel.received"),
        k["read"].as_u64().expect("kernel.read"),
        k["dropped"].as_u64().expect("kernel.dropped"),
    );
    assert_eq!(read + dropped, received, "{k}");
    let back = why(&["-r", &saved_s, "-p", &p, "-J"]);
    assert!(
        back.status.success(),
        "{}",
        String::from_utf8_lossy(&back.stderr)
    );
    let w: Value = serde_json::from_slice(&back.stdout).expect("-J of the saved file");
    assert_eq!(w["read"]["records"].as_u64(), Some(read), "{w:#}");
    assert!(w.get("kernel").is_none(), "a file has no socket counts");
    assert_eq!(
        w["explained"].as_array().map(Vec::len),
        Some(flows.len()),
        "{w:#}"
    );
    // The page, drawn from what was read, shows each flow's verdict, the
    // busiest's as the live run gave it, under the interface's name.
    let html = std::fs::read_to_string(&page).expect("the page was written");
    let shown = page_verdicts(&html);
    assert_eq!(shown.len(), flows.len(), "{shown:?}");
    let summary = flows[0]["diagnosis"]["summary"]
        .as_str()
        .expect("a summary");
    assert!(shown.iter().any(|v| v == summary), "{summary}: {shown:?}");
    assert!(html.contains("interface lo"));
    assert!(html.contains("data-chart=\"tseq\""), "the flow's graph");
    // Without --write the page comes from a scratch file, removed after;
    // a port nothing uses gives a page with no verdict and exit 1.
    let scratch = || {
        std::fs::read_dir(std::env::temp_dir())
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| {
                        e.file_name()
                            .to_string_lossy()
                            .starts_with("plumb-capture-")
                    })
                    .count()
            })
            .unwrap_or(0)
    };
    let before = scratch();
    let idle = common::port().to_string();
    let empty = dir.join("idle.html");
    let o = why(&[
        "--capture",
        "lo",
        "-p",
        &idle,
        "--for",
        "0.3",
        "--report",
        empty.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(o.status.code(), Some(1), "{:?}", stderr_lines(&o));
    let html = std::fs::read_to_string(&empty).expect("the page was written");
    assert!(html.contains("interface lo") && page_verdicts(&html).is_empty());
    assert_eq!(scratch(), before, "the scratch capture was left behind");
    let _ = std::fs::remove_dir_all(&dir);
}
