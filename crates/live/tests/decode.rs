//! The decoder on real dumps recorded on Linux 6.18 (`examples/capture_fixture.rs`):
//! IPv4 and IPv6 loopback connections that moved 1,000,000 bytes each.

use std::net::SocketAddr;

use plumb_live::diag::{dump_request, dump_request_both, ext, parse, Query, ESTABLISHED};

fn expect(name: &str) -> (SocketAddr, SocketAddr, u64) {
    let text = include_str!("fixtures/expect.txt");
    let line = text
        .lines()
        .find(|l| l.starts_with(name))
        .expect("fixture line");
    let get = |k: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .expect("field")
            .to_string()
    };
    (
        get("client=").parse().expect("client"),
        get("server=").parse().expect("server"),
        get("bytes=").parse().expect("bytes"),
    )
}

fn check(name: &str, raw: &[u8]) {
    let (client, server, n) = expect(name);
    let p = parse(raw);
    assert!(p.done, "{name}: NLMSG_DONE not found");
    assert_eq!(p.bad, 0, "{name}");
    assert_eq!(p.error, None);
    let c = p
        .conns
        .iter()
        .find(|c| c.local == client && c.remote == server)
        .unwrap_or_else(|| panic!("{name}: client end not in {:?}", p.conns));
    let s = p
        .conns
        .iter()
        .find(|c| c.local == server && c.remote == client)
        .expect("server end");
    for x in [c, s] {
        assert_eq!(x.state, ESTABLISHED);
        assert!(x.inode > 0);
        assert!(
            x.congestion.is_some_and(|s| !s.as_str().is_empty()),
            "{x:?}"
        );
        let m = x.mem.expect("SKMEMINFO");
        assert!(m.rcvbuf > 0 && m.sndbuf > 0, "{m:?}");
    }
    let ct = c.tcp.expect("client TCP_INFO");
    let st = s.tcp.expect("server TCP_INFO");
    assert!(ct.len >= 232, "{}", ct.len);
    // bytes_acked counts the SYN too.
    assert!(
        (n..=n + 1).contains(&ct.bytes_acked.expect("acked")),
        "{ct:?}"
    );
    assert_eq!(st.bytes_received, Some(n));
    assert!(ct.snd_mss > 1000 && ct.snd_mss <= 65_536, "{ct:?}");
    assert!(ct.rtt > 0 && ct.rtt < 1_000_000);
    assert!(ct.snd_wnd.is_some_and(|w| w > 0));
    assert_ne!(c.cookie, s.cookie);
    // BBR's own state comes with every socket that runs it: a min RTT no
    // smaller than TCP's all-time minimum (BBR's is windowed) and gains in
    // BBR's ×256 fixed point, or zero where the kernel has none to report
    // (ss shows such sockets as "bbr:(bw:0bps,mrtt:…)" too).
    for x in [c, s] {
        if x.congestion.is_some_and(|cc| cc.as_str() == "bbr") {
            let b = x
                .bbr
                .unwrap_or_else(|| panic!("{name}: no BBR info: {x:?}"));
            let min = x.tcp.and_then(|t| t.min_rtt).unwrap_or(0);
            assert!(
                b.min_rtt_us >= min && b.min_rtt_us < 1_000_000,
                "{b:?} min {min}"
            );
            for g in [b.pacing_gain, b.cwnd_gain] {
                assert!(g == 0 || (64..=1024).contains(&g), "{b:?}");
            }
        } else {
            assert_eq!(x.bbr, None, "{x:?}");
        }
    }
}

#[test]
fn ipv4_dump_decodes_both_ends() {
    check("v4", include_bytes!("fixtures/dump_v4.bin"));
}

#[test]
fn ipv6_dump_decodes_both_ends() {
    check("v6", include_bytes!("fixtures/dump_v6.bin"));
}

#[test]
fn truncated_and_corrupt_dumps_are_counted_not_panicked() {
    let raw = include_bytes!("fixtures/dump_v4.bin");
    for cut in [1, 15, 16, 17, 100, raw.len() / 2, raw.len() - 1] {
        let p = parse(&raw[..cut]);
        assert!(!p.done);
        assert!(p.conns.len() <= parse(raw).conns.len());
    }
    let mut bad = raw.to_vec();
    bad[0..4].copy_from_slice(&3u32.to_ne_bytes());
    assert_eq!(parse(&bad).bad, 1);
    assert!(parse(&bad).conns.is_empty());
}

#[test]
fn request_is_a_dump_with_info_extensions() {
    let q = Query {
        family: 2,
        ext: ext::ALL,
        port: None,
    };
    let r = dump_request(&q, 7);
    assert_eq!(
        u32::from_ne_bytes([r[0], r[1], r[2], r[3]]) as usize,
        r.len()
    );
    // nlmsg_type SOCK_DIAG_BY_FAMILY (20), flags REQUEST|DUMP.
    assert_eq!(u16::from_ne_bytes([r[4], r[5]]), 20);
    assert_eq!(u16::from_ne_bytes([r[6], r[7]]) & 0x301, 0x301);
    assert_eq!(u32::from_ne_bytes([r[8], r[9], r[10], r[11]]), 7);
    // family, protocol, extensions (INFO|VEGAS|CONG|SKMEMINFO = 0x4e)
    assert_eq!((r[16], r[17], r[18]), (2, 6, 0x4e));
    // The original request: type TCPDIAG_GETSOCK (18), no family, the
    // extensions in its fourth byte, states after the 48-byte socket id.
    let v1 = dump_request_both(&q, 8);
    assert_eq!(v1.len(), 16 + 60);
    assert_eq!(u16::from_ne_bytes([v1[4], v1[5]]), 18);
    assert_eq!((v1[16], v1[19]), (0, 0x4e));
    assert_eq!(&v1[68..72], &r[20..24], "same states");
}
