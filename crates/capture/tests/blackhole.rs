//! A path-MTU black hole from captures built in code, as a capture beside
//! the sender sees one: the handshake and a 37-byte first write pass, the
//! full-size segments behind them do not, and the sender resends the head
//! at each timeout. It stalls (tcp_mtu_probing=0), or falls back to
//! smaller segments that pass (tcp_mtu_probing=1); random loss of
//! full-size segments that are acknowledged in the end is no black hole.

mod common;

use common::{linux_syn_options, pcap_of, Link, Pcap, Seg, MS, T0};
use plumb_capture::{explain_all, CaptureFilters, BLACK_HOLE_SENDS};
use plumb_record::capture::Explanation;
use plumb_record::diagnosis::Limit;

const FULL: u32 = 1448;
const SMALL: u32 = 1012;
/// The first byte after the client's 37-byte first write.
const HEAD: u32 = 1001 + 37;
/// The timeouts at which the sender resends the head, ms after T0.
const TIMEOUTS: [u64; 4] = [260, 720, 1640, 3480];

fn data(t_ms: u64, seq: u32, len: u32) -> (u64, Seg) {
    (
        T0 + t_ms * MS,
        Seg::v4(true, seq).ack(5001).win(502).len(len as usize),
    )
}

fn ack(t_ms: u64, a: u32) -> (u64, Seg) {
    (T0 + t_ms * MS, Seg::v4(false, 5001).ack(a).win(2000))
}

/// The handshake over 15 ms, the 37-byte write acknowledged, ten full-size
/// segments sent, and the head resent at `TIMEOUTS` — all at full size.
fn stalled() -> Vec<(u64, Seg)> {
    let mut s = vec![
        (
            T0,
            Seg::v4(true, 1000)
                .syn()
                .win(64240)
                .opts(&linux_syn_options(1460, 7)),
        ),
        (
            T0 + 15 * MS,
            Seg::v4(false, 5000)
                .syn()
                .ack(1001)
                .win(65160)
                .opts(&linux_syn_options(1460, 7)),
        ),
        (
            T0 + 15 * MS + 50_000,
            Seg::v4(true, 1001).ack(5001).win(502),
        ),
        data(16, 1001, 37),
        ack(31, HEAD),
    ];
    for i in 0..10 {
        s.push(data(32, HEAD + i * FULL, FULL));
    }
    for t in TIMEOUTS {
        s.push(data(t, HEAD, FULL));
    }
    s
}

/// [`stalled`], then the head resent in `SMALL`-byte segments after the
/// last timeout, each acknowledged, and a second of data at that size. As
/// a capture on the sending host shows it, the last full-size segment of
/// the first window is resent whole: a GSO packet the device cuts to the
/// new size, which is why it passes. Last, a GSO packet at the new size
/// is resent at the head and acknowledged.
fn recovered() -> Vec<(u64, Seg)> {
    let mut s = stalled();
    let mut seq = HEAD;
    let mut t = TIMEOUTS[3] + 500;
    let gso = HEAD + 9 * FULL;
    for i in 0..600u32 {
        let len = if seq == gso {
            FULL
        } else if seq < gso {
            SMALL.min(gso - seq)
        } else {
            SMALL
        };
        s.push(data(t, seq, len));
        seq += len;
        if i % 2 == 1 {
            s.push(ack(t + 15, seq));
        }
        t += 2;
    }
    // A GSO packet of three segments at the new size, resent at the head
    // after a timeout and acknowledged: no full-size segment passed.
    s.push(data(t + 20, seq, 3 * SMALL));
    s.push(data(t + 320, seq, 3 * SMALL));
    s.push(ack(t + 335, seq + 3 * SMALL));
    s.sort_by_key(|(ts, _)| *ts);
    s
}

/// Full-size segments throughout; the head is lost three times in a row
/// and then acknowledged at full size, and the transfer goes on.
fn unlucky() -> Vec<(u64, Seg)> {
    let mut s = stalled();
    s.retain(|(ts, _)| *ts < T0 + TIMEOUTS[3] * MS);
    let mut seq = HEAD + 10 * FULL;
    s.push(ack(TIMEOUTS[2] + 15, seq));
    let mut t = TIMEOUTS[2] + 16;
    for i in 0..600u32 {
        s.push(data(t, seq, FULL));
        seq += FULL;
        if i % 2 == 1 {
            s.push(ack(t + 15, seq));
        }
        t += 2;
    }
    s.sort_by_key(|(ts, _)| *ts);
    s
}

fn one(segs: &[(u64, Seg)]) -> (Explanation, plumb_capture::Connection) {
    let a = common::analyze(&pcap_of(segs));
    let mut v = explain_all(&a, &CaptureFilters::default(), None, None);
    assert_eq!(v.len(), 1, "one connection carried data");
    (v.remove(0).entry, a.connections[0].clone())
}

#[test]
fn full_size_segments_resent_without_an_ack_are_a_black_hole() {
    let (x, c) = one(&stalled());
    // The scenario: the handshake and the small write passed, the head was
    // sent five times at full size, never acknowledged, no ICMP.
    assert!(x.flow.handshake);
    assert_eq!(c.icmp_too_big, 0);
    let b = &c.client.black_hole;
    let lost = b.lost.expect("a lost run");
    assert_eq!((lost.len, lost.sends), (FULL, 5));
    assert!(lost.sends >= BLACK_HOLE_SENDS);
    assert_eq!(b.acked_max, 37);
    assert_eq!(b.fallback, None);
    assert_eq!(c.client.retransmissions.timeout, 4, "{:?}", c.client);
    let d = &x.diagnosis;
    assert_eq!(d.limit, Some(Limit::PathMtu), "{}", d.summary);
    assert!(
        d.summary.contains(
            "1448-byte segments were sent 5 times and never acknowledged while 37-byte ones passed"
        ),
        "{}",
        d.summary
    );
    assert!(
        d.summary
            .contains("ICMP 'fragmentation needed' is probably filtered"),
        "{}",
        d.summary
    );
    let line = |what: &str| d.evidence.iter().find(|e| e.what == what).map(|e| e.value);
    assert_eq!(line("full-size segment sent without an ACK"), Some(5.0));
    assert_eq!(line("its payload"), Some(f64::from(FULL)));
    assert_eq!(line("largest segment that passed"), Some(37.0));
    let stalled_s = line("first copy to the last").expect("the stall");
    assert!((stalled_s - 3.22).abs() < 0.01, "{stalled_s}");
    assert!(
        d.fixes
            .iter()
            .any(|f| f.commands.iter().any(|c| c.contains("tcp_mtu_probing=1"))),
        "{:?}",
        d.fixes
    );
}

#[test]
fn a_sender_that_falls_back_to_smaller_segments_is_named_with_the_size_that_passed() {
    let (x, c) = one(&recovered());
    let b = &c.client.black_hole;
    let lost = b.lost.expect("a lost run");
    assert_eq!((lost.len, lost.sends), (FULL, 5));
    assert_eq!(b.fallback, Some(SMALL));
    assert_eq!(b.acked_max, SMALL, "the full size never passed");
    assert!(x.flow.data_bytes > 500_000, "{}", x.flow.data_bytes);
    let d = &x.diagnosis;
    assert_eq!(d.limit, Some(Limit::PathMtu), "{}", d.summary);
    assert!(
        d.summary.contains(
            "1448-byte segments were sent 5 times and never acknowledged, then the sender resent them as 1012-byte ones, which passed"
        ),
        "{}",
        d.summary
    );
    assert_eq!(
        d.findings
            .iter()
            .filter(|f| f.limit == Limit::PathMtu)
            .count(),
        1,
        "one path-MTU finding"
    );
}

/// Random loss: the head lost three times, then acknowledged at full size.
#[test]
fn full_size_segments_lost_and_then_acknowledged_are_no_black_hole() {
    let (x, c) = one(&unlucky());
    // The scenario: the head was resent after timeouts at full size...
    assert!(c.client.retransmissions.timeout >= 3, "{:?}", c.client);
    let b = &c.client.black_hole;
    // ...and acknowledged at that size in the end.
    assert_eq!(b.acked_max, FULL);
    assert_eq!(b.lost, None);
    let d = &x.diagnosis;
    assert_ne!(d.limit, Some(Limit::PathMtu), "{}", d.summary);
    assert!(!d.summary.contains("black hole"), "{}", d.summary);
}

/// Two copies of the head are not enough: a timeout and its one resend
/// happen to any lossy flow.
#[test]
fn two_copies_are_not_enough() {
    let mut segs = stalled();
    segs.retain(|(ts, _)| *ts < T0 + TIMEOUTS[1] * MS);
    let (x, c) = one(&segs);
    assert_eq!(c.client.retransmissions.timeout, 1);
    assert_eq!(c.client.black_hole.lost, None);
    assert_ne!(x.diagnosis.limit, Some(Limit::PathMtu));
}

/// With an ICMP "fragmentation needed" quoting the connection in the
/// capture the sender was told: the ICMP evidence stands, and the segments
/// are not called a black hole.
#[test]
fn an_icmp_too_big_in_the_capture_is_no_black_hole() {
    let mut p = Pcap::new(1, false);
    for (ts, s) in stalled() {
        p.record(ts, &s.frame(Link::Ethernet));
    }
    let quoted = Seg::v4(true, HEAD)
        .ack(5001)
        .len(FULL as usize)
        .frame(Link::Raw);
    let icmp = common::icmp_too_big(&quoted);
    p.record(T0 + 33 * MS, &icmp);
    let a = common::analyze(&p.buf);
    let c = &a.connections[0];
    // The scenario: the same lost run, and the ICMP message for it.
    assert_eq!(c.icmp_too_big, 1);
    assert_eq!(c.client.black_hole.lost.map(|l| l.sends), Some(5));
    let x = explain_all(&a, &CaptureFilters::default(), None, None);
    let d = &x[0].diagnosis;
    assert!(!d.summary.contains("black hole"), "{}", d.summary);
}
