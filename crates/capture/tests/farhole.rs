//! A path-MTU black hole from captures built in code, as a capture beside
//! the receiver sees one: the full-size copies never arrive, so what is
//! there is the handshake, a 37-byte first write and a silence, and then
//! the sender's proof that it had sent more — its later ACK's sequence
//! number far past the data that arrived (a stall, tcp_mtu_probing=0), or
//! the head resent in 1024-byte segments with data from further on
//! arriving before the gap is filled (tcp_mtu_probing=1). Each capture that
//! must not be named is tested beside its twin that must: an idle
//! connection, keep-alives, a short write after a pause, a pause resumed
//! at full size, random loss repaired at full size, an ICMP too-big.

mod common;

use common::{linux_syn_options, pcap_of, Link, Pcap, Seg, MS, T0};
use plumb_capture::{explain_all, CaptureFilters, Connection, FarStall, Proof};
use plumb_record::capture::Explanation;
use plumb_record::diagnosis::Limit;

/// The agreed full size: MSS 1460 less 12 B of timestamps.
const FULL: u32 = 1448;
/// The first byte after the client's 37-byte first write.
const HEAD: u32 = 1001 + 37;
/// What the stalled sender had sent past `HEAD` (twelve full segments).
const UNSEEN: u32 = 12 * FULL;
/// Linux's fallback size (tcp_base_mss).
const BASE: u32 = 1024;

fn at(t_ms: u64) -> u64 {
    T0 + t_ms * MS
}

fn data(t_ms: u64, seq: u32, len: u32) -> (u64, Seg) {
    (
        at(t_ms),
        Seg::v4(true, seq).ack(5001).win(502).len(len as usize),
    )
}

fn ack(t_ms: u64, a: u32) -> (u64, Seg) {
    (at(t_ms), Seg::v4(false, 5001).ack(a).win(2000))
}

/// Beside the server: the SYN, the SYN-ACK right after it, the client's
/// ACK a 15 ms round trip later, its 37-byte write and the server's ACK.
fn far_start() -> Vec<(u64, Seg)> {
    vec![
        (
            T0,
            Seg::v4(true, 1000)
                .syn()
                .win(64240)
                .opts(&linux_syn_options(1460, 7)),
        ),
        (
            T0 + 30_000,
            Seg::v4(false, 5000)
                .syn()
                .ack(1001)
                .win(65160)
                .opts(&linux_syn_options(1460, 7)),
        ),
        (at(15), Seg::v4(true, 1001).ack(5001).win(502)),
        (
            at(15) + 50_000,
            Seg::v4(true, 1001).ack(5001).win(502).len(37),
        ),
        (at(15) + 60_000, Seg::v4(false, 5001).ack(HEAD).win(2000)),
    ]
}

/// The server closes after 15 s; the client answers with an ACK whose
/// sequence number is `client_seq`.
fn closed(mut s: Vec<(u64, Seg)>, client_seq: u32) -> Vec<(u64, Seg)> {
    s.push((at(15_230), Seg::v4(false, 5001).ack(HEAD).win(2000).fin()));
    s.push((at(15_245), Seg::v4(true, client_seq).ack(5002).win(502)));
    s
}

/// tcp_mtu_probing=0: nothing after the 37 bytes until the server closes,
/// and the client's ACK of the FIN carries the sequence past the twelve
/// full-size segments it had sent.
fn stall() -> Vec<(u64, Seg)> {
    closed(far_start(), HEAD + UNSEEN)
}

/// After 1.5 s of silence the first data is `first` bytes at `HEAD`; then
/// a segment from two full sizes on arrives before the bytes between (a
/// segment lost after the silence, or not resent yet), the gap is filled
/// and the transfer goes on at full size.
fn resumed(first: u32) -> Vec<(u64, Seg)> {
    let mut s = far_start();
    s.push(data(1_500, HEAD, first));
    s.push(ack(1_500, HEAD + first));
    s.push(data(1_515, HEAD + 2 * FULL, FULL));
    s.push(ack(1_515, HEAD + first));
    s.push(data(1_530, HEAD + first, 2 * FULL - first));
    s.push(ack(1_530, HEAD + 3 * FULL));
    let mut seq = HEAD + 3 * FULL;
    for i in 0..20u64 {
        s.push(data(1_531 + i, seq, FULL));
        seq += FULL;
        s.push(ack(1_546 + i, seq));
    }
    s.sort_by_key(|(ts, _)| *ts);
    s
}

/// tcp_mtu_probing=1: after 3.4 s the head comes back as a 1024-byte
/// segment alone, then GRO-merged data from past the twelve lost segments
/// arrives before the gap behind them is filled, and the rest follows.
fn fallback() -> Vec<(u64, Seg)> {
    let mut s = far_start();
    s.push(data(3_437, HEAD, BASE));
    s.push(ack(3_437, HEAD + BASE));
    s.push(data(3_452, HEAD + UNSEEN, 2 * BASE));
    s.push(ack(3_452, HEAD + BASE));
    let mut seq = HEAD + BASE;
    let mut t = 3_453;
    while seq < HEAD + UNSEEN {
        let len = BASE.min(HEAD + UNSEEN - seq);
        s.push(data(t, seq, len));
        seq += len;
        s.push(ack(t, seq));
        t += 1;
    }
    seq = HEAD + UNSEEN + 2 * BASE;
    for _ in 0..200 {
        s.push(data(t, seq, 2 * BASE));
        seq += 2 * BASE;
        s.push(ack(t, seq));
        t += 1;
    }
    s
}

fn one(segs: &[(u64, Seg)]) -> (Explanation, Connection) {
    let a = common::analyze(&pcap_of(segs));
    let mut v = explain_all(&a, &CaptureFilters::default(), None, None);
    assert_eq!(v.len(), 1, "one connection carried data");
    (v.remove(0).entry, a.connections[0].clone())
}

fn found(segs: &[(u64, Seg)]) -> Option<FarStall> {
    one(segs).1.client.far_hole.found
}

fn limit(segs: &[(u64, Seg)]) -> Option<Limit> {
    one(segs).0.diagnosis.limit
}

#[test]
fn a_stall_is_named_from_the_receiving_end_by_the_senders_later_ack() {
    let (x, c) = one(&stall());
    // The scenario: the handshake and 37 bytes arrived, nothing at full
    // size, no ICMP; the client's last segment is a pure ACK past them.
    assert!(x.flow.handshake);
    assert_eq!(x.flow.data_bytes, 37);
    assert_eq!(c.client.largest_segment, 37);
    assert_eq!(c.icmp_too_big, 0);
    let s = c
        .client
        .far_hole
        .found
        .expect("a black hole past the capture");
    assert_eq!(s.proof, Proof::Ack);
    assert_eq!((s.arrived, s.full, s.fallback), (37, FULL, None));
    assert_eq!((s.proof_seq, s.unseen), (37 + UNSEEN + 1, UNSEEN));
    assert!((15_200..15_300).contains(&s.silence_ms), "{}", s.silence_ms);
    let d = &x.diagnosis;
    assert_eq!(d.limit, Some(Limit::PathMtu), "{}", d.summary);
    for words in [
        "a path-MTU black hole before this capture point",
        "the sender's segments stopped arriving after 37 B for 15.2 s",
        "its later ACK carries sequence 17,414: 17,376 B it sent never arrived here, while its small segments did",
        "ICMP 'fragmentation needed' is probably filtered",
    ] {
        assert!(d.summary.contains(words), "{words}: {}", d.summary);
    }
    let line = |what: &str| d.evidence.iter().find(|e| e.what == what).map(|e| e.value);
    assert_eq!(line("agreed full segment size"), Some(f64::from(FULL)));
    assert_eq!(
        line("bytes sent that never arrived"),
        Some(f64::from(UNSEEN))
    );
    assert_eq!(line("data that arrived before it"), Some(37.0));
    assert!(line("silence before the sender's next segment").is_some_and(|v| v > 15.0));
    // No surer than the sender's side, which sees the lost copies.
    assert!(d.confidence.is_some_and(|c| c <= 0.6), "{:?}", d.confidence);
    assert!(
        d.fixes
            .iter()
            .any(|f| f.commands.iter().any(|c| c.contains("tcp_mtu_probing=1"))),
        "{:?}",
        d.fixes
    );
}

#[test]
fn a_fallback_is_named_from_the_receiving_end_with_the_size_that_came_back() {
    let (x, c) = one(&fallback());
    // The scenario: 37 bytes, 3.4 s of silence, 1024 bytes at the head,
    // then data from past the gap; no segment at the full size.
    assert!(x.flow.handshake);
    assert!(x.flow.data_bytes > 400_000, "{}", x.flow.data_bytes);
    assert!(c.client.largest_segment > FULL, "GRO-merged segments");
    let s = c
        .client
        .far_hole
        .found
        .expect("a black hole past the capture");
    assert_eq!(s.fallback, Some(BASE));
    assert_eq!(s.proof, Proof::Data);
    assert_eq!(s.unseen, UNSEEN - BASE);
    let d = &x.diagnosis;
    assert_eq!(d.limit, Some(Limit::PathMtu), "{}", d.summary);
    for words in [
        "before this capture point",
        "stopped arriving after 37 B for 3.4 s, then came back as 1024-byte ones where 1448 were agreed",
        "tcp_mtu_probing=1",
    ] {
        assert!(d.summary.contains(words), "{words}: {}", d.summary);
    }
    let line = |what: &str| d.evidence.iter().find(|e| e.what == what).map(|e| e.value);
    assert_eq!(line("first data segment after the silence"), Some(1024.0));
    assert_eq!(
        d.findings
            .iter()
            .filter(|f| f.limit == Limit::PathMtu)
            .count(),
        1
    );
}

/// An idle connection: keystrokes seconds apart, each smaller than a full
/// segment and where the receiver waits. A silence and small segments, but
/// nothing past what arrived.
#[test]
fn an_idle_connection_with_small_writes_is_no_black_hole() {
    let mut s = far_start();
    let mut seq = HEAD;
    for i in 1..=5u64 {
        s.push(data(i * 2_500, seq, 36));
        seq += 36;
        s.push(ack(i * 2_500 + 1, seq));
    }
    let s = closed(s, seq);
    let (x, c) = one(&s);
    assert_eq!(x.flow.data_bytes, 37 + 5 * 36);
    assert_eq!(c.client.far_hole.found, None);
    assert_ne!(x.diagnosis.limit, Some(Limit::PathMtu));
    // Its twin, the same silence closed by an ACK past the data, is named.
    assert_eq!(limit(&stall()), Some(Limit::PathMtu));
}

/// Keep-alives carry the byte *below* what arrived (Linux none, others
/// one): a silence, then segments that prove nothing was sent beyond.
#[test]
fn keep_alives_after_a_silence_are_no_black_hole() {
    let mut s = far_start();
    s.push((at(7_215), Seg::v4(true, HEAD - 1).ack(5001).win(502)));
    s.push(ack(7_230, HEAD));
    s.push((
        at(14_415),
        Seg::v4(true, HEAD - 1).ack(5001).win(502).len(1),
    ));
    s.push(ack(14_430, HEAD));
    let quiet = closed(s.clone(), HEAD);
    let (x, c) = one(&quiet);
    assert_eq!(c.client.packets, 6, "the keep-alives are in the capture");
    assert_eq!(c.client.far_hole.found, None);
    assert_ne!(x.diagnosis.limit, Some(Limit::PathMtu));
    // Its twin: the same keep-alives, then the ACK past the data.
    let twin = closed(s, HEAD + UNSEEN);
    assert_eq!(limit(&twin), Some(Limit::PathMtu));
}

/// A short write after a pause (an application's, not a fallback's size),
/// even with a segment lost after it: no black hole; the twin whose first
/// segment after the pause is 1024 bytes is one.
#[test]
fn a_short_write_after_a_pause_is_no_black_hole() {
    let (x, c) = one(&resumed(36));
    assert!(c.client.gaps >= 1, "a gap opened after the pause");
    assert_eq!(c.client.far_hole.found, None);
    assert_ne!(x.diagnosis.limit, Some(Limit::PathMtu));
    assert_eq!(found(&resumed(BASE)).map(|s| s.fallback), Some(Some(BASE)));
}

/// Random loss repaired at full size: the head resent after a silence
/// arrives at full size, so the full size passes, whatever gaps follow.
#[test]
fn loss_repaired_at_full_size_is_no_black_hole() {
    let (x, c) = one(&resumed(FULL));
    assert!(c.client.gaps >= 1, "a gap opened after the silence");
    assert!(c.client.largest_segment >= FULL);
    assert_eq!(c.client.far_hole.found, None);
    assert_ne!(x.diagnosis.limit, Some(Limit::PathMtu));
    assert_eq!(limit(&resumed(BASE)), Some(Limit::PathMtu));
}

/// An application that pauses and goes on at full size, and closes with
/// its FIN where the data ends.
#[test]
fn an_application_that_resumes_at_full_size_is_no_black_hole() {
    let mut s = far_start();
    let mut seq = HEAD;
    for pause in [2_000u64, 6_000] {
        for i in 0..30 {
            s.push(data(pause + i, seq, FULL));
            seq += FULL;
            s.push(ack(pause + i + 15, seq));
        }
    }
    s.push((at(9_000), Seg::v4(true, seq).ack(5001).win(502).fin()));
    s.sort_by_key(|(ts, _)| *ts);
    let (x, c) = one(&s);
    assert_eq!(x.flow.data_bytes, 37 + 60 * u64::from(FULL));
    assert_eq!(c.client.far_hole.found, None);
    assert_ne!(x.diagnosis.limit, Some(Limit::PathMtu));
    assert_eq!(limit(&stall()), Some(Limit::PathMtu));
}

/// With an ICMP "fragmentation needed" quoting the connection in the
/// capture, the sender was told: not a black hole.
#[test]
fn an_icmp_too_big_in_the_capture_is_no_black_hole_from_either_end() {
    let mut p = Pcap::new(1, false);
    for (ts, s) in stall() {
        p.record(ts, &s.frame(Link::Ethernet));
    }
    let quoted = Seg::v4(true, HEAD)
        .ack(5001)
        .len(FULL as usize)
        .frame(Link::Raw);
    let icmp = common::icmp_too_big(&quoted);
    p.record(at(20), &icmp);
    let a = common::analyze(&p.buf);
    let c = &a.connections[0];
    // The scenario: the same silence and proof, and the ICMP message.
    assert_eq!(c.icmp_too_big, 1);
    assert!(c.client.far_hole.found.is_some());
    let x = explain_all(&a, &CaptureFilters::default(), None, None);
    let d = &x[0].diagnosis;
    assert!(!d.summary.contains("black hole"), "{}", d.summary);
    assert_eq!(limit(&stall()), Some(Limit::PathMtu));
}

/// The same capture without its handshake: the agreed size and the RTT
/// are unknown, so nothing is claimed.
#[test]
fn without_the_handshake_nothing_is_claimed() {
    let mut s = stall();
    s.drain(..3);
    let (x, c) = one(&s);
    assert!(!x.flow.handshake);
    assert_eq!(c.client.far_hole.found, None);
    assert_ne!(x.diagnosis.limit, Some(Limit::PathMtu));
    assert_eq!(limit(&stall()), Some(Limit::PathMtu));
}
