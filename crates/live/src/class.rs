//! A sampled connection's class (`plumb-diagnose`'s `class`), from what
//! TCP_INFO counts over the sampling period: the bytes each way, the time
//! this end had data in flight (`busy_time`: the rest is idle), and the
//! data segments each way (each exchange is at least one of each, so the
//! fewer of the two counts the exchanges when requests and responses fit
//! in a segment, as most do).
//!
//! A socket does not know its own age, so the shape is the period's: a
//! connection is bulk when the period saw a long run of data, whatever it
//! did before. The server's time per exchange is what is left of the
//! period per exchange once the round trip is taken off, on the end that
//! asks (the client): an estimate that holds while the client asks again
//! at once.

use plumb_diagnose::class::{classify, Classification, FlowShape, Run, ServerTime};

use crate::track::{Role, Track};

/// The period's shape of `tr`; `opened` says whether this end opened the
/// connection (the client), when known.
pub fn shape(tr: &Track, opened: Option<bool>) -> FlowShape {
    let d = tr.delta();
    let (a, b) = (
        tr.first.tcp.unwrap_or_default(),
        tr.last.tcp.unwrap_or_default(),
    );
    let sender = d.role != Role::Receiver;
    let (bytes, reverse) = if sender {
        (d.acked, d.received)
    } else {
        (d.received, d.acked)
    };
    let segs = |x: Option<u32>, y: Option<u32>| Some(y?.wrapping_sub(x?));
    let exchanges = segs(a.data_segs_in, b.data_segs_in)
        .zip(segs(a.data_segs_out, b.data_segs_out))
        .map(|(i, o)| u64::from(i.min(o)));
    let rtt_s = b.min_rtt.filter(|r| *r > 0).map(|r| f64::from(r) / 1e6);
    let busy_s = d.busy_us.map(|u| u as f64 / 1e6);
    let idle_s = match busy_s {
        Some(busy) => Some((d.secs - busy).max(0.0)),
        None if d.role == Role::Idle => Some(d.secs),
        None => None,
    };
    FlowShape {
        bytes,
        reverse_bytes: reverse,
        life_s: d.secs,
        rtt_s,
        mss: (b.snd_mss > 0).then_some(u64::from(b.snd_mss)),
        handshake_s: None,
        runs: None,
        longest_run: Some(Run {
            from_client: opened == Some(sender),
            bytes,
            // The period: a sender that paces itself has nothing in flight
            // most of the time on a short path, yet moves data throughout.
            seconds: d.secs,
            stalled_s: d.stalled_us as f64 / 1e6,
            first_round_bytes: None,
            exchanges_before: 0,
            starts_at: 0.0,
        }),
        exchanges,
        idle_s,
        server_time: server_time(d.secs, exchanges, rtt_s, opened),
        timeouts: Some(u64::from(b.retransmits)),
    }
}

/// The server's time per exchange, on the client's end: the period per
/// exchange less the round trip.
fn server_time(
    secs: f64,
    exchanges: Option<u64>,
    rtt_s: Option<f64>,
    opened: Option<bool>,
) -> Option<ServerTime> {
    let n = exchanges.filter(|n| *n > 0)?;
    let rtt = rtt_s?;
    if opened != Some(true) {
        return None;
    }
    let each = (secs / n as f64 - rtt).max(0.0);
    Some(ServerTime {
        exchanges: n,
        mean_s: each,
        min_s: each,
        max_s: each,
        path_s: Some(rtt),
    })
}

/// The class of `tr`, with the shape it rests on.
pub fn class_of(tr: &Track, opened: Option<bool>) -> (Classification, FlowShape) {
    let s = shape(tr, opened);
    (classify(&s), s)
}
