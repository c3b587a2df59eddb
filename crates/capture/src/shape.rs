//! A connection's shape over its life, for its class (`plumb-diagnose`'s
//! `class`): its runs of data, the exchanges between the two sides, the
//! server's time before each response, and the time it sat idle.
//!
//! A *run* is new data one side sends with no turn and no idle pause in
//! between. A *turn* is an answer from the other side: data it sends once
//! the run has nothing left in flight. After a short run (under
//! `bulk_min_bytes`) any such data answers it; after a long one, a message
//! that the run's side does not wait for (it sends again within half a
//! round trip), or one of about a segment sent within two round trips of
//! the run's last data, is a control message set aside (an SSH window
//! adjustment, a TLS record), and data sent while the run is still in
//! flight never answers it. When
//! the server answers the client it is an exchange, and the gap since the
//! client's last data is the server's time (at the capture point); when
//! the client speaks again the gap, less the capture point's round trip to
//! the client (the handshake's SYN-ACK to ACK), is the client's, idle once
//! it lasts a pause. A pause of the same side with nothing in flight either way counts
//! as idle once it lasts [`Thresholds::idle_pause_round_trips`] round trips
//! and [`Thresholds::idle_pause_min_seconds`]: shorter ones are the
//! sender's own pacing within a run. A wait with data in flight (a
//! retransmission timeout, a zero window) is a stall, not idle.
//!
//! The state is a few numbers per connection, whatever its length.
//!
//! [`Thresholds::idle_pause_round_trips`]: plumb_record::class::Thresholds
//! [`Thresholds::idle_pause_min_seconds`]: plumb_record::class::Thresholds

use plumb_diagnose::class::THRESHOLDS;

use crate::rounds::{Growth, Rounds};
use serde::Serialize;

/// One run while it lasts, and the longest (most bytes) once closed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct RunSeen {
    /// New payload bytes.
    pub bytes: u64,
    /// Its first data segment, ns since the epoch.
    pub start_ns: u64,
    /// Its last data segment, a resend included, ns since the epoch.
    pub last_ns: u64,
    /// Its last segment of new data, ns since the epoch: after it, the run
    /// only resent (a stall, when long).
    pub last_new_ns: u64,
    /// Bytes within one round trip of its first segment (0 when the round
    /// trip was not known as it began).
    pub first_round_bytes: u32,
    /// Exchanges before it began.
    pub exchanges_before: u32,
    /// Sent by the connection's client.
    pub from_client: bool,
    /// Its new data per round trip, once it closed.
    pub growth: Growth,
}

/// The gaps before the server's responses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Gaps {
    /// Gaps timed.
    pub count: u32,
    /// Their sum, ns.
    pub sum_ns: u64,
    /// The smallest, ns.
    pub min_ns: u64,
    /// The largest, ns.
    pub max_ns: u64,
}

impl Gaps {
    fn add(&mut self, ns: u64) {
        self.min_ns = if self.count == 0 {
            ns
        } else {
            self.min_ns.min(ns)
        };
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns = self.sum_ns.saturating_add(ns);
        self.count = self.count.saturating_add(1);
    }
}

/// A connection's shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Shape {
    /// Runs closed and open.
    pub runs: u32,
    /// Server runs that answered a client run.
    pub exchanges: u32,
    /// Idle time, ns: the client's gaps before speaking again and pauses
    /// with nothing in flight (see the module doc).
    pub idle_ns: u64,
    /// The gaps before the server's responses, at the capture point.
    pub server_gaps: Gaps,
    /// The run with the most bytes.
    pub longest: Option<RunSeen>,
    #[serde(skip)]
    current: Option<RunSeen>,
    /// A message from the other side not yet known to be an answer.
    #[serde(skip)]
    pending: Option<Pending>,
    /// The open run's rounds.
    #[serde(skip)]
    rounds: Rounds,
    /// Since when nothing has been in flight either way.
    #[serde(skip)]
    quiet_since: Option<u64>,
}

/// The most a message from the other side may carry, bytes, and still be
/// set aside as a control message within a long run (an SSH window
/// adjustment, a TLS record, an SMB credit): about one segment.
const ASIDE_BYTES: u64 = 1_460;

/// A message from the other side while a run is open.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Pending {
    first_ns: u64,
    last_ns: u64,
    bytes: u64,
    /// From the run's last data segment to the message's first.
    gap_ns: u64,
}

/// One segment as the shape sees it.
pub(crate) struct Step {
    /// Its capture time, ns.
    pub ts: u64,
    /// Sent by the client.
    pub from_client: bool,
    /// New payload bytes it carried (0 for an ACK or a resend).
    pub new_bytes: u64,
    /// It carried payload, new or resent.
    pub data: bool,
    /// After it, the client has data in flight.
    pub client_in_flight: bool,
    /// After it, the server has data in flight.
    pub server_in_flight: bool,
    /// The round trip known so far, ns.
    pub rtt_ns: Option<u64>,
    /// The capture point's round trip to the client and back (the
    /// handshake's SYN-ACK to its ACK), ns, when known: part of every gap
    /// before the client speaks again, and none of the client's idle time.
    pub client_path_ns: Option<u64>,
}

impl Shape {
    /// Takes one segment.
    pub(crate) fn step(&mut self, s: &Step) {
        if s.new_bytes > 0 {
            self.data(s);
        } else if s.data {
            self.resent(s);
        }
        if s.client_in_flight || s.server_in_flight {
            self.quiet_since = None;
        } else if self.quiet_since.is_none() {
            self.quiet_since = Some(s.ts);
        }
    }

    fn data(&mut self, s: &Step) {
        let Some(run) = self.current.take() else {
            self.open(s);
            return;
        };
        if run.from_client == s.from_client {
            self.same_side(run, s);
        } else {
            self.other_side(run, s);
        }
    }

    /// New data from the side whose run is open: the run goes on, unless a
    /// message from the other side was an answer it waited for, or it
    /// paused with nothing in flight.
    fn same_side(&mut self, mut run: RunSeen, s: &Step) {
        if let Some(p) = self.pending.take() {
            let resumed_at_once = s
                .rtt_ns
                .is_some_and(|r| s.ts.saturating_sub(run.last_ns) < r / 2);
            // A control message is sent as data arrives: within a couple of
            // round trips of the run's last segment, not after a pause.
            let prompt = s.rtt_ns.is_some_and(|r| p.gap_ns <= 2 * r);
            let aside = run.bytes >= THRESHOLDS.bulk_min_bytes && p.bytes <= ASIDE_BYTES && prompt;
            if !(resumed_at_once || aside) {
                self.pending = Some(p);
                self.current = Some(run);
                self.turn(s.rtt_ns, s.client_path_ns);
                self.data(s);
                return;
            }
        }
        let pause = self.quiet_since.map_or(0, |q| s.ts.saturating_sub(q));
        if pause > 0 && pause >= idle_pause_ns(s.rtt_ns) {
            self.idle_ns = self.idle_ns.saturating_add(pause);
            self.close(run);
            self.open(s);
            return;
        }
        run.bytes += s.new_bytes;
        run.last_ns = s.ts;
        run.last_new_ns = s.ts;
        if let Some(r) = s.rtt_ns {
            self.rounds
                .add(s.ts.saturating_sub(run.start_ns), r, s.new_bytes);
        }
        // The first flight: what left within half a round trip of the
        // first segment (the second leaves a round trip after the first,
        // give or take the path's jitter).
        let in_first_round = s
            .rtt_ns
            .is_some_and(|r| s.ts.saturating_sub(run.start_ns) < r / 2);
        if run.first_round_bytes > 0 && in_first_round {
            let more = u32::try_from(s.new_bytes).unwrap_or(u32::MAX);
            run.first_round_bytes = run.first_round_bytes.saturating_add(more);
        }
        self.current = Some(run);
    }

    /// New data from the other side. While the run is still in flight it
    /// is no answer (an SSH window adjustment, a credit, a pipelined
    /// request). Otherwise it answers a short run at once; after a long
    /// run it is held as pending until it grows past a control message or
    /// the run's side waits for it ([`Shape::same_side`]).
    fn other_side(&mut self, run: RunSeen, s: &Step) {
        let run_in_flight = if run.from_client {
            s.client_in_flight
        } else {
            s.server_in_flight
        };
        if run_in_flight {
            self.current = Some(run);
            return;
        }
        let long = run.bytes >= THRESHOLDS.bulk_min_bytes;
        let p = self.pending.get_or_insert(Pending {
            first_ns: s.ts,
            last_ns: s.ts,
            bytes: 0,
            gap_ns: s.ts.saturating_sub(run.last_ns),
        });
        p.bytes += s.new_bytes;
        p.last_ns = s.ts;
        let answer = !long || p.bytes > ASIDE_BYTES;
        self.current = Some(run);
        if answer {
            self.turn(s.rtt_ns, s.client_path_ns);
        }
    }

    /// The pending message answered the open run: the run ends and the
    /// message opens the other side's. An answer from the server is an
    /// exchange, its gap the server's time; from the client, its gap is
    /// the client's, idle once as long as a pause (a client that asks
    /// again at once is busy, however short the round trip).
    fn turn(&mut self, rtt_ns: Option<u64>, client_path_ns: Option<u64>) {
        let Some(p) = self.pending.take() else {
            return;
        };
        let Some(run) = self.current.take() else {
            return;
        };
        let from_client = !run.from_client;
        let exchanges_before = self.exchanges;
        if from_client {
            let idle = p.gap_ns.saturating_sub(client_path_ns.unwrap_or(0));
            if idle >= idle_pause_ns(rtt_ns) {
                self.idle_ns = self.idle_ns.saturating_add(idle);
            }
        } else {
            self.exchanges = self.exchanges.saturating_add(1);
            self.server_gaps.add(p.gap_ns);
        }
        self.close(run);
        self.runs = self.runs.saturating_add(1);
        let bytes = u32::try_from(p.bytes).unwrap_or(u32::MAX);
        self.current = Some(RunSeen {
            from_client,
            bytes: p.bytes,
            start_ns: p.first_ns,
            last_ns: p.last_ns,
            last_new_ns: p.last_ns,
            first_round_bytes: if rtt_ns.is_some() { bytes } else { 0 },
            exchanges_before,
            growth: Growth::default(),
        });
        self.rounds = Rounds::default();
        if let Some(r) = rtt_ns {
            self.rounds.add(0, r, p.bytes);
        }
    }

    /// A resend stretches its side's run: the run lasts while that side
    /// is still delivering it (a stall included).
    fn resent(&mut self, s: &Step) {
        if let Some(run) = self
            .current
            .as_mut()
            .filter(|r| r.from_client == s.from_client)
        {
            run.last_ns = run.last_ns.max(s.ts);
        }
    }

    fn open(&mut self, s: &Step) {
        self.runs = self.runs.saturating_add(1);
        let first = u32::try_from(s.new_bytes).unwrap_or(u32::MAX);
        self.current = Some(RunSeen {
            from_client: s.from_client,
            bytes: s.new_bytes,
            start_ns: s.ts,
            last_ns: s.ts,
            last_new_ns: s.ts,
            first_round_bytes: if s.rtt_ns.is_some() { first } else { 0 },
            exchanges_before: self.exchanges,
            growth: Growth::default(),
        });
        self.rounds = Rounds::default();
        if let Some(r) = s.rtt_ns {
            self.rounds.add(0, r, s.new_bytes);
        }
    }

    fn close(&mut self, mut run: RunSeen) {
        run.growth = self.rounds.growth();
        if self.longest.is_none_or(|l| run.bytes > l.bytes) {
            self.longest = Some(run);
        }
    }

    /// Closes the run still open at the end of the capture.
    pub(crate) fn finish(&mut self) {
        self.turn(None, None);
        if let Some(run) = self.current.take() {
            self.close(run);
        }
    }
}

/// The shortest pause of one side that counts as idle.
fn idle_pause_ns(rtt_ns: Option<u64>) -> u64 {
    let t = THRESHOLDS;
    let floor = (t.idle_pause_min_seconds * 1e9) as u64;
    let rtts = rtt_ns.map_or(0, |r| (r as f64 * t.idle_pause_round_trips) as u64);
    floor.max(rtts)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A segment after which the sender's data is in flight or not, and
    /// the other side's none.
    fn step(ts_ms: f64, from_client: bool, new_bytes: u64, in_flight: bool) -> Step {
        Step {
            ts: (ts_ms * MS as f64) as u64,
            from_client,
            new_bytes,
            data: new_bytes > 0,
            client_in_flight: in_flight && from_client,
            server_in_flight: in_flight && !from_client,
            rtt_ns: Some(10 * MS),
            client_path_ns: None,
        }
    }

    /// A request, a response 20 ms later in three flights, the next request
    /// 100 ms after the response: one exchange with a 20 ms gap, the
    /// response the longest run with its first flight, 100 ms idle.
    #[test]
    fn an_exchange_times_the_server_and_the_client() {
        let mut s = Shape::default();
        s.step(&step(0.0, true, 100, true));
        s.step(&step(5.0, false, 0, false));
        s.step(&step(25.0, false, 1000, true));
        s.step(&step(26.0, false, 1000, true));
        s.step(&step(36.0, false, 2000, true));
        s.step(&step(46.0, false, 4000, true));
        s.step(&step(51.0, true, 0, false));
        s.step(&step(151.0, true, 100, true));
        s.finish();
        assert_eq!(s.exchanges, 1);
        assert_eq!(s.server_gaps.count, 1);
        assert_eq!(s.server_gaps.min_ns, 25 * MS);
        assert_eq!(s.idle_ns, 105 * MS);
        assert_eq!(s.runs, 3);
        let l = s.longest.expect("a longest run");
        assert_eq!(l.bytes, 8000);
        assert!(!l.from_client);
        assert_eq!(l.first_round_bytes, 2000);
        // The exchanges done before its own began.
        assert_eq!(l.exchanges_before, 0);
    }

    /// A small message from the receiver while the sender's run is still
    /// in flight (an SSH window adjustment) is no exchange: the run goes on.
    #[test]
    fn data_sent_back_during_a_run_is_no_turn() {
        let mut s = Shape::default();
        s.step(&step(0.0, false, 10_000, true));
        let mut back = step(5.0, true, 52, true);
        back.server_in_flight = true;
        s.step(&back);
        s.step(&step(6.0, false, 10_000, true));
        s.finish();
        assert_eq!((s.runs, s.exchanges), (1, 0));
        assert_eq!(s.longest.map(|l| l.bytes), Some(20_000));
    }

    /// A client that asks again at once is not idle, however short the
    /// round trip; one that waits 200 ms is.
    #[test]
    fn only_a_pause_before_a_request_is_idle() {
        let mut s = Shape::default();
        for i in 0..3 {
            let t = f64::from(i) * 30.0;
            s.step(&step(t, true, 100, true));
            s.step(&step(t + 20.0, false, 1000, true));
        }
        s.finish();
        assert_eq!((s.exchanges, s.idle_ns), (3, 0));
        let mut s = Shape::default();
        s.step(&step(0.0, true, 1, true));
        s.step(&step(10.0, false, 1, true));
        s.step(&step(210.0, true, 1, true));
        s.finish();
        assert_eq!(s.idle_ns, 200 * MS);
    }

    /// After a long run, a segment-sized message the run's side does not
    /// wait for is set aside; one it waits for, or a larger one, answers.
    #[test]
    fn after_a_long_run_only_an_answer_waited_for_is_a_turn() {
        let long = |s: &mut Shape| {
            for i in 0..10 {
                s.step(&step(f64::from(i), false, 10_000, true));
            }
            s.step(&step(9.5, true, 0, false));
        };
        // An SSH window adjustment, then the sender goes on 30 ms later.
        let mut s = Shape::default();
        long(&mut s);
        s.step(&step(10.0, true, 52, true));
        s.step(&step(40.0, false, 10_000, true));
        s.finish();
        assert_eq!((s.runs, s.exchanges), (1, 0));
        assert_eq!(s.longest.map(|l| l.bytes), Some(110_000));
        // A request of two segments answers it.
        let mut s = Shape::default();
        long(&mut s);
        s.step(&step(10.0, true, 1_400, true));
        s.step(&step(10.1, true, 1_400, true));
        s.step(&step(40.0, false, 10_000, true));
        s.finish();
        assert_eq!((s.runs, s.exchanges), (3, 1));
    }

    /// A pause with data in flight is a stall: the run goes on and no idle
    /// time is counted; the same pause with nothing in flight is idle.
    /// Beside the server, each gap before the client's next request holds
    /// the round trip to the client and back (10 ms here): 200 exchanges
    /// with a 1 ms server and a client that asks again at once are not
    /// idle.
    #[test]
    fn the_path_to_the_client_is_not_its_idle_time() {
        let mut s = Shape::default();
        for k in 0..200u32 {
            let t = f64::from(k) * 11.0;
            let mut ask = step(t, true, 32, true);
            ask.client_path_ns = Some(10 * MS);
            s.step(&ask);
            s.step(&step(t + 1.0, false, 64, true));
        }
        s.finish();
        assert_eq!(s.exchanges, 200);
        assert!(s.idle_ns < MS, "{} ns idle", s.idle_ns);
    }

    #[test]
    fn a_stall_is_not_idle_and_a_quiet_pause_is() {
        let mut s = Shape::default();
        s.step(&step(0.0, false, 1000, true));
        s.step(&step(1000.0, false, 1000, true));
        s.finish();
        assert_eq!((s.runs, s.idle_ns), (1, 0));
        let mut s = Shape::default();
        s.step(&step(0.0, false, 1000, true));
        s.step(&step(10.0, true, 0, false));
        s.step(&step(1000.0, false, 1000, true));
        s.finish();
        assert_eq!((s.runs, s.idle_ns), (2, 990 * MS));
        // Shorter than the bar (10 ms and two round trips, 20 ms here):
        // the same run.
        let mut s = Shape::default();
        s.step(&step(0.0, false, 1000, true));
        s.step(&step(10.0, true, 0, false));
        s.step(&step(25.0, false, 1000, true));
        s.finish();
        assert_eq!((s.runs, s.idle_ns), (1, 0));
    }
}
