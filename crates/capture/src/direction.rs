//! One direction of a connection: what its sender sent (bytes, segments,
//! retransmissions, flight) and what its sender advertised (receive window,
//! zero-window episodes, duplicate ACKs). The flight of data one side has in
//! the air is compared with the window the *other* side advertised.

use serde::Serialize;

use crate::blackhole::{BlackHole, Sent};
use crate::copies::Recent;
use crate::farhole::FarHole;
use crate::holes::Holes;
use crate::options::SynOptions;
use crate::segment::Segment;
use crate::seq::seq_gt;
use crate::timing::{DataTiming, RttSamples};
use crate::window::{WindowScale, WindowStats};

/// Silence before a retransmission that makes it timeout-like when the RTT
/// is unknown: Linux's minimum RTO.
const MIN_RTO_NS: u64 = 200_000_000;
/// Duplicate ACKs that trigger fast retransmit (RFC 5681).
const DUPACK_THRESHOLD: u32 = 3;
/// How soon a segment filling a gap counts as seen late rather than resent,
/// when the RTT is unknown (Wireshark's out-of-order threshold).
const OUT_OF_ORDER_NS: u64 = 3_000_000;

/// A side's SYN (or SYN-ACK).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Syn {
    /// The options it carried.
    pub options: SynOptions,
    /// Its window field (never scaled).
    pub window: u16,
    /// The TTL or hop limit seen.
    pub ttl: u8,
    /// The initial TTL the sender likely used: the seen one rounded up to
    /// 32, 64, 128 or 255.
    pub initial_ttl: u8,
    /// SYNs of this side seen again (retransmitted).
    pub retransmitted: u64,
}

/// Retransmissions, by what seems to have caused them.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Retransmissions {
    /// Data segments whose sequence range had been sent before.
    pub total: u64,
    /// After three or more duplicate ACKs from the receiver.
    pub fast: u64,
    /// After a silence of at least an RTO (max of 200 ms and 3 handshake RTTs).
    pub timeout: u64,
    /// Neither (e.g. SACK-driven recovery, tail loss probes).
    pub other: u64,
    /// Of the total: data the receiver had already acknowledged.
    pub spurious: u64,
    /// Payload bytes in retransmitted segments.
    pub bytes: u64,
}

/// Bytes in flight (highest sequence sent − highest ACK seen) when data is
/// sent, against the window the receiver advertised.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Flight {
    /// Samples taken (data segments sent after the receiver's first ACK).
    pub samples: u64,
    /// Largest flight, bytes.
    pub max: u64,
    /// Mean flight, bytes.
    pub mean: f64,
    /// Data segments that reach exactly the edge of the receiver's window:
    /// their end equals the receiver's last ACK plus its last advertised
    /// window (scale known; no SYN, FIN or RST), Wireshark's
    /// `tcp.analysis.window_full`.
    pub window_full: u64,
    #[serde(skip)]
    sum: u128,
}

/// Zero-window episodes this side advertised.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct ZeroWindow {
    /// Episodes (a zero window, until the next non-zero one).
    pub episodes: u64,
    /// Their total time, ns (an episode still open at the end of the capture
    /// lasts until this side's last segment).
    pub total_ns: u64,
    #[serde(skip)]
    open_since: Option<u64>,
}

/// One direction's evidence: segments *sent by* this side.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Direction {
    /// Sender of this direction.
    pub sender: String,
    /// Its SYN, if seen.
    pub syn: Option<Syn>,
    /// Segments sent, each counted once: capture duplicates are not.
    pub packets: u64,
    /// Capture duplicates: segments recorded again (a second interface,
    /// a mirror port), not analysed (see `copies`).
    pub duplicates: u64,
    /// Their wire length, link header included.
    pub wire_bytes: u64,
    /// TCP payload bytes (from the IP length fields), retransmissions included.
    pub payload_bytes: u64,
    /// First segment's timestamp, ns since the epoch.
    pub first_ns: u64,
    /// Last segment's timestamp, ns since the epoch.
    pub last_ns: u64,
    /// The largest payload in one segment. A TSO/GSO super-segment captured
    /// on the sending host exceeds the MSS: this is not the MSS.
    pub largest_segment: u32,
    /// Segments larger than the peer's MSS (super-segments).
    pub super_segments: u64,
    /// The time-sequence series of its data, when asked for
    /// ([`crate::analyze_file_with_series`]); not serialized.
    #[serde(skip)]
    pub series: Option<Box<crate::series::Series>>,
    /// Retransmitted data segments.
    pub retransmissions: Retransmissions,
    /// Segments that started past the highest sequence seen: what was sent
    /// before them had not been captured (yet).
    pub gaps: u64,
    /// Segments that filled a gap within an RTT (3 ms if unknown) of its
    /// opening, without duplicate ACKs: seen late, not resent.
    pub out_of_order: u64,
    /// Duplicate ACKs sent: pure ACKs repeating the last ACK number and a
    /// non-zero window while the peer has data outstanding.
    pub duplicate_acks: u64,
    /// The receive window this side advertised.
    pub window: WindowStats,
    /// Zero windows this side advertised.
    pub zero_window: ZeroWindow,
    /// Its data in flight against the peer's window.
    pub flight: Flight,
    /// Its data→ACK round trips at the capture point.
    pub rtt: RttSamples,
    /// Its new data over time, busy and window-limited time.
    pub timing: DataTiming,
    /// Its head segment resent at full size without an ACK, against the
    /// sizes that passed: a path-MTU black hole.
    pub black_hole: BlackHole,
    /// Its silence and the later proof it had sent more than arrived: a
    /// path-MTU black hole before the capture point.
    pub far_hole: FarHole,
    #[serde(skip)]
    pub(crate) track: Track,
    /// The last segments it sent, against which copies are found.
    #[serde(skip)]
    pub(crate) recent: Recent,
    /// The IPv4 ID of its last segment (0 when none): an ID of 0 right
    /// after one near the counter's wrap is a number, not a missing ID
    /// (see `copies::near_wrap`).
    #[serde(skip)]
    pub(crate) last_ip_id: u16,
}

/// Sequence state, not reported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Track {
    /// One past the highest sequence number sent.
    pub high_end: Option<u32>,
    /// Highest ACK sent.
    pub high_ack: Option<u32>,
    /// The last ACK sent and its window, for duplicate detection.
    last_ack: Option<(u32, u16)>,
    /// Consecutive duplicate ACKs sent for the current ACK.
    pub dup_run: u32,
    /// The last advertised window in bytes, when the scale is known.
    pub window_bytes: Option<u64>,
    /// Sequence gaps not seen yet.
    holes: Holes,
}

/// What a sender's segment is judged against: its time and the time of the
/// sender's previous segment (the silence before it), the receiving side's
/// state and MSS, and the handshake RTT.
pub(crate) struct SendContext<'a> {
    pub ts: u64,
    pub prev_ts: u64,
    pub peer: &'a Track,
    pub peer_mss: Option<u16>,
    pub rtt_ns: Option<u64>,
}

/// Rounds a seen TTL up to the usual initial values.
pub fn initial_ttl(ttl: u8) -> u8 {
    match ttl {
        0..=32 => 32,
        33..=64 => 64,
        65..=128 => 128,
        _ => 255,
    }
}

impl Track {
    /// The right edge of the window this side last advertised: its last
    /// ACK plus that window, when the scale is known.
    fn window_edge(&self) -> Option<u32> {
        let (ack, _) = self.last_ack?;
        let w = u32::try_from(self.window_bytes?).ok()?;
        Some(ack.wrapping_add(w))
    }
}

impl Direction {
    /// Counts a segment sent by this side.
    pub(crate) fn count(&mut self, ts: u64, wire_len: u32, seg: &Segment) {
        if self.packets == 0 {
            self.first_ns = ts;
            self.sender = seg.src.to_string();
        }
        self.packets += 1;
        self.wire_bytes += u64::from(wire_len);
        self.payload_bytes += u64::from(seg.payload_len);
        self.last_ns = self.last_ns.max(ts);
        if let Some(o) = &seg.syn_options {
            match &mut self.syn {
                Some(s) => s.retransmitted += 1,
                None => {
                    self.syn = Some(Syn {
                        options: o.clone(),
                        window: seg.window,
                        ttl: seg.ttl,
                        initial_ttl: initial_ttl(seg.ttl),
                        retransmitted: 0,
                    })
                }
            }
        }
    }

    /// The ACK side of a segment this side sent: window, zero window and
    /// duplicate ACKs. `peer_high_end` is the peer's highest sequence sent.
    pub(crate) fn advertise(
        &mut self,
        ts: u64,
        seg: &Segment,
        scale: WindowScale,
        peer_high_end: Option<u32>,
    ) {
        if seg.rst || !seg.ack {
            return;
        }
        if !seg.syn {
            self.window.sample(seg.window, scale);
            self.track.window_bytes = scale.bytes(seg.window);
            self.zero_window_edge(ts, seg.window == 0);
        }
        let t = &mut self.track;
        // A repeated zero-window ACK is flow control, not a loss signal
        // (Wireshark's rule too).
        let pure = seg.payload_len == 0 && !seg.syn && !seg.fin && seg.window != 0;
        let outstanding = peer_high_end.is_some_and(|e| seq_gt(e, seg.ack_no));
        if pure && outstanding && t.last_ack == Some((seg.ack_no, seg.window)) {
            self.duplicate_acks += 1;
            t.dup_run += 1;
        } else if t.last_ack.is_none_or(|(a, _)| a != seg.ack_no) {
            t.dup_run = 0;
        }
        t.last_ack = Some((seg.ack_no, seg.window));
        if t.high_ack.is_none_or(|h| seq_gt(seg.ack_no, h)) {
            t.high_ack = Some(seg.ack_no);
        }
    }

    fn zero_window_edge(&mut self, ts: u64, zero: bool) {
        let z = &mut self.zero_window;
        match (zero, z.open_since) {
            (true, None) => {
                z.episodes += 1;
                z.open_since = Some(ts);
            }
            (false, Some(since)) => {
                z.total_ns = z.total_ns.saturating_add(ts.saturating_sub(since));
                z.open_since = None;
            }
            _ => {}
        }
    }

    /// The data side of a segment this side sent, judged against `at`.
    pub(crate) fn send(&mut self, seg: &Segment, at: &SendContext<'_>) {
        let mut end = seg.seq.wrapping_add(seg.payload_len);
        if seg.syn {
            end = end.wrapping_add(1);
        }
        if seg.payload_len > 0 {
            self.data(seg, end, at);
            let plain = !seg.syn && !seg.fin && !seg.rst;
            if plain && at.peer.window_edge() == Some(end) {
                self.flight.window_full += 1;
            }
        }
        if seg.fin {
            end = end.wrapping_add(1);
        }
        if self.track.high_end.is_none_or(|h| seq_gt(end, h)) {
            self.track.high_end = Some(end);
        }
        if seg.payload_len > 0 {
            self.sample_flight(at);
        }
    }

    fn data(&mut self, seg: &Segment, end: u32, at: &SendContext<'_>) {
        let len = seg.payload_len;
        self.black_hole.sent(Sent {
            ts: at.ts,
            seq: seg.seq,
            len,
            resent: self.track.high_end.is_some_and(|h| seq_gt(h, seg.seq)),
            head: at.peer.high_ack,
            wire: at.peer_mss.is_none_or(|m| len <= u32::from(m)),
        });
        self.timing.passed(at.ts, at.rtt_ns);
        self.largest_segment = self.largest_segment.max(len);
        self.timing.segment_size(len, at.peer_mss);
        if at.peer_mss.is_some_and(|m| len > u32::from(m)) {
            self.super_segments += 1;
        }
        let Some(high) = self.track.high_end else {
            self.fresh(end, len, at.ts);
            return;
        };
        if seq_gt(seg.seq, high) {
            self.gaps += 1;
            self.track.holes.open(high, seg.seq, at.ts);
            self.fresh(end, len, at.ts);
            return;
        }
        // A keep-alive resends the byte before the next one (or none): not
        // a retransmission.
        let keepalive = len <= 1 && seg.seq.wrapping_add(1) == high;
        if keepalive {
            return;
        }
        self.timing.sent(at.ts);
        if seg.seq == high {
            self.fresh(end, len, at.ts);
            return;
        }
        self.rtt.resent(seg.seq);
        let fast = at.peer.dup_run >= DUPACK_THRESHOLD;
        if let Some(opened) = self.track.holes.fill(seg.seq, end) {
            // The first copy of these bytes the capture point saw.
            self.timing.new_data(at.ts, len);
            let late = at.rtt_ns.unwrap_or(OUT_OF_ORDER_NS);
            if !fast && at.ts.saturating_sub(opened) <= late {
                self.out_of_order += 1;
                return;
            }
        }
        let r = &mut self.retransmissions;
        r.total += 1;
        r.bytes += u64::from(len);
        if at.peer.high_ack.is_some_and(|a| !seq_gt(end, a)) {
            r.spurious += 1;
        }
        let rto = at
            .rtt_ns
            .map_or(MIN_RTO_NS, |rtt| MIN_RTO_NS.max(rtt.saturating_mul(3)));
        if fast {
            r.fast += 1;
        } else if at.ts.saturating_sub(at.prev_ts) >= rto {
            r.timeout += 1;
        } else {
            r.other += 1;
        }
    }

    /// New data: counted, and timed if no segment is.
    fn fresh(&mut self, end: u32, len: u32, ts: u64) {
        self.timing.sent(ts);
        self.timing.new_data(ts, len);
        self.rtt.sent(end, ts);
    }

    /// Bytes in flight now (highest sequence sent − the peer's highest
    /// ACK), 0 before the peer has acknowledged anything.
    pub(crate) fn in_flight(&self, peer: &Track) -> u64 {
        match (self.track.high_end, peer.high_ack) {
            (Some(high), Some(acked)) if seq_gt(high, acked) => u64::from(high.wrapping_sub(acked)),
            _ => 0,
        }
    }

    fn sample_flight(&mut self, at: &SendContext<'_>) {
        let (Some(high), Some(acked)) = (self.track.high_end, at.peer.high_ack) else {
            return;
        };
        let flight = if seq_gt(high, acked) {
            u64::from(high.wrapping_sub(acked))
        } else {
            0
        };
        let f = &mut self.flight;
        f.samples += 1;
        f.max = f.max.max(flight);
        f.sum += u128::from(flight);
    }

    /// Closes what the end of the capture leaves open, and takes the
    /// flight's mean (here, once, rather than a 128-bit division per data
    /// segment on the hot path).
    pub(crate) fn finish(&mut self) {
        self.black_hole.finish();
        if self.flight.samples > 0 {
            self.flight.mean = (self.flight.sum / u128::from(self.flight.samples)) as f64;
        }
        if let Some(since) = self.zero_window.open_since.take() {
            let open = self.last_ns.saturating_sub(since);
            self.zero_window.total_ns = self.zero_window.total_ns.saturating_add(open);
        }
    }
}
