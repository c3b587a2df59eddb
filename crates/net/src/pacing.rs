//! Pacing for `-b`: when a sender may send how much.
//!
//! This module owns the send schedule, kept apart from any clock so that it
//! can be tested on virtual time: [`Schedule::poll`] takes `now` and answers
//! either "send `n` units" or "wait until `t`". A unit is whatever the sender
//! counts — a datagram for UDP, a byte for TCP — and a *step* is the number of
//! units granted at once (a UDP batch, a TCP block).
//!
//! The schedule is a timetable, not an average since the start (which is what
//! makes iperf3 burst after a stall). Three rules keep the output even:
//!
//! 1. Grants are booked against a timetable at the rate, so a sender that
//!    wakes a little late (timer slack, a busy CPU) still holds the rate: the
//!    units it owes ride along with its next grant.
//! 2. Grants are at least one step apart, and a grant carries at most
//!    [`CATCH_UP_STEPS`] steps of debt on top of its own: a sender that is
//!    behind catches up at a bounded multiple of the rate, never back to back.
//! 3. Debt older than [`MAX_LAG`] is forgotten: after a long stall
//!    (descheduled, a blocked socket) the sender resumes at the rate.
//!
//! [`Pacer`] wraps a schedule with the monotonic clock and sleeping; several
//! streams can share one (`--total-bitrate`), each taking the next grant.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Debt older than this is forgotten rather than caught up.
pub const MAX_LAG: Duration = Duration::from_millis(10);

/// Steps of debt one grant may carry on top of its own step (rule 2).
pub const CATCH_UP_STEPS: u64 = 2;

/// How much time one UDP grant should cover at most: small enough that a
/// batch is not a burst, large enough that the sender sleeps a few thousand
/// times a second rather than per datagram.
pub const UDP_QUANTUM: Duration = Duration::from_micros(200);

/// What the sender should do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// Send this many units now (already booked; refund what is not sent).
    Send(u64),
    /// Nothing may go before this time (on the caller's clock).
    WaitUntil(Duration),
}

/// A send timetable at a fixed rate; see the module docs for its rules.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Nanoseconds one unit takes at the rate.
    unit_ns: f64,
    /// Units per grant when on time.
    step: u64,
    /// Most units one grant may carry (step plus catch-up).
    max_grant: u64,
    /// Where the timetable stands: everything before it has been granted, ns.
    next_ns: f64,
    /// When the next grant may go at the earliest (one step after the last), ns.
    earliest_ns: f64,
    /// How far `earliest_ns` moves per unit refunded: the spacing the last
    /// grant set, per unit.
    spacing_per_unit_ns: f64,
    started: bool,
}

impl Schedule {
    /// A schedule for `rate_bps` bit/s of `unit_bytes`-byte units, granted
    /// `step` at a time; `None` when the rate is 0 (unlimited).
    ///
    /// Grants never exceed `step` here: a sender of fixed blocks (TCP)
    /// catches up one block per grant. See [`Schedule::for_datagrams`].
    pub fn new(rate_bps: u64, unit_bytes: usize, step: u64) -> Option<Schedule> {
        if rate_bps == 0 {
            return None;
        }
        let step = step.max(1);
        Some(Schedule {
            unit_ns: unit_bytes.max(1) as f64 * 8e9 / rate_bps as f64,
            step,
            max_grant: step,
            next_ns: 0.0,
            earliest_ns: 0.0,
            spacing_per_unit_ns: 0.0,
            started: false,
        })
    }

    /// A schedule for datagrams of `len` bytes whose grants cover about
    /// `quantum` of time — at least one datagram, at most `max_batch` — and
    /// may carry catch-up datagrams up to `max_batch`.
    pub fn for_datagrams(
        rate_bps: u64,
        len: usize,
        quantum: Duration,
        max_batch: usize,
    ) -> Option<Schedule> {
        let mut s = Schedule::new(rate_bps, len, 1)?;
        let max_batch = max_batch.max(1) as u64;
        let per_quantum = (quantum.as_nanos() as f64 / s.unit_ns).floor() as u64;
        s.step = per_quantum.clamp(1, max_batch);
        s.max_grant = (s.step * (1 + CATCH_UP_STEPS)).min(max_batch);
        Some(s)
    }

    /// Units per grant when on time.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// The next grant at time `now`, booking it if it is granted.
    pub fn poll(&mut self, now: Duration) -> Pace {
        let t = now.as_nanos() as f64;
        if !self.started {
            self.started = true;
            self.next_ns = t;
            self.earliest_ns = t;
        }
        let due = self.next_ns.max(self.earliest_ns);
        if t < due {
            return Pace::WaitUntil(Duration::from_nanos(due.ceil() as u64));
        }
        if t - self.next_ns > MAX_LAG.as_nanos() as f64 {
            // Too far behind: forget the debt (rule 3).
            self.next_ns = t;
        }
        // Whole units the timetable is behind by, carried along (rules 1, 2).
        let owed = ((t - self.next_ns) / self.unit_ns).floor() as u64;
        let n = (self.step + owed).min(self.max_grant);
        self.next_ns += n as f64 * self.unit_ns;
        // A schedule whose grants cannot carry CATCH_UP_STEPS steps of debt
        // — a TCP block is one step, always; a UDP step close to the batch
        // leaves little room — lets the next grant come sooner instead:
        // spaced by what it carried at 1 + CATCH_UP_STEPS times the rate, so
        // that catching up never runs faster than that, however large the
        // grant. Spaced a full step after every late wake-up, such a sender
        // would lose each delay for good: 200 Mbit/s of 128 KiB blocks ran at
        // 139-145 Mbit/s on a loaded machine, and `-u -b 10G -l 1472 --gsro`
        // (169 datagrams a step, 176 a batch) at 8.0 Gbit/s.
        let cramped = self.max_grant < self.step * (1 + CATCH_UP_STEPS);
        if owed > 0 && cramped {
            self.spacing_per_unit_ns = self.unit_ns / (1 + CATCH_UP_STEPS) as f64;
            self.earliest_ns = t + n as f64 * self.spacing_per_unit_ns;
        } else {
            self.spacing_per_unit_ns = self.unit_ns;
            self.earliest_ns = t + self.step as f64 * self.unit_ns;
        }
        Pace::Send(n)
    }

    /// Gives back `units` of the last grant that were not sent: the timetable
    /// and the spacing both count only what went.
    pub fn refund(&mut self, units: u64) {
        let units = units.min(self.max_grant) as f64;
        self.next_ns -= units * self.unit_ns;
        self.earliest_ns -= units * self.spacing_per_unit_ns;
    }
}

/// A [`Schedule`] on the monotonic clock, owned by one stream or shared by
/// all of them (one rate across `-P` streams).
#[derive(Debug, Clone)]
pub enum Pacer {
    /// This stream's own schedule.
    Own(Schedule),
    /// A schedule every sending stream of the test takes grants from.
    Shared(Arc<Mutex<Schedule>>),
}

/// The clock pacers read: one process-wide origin, so that shared schedules
/// see the same time from every thread.
fn now() -> Duration {
    crate::datathread::epoch().elapsed()
}

impl Pacer {
    /// Units per grant.
    pub fn step(&self) -> u64 {
        match self {
            Pacer::Own(s) => s.step(),
            Pacer::Shared(m) => m.lock().map_or(1, |s| s.step()),
        }
    }

    fn poll(&mut self) -> Pace {
        let t = now();
        match self {
            Pacer::Own(s) => s.poll(t),
            // A poisoned lock means another sender panicked; pacing on
            // regardless is the least surprising thing to do.
            Pacer::Shared(m) => match m.lock() {
                Ok(mut s) => s.poll(t),
                Err(p) => p.into_inner().poll(t),
            },
        }
    }

    /// Sleeps until the next grant and returns it; `None` if `stop` was set
    /// meanwhile (checked at least every 100 ms).
    pub fn wait(&mut self, stop: &AtomicBool) -> Option<u64> {
        // Bounded: each round either grants or sleeps toward a due time at
        // most MAX_LAG + a step ahead; the stop flag ends it otherwise.
        loop {
            if stop.load(Relaxed) {
                return None;
            }
            match self.poll() {
                Pace::Send(n) => return Some(n),
                Pace::WaitUntil(t) => {
                    let gap = t.saturating_sub(now());
                    std::thread::sleep(gap.min(crate::datathread::POLL_SLICE));
                }
            }
        }
    }

    /// Gives back units of the last grant that were not sent.
    pub fn refund(&mut self, units: u64) {
        if units == 0 {
            return;
        }
        match self {
            Pacer::Own(s) => s.refund(units),
            Pacer::Shared(m) => match m.lock() {
                Ok(mut s) => s.refund(units),
                Err(p) => p.into_inner().refund(units),
            },
        }
    }
}

/// Makes the pacers of a test's sending streams: each its own copy of a
/// schedule, or one schedule they all take grants from (one rate across
/// `-P` streams, `--total-bitrate`).
#[derive(Debug, Clone)]
pub struct PacerFactory {
    own: Option<Schedule>,
    shared: Option<Arc<Mutex<Schedule>>>,
}

impl PacerFactory {
    /// Every stream gets its own copy of `schedule` (`None`: unpaced).
    pub fn per_stream(schedule: Option<Schedule>) -> PacerFactory {
        PacerFactory {
            own: schedule,
            shared: None,
        }
    }

    /// Every stream takes grants from the one `schedule`.
    pub fn shared(schedule: Option<Schedule>) -> PacerFactory {
        PacerFactory {
            own: None,
            shared: schedule.map(|s| Arc::new(Mutex::new(s))),
        }
    }

    /// The pacer for one more stream; `None` when unpaced.
    pub fn pacer(&self) -> Option<Pacer> {
        match &self.shared {
            Some(s) => Some(Pacer::Shared(Arc::clone(s))),
            None => self.own.clone().map(Pacer::Own),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Drives a schedule on virtual time: the sender wakes `late(i)` ns after
    /// each due time and sends everything granted. Returns send times (ns)
    /// of every unit.
    fn simulate(
        mut s: Schedule,
        until_ns: u64,
        mut late: impl FnMut(usize) -> u64,
        stall: Option<(u64, u64)>,
    ) -> Vec<u64> {
        let mut t = 0u64;
        let mut sent = Vec::new();
        // Bounded by the simulated time: every round advances t by >= 1 ns.
        for i in 0.. {
            if t >= until_ns {
                break;
            }
            if let Some((from, len)) = stall {
                if t >= from && t < from + len {
                    t = from + len;
                    continue;
                }
            }
            match s.poll(Duration::from_nanos(t)) {
                Pace::Send(n) => {
                    sent.extend(std::iter::repeat_n(t, n as usize));
                    t += 1;
                }
                Pace::WaitUntil(d) => {
                    let d = d.as_nanos() as u64;
                    assert!(d > t, "wait must be in the future");
                    t = d + late(i);
                }
            }
        }
        sent
    }

    /// Most units sent in any window of `w` ns.
    fn max_in_window(times: &[u64], w: u64) -> usize {
        let mut best = 0;
        let mut lo = 0;
        for hi in 0..times.len() {
            while times[hi] - times[lo] >= w {
                lo += 1;
            }
            best = best.max(hi - lo + 1);
        }
        best
    }

    #[test]
    fn unlimited_has_no_schedule() {
        assert!(Schedule::new(0, 1000, 1).is_none());
        assert!(Schedule::for_datagrams(0, 1000, UDP_QUANTUM, 64).is_none());
    }

    #[test]
    fn grants_cover_about_a_quantum() {
        // 1 Gbit/s of 1250-byte datagrams = 100k/s = one per 10 µs.
        let s = Schedule::for_datagrams(1_000_000_000, 1250, UDP_QUANTUM, 1024).expect("paced");
        assert_eq!(s.step(), 20);
        // Capped by the batch.
        let s = Schedule::for_datagrams(100_000_000_000, 64, UDP_QUANTUM, 256).expect("paced");
        assert_eq!(s.step(), 256);
        // Slow: one datagram per grant.
        let s = Schedule::for_datagrams(1_000_000, 1460, UDP_QUANTUM, 1024).expect("paced");
        assert_eq!(s.step(), 1);
    }

    #[test]
    fn on_time_sender_is_exact_and_even() {
        // 100 Mbit/s of 1000-byte datagrams: 12_500/s, one per 80 µs.
        let s = Schedule::for_datagrams(100_000_000, 1000, UDP_QUANTUM, 1024).expect("paced");
        assert_eq!(s.step(), 2);
        let sent = simulate(s, 1_000 * MS, |_| 0, None);
        // 1 s at the rate, plus the grant made at t=0.
        assert!((12_500..=12_502).contains(&sent.len()), "{}", sent.len());
        // Any 1 ms holds the rate's 12.5 datagrams, give or take one step.
        let most = max_in_window(&sent, MS);
        assert!(most <= 12 + 2 + 1, "{most} in 1 ms");
    }

    #[test]
    fn late_wakeups_keep_the_average_rate() {
        // Every wake-up is 50 µs late (timer slack); the timetable absorbs it.
        let s = Schedule::for_datagrams(100_000_000, 1000, UDP_QUANTUM, 1024).expect("paced");
        let sent = simulate(s, 1_000 * MS, |_| 50_000, None);
        assert!(
            (12_400..=12_600).contains(&sent.len()),
            "{} datagrams in 1 s",
            sent.len()
        );
    }

    #[test]
    fn a_short_stall_is_repaid_gradually() {
        // 8 Mbit/s of 1000-byte datagrams: one per ms. Stall 5 ms at 100 ms.
        let s = Schedule::for_datagrams(8_000_000, 1000, UDP_QUANTUM, 1024).expect("paced");
        assert_eq!(s.step(), 1);
        let sent = simulate(s, 1_000 * MS, |_| 0, Some((100 * MS, 5 * MS)));
        // Nothing is lost: the average holds.
        assert!((999..=1_001).contains(&sent.len()), "{}", sent.len());
        // No burst: grants stay a step (1 ms) apart and carry at most
        // 1 + CATCH_UP_STEPS datagrams.
        let most = max_in_window(&sent, MS);
        assert!(most as u64 <= 1 + CATCH_UP_STEPS, "{most} in 1 ms");
        let mut times = sent.clone();
        times.dedup();
        assert!(times.windows(2).all(|w| w[1] - w[0] >= MS));
    }

    #[test]
    fn late_wakeups_keep_a_block_senders_rate() {
        // 200 Mbit/s of 128 KiB blocks: one per 5.24 ms. Every wake-up is
        // 1 ms late (a loaded machine); the blocks owed come sooner.
        let s = Schedule::new(200_000_000, 1, 131_072).expect("paced");
        let sent = simulate(s, 1_000 * MS, |_| MS, None);
        let bps = sent.len() as f64 * 8.0;
        assert!((bps / 200e6 - 1.0).abs() < 0.02, "{bps} bit/s in 1 s");
        // Catching up, grants still come at most 1 + CATCH_UP_STEPS times as
        // often as on time.
        let mut times = sent.clone();
        times.dedup();
        let gap = 131_072 * 8 * 1_000_000_000 / 200_000_000 / (1 + CATCH_UP_STEPS);
        assert!(times.windows(2).all(|w| w[1] - w[0] >= gap - 1));
    }

    #[test]
    fn late_wakeups_keep_the_rate_when_a_batch_barely_holds_a_step() {
        // 10 Gbit/s of 1472-byte GSO datagrams: a step is 169 datagrams
        // (200 µs), a batch 176, so a grant carries at most 7 of debt.
        // Every wake-up 50 µs late (timer slack): the owed grants come
        // sooner, where before they were spaced a full step and 20 % of the
        // rate was lost.
        let s = Schedule::for_datagrams(10_000_000_000, 1472, UDP_QUANTUM, 176).expect("paced");
        assert_eq!(s.step(), 169);
        let sent = simulate(s, 100 * MS, |_| 50_000, None);
        let bps = sent.len() as f64 * 1472.0 * 8.0 / 0.1;
        assert!((bps / 10e9 - 1.0).abs() < 0.02, "{bps} bit/s");
        let mut times = sent.clone();
        times.dedup();
        let gap = 169 * 1472 * 8 * 1_000_000_000 / 10_000_000_000 / (1 + CATCH_UP_STEPS);
        assert!(times.windows(2).all(|w| w[1] - w[0] >= gap - 1));
    }

    #[test]
    fn a_cramped_schedule_catches_up_at_a_bounded_multiple_of_the_rate() {
        // 5 Gbit/s of 1472-byte datagrams: a step is 84 (198 µs), a batch
        // 176, so grants cannot carry two steps of debt. After a 5 ms stall
        // the debt is repaid at no more than 1 + CATCH_UP_STEPS times the
        // rate, in any ten steps' time; a spacing of a third of a step per
        // grant of 176 repaid it at 6.3 times.
        let s = Schedule::for_datagrams(5_000_000_000, 1472, UDP_QUANTUM, 176).expect("paced");
        assert_eq!(s.step(), 84);
        let step_ns = 84 * 1472 * 8 * 1_000_000_000 / 5_000_000_000;
        let sent = simulate(s, 100 * MS, |_| 0, Some((20 * MS, 5 * MS)));
        let most = max_in_window(&sent, 10 * step_ns) as u64;
        assert!(most <= 30 * 84 + 176, "{most} in ten steps");
        // And the stall is repaid: the average holds.
        let bps = sent.len() as f64 * 1472.0 * 8.0 / 0.1;
        assert!((bps / 5e9 - 1.0).abs() < 0.02, "{bps} bit/s");
    }

    #[test]
    fn a_refund_gives_back_the_spacing_the_grant_set() {
        // A cramped grant while owing is spaced a third as much per unit, so
        // a refund of part of it moves the next grant back by a third as
        // much: 60 of 176 refunded still leaves 116 units' spacing to wait,
        // where a refund at the full per-unit time put it in the past.
        let mut s = Schedule::for_datagrams(10_000_000_000, 1472, UDP_QUANTUM, 176).expect("paced");
        assert!(matches!(s.poll(Duration::ZERO), Pace::Send(169)));
        // 1 ms in: hundreds of datagrams owed, so the timetable is behind
        // and only the spacing holds the next grant back.
        let late = Duration::from_millis(1);
        let Pace::Send(n) = s.poll(late) else {
            panic!("owed a grant")
        };
        assert_eq!(n, 176);
        s.refund(60);
        let Pace::WaitUntil(t) = s.poll(late) else {
            panic!("granted again at once after a partial refund")
        };
        let wait = (t - late).as_nanos() as f64;
        let want = 116.0 * 1177.6 / 3.0;
        assert!((wait - want).abs() < 10.0, "waits {wait} ns, not {want}");
    }

    #[test]
    fn a_long_stall_is_forgotten() {
        let s = Schedule::for_datagrams(8_000_000, 1000, UDP_QUANTUM, 1024).expect("paced");
        let sent = simulate(s, 1_000 * MS, |_| 0, Some((100 * MS, 50 * MS)));
        // The 50 ms stall costs ~50 datagrams (debt beyond MAX_LAG dropped).
        assert!((945..=955).contains(&sent.len()), "{}", sent.len());
        // Right after the stall: at the rate, no catch-up burst at all.
        let after: Vec<u64> = sent
            .iter()
            .copied()
            .filter(|t| (150 * MS..160 * MS).contains(t))
            .collect();
        assert!(after.len() <= 11, "{} in the 10 ms after", after.len());
    }

    #[test]
    fn refunds_return_unsent_units() {
        let mut s = Schedule::new(8_000, 1, 10).expect("paced"); // 1 ms per byte
        assert_eq!(s.poll(Duration::ZERO), Pace::Send(10));
        // Only 4 of 10 went: the next grant is due after 4 ms, not 10.
        s.refund(6);
        assert_eq!(
            s.poll(Duration::from_millis(1)),
            Pace::WaitUntil(Duration::from_millis(4))
        );
        assert_eq!(s.poll(Duration::from_millis(4)), Pace::Send(10));
        let mut d =
            Schedule::for_datagrams(8_000, 1, Duration::from_millis(10), 100).expect("paced");
        assert_eq!(d.poll(Duration::ZERO), Pace::Send(10));
        d.refund(6);
        // Datagram schedules carry the debt: 6 owed + 10.
        assert_eq!(d.poll(Duration::from_millis(10)), Pace::Send(16));
    }

    #[test]
    fn a_shared_pacer_splits_one_rate_between_streams() {
        let sched = || Schedule::for_datagrams(8_000_000, 1000, UDP_QUANTUM, 64);
        let f = PacerFactory::shared(sched());
        let (Some(Pacer::Shared(a)), Some(Pacer::Shared(b))) = (f.pacer(), f.pacer()) else {
            panic!("shared pacers expected");
        };
        assert!(Arc::ptr_eq(&a, &b));
        assert!(matches!(
            PacerFactory::per_stream(sched()).pacer(),
            Some(Pacer::Own(_))
        ));
        assert!(PacerFactory::shared(None).pacer().is_none());
        // Two streams polling one schedule in turn get the single rate.
        let mut s = sched().expect("paced");
        let mut granted = 0;
        for ms in 0..1000u64 {
            for _stream in 0..2 {
                if let Pace::Send(n) = s.poll(Duration::from_millis(ms)) {
                    granted += n;
                }
            }
        }
        assert_eq!(granted, 1000);
    }
}
