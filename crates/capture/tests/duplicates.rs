//! Capture duplicates: a packet recorded twice or more (a mirror port that
//! copies it where it enters and where it leaves, a capture on two
//! interfaces) is counted once and feeds nothing else, while a real
//! retransmission of the same bytes (a new IP ID, a later timestamp, or
//! sent at least half a round trip later) stays a retransmission.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use plumb_capture::{Analysis, Connection};

/// The retransmission scenario (fast, timeout-like and spurious resends,
/// three duplicate ACKs; handshake RTT 12 ms) and a zero-window episode
/// after it, every IPv4 packet numbered as its sender would.
fn scenario() -> Vec<(u64, Seg)> {
    let mut segs = retransmissions();
    segs.push((T0 + 400 * MS, Seg::v4(false, 5001).ack(6001).win(0)));
    segs.push((T0 + 600 * MS, Seg::v4(false, 5001).ack(6001).win(1000)));
    segs.push((T0 + 601 * MS, Seg::v4(true, 6001).ack(5001).len(500)));
    segs.push((T0 + 620 * MS, Seg::v4(false, 5001).ack(6501).win(1000)));
    for (i, (_, s)) in segs.iter_mut().enumerate() {
        s.id = i as u16 + 1;
    }
    segs
}

/// A pcap of `segs` in time order, each packet recorded once more
/// `delay_ns` after it for every `copies` (a mirror port's copy).
fn with_copies(segs: &[(u64, Seg)], copies: u64, delay_ns: u64) -> Vec<u8> {
    let mut all: Vec<(u64, Seg)> = Vec::new();
    for (ts, s) in segs {
        for k in 0..=copies {
            all.push((ts + k * delay_ns, s.clone()));
        }
    }
    all.sort_by_key(|(t, _)| *t);
    let mut p = Pcap::new(1, false);
    for (ts, s) in &all {
        p.record(*ts, &s.frame(Link::Ethernet));
    }
    p.buf
}

fn once(segs: &[(u64, Seg)]) -> Vec<u8> {
    with_copies(segs, 0, 0)
}

/// The connections with their duplicate counts set to zero: what must
/// equal the connections of the capture without copies, field for field.
fn without_counts(a: Analysis) -> Vec<Connection> {
    let mut conns = a.connections;
    for c in &mut conns {
        c.client.duplicates = 0;
        c.server.duplicates = 0;
    }
    conns
}

fn conn(a: &Analysis) -> &Connection {
    assert_eq!(a.connections.len(), 1);
    &a.connections[0]
}

#[test]
fn copies_are_counted_once_and_change_nothing_else() {
    let segs = scenario();
    let plain = analyze(&once(&segs));
    let c = conn(&plain);
    // The premise: the scenario has what copies must not add to.
    let r = &c.client.retransmissions;
    assert_eq!(
        (r.total, r.fast, r.timeout, r.other, r.spurious),
        (3, 1, 1, 1, 1)
    );
    assert_eq!(c.server.duplicate_acks, 3);
    assert_eq!(c.server.zero_window.episodes, 1);
    assert!(c.client.rtt.samples > 0 && c.client.flight.samples > 0);
    assert_eq!(plain.duplicates.packets, 0);
    let n = segs.len() as u64;
    // Each packet seen twice 5 µs apart, or four times at one instant (as
    // in ssh-dups.pcap).
    for (copies, delay) in [(1, 5_000), (3, 0)] {
        let a = analyze(&with_copies(&segs, copies, delay));
        assert_eq!(a.decode.tcp, n * (copies + 1));
        assert_eq!(a.duplicates.packets, n * copies, "{copies} copies");
        assert_eq!(a.duplicates.other_interface, 0);
        let c = conn(&a);
        assert_eq!(c.client.duplicates + c.server.duplicates, n * copies);
        assert_eq!(c.packets(), n);
        assert_eq!(
            without_counts(a),
            plain.connections,
            "{copies} copies, {delay} ns apart"
        );
    }
}

/// A mirror port interleaves: each data segment's copy comes after the
/// next segments of the burst. Up to three segments between a packet and
/// its copy are caught (a direction remembers its last four).
#[test]
fn copies_a_few_segments_later_are_caught() {
    let mut segs = handshake();
    for i in 0..40u32 {
        let seg = Seg::v4(true, 1001 + i * 1000)
            .ack(5001)
            .len(1000)
            .id(100 + i as u16);
        segs.push((T0 + 20 * MS + u64::from(i) * 1_000, seg));
    }
    for (i, (_, s)) in segs.iter_mut().take(3).enumerate() {
        s.id = i as u16 + 1;
    }
    let plain = analyze(&once(&segs));
    for behind in [1u64, 3] {
        // Each copy 1 µs x behind + 0.5 µs later: `behind` segments between.
        let delay = behind * 1_000 + 500;
        let a = analyze(&with_copies(&segs, 1, delay));
        assert_eq!(a.duplicates.packets, segs.len() as u64, "{behind} between");
        assert_eq!(without_counts(a), plain.connections);
    }
}

#[test]
fn a_resend_is_a_retransmission_not_a_copy() {
    let mut segs = handshake();
    let data = Seg::v4(true, 1001).ack(5001).len(1000);
    segs.push((T0 + 20 * MS, data.clone().id(7)));
    // The same bytes after a 300 ms timeout, with a new IP ID.
    segs.push((T0 + 320 * MS, data.clone().id(8)));
    // And again 1 ms later with yet another ID (a tail loss probe's speed):
    // only the ID tells it from a copy, and it does.
    segs.push((T0 + 321 * MS, data.clone().id(9)));
    // With no ID (0, as some stacks send) and no timestamps, the same
    // bytes 100 ms later: too late for a copy (half the 12 ms RTT).
    segs.push((T0 + 421 * MS, data.clone()));
    let a = analyze(&once(&segs));
    let c = conn(&a);
    assert_eq!(a.duplicates.packets, 0);
    assert_eq!(c.client.retransmissions.total, 3);
    assert_eq!(c.client.retransmissions.timeout, 1);
    // The same without ID 1 ms after the last: a copy.
    segs.push((T0 + 422 * MS, data));
    let a = analyze(&once(&segs));
    assert_eq!(a.duplicates.packets, 1);
    assert_eq!(conn(&a).client.retransmissions.total, 3);
}

/// IPv6 has no IP ID: a copy repeats the TCP timestamp, a resend carries a
/// later one. Without timestamps only the time tells them apart (half the
/// handshake RTT), as in the public capture gap-data-missing.pcapng, where
/// editcap -D removes a resend that tshark and plumb call one.
#[test]
fn ipv6_copies_by_their_timestamps_or_their_time() {
    let mut segs: Vec<(u64, Seg)> = handshake().into_iter().map(|(t, s)| (t, s.v6())).collect();
    let data = |tsval: u32| Seg::v4(true, 1001).ack(5001).len(1000).v6().ts(tsval, 77);
    segs.push((T0 + 20 * MS, data(1000)));
    segs.push((T0 + 20 * MS + 2_000, data(1000))); // a copy
    segs.push((T0 + 21 * MS, data(1001))); // 1 ms later, a new TSval: a resend
    segs.push((T0 + 21 * MS + 3_000, data(1001))); // its copy
    let a = analyze(&once(&segs));
    let c = conn(&a);
    assert_eq!((a.duplicates.packets, c.client.duplicates), (2, 2));
    assert_eq!(c.client.retransmissions.total, 1);
    // No timestamps: the same bytes within 6 ms are a copy, later a resend.
    let bare = Seg::v4(true, 2001).ack(5001).len(500).v6();
    let mut segs2 = segs.clone();
    segs2.push((T0 + 30 * MS, bare.clone()));
    // 5 ms after the first: a copy; 10 ms after it (under the RTT, past
    // its half): a resend.
    segs2.push((T0 + 35 * MS, bare.clone()));
    segs2.push((T0 + 40 * MS, bare));
    let a = analyze(&once(&segs2));
    let c = conn(&a);
    assert_eq!(a.duplicates.packets, 3);
    assert_eq!(c.client.retransmissions.total, 2);
}

/// Duplicate ACKs alike in every field but their SACK blocks are each a
/// duplicate ACK, not copies of one.
#[test]
fn duplicate_acks_with_new_sack_blocks_are_not_copies() {
    let mut segs = handshake();
    for (i, seq) in [1001u32, 2001, 3001, 4001].into_iter().enumerate() {
        segs.push((
            T0 + (20 + i as u64) * MS,
            Seg::v4(true, seq).ack(5001).len(1000).id(10 + i as u16),
        ));
    }
    let sack = |right: u32| {
        let mut o = vec![1, 1, 5, 10];
        o.extend_from_slice(&3001u32.to_be_bytes());
        o.extend_from_slice(&right.to_be_bytes());
        Seg::v4(false, 5001).ack(2001).win(1000).v6().opts(&o)
    };
    // IPv6 (no ID), no timestamps, 20 µs apart: only SACK tells them apart.
    let mut v6: Vec<(u64, Seg)> = segs.into_iter().map(|(t, s)| (t, s.v6())).collect();
    v6.push((T0 + 32 * MS, Seg::v4(false, 5001).ack(2001).win(1000).v6()));
    v6.push((T0 + 32 * MS + 20_000, sack(4001)));
    v6.push((T0 + 32 * MS + 40_000, sack(5001)));
    v6.push((T0 + 32 * MS + 60_000, sack(5001))); // this one is a copy
    let a = analyze(&once(&v6));
    let c = conn(&a);
    assert_eq!(c.server.duplicate_acks, 2);
    assert_eq!(c.server.duplicates, 1);
}

/// The same frames on two interfaces of a pcapng (a capture on both sides
/// of a router, or of a bond): each seen twice, counted once, and the same
/// evidence as one interface gives.
#[test]
fn the_same_frame_on_two_interfaces_is_counted_once() {
    let segs = scenario();
    let mut one = PcapNg::new();
    one.interface(1, None);
    let mut two = PcapNg::new();
    two.interface(1, None);
    two.interface(1, None);
    for (ts, s) in &segs {
        let f = s.frame(Link::Ethernet);
        let us = ts / 1000;
        one.packet(0, us, &f);
        two.packet(0, us, &f);
        two.packet(1, us + 20, &f);
    }
    let single = analyze(&one.buf);
    let a = analyze(&two.buf);
    let n = segs.len() as u64;
    assert_eq!(a.read.interfaces, 2);
    assert_eq!(a.duplicates.packets, n);
    assert_eq!(a.duplicates.other_interface, n);
    let c = conn(&a);
    assert_eq!(c.client.retransmissions.total, 3);
    assert_eq!(without_counts(a), single.connections);
}

/// Without the handshake, the window is half the smallest data→ACK sample
/// once there is one, and 1 ms before.
#[test]
fn without_a_round_trip_the_window_is_a_millisecond() {
    let data = |seq: u32| Seg::v4(true, seq).ack(5001).len(1000);
    let segs = vec![
        (T0, data(1001)),
        (T0 + 900_000, data(1001)), // 0.9 ms: a copy
        (T0 + 3 * MS, data(2001)),
        (T0 + 5 * MS, data(2001)), // 2 ms: a resend
        // The first data→ACK sample: 10 ms (1001-2001 acked at 10 ms).
        (T0 + 10 * MS, Seg::v4(false, 5001).ack(2001).win(1000)),
        (T0 + 11 * MS, data(3001)),
        (T0 + 15 * MS, data(3001)), // 4 ms, under half of 10: a copy
        (T0 + 20 * MS, data(3001)), // 9 ms after the first: a resend
    ];
    let a = analyze(&once(&segs));
    let c = conn(&a);
    assert!(!c.handshake.complete);
    assert_eq!(c.client.rtt.min_ns, Some(10 * MS));
    assert_eq!(c.client.duplicates, 2);
    assert_eq!(c.client.retransmissions.total, 2);
}

/// A capture on both interfaces of a router whose outgoing queue is the
/// path's bottleneck (`tcpdump -i any` there): each data segment is seen
/// arriving, then leaving 30 ms later, after the 300 segments queued ahead
/// of it; each ACK, whose way has no queue, 5 µs after it arrived. One
/// segment the full queue dropped is seen once, and its resend (a new IP
/// ID) twice. The handshake crossed the empty queue: its copies, 5 µs
/// later, show that the capture holds copies, and from then on copies are
/// sought further back than a direction's last four segments. Every copy
/// is found by its IPv4 ID; the connection is field for field the one the
/// capture without copies gives; the resend is the one retransmission.
/// Without IP IDs, copies 30 ms later (past half the 12 ms round trip) are
/// resends: the time alone cannot tell them from one.
#[test]
fn copies_from_behind_a_queue_are_found_by_their_id() {
    const US: u64 = 1_000;
    let pcap = |segs: &[(u64, Seg)]| {
        let mut all = segs.to_vec();
        all.sort_by_key(|(t, _)| *t);
        let mut p = Pcap::new(1, false);
        for (ts, s) in &all {
            p.record(*ts, &s.frame(Link::Ethernet));
        }
        p.buf
    };
    // Every packet at its first sighting, and its copy `later` (none for
    // the segment the queue dropped).
    let build = |data_id: &dyn Fn(u16) -> u16| {
        let mut seen: Vec<(u64, Seg, Option<u64>)> = handshake()
            .into_iter()
            .enumerate()
            .map(|(i, (t, s))| (t, s.id(i as u16 + 1), Some(5 * US)))
            .collect();
        let (queue, dropped) = (30 * MS, 300u32);
        let next = |i: u32| 1001 + i * 1000;
        for i in 0..600u32 {
            let t = T0 + 20 * MS + u64::from(i) * 100 * US;
            let d = Seg::v4(true, next(i)).ack(5001).len(1000);
            let later = (i != dropped).then_some(queue);
            seen.push((t, d.id(data_id(100 + i as u16)), later));
            if i % 2 == 1 {
                // Past the dropped segment the receiver repeats its ACK
                // (duplicate ACKs, each with its own ID).
                let acked = if i >= dropped {
                    next(dropped)
                } else {
                    next(i + 1)
                };
                let a = Seg::v4(false, 5001)
                    .ack(acked)
                    .win(1000)
                    .id(1000 + i as u16);
                seen.push((t + queue + MS, a, Some(5 * US)));
            }
        }
        let t = T0 + 115 * MS;
        let resend = Seg::v4(true, next(dropped)).ack(5001).len(1000);
        seen.push((t, resend.id(data_id(2000)), Some(5 * US)));
        let a = Seg::v4(false, 5001).ack(next(600)).win(1000).id(3000);
        seen.push((t + MS, a, Some(5 * US)));
        let first: Vec<(u64, Seg)> = seen.iter().map(|(t, s, _)| (*t, s.clone())).collect();
        let copies: Vec<(u64, Seg)> = seen
            .iter()
            .filter_map(|(t, s, later)| Some((t + (*later)?, s.clone())))
            .collect();
        (first, copies)
    };

    let (first, copies) = build(&|id| id);
    let plain = analyze(&pcap(&first));
    assert_eq!(plain.duplicates.packets, 0);
    assert_eq!(conn(&plain).client.retransmissions.total, 1);
    let all: Vec<(u64, Seg)> = first.iter().chain(&copies).cloned().collect();
    let a = analyze(&pcap(&all));
    assert_eq!(a.duplicates.packets, copies.len() as u64);
    assert_eq!(conn(&a).packets(), first.len() as u64);
    assert_eq!(without_counts(a), plain.connections);

    // IDs that pass through 0 (at the 200th data segment, whose copy is
    // queued 30 ms like the rest): that copy is found as the others are.
    let (first, copies) = build(&|id| id.wrapping_add(65_236));
    assert!(first.iter().any(|(_, s)| s.id == 0), "the scenario");
    let all: Vec<(u64, Seg)> = first.iter().chain(&copies).cloned().collect();
    let a = analyze(&pcap(&all));
    assert_eq!(a.duplicates.packets, copies.len() as u64);
    assert_eq!(conn(&a).client.retransmissions.total, 1);

    // No IPv4 ID on the data (0, as some stacks send): each of the 599
    // queued copies is taken for a resend, and the resend (the same bytes
    // 65 ms after the first) is one too; its copy 5 µs later is found.
    let (first, copies) = build(&|_| 0);
    let all: Vec<(u64, Seg)> = first.iter().chain(&copies).cloned().collect();
    let a = analyze(&pcap(&all));
    let c = conn(&a);
    assert_eq!(c.client.retransmissions.total, 600);
    assert_eq!(c.client.duplicates, 3, "the SYN's, the ACK's, the resend's");
    assert_eq!(c.server.duplicates, copies.len() as u64 - 602);
}
