//! The forwarder: one thread per direction moving packets from one TUN
//! device, through an [`emu::Link`](crate::emu::Link), into the other.
//!
//! Owns: the driver loop (release what is due → read what has arrived → wait),
//! the clock (`Instant` since a shared epoch, converted to emulator
//! [`Time`]), and the per-direction I/O counters and release-time histogram.
//!
//! Timing: the thread sleeps in `ppoll` (with 1 ns timer slack) until a packet
//! arrives or until `spin` before the next release, then polls without
//! sleeping until the release time. Release error = time the write starts −
//! due time, recorded per frame written.
//!
//! Spin budget: polling is paid for in CPU time, and a real-time thread that
//! runs more than 95 % of a second on one CPU is stopped by the kernel's RT
//! throttling (`kernel.sched_rt_runtime_us`) for the rest of that second —
//! tens of milliseconds in which nothing is released. At 10 Gbit/s a
//! release is due every ~52 µs, so a 50 µs spin per release kept the
//! forwarder on its CPU 94 % of the time and the lab stalled for 23–39 ms
//! about once a second (seen in `perf sched` as the thread preempted with
//! the CPU going idle). So the thread keeps its busy share (everything but
//! the time blocked in `ppoll`) under [`BUSY_SHARE`] of each
//! [`BUDGET_WINDOW`]: past it, it sleeps up to the release instead of
//! spinning, and a late wake-up costs accuracy, not a stall. The budget is
//! per thread and in wall-clock time: two forwarders sharing one CPU could
//! still add up past 95 %, and reads and writes alone past it would too.
//! The scheduler spreads runnable real-time threads over the CPUs; in the
//! `perf sched` traces the two forwarders ran on different CPUs.
//!
//! Back-pressure: writes into TUN are processed synchronously by the
//! receiving stack (no queue to overflow). Reads are what keep the sending
//! device's queue from overflowing, so the loop never sleeps while packets are
//! readable and reads in batches between releases.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::emu::{Link, LinkStats, Time};
use crate::hist::Histogram;
use crate::packet::Packet;
use crate::sys::{self, Tun};
use crate::wire::{VnetHdr, MAX_SEGMENT_FRAME};

/// Longest the loop sleeps without checking the stop flag.
const IDLE_WAIT: Duration = Duration::from_millis(10);
/// Most packets read before checking for due releases again.
const READ_BATCH: usize = 64;
/// How often the thread publishes its counters for [`Lab::stats`](crate::Lab::stats).
const PUBLISH_EVERY: Duration = Duration::from_millis(5);
/// The window over which the forwarder's shares of time are kept.
const BUDGET_WINDOW: Duration = Duration::from_millis(100);
/// The first part of a window decides nothing (too little time to judge);
/// it keeps the previous window's decision.
const BUDGET_GRACE: Duration = Duration::from_millis(10);
/// Most of a window the thread may spend off `ppoll` (working or
/// spinning); well under RT throttling's 95 %, which also counts the other
/// direction's forwarder when both share a CPU. Past it the thread does not
/// spin at all.
const BUSY_SHARE: f64 = 0.8;
/// Past this share of a window in reads and writes, the thread spins half
/// as long. At 10 Gbit/s (a release every ~52 µs, ~40 % of the thread's time
/// in reads and writes) a 50 µs spin ran into [`BUSY_SHARE`] and left
/// releases to timed wake-ups (release p99 66–127 µs in five runs of a build
/// that halved the spin on the busy share instead), where a 25 µs spin
/// gave 35–41 µs in four runs (45–442 µs in three others); at 3 Gbit/s
/// (~15 % in reads and writes) the full spin is better (p99 20–27 against
/// 41 µs). With this rule: 41–115 µs over fourteen 10 Gbit/s runs.
const HALF_SPIN_WORK: f64 = 0.3;

/// How the thread spent the current window — blocked in `ppoll`, or reading
/// and writing — and so how long it may spin.
#[derive(Debug)]
struct SpinBudget {
    start: Instant,
    blocked: Duration,
    work: Duration,
    /// What the last judged part of a window allowed, as a share of the
    /// configured spin: 1, ½ or 0.
    allowed: u32,
}

impl SpinBudget {
    fn new(now: Instant) -> SpinBudget {
        SpinBudget {
            start: now,
            blocked: Duration::ZERO,
            work: Duration::ZERO,
            allowed: 2,
        }
    }

    /// How long the thread may spin now, of at most `spin`.
    fn spin(&mut self, now: Instant, spin: Duration) -> Duration {
        let elapsed = now.saturating_duration_since(self.start);
        if elapsed >= BUDGET_WINDOW {
            let allowed = self.judge(elapsed);
            *self = SpinBudget {
                allowed,
                ..SpinBudget::new(now)
            };
        } else if elapsed >= BUDGET_GRACE {
            self.allowed = self.judge(elapsed);
        }
        spin * self.allowed / 2
    }

    /// Halves of the spin the shares so far allow.
    fn judge(&self, elapsed: Duration) -> u32 {
        let window = elapsed.as_secs_f64().max(1e-9);
        let busy = elapsed.saturating_sub(self.blocked).as_secs_f64() / window;
        let work = self.work.as_secs_f64() / window;
        if busy > BUSY_SHARE {
            0
        } else if work > HALF_SPIN_WORK {
            1
        } else {
            2
        }
    }

    /// Counts time spent blocked in `ppoll`.
    fn blocked_for(&mut self, d: Duration) {
        self.blocked += d;
    }

    /// Counts time spent reading and writing packets.
    fn worked_for(&mut self, d: Duration) {
        self.work += d;
    }
}

/// Counters of one direction, as last published by its forwarder thread
/// (at most a few milliseconds old while running; final after the lab stops).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DirectionStats {
    /// What the emulated link did.
    pub link: LinkStats,
    /// Release-time error: write start − due time, per frame written.
    pub release_error: Histogram,
    /// How long each `write(2)` into the destination device took (the
    /// receiving stack processes the packet inside it).
    pub write_time: Histogram,
    /// How late the thread woke when a timed wait ran out (scheduler latency).
    pub wake_late: Histogram,
    /// Frames read from the source TUN.
    pub frames_read: u64,
    /// Of those, GSO frames (more than one wire segment).
    pub gso_frames_read: u64,
    /// Frames written to the destination TUN (cut-up GSO packets count per segment).
    pub frames_written: u64,
    /// Failed reads (other than "nothing to read").
    pub read_errors: u64,
    /// Failed writes; the frame is lost.
    pub write_errors: u64,
    /// Whether the thread got the requested real-time priority.
    pub realtime: bool,
    /// The most recent read or write error, if any.
    pub last_error: Option<String>,
}

/// State shared between a forwarder thread and the [`Lab`](crate::Lab).
#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub stop: AtomicBool,
    pub stats: Mutex<DirectionStats>,
}

/// Parameters of one forwarder thread.
pub(crate) struct Forwarder {
    pub src: Arc<Tun>,
    pub dst: Arc<Tun>,
    pub link: Link,
    pub spin: Duration,
    pub realtime: Option<i32>,
    pub epoch: Instant,
    pub shared: Arc<Shared>,
}

impl Forwarder {
    /// Runs until `shared.stop` is set.
    pub fn run(mut self) {
        // Without this, every ppoll may wake up to 50 µs late.
        let _ = sys::set_timer_slack(1);
        let mut st = DirectionStats::default();
        if let Some(p) = self.realtime {
            st.realtime = sys::set_realtime(p).is_ok();
        }
        let mut scratch = vec![0u8; MAX_SEGMENT_FRAME];
        let mut due: Vec<(Time, Packet)> = Vec::with_capacity(1024);
        let mut last_publish = Instant::now();
        let mut budget = SpinBudget::new(last_publish);
        let vnet = self.src.has_vnet_hdr();

        while !self.shared.stop.load(Ordering::Relaxed) {
            let started = Instant::now();
            let written = st.frames_written;
            // 1. Release everything that is due.
            self.release_due(&mut st, &mut due, &mut scratch);
            // 2. Read what has arrived, but not past the next release.
            let (read, failed) = self.read_arrivals(&mut st, vnet);
            if read > 0 || st.frames_written != written {
                budget.worked_for(started.elapsed());
            }
            if last_publish.elapsed() >= PUBLISH_EVERY {
                self.publish(&mut st);
                last_publish = Instant::now();
            }
            // 3. Wait for the next arrival or release.
            if read < READ_BATCH {
                self.wait(&mut st, &mut budget, failed);
            }
        }
        self.publish(&mut st);
    }

    /// The emulator's clock: time since the lab's epoch.
    fn now(&self) -> Time {
        Time::from_nanos(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// Writes every packet whose release time has come to the far side,
    /// frame by frame, recording how late each went and how long each
    /// write took.
    fn release_due(
        &mut self,
        st: &mut DirectionStats,
        due: &mut Vec<(Time, Packet)>,
        scratch: &mut Vec<u8>,
    ) {
        self.link.release_due(self.now(), |t, p| due.push((t, p)));
        for (t, p) in due.drain(..) {
            let _ = p.for_each_frame::<()>(scratch, |frame| {
                let before = self.now();
                st.release_error.record(before.saturating_since(t));
                let r = self.dst.write(frame);
                st.write_time.record(self.now().saturating_since(before));
                match r {
                    Ok(_) => st.frames_written += 1,
                    Err(e) => {
                        st.write_errors += 1;
                        st.last_error = Some(format!("write to {}: {e}", self.dst.name()));
                    }
                }
                Ok(())
            });
            self.link.recycle(p);
        }
    }

    /// Reads up to [`READ_BATCH`] frames into the link, stopping early when
    /// a release falls due; how many were read, and whether a read failed.
    fn read_arrivals(&mut self, st: &mut DirectionStats, vnet: bool) -> (usize, bool) {
        let mut read = 0;
        while read < READ_BATCH {
            let mut pkt = self.link.alloc();
            match pkt.fill_with(vnet, |b| self.src.read(b)) {
                Ok(0) => {
                    self.link.recycle(pkt);
                    break;
                }
                Ok(_) => {
                    st.frames_read += 1;
                    if pkt
                        .vnet_hdr()
                        .is_some_and(|h| h.gso_type != VnetHdr::GSO_NONE)
                    {
                        st.gso_frames_read += 1;
                    }
                    let t = self.now();
                    self.link.enqueue(t, pkt);
                    read += 1;
                    if self.link.next_release().is_some_and(|d| d <= t) {
                        break;
                    }
                }
                Err(e) => {
                    self.link.recycle(pkt);
                    if e.kind() != std::io::ErrorKind::WouldBlock
                        && e.kind() != std::io::ErrorKind::Interrupted
                    {
                        st.read_errors += 1;
                        st.last_error = Some(format!("read from {}: {e}", self.src.name()));
                        return (read, true);
                    }
                    break;
                }
            }
        }
        (read, false)
    }

    /// Waits for the next arrival or release: spins while the budget
    /// allows, then sleeps on the source (at least 1 ms after a failed read).
    fn wait(&mut self, st: &mut DirectionStats, budget: &mut SpinBudget, failed: bool) {
        let t = self.now();
        let wait = match self.link.next_release() {
            Some(d) => d.saturating_since(t).min(IDLE_WAIT),
            None => IDLE_WAIT,
        };
        let wait = if failed {
            wait.max(Duration::from_millis(1))
        } else {
            wait
        };
        let spin = budget.spin(Instant::now(), self.spin);
        if wait > spin {
            let sleep = wait - spin;
            let before = Instant::now();
            let readable = sys::wait_readable(std::os::fd::AsFd::as_fd(&*self.src), sleep);
            budget.blocked_for(before.elapsed());
            if let Ok(false) = readable {
                st.wake_late.record(self.now().saturating_since(t + sleep));
            }
        } else {
            std::hint::spin_loop();
        }
    }

    fn publish(&self, st: &mut DirectionStats) {
        st.link = *self.link.stats();
        let mut shared = self
            .shared
            .stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        shared.link = st.link;
        shared.release_error.clone_from(&st.release_error);
        shared.write_time.clone_from(&st.write_time);
        shared.wake_late.clone_from(&st.wake_late);
        shared.frames_read = st.frames_read;
        shared.gso_frames_read = st.gso_frames_read;
        shared.frames_written = st.frames_written;
        shared.read_errors = st.read_errors;
        shared.realtime = st.realtime;
        shared.write_errors = st.write_errors;
        shared.last_error.clone_from(&st.last_error);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPIN: Duration = Duration::from_micros(50);
    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_mostly_idle_thread_spins_fully() {
        let t0 = Instant::now();
        let mut b = SpinBudget::new(t0);
        b.blocked_for(40 * MS);
        b.worked_for(5 * MS);
        assert_eq!(b.spin(t0 + 50 * MS, SPIN), SPIN);
    }

    #[test]
    fn a_thread_busy_reading_and_writing_spins_half() {
        let t0 = Instant::now();
        let mut b = SpinBudget::new(t0);
        // 40 % in reads and writes, 30 % blocked: busy 70 %.
        b.worked_for(20 * MS);
        b.blocked_for(15 * MS);
        assert_eq!(b.spin(t0 + 50 * MS, SPIN), SPIN / 2);
    }

    #[test]
    fn past_the_busy_share_it_does_not_spin_and_that_carries_into_the_next_window() {
        let t0 = Instant::now();
        let mut b = SpinBudget::new(t0);
        // Blocked 10 %: busy 90 % > 80 %.
        b.worked_for(20 * MS);
        b.blocked_for(5 * MS);
        assert_eq!(b.spin(t0 + 50 * MS, SPIN), Duration::ZERO);
        // A new window starts with the old one's verdict (no free grace period)…
        b.blocked_for(5 * MS);
        assert_eq!(b.spin(t0 + 100 * MS, SPIN), Duration::ZERO);
        assert_eq!(b.spin(t0 + 105 * MS, SPIN), Duration::ZERO);
        // …and is judged on its own once past the grace period.
        b.blocked_for(15 * MS);
        assert_eq!(b.spin(t0 + 120 * MS, SPIN), SPIN);
    }

    #[test]
    fn a_long_sleep_ends_the_window_and_more_blocked_than_elapsed_is_idle() {
        let t0 = Instant::now();
        let mut b = SpinBudget::new(t0);
        // Busy the whole first window, then asked again only 1 s later: the
        // busy window's verdict carries over, the next judgement is fresh.
        b.worked_for(100 * MS);
        assert_eq!(b.spin(t0 + Duration::from_secs(1), SPIN), Duration::ZERO);
        let t1 = t0 + Duration::from_secs(1);
        // A ppoll counted past the window's elapsed time (it rolled over
        // during the sleep) reads as fully idle, not as an underflow.
        b.blocked_for(50 * MS);
        assert_eq!(b.spin(t1 + 20 * MS, SPIN), SPIN);
    }

    #[test]
    fn the_first_window_spins_until_it_can_be_judged() {
        let t0 = Instant::now();
        let mut b = SpinBudget::new(t0);
        // Busy the whole time so far: too early to judge.
        b.worked_for(5 * MS);
        assert_eq!(b.spin(t0 + 5 * MS, SPIN), SPIN);
        // At 10 ms: 50 % in reads and writes, 40 % blocked.
        b.blocked_for(4 * MS);
        assert_eq!(b.spin(t0 + 10 * MS, SPIN), SPIN / 2);
    }
}
