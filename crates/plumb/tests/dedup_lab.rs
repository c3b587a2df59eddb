//! A `tcpdump -i any` capture on a router sees every packet it forwards
//! twice: arriving on one interface, leaving on the other. The test builds
//! that router: three network namespaces, A — R — B, joined by two veth
//! pairs (198.18.10.0/24 and 198.18.11.0/24, forwarding on in R only), with
//! a 50 Mbit/s tbf on R's interface towards B, the path's bottleneck, whose
//! queue holds a packet's second sighting back behind the packets queued
//! ahead of it. In R, one tcpdump records `any` and one the interface
//! towards A, where every packet of the transfer passes once (the data on
//! its way in, the ACKs on their way out), while `plumb -c … -t 3` in A
//! sends to `plumb -s -1` in B.
//!
//! The scenario is checked first: tshark counts nearly twice the frames in
//! the `any` file; `editcap -D 5` removes none of them (the Linux cooked
//! header names another interface and direction, and R lowered the TTL and
//! so rewrote the IP header checksum); compared from the source address on
//! (`-I 32`: the 20-byte cooked v2 header and the IP header up to its
//! addresses ignored), it removes fewer within 4 frames (`-D 5`) than
//! within 200 ms (`-w 0.2`), so copies come back from behind the queue.
//! Then `plumb why -r` on the `any` file counts as duplicates exactly the
//! frames it holds beyond the one-interface file's, and within 0.1 % (or 2)
//! of what editcap removes within 200 ms (from byte 32 on editcap skips the
//! IP ID too, so two packets alike but for their ID are one to it), reads the transfer's connection with the
//! packets and payload bytes of the one-interface file, its retransmissions
//! within 5 % (or 2) of tshark's on editcap's output, the same class and
//! limit, and says so in one "Duplicates:" line.
//!
//! Every namespace (and so every device) and process the test makes is
//! removed when it ends, also when it fails. It needs root, tc's tbf,
//! tcpdump, tshark and editcap; without them it is a counted skip.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// The namespaces, A (the client), R (the router) and B (the server).
const A: usize = 0;
const R: usize = 1;
const B: usize = 2;

/// The three namespaces, deleted (with the veth pairs inside them) when
/// dropped, after every process still running in them is killed.
struct Net {
    names: [String; 3],
}

impl Net {
    /// Names unique to this process (`plumb-PID-…`, what
    /// `common::leftovers` looks for once the process is gone).
    fn names() -> [String; 3] {
        let pid = std::process::id();
        ["a", "r", "b"].map(|n| format!("plumb-{pid}-dedup-{n}"))
    }

    /// A — R — B: A's a0 paired with R's r0 (198.18.10.0/24), R's r1 with
    /// B's b0 (198.18.11.0/24), routes via R, forwarding in R only, IPv6
    /// off (nothing but the test's packets on the wires). A sends no
    /// super-segments (`gso_max_segs 1`): the tbf would cut one into
    /// segments after tcpdump saw it arrive whole, and the two sightings
    /// would no longer be one packet's. The tbf on r1: 50 Mbit/s, a 15 kB
    /// burst and a 30 kB queue (about 20 full segments, 5 ms).
    fn build() -> Net {
        let net = Net {
            names: Net::names(),
        };
        for n in &net.names {
            let _ = quiet("ip", &["netns", "del", n]);
            ip(&["netns", "add", n]);
            net.sh(
                n,
                &[
                    "sysctl",
                    "-qw",
                    "net.ipv6.conf.all.disable_ipv6=1",
                    "net.ipv6.conf.default.disable_ipv6=1",
                ],
            );
            ip(&["-n", n, "link", "set", "lo", "up"]);
        }
        let [a, r, b] = &net.names;
        ip(&[
            "-n", a, "link", "add", "a0", "type", "veth", "peer", "name", "r0", "netns", r,
        ]);
        ip(&[
            "-n", b, "link", "add", "b0", "type", "veth", "peer", "name", "r1", "netns", r,
        ]);
        ip(&["-n", a, "link", "set", "a0", "gso_max_segs", "1"]);
        for (ns, dev, addr) in [
            (a, "a0", "198.18.10.1/24"),
            (r, "r0", "198.18.10.2/24"),
            (r, "r1", "198.18.11.2/24"),
            (b, "b0", "198.18.11.1/24"),
        ] {
            ip(&["-n", ns, "addr", "add", addr, "dev", dev]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
        }
        ip(&["-n", a, "route", "add", "default", "via", "198.18.10.2"]);
        ip(&["-n", b, "route", "add", "default", "via", "198.18.11.2"]);
        net.sh(r, &["sysctl", "-qw", "net.ipv4.ip_forward=1"]);
        let tbf = [
            "-n", r, "qdisc", "add", "dev", "r1", "root", "tbf", "rate", "50mbit", "burst", "15kb",
            "limit", "30kb",
        ];
        must("tc", &tbf);
        net
    }

    /// `ip netns exec NS PROGRAM ARGS…`, to spawn.
    fn exec(&self, ns: usize, program: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.names[ns], program])
            .args(args);
        c
    }

    /// Runs `args` in namespace `name`, which must succeed.
    fn sh(&self, name: &str, args: &[&str]) {
        let mut a = vec!["netns", "exec", name];
        a.extend_from_slice(args);
        ip(&a);
    }

    /// The packets R's tbf dropped (its queue full).
    fn tbf_dropped(&self) -> u64 {
        let o = must(
            "tc",
            &["-s", "-n", &self.names[R], "qdisc", "show", "dev", "r1"],
        );
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        text.split("(dropped ")
            .nth(1)
            .and_then(|s| s.split(',').next())
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no drop count in tc's {text:?}"))
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for n in &self.names {
            let pids = quiet("ip", &["netns", "pids", n]).unwrap_or_default();
            for pid in pids.split_whitespace() {
                let _ = quiet("kill", &["-KILL", pid]);
            }
            let _ = quiet("ip", &["netns", "del", n]);
        }
    }
}

/// Runs `program args…` (bounded: 10 s), returning its stdout if it
/// succeeded.
fn quiet(program: &str, args: &[&str]) -> Option<String> {
    try_run(program, args, Duration::from_secs(10))
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
}

/// Runs `program args…` (bounded: 10 s), which must succeed.
fn must(program: &str, args: &[&str]) -> std::process::Output {
    let o = run(program, args, Duration::from_secs(10));
    assert!(
        o.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn ip(args: &[&str]) {
    must("ip", args);
}

/// A child killed when dropped, unless it has ended.
struct Proc(Child);

impl Proc {
    /// Waits at most `limit` for it to end; whether it did.
    fn ended_within(&mut self, limit: Duration) -> bool {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if let Ok(Some(_)) = self.0.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A tcpdump running, and its stderr's lines as they come.
struct Dump {
    proc: Proc,
    lines: mpsc::Receiver<String>,
}

impl Dump {
    /// `tcpdump -i IFACE -s 128 -w FILE tcp` in R, once it says it is
    /// listening (at most 10 s).
    fn start(net: &Net, iface: &str, file: &Path) -> Dump {
        let path = file.to_str().expect("utf-8 path");
        let args = [
            "-i", iface, "-U", "-Z", "root", "-s", "128", "-w", path, "tcp",
        ];
        let mut child = net
            .exec(R, "tcpdump", &args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tcpdump starts");
        let stderr = child.stderr.take().expect("tcpdump's stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let dump = Dump {
            proc: Proc(child),
            lines,
        };
        let t0 = Instant::now();
        loop {
            let left = Duration::from_secs(10).saturating_sub(t0.elapsed());
            match dump.lines.recv_timeout(left) {
                Ok(l) if l.contains("listening on") => return dump,
                Ok(_) => {}
                Err(e) => panic!("tcpdump -i {iface} did not start listening: {e}"),
            }
        }
    }

    /// Stops it with SIGINT (at most 10 s) and returns the packets the
    /// kernel dropped, from its closing lines.
    fn stop(mut self) -> u64 {
        let pid = self.proc.0.id().to_string();
        let _ = quiet("kill", &["-INT", &pid]);
        assert!(
            self.proc.ended_within(Duration::from_secs(10)),
            "tcpdump did not end"
        );
        let lines: Vec<String> = self.lines.try_iter().collect();
        lines
            .iter()
            .find_map(|l| l.strip_suffix(" packets dropped by kernel"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no drop count from tcpdump: {lines:?}"))
    }
}

/// Whether `pid`'s network namespace has a TCP socket (IPv4 or IPv6)
/// listening on `port`.
fn listening_in(pid: u32, port: u16) -> bool {
    let want = format!(":{port:04X}");
    ["tcp", "tcp6"].iter().any(|f| {
        std::fs::read_to_string(format!("/proc/{pid}/net/{f}")).is_ok_and(|t| {
            t.lines().skip(1).any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.len() > 3 && cols[1].ends_with(&want) && cols[3] == "0A"
            })
        })
    })
}

/// What the transfer left: the client's `-J`, the tbf's drops and
/// tcpdump's drops (`any`, the one interface).
struct Transfer {
    client: Value,
    tbf_dropped: u64,
    dump_dropped: (u64, u64),
}

/// `plumb -s -1` in B, tcpdump on `any` and on r0 in R, then
/// `plumb -c 198.18.11.1 -t 3 -J` in A. tcpdump stops 1.5 s after the
/// server ends: libpcap hands packets over a ring block at a time, and
/// SIGINT loses the block not yet handed over (see why_capture.rs).
fn transfer(net: &Net, any: &Path, one: &Path) -> Transfer {
    let dumps = [Dump::start(net, "any", any), Dump::start(net, "r0", one)];
    let server = net
        .exec(B, plumb_bin(), &["-s", "-1"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("plumb -s starts");
    let mut server = Proc(server);
    let t0 = Instant::now();
    while !listening_in(server.0.id(), 5201) {
        assert!(t0.elapsed() < Duration::from_secs(10), "no server in B");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut args = vec!["netns", "exec", &net.names[A], plumb_bin()];
    args.extend(["-c", "198.18.11.1", "-t", "3", "-J"]);
    let out = run("ip", &args, Duration::from_secs(30));
    let client = json(&out, "plumb -c in A");
    assert!(out.status.success(), "client: {client}");
    assert!(
        server.ended_within(Duration::from_secs(10)),
        "the server did not end"
    );
    std::thread::sleep(Duration::from_millis(1500));
    let [d_any, d_one] = dumps;
    Transfer {
        client,
        tbf_dropped: net.tbf_dropped(),
        dump_dropped: (d_any.stop(), d_one.stop()),
    }
}

/// Whether every program the test runs is here (a counted skip if not).
fn can_run() -> bool {
    if !can_lab() || tcpdump_missing() {
        return false;
    }
    for (tool, flag) in [("tshark", "-v"), ("editcap", "--version"), ("tc", "-V")] {
        let works = Command::new(tool)
            .arg(flag)
            .output()
            .is_ok_and(|o| o.status.success());
        if !works {
            plumb_testkit::skip_tool!("the dedup lab needs {tool}");
            return false;
        }
    }
    true
}

/// What tshark reads of one connection, per sender ("ADDR:PORT"): frames,
/// payload bytes and data frames flagged resent (`retransmission`,
/// `fast_retransmission`, `spurious_retransmission`, `out_of_order`: as
/// why_capture.rs counts them; the lab reorders nothing).
fn tshark_flow(file: &Path, ends: (&str, &str)) -> HashMap<String, (u64, u64, u64)> {
    let fields = [
        "ip.src",
        "tcp.srcport",
        "ip.dst",
        "tcp.dstport",
        "tcp.len",
        "tcp.analysis.retransmission",
        "tcp.analysis.fast_retransmission",
        "tcp.analysis.spurious_retransmission",
        "tcp.analysis.out_of_order",
    ];
    let mut args = vec!["-r", file.to_str().expect("utf-8 path"), "-Y", "tcp"];
    args.extend(["-T", "fields", "-E", "separator=;"]);
    for f in &fields {
        args.extend(["-e", f]);
    }
    let o = must("tshark", &args);
    let mut by_sender: HashMap<String, (u64, u64, u64)> = HashMap::new();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let f: Vec<&str> = line.split(';').collect();
        assert_eq!(f.len(), fields.len(), "tshark: {line}");
        let (src, dst) = (format!("{}:{}", f[0], f[1]), format!("{}:{}", f[2], f[3]));
        if (src.as_str(), dst.as_str()) != ends && (dst.as_str(), src.as_str()) != ends {
            continue;
        }
        let len: u64 = f[4].parse().unwrap_or(0);
        let e = by_sender.entry(src).or_default();
        e.0 += 1;
        e.1 += len;
        e.2 += u64::from(len > 0 && f[5..9].iter().any(|s| !s.is_empty()));
    }
    by_sender
}

/// `editcap ARGS IN OUT`: the frames it removed, from its last line
/// ("N packets seen, M packets skipped with …").
fn editcap_removed(args: &[&str], file: &Path, out: &Path) -> u64 {
    let mut a = args.to_vec();
    a.extend([
        file.to_str().expect("utf-8 path"),
        out.to_str().expect("utf-8 path"),
    ]);
    let o = must("editcap", &a);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    text.split(" packets skipped")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("editcap {args:?}: no count in {text:?}"))
}

/// `plumb why -r FILE` (with `flags`), which must succeed.
fn why(file: &Path, flags: &[&str]) -> std::process::Output {
    let mut a = vec!["why", "-r", file.to_str().expect("utf-8 path")];
    a.extend_from_slice(flags);
    let o = run(plumb_bin(), &a, Duration::from_secs(60));
    assert!(
        o.status.success(),
        "why -r {}: {}",
        file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The transfer's connection in `plumb why -r FILE -J`: the busiest.
fn transfer_flow(doc: &Value, at: &str) -> Value {
    let x = doc["explained"][0].clone();
    assert_eq!(x["flow"]["handshake"], true, "{at}: no handshake");
    assert_eq!(x["flow"]["receiver"], "198.18.11.1:5201", "{at}: {x:#}");
    x
}

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

/// Frames in `file`, as tshark counts them.
fn frames(file: &Path) -> u64 {
    let o = must("tshark", &["-r", file.to_str().expect("utf-8 path")]);
    String::from_utf8_lossy(&o.stdout).lines().count() as u64
}

#[test]
fn a_capture_on_both_sides_of_a_router_counts_each_packet_once() {
    if !can_run() {
        return;
    }
    let t0 = Instant::now();
    let dir = TempDir::new("dedup-lab");
    let (any, one) = (dir.join("any.pcap"), dir.join("r0.pcap"));
    let done = {
        let net = Net::build();
        transfer(&net, &any, &one)
    };
    let names = Net::names();
    let left = quiet("ip", &["netns", "list"]).unwrap_or_default();
    assert!(
        !names.iter().any(|n| left.contains(n.as_str())),
        "namespaces left: {left}"
    );
    check(&done, &any, &one, &dir);
    eprintln!("dedup lab: {:.1} s", t0.elapsed().as_secs_f64());
}

/// The scenario's premises, then plumb's reading of the `any` file against
/// the one-interface file, editcap and tshark.
fn check(run: &Transfer, any: &Path, one: &Path, dir: &Path) {
    let single = json(&why(one, &["-J"]), "why -r r0.pcap -J");
    let base = transfer_flow(&single, "r0.pcap");
    let (snd, rcv) = (
        base["flow"]["sender"].as_str().unwrap_or("").to_string(),
        base["flow"]["receiver"].as_str().unwrap_or("").to_string(),
    );
    let ends = (snd.as_str(), rcv.as_str());
    let (t_any, t_one) = (tshark_flow(any, ends), tshark_flow(one, ends));
    let count =
        |t: &HashMap<String, (u64, u64, u64)>, who: &str| t.get(who).copied().unwrap_or_default();
    let (data_any, data_one) = (count(&t_any, &snd).0, count(&t_one, &snd).0);
    let (acks_any, acks_one) = (count(&t_any, &rcv).0, count(&t_one, &rcv).0);
    let (f_any, f_one) = (frames(any), frames(one));
    // Premises: tcpdump missed nothing; each packet seen twice, but for
    // those the queue dropped; plain editcap sees no copy, editcap from the
    // addresses on finds some further back than 4 frames.
    let near_twice = |a: u64, o: u64| o > 1000 && a <= 2 * o && a * 10 >= 19 * o;
    let strict = editcap_removed(&["-D", "5"], any, &dir.join("d5.pcap"));
    let within_4 = editcap_removed(&["-D", "5", "-I", "32"], any, &dir.join("d5i.pcap"));
    let dedup = dir.join("w.pcap");
    let within_200ms = editcap_removed(&["-w", "0.2", "-I", "32"], any, &dedup);
    let premise = format!(
        "tcpdump dropped {:?}; data frames {data_any} (any) vs {data_one} (r0), \
         ACKs {acks_any} vs {acks_one}; editcap removes {strict} (-D 5), \
         {within_4} (-D 5 -I 32), {within_200ms} (-w 0.2 -I 32); tbf dropped {}",
        run.dump_dropped, run.tbf_dropped
    );
    eprintln!("dedup lab: {premise}");
    if run.dump_dropped != (0, 0)
        || !near_twice(data_any, data_one)
        || acks_any != 2 * acks_one
        || strict != 0
        || within_4 >= within_200ms
    {
        plumb_testkit::skip_premise!("{premise}");
        return;
    }
    let doc = json(&why(any, &["-J"]), "why -r any.pcap -J");
    let x = transfer_flow(&doc, "any.pcap");
    agrees(&doc, &x, &base, within_200ms, f_any.saturating_sub(f_one));
    let t_dedup = tshark_flow(&dedup, ends);
    let (mine, theirs) = (
        x["flow"]["retransmits"].as_u64().unwrap_or(u64::MAX),
        count(&t_dedup, &snd).2,
    );
    assert!(
        mine.abs_diff(theirs) <= 2.max(theirs / 20),
        "retransmissions: plumb {mine}, tshark on editcap's output {theirs}"
    );
    assert_eq!(count(&t_dedup, &rcv).2, 0, "the ACKs carry no data");
    let text = String::from_utf8_lossy(&why(any, &[]).stdout).to_string();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("Duplicates: "))
        .collect();
    let n = doc["duplicates"]["packets"].as_u64().unwrap_or(0);
    let said = format!("Duplicates: {} packets are copies", group(n));
    assert!(
        lines.len() == 1 && lines[0].starts_with(&said),
        "{lines:?}: {said}"
    );
    eprintln!(
        "dedup lab: frames {f_any} (any), {f_one} (r0); plumb: {n} duplicates, {} packets, \
         {} B, {mine} retransmissions (tshark on editcap's output {theirs}, on the any file {}; \
         the client's TCP {}), {} / {} (r0: {} / {})",
        x["flow"]["packets"],
        x["flow"]["payload_bytes"],
        count(&t_any, &snd).2,
        run.client["end"]["sum_sent"]["retransmits"],
        x["class"],
        x["diagnosis"]["limit"],
        base["class"],
        base["diagnosis"]["limit"],
    );
}

/// The `any` file's document `doc` and its transfer `x` against the
/// one-interface file's transfer `base`: duplicates equal to editcap's
/// (`removed`) and to the frames the `any` file holds beyond r0's
/// (`extra`), all of them in connections; the transfer's packets, bytes,
/// class and limit as r0's.
fn agrees(doc: &Value, x: &Value, base: &Value, removed: u64, extra: u64) {
    let n = doc["duplicates"]["packets"].as_u64().unwrap_or(0);
    assert_eq!(n, extra, "duplicates: the frames beyond r0's");
    assert!(
        n.abs_diff(removed) <= 2.max(removed / 1000),
        "duplicates: plumb {n} vs editcap -w 0.2 -I 32 {removed}"
    );
    let in_flows: u64 = doc["explained"]
        .as_array()
        .map(|v| {
            v.iter()
                .map(|y| y["flow"]["duplicates"].as_u64().unwrap_or(0))
                .sum()
        })
        .unwrap_or(0);
    assert_eq!(in_flows, n, "the connections' duplicates");
    for k in ["packets", "payload_bytes", "reverse_bytes"] {
        assert_eq!(x["flow"][k], base["flow"][k], "{k}: any vs r0");
    }
    assert_eq!(x["class"], base["class"], "class: any vs r0");
    assert_eq!(
        x["diagnosis"]["limit"], base["diagnosis"]["limit"],
        "limit: any ({}) vs r0 ({})",
        x["diagnosis"]["summary"], base["diagnosis"]["summary"]
    );
}
