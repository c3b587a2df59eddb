//! The filter program run over hand-built frames by a small classic BPF
//! interpreter (the opcodes the program and tcpdump's programs for the same
//! expressions use), and compared with tcpdump's own program where tcpdump
//! is installed: the same frames must be kept or dropped by both.

use std::net::IpAddr;
use std::process::Command;

use super::*;

/// What the kernel would know beside the bytes.
#[derive(Clone, Copy)]
struct Meta {
    protocol: u32,
    pkttype: u32,
}

const HOST: Meta = Meta {
    protocol: 0x0800,
    pkttype: 0,
};

/// Runs `prog` over `pkt`: the bytes kept (0: dropped). A load past the
/// end drops the packet, as in the kernel.
fn run(prog: &[Insn], pkt: &[u8], meta: Meta) -> u32 {
    let (mut a, mut x, mut pc) = (0u32, 0u32, 0usize);
    let load = |at: u32, n: usize| -> Option<u32> {
        if at >= AD_OFF {
            return Some(match at - AD_OFF {
                0 => meta.protocol,
                4 => meta.pkttype,
                other => panic!("ancillary load {other}"),
            });
        }
        let at = at as usize;
        let b = pkt.get(at..at.checked_add(n)?)?;
        Some(b.iter().fold(0u32, |v, &byte| (v << 8) | u32::from(byte)))
    };
    for _ in 0..4096 {
        let i = prog[pc];
        pc += 1;
        let jump = |cond: bool| if cond { i.jt } else { i.jf } as usize;
        match i.code {
            0x20 | 0x28 | 0x30 => match load(i.k, [4, 2, 1][usize::from(i.code - 0x20) / 8]) {
                Some(v) => a = v,
                None => return 0,
            },
            0x48 | 0x50 => match load(x + i.k, if i.code == 0x48 { 2 } else { 1 }) {
                Some(v) => a = v,
                None => return 0,
            },
            0xb1 => match load(i.k, 1) {
                Some(v) => x = 4 * (v & 0xf),
                None => return 0,
            },
            0x54 => a &= i.k,
            0x05 => pc += i.k as usize,
            0x15 => pc += jump(a == i.k),
            0x25 => pc += jump(a > i.k),
            0x35 => pc += jump(a >= i.k),
            0x45 => pc += jump(a & i.k != 0),
            0x06 => return i.k,
            other => panic!("opcode {other:#x} at {}", pc - 1),
        }
    }
    panic!("program did not end");
}

fn eth(ethertype: u16, l3: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(l3);
    f
}

fn ipv4(proto: u8, src: [u8; 4], dst: [u8; 4], frag: u16, l4: &[u8]) -> Vec<u8> {
    let len = (20 + l4.len()) as u16;
    let mut p = vec![0x45, 0];
    p.extend_from_slice(&len.to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(&frag.to_be_bytes());
    p.extend_from_slice(&[64, proto, 0, 0]);
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    p.extend_from_slice(l4);
    p
}

fn ipv6(nh: u8, src: [u8; 16], dst: [u8; 16], l4: &[u8]) -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0];
    p.extend_from_slice(&(l4.len() as u16).to_be_bytes());
    p.extend_from_slice(&[nh, 64]);
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    p.extend_from_slice(l4);
    p
}

fn tcp(sport: u16, dport: u16) -> Vec<u8> {
    let mut t = sport.to_be_bytes().to_vec();
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0]);
    t.extend_from_slice(&[0xab; 100]);
    t
}

const A4: [u8; 4] = [10, 0, 0, 1];
const B4: [u8; 4] = [10, 0, 0, 2];
const C4: [u8; 4] = [192, 0, 2, 9];

fn v6(last: u8) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[0] = 0xfd;
    a[15] = last;
    a
}

/// The frames every test runs, by name.
fn frames() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "v4 tcp 80",
            eth(0x800, &ipv4(6, A4, B4, 0, &tcp(40000, 80))),
        ),
        (
            "v4 tcp 443 back",
            eth(0x800, &ipv4(6, B4, A4, 0, &tcp(443, 40001))),
        ),
        (
            "v4 tcp 22 other host",
            eth(0x800, &ipv4(6, C4, B4, 0, &tcp(5000, 22))),
        ),
        (
            "v4 tcp 80 from c",
            eth(0x800, &ipv4(6, C4, B4, 0, &tcp(40002, 80))),
        ),
        (
            "v4 tcp to c",
            eth(0x800, &ipv4(6, B4, C4, 0, &tcp(40003, 9))),
        ),
        (
            "v4 udp 80",
            eth(0x800, &ipv4(17, A4, B4, 0, &tcp(40000, 80))),
        ),
        (
            "v6 tcp 80",
            eth(0x86dd, &ipv6(6, v6(1), v6(2), &tcp(40000, 80))),
        ),
        (
            "v6 tcp 443 back",
            eth(0x86dd, &ipv6(6, v6(2), v6(1), &tcp(443, 4))),
        ),
        (
            "v6 tcp 22 other",
            eth(0x86dd, &ipv6(6, v6(3), v6(4), &tcp(5000, 22))),
        ),
        (
            "v6 udp 80",
            eth(0x86dd, &ipv6(17, v6(1), v6(2), &tcp(40000, 80))),
        ),
        ("arp", eth(0x806, &[0u8; 28])),
        ("short", eth(0x800, &[0x45, 0])),
    ]
}

fn kept(prog: &[Insn], name: &str) -> u32 {
    let f = frames();
    let (_, frame) = f.iter().find(|(n, _)| *n == name).expect("frame");
    let proto = if frame[12..14] == [0x86, 0xdd] {
        0x86dd
    } else {
        0x0800
    };
    run(
        prog,
        frame,
        Meta {
            protocol: proto,
            pkttype: 0,
        },
    )
}

fn sel(ports: &[u16], peers: &[&str]) -> Selection {
    Selection {
        ports: ports.to_vec(),
        peers: peers
            .iter()
            .map(|p| p.parse::<IpAddr>().expect("addr"))
            .collect(),
        snaplen: 128,
        skip_outgoing: false,
    }
}

#[test]
fn tcp_only_keeps_tcp_of_both_families_cut_to_the_snaplen() {
    let p = program(Framing::Ethernet, &sel(&[], &[])).expect("program");
    for name in [
        "v4 tcp 80",
        "v4 tcp 22 other host",
        "v6 tcp 80",
        "v6 tcp 22 other",
    ] {
        assert_eq!(kept(&p, name), 128, "{name}");
    }
    for name in ["v4 udp 80", "v6 udp 80", "arp", "short"] {
        assert_eq!(kept(&p, name), 0, "{name}");
    }
}

#[test]
fn ports_match_either_end_and_refuse_later_fragments() {
    let p = program(Framing::Ethernet, &sel(&[80, 443], &[])).expect("program");
    for name in [
        "v4 tcp 80",
        "v4 tcp 443 back",
        "v6 tcp 80",
        "v6 tcp 443 back",
    ] {
        assert_eq!(kept(&p, name), 128, "{name}");
    }
    for name in [
        "v4 tcp 22 other host",
        "v6 tcp 22 other",
        "v4 udp 80",
        "v6 udp 80",
    ] {
        assert_eq!(kept(&p, name), 0, "{name}");
    }
    // Offset 100 (in 8-byte units): its "ports" are payload bytes.
    let frag = eth(0x800, &ipv4(6, A4, B4, 100, &tcp(40000, 80)));
    assert_eq!(run(&p, &frag, HOST), 0);
    let first = eth(0x800, &ipv4(6, A4, B4, 0x2000, &tcp(40000, 80)));
    assert_eq!(run(&p, &first, HOST), 128, "first fragment, more to come");
}

#[test]
fn peers_match_either_end_per_family() {
    let p = program(Framing::Ethernet, &sel(&[], &["192.0.2.9", "fd00::4"])).expect("program");
    for name in [
        "v4 tcp 22 other host",
        "v4 tcp 80 from c",
        "v4 tcp to c",
        "v6 tcp 22 other",
    ] {
        assert_eq!(kept(&p, name), 128, "{name}");
    }
    for name in ["v4 tcp 80", "v6 tcp 80", "v6 tcp 443 back"] {
        assert_eq!(kept(&p, name), 0, "{name}");
    }
    // Only an IPv4 peer: no IPv6 packet passes, and the reverse.
    let p = program(Framing::Ethernet, &sel(&[], &["10.0.0.1"])).expect("program");
    assert_eq!(kept(&p, "v4 tcp 443 back"), 128);
    assert_eq!(kept(&p, "v6 tcp 80"), 0);
    let p = program(Framing::Ethernet, &sel(&[], &["fd00::2"])).expect("program");
    assert_eq!(kept(&p, "v6 tcp 443 back"), 128);
    assert_eq!(kept(&p, "v4 tcp 80"), 0);
}

#[test]
fn ports_and_peers_together() {
    let p = program(Framing::Ethernet, &sel(&[80], &["192.0.2.9"])).expect("program");
    assert_eq!(kept(&p, "v4 tcp 80 from c"), 128);
    assert_eq!(kept(&p, "v4 tcp 80"), 0, "port right, peer wrong");
    assert_eq!(
        kept(&p, "v4 tcp 22 other host"),
        0,
        "peer right, port wrong"
    );
}

#[test]
fn icmp_too_big_passes_and_other_icmp_does_not() {
    let p = program(Framing::Ethernet, &sel(&[80], &["192.0.2.9"])).expect("program");
    let mut quote = vec![3, 4, 0, 0, 0, 0, 0x05, 0xdc];
    quote.extend(ipv4(6, A4, B4, 0, &tcp(40000, 80)));
    assert_eq!(run(&p, &eth(0x800, &ipv4(1, B4, A4, 0, &quote)), HOST), 128);
    quote[0] = 8; // echo request
    assert_eq!(run(&p, &eth(0x800, &ipv4(1, B4, A4, 0, &quote)), HOST), 0);
    let big = eth(0x86dd, &ipv6(58, v6(2), v6(1), &[2, 0, 0, 0, 0, 0, 5, 0]));
    let meta = Meta {
        protocol: 0x86dd,
        pkttype: 0,
    };
    assert_eq!(run(&p, &big, meta), 128);
    let echo = eth(0x86dd, &ipv6(58, v6(2), v6(1), &[128, 0, 0, 0]));
    assert_eq!(run(&p, &echo, meta), 0);
}

#[test]
fn outgoing_copies_are_dropped_when_asked() {
    let mut s = sel(&[], &[]);
    s.skip_outgoing = true;
    let p = program(Framing::Ethernet, &s).expect("program");
    let f = eth(0x800, &ipv4(6, A4, B4, 0, &tcp(1, 2)));
    assert_eq!(run(&p, &f, HOST), 128);
    let out = Meta {
        protocol: 0x0800,
        pkttype: 4,
    };
    assert_eq!(run(&p, &f, out), 0);
}

#[test]
fn raw_ip_framing_reads_the_protocol_from_metadata() {
    let p = program(Framing::Ip, &sel(&[80], &[])).expect("program");
    let v4 = ipv4(6, A4, B4, 0, &tcp(40000, 80));
    assert_eq!(run(&p, &v4, HOST), 128);
    let v6 = ipv6(6, v6(1), v6(2), &tcp(40000, 80));
    let meta6 = Meta {
        protocol: 0x86dd,
        pkttype: 0,
    };
    assert_eq!(run(&p, &v6, meta6), 128);
    // An IPv4 packet the kernel labels as something else is not read.
    let arp = Meta {
        protocol: 0x0806,
        pkttype: 0,
    };
    assert_eq!(run(&p, &v4, arp), 0);
}

#[test]
fn too_many_ports_is_refused_not_cut() {
    let many: Vec<u16> = (1..=300).collect();
    assert_eq!(program(Framing::Ethernet, &sel(&many, &[])), Err(TooLong));
    let some: Vec<u16> = (1..=100).collect();
    let p = program(Framing::Ethernet, &sel(&some, &[])).expect("100 ports fit");
    assert_eq!(kept(&p, "v4 tcp 22 other host"), 128);
    assert_eq!(kept(&p, "v6 tcp 22 other"), 128);
    assert_eq!(kept(&p, "v4 tcp 80 from c"), 128, "port 80 in 1-100");
    assert_eq!(kept(&p, "v4 tcp 443 back"), 0, "443 not in 1-100");
    let peers: Vec<String> = (1..=12).map(|i| format!("fd00::{i}")).collect();
    let peers: Vec<&str> = peers.iter().map(String::as_str).collect();
    let p = program(Framing::Ethernet, &sel(&[80], &peers)).expect("12 peers fit");
    assert_eq!(kept(&p, "v6 tcp 80"), 128);
}

/// tcpdump's program for `expr` on Ethernet, from `tcpdump -dd`.
fn tcpdump_program(expr: &str) -> Option<Vec<Insn>> {
    let out = Command::new("tcpdump")
        .args(["-dd", "-y", "EN10MB", expr])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let num = |s: &str| {
        let s = s.trim();
        match s.strip_prefix("0x") {
            Some(h) => u32::from_str_radix(h, 16).expect("hex"),
            None => s.parse::<u32>().expect("number"),
        }
    };
    let prog = text
        .lines()
        .map(|l| {
            let f: Vec<u32> = l
                .trim()
                .trim_start_matches('{')
                .trim_end_matches(',')
                .trim_end_matches('}')
                .split(',')
                .map(num)
                .collect();
            Insn {
                code: f[0] as u16,
                jt: f[1] as u8,
                jf: f[2] as u8,
                k: f[3],
            }
        })
        .collect();
    Some(prog)
}

/// Kept or dropped alike, frame by frame, for the same selection written
/// as a tcpdump expression (ICMP and fragments, which the expressions do
/// not name, are left out of the frames).
#[test]
fn agrees_with_tcpdump_on_the_same_expressions() {
    let cases: [(&str, &[u16], &[&str]); 4] = [
        ("tcp", &[], &[]),
        ("tcp and (port 80 or port 443)", &[80, 443], &[]),
        (
            "tcp and (host 192.0.2.9 or host fd00::4)",
            &[],
            &["192.0.2.9", "fd00::4"],
        ),
        ("tcp and port 80 and host 192.0.2.9", &[80], &["192.0.2.9"]),
    ];
    if tcpdump_program("tcp").is_none() {
        plumb_testkit::skip_tool!("tcpdump is not installed (scripts/test installs it)");
        return;
    }
    for (expr, ports, peers) in cases {
        let theirs = tcpdump_program(expr).expect("tcpdump -dd");
        let ours = program(Framing::Ethernet, &sel(ports, peers)).expect("program");
        let mut differ = 0;
        for (name, _) in frames() {
            let (a, b) = (kept(&ours, name) != 0, kept(&theirs, name) != 0);
            if a != b {
                eprintln!("{expr}: {name}: ours {a}, tcpdump's {b}");
                differ += 1;
            }
        }
        assert_eq!(differ, 0, "{expr}");
        assert!(
            frames().iter().any(|(n, _)| kept(&theirs, n) != 0),
            "{expr} keeps some"
        );
    }
}
