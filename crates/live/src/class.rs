//! A sampled connection's class (`plumb-diagnose`'s `class`), from what
//! TCP_INFO counts over the sampling period: the bytes each way, the time
//! this end had data in flight (`busy_time`: the rest is idle, where this
//! end can tell — see `idle`),
//! and the data segments each way (each exchange is at least one of each, so the
//! fewer of the two counts the exchanges when requests and responses fit
//! in a segment, as most do).
//!
//! A socket does not know its own age, so the shape is the period's: a
//! connection is bulk when the period saw a long run of data, whatever it
//! did before. The server's time per exchange is what is left of the
//! period per exchange once the round trip is taken off, on the end that
//! asks (the client): an estimate that holds while the client asks again
//! at once.

use plumb_diagnose::class::classify;
use plumb_record::class::{Classification, FlowShape, Run, ServerTime};

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
    let idle_s = idle(d.role, busy_s, d.secs, opened);
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

/// The period's idle time, where this end can tell it. A receiver's data
/// is its peer's, whose time in flight this end does not count (the client
/// of a 60 kB download has its request in flight for one round trip, then
/// only receives). On the end that answers (the server), its own busy time
/// leaves out the time it spent on each request before answering, which is
/// no idle time. Where it cannot tell, an end that moved under
/// [`crate::track::IDLE_BPS`] either way is idle the whole period.
fn idle(role: Role, busy_s: Option<f64>, secs: f64, opened: Option<bool>) -> Option<f64> {
    match (role, busy_s) {
        (Role::Sender, Some(busy)) if opened != Some(false) => Some((secs - busy).max(0.0)),
        (Role::Idle, Some(busy)) if opened == Some(true) => Some((secs - busy).max(0.0)),
        (Role::Idle, _) => Some(secs),
        _ => None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Conn;
    use plumb_record::class::FlowClass;
    use plumb_tcpinfo::TcpInfo;

    /// A sample: bytes acknowledged and received, busy time (µs), data
    /// segments out and in.
    fn sample(acked: u64, received: u64, busy: u64, segs: (u32, u32)) -> Conn {
        Conn {
            local: "198.18.0.1:40000".parse().expect("addr"),
            remote: "198.18.0.2:8000".parse().expect("addr"),
            state: 1,
            inode: 1,
            uid: 0,
            ifindex: 0,
            cookie: 1,
            recv_queue: 0,
            send_queue: 0,
            tcp: Some(TcpInfo {
                bytes_acked: Some(acked),
                bytes_received: Some(received),
                busy_time: Some(busy),
                data_segs_out: Some(segs.0),
                data_segs_in: Some(segs.1),
                min_rtt: Some(50_000),
                snd_mss: 1448,
                snd_cwnd: 10,
                ..TcpInfo::default()
            }),
            congestion: None,
            mem: None,
            bbr: None,
        }
    }

    /// The client of a 60 kB download over 50 ms, sampled 0.2 s: it sent
    /// its request (in flight 50 ms) and received the rest. Short, not
    /// interactive; an idle connection's end stays interactive.
    #[test]
    fn a_receiver_is_not_idle_for_want_of_sending() {
        let mut tr = Track::new(sample(1, 0, 0, (0, 0)), 0.0);
        tr.update(sample(84, 60_203, 50_000, (1, 42)), 0.2);
        assert_eq!(tr.delta().role, Role::Receiver);
        let (c, s) = class_of(&tr, Some(true));
        assert_eq!(c.class, FlowClass::Short, "{}", c.why);
        assert_eq!(s.idle_s, None);
        let mut tr = Track::new(sample(1, 0, 0, (0, 0)), 0.0);
        tr.update(sample(13, 12, 20_000, (4, 4)), 2.0);
        assert_eq!(tr.delta().role, Role::Idle);
        let (c, _) = class_of(&tr, Some(true));
        assert_eq!(c.class, FlowClass::Interactive, "{}", c.why);
    }

    /// The server of 150 exchanges in 3 s, each answered after 20 ms of
    /// its own work: its answers are in flight a round trip each (busy
    /// 10 %), but the time before each answer is its own, not idle.
    /// Request/response at the server; at the client's end, which mostly
    /// receives, likewise.
    #[test]
    fn the_answering_end_is_not_idle_while_it_works() {
        let mut tr = Track::new(sample(1, 1, 0, (0, 0)), 0.0);
        tr.update(sample(60_001, 15_001, 300_000, (150, 150)), 3.0);
        assert_eq!(tr.delta().role, Role::Sender);
        let (c, s) = class_of(&tr, Some(false));
        assert_eq!(s.idle_s, None);
        assert_eq!(c.class, FlowClass::RequestResponse, "{}", c.why);
        let mut tr = Track::new(sample(1, 1, 0, (0, 0)), 0.0);
        tr.update(sample(15_001, 60_001, 2_900_000, (150, 150)), 3.0);
        let (c, s) = class_of(&tr, Some(true));
        assert_eq!(tr.delta().role, Role::Receiver);
        assert_eq!(s.idle_s, None);
        assert_eq!(c.class, FlowClass::RequestResponse, "{}", c.why);
    }
}
