//! Deltas between snapshots: one [`Track`] per connection follows it across
//! samples and says what happened between the first and the last — rates
//! from `bytes_acked` / `bytes_received`, limited-time shares from
//! `busy_time` / `rwnd_limited` / `sndbuf_limited`, retransmits — plus the
//! extremes the samples saw (windows, cwnd, a full receive queue), and the
//! time a sender spent stuck in retransmission timeouts. Pure: the caller
//! passes each sample's time.

use crate::diag::Conn;

/// Which end of the transfer this host is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// This host sent the data.
    Sender,
    /// This host received it.
    Receiver,
    /// Less than [`IDLE_BPS`] either way, and not stuck sending (see
    /// [`STALLED_SHARE`]).
    Idle,
}

impl Role {
    /// `sender`, `receiver`, `idle`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Sender => "sender",
            Role::Receiver => "receiver",
            Role::Idle => "idle",
        }
    }
}

/// Below this, bit/s in both directions, a connection is idle: a keepalive
/// or an interactive session, nothing to diagnose — unless its sender was
/// stuck in retransmission timeouts ([`STALLED_SHARE`]).
pub const IDLE_BPS: f64 = 10_000.0;

/// The share of the period a connection moving under [`IDLE_BPS`] must have
/// spent stuck in retransmission timeouts to count as a sender: the stall is
/// then what the period was about, while a single timeout in an interactive
/// session (a resend and on) leaves it idle.
pub const STALLED_SHARE: f64 = 0.2;

/// `TCP_CA_Loss`: the state a retransmission timeout puts the sender in.
const CA_LOSS: u8 = 4;

/// One connection over a sampling period.
#[derive(Debug, Clone)]
pub struct Track {
    /// The first sample.
    pub first: Conn,
    /// Time of the first sample, s.
    pub t_first: f64,
    /// The latest sample.
    pub last: Conn,
    /// Time of the latest sample, s.
    pub t_last: f64,
    /// Samples seen.
    pub samples: u32,
    /// The connection was missing from a later dump: it closed.
    pub closed: bool,
    /// Largest peer window seen, bytes. Here and in the three below, a
    /// young connection's first sample (under [`YOUNG_BYTES`] moved) does not
    /// count once later samples exist.
    pub max_snd_wnd: u32,
    /// Samples in which the peer's window was under 3/4 of the largest
    /// seen before them: the peer's buffer held unread data.
    pub snd_wnd_shrank: u32,
    /// Largest window this end advertised, bytes.
    pub max_rcv_wnd: u32,
    /// Smallest window this end advertised, bytes.
    pub min_rcv_wnd: u32,
    /// Largest cwnd seen, bytes.
    pub max_cwnd_bytes: u64,
    /// Sum of smoothed RTT over samples, µs (for the mean).
    pub rtt_sum_us: u64,
    /// The first sample's smoothed RTT, µs: it describes the round trips
    /// before the period began, so the mean leaves it out once later
    /// samples exist.
    pub rtt_first_us: u64,
    /// Samples whose receive queue memory was at least 3/4 of the buffer:
    /// the application was not reading.
    pub rq_full: u32,
    /// Samples whose send queue was at least 3/4 of the send buffer.
    pub sq_full: u32,
    /// Samples in which the sender had almost nothing unsent and a congestion
    /// window it did not fill: it waited for its application.
    pub app_waiting: u32,
    /// The send buffer size changed between samples (autotuning at work).
    pub sndbuf_moved: bool,
    /// Best rate between two consecutive samples, bit/s (either direction).
    pub best_bps: f64,
    /// Time between samples in which the sender was stuck in retransmission
    /// timeouts ([`timed_out`]), µs: the gaps' sum.
    pub stalled_us: u64,
}

/// What a [`Track`] adds up to.
#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    /// Seconds between the first and last sample.
    pub secs: f64,
    /// Bytes the peer acknowledged.
    pub acked: u64,
    /// Bytes received in order.
    pub received: u64,
    /// Sending rate, bit/s (acknowledged bytes).
    pub send_bps: f64,
    /// Receiving rate, bit/s.
    pub recv_bps: f64,
    /// Busy time, µs.
    pub busy_us: Option<u64>,
    /// Receive-window-limited time, µs.
    pub rwnd_limited_us: Option<u64>,
    /// Send-buffer-limited time, µs.
    pub sndbuf_limited_us: Option<u64>,
    /// Retransmitted segments.
    pub retrans: u64,
    /// Retransmitted bytes.
    pub bytes_retrans: Option<u64>,
    /// Time stuck in retransmission timeouts, µs ([`Track::stalled_us`]).
    pub stalled_us: u64,
    /// Which end this host is.
    pub role: Role,
}

fn d64(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    Some(b?.saturating_sub(a?))
}

/// Bytes acknowledged by the peer and bytes received in order between two
/// samples of one connection (0 where TCP_INFO lacks the counter).
pub fn moved(a: &Conn, b: &Conn) -> (u64, u64) {
    let (ta, tb) = (a.tcp.as_ref(), b.tcp.as_ref());
    let sent = d64(
        ta.and_then(|x| x.bytes_acked),
        tb.and_then(|x| x.bytes_acked),
    );
    let received = d64(
        ta.and_then(|x| x.bytes_received),
        tb.and_then(|x| x.bytes_received),
    );
    (sent.unwrap_or(0), received.unwrap_or(0))
}

/// Which end this host is, from the rates each way (bit/s).
pub fn role_of(send_bps: f64, recv_bps: f64) -> Role {
    if send_bps.max(recv_bps) < IDLE_BPS {
        Role::Idle
    } else if send_bps >= recv_bps {
        Role::Sender
    } else {
        Role::Receiver
    }
}

/// Whether the sender was stuck in retransmission timeouts from sample `a`
/// to sample `b`: nothing it had outstanding was acknowledged in between,
/// and at `b` it still had data outstanding, its congestion window cut to
/// one or two segments, and it was recovering from a timeout (`ca_state`
/// Loss, or consecutive timeouts unrecovered). The RTO backoff exponent
/// alone is not evidence: zero-window probes back it off too, and a sender
/// held by a shut receive window has neither lost anything nor a collapsed
/// window. Unknown `bytes_acked` (kernels before 4.1): not stalled.
pub fn timed_out(a: &Conn, b: &Conn) -> bool {
    let (Some(ta), Some(tb)) = (a.tcp.as_ref(), b.tcp.as_ref()) else {
        return false;
    };
    let still = matches!((ta.bytes_acked, tb.bytes_acked), (Some(x), Some(y)) if x == y);
    let in_timeout = tb.ca_state == CA_LOSS || tb.retransmits > 0;
    still && tb.unacked > 0 && tb.snd_cwnd <= 2 && in_timeout
}

/// Bytes a connection has moved (both ways) below which it is in its first
/// round trips: a handshake's window (tens of KB) has not yet been taken
/// back by a clamp the application set after the handshake.
pub const YOUNG_BYTES: u64 = 256 * 1024;

/// Whether `c` had moved under [`YOUNG_BYTES`] when sampled (unknown
/// counters: not young).
fn young(c: &Conn) -> bool {
    c.tcp
        .is_some_and(|t| match (t.bytes_acked, t.bytes_received) {
            (None, None) => false,
            (a, r) => a.unwrap_or(0).saturating_add(r.unwrap_or(0)) < YOUNG_BYTES,
        })
}

impl Track {
    /// Starts following `c`, sampled at `t` seconds.
    pub fn new(c: Conn, t: f64) -> Track {
        let mut tr = Track {
            first: c,
            t_first: t,
            last: c,
            t_last: t,
            samples: 0,
            closed: false,
            max_snd_wnd: 0,
            snd_wnd_shrank: 0,
            max_rcv_wnd: 0,
            min_rcv_wnd: u32::MAX,
            max_cwnd_bytes: 0,
            rtt_sum_us: 0,
            rtt_first_us: c.tcp.map_or(0, |t| u64::from(t.rtt)),
            rq_full: 0,
            sq_full: 0,
            app_waiting: 0,
            sndbuf_moved: false,
            best_bps: 0.0,
            stalled_us: 0,
        };
        tr.note(&c);
        tr
    }

    fn note(&mut self, c: &Conn) {
        self.samples += 1;
        if let Some(t) = &c.tcp {
            let wnd = t.snd_wnd.unwrap_or(0);
            if u64::from(wnd) * 4 < u64::from(self.max_snd_wnd) * 3 {
                self.snd_wnd_shrank += 1;
            }
            self.max_snd_wnd = self.max_snd_wnd.max(wnd);
            if let Some(w) = t.rcv_wnd {
                self.max_rcv_wnd = self.max_rcv_wnd.max(w);
                self.min_rcv_wnd = self.min_rcv_wnd.min(w);
            }
            self.max_cwnd_bytes = self
                .max_cwnd_bytes
                .max(u64::from(t.snd_cwnd) * u64::from(t.snd_mss));
            self.rtt_sum_us += u64::from(t.rtt);
            // Less than a few segments unsent: what Nagle holds back of a
            // small write, not a queue the network cannot take.
            let little = t.notsent_bytes.is_some_and(|n| n < 4 * t.snd_mss.max(1));
            if little && t.unacked < t.snd_cwnd {
                self.app_waiting += 1;
            }
        }
        if let Some(m) = &c.mem {
            if m.rcvbuf > 0 && u64::from(m.rmem_alloc) * 4 >= u64::from(m.rcvbuf) * 3 {
                self.rq_full += 1;
            }
            if m.sndbuf > 0 && u64::from(m.wmem_queued) * 4 >= u64::from(m.sndbuf) * 3 {
                self.sq_full += 1;
            }
        }
    }

    /// Adds a sample of the same connection taken at `t` seconds.
    pub fn update(&mut self, c: Conn, t: f64) {
        let dt = t - self.t_last;
        if dt > 0.0 {
            let (s, r) = moved(&self.last, &c);
            let bps = s.max(r) as f64 * 8.0 / dt;
            self.best_bps = self.best_bps.max(bps);
            if timed_out(&self.last, &c) {
                self.stalled_us += (dt * 1e6) as u64;
            }
        }
        if let (Some(a), Some(b)) = (&self.last.mem, &c.mem) {
            if a.sndbuf != b.sndbuf {
                self.sndbuf_moved = true;
            }
        }
        if self.samples == 1 && young(&self.first) {
            // A connection sampled in its first round trips still shows the
            // window of its handshake (46,336 B under a 17,520 B clamp in
            // the lab), which the clamp takes back as the first data
            // arrives; in a two-sample track, `plumb top`'s, that window
            // would predict a rate three times the one measured. Then the
            // windows are the period's own samples'. An older connection's
            // first sample stays: its window was in force inside the period
            // (a receiver that paused just as the period ended must not
            // stand for the whole of it).
            self.max_snd_wnd = 0;
            self.snd_wnd_shrank = 0;
            self.max_rcv_wnd = 0;
            self.min_rcv_wnd = u32::MAX;
            self.max_cwnd_bytes = 0;
        }
        self.note(&c);
        self.last = c;
        self.t_last = t;
    }

    /// Mean smoothed RTT over the period, µs: over the samples after the
    /// first, whose smoothed RTTs follow the round trips inside the period
    /// (the first's follows those before it: taken just after a connection
    /// opened, it can still carry the handshake's or slow start's delayed
    /// ACKs, and in a two-sample track, `plumb top`'s, it would be half the
    /// answer). A single sample is its own mean.
    pub fn mean_rtt_us(&self) -> Option<u64> {
        let (sum, n) = if self.samples >= 2 {
            (
                self.rtt_sum_us.saturating_sub(self.rtt_first_us),
                self.samples - 1,
            )
        } else {
            (self.rtt_sum_us, self.samples)
        };
        (n > 0 && sum > 0).then(|| sum / u64::from(n))
    }

    /// What happened between the first and the last sample.
    pub fn delta(&self) -> Delta {
        let secs = (self.t_last - self.t_first).max(0.0);
        let (a, b) = (
            self.first.tcp.unwrap_or_default(),
            self.last.tcp.unwrap_or_default(),
        );
        let acked = d64(a.bytes_acked, b.bytes_acked).unwrap_or(0);
        let received = d64(a.bytes_received, b.bytes_received).unwrap_or(0);
        let rate = |n: u64| {
            if secs > 0.0 {
                n as f64 * 8.0 / secs
            } else {
                0.0
            }
        };
        let (send_bps, recv_bps) = (rate(acked), rate(received));
        // A sender stuck in timeouts moves nothing, yet it is the end with
        // something to explain, not an idle one.
        let stuck = secs > 0.0 && self.stalled_us as f64 / 1e6 >= STALLED_SHARE * secs;
        let role = match role_of(send_bps, recv_bps) {
            Role::Idle if stuck => Role::Sender,
            r => r,
        };
        Delta {
            secs,
            acked,
            received,
            send_bps,
            recv_bps,
            busy_us: d64(a.busy_time, b.busy_time),
            rwnd_limited_us: d64(a.rwnd_limited, b.rwnd_limited),
            sndbuf_limited_us: d64(a.sndbuf_limited, b.sndbuf_limited),
            retrans: u64::from(b.total_retrans.saturating_sub(a.total_retrans)),
            bytes_retrans: d64(a.bytes_retrans, b.bytes_retrans),
            stalled_us: self.stalled_us,
            role,
        }
    }

    /// The rate this host moved data, bit/s, whichever way.
    pub fn rate_bps(&self) -> f64 {
        let d = self.delta();
        d.send_bps.max(d.recv_bps)
    }
}

/// Connections followed across dumps, keyed by the kernel's socket cookie.
#[derive(Debug, Default)]
pub struct Tracker {
    /// Every connection seen, in the order first seen.
    pub tracks: Vec<Track>,
}

impl Tracker {
    /// Adds one dump taken at `t` seconds. A connection missing from it is
    /// marked closed (its last sample stays).
    pub fn add(&mut self, conns: Vec<Conn>, t: f64) {
        let mut seen = vec![false; self.tracks.len()];
        let index: std::collections::HashMap<u64, usize> = self
            .tracks
            .iter()
            .enumerate()
            .map(|(i, tr)| (tr.first.cookie, i))
            .collect();
        for c in conns {
            match index.get(&c.cookie) {
                Some(&i) if !self.tracks[i].closed => {
                    seen[i] = true;
                    if self.tracks[i].first.tcp.is_none() && c.tcp.is_some() {
                        // A request socket (SYN_RECV) has no TCP_INFO and
                        // hands its cookie to the connection it becomes:
                        // no baseline, so the period starts here.
                        self.tracks[i] = Track::new(c, t);
                    } else {
                        self.tracks[i].update(c, t);
                    }
                }
                Some(_) => {}
                None => self.tracks.push(Track::new(c, t)),
            }
        }
        for (i, s) in seen.iter().enumerate() {
            if !s {
                self.tracks[i].closed = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_tcpinfo::TcpInfo;

    fn conn(cookie: u64, acked: u64, received: u64, busy: u64, rwnd: u64) -> Conn {
        Conn {
            local: "127.0.0.1:1000".parse().expect("addr"),
            remote: "127.0.0.1:2000".parse().expect("addr"),
            state: 1,
            inode: 1,
            uid: 0,
            ifindex: 0,
            cookie,
            recv_queue: 0,
            send_queue: 0,
            tcp: Some(TcpInfo {
                bytes_acked: Some(acked),
                bytes_received: Some(received),
                busy_time: Some(busy),
                rwnd_limited: Some(rwnd),
                snd_mss: 1448,
                snd_cwnd: 10,
                rtt: 15_000,
                ..TcpInfo::default()
            }),
            congestion: None,
            mem: None,
            bbr: None,
        }
    }

    #[test]
    fn deltas_rates_shares_and_roles() {
        let mut tr = Track::new(conn(1, 1_000, 0, 0, 0), 0.0);
        tr.update(conn(1, 1_000 + 625_000, 0, 500_000, 400_000), 0.5);
        tr.update(conn(1, 1_000 + 1_250_000, 10, 1_000_000, 800_000), 1.0);
        let d = tr.delta();
        assert_eq!(d.role, Role::Sender);
        assert!((d.send_bps - 10e6).abs() < 1.0, "{d:?}");
        assert_eq!(d.busy_us, Some(1_000_000));
        assert_eq!(d.rwnd_limited_us, Some(800_000));
        assert_eq!(tr.samples, 3);
        assert_eq!(tr.max_cwnd_bytes, 14_480);
        assert_eq!(tr.mean_rtt_us(), Some(15_000));
        // The first sample's RTT is the time before the period: a stale
        // 60 ms from the connection's start does not enter the mean.
        let mut slow = conn(4, 0, 0, 0, 0);
        slow.tcp.as_mut().expect("tcp").rtt = 60_000;
        let mut fresh = Track::new(slow, 0.0);
        fresh.update(conn(4, 1_250_000, 0, 1_000_000, 0), 1.0);
        assert_eq!(fresh.mean_rtt_us(), Some(15_000));
        assert_eq!(Track::new(slow, 0.0).mean_rtt_us(), Some(60_000));

        let mut rx = Track::new(conn(2, 0, 0, 0, 0), 0.0);
        rx.update(conn(2, 1, 125_000, 0, 0), 1.0);
        assert_eq!(rx.delta().role, Role::Receiver);
        let mut idle = Track::new(conn(3, 5, 5, 0, 0), 0.0);
        idle.update(conn(3, 10, 10, 0, 0), 1.0);
        assert_eq!(idle.delta().role, Role::Idle);
    }

    #[test]
    fn a_peer_window_that_shrinks_is_counted_and_growth_is_not() {
        let with = |snd: u32, moved: u64| {
            let mut c = conn(7, 10_000_000 + moved, 0, 10_000_000 + moved, 0);
            c.tcp.as_mut().expect("tcp").snd_wnd = Some(snd);
            c
        };
        // Autotuning grows the window: no shrink.
        let mut tr = Track::new(with(65_536, 0), 0.0);
        tr.update(with(1 << 20, 1_000_000), 1.0);
        tr.update(with(4 << 20, 2_000_000), 2.0);
        assert_eq!(tr.snd_wnd_shrank, 0);
        // A receiver that stops reading: the window falls under 3/4 of its
        // largest, twice; a window at 3/4 exactly is not counted.
        tr.update(with(1 << 20, 3_000_000), 3.0);
        tr.update(with(3 << 20, 4_000_000), 4.0);
        tr.update(with(0, 4_000_001), 5.0);
        assert_eq!(tr.snd_wnd_shrank, 2);
    }

    #[test]
    fn windows_come_from_the_period_not_the_sample_before_it() {
        // Sampled in its first round trips, a clamped connection still shows
        // its handshake's window; a second later it shows the clamp.
        let with = |c: Conn, snd: u32, rcv: u32, cwnd: u32| {
            let mut c = c;
            let t = c.tcp.as_mut().expect("tcp");
            (t.snd_wnd, t.rcv_wnd, t.snd_cwnd) = (Some(snd), Some(rcv), cwnd);
            c
        };
        let mut tr = Track::new(with(conn(5, 0, 0, 0, 0), 46_336, 65_535, 38), 0.0);
        assert_eq!((tr.max_snd_wnd, tr.max_rcv_wnd), (46_336, 65_535));
        tr.update(
            with(
                conn(5, 1_150_000, 0, 1_000_000, 360_000),
                17_376,
                17_376,
                12,
            ),
            1.0,
        );
        assert_eq!(tr.max_snd_wnd, 17_376);
        assert_eq!((tr.min_rcv_wnd, tr.max_rcv_wnd), (17_376, 17_376));
        assert_eq!(tr.max_cwnd_bytes, 12 * 1448);
        // Later samples add to the period's own.
        tr.update(
            with(conn(5, 2_300_000, 0, 2_000_000, 720_000), 20_000, 8_000, 14),
            2.0,
        );
        assert_eq!((tr.max_snd_wnd, tr.min_rcv_wnd), (20_000, 8_000));
        assert_eq!(tr.max_cwnd_bytes, 14 * 1448);
        // An older connection's first sample was in force inside the period:
        // its window stays when the receiver pauses as the period ends.
        let mut old = Track::new(with(conn(6, 50_000_000, 0, 0, 0), 65_535, 65_535, 40), 0.0);
        old.update(
            with(conn(6, 60_000_000, 0, 1_000_000, 0), 1_448, 1_448, 40),
            1.0,
        );
        assert_eq!((old.max_snd_wnd, old.min_rcv_wnd), (65_535, 1_448));
        assert_eq!(old.max_cwnd_bytes, 40 * 1448);
    }

    /// A sender's sample at `t` s for the timeout tests: `acked` bytes
    /// acknowledged so far, `unacked` segments outstanding, its cwnd,
    /// `ca_state`, consecutive timeouts and total resends.
    fn sender(acked: u64, unacked: u32, cwnd: u32, ca_state: u8, timeouts: u8) -> Conn {
        let mut c = conn(9, acked, 80, 0, 0);
        let t = c.tcp.as_mut().expect("tcp");
        (t.unacked, t.snd_cwnd, t.ca_state, t.retransmits) = (unacked, cwnd, ca_state, timeouts);
        t.total_retrans = u32::from(timeouts);
        c
    }

    /// Follows `at` (a sample per 100 ms, from 0 s) as one track.
    fn follow(at: impl Fn(u32) -> Conn, samples: u32) -> Track {
        let mut tr = Track::new(at(0), 0.0);
        for i in 1..samples {
            tr.update(at(i), f64::from(i) / 10.0);
        }
        tr
    }

    #[test]
    fn a_sender_stuck_in_timeouts_is_a_sender_with_its_stalled_time() {
        // A black hole's victim: 177 bytes acknowledged (the first small
        // write and the SYN), ten full-size segments outstanding, a window
        // of one, in Loss, a timeout more every few samples.
        let stuck = |i: u32| sender(177, 10, 1, CA_LOSS, (3 + i / 10) as u8);
        assert!(timed_out(&stuck(0), &stuck(1)));
        let tr = follow(stuck, 31);
        let d = tr.delta();
        assert_eq!((d.acked, d.send_bps), (0, 0.0));
        assert_eq!(d.role, Role::Sender, "{d:?}");
        // 30 gaps of 100 ms, each stalled (float steps may shave a µs).
        assert!(d.stalled_us.abs_diff(3_000_000) < 1_000, "{d:?}");
        assert_eq!(d.retrans, 3);
    }

    #[test]
    fn idle_moving_and_window_held_senders_are_not_stalled() {
        // A keep-alive connection: nothing outstanding.
        let idle = follow(|_| sender(5_000, 0, 10, 0, 0), 31);
        assert_eq!((idle.delta().role, idle.stalled_us), (Role::Idle, 0));
        // A sender in loss recovery whose data is acknowledged between
        // samples: it moves, it is not stalled.
        let moving = follow(
            |i| sender(1 + u64::from(i) * 125_000, 10, 2, CA_LOSS, 0),
            31,
        );
        assert!(moving.delta().send_bps > IDLE_BPS);
        assert_eq!((moving.delta().role, moving.stalled_us), (Role::Sender, 0));
        // A receiver that shut its window: the sender probes it, backing
        // off (probes and backoff count), but nothing is lost, nothing is
        // outstanding, its window is whole: held, not timed out.
        let shut = |_| {
            let mut c = sender(4_000_000, 0, 10, 0, 0);
            let t = c.tcp.as_mut().expect("tcp");
            (t.probes, t.backoff, t.snd_wnd) = (3, 3, Some(0));
            c
        };
        assert!(!timed_out(&shut(0), &shut(1)));
        let held = follow(shut, 31);
        assert_eq!((held.delta().role, held.stalled_us), (Role::Idle, 0));
        // One timeout in an interactive session, 300 ms of 3 s: under a
        // fifth of the period, still idle.
        let blip = follow(
            |i| match i {
                10..=12 => sender(900, 1, 1, CA_LOSS, 1),
                _ if i > 12 => sender(1_000, 0, 10, 0, 0),
                _ => sender(900, 0, 10, 0, 0),
            },
            31,
        );
        assert!(
            blip.stalled_us > 0 && blip.stalled_us < 600_000,
            "{}",
            blip.stalled_us
        );
        assert_eq!(blip.delta().role, Role::Idle);
    }

    #[test]
    fn tracker_marks_a_vanished_connection_closed() {
        let mut t = Tracker::default();
        t.add(vec![conn(1, 0, 0, 0, 0), conn(2, 0, 0, 0, 0)], 0.0);
        t.add(vec![conn(1, 10, 0, 0, 0)], 0.1);
        t.add(vec![conn(1, 20, 0, 0, 0), conn(2, 50, 0, 0, 0)], 0.2);
        assert_eq!(t.tracks.len(), 2);
        assert!(!t.tracks[0].closed);
        assert_eq!(t.tracks[0].samples, 3);
        // A cookie is unique while a socket lives: once gone, it stays closed.
        assert!(t.tracks[1].closed);
        assert_eq!(t.tracks[1].samples, 1);
    }

    /// A connection first sampled as the server's request socket, without
    /// TCP_INFO: its period starts at the first sample that has counters
    /// (from the request socket on, a 60 kB download's 42,195 B acked in
    /// 0.1 s read as nothing moved).
    #[test]
    fn a_request_socket_is_no_baseline() {
        let mut t = Tracker::default();
        let mut syn_recv = conn(1, 0, 0, 0, 0);
        syn_recv.state = 3;
        syn_recv.tcp = None;
        t.add(vec![syn_recv], 0.0);
        t.add(vec![conn(1, 13_235, 83, 20_000, 0)], 0.1);
        t.add(vec![conn(1, 55_430, 83, 120_000, 0)], 0.2);
        let tr = &t.tracks[0];
        assert_eq!((tr.samples, tr.t_first), (2, 0.1));
        let d = tr.delta();
        assert_eq!(
            (d.acked, d.busy_us, d.role),
            (42_195, Some(100_000), Role::Sender)
        );
    }
}
