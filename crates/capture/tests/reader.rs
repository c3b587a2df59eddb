//! The containers and link layers: gzip, nanosecond pcap, pcapng with two
//! interfaces of different link types and clocks, several sections, Linux
//! cooked captures v1 and v2, VLAN tags, raw IP and IPv6.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write;

use common::*;

fn one_connection_over(link: Link, v6: bool) -> plumb_capture::Analysis {
    let mut p = Pcap::new(link.linktype(), false);
    let v6 = |s: Seg| if v6 { s.v6() } else { s };
    for (ts, s) in handshake() {
        p.record(ts, &v6(s).frame(link));
    }
    let d = v6(Seg::v4(true, 1001).ack(5001).len(700));
    p.record(T0 + 20 * MS, &d.frame(link));
    analyze(&p.buf)
}

fn check_one(a: &plumb_capture::Analysis, client: &str) {
    assert_eq!(a.connections.len(), 1, "{:?}", a.decode);
    let c = &a.connections[0];
    assert_eq!(c.client.sender, client);
    assert!(c.handshake.complete);
    assert_eq!(c.handshake.rtt_ns, Some(12 * MS));
    assert_eq!(c.client.payload_bytes, 700);
    assert_eq!(c.client.syn.as_ref().unwrap().options.mss, Some(1460));
    assert_eq!(a.decode.tcp, 4);
}

#[test]
fn ethernet_vlan_sll_sll2_raw_ipv4() {
    for link in [Link::Ethernet, Link::Vlan, Link::Sll, Link::Sll2, Link::Raw] {
        let a = one_connection_over(link, false);
        check_one(&a, "10.0.0.1:40000");
    }
}

#[test]
fn ipv6_over_every_link() {
    for link in [Link::Ethernet, Link::Vlan, Link::Sll, Link::Sll2, Link::Raw] {
        let a = one_connection_over(link, true);
        check_one(&a, "[fd00::1]:40000");
        assert_eq!(
            a.connections[0].client.syn.as_ref().unwrap().initial_ttl,
            64
        );
    }
}

#[test]
fn gzip_is_told_by_its_magic() {
    let plain = pcap_of(&handshake());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&plain).unwrap();
    let gz = gz.finish().unwrap();
    let (a, b) = (analyze(&plain), analyze(&gz));
    assert!(!a.read.gzip && b.read.gzip);
    assert_eq!(a.connections, b.connections);
    assert_eq!(b.read.records, 3);
}

#[test]
fn nanosecond_pcap_keeps_nanoseconds() {
    let mut p = Pcap::new(1, true);
    let segs = handshake();
    let times = [T0 + 1, T0 + 1_501, T0 + 2_003];
    for ((_, s), t) in segs.iter().zip(times) {
        p.record(t, &s.frame(Link::Ethernet));
    }
    let a = analyze(&p.buf);
    let h = &a.connections[0].handshake;
    assert_eq!(h.syn_ns, Some(T0 + 1));
    assert_eq!(h.syn_to_syn_ack_ns, Some(1_500));
    assert_eq!(h.rtt_ns, Some(2_002));
    // The same in microseconds loses the nanoseconds.
    let a = analyze(&pcap_of(&segs));
    assert_eq!(a.connections[0].handshake.syn_ns, Some(T0));
}

#[test]
fn pcapng_two_interfaces_of_different_link_types_and_clocks() {
    let mut p = PcapNg::new();
    p.interface(1, None); // Ethernet, µs
    p.interface(101, Some(9)); // raw IP, ns
    let segs = handshake();
    p.packet(0, T0 / 1000, &segs[0].1.frame(Link::Ethernet));
    p.packet(1, T0 + 10 * MS + 7, &segs[1].1.frame(Link::Raw));
    p.packet(0, (T0 + 12 * MS) / 1000, &segs[2].1.frame(Link::Ethernet));
    let a = analyze(&p.buf);
    assert_eq!(a.read.format, "pcapng");
    assert_eq!(
        (a.read.interfaces, a.read.sections, a.read.records),
        (2, 1, 3)
    );
    let h = &a.connections[0].handshake;
    assert_eq!(h.syn_to_syn_ack_ns, Some(10 * MS + 7));
    assert_eq!(h.rtt_ns, Some(12 * MS));
}

#[test]
fn pcapng_new_section_forgets_interfaces() {
    let mut p = PcapNg::new();
    p.interface(1, None);
    let segs = handshake();
    p.packet(0, T0 / 1000, &segs[0].1.frame(Link::Ethernet));
    p.section();
    // Interface 0 of the new section is raw IP with binary 2^-20 s units.
    p.interface(101, Some(0x80 | 20));
    p.packet(0, 0, &segs[1].1.frame(Link::Raw));
    p.packet(1, 0, &segs[2].1.frame(Link::Raw)); // no interface 1 here
    let a = analyze(&p.buf);
    assert_eq!(a.read.sections, 2);
    assert_eq!(a.read.unknown_interface, 1);
    assert_eq!(a.decode.tcp, 2);
    let c = &a.connections[0];
    assert_eq!(c.server.packets, 1);
    assert!(!c.handshake.complete);
}

#[test]
fn records_stream_in_file_order() {
    let bytes = pcap_of(&handshake());
    let mut seen = Vec::new();
    let st =
        plumb_capture::read_records(&bytes[..], |r| seen.push((r.ts_ns, r.linktype, r.orig_len)))
            .unwrap();
    assert_eq!(st.records, 3);
    assert_eq!(seen[0], (T0, 1, 74));
    assert_eq!(seen[1].0, T0 + 10 * MS);
}

/// The fuzz seeds are real tcpdump captures of one loopback connection:
/// Ethernet on `lo` (µs), Linux cooked v2 on `any` (ns), the first as
/// tshark rewrote it in pcapng, and gzip-compressed.
#[test]
fn real_tcpdump_captures() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/capture");
    let read = |name: &str| {
        plumb_capture::analyze_file(&dir.join(name), plumb_record::capture::Limits::default())
            .unwrap()
    };
    let eth = read("loopback.pcap");
    assert_eq!(eth.connections.len(), 1);
    let c = &eth.connections[0];
    assert!(c.handshake.complete);
    assert_eq!(
        (c.client.payload_bytes, c.server.payload_bytes),
        (3000, 200)
    );
    assert_eq!(c.client.syn.as_ref().unwrap().options.mss, Some(65495));
    assert_eq!(read("loopback.pcapng").connections, eth.connections);
    assert_eq!(read("loopback.pcap.gz").connections, eth.connections);
    let sll2 = read("any-sll2-nano.pcap");
    assert_eq!(sll2.connections.len(), 1);
    let c = &sll2.connections[0];
    assert!(c.handshake.complete);
    assert_eq!(c.client.payload_bytes, 2000);
    // This file's timestamps are not whole microseconds: nanoseconds kept.
    assert_ne!(c.handshake.rtt_ns.unwrap() % 1000, 0);
}

/// A big-endian pcap (as written on a big-endian host): the same records.
#[test]
fn big_endian_pcap() {
    let le = pcap_of(&handshake());
    let mut be = le.clone();
    let swap = |b: &mut [u8]| b.reverse();
    swap(&mut be[0..4]);
    swap(&mut be[4..6]);
    swap(&mut be[6..8]);
    for at in [8, 12, 16, 20] {
        swap(&mut be[at..at + 4]);
    }
    let mut at = 24;
    while at < be.len() {
        let caplen = u32::from_le_bytes(le[at + 8..at + 12].try_into().unwrap()) as usize;
        for f in 0..4 {
            swap(&mut be[at + 4 * f..at + 4 * f + 4]);
        }
        at += 16 + caplen;
    }
    assert_eq!(&be[..4], &[0xa1, 0xb2, 0xc3, 0xd4]);
    assert_eq!(analyze(&be).connections, analyze(&le).connections);
}
