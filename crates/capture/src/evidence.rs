//! Diagnosis evidence from one captured connection: its data direction
//! (the side that sent more payload) turned into `plumb-diagnose`'s
//! [`Evidence`], with a typed summary of what it rests on
//! ([`FlowSummary`]).
//!
//! What a capture cannot know is listed in `Evidence::unknown`, never
//! guessed: the hosts' CPU, sysctls and socket buffers, the congestion
//! control. What depends on where the capture was taken ([`Position`]) is
//! filled only where it means what the rules take it to mean: the flight is
//! the sender's only near the sender, so the busy and window-limited times
//! (the counters TCP_INFO gives a sender) come from a capture taken there.

use plumb_diagnose::evidence::{LinkRate, StreamTcp};
use plumb_diagnose::Evidence;
use plumb_record::capture::{FlowSummary, Position};

use crate::connection::Connection;
use crate::direction::Direction;
use crate::position;

/// A connection's evidence and its summary.
#[derive(Debug, Clone)]
pub struct FlowEvidence {
    /// What the rules weigh.
    pub evidence: Evidence,
    /// The numbers behind it.
    pub summary: FlowSummary,
    /// The data's sender is the client.
    pub client_sends: bool,
}

/// The data direction and the reverse one: the side that sent more.
pub fn data_direction(c: &Connection) -> (&Direction, &Direction, bool) {
    if c.client.payload_bytes >= c.server.payload_bytes {
        (&c.client, &c.server, true)
    } else {
        (&c.server, &c.client, false)
    }
}

/// The MSS the sender's segments have on the wire: the largest segment no
/// larger than the receiver's MSS option (a super-segment never counts),
/// else what the option allows; without the option, the largest segment if
/// it could be a wire segment of a 1500-byte MTU.
fn wire_mss(data: &Direction, back: &Direction) -> Option<u64> {
    let seen = u64::from(data.timing.largest_wire_segment);
    match back.syn.as_ref().and_then(|s| s.options.mss) {
        Some(m) if seen > 0 => Some(seen.min(u64::from(m))),
        Some(m) => Some(u64::from(m)),
        None if seen > 0 && seen <= 1460 && data.super_segments == 0 => Some(seen),
        None => None,
    }
}

fn us(ns: u64) -> u64 {
    ns / 1000
}

/// What [`evidence`] works out once about a connection's data direction
/// and uses for both its evidence and its summary.
struct Flow<'a> {
    data: &'a Direction,
    back: &'a Direction,
    pos: Position,
    /// First to last data, ns, and in seconds.
    span_ns: u64,
    secs: f64,
    /// New bytes over the span, bit/s.
    measured: f64,
    /// The handshake's round trip, and the least and mean round trips of
    /// the data (each data→ACK time plus the sender's side of the path).
    hs_rtt: Option<u64>,
    min_rtt: Option<u64>,
    srtt: Option<u64>,
}

impl<'a> Flow<'a> {
    fn of(c: &'a Connection) -> (Flow<'a>, bool) {
        let (data, back, client_sends) = data_direction(c);
        let t = &data.timing;
        let span_ns = t
            .first_data_ns
            .zip(t.last_data_ns)
            .map_or(0, |(a, b)| b.saturating_sub(a));
        let secs = span_ns as f64 / 1e9;
        let measured = if secs > 0.0 {
            t.new_bytes as f64 * 8.0 / secs
        } else {
            0.0
        };
        let sender_half = position::sender_half_ns(&c.handshake, client_sends);
        let hs_rtt = c.handshake.rtt_ns;
        // Data→ACK at the capture point covers the receiver's side of it; the
        // sender's side is the handshake's (it holds no queue of this flow's).
        let loaded = |ns: Option<u64>| ns.map(|n| n + sender_half.unwrap_or(0));
        let min_rtt = match (hs_rtt, loaded(data.rtt.min_ns)) {
            (Some(h), Some(d)) => Some(h.min(d)),
            (h, d) => h.or(d),
        };
        let flow = Flow {
            data,
            back,
            pos: position::of(&c.handshake, client_sends),
            span_ns,
            secs,
            measured,
            hs_rtt,
            min_rtt,
            srtt: loaded(data.rtt.mean_ns),
        };
        (flow, client_sends)
    }

    /// Whether the capture was taken beside the sender.
    fn near(&self) -> bool {
        self.pos == Position::NearSender
    }

    /// A time as a share of the span.
    fn share(&self, ns: u64) -> Option<f64> {
        (self.secs > 0.0).then(|| (ns as f64 / 1e9 / self.secs).min(1.0))
    }
}

/// Builds the evidence of connection `c`, weighed with `link` when given.
pub fn evidence(c: &Connection, link: Option<LinkRate>) -> FlowEvidence {
    let (f, client_sends) = Flow::of(c);
    let t = &f.data.timing;
    let best = if f.secs >= 1.0 {
        t.best_second_bytes as f64 * 8.0
    } else {
        f.measured
    };
    let stream = stream(&f);
    let unknown = unknown(c, f.pos, link.is_none());
    let summary = summary(c, &f, &stream);
    let evidence = Evidence {
        tcp: true,
        duration_s: f.secs,
        measured_bps: f.measured,
        best_interval_bps: best,
        link,
        streams: vec![stream],
        sender_is_local: f.near(),
        unknown,
        ..Evidence::default()
    };
    FlowEvidence {
        evidence,
        summary,
        client_sends,
    }
}

/// The data direction as the rules read a stream.
fn stream(f: &Flow<'_>) -> StreamTcp {
    let (data, back, t) = (f.data, f.back, &f.data.timing);
    let near = f.near();
    StreamTcp {
        mss: wire_mss(data, back),
        // A capture sees packets, not the sender's path-MTU state.
        pmtu: None,
        min_rtt_us: f.min_rtt.map(us).filter(|r| *r > 0),
        srtt_us: f.srtt.map(us).filter(|r| *r > 0),
        // The largest flight is the least the congestion window reached;
        // near the sender it is the sender's own.
        max_cwnd: near.then_some(data.flight.max).filter(|f| *f > 0),
        window_is_clamp: false,
        // The window the sender faced while sending, not a passing peak.
        max_snd_wnd: t
            .mean_window_bytes
            .or(back.window.max_bytes)
            .filter(|w| *w > 0),
        retransmits: Some(data.retransmissions.total),
        bytes_retrans: Some(data.retransmissions.bytes),
        bytes_sent: t.new_bytes,
        busy_us: near.then_some(us(t.busy_ns.min(f.span_ns))),
        rwnd_limited_us: near.then_some(us(t.window_limited_ns.min(f.span_ns))),
        sndbuf_limited_us: None,
        sndbuf_actual: None,
        sndbuf_set: false,
        // The receiver's window the sender faced, over the time with data
        // in flight: shrunk when its application fell behind.
        window_shrank_share: t.window_shrank_share(),
        stalled_us: None,
        payload_acked: None,
        timeouts: None,
    }
}

/// The flow's figures as a capture's reader shows them.
fn summary(c: &Connection, f: &Flow<'_>, stream: &StreamTcp) -> FlowSummary {
    let (data, back, t) = (f.data, f.back, &f.data.timing);
    let near = f.near();
    let ms = |ns: Option<u64>| ns.map(|r| r as f64 / 1e6);
    FlowSummary {
        client: c.client.sender.clone(),
        server: c.server.sender.clone(),
        sender: data.sender.clone(),
        receiver: back.sender.clone(),
        packets: c.packets(),
        duplicates: c.client.duplicates + c.server.duplicates,
        data_bytes: t.new_bytes,
        payload_bytes: data.payload_bytes,
        reverse_bytes: back.payload_bytes,
        duration_s: f.secs,
        measured_bps: f.measured,
        handshake: c.handshake.complete,
        handshake_rtt_ms: ms(f.hs_rtt),
        position: f.pos,
        mss: stream.mss,
        min_rtt_ms: ms(f.min_rtt),
        srtt_ms: ms(f.srtt),
        rtt_samples: data.rtt.samples,
        window_bytes: stream.max_snd_wnd,
        max_window_bytes: back.window.max_bytes,
        window_bounds: back
            .window
            .unknown_bounds
            .map(|(lo, hi)| (lo.max(data.flight.max), hi)),
        max_flight_bytes: data.flight.max,
        window_full: data.flight.window_full,
        retransmits: data.retransmissions.total,
        retransmitted_bytes: data.retransmissions.bytes,
        out_of_order: data.out_of_order,
        zero_window_episodes: back.zero_window.episodes,
        zero_window_s: back.zero_window.total_ns as f64 / 1e9,
        busy_share: near.then(|| f.share(t.busy_ns)).flatten(),
        window_limited_share: near.then(|| f.share(t.window_limited_ns)).flatten(),
        window_shrank_share: stream.window_shrank_share,
        continuity: t.continuity(),
        super_segments: data.super_segments,
        icmp_too_big: c.icmp_too_big,
        icmp_mtu: c.icmp_mtu,
    }
}

/// Stretches `fe`'s time to the data direction's last resend: the flow's
/// rate over its whole life, the stall it ended in included.
pub(crate) fn through_stall(c: &Connection, fe: &mut FlowEvidence) {
    let t = &data_direction(c).0.timing;
    let (Some(first), Some(last)) = (t.first_data_ns, t.last_sent_ns) else {
        return;
    };
    let secs = last.saturating_sub(first) as f64 / 1e9;
    if secs <= fe.summary.duration_s {
        return;
    }
    let bps = t.new_bytes as f64 * 8.0 / secs;
    fe.summary.duration_s = secs;
    fe.summary.measured_bps = bps;
    fe.evidence.duration_s = secs;
    fe.evidence.measured_bps = bps;
}

/// What a capture of `c` taken at `pos` cannot tell.
fn unknown(c: &Connection, pos: Position, no_link: bool) -> Vec<String> {
    let mut u = vec![
        "the hosts' CPU: a capture holds packets, not processes".to_string(),
        "the TCP sysctls and socket buffer sizes (SO_SNDBUF, SO_RCVBUF) at either end: they are not on the wire".into(),
        "the sender's congestion window and congestion control: only its flight is on the wire".into(),
    ];
    if pos != Position::NearSender {
        u.push(format!(
            "the sender's busy and window-limited time: the capture was taken {}, where the flight seen is not the sender's",
            pos.words()
        ));
    }
    if !c.handshake.complete {
        u.push("the handshake: not captured, so the window scale, the MSS offers and the handshake RTT are unknown".into());
    }
    if no_link {
        u.push("the link rate: give --link (e.g. --link 1g)".into());
    }
    u
}
