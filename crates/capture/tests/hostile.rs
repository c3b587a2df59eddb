//! Hostile and broken inputs: a clear error for a broken container, a
//! counted skip for a broken packet, never a panic or a hang; and a
//! million one-packet flows under a small ceiling keep the table bounded.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::Read;

use common::*;
use plumb_capture::{Analyzer, Error};
use plumb_record::capture::{Limits, Truncation};

fn err(bytes: &[u8]) -> Error {
    plumb_capture::analyze(bytes, Limits::default()).unwrap_err()
}

#[test]
fn wrong_magic_and_empty_input() {
    assert!(matches!(err(b"GIF89a..........."), Error::BadMagic { found } if found == b"GIF8"));
    assert!(matches!(err(b""), Error::BadMagic { found } if found.is_empty()));
    // gzip of something that is not a capture.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, b"hello world").unwrap();
    assert!(matches!(err(&gz.finish().unwrap()), Error::BadMagic { .. }));
    // gzip cut short.
    assert!(matches!(
        err(&[0x1f, 0x8b, 8, 0]),
        Error::Io(_) | Error::BadMagic { .. }
    ));
}

/// Where each record of a pcap made by `pcap_of` starts, and its end.
fn record_starts(segs: &[(u64, Seg)]) -> Vec<usize> {
    let mut at = vec![24];
    for (_, s) in segs {
        let next = at.last().unwrap() + 16 + s.frame(Link::Ethernet).len();
        at.push(next);
    }
    at
}

fn cut(bytes: &[u8]) -> plumb_capture::Analysis {
    plumb_capture::analyze(bytes, Limits::default()).unwrap()
}

/// A pcap cut inside its file header is not a capture; cut anywhere after
/// it, the whole records before the cut are read and the cut is reported:
/// the packet it follows and the byte its record starts at.
#[test]
fn a_pcap_cut_short_is_read_up_to_the_cut() {
    let segs = handshake();
    let bytes = pcap_of(&segs);
    let starts = record_starts(&segs);
    assert_eq!(
        *starts.last().unwrap(),
        bytes.len(),
        "the premise: record sizes"
    );
    for at in [0, 1, 10, 23] {
        assert!(
            matches!(err(&bytes[..at]), Error::CutHeader | Error::BadMagic { .. }),
            "cut at {at}: {}",
            err(&bytes[..at])
        );
    }
    assert_eq!(
        cut(&bytes[..24]).read.truncated,
        None,
        "a header and no records"
    );
    for at in [
        25,
        24 + 10,
        starts[1] + 15,
        starts[1] + 16,
        starts[2] + 40,
        bytes.len() - 1,
    ] {
        let a = cut(&bytes[..at]);
        let whole = starts.iter().filter(|&&s| s <= at).count() as u64 - 1;
        let start = starts[whole as usize] as u64;
        assert_eq!(a.read.records, whole, "cut at {at}");
        assert_eq!(
            a.read.truncated,
            Some(Truncation {
                after_packet: whole,
                at_byte: start
            }),
            "cut at {at}"
        );
        assert_eq!(a.decode.tcp, whole, "cut at {at}");
    }
    // Cut at a record's end: nothing says more was meant to follow.
    assert_eq!(cut(&bytes[..starts[2]]).read.truncated, None);
    assert_eq!(cut(&bytes).read.truncated, None);
}

#[test]
fn a_pcapng_cut_short_is_read_up_to_the_cut() {
    let mut ng = PcapNg::new();
    let shb = ng.buf.len();
    ng.interface(1, None);
    let first = ng.buf.len();
    let segs = handshake();
    ng.packet(0, 0, &segs[0].1.frame(Link::Ethernet));
    let second = ng.buf.len();
    ng.packet(0, 10, &segs[1].1.frame(Link::Ethernet));
    let n = ng.buf.len();
    for at in [6, 20, shb - 1] {
        assert!(
            matches!(err(&ng.buf[..at]), Error::CutHeader),
            "cut at {at}: {}",
            err(&ng.buf[..at])
        );
    }
    for (at, after, start) in [
        (shb + 5, 0, shb),
        (first + 3, 0, first),
        (second + 30, 1, second),
        (n - 3, 1, second),
    ] {
        let a = cut(&ng.buf[..at]);
        assert_eq!(
            a.read.truncated,
            Some(Truncation {
                after_packet: after,
                at_byte: start as u64
            }),
            "cut at {at}"
        );
        assert_eq!(a.read.records, after, "cut at {at}");
    }
}

/// A gzip stream cut short ends the capture where the decompressed bytes
/// end: inside a record, or (its trailer cut) after the last one.
#[test]
fn a_gzip_stream_cut_short_is_read_up_to_the_cut() {
    let segs = handshake();
    let plain = pcap_of(&segs);
    let starts = record_starts(&segs);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
    std::io::Write::write_all(&mut gz, &plain).unwrap();
    let gz = gz.finish().unwrap();
    // Stored (uncompressed) deflate: a 10-byte gzip header and a 5-byte
    // block header, so byte k of the pcap is byte 15 + k of the stream.
    assert_eq!(
        &gz[15..15 + plain.len()],
        &plain[..],
        "the premise: stored deflate"
    );
    let whole = cut(&gz);
    assert_eq!((whole.read.records, whole.read.truncated), (3, None));
    for at in [starts[1] + 20, starts[2] + 1] {
        let a = cut(&gz[..15 + at]);
        let n = starts.iter().filter(|&&s| s <= at).count() - 1;
        assert!(a.read.gzip);
        assert_eq!(
            a.read.truncated,
            Some(Truncation {
                after_packet: n as u64,
                at_byte: starts[n] as u64
            }),
            "cut at {at}"
        );
    }
    // Only the trailer (CRC and length) cut: every record, and the cut.
    let a = cut(&gz[..gz.len() - 3]);
    assert_eq!(
        a.read.truncated,
        Some(Truncation {
            after_packet: 3,
            at_byte: plain.len() as u64
        })
    );
    // The gzip header itself cut: not a capture.
    assert!(plumb_capture::analyze(&gz[..12], Limits::default()).is_err());
}

#[test]
fn bad_pcapng_block_length() {
    let mut ng = PcapNg::new();
    ng.interface(1, None);
    let at = ng.buf.len();
    ng.packet(0, 0, &handshake()[0].1.frame(Link::Ethernet));
    // A block length under the 12-byte minimum.
    let mut short = ng.buf.clone();
    short[at + 4..at + 8].copy_from_slice(&8u32.to_le_bytes());
    assert!(
        matches!(
            err(&short),
            Error::Malformed {
                what: "pcapng block",
                ..
            }
        ),
        "{}",
        err(&short)
    );
    // Trailing length disagreeing with the leading one.
    let mut odd = ng.buf.clone();
    let n = odd.len();
    odd[n - 4..].copy_from_slice(&999u32.to_le_bytes());
    assert!(
        matches!(err(&odd), Error::Malformed { .. }),
        "{}",
        err(&odd)
    );
    // A length past anything buffered: the file ends inside the block it
    // claims, read up to it (as a cut), or the claim is refused.
    let mut huge = ng.buf.clone();
    huge[at + 4..at + 8].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    match plumb_capture::analyze(&huge[..], Limits::default()) {
        Err(Error::TooLarge { .. }) => {}
        Ok(a) => assert_eq!(
            a.read.truncated,
            Some(Truncation {
                after_packet: 0,
                at_byte: at as u64
            })
        ),
        Err(e) => panic!("{e}"),
    }
    // Followed by more than MAX_RECORD bytes, it is refused.
    huge.resize(huge.len() + plumb_capture::MAX_RECORD + 1024, 0);
    assert!(
        matches!(err(&huge), Error::TooLarge { .. }),
        "{}",
        err(&huge)
    );
}

#[test]
fn record_longer_than_snaplen_is_skipped_and_counted() {
    let mut p = Pcap::with_snaplen(1, false, 60);
    let segs = handshake();
    p.record(T0, &segs[0].1.frame(Link::Ethernet)); // 74 > 60
    p.record_cut(T0 + 10 * MS, &segs[1].1.frame(Link::Ethernet), 60);
    let a = analyze(&p.buf);
    assert_eq!(a.read.oversize_records, 1);
    assert_eq!(a.read.records, 1);
    // The cut SYN-ACK (options beyond 60 bytes) is a truncated header.
    assert_eq!(a.decode.truncated, 1);
}

#[test]
fn malformed_options_and_headers_are_skipped_and_counted() {
    let mut segs = handshake();
    // MSS option claiming length 9 inside 8 option bytes.
    segs[0].1.options = vec![2, 9, 5, 0xb4, 1, 1, 1, 1];
    let mut p = Pcap::new(1, false);
    for (ts, s) in &segs {
        p.record(*ts, &s.frame(Link::Ethernet));
    }
    // A TCP data offset of 2 words.
    let mut f = Seg::v4(true, 1).frame(Link::Ethernet);
    f[14 + 20 + 12] = 0x20;
    p.record(T0 + 30 * MS, &f);
    // Not IP at all (ARP ether type), and an unknown link type's frame.
    let mut arp = f.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    p.record(T0 + 31 * MS, &arp);
    let a = analyze(&p.buf);
    assert_eq!(a.decode.malformed, 2, "{:?}", a.decode);
    assert_eq!(a.decode.tcp, 2);
    assert_eq!(a.decode.not_ip, 1);
    assert!(a.connections[0].client.syn.is_none());
    let mut q = Pcap::new(147, false);
    q.record(T0, &f);
    assert_eq!(analyze(&q.buf).decode.unknown_link, 1);
}

#[test]
fn random_bytes_never_panic() {
    // A deterministic scramble of a real capture's bytes, at every length.
    let base = pcap_of(&handshake());
    let mut x: u32 = 12345;
    for round in 0..300 {
        let mut b = base.clone();
        for _ in 0..(round % 7 + 1) {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let i = 24 + (x as usize >> 8) % (b.len() - 24);
            b[i] = (x >> 3) as u8;
        }
        let cut = (x as usize >> 4) % b.len() + 1;
        let _ = plumb_capture::analyze(&b[..cut], Limits::default());
    }
}

/// A pcap of `n` one-SYN flows, made as it is read.
struct ManyFlows {
    header: Vec<u8>,
    frame: Vec<u8>,
    n: u32,
    i: u32,
    pending: Vec<u8>,
}

impl Read for ManyFlows {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pending.is_empty() {
            if !self.header.is_empty() {
                self.pending = std::mem::take(&mut self.header);
            } else if self.i < self.n {
                let i = self.i;
                self.i += 1;
                let mut f = self.frame.clone();
                // Source address 10.x.y.z and port: one flow per record.
                f[27..30].copy_from_slice(&i.to_be_bytes()[1..]);
                f[34..36].copy_from_slice(&(1024 + (i % 60000) as u16).to_be_bytes());
                let mut rec = Vec::with_capacity(16 + f.len());
                rec.extend_from_slice(&(1_700_000_000 + i / 1000).to_le_bytes());
                rec.extend_from_slice(&(i % 1000 * 1000).to_le_bytes());
                rec.extend_from_slice(&(f.len() as u32).to_le_bytes());
                rec.extend_from_slice(&(f.len() as u32).to_le_bytes());
                rec.extend_from_slice(&f);
                self.pending = rec;
            } else {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        Ok(n)
    }
}

#[test]
fn a_million_one_packet_flows_stay_under_the_ceiling() {
    const N: u32 = 1_000_000;
    const CAP: usize = 1000;
    let flows = ManyFlows {
        header: Pcap::new(1, false).buf,
        frame: Seg::v4(true, 7)
            .syn()
            .opts(&linux_syn_options(1460, 7))
            .frame(Link::Ethernet),
        n: N,
        i: 0,
        pending: Vec::new(),
    };
    let mut a = Analyzer::new(Limits {
        max_connections: CAP,
    });
    let mut most = 0;
    let read = plumb_capture::read_records(flows, |r| {
        a.record(r);
        most = most.max(a.tracked());
    })
    .unwrap();
    assert_eq!(read.records, u64::from(N));
    assert!(most <= CAP, "{most} tracked at once");
    let out = a.finish(read);
    assert_eq!(out.decode.tcp, u64::from(N));
    assert_eq!(
        out.dropped.connections + out.connections.len() as u64,
        u64::from(N)
    );
    assert_eq!(out.dropped.packets, out.dropped.connections);
    assert!(out.connections.len() <= CAP);
}

/// Timestamps at the end of what pcapng can say (µs units, the ACK of the
/// handshake at u64::MAX µs, which saturates in ns): the handshake RTT is
/// as long as a u64 holds, and a retransmission after it, and zero-window
/// episodes spanning it, are counted without overflowing.
#[test]
fn saturated_timestamps_overflow_nothing() {
    let mut p = PcapNg::new();
    p.interface(1, None);
    let far = u64::MAX;
    let segs = [
        (
            0,
            Seg::v4(true, 1000)
                .syn()
                .win(64240)
                .opts(&linux_syn_options(1460, 7)),
        ),
        (
            1,
            Seg::v4(false, 5000)
                .syn()
                .ack(1001)
                .win(0)
                .opts(&linux_syn_options(1400, 9)),
        ),
        (far - 3, Seg::v4(true, 1001).ack(5001).win(0)),
        (far - 2, Seg::v4(true, 1001).ack(5001).len(100)),
        (far - 1, Seg::v4(false, 5001).ack(1001).win(0)),
        // Sent again (a new IP ID): a retransmission, not a copy, though
        // both times saturate to the same instant.
        (far, Seg::v4(true, 1001).ack(5001).len(100).id(2)),
    ];
    for (ts, s) in &segs {
        p.packet(0, *ts, &s.frame(Link::Ethernet));
    }
    let a = analyze(&p.buf);
    let c = &a.connections[0];
    assert_eq!(c.client.retransmissions.total, 1, "{c:?}");
}
