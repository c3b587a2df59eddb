//! A bulk transfer simulated segment by segment, client to server: the
//! sender keeps as much in flight as the smaller of its own cap and the
//! receiver's window, the receiver acknowledges every second segment one
//! RTT after it was sent (the capture sits beside the sender), and chosen
//! segments are sent twice (lost after the capture point). The segments
//! come out in time order, ready for `pcap_of`.
#![allow(dead_code)]

use super::{Seg, MS, T0};

/// What to simulate.
#[derive(Clone, Debug)]
pub struct Flow {
    /// The RTT, ns.
    pub rtt_ns: u64,
    /// Payload per segment.
    pub mss: u32,
    /// The receiver's window field, and the shift it is scaled by.
    pub window: u16,
    pub shift: Option<u8>,
    /// The sender's own cap on its flight, bytes (none: the window).
    pub cap: Option<u64>,
    /// Every n-th segment is resent 1 ms later.
    pub resend_every: Option<u64>,
    /// How long the data runs, ns.
    pub for_ns: u64,
    /// Include the handshake.
    pub handshake: bool,
    /// The receiver advertises a zero window over [from, to) ns after the
    /// data starts.
    pub zero: Option<(u64, u64)>,
    /// Every n-th send is a super-segment of this many MSS.
    pub super_every: Option<(u64, u32)>,
    /// The capture sits beside the receiver instead: each segment is seen
    /// half an RTT later (client's) or earlier (server's) than beside the
    /// sender.
    pub at_receiver: bool,
    /// The time between two segments sent back to back, ns: a bottleneck's
    /// spacing (none: 1 µs, a fast path's).
    pub pace_ns: Option<u64>,
    /// The receiver holds each ACK this long (delayed ACKs), ns.
    pub ack_delay_ns: u64,
}

impl Default for Flow {
    fn default() -> Flow {
        Flow {
            rtt_ns: 15 * MS,
            mss: 1460,
            window: 17_520,
            shift: None,
            cap: None,
            resend_every: None,
            for_ns: 2_000 * MS,
            handshake: true,
            zero: None,
            super_every: None,
            at_receiver: false,
            pace_ns: None,
            ack_delay_ns: 0,
        }
    }
}

const CISN: u32 = 1000;
const SISN: u32 = 5000;

fn syn_opts(mss: u16, shift: Option<u8>) -> Vec<u8> {
    let m = mss.to_be_bytes();
    let mut o = vec![2, 4, m[0], m[1], 1, 1, 4, 2];
    if let Some(s) = shift {
        o.extend_from_slice(&[1, 3, 3, s]);
    }
    o
}

impl Flow {
    /// The segments, in time order.
    pub fn segments(&self) -> Vec<(u64, Seg)> {
        let mut out = Vec::new();
        let start = T0 + self.rtt_ns + MS;
        if self.handshake {
            let mss = self.mss as u16;
            out.push((
                T0,
                Seg::v4(true, CISN)
                    .syn()
                    .win(64240)
                    .opts(&syn_opts(mss, self.shift)),
            ));
            out.push((
                T0 + self.rtt_ns,
                Seg::v4(false, SISN)
                    .syn()
                    .ack(CISN + 1)
                    .win(self.window)
                    .opts(&syn_opts(mss, self.shift)),
            ));
            out.push((
                T0 + self.rtt_ns + 20_000,
                Seg::v4(true, CISN + 1).ack(SISN + 1).win(502),
            ));
        }
        let win_bytes = u64::from(self.window) << self.shift.unwrap_or(0);
        let limit = self.cap.map_or(win_bytes, |c| c.min(win_bytes));
        let mss = u64::from(self.mss);
        let (mut next, mut acked) = (u64::from(CISN + 1), u64::from(CISN + 1));
        let mut acks: std::collections::VecDeque<(u64, u64)> = Default::default();
        let mut t = start;
        let mut sent = 0u64;
        let mut ip_id = 0u16;
        let mut unacked_segs = 0;
        let end = start + self.for_ns;
        while t < end {
            let zero = self
                .zero
                .is_some_and(|(a, b)| t >= start + a && t < start + b);
            while !zero && t < end && next - acked + mss <= limit {
                // Paced, the sender takes each ACK as it comes rather than
                // when its window is full.
                while self.pace_ns.is_some() && acks.front().is_some_and(|(at, _)| *at <= t) {
                    let Some((at, a)) = acks.pop_front() else {
                        break;
                    };
                    acked = a;
                    out.push((at, Seg::v4(false, SISN + 1).ack(a as u32).win(self.window)));
                }
                sent += 1;
                let n = match self.super_every {
                    Some((every, k))
                        if sent % every == 0 && next - acked + mss * u64::from(k) <= limit =>
                    {
                        u64::from(k)
                    }
                    _ => 1,
                };
                let len = mss * n;
                // Each packet the sender sends has its own IP ID, as Linux
                // numbers them: a resend is no copy of the first.
                ip_id = ip_id.wrapping_add(1).max(1);
                out.push((
                    t,
                    Seg::v4(true, next as u32)
                        .ack(SISN + 1)
                        .win(502)
                        .len(len as usize)
                        .id(ip_id),
                ));
                if self.resend_every.is_some_and(|e| sent % e == 0) {
                    ip_id = ip_id.wrapping_add(1).max(1);
                    out.push((
                        t + MS,
                        Seg::v4(true, next as u32)
                            .ack(SISN + 1)
                            .win(502)
                            .len(len as usize)
                            .id(ip_id),
                    ));
                }
                next += len;
                unacked_segs += n;
                if unacked_segs >= 2 {
                    acks.push_back((t + self.rtt_ns + self.ack_delay_ns, next));
                    unacked_segs = 0;
                }
                t += self.pace_ns.unwrap_or(1_000);
            }
            let Some((at, a)) = acks.pop_front() else {
                // Nothing outstanding: the next ACK flushes the odd segment.
                acks.push_back((t + self.rtt_ns + self.ack_delay_ns, next));
                unacked_segs = 0;
                continue;
            };
            t = t.max(at);
            acked = a;
            let in_zero = self
                .zero
                .is_some_and(|(x, y)| t >= start + x && t < start + y);
            let w = if in_zero { 0 } else { self.window };
            out.push((t, Seg::v4(false, SISN + 1).ack(a as u32).win(w)));
            if in_zero && acks.is_empty() {
                // A window update when the zero-window time ends.
                let (_, y) = self.zero.unwrap_or_default();
                t = start + y;
                out.push((t, Seg::v4(false, SISN + 1).ack(a as u32).win(self.window)));
            }
        }
        if self.at_receiver {
            let half = self.rtt_ns / 2;
            for (ts, seg) in &mut out {
                if seg.src.1 == 40000 {
                    *ts += half;
                } else {
                    *ts -= half;
                }
            }
        }
        out.sort_by_key(|(ts, _)| *ts);
        out
    }
}
