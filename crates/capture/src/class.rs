//! A captured connection's shape as `plumb-diagnose`'s [`FlowShape`], and
//! its class: what the capture saw of its runs, exchanges and idle time
//! ([`crate::shape`]), with the round trip and the segment size its
//! evidence found.

use plumb_diagnose::class::classify;
use plumb_record::class::{Classification, FlowShape, Run, ServerTime};

use crate::connection::Connection;
use crate::evidence::{data_direction, FlowEvidence};

/// The shape of `c`, whose evidence is `fe`.
pub fn flow_shape(c: &Connection, fe: &FlowEvidence) -> FlowShape {
    let (data, back, _) = data_direction(c);
    let first = c.first_ns();
    let secs = |ns: u64| ns as f64 / 1e9;
    let sh = &c.shape;
    let longest = sh.longest.map(|r| Run {
        from_client: r.from_client,
        bytes: r.bytes,
        seconds: secs(r.last_ns.saturating_sub(r.start_ns)),
        stalled_s: secs(r.last_ns.saturating_sub(r.last_new_ns)),
        first_round_bytes: (r.first_round_bytes > 0).then_some(u64::from(r.first_round_bytes)),
        exchanges_before: u64::from(r.exchanges_before),
        starts_at: secs(r.start_ns.saturating_sub(first)),
    });
    FlowShape {
        bytes: data.timing.new_bytes,
        reverse_bytes: back.timing.new_bytes,
        life_s: secs(c.last_ns().saturating_sub(first)),
        rtt_s: fe.summary.min_rtt_ms.map(|m| m / 1e3),
        mss: fe.summary.mss,
        handshake_s: c.handshake.rtt_ns.map(secs),
        runs: Some(u64::from(sh.runs)),
        longest_run: longest,
        exchanges: Some(u64::from(sh.exchanges)),
        idle_s: Some(secs(sh.idle_ns)),
        server_time: server_time(c),
        timeouts: Some(c.client.retransmissions.timeout + c.server.retransmissions.timeout),
    }
}

/// The server's time per exchange: each gap before a response, less the
/// capture point's round trip to the server, which the handshake gives
/// (SYN to SYN-ACK at the capture point).
fn server_time(c: &Connection) -> Option<ServerTime> {
    let g = &c.shape.server_gaps;
    if g.count == 0 {
        return None;
    }
    let path = c.handshake.syn_to_syn_ack_ns;
    let less = |ns: u64| ns.saturating_sub(path.unwrap_or(0)) as f64 / 1e9;
    Some(ServerTime {
        exchanges: u64::from(g.count),
        mean_s: less(g.sum_ns / u64::from(g.count)),
        min_s: less(g.min_ns),
        max_s: less(g.max_ns),
        path_s: path.map(|p| p as f64 / 1e9),
    })
}

/// The class of `c`, with the shape it rests on.
pub fn class_of(c: &Connection, fe: &FlowEvidence) -> (Classification, FlowShape) {
    let shape = flow_shape(c, fe);
    (classify(&shape), shape)
}
