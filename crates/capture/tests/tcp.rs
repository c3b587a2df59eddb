//! The TCP evidence from captures whose packets the tests state: handshake
//! options and RTT, window scaling, zero windows, retransmissions, duplicate
//! ACKs, flight against the window, super-segments and ICMP too-big.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use plumb_capture::WindowScale;

#[test]
fn handshake_options_ttl_and_rtt() {
    let a = analyze(&pcap_of(&handshake()));
    assert_eq!(a.connections.len(), 1);
    let c = &a.connections[0];
    assert_eq!(c.client.sender, "10.0.0.1:40000");
    assert_eq!(c.server.sender, "10.0.0.2:5201");
    let cs = c.client.syn.as_ref().unwrap();
    assert_eq!(cs.options.mss, Some(1460));
    assert_eq!(cs.options.window_scale, Some(7));
    assert!(cs.options.sack_permitted && cs.options.timestamps);
    assert_eq!(cs.options.order(), "mss,sackOK,TS,nop,wscale");
    assert_eq!((cs.window, cs.ttl, cs.initial_ttl), (64240, 61, 64));
    let ss = c.server.syn.as_ref().unwrap();
    assert_eq!(
        (ss.options.mss, ss.options.window_scale),
        (Some(1400), Some(9))
    );
    assert_eq!(ss.initial_ttl, 128);
    let h = &c.handshake;
    assert!(h.complete);
    assert_eq!(h.syn_to_syn_ack_ns, Some(10 * MS));
    assert_eq!(h.syn_ack_to_ack_ns, Some(2 * MS));
    assert_eq!(h.rtt_ns, Some(12 * MS));
    assert_eq!(a.decode.tcp, 3);
}

#[test]
fn window_scaled_by_the_handshake_shift() {
    let mut segs = handshake();
    segs.push((T0 + 20 * MS, Seg::v4(false, 5001).ack(1001).win(100)));
    segs.push((T0 + 21 * MS, Seg::v4(true, 1001).ack(5001).win(300)));
    let a = analyze(&pcap_of(&segs));
    let c = &a.connections[0];
    assert_eq!(c.server.window.scale, WindowScale::Known { shift: 9 });
    assert_eq!(c.server.window.last_bytes, Some(100 << 9));
    assert_eq!(c.client.window.scale, WindowScale::Known { shift: 7 });
    // The handshake's ACK (502) and the later one (300), both << 7.
    assert_eq!(c.client.window.min_bytes, Some(300 << 7));
    assert_eq!(c.client.window.max_bytes, Some(502 << 7));
    assert_eq!(c.client.window.samples, 2);
    assert_eq!(c.client.window.unknown_bounds, None);
}

#[test]
fn no_scaling_when_one_syn_lacks_the_option() {
    let mut segs = handshake();
    segs[1].1.options = vec![2, 4, 5, 0x78]; // MSS 1400 only
    segs.push((T0 + 20 * MS, Seg::v4(false, 5001).ack(1001).win(100)));
    let a = analyze(&pcap_of(&segs));
    let c = &a.connections[0];
    assert_eq!(c.server.window.scale, WindowScale::Known { shift: 0 });
    assert_eq!(c.server.window.last_bytes, Some(100));
    assert_eq!(c.client.window.last_bytes, Some(502));
}

#[test]
fn missed_handshake_keeps_raw_windows_and_bounds() {
    let segs = vec![
        (T0, Seg::v4(true, 1001).ack(5001).len(1000).win(40)),
        (T0 + MS, Seg::v4(false, 5001).ack(2001).win(20)),
        (T0 + 2 * MS, Seg::v4(false, 5001).ack(2001).win(30)),
    ];
    let a = analyze(&pcap_of(&segs));
    let c = &a.connections[0];
    assert!(!c.handshake.complete && c.handshake.rtt_ns.is_none());
    let w = &c.server.window;
    assert_eq!(w.scale, WindowScale::Unknown);
    assert_eq!((w.raw_min, w.raw_max, w.samples), (20, 30, 2));
    assert_eq!(w.last_bytes, None);
    assert_eq!(w.unknown_bounds, Some((20, 30 << 14)));
    assert_eq!(c.client.payload_bytes, 1000);
}

#[test]
fn zero_window_episode_counted_and_timed() {
    let mut segs = handshake();
    segs.push((T0 + 20 * MS, Seg::v4(true, 1001).ack(5001).len(1000)));
    segs.push((T0 + 30 * MS, Seg::v4(false, 5001).ack(2001).win(0)));
    segs.push((T0 + 80 * MS, Seg::v4(false, 5001).ack(2001).win(0)));
    segs.push((T0 + 530 * MS, Seg::v4(false, 5001).ack(2001).win(64)));
    segs.push((T0 + 600 * MS, Seg::v4(false, 5001).ack(2001).win(0)));
    segs.push((T0 + 700 * MS, Seg::v4(true, 2001).ack(5001).len(0)));
    let a = analyze(&pcap_of(&segs));
    let z = &a.connections[0].server.zero_window;
    assert_eq!(z.episodes, 2);
    // 500 ms, then one still open at the server's last segment (0 ms).
    assert_eq!(z.total_ns, 500 * MS);
    assert_eq!(a.connections[0].client.zero_window.episodes, 0);
}

/// Client data: three segments of 1000 bytes, the first lost: the server
/// sends three duplicate ACKs, the client resends fast; later one resent
/// after a 300 ms silence; one resent after it was acknowledged.
#[test]
fn retransmissions_fast_timeout_and_spurious() {
    let segs = retransmissions();
    let a = analyze(&pcap_of(&segs));
    let c = &a.connections[0];
    let r = &c.client.retransmissions;
    assert_eq!((r.total, r.fast, r.timeout, r.other), (3, 1, 1, 1), "{r:?}");
    assert_eq!(r.spurious, 1);
    assert_eq!(r.bytes, 3000);
    assert_eq!(c.server.duplicate_acks, 3);
    assert_eq!(c.client.payload_bytes, 8000);
    assert_eq!(c.server.retransmissions.total, 0);
}

#[test]
fn flight_against_the_window_and_super_segments() {
    let mut segs = handshake();
    // Server window 8 << 9 = 4096 bytes; client sends 1000, 1000, 1000,
    // then a 2800-byte super-segment (server MSS 1400).
    segs.push((T0 + 15 * MS, Seg::v4(false, 5001).ack(1001).win(8)));
    let mut seq = 1001;
    for (i, len) in [1000usize, 1000, 1000, 2800].into_iter().enumerate() {
        segs.push((
            T0 + (20 + i as u64) * MS,
            Seg::v4(true, seq).ack(5001).len(len),
        ));
        seq += len as u32;
    }
    let a = analyze(&pcap_of(&segs));
    let c = &a.connections[0];
    let f = &c.client.flight;
    assert_eq!(f.samples, 4);
    assert_eq!(f.max, 5800);
    // The window's edge is 1001 + 4096 = 5097: the super-segment runs past
    // it (to 6801) and none ends on it, so none filled the window exactly.
    assert_eq!(f.window_full, 0);
    assert_eq!(c.client.largest_segment, 2800);
    assert_eq!(c.client.super_segments, 1);
    // The MSS stays the SYN's.
    assert_eq!(c.server.syn.as_ref().unwrap().options.mss, Some(1400));
}

#[test]
fn a_segment_ending_at_the_window_edge_fills_the_window() {
    let mut segs = handshake();
    // Server window 8 << 9 = 4096 bytes from ACK 1001: its edge is 5097.
    segs.push((T0 + 15 * MS, Seg::v4(false, 5001).ack(1001).win(8)));
    let mut seq = 1001;
    for (i, len) in [1000usize, 1000, 1000, 1096].into_iter().enumerate() {
        segs.push((
            T0 + (20 + i as u64) * MS,
            Seg::v4(true, seq).ack(5001).len(len),
        ));
        seq += len as u32;
    }
    // The ACK of the first 2000 bytes moves the edge to 7097; the same
    // last segment resent ends short of it.
    segs.push((T0 + 30 * MS, Seg::v4(false, 5001).ack(3001).win(8)));
    segs.push((T0 + 31 * MS, Seg::v4(true, 4001).ack(5001).len(1096)));
    let a = analyze(&pcap_of(&segs));
    let c = &a.connections[0];
    // The premise: every segment was read as sent.
    assert_eq!(c.client.payload_bytes, 4096 + 1096);
    assert_eq!(c.client.flight.window_full, 1);
}

#[test]
fn icmp_too_big_counted_for_the_connection_it_quotes() {
    let mut p = Pcap::new(1, false);
    for (ts, s) in handshake() {
        p.record(ts, &s.frame(Link::Ethernet));
    }
    // A router's "fragmentation needed" quoting a client segment.
    let quoted = Seg::v4(true, 1001).ack(5001).len(1400).frame(Link::Raw);
    p.record(T0 + 20 * MS, &common::icmp_too_big(&quoted));
    // One quoting a connection nobody tracks.
    let mut other = Seg::v4(true, 1).len(1400);
    other.src.1 = 1;
    let q2 = other.frame(Link::Raw);
    p.record(T0 + 21 * MS, &common::icmp_too_big(&q2));
    let a = analyze(&p.buf);
    assert_eq!(a.connections[0].icmp_too_big, 1);
    assert_eq!(a.connections[0].icmp_mtu, Some(1400));
    assert_eq!(a.decode.icmp_unmatched, 1);
}

#[test]
fn payload_from_the_ip_header_under_a_short_snaplen() {
    let mut p = Pcap::with_snaplen(1, false, 96);
    let mut client_wire = 0;
    for (ts, s) in handshake() {
        let f = s.frame(Link::Ethernet);
        if s.src.1 == 40000 {
            client_wire += f.len();
        }
        p.record(ts, &f);
    }
    let data = Seg::v4(true, 1001)
        .ack(5001)
        .len(1448)
        .frame(Link::Ethernet);
    p.record_cut(T0 + 20 * MS, &data, 66);
    let a = analyze(&p.buf);
    let c = &a.connections[0];
    assert_eq!(c.client.payload_bytes, 1448);
    assert_eq!(c.client.wire_bytes as usize, client_wire + data.len());
}

#[test]
fn evidence_serializes() {
    let a = analyze(&pcap_of(&handshake()));
    let j = serde_json::to_value(&a).unwrap();
    assert_eq!(j["connections"][0]["handshake"]["rtt_ns"], 12 * MS);
    assert_eq!(j["connections"][0]["client"]["syn"]["options"]["mss"], 1460);
    assert_eq!(j["read"]["format"], "pcap");
}

#[test]
fn icmpv6_packet_too_big_counted_for_its_connection() {
    let mut p = Pcap::new(1, false);
    for (ts, s) in handshake() {
        p.record(ts, &s.v6().frame(Link::Ethernet));
    }
    let data = Seg::v4(true, 1001).ack(5001).len(1400).v6();
    let quoted = data.frame(Link::Raw);
    let mut client = [0u8; 16];
    client[0] = 0xfd;
    client[15] = 1;
    let mut v = Vec::new();
    etherparse::PacketBuilder::ethernet2([2; 6], [4; 6])
        .ipv6([0xfe; 16], client, 64)
        .icmpv6_raw(2, 0, 1280u32.to_be_bytes())
        .write(&mut v, &quoted[..48 + 8])
        .unwrap();
    p.record(T0 + 20 * MS, &v);
    let a = analyze(&p.buf);
    assert_eq!(a.connections.len(), 1);
    assert_eq!(a.connections[0].icmp_too_big, 1);
    assert_eq!(a.connections[0].icmp_mtu, Some(1280));
}

/// A segment the capture point saw late (filling a gap within the RTT) is
/// out of order, not a retransmission; its copy is one, and so is a segment
/// filling a gap long after it opened (lost before the capture point).
#[test]
fn late_segments_are_out_of_order_not_retransmissions() {
    let mut segs = handshake();
    let d = |us: u64, seq: u32| {
        (
            T0 + 20 * MS + us * 1000,
            Seg::v4(true, seq).ack(5001).len(1000),
        )
    };
    segs.push(d(0, 1001));
    segs.push(d(10, 3001)); // gap [2001, 3001)
    segs.push(d(20, 2001)); // 10 µs later, within the 12 ms RTT: late
    segs.push(d(30, 2001)); // the same again: resent
    segs.push(d(40, 5001)); // gap [4001, 5001)
    segs.push(d(100_000, 4001)); // 100 ms later: lost upstream, resent
    let a = analyze(&pcap_of(&segs));
    let c = &a.connections[0].client;
    assert_eq!((c.gaps, c.out_of_order), (2, 1));
    assert_eq!(c.retransmissions.total, 2);
    assert_eq!(c.payload_bytes, 6000);
}

/// A capture point can record the SYN-ACK before its SYN, or miss the SYN:
/// the halves seen are kept, the RTT only from all three.
#[test]
fn handshake_reordered_or_partly_missed() {
    let hs = handshake();
    let reordered = vec![hs[1].clone(), hs[0].clone(), hs[2].clone()];
    let a = analyze(&pcap_of(&reordered));
    let c = &a.connections[0];
    assert_eq!(c.client.sender, "10.0.0.1:40000");
    assert!(c.handshake.complete);
    assert_eq!(c.handshake.rtt_ns, Some(12 * MS));
    let missed = vec![hs[1].clone(), hs[2].clone()];
    let a = analyze(&pcap_of(&missed));
    let h = &a.connections[0].handshake;
    assert!(!h.complete);
    assert_eq!((h.rtt_ns, h.syn_to_syn_ack_ns), (None, None));
    assert_eq!(h.syn_ack_to_ack_ns, Some(2 * MS));
}
