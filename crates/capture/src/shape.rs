//! A connection's shape over its life, for its class (`plumb-diagnose`'s
//! `class`): its runs of data, the exchanges between the two sides, the
//! server's time before each response, and the time it sat idle.
//!
//! A *run* is new data one side sends with no turn and no idle pause in
//! between. A *turn* is new data from the other side: when the server
//! answers the client it is an exchange, and the gap since the client's
//! last data is the server's time (at the capture point); when the client
//! speaks again the gap, less the capture point's round trip to the client
//! (the handshake's SYN-ACK to ACK), is the client's, idle. A pause of the same side
//! with nothing in flight either way counts as idle once it lasts
//! [`Thresholds::idle_pause_round_trips`] round trips and
//! [`Thresholds::idle_pause_min_seconds`]: shorter ones are the sender's
//! own pacing within a run. A wait with data in flight (a retransmission
//! timeout, a zero window) is a stall, not idle.
//!
//! The state is a few numbers per connection, whatever its length.
//!
//! [`Thresholds::idle_pause_round_trips`]: plumb_diagnose::class::Thresholds
//! [`Thresholds::idle_pause_min_seconds`]: plumb_diagnose::class::Thresholds

use plumb_diagnose::class::THRESHOLDS;
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
    /// Bytes within half a round trip of its first segment: its first
    /// flight, sent before any ACK of it could come back (the next flight
    /// leaves a whole round trip after it, so a bar of one round trip would
    /// sit on its first segment). 0 when the round trip was not known as
    /// it began.
    pub first_round_bytes: u32,
    /// Exchanges completed before it began: a response does not count the
    /// request it answers, whose round trip is its own first one.
    pub exchanges_before: u32,
    /// Sent by the connection's client.
    pub from_client: bool,
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
    /// Since when nothing has been in flight either way.
    #[serde(skip)]
    quiet_since: Option<u64>,
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
    /// After it, data is in flight either way.
    pub in_flight: bool,
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
        if s.in_flight {
            self.quiet_since = None;
        } else if self.quiet_since.is_none() {
            self.quiet_since = Some(s.ts);
        }
    }

    fn data(&mut self, s: &Step) {
        let Some(mut run) = self.current.take() else {
            self.open(s);
            return;
        };
        if run.from_client != s.from_client {
            let gap = s.ts.saturating_sub(run.last_ns);
            if s.from_client {
                let idle = gap.saturating_sub(s.client_path_ns.unwrap_or(0));
                self.idle_ns = self.idle_ns.saturating_add(idle);
            } else {
                self.server_gaps.add(gap);
            }
            self.close(run);
            self.open(s);
            if !s.from_client {
                // Counted once the response is open: it came after the
                // exchanges before it, not after its own.
                self.exchanges = self.exchanges.saturating_add(1);
            }
            return;
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
        let in_first_round = s
            .rtt_ns
            .is_some_and(|r| s.ts.saturating_sub(run.start_ns) < r / 2);
        if run.first_round_bytes > 0 && in_first_round {
            let more = u32::try_from(s.new_bytes).unwrap_or(u32::MAX);
            run.first_round_bytes = run.first_round_bytes.saturating_add(more);
        }
        self.current = Some(run);
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
        });
    }

    fn close(&mut self, run: RunSeen) {
        if self.longest.is_none_or(|l| run.bytes > l.bytes) {
            self.longest = Some(run);
        }
    }

    /// Closes the run still open at the end of the capture.
    pub(crate) fn finish(&mut self) {
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

    fn step(ts_ms: f64, from_client: bool, new_bytes: u64, in_flight: bool) -> Step {
        Step {
            ts: (ts_ms * MS as f64) as u64,
            from_client,
            new_bytes,
            data: new_bytes > 0,
            in_flight,
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
        assert_eq!(l.exchanges_before, 0);
    }

    /// The lab's 60 kB download: the second flight leaves a round trip
    /// after the first, a hair under the handshake's (10 ms here), and is
    /// not part of the first; the response to the second request comes
    /// after one exchange, not two.
    #[test]
    fn the_first_flight_ends_before_the_next_and_a_response_follows_earlier_exchanges() {
        let mut s = Shape::default();
        s.step(&step(0.0, true, 80, true));
        s.step(&step(1.0, false, 14_480, true));
        s.step(&step(10.97, false, 28_960, true));
        s.step(&step(21.0, true, 0, false));
        s.step(&step(100.0, true, 80, true));
        s.step(&step(101.0, false, 100_000, true));
        s.finish();
        assert_eq!(s.exchanges, 2);
        let l = s.longest.expect("a longest run");
        assert_eq!((l.bytes, l.exchanges_before), (100_000, 1));
        assert_eq!(l.first_round_bytes, 100_000);
        let mut s = Shape::default();
        s.step(&step(0.0, true, 80, true));
        s.step(&step(1.0, false, 14_480, true));
        s.step(&step(10.97, false, 28_960, true));
        s.finish();
        let l = s.longest.expect("a longest run");
        assert_eq!((l.first_round_bytes, l.exchanges_before), (14_480, 0));
    }

    /// Beside the server, each gap before the client's next request holds
    /// the round trip to the client and back (10 ms here): 200 exchanges
    /// with a 1 ms server and a client that asks again at once are not
    /// idle (the lab's, unsubtracted: idle 89 % of their life).
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

    /// A pause with data in flight is a stall: the run goes on and no idle
    /// time is counted; the same pause with nothing in flight is idle.
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
        // Shorter than the bar (50 ms and two round trips): the same run.
        let mut s = Shape::default();
        s.step(&step(0.0, false, 1000, true));
        s.step(&step(10.0, true, 0, false));
        s.step(&step(40.0, false, 1000, true));
        s.finish();
        assert_eq!((s.runs, s.idle_ns), (1, 0));
    }
}
