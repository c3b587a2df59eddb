//! A path-MTU black hole as one direction's segments show it: the segment
//! at the head of the unacknowledged data resent again and again at full
//! size and never acknowledged, while smaller segments of the same sender
//! are. A router that cannot forward a packet with "don't fragment" set
//! answers with ICMP "fragmentation needed" (ICMPv6 "packet too big"); where
//! a firewall filters that answer, the sender learns nothing and resends the
//! same segment at each timeout (RFC 2923 §2.1). Linux with
//! `net.ipv4.tcp_mtu_probing=1` gives up after a few timeouts and resends
//! the head in smaller segments, which pass (RFC 4821): the capture then
//! shows the full-size copies, then smaller ones at the same sequence, then
//! the ACK moving on.
//!
//! The state is a few numbers per direction, whatever the capture's length:
//! the head segment being resent (a *run*), and one segment waiting for its
//! ACK (the largest recent one), whose size passed once an ACK covers it
//! while no smaller segment was sent over its bytes.

use serde::Serialize;

use crate::seq::seq_gt;

/// Copies of the same head segment, the first send included, that make it
/// lost for good rather than unlucky: random loss of one segment three times
/// in a row, each after a timeout, is rarer than one in a million at 1 %.
pub const BLACK_HOLE_SENDS: u32 = 3;

/// Full-size segments resent at the head and never acknowledged.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct LostRun {
    /// Their payload, bytes.
    pub len: u32,
    /// How many times that segment was sent (the first send included).
    pub sends: u32,
    /// First copy to the last one (or to the smaller resend that replaced
    /// them), ms (kept small: the tracker is in every connection).
    pub stalled_ms: u32,
}

/// What one direction's resends and ACKs say about a black hole.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct BlackHole {
    /// The head segment resent [`BLACK_HOLE_SENDS`] times or more and never
    /// acknowledged at that size (the one sent most, if several).
    pub lost: Option<LostRun>,
    /// The largest segment an ACK covered with no smaller segment sent over
    /// its bytes: a size that passed the path, bytes (0: none seen).
    pub acked_max: u32,
    /// The smaller segment that resent a lost run's head, when the ACK then
    /// moved past it: the size the sender fell back to and that passed.
    pub fallback: Option<u32>,
    #[serde(skip)]
    run: Option<Run>,
    #[serde(skip)]
    waiting: Option<Waiting>,
    /// The head of a lost run replaced by a smaller segment (of
    /// `shrunk_to` bytes), until the ACK passes it.
    #[serde(skip)]
    fell_back: Option<u32>,
    /// The smallest size the sender resent its head in after larger copies:
    /// its MSS from then on. A larger segment captured on the sending host
    /// after it is a TSO/GSO packet cut to that size on the wire (a 1448 B
    /// resend goes out as 1024 + 424 once the MSS is 1024), so it says
    /// nothing about the larger size.
    #[serde(skip)]
    shrunk_to: Option<u32>,
}

/// A data segment as the tracker takes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sent {
    /// Its capture time, ns.
    pub ts: u64,
    /// Its first byte.
    pub seq: u32,
    /// Its payload, bytes.
    pub len: u32,
    /// Its bytes were sent before.
    pub resent: bool,
    /// The first byte the receiver has not acknowledged yet, if known.
    pub head: Option<u32>,
    /// No larger than the receiver's MSS: a TSO/GSO super-segment says
    /// nothing about the path's MTU.
    pub wire: bool,
}

/// The head segment being resent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    seq: u32,
    len: u32,
    sends: u32,
    /// The first copy to the latest, ms.
    span_ms: u32,
    /// The first copy's time in ms, modulo 2^32 (49 days: a run is seconds
    /// long), so that a connection stays small.
    first_ms: u32,
    /// A wire segment, not a TSO/GSO packet: its ACK says its size passed.
    wire: bool,
}

/// A capture time, ns, in wrapping milliseconds.
fn wrap_ms(ns: u64) -> u32 {
    (ns / 1_000_000) as u32
}

/// Milliseconds from `first_ms` (wrapping) to `ns`.
fn ms(first_ms: u32, ns: u64) -> u32 {
    wrap_ms(ns).wrapping_sub(first_ms)
}

/// A segment waiting for its ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Waiting {
    seq: u32,
    end: u32,
    len: u32,
}

impl BlackHole {
    /// A data segment sent.
    pub(crate) fn sent(&mut self, s: Sent) {
        let end = s.seq.wrapping_add(s.len);
        // Karn's rule: an ACK over bytes sent again in another segment does
        // not say which copy passed (the same segment again does).
        let wire = s.wire && self.shrunk_to.is_none_or(|m| s.len <= m);
        if let Some(w) = self.waiting {
            // The same segment on the wire: a larger one after the sender
            // shrank its segments went out cut up.
            let same = wire && w.seq == s.seq && w.len == s.len;
            if !same && seq_gt(end, w.seq) && seq_gt(w.end, s.seq) {
                self.waiting = None;
            }
        }
        if wire && self.waiting.is_none_or(|w| s.len >= w.len) {
            self.waiting = Some(Waiting {
                seq: s.seq,
                end,
                len: s.len,
            });
        }
        if s.resent && s.head == Some(s.seq) {
            self.resent_head(s.ts, s.seq, s.len, wire);
        }
    }

    fn resent_head(&mut self, ts: u64, seq: u32, len: u32, wire: bool) {
        let mut sends = 2;
        match self.run {
            Some(r) if r.seq == seq && r.len == len => {
                self.run = Some(Run {
                    sends: r.sends.saturating_add(1),
                    span_ms: ms(r.first_ms, ts),
                    ..r
                });
                return;
            }
            Some(r) if r.seq == seq && len < r.len => {
                // The sender gave up on the size: the copies were lost.
                self.close(r, ms(r.first_ms, ts));
                self.fell_back = Some(seq);
                self.shrunk_to = Some(self.shrunk_to.map_or(len, |m| m.min(len)));
                // The first copy at this size.
                sends = 1;
            }
            _ => {}
        }
        self.run = Some(Run {
            seq,
            len,
            // Unless it replaced a larger run, the first copy of these bytes
            // at this size went before.
            sends,
            span_ms: 0,
            first_ms: wrap_ms(ts),
            wire,
        });
    }

    /// Records `r` as lost when it was sent often enough.
    fn close(&mut self, r: Run, stalled_ms: u32) {
        if r.sends < BLACK_HOLE_SENDS {
            return;
        }
        if self.lost.is_none_or(|l| r.sends > l.sends) {
            self.lost = Some(LostRun {
                len: r.len,
                sends: r.sends,
                stalled_ms,
            });
        }
    }

    /// The receiver acknowledged everything before `ack`.
    pub(crate) fn acked(&mut self, ack: u32) {
        if let Some(w) = self.waiting.filter(|w| !seq_gt(w.end, ack)) {
            self.acked_max = self.acked_max.max(w.len);
            self.waiting = None;
        }
        if let Some(r) = self.run.filter(|r| seq_gt(ack, r.seq)) {
            // Acknowledged at the size resent: not a black hole for it.
            if r.wire {
                self.acked_max = self.acked_max.max(r.len);
            }
            self.run = None;
        }
        if let Some(len) = self
            .fell_back
            .filter(|s| seq_gt(ack, *s))
            .and(self.shrunk_to)
        {
            self.fallback = Some(self.fallback.map_or(len, |f| f.max(len)));
            self.fell_back = None;
        }
    }

    /// The capture ended: a run still unacknowledged is lost.
    pub(crate) fn finish(&mut self) {
        if let Some(r) = self.run.take() {
            self.close(r, r.span_ms);
        }
    }
}
