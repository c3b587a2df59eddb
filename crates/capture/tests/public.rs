//! Wireshark as the oracle on captures no one on this project made: the
//! files in `tests/public/` (where each comes from, its licence and what
//! it shows: `tests/public/README.md`). Per direction of every connection,
//! the reader's frames and wire bytes must equal tshark's `-z conv,tcp`;
//! its zero-window episodes must equal the runs of frames tshark flags
//! `tcp.analysis.zero_window`; its retransmissions must be within 5 % (or
//! 2) of the frames tshark flags as a retransmission of any kind, its
//! window-full segments within 5 % (or 2) of `tcp.analysis.window_full`;
//! its handshake RTT within 2 % of `tcp.analysis.initial_rtt`. Capture
//! duplicates are counted as `editcap -D 5` removes them, and a file with
//! any is compared with tshark's reading of editcap's output, which holds
//! each packet once, as plumb counts it. Where the two differ for a reason
//! the README gives, the test asserts that difference (the `Known` and
//! `KNOWN_COPIES` tables), so a change on either side shows. And each file's
//! connections that carried data are explained (what `plumb why -r FILE`
//! prints): a verdict, or a sentence saying why there is none.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use plumb_capture::{explain_all, Analysis, CaptureFilters};
use plumb_record::capture::Limits;
use plumb_record::class::FlowClass;
use plumb_record::diagnosis::Limit;

/// A direction: "sender -> receiver", both as `SocketAddr` prints them.
type Key = (String, String);

/// What tshark says of one direction.
#[derive(Debug, Default, Clone, PartialEq)]
struct Theirs {
    frames: u64,
    wire_bytes: u64,
    /// Frames with data flagged retransmission, fast or spurious
    /// retransmission.
    retransmissions: u64,
    /// SYNs (and SYN-ACKs) flagged so.
    syn_retransmissions: u64,
    /// FINs without data flagged so: plumb counts retransmitted data.
    fin_retransmissions: u64,
    /// Frames flagged out-of-order (a segment below the highest sequence
    /// sent, arriving soon after it).
    out_of_order: u64,
    /// Runs of frames flagged `zero_window`, ended by a frame of the same
    /// side advertising an open window.
    zero_window_episodes: u64,
    /// Frames flagged `window_full`.
    window_full: u64,
}

/// What plumb says of one direction (summed over connections that share
/// the direction's addresses, as tshark's per-frame fields are).
#[derive(Debug, Default, Clone, PartialEq)]
struct Mine {
    frames: u64,
    wire_bytes: u64,
    retransmissions: u64,
    syn_retransmissions: u64,
    zero_window_episodes: u64,
    window_full: u64,
}

/// A difference the README explains, asserted as it stands.
struct Known {
    file: &'static str,
    /// The direction, as "sender -> receiver".
    direction: &'static str,
    /// plumb's retransmissions; tshark's retransmissions and out-of-order
    /// segments.
    retransmissions: (u64, u64, u64),
}

/// The public captures and the differences their README explains.
const FILES: &[&str] = &[
    "iso-download.pcap.gz",
    "206_example_b.pcap.gz",
    "ssh-dups.pcap",
    "reassembly.pcap",
    "gap-data-missing.pcapng",
    "irc-starttls.pcap",
    "openjdk-zeek.org.pcap",
    "ml-dsa-44-cert.pcap",
    "ipv6-http-atomic-frag.pcap",
    "vlan-collisions.pcap",
];

const KNOWN: &[Known] = &[Known {
    file: "206_example_b.pcap.gz",
    direction: "65.54.95.206:80 -> 192.168.72.14:3254",
    retransmissions: (108, 56, 52),
}];

/// Files where plumb's capture duplicates are not editcap's, the README
/// says why: (file, plumb's, editcap -D 5's).
const KNOWN_COPIES: &[(&str, u64, u64)] = &[
    // An IPv6 segment without timestamps sent again 58 ms (14 handshake
    // RTTs) later: byte for byte the same, but a retransmission, which
    // tshark flags as one too.
    ("gap-data-missing.pcapng", 0, 1),
    // The same connection's 14 packets recorded again 50 ms and 100 ms later
    // under VLAN tag 42 and tags 10,20: editcap compares whole frames, which
    // the tags make differ; plumb reads the same IPv4 ID, checksum and TCP
    // header in all 28 (the SYN-ACK's two have ID 0, but a SYN-ACK is
    // resent only after its timeout, a second at the least).
    ("vlan-collisions.pcap", 28, 0),
];

fn public(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/public")
        .join(name)
}

fn have_tshark() -> bool {
    Command::new("tshark")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `editcap -D 5 FILE OUT`: the packets it removed as duplicates (the same
/// length and MD5 as one of the 4 frames before), and its output.
fn editcap_dedup(file: &Path, out: &Path) -> u64 {
    let o = Command::new("editcap")
        .arg("-D")
        .arg("5")
        .arg(file)
        .arg(out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "editcap on {}: {text}", file.display());
    // "377 packets seen, 280 packets skipped with duplicate window of 5 packets."
    let skipped = text
        .split(", ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok());
    skipped.unwrap_or_else(|| panic!("editcap's line: {text}"))
}

fn have_editcap() -> bool {
    Command::new("editcap")
        .arg("-h")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn tshark(args: &[&str], file: &Path) -> String {
    let out = Command::new("tshark")
        .arg("-n")
        .arg("-r")
        .arg(file)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tshark {args:?} on {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// An address and port as `SocketAddr` prints them.
fn socket(addr: &str, port: &str) -> String {
    if addr.contains(':') {
        format!("[{addr}]:{port}")
    } else {
        format!("{addr}:{port}")
    }
}

/// The first of a comma-separated field (tshark lists every occurrence:
/// an address inside an ICMP quote or a tunnel comes after the outer one).
fn first(field: &str) -> &str {
    field.split(',').next().unwrap_or("")
}

/// Per direction from tshark's per-frame fields, and the initial RTTs per
/// connection (sorted ends), in ns.
fn tshark_frames(file: &Path) -> (HashMap<Key, Theirs>, HashMap<Key, Vec<u64>>) {
    const FIELDS: [&str; 21] = [
        "ip.src",
        "ipv6.src",
        "tcp.srcport",
        "ip.dst",
        "ipv6.dst",
        "tcp.dstport",
        "frame.len",
        "tcp.len",
        "tcp.analysis.retransmission",
        "tcp.analysis.fast_retransmission",
        "tcp.analysis.spurious_retransmission",
        "tcp.analysis.out_of_order",
        "tcp.analysis.zero_window",
        "tcp.analysis.window_full",
        "tcp.window_size_value",
        "tcp.flags.syn",
        "tcp.flags.fin",
        "tcp.flags.reset",
        "tcp.flags.ack",
        "tcp.analysis.initial_rtt",
        "tcp.stream",
    ];
    let mut args = vec!["-Y", "tcp", "-T", "fields", "-E", "separator=;"];
    for f in &FIELDS {
        args.extend(["-e", f]);
    }
    let text = tshark(&args, file);
    let mut dirs: HashMap<Key, Theirs> = HashMap::new();
    let mut open: HashMap<Key, bool> = HashMap::new();
    let mut rtts: BTreeMap<String, (Key, u64)> = BTreeMap::new();
    for line in text.lines() {
        let v: Vec<&str> = line.split(';').collect();
        assert_eq!(v.len(), FIELDS.len(), "{line}");
        let f = |name: &str| v[FIELDS.iter().position(|n| *n == name).unwrap()];
        let set = |name: &str| !f(name).is_empty();
        let either = |a: &str, b: &str| if f(a).is_empty() { f(b) } else { f(a) };
        let key = (
            socket(first(either("ip.src", "ipv6.src")), first(f("tcp.srcport"))),
            socket(first(either("ip.dst", "ipv6.dst")), first(f("tcp.dstport"))),
        );
        let d = dirs.entry(key.clone()).or_default();
        d.frames += 1;
        d.wire_bytes += f("frame.len").parse::<u64>().unwrap();
        let (syn, fin) = (f("tcp.flags.syn") == "1", f("tcp.flags.fin") == "1");
        let (rst, ack) = (f("tcp.flags.reset") == "1", f("tcp.flags.ack") == "1");
        let resent = set("tcp.analysis.retransmission")
            || set("tcp.analysis.fast_retransmission")
            || set("tcp.analysis.spurious_retransmission");
        if resent && first(f("tcp.len")) == "0" {
            assert!(
                syn || fin,
                "{}: a resent frame without data, neither SYN nor FIN: {line}",
                file.display()
            );
            if syn {
                d.syn_retransmissions += 1;
            } else {
                d.fin_retransmissions += 1;
            }
        } else if resent {
            d.retransmissions += 1;
        }
        d.out_of_order += u64::from(set("tcp.analysis.out_of_order"));
        d.window_full += u64::from(set("tcp.analysis.window_full"));
        // Wireshark flags each zero-window frame; plumb counts episodes,
        // from the first zero window to the next open one from that side.
        let o = open.entry(key.clone()).or_default();
        if set("tcp.analysis.zero_window") {
            d.zero_window_episodes += u64::from(!*o);
            *o = true;
        } else if ack && !syn && !rst && f("tcp.window_size_value") != "0" {
            *o = false;
        }
        if let Ok(rtt) = f("tcp.analysis.initial_rtt").parse::<f64>() {
            let ends = sorted(&key.0, &key.1);
            let ns = (rtt * 1e9).round() as u64;
            rtts.insert(f("tcp.stream").to_string(), (ends, ns));
        }
    }
    let mut by_ends: HashMap<Key, Vec<u64>> = HashMap::new();
    for (ends, rtt) in rtts.into_values() {
        by_ends.entry(ends).or_default().push(rtt);
    }
    (dirs, by_ends)
}

fn sorted(a: &str, b: &str) -> Key {
    if a <= b {
        (a.to_string(), b.to_string())
    } else {
        (b.to_string(), a.to_string())
    }
}

/// `-z conv,tcp`: per direction, frames and bytes as printed (exact under
/// 10 kB, else in kB/MB with three significant digits).
fn tshark_conv(file: &Path) -> HashMap<Key, (u64, f64, String)> {
    let text = tshark(&["-q", "-z", "conv,tcp"], file);
    let split = |end: &str| {
        let (addr, port) = end.rsplit_once(':').unwrap();
        socket(addr, port)
    };
    let mut out: HashMap<Key, (u64, f64, String)> = HashMap::new();
    for line in text.lines().filter(|l| l.contains("<->")) {
        let t: Vec<&str> = line.split_whitespace().collect();
        let (a, b) = (split(t[0]), split(t[2]));
        let num = |s: &str| s.replace(',', "").parse::<f64>().unwrap();
        // A <-> B | B→A frames bytes unit | A→B frames bytes unit: a 4-tuple
        // reused makes rows more, summed here as plumb sums its connections.
        for (key, at) in [((b.clone(), a.clone()), 3), ((a, b), 6)] {
            let e = out.entry(key).or_insert((0, 0.0, String::new()));
            let bytes = num(t[at + 1]) * scale(t[at + 2]);
            e.0 += num(t[at]) as u64;
            e.1 += bytes;
            if e.2.is_empty() || t[at + 2] != "bytes" {
                e.2 = t[at + 2].to_string();
            }
        }
    }
    out
}

fn scale(unit: &str) -> f64 {
    match unit {
        "bytes" => 1.0,
        "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        u => panic!("unit {u}"),
    }
}

/// Bytes agree when exact, or within the last digit tshark printed.
fn bytes_agree(mine: u64, shown: f64, unit: &str) -> bool {
    if unit == "bytes" {
        mine as f64 == shown
    } else {
        (mine as f64 - shown).abs() <= scale(unit)
    }
}

fn mine(a: &Analysis) -> HashMap<Key, Mine> {
    let mut out: HashMap<Key, Mine> = HashMap::new();
    for c in &a.connections {
        for (me, peer) in [(&c.client, &c.server), (&c.server, &c.client)] {
            if me.packets == 0 {
                continue;
            }
            let d = out
                .entry((me.sender.clone(), peer.sender.clone()))
                .or_default();
            d.frames += me.packets;
            d.wire_bytes += me.wire_bytes;
            d.retransmissions += me.retransmissions.total;
            d.syn_retransmissions += me.syn.as_ref().map_or(0, |s| s.retransmitted);
            d.zero_window_episodes += me.zero_window.episodes;
            d.window_full += me.flight.window_full;
        }
    }
    out
}

/// A direction's receiver when its peer sent nothing: the connection's
/// other end.
fn fill_receivers(a: &mut Analysis) {
    for c in &mut a.connections {
        if c.server.packets == 0 {
            if let Some(s) = c.server_addr() {
                c.server.sender = s.to_string();
            }
        }
        if c.client.packets == 0 {
            if let Some(s) = c.client_addr() {
                c.client.sender = s.to_string();
            }
        }
    }
}

fn within(mine: u64, theirs: u64) -> bool {
    mine.abs_diff(theirs) <= 2.max(theirs * 5 / 100)
}

/// The file tshark is compared with: the capture itself, or, where plumb
/// found the duplicates `editcap -D 5` removes, editcap's output (written
/// into `scratch`).
fn oracle_file(name: &str, a: &Analysis, scratch: &Path) -> PathBuf {
    let file = public(name);
    let out = scratch.join(format!("{name}.dedup.pcapng"));
    let theirs = editcap_dedup(&file, &out);
    let mine = a.duplicates.packets;
    let per_connection: u64 = a
        .connections
        .iter()
        .map(|c| c.client.duplicates + c.server.duplicates)
        .sum();
    assert_eq!(per_connection, mine, "{name}: connections' duplicates");
    eprintln!("{name}: duplicates: plumb {mine}, editcap -D 5 {theirs}");
    match KNOWN_COPIES.iter().find(|k| k.0 == name) {
        Some(k) => assert_eq!(
            (mine, theirs),
            (k.1, k.2),
            "{name}: the README's duplicates"
        ),
        None => assert_eq!(mine, theirs, "{name}: duplicates, plumb vs editcap -D 5"),
    }
    if mine > 0 && mine == theirs {
        out
    } else {
        file
    }
}

/// Compares one file; returns the directions and handshake RTTs compared.
fn compare(name: &str, scratch: &Path) -> (usize, usize) {
    let mut rtts_compared = 0;
    let mut a = plumb_capture::analyze_file(&public(name), Limits::default()).unwrap();
    assert!(!a.connections.is_empty(), "{name}: no connection");
    assert_eq!(a.read.truncated, None, "{name}: whole");
    let file = oracle_file(name, &a, scratch);
    fill_receivers(&mut a);
    let mine = mine(&a);
    let (theirs, rtts) = tshark_frames(&file);
    if a.duplicates.packets > 0 && file == public(name) {
        // Copies editcap cannot remove (they differ in a VLAN tag): tshark
        // counts every frame, plumb each packet once, so only the
        // directions compare; the copies themselves are KNOWN_COPIES'.
        assert_eq!(
            mine.keys().collect::<std::collections::BTreeSet<_>>(),
            theirs.keys().collect(),
            "{name}: directions"
        );
        return (mine.len(), 0);
    }
    let conv = tshark_conv(&file);
    assert_eq!(
        mine.keys().collect::<std::collections::BTreeSet<_>>(),
        theirs.keys().collect(),
        "{name}: directions"
    );
    for (key, m) in &mine {
        let t = &theirs[key];
        let dir = format!("{} -> {}", key.0, key.1);
        eprintln!("{name} {dir}: mine {m:?}, tshark's {t:?}");
        assert_eq!(m.frames, t.frames, "{name} {dir}: frames");
        assert_eq!(m.wire_bytes, t.wire_bytes, "{name} {dir}: frame.len sum");
        let (cf, cb, unit) = &conv[key];
        assert_eq!(m.frames, *cf, "{name} {dir}: conv frames");
        assert!(
            bytes_agree(m.wire_bytes, *cb, unit),
            "{name} {dir}: conv bytes {} vs {cb} {unit}",
            m.wire_bytes
        );
        assert_eq!(
            m.syn_retransmissions, t.syn_retransmissions,
            "{name} {dir}: SYNs resent"
        );
        assert_eq!(
            m.zero_window_episodes, t.zero_window_episodes,
            "{name} {dir}: zero-window episodes"
        );
        assert!(
            within(m.window_full, t.window_full),
            "{name} {dir}: window-full segments {} vs tshark's {}",
            m.window_full,
            t.window_full
        );
        match KNOWN.iter().find(|k| k.file == name && k.direction == dir) {
            Some(k) => assert_eq!(
                (m.retransmissions, t.retransmissions, t.out_of_order),
                k.retransmissions,
                "{name} {dir}: the retransmissions the README explains"
            ),
            None => assert!(
                within(m.retransmissions, t.retransmissions),
                "{name} {dir}: retransmissions {} vs tshark's {}",
                m.retransmissions,
                t.retransmissions
            ),
        }
    }
    for c in &a.connections {
        let (Some(cl), Some(sv)) = (c.client_addr(), c.server_addr()) else {
            continue;
        };
        let ends = sorted(&cl.to_string(), &sv.to_string());
        let theirs = rtts.get(&ends).cloned().unwrap_or_default();
        match c.handshake.rtt_ns {
            // Wireshark leaves `initial_rtt` out when it is zero (a capture
            // whose timestamps are all equal).
            Some(0) if theirs.is_empty() => {}
            Some(rtt) => {
                let close = theirs
                    .iter()
                    .any(|&t| (rtt as f64 - t as f64).abs() <= 0.02 * (t as f64).max(1.0));
                assert!(
                    close,
                    "{name} {ends:?}: RTT {rtt} ns vs tshark's {theirs:?}"
                );
                rtts_compared += 1;
            }
            // Without the whole handshake Wireshark measures from the
            // connection's first frame; plumb gives no RTT.
            None => assert!(
                theirs.is_empty() || !c.handshake.complete,
                "{name} {ends:?}: no RTT, tshark's {theirs:?}"
            ),
        }
    }
    (mine.len(), rtts_compared)
}

/// A directory of editcap's outputs, removed when dropped (a failed
/// assertion too).
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        let d = std::env::temp_dir().join(format!("plumb-public-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn public_captures_agree_with_tshark() {
    if !have_tshark() || !have_editcap() {
        plumb_testkit::skip_tool!(
            "tshark or editcap is not installed (scripts/test installs them)"
        );
        return;
    }
    let scratch = Scratch::new();
    let (mut directions, mut rtts) = (0, 0);
    for name in FILES {
        let (d, r) = compare(name, &scratch.0);
        directions += d;
        rtts += r;
    }
    // Every known difference was met by a direction compared.
    for k in KNOWN {
        assert!(FILES.contains(&k.file), "{}: not a fixture", k.file);
    }
    assert!(directions >= 2 * FILES.len(), "{directions} directions");
    assert!(rtts >= FILES.len() / 2, "{rtts} handshake RTTs compared");
    eprintln!("{directions} directions and {rtts} handshake RTTs agree with tshark");
}

/// Every connection that carried data gets a verdict or a stated reason
/// for none; a flow whose data passed at one instant is not bulk and is
/// given no rate; the one file whose cause the capture shows plainly (an
/// unscaled 64 kB window at 73 ms, with zero windows) names it.
#[test]
fn public_captures_are_explained() {
    let mut instant = 0;
    for name in FILES {
        let a = plumb_capture::analyze_file(&public(name), Limits::default()).unwrap();
        let with_data = a
            .connections
            .iter()
            .filter(|c| c.client.payload_bytes + c.server.payload_bytes > 0)
            .count();
        let x = explain_all(&a, &CaptureFilters::default(), None, None);
        assert_eq!(x.len(), with_data, "{name}: connections with data");
        for e in &x {
            let d = &e.diagnosis;
            assert!(!d.summary.is_empty() && !e.notes.is_empty(), "{name}");
            if e.flow.duration_s == 0.0 {
                // Data at one instant has no rate: it is not bulk, and its
                // answer is its class's, with no rate in it.
                instant += 1;
                assert_ne!(e.class, FlowClass::Bulk, "{name}: {}", d.summary);
                assert!(
                    d.limit.is_none() && !d.summary.contains("bit/s"),
                    "{name}: {}",
                    d.summary
                );
            } else {
                assert!(e.flow.measured_bps > 0.0, "{name}: {}", d.summary);
            }
            assert!(!d.summary.contains(" 0 bit/s"), "{name}: {}", d.summary);
        }
    }
    // ml-dsa-44-cert's timestamps are all equal: at least its flow.
    assert!(instant >= 1, "no flow at one instant");
    let a =
        plumb_capture::analyze_file(&public("206_example_b.pcap.gz"), Limits::default()).unwrap();
    let x = explain_all(&a, &CaptureFilters::default(), None, None);
    let f = &x[0].flow;
    assert_eq!(f.window_bytes.map(|w| w <= 65_535), Some(true), "{f:?}");
    assert!(f.zero_window_episodes >= 2, "{f:?}");
    assert_eq!(
        x[0].diagnosis.limit,
        Some(Limit::ReceiveWindow),
        "{}",
        x[0].diagnosis.summary
    );
}
