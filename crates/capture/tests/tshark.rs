//! Wireshark as the oracle: tcpdump records real TCP transfers on the
//! loopback (127.0.0.1 only: two transfers of its own and a 1 s iperf3
//! test), and the reader's per-connection, per-direction frames, wire bytes
//! and payload bytes must equal tshark's (`-z conv,tcp` and per-packet
//! `frame.len`/`tcp.len`), its duplicate ACKs no more than tshark's (which
//! counts some with nothing outstanding), its handshake RTT within 2 % of
//! `tcp.analysis.initial_rtt`. tcpdump writes nanosecond timestamps and a
//! 128-byte snaplen, so the payload lengths come from the IP headers. The
//! same capture as tshark rewrites it in pcapng, and gzip-compressed, reads
//! the same. On a capture built in code, tshark's expert analysis flags the
//! same retransmissions and duplicate ACKs.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use plumb_capture::Connection;
use plumb_record::capture::Limits;

mod common;

/// A process killed when the test ends, passed or failed.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        // SIGINT first: tcpdump flushes its file and exits.
        let _ = Command::new("kill")
            .arg("-INT")
            .arg(self.0.id().to_string())
            .status();
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(3) {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A scratch directory removed at the end.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A listener on a free port of 14 000-14 499 on 127.0.0.1 (a range no other
/// test binary uses).
fn listener() -> TcpListener {
    let start = 14_000 + (std::process::id() % 500) as u16;
    (0..500)
        .map(|i| 14_000 + (start - 14_000 + i) % 500)
        .find_map(|p| TcpListener::bind(("127.0.0.1", p)).ok())
        .expect("a free port in 14000-14499")
}

/// Starts tcpdump on `lo` for `ports`; waits until it listens. Immediate
/// mode: without it the kernel hands packets over in blocks, and a short
/// capture stopped early can hold none.
fn tcpdump(file: &Path, ports: [u16; 2], dir: &Path) -> Option<Killed> {
    let err = dir.join("tcpdump.err");
    let child = Command::new("tcpdump")
        .args([
            "-i",
            "lo",
            "-n",
            "-U",
            "--immediate-mode",
            "-s",
            "128",
            "-B",
            "16384",
        ])
        .args(["--time-stamp-precision=nano", "-w"])
        .arg(file)
        .arg(format!(
            "(tcp port {} or tcp port {}) and host 127.0.0.1",
            ports[0], ports[1]
        ))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).ok()?)
        .spawn()
        .ok()?;
    let mut guard = Killed(child);
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        let text = std::fs::read_to_string(&err).unwrap_or_default();
        if text.contains("listening on") {
            return Some(guard);
        }
        if let Ok(Some(_)) = guard.0.try_wait() {
            eprintln!("tcpdump exited: {text}");
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Two transfers: 400 kB up and 20 kB back; 8 kB up and 120 kB back.
fn transfers(l: &TcpListener) {
    let port = l.local_addr().unwrap().port();
    for (up, down) in [(400_000usize, 20_000usize), (8_000, 120_000)] {
        let server = {
            let l = l.try_clone().unwrap();
            std::thread::spawn(move || {
                let (mut s, _) = l.accept().unwrap();
                s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                let mut buf = vec![0u8; up];
                s.read_exact(&mut buf).unwrap();
                s.write_all(&vec![7u8; down]).unwrap();
            })
        };
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        c.write_all(&vec![1u8; up]).unwrap();
        let mut buf = vec![0u8; down];
        c.read_exact(&mut buf).unwrap();
        server.join().unwrap();
        drop(c);
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A 1 s iperf3 test against a local `iperf3 -s -1`, both on 127.0.0.1.
/// False if iperf3 cannot run.
fn iperf3(port: u16) -> bool {
    let port = port.to_string();
    let Ok(server) = Command::new("iperf3")
        .args(["-s", "-1", "-B", "127.0.0.1", "-p", &port])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    let _server = Killed(server);
    // Wait until it listens, so that no client is refused (a refused one
    // is retried below, and shows in the capture as a connection more).
    let t = Instant::now();
    while !listening(&port) && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    for _ in 0..50 {
        let ran = Command::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &port, "-t", "1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if ran.is_ok_and(|s| s.success()) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// A socket listens on `port` of IPv4 (/proc/net/tcp: local address as
/// hex `ADDR:PORT`, state 0A).
fn listening(port: &str) -> bool {
    let Ok(port) = port.parse::<u16>() else {
        return false;
    };
    let local = format!(":{port:04X} ");
    std::fs::read_to_string("/proc/net/tcp").is_ok_and(|t| {
        t.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && format!("{} ", f[1]).ends_with(&local) && f[3] == "0A"
        })
    })
}

fn tshark(args: &[&str], file: &Path) -> String {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tshark {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Per direction (sender, receiver): frames, wire bytes, payload bytes,
/// duplicate ACKs; per connection (sorted ends): the initial RTT in ns.
type PerDir = HashMap<(String, String), (u64, u64, u64, u64)>;

fn tshark_fields(file: &Path) -> (PerDir, HashMap<(String, String), u64>) {
    let text = tshark(
        &["-Y", "tcp", "-T", "fields", "-E", "separator=;"]
            .into_iter()
            .chain([
                "-e",
                "ip.src",
                "-e",
                "tcp.srcport",
                "-e",
                "ip.dst",
                "-e",
                "tcp.dstport",
            ])
            .chain([
                "-e",
                "frame.len",
                "-e",
                "tcp.len",
                "-e",
                "tcp.analysis.initial_rtt",
                "-e",
                "tcp.analysis.duplicate_ack",
            ])
            .collect::<Vec<_>>(),
        file,
    );
    let (mut dirs, mut rtts) = (PerDir::new(), HashMap::new());
    for line in text.lines() {
        let f: Vec<&str> = line.split(';').collect();
        let (src, dst) = (format!("{}:{}", f[0], f[1]), format!("{}:{}", f[2], f[3]));
        let e = dirs.entry((src.clone(), dst.clone())).or_default();
        e.0 += 1;
        e.1 += f[4].parse::<u64>().unwrap();
        e.2 += f[5].parse::<u64>().unwrap();
        e.3 += u64::from(!f[7].is_empty());
        if let Ok(rtt) = f[6].parse::<f64>() {
            rtts.insert(ends(&src, &dst), (rtt * 1e9).round() as u64);
        }
    }
    (dirs, rtts)
}

fn ends(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_string(), b.to_string())
    } else {
        (b.to_string(), a.to_string())
    }
}

/// `-z conv,tcp`: per direction, frames and bytes (bytes as printed: exact
/// under 10 kB, else in kB/MB with three significant digits).
fn tshark_conv(file: &Path) -> HashMap<(String, String), (u64, f64, String)> {
    let text = tshark(&["-q", "-z", "conv,tcp"], file);
    let mut out = HashMap::new();
    for line in text.lines().filter(|l| l.contains("<->")) {
        let t: Vec<&str> = line.split_whitespace().collect();
        let (a, b) = (t[0].to_string(), t[2].to_string());
        // A <-> B | B→A ("<-") frames bytes unit | A→B ("->") frames bytes unit.
        let num = |s: &str| s.replace(',', "").parse::<f64>().unwrap();
        out.insert(
            (b.clone(), a.clone()),
            (num(t[3]) as u64, num(t[4]), t[5].to_string()),
        );
        out.insert((a, b), (num(t[6]) as u64, num(t[7]), t[8].to_string()));
    }
    out
}

fn bytes_agree(mine: u64, shown: f64, unit: &str) -> bool {
    let scale = match unit {
        "bytes" => return mine as f64 == shown,
        "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        _ => return false,
    };
    // Three significant digits: within one unit of the last digit shown.
    (mine as f64 / scale - shown).abs() <= 1.0
}

fn check(c: &Connection, dirs: &PerDir, conv: &HashMap<(String, String), (u64, f64, String)>) {
    for (me, peer) in [(&c.client, &c.server), (&c.server, &c.client)] {
        let key = (me.sender.clone(), peer.sender.clone());
        if me.packets == 0 {
            continue; // a SYN nobody answered: the totals count it
        }
        let (frames, wire, payload, dupacks) = dirs[&key];
        assert_eq!(me.packets, frames, "{key:?} frames");
        // RFC 5681 counts a duplicate ACK only while data is outstanding;
        // Wireshark counts one after everything was acknowledged too (the
        // D-SACK after a spurious retransmission): its count bounds ours.
        assert!(
            me.duplicate_acks <= dupacks,
            "{key:?} duplicate ACKs: {} vs {dupacks}",
            me.duplicate_acks
        );
        assert_eq!(me.wire_bytes, wire, "{key:?} frame.len sum");
        assert_eq!(me.payload_bytes, payload, "{key:?} tcp.len sum");
        let (cf, cb, unit) = &conv[&key];
        assert_eq!(me.packets, *cf, "{key:?} conv frames");
        assert!(
            bytes_agree(me.wire_bytes, *cb, unit),
            "{key:?}: {} vs {cb} {unit}",
            me.wire_bytes
        );
    }
}

#[test]
fn reader_agrees_with_tshark_on_a_loopback_capture() {
    for tool in ["tcpdump", "tshark"] {
        if !have(tool) {
            plumb_testkit::skip_tool!("{tool} is not installed (scripts/test installs it)");
            return;
        }
    }
    let dir = std::env::temp_dir().join(format!("plumb-capture-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _scratch = Scratch(dir.clone());
    let file = dir.join("lo.pcap");
    let l = listener();
    let port = l.local_addr().unwrap().port();
    // A second free port, for iperf3.
    let iperf_port = listener().local_addr().unwrap().port();
    let Some(dump) = tcpdump(&file, [port, iperf_port], &dir) else {
        plumb_testkit::skip_tool!("tcpdump cannot capture on lo here");
        return;
    };
    transfers(&l);
    let with_iperf3 = have("iperf3") && iperf3(iperf_port);
    std::thread::sleep(Duration::from_millis(300));
    drop(dump);
    if !with_iperf3 {
        plumb_testkit::skip_tool!(
            "iperf3 cannot run (scripts/test installs it): its transfer is left out"
        );
    }
    let expected = if with_iperf3 { 4 } else { 2 };

    let a = plumb_capture::analyze_file(&file, Limits::default()).unwrap();
    let (dirs, rtts) = tshark_fields(&file);
    let conv = tshark_conv(&file);
    // A refused iperf3 client (tried before the server listened) makes one
    // connection more: tshark sees it too.
    assert!(a.connections.len() >= expected, "{:?}", a.decode);
    assert_eq!(2 * a.connections.len(), conv.len());
    let frames: u64 = dirs.values().map(|d| d.0).sum();
    assert_eq!(
        a.connections.iter().map(|c| c.packets()).sum::<u64>(),
        frames
    );
    let mut rtt_checked = 0;
    for c in &a.connections {
        check(c, &dirs, &conv);
        let theirs = rtts.get(&ends(&c.client.sender, &c.server.sender));
        match (c.handshake.rtt_ns, theirs) {
            (Some(mine), Some(&t)) => {
                let err = (mine as f64 - t as f64).abs() / (t as f64).max(1.0);
                assert!(err <= 0.02, "RTT {mine} ns vs tshark's {t} ns");
                eprintln!("handshake RTT: {mine} ns, tshark's {t} ns");
                rtt_checked += 1;
            }
            (None, None) => {}
            // The capture dropped the SYN or SYN-ACK: Wireshark measures from
            // the connection's first frame instead.
            (None, Some(_)) if !c.handshake.complete => {}
            (m, t) => panic!("handshake RTT: mine {m:?}, tshark's {t:?}"),
        }
    }
    // The same capture rewritten by tshark as pcapng, and gzip-compressed,
    // reads the same.
    let ng = dir.join("lo.pcapng");
    tshark(&["-F", "pcapng", "-w", ng.to_str().unwrap()], &file);
    let b = plumb_capture::analyze_file(&ng, Limits::default()).unwrap();
    assert_eq!(b.read.format, "pcapng");
    assert_eq!(b.connections, a.connections);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&std::fs::read(&file).unwrap()).unwrap();
    let z = plumb_capture::analyze(&gz.finish().unwrap()[..], Limits::default()).unwrap();
    assert_eq!(z.connections, a.connections);
    // tcpdump may drop packets on a loaded machine, but not the handshakes
    // of both connections.
    assert!(rtt_checked >= 1, "no handshake in the capture");
    eprintln!(
        "tshark agreement: {} connections, {} RTTs, {} records",
        a.connections.len(),
        rtt_checked,
        a.read.records
    );
}

/// The retransmission scenario of tests/tcp.rs, written to a file: tshark's
/// expert analysis flags the same segments as retransmissions (fast and
/// spurious among them) and the same duplicate ACKs.
#[test]
fn retransmissions_and_duplicate_acks_agree_with_tshark() {
    if !have("tshark") {
        plumb_testkit::skip_tool!("tshark is not installed (scripts/test installs it)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("plumb-capture-rx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _scratch = Scratch(dir.clone());
    let file = dir.join("rx.pcap");
    std::fs::write(&file, common::pcap_of(&common::retransmissions())).unwrap();
    let a = plumb_capture::analyze_file(&file, Limits::default()).unwrap();
    let text = tshark(
        &["-T", "fields", "-E", "separator=;", "-e", "frame.number"]
            .into_iter()
            .chain([
                "-e",
                "tcp.analysis.retransmission",
                "-e",
                "tcp.analysis.fast_retransmission",
            ])
            .chain([
                "-e",
                "tcp.analysis.spurious_retransmission",
                "-e",
                "tcp.analysis.duplicate_ack",
            ])
            .collect::<Vec<_>>(),
        &file,
    );
    // Frames flagged: retransmission, fast, spurious, duplicate ACK.
    let mut flagged = [0u64; 4];
    for line in text.lines() {
        let f: Vec<&str> = line.split(';').collect();
        for (n, field) in flagged.iter_mut().zip(&f[1..]) {
            *n += u64::from(!field.is_empty());
        }
    }
    let c = &a.connections[0];
    let r = &c.client.retransmissions;
    let mine = [r.total, r.fast, r.spurious, c.server.duplicate_acks];
    assert_eq!(
        mine, flagged,
        "mine vs tshark's: retransmissions, fast, spurious, dup ACKs"
    );
    assert_eq!(flagged, [3, 1, 1, 3]);
}
