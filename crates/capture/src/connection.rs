//! One TCP connection: its two directions and its handshake. The client is
//! the side that sent the SYN (or, when the handshake was missed, the sender
//! of the first segment seen; the receiver of a lone SYN-ACK).

use serde::Serialize;

use crate::copies::{near_wrap, Behind, Copied, Print, UNKNOWN_RTT_WINDOW_NS};
use crate::direction::{Direction, SendContext};
use crate::farhole::{FarPath, FarSeen};
use crate::segment::Segment;
use crate::series::Series;
use crate::shape::{Shape, Step};
use crate::window::WindowScale;

/// The three-way handshake as seen from the capture point.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Handshake {
    /// SYN, SYN-ACK and the ACK of the SYN-ACK were all seen.
    pub complete: bool,
    /// The time of the SYN the SYN-ACK answers, ns since the epoch: the last
    /// one seen before the SYN-ACK (a resent SYN's wait is no part of the
    /// path's RTT; Wireshark's `initial_rtt` starts there too), else the
    /// first one seen.
    pub syn_ns: Option<u64>,
    /// First SYN-ACK's time.
    pub syn_ack_ns: Option<u64>,
    /// The ACK of the SYN-ACK's time.
    pub ack_ns: Option<u64>,
    /// SYN → SYN-ACK: the server's side of the RTT from the capture point
    /// (each half is there when both its ends were captured).
    pub syn_to_syn_ack_ns: Option<u64>,
    /// SYN-ACK → ACK: the client's side of the RTT from the capture point.
    pub syn_ack_to_ack_ns: Option<u64>,
    /// SYN → ACK: the whole RTT (Wireshark's `tcp.analysis.initial_rtt`).
    pub rtt_ns: Option<u64>,
    #[serde(skip)]
    pub(crate) server_isn: Option<u32>,
}

impl Handshake {
    /// The durations between the segments seen: each half when both its
    /// ends were, the RTT when all three were.
    fn derive(&mut self) {
        let span = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?));
        self.syn_to_syn_ack_ns = span(self.syn_ns, self.syn_ack_ns);
        self.syn_ack_to_ack_ns = span(self.syn_ack_ns, self.ack_ns);
        self.complete = self.syn_ns.is_some() && self.syn_ack_ns.is_some() && self.ack_ns.is_some();
        self.rtt_ns = if self.complete {
            span(self.syn_ns, self.ack_ns)
        } else {
            None
        };
    }
}

/// A connection's evidence.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Connection {
    /// Client → server.
    pub client: Direction,
    /// Server → client.
    pub server: Direction,
    /// The handshake.
    pub handshake: Handshake,
    /// ICMP fragmentation-needed / ICMPv6 packet-too-big messages quoting
    /// this connection.
    pub icmp_too_big: u64,
    /// The smallest MTU they reported.
    pub icmp_mtu: Option<u32>,
    /// Its runs of data, exchanges and idle time, for its class.
    pub shape: Shape,
    #[serde(skip)]
    pub(crate) client_addr: Option<std::net::SocketAddr>,
    #[serde(skip)]
    server_addr: Option<std::net::SocketAddr>,
    /// The last segment's time, either direction: the flight and window
    /// seen then held until this segment.
    #[serde(skip)]
    clock: Option<u64>,
    /// Its number among the connections of the capture, in the order they
    /// were first seen: what [`Behind`] knows it by.
    #[serde(skip)]
    pub(crate) serial: u64,
}

impl Connection {
    /// A connection drawing the series of both directions, `budget`
    /// points of each kind.
    pub(crate) fn with_series(budget: usize) -> Connection {
        let mut c = Connection::default();
        c.client.series = Some(Box::new(Series::new(budget)));
        c.server.series = Some(Box::new(Series::new(budget)));
        c
    }

    /// Segments in both directions.
    pub fn packets(&self) -> u64 {
        self.client.packets + self.server.packets
    }

    /// First segment's time in either direction.
    pub fn first_ns(&self) -> u64 {
        [&self.client, &self.server]
            .iter()
            .filter(|d| d.packets > 0)
            .map(|d| d.first_ns)
            .min()
            .unwrap_or(0)
    }

    /// Last segment's time in either direction.
    pub fn last_ns(&self) -> u64 {
        self.client.last_ns.max(self.server.last_ns)
    }

    /// The client's address and port (see the module doc).
    pub fn client_addr(&self) -> Option<std::net::SocketAddr> {
        self.client_addr
    }

    /// The server's address and port.
    pub fn server_addr(&self) -> Option<std::net::SocketAddr> {
        self.server_addr
    }

    /// Adds one segment with its capture time, wire length and interface;
    /// a capture duplicate is counted and goes no further: it is no
    /// retransmission, duplicate ACK, RTT sample or flight sample. Copies
    /// are sought among the direction's last segments, and in `behind`
    /// when given (the capture has shown copies).
    pub(crate) fn segment(
        &mut self,
        ts: u64,
        wire_len: u32,
        seg: &Segment,
        interface: u32,
        behind: Option<&mut Behind>,
    ) -> Option<Copied> {
        let client =
            *self
                .client_addr
                .get_or_insert(if seg.syn && seg.ack { seg.dst } else { seg.src });
        let from_client = seg.src == client;
        self.server_addr
            .get_or_insert(if from_client { seg.dst } else { seg.src });
        let print = Print::of(seg);
        let me = self.side(from_client);
        let numbered = print.ip_id() == 0 && near_wrap(me.last_ip_id);
        me.last_ip_id = print.ip_id();
        // The window is worked out only for a segment whose print matches.
        if self.side(from_client).recent.may_hold(&print) {
            let window = (self.copy_window(), numbered);
            let me = self.side(from_client);
            if let Some(copy) = me.recent.copy_of(&print, ts, interface, window) {
                me.duplicates += 1;
                return Some(copy);
            }
        }
        let behind = behind.map(|b| {
            let key = b.key((self.serial, from_client), &print);
            (b, key)
        });
        if let Some((b, key)) = &behind {
            if let Some(copy) = b.copy_of(key, ts, interface, (self.copy_window(), numbered)) {
                self.side(from_client).duplicates += 1;
                return Some(copy);
            }
        }
        self.analyse(ts, wire_len, seg, from_client);
        self.side(from_client)
            .recent
            .remember(&print, ts, interface);
        if let Some((b, key)) = behind {
            b.remember(key, ts, interface);
        }
        None
    }

    /// The direction the client (or the server) sends.
    fn side(&mut self, client: bool) -> &mut Direction {
        if client {
            &mut self.client
        } else {
            &mut self.server
        }
    }

    /// How soon after a segment an identical one is its copy: half the
    /// smallest round trip known (the handshake's, else the smallest
    /// data→ACK sample either way, a part of it), else
    /// [`UNKNOWN_RTT_WINDOW_NS`].
    fn copy_window(&self) -> u64 {
        let rtt = self.handshake.rtt_ns.or_else(|| {
            match (self.client.rtt.min_ns, self.server.rtt.min_ns) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        });
        rtt.map_or(UNKNOWN_RTT_WINDOW_NS, |r| r / 2)
    }

    /// Adds a segment that is not a copy: every piece of evidence.
    fn analyse(&mut self, ts: u64, wire_len: u32, seg: &Segment, from_client: bool) {
        self.elapse(ts);
        self.handshake(ts, seg, from_client);
        let full = self.full_size();
        let (me, peer, my_scale) = if from_client {
            let s = self.scale(true);
            (&mut self.client, &mut self.server, s)
        } else {
            let s = self.scale(false);
            (&mut self.server, &mut self.client, s)
        };
        let prev_ts = if me.packets == 0 { ts } else { me.last_ns };
        me.count(ts, wire_len, seg);
        me.advertise(ts, seg, my_scale, peer.track.high_end);
        if seg.ack && !seg.rst {
            peer.rtt.acked(seg.ack_no, ts);
            peer.black_hole.acked(seg.ack_no);
        }
        let at = SendContext {
            ts,
            prev_ts,
            peer: &peer.track,
            peer_mss: peer.syn.as_ref().and_then(|s| s.options.mss),
            rtt_ns: self.handshake.rtt_ns,
        };
        me.far_hole.seen(
            &FarSeen {
                ts,
                prev_ts,
                seq: seg.seq,
                len: seg.payload_len,
                syn: seg.syn,
                ack: seg.ack,
                fin: seg.fin,
                rst: seg.rst,
                high_end: me.track.high_end,
                largest: me.largest_segment,
            },
            &FarPath {
                full,
                rtt_ns: self.handshake.rtt_ns,
                window: peer.track.window_bytes,
            },
        );
        let resent_before = me.retransmissions.total;
        let new_before = me.timing.new_bytes;
        me.send(seg, &at);
        let new_bytes = me.timing.new_bytes.saturating_sub(new_before);
        feed_series(me, peer, ts, seg, resent_before);
        self.shape.step(&Step {
            ts,
            from_client,
            new_bytes,
            // A keep-alive probe (one byte or none) is no delivery.
            data: seg.payload_len > 1,
            client_in_flight: self.client.in_flight(&self.server.track) > 0,
            server_in_flight: self.server.in_flight(&self.client.track) > 0,
            rtt_ns: self.handshake.rtt_ns,
            client_path_ns: self.handshake.syn_ack_to_ack_ns,
        });
    }

    /// The agreed full segment size: the smaller MSS the SYNs offered,
    /// less the 12 B the timestamp option takes in every segment when both
    /// offered it.
    fn full_size(&self) -> Option<u32> {
        let (c, s) = (
            &self.client.syn.as_ref()?.options,
            &self.server.syn.as_ref()?.options,
        );
        let mss = u32::from(c.mss?.min(s.mss?));
        let ts = if c.timestamps && s.timestamps { 12 } else { 0 };
        Some(mss.saturating_sub(ts))
    }

    /// Accounts the time since the last segment to each direction's
    /// flight as it stood.
    fn elapse(&mut self, ts: u64) {
        let last = self.clock.replace(ts.max(self.clock.unwrap_or(0)));
        let Some(dt) = last.map(|l| ts.saturating_sub(l)).filter(|d| *d > 0) else {
            return;
        };
        let mss = |d: &Direction| {
            d.syn
                .as_ref()
                .and_then(|s| s.options.mss)
                .map_or(1460, u32::from)
        };
        let (c_mss, s_mss) = (mss(&self.server), mss(&self.client));
        let f = self.client.in_flight(&self.server.track);
        let w = self.server.track.window_bytes;
        self.client.timing.elapse(dt, f, w, c_mss);
        let f = self.server.in_flight(&self.client.track);
        let w = self.client.track.window_bytes;
        self.server.timing.elapse(dt, f, w, s_mss);
    }

    /// The scale of the client's (or server's) window field.
    fn scale(&self, client: bool) -> WindowScale {
        let (Some(c), Some(s)) = (&self.client.syn, &self.server.syn) else {
            return WindowScale::Unknown;
        };
        match (c.options.window_scale, s.options.window_scale) {
            (Some(cs), Some(ss)) => WindowScale::Known {
                shift: if client { cs } else { ss },
            },
            _ => WindowScale::Known { shift: 0 },
        }
    }

    /// Notes the handshake's segments in whatever order the capture holds
    /// them (a capture point can record a SYN-ACK before its SYN) or with
    /// some missing (dropped by the capture).
    fn handshake(&mut self, ts: u64, seg: &Segment, from_client: bool) {
        let h = &mut self.handshake;
        if seg.syn && !seg.ack && from_client {
            match h.syn_ns {
                // A SYN resent before any answer restarts the handshake's
                // clock; one seen after the SYN-ACK (or out of order) does
                // not.
                Some(t) if h.syn_ack_ns.is_none() && ts >= t => h.syn_ns = Some(ts),
                Some(_) => return,
                None => h.syn_ns = Some(ts),
            }
        } else if seg.syn && seg.ack && !from_client {
            if h.syn_ack_ns.is_none() {
                h.syn_ack_ns = Some(ts);
                h.server_isn = Some(seg.seq);
            }
        } else if !seg.syn
            && seg.ack
            && from_client
            && h.ack_ns.is_none()
            && h.server_isn
                .is_some_and(|isn| seg.ack_no == isn.wrapping_add(1))
        {
            h.ack_ns = Some(ts);
        } else {
            return;
        }
        h.derive();
    }

    /// Counts an ICMP message quoting this connection.
    pub(crate) fn too_big(&mut self, mtu: u32) {
        self.icmp_too_big += 1;
        self.icmp_mtu = Some(self.icmp_mtu.map_or(mtu, |m| m.min(mtu)));
    }

    /// Closes open episodes at the end of the capture.
    pub(crate) fn finish(&mut self) {
        self.client.finish();
        self.server.finish();
        self.shape.finish();
    }
}

/// Feeds a segment `me` sent at `ts` to the series: its data to `me`'s
/// (a retransmission when `me` counted one more than `resent_before`), its
/// ACK and window to the peer's.
fn feed_series(
    me: &mut Direction,
    peer: &mut Direction,
    ts: u64,
    seg: &Segment,
    resent_before: u64,
) {
    let resent = me.retransmissions.total > resent_before;
    if let Some(s) = me.series.as_deref_mut() {
        if seg.syn {
            s.syn(seg.seq);
        }
        if seg.payload_len > 0 {
            s.sent(ts, seg.seq, seg.payload_len, resent);
        }
    }
    if seg.ack && !seg.rst {
        if let Some(s) = peer.series.as_deref_mut() {
            // A SYN's window is never scaled: no edge from it.
            let window = if seg.syn { None } else { me.track.window_bytes };
            s.acked(ts, seg.ack_no, window);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::SynOptions;

    fn seg(from_client: bool, syn: bool, ack: bool, seq: u32, ack_no: u32) -> Segment {
        let c = std::net::SocketAddr::from(([10, 0, 0, 1], 40000));
        let s = std::net::SocketAddr::from(([10, 0, 0, 2], 80));
        let (src, dst) = if from_client { (c, s) } else { (s, c) };
        Segment {
            src,
            dst,
            ttl: 64,
            seq,
            ack_no,
            syn,
            ack,
            fin: false,
            rst: false,
            window: 64240,
            payload_len: 0,
            syn_options: syn.then(SynOptions::default),
            stamp: crate::segment::Stamp::default(),
        }
    }

    /// A SYN resent after 1 s: the RTT runs from the resent SYN, not from
    /// the first (which would add the retransmission timeout to it); a copy
    /// of the SYN seen after the SYN-ACK changes nothing.
    #[test]
    fn the_handshake_rtt_starts_at_the_last_syn_before_the_syn_ack() {
        const MS: u64 = 1_000_000;
        let mut c = Connection::default();
        c.segment(0, 60, &seg(true, true, false, 100, 0), 0, None);
        c.segment(1_000 * MS, 60, &seg(true, true, false, 100, 0), 0, None);
        c.segment(1_020 * MS, 60, &seg(false, true, true, 500, 101), 0, None);
        c.segment(1_030 * MS, 60, &seg(true, true, false, 100, 0), 0, None);
        c.segment(1_040 * MS, 60, &seg(true, false, true, 101, 501), 0, None);
        let h = &c.handshake;
        assert!(h.complete);
        assert_eq!(h.syn_ns, Some(1_000 * MS));
        assert_eq!(h.syn_to_syn_ack_ns, Some(20 * MS));
        assert_eq!(h.rtt_ns, Some(40 * MS));
        assert_eq!(c.client.syn.as_ref().map(|s| s.retransmitted), Some(2));
    }
}
