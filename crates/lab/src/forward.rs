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
        let vnet = self.src.has_vnet_hdr();
        let epoch = self.epoch;
        let now =
            move || Time::from_nanos(u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX));

        while !self.shared.stop.load(Ordering::Relaxed) {
            // 1. Release everything that is due.
            self.link.release_due(now(), |t, p| due.push((t, p)));
            for (t, p) in due.drain(..) {
                let dst = &self.dst;
                let _ = p.for_each_frame::<()>(&mut scratch, |frame| {
                    let before = now();
                    st.release_error.record(before.saturating_since(t));
                    let r = dst.write(frame);
                    st.write_time.record(now().saturating_since(before));
                    match r {
                        Ok(_) => st.frames_written += 1,
                        Err(e) => {
                            st.write_errors += 1;
                            st.last_error = Some(format!("write to {}: {e}", dst.name()));
                        }
                    }
                    Ok(())
                });
                self.link.recycle(p);
            }

            // 2. Read what has arrived, but not past the next release.
            let mut read = 0;
            let mut failed = false;
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
                        let t = now();
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
                            failed = true;
                        }
                        break;
                    }
                }
            }

            if last_publish.elapsed() >= PUBLISH_EVERY {
                self.publish(&mut st);
                last_publish = Instant::now();
            }

            // 3. Wait for the next arrival or release.
            if read == READ_BATCH {
                continue;
            }
            let t = now();
            let wait = match self.link.next_release() {
                Some(d) => d.saturating_since(t).min(IDLE_WAIT),
                None => IDLE_WAIT,
            };
            let wait = if failed {
                wait.max(Duration::from_millis(1))
            } else {
                wait
            };
            if wait > self.spin {
                let sleep = wait - self.spin;
                let readable = sys::wait_readable(std::os::fd::AsFd::as_fd(&*self.src), sleep);
                if let Ok(false) = readable {
                    st.wake_late.record(now().saturating_since(t + sleep));
                }
            } else {
                std::hint::spin_loop();
            }
        }
        self.publish(&mut st);
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
