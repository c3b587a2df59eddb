//! The time-sequence series drawn from a capture: what a short flow's
//! points hold, and that a capture ten times longer of the same flow keeps
//! no more points (memory set by flows, not length).
#![allow(clippy::unwrap_used)]

mod common;

use common::{handshake, pcap_of, Seg, MS, T0};
use plumb_capture::{read_records, Analysis, Analyzer};
use plumb_record::capture::Limits;

/// The handshake, then `n` client segments of 1000 bytes 100 µs apart, each
/// ACKed by the server 2 ms later, every 500th resent 1 ms after it was
/// first sent (with its own IP ID: a resend, not a copy).
fn flow(n: u32) -> Vec<u8> {
    let mut segs = handshake();
    for i in 0..n {
        let t = T0 + 20 * MS + u64::from(i) * 100_000;
        let seq = 1001 + i * 1000;
        let id = (2 * i + 1) as u16;
        segs.push((t, Seg::v4(true, seq).ack(5001).len(1000).id(id)));
        if i % 500 == 499 {
            let again = Seg::v4(true, seq).ack(5001).len(1000).id(id + 1);
            segs.push((t + MS, again));
        }
        let ack = Seg::v4(false, 5001).ack(seq + 1000).win(2000);
        segs.push((t + 2 * MS, ack));
    }
    // A capture's records are in time order.
    segs.sort_by_key(|(t, _)| *t);
    pcap_of(&segs)
}

fn analyse(bytes: &[u8], budget: usize) -> Analysis {
    let mut a = Analyzer::new(Limits::default()).with_series(budget);
    let read = read_records(bytes, |r| a.record(r)).unwrap();
    a.finish(read)
}

#[test]
fn a_short_flow_keeps_every_segment_ack_and_the_window_edge() {
    let a = analyse(&flow(20), 1000);
    assert_eq!(a.connections.len(), 1);
    let c = &a.connections[0];
    assert_eq!(c.client.retransmissions.total, 0);
    let s = c.client.series.as_ref().expect("series asked for");
    let sent: Vec<_> = s.data.bins.iter().filter_map(|(_, p)| p.sent).collect();
    assert_eq!(sent.len(), 20);
    assert_eq!((sent[0].start, sent[0].end), (0, 1000));
    assert_eq!(sent[19].end, 20_000);
    // The server's window, 2000 << 9, is the edge beyond each ACK.
    let last = s.acks.bins.last().unwrap().1;
    assert_eq!(last.ack, 20_000);
    assert_eq!(last.window, Some(2000 << 9));
    assert_eq!(last.edge, Some(20_000 + (2000 << 9)));
    // RTT from the capture point: 2 ms per timed segment.
    assert!(s.rtt.bins.iter().all(|(_, p)| p.min_ns == 2 * MS));
    assert!(!s.rtt.bins.is_empty());
}

#[test]
fn a_ten_times_longer_capture_keeps_no_more_points() {
    const BUDGET: usize = 200;
    let short = analyse(&flow(5_000), BUDGET);
    let long = analyse(&flow(50_000), BUDGET);
    let (s, l) = (
        short.connections[0].client.series.as_ref().unwrap(),
        long.connections[0].client.series.as_ref().unwrap(),
    );
    // The scenario: both overflowed their budget (5 000 segments in 200
    // bins), and the long one holds ten times the retransmissions.
    assert!(s.data.width_ns > 1_000 && l.data.width_ns > s.data.width_ns);
    assert_eq!(long.connections[0].client.retransmissions.total, 100);
    for (a, b) in [
        (s.data.bins.len(), l.data.bins.len()),
        (s.acks.bins.len(), l.acks.bins.len()),
        (s.rtt.bins.len(), l.rtt.bins.len()),
    ] {
        assert!(a <= BUDGET && b <= BUDGET, "{a} {b}");
        assert!(b >= BUDGET / 2 - 1, "{b}");
    }
    // First and last sequence numbers exact, retransmissions still drawn.
    let first = l.data.bins[0].1.sent.unwrap();
    let last = l.data.bins.last().unwrap().1.sent.unwrap();
    assert_eq!((first.start, last.end), (0, 50_000 * 1000));
    let resent = l.data.bins.iter().filter(|(_, p)| p.resent.is_some());
    assert!(resent.count() >= 50);
}

#[test]
fn why_pays_nothing() {
    let a = common::analyze(&flow(20));
    assert!(a.connections[0].client.series.is_none());
}
