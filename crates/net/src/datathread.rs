//! What the data threads of a test share with each other and with the
//! session that drives them, whatever they run: TCP and UDP throughput
//! ([`crate::datapath`]), request/response ([`crate::rr`]) or the pacer
//! ([`crate::pacing`]).
//!
//! Owns the stop flags and byte budget ([`StopAndBudget`]) and what a sender
//! does once the budget is spent ([`AtBudget`]), the counters a
//! stream's thread publishes ([`Counters`], with the request/response
//! latency histograms in [`RrCounters`]), the clock origin every thread
//! stamps against ([`epoch`]), the longest a blocking call waits before a
//! thread looks at its stop flag again ([`POLL_SLICE`]), which socket errors
//! only mean "try again" (`transient`) and how a data thread is started
//! (`spawn_stream`). It depends on none of the modules that use it.

use std::io;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use plumb_tcpinfo::{tcp_info, TcpInfo};

use crate::host;

/// How long a blocking socket call may wait before the loop looks at
/// [`StopAndBudget::stop`] again.
pub const POLL_SLICE: Duration = Duration::from_millis(100);

/// What one stream has done so far; written by its thread, read by the reporter.
#[derive(Debug, Default)]
pub struct Counters {
    /// Bytes sent (sender) or received (receiver).
    pub bytes: AtomicU64,
    /// UDP: datagrams sent (sender) or highest sequence number seen (receiver).
    pub packets: AtomicU64,
    /// UDP receiver: datagrams lost, as iperf3 counts them.
    pub lost: AtomicI64,
    /// UDP receiver: datagrams out of order.
    pub out_of_order: AtomicI64,
    /// UDP receiver: exact duplicates.
    pub duplicates: AtomicU64,
    /// UDP receiver: RFC 3550 jitter in seconds, as `f64` bits.
    pub jitter_bits: AtomicU64,
    /// UDP receiver: reads the kernel cut short (`MSG_TRUNC`).
    pub truncated_reads: AtomicU64,
    /// UDP receiver: packets the kernel dropped at the socket, its buffer
    /// full, while the test ran (`u64::MAX` = unknown).
    pub socket_drops: AtomicU64,
    /// UDP sender: datagrams per send message (1 = no GSO; 0 = not a UDP sender).
    pub udp_gso_segs: AtomicU64,
    /// UDP receiver: 0 = not a UDP receiver, 1 = GRO off, 2 = GRO on.
    pub udp_gro: std::sync::atomic::AtomicU8,
    /// UDP receiver: a [`crate::datapath::JitterResolution`] code (0 = not a UDP receiver).
    pub udp_jitter_res: std::sync::atomic::AtomicU8,
    /// Receiver: when the last byte arrived after the stop, as nanoseconds
    /// since [`epoch`] (0 = nothing arrived after the stop).
    pub last_rx_ns: AtomicU64,
    /// CPU time the thread used, µs (set when it ends).
    pub thread_cpu_us: AtomicU64,
    /// Time the thread waited for a CPU while runnable, µs (set when it ends).
    pub thread_wait_us: AtomicU64,
    /// When the thread finished, as nanoseconds since [`epoch`] (0 = running):
    /// a sender that spent a byte budget stopped then, not when the driver
    /// noticed.
    pub ended_ns: AtomicU64,
    /// The thread has finished (EOF, stop, budget spent or error).
    pub done: AtomicBool,
    /// Why the thread ended early, if it did.
    pub error: Mutex<Option<String>>,
    /// TCP_INFO samples the sending thread takes when asked.
    pub info: InfoMailbox,
    /// Request/response transactions and their latency.
    pub rr: RrCounters,
}

/// A `TCP_INFO` sample taken by a TCP sender's own thread on request.
///
/// `getsockopt(TCP_INFO)` takes the socket lock, which a busy sender holds
/// for nearly all of every `write`: from the reporting thread the call
/// waited up to 35 ms per interval on loopback, woken and put back to sleep
/// hundreds of times, each wake-up an IPI and a reschedule on the sender's
/// CPU. The sender takes the sample between two writes instead, at the cost
/// of one relaxed load per block.
#[derive(Debug, Default)]
pub struct InfoMailbox {
    wanted: AtomicBool,
    answered: AtomicU64,
    sample: Mutex<Option<TcpInfo>>,
}

impl InfoMailbox {
    /// Asks for a sample; returns the ticket to [`InfoMailbox::collect`] it with.
    pub fn request(&self) -> u64 {
        let ticket = self.answered.load(Acquire);
        self.wanted.store(true, Release);
        ticket
    }

    /// The sample answering `ticket`, waiting for it until `deadline`; `None`
    /// when the thread did not answer in time (it is blocked in a call,
    /// which releases the socket lock, so the caller can then take the
    /// sample itself without waiting).
    pub fn collect(&self, ticket: u64, deadline: Instant) -> Option<TcpInfo> {
        loop {
            if self.answered.load(Acquire) != ticket {
                return *self.sample.lock().unwrap_or_else(|p| p.into_inner());
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(INFO_POLL);
        }
    }

    /// Called by the sending thread between blocks.
    #[inline]
    pub(crate) fn answer_if_asked(&self, fd: BorrowedFd<'_>) {
        if self.wanted.load(Relaxed) {
            self.wanted.store(false, Relaxed);
            let info = tcp_info(fd).ok();
            *self.sample.lock().unwrap_or_else(|p| p.into_inner()) = info;
            self.answered.fetch_add(1, Release);
        }
    }
}

/// How often a reporter looks for a requested [`InfoMailbox`] sample.
const INFO_POLL: Duration = Duration::from_micros(50);

impl Counters {
    /// Jitter in seconds.
    pub fn jitter(&self) -> f64 {
        f64::from_bits(self.jitter_bits.load(Relaxed))
    }
    /// When the thread finished, if it has.
    pub fn ended_at(&self) -> Option<Instant> {
        let ns = self.ended_ns.load(Acquire);
        (ns > 0).then(|| epoch() + Duration::from_nanos(ns))
    }
    /// Marks the thread finished (one clock read, at the end only).
    pub(crate) fn end(&self) {
        let ns = epoch().elapsed().as_nanos().max(1);
        self.ended_ns
            .store(u64::try_from(ns).unwrap_or(u64::MAX), Release);
        self.done.store(true, Release);
    }
    pub(crate) fn fail(&self, e: impl std::fmt::Display) {
        if let Ok(mut slot) = self.error.lock() {
            slot.get_or_insert_with(|| e.to_string());
        }
    }
    /// The first error the thread reported, if any.
    pub(crate) fn failure(&self) -> Option<String> {
        self.error.lock().ok().and_then(|e| e.clone())
    }
}

/// The process-wide instant that [`Counters::last_rx_ns`] counts from.
pub fn epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// What this end's senders do once a `-n`/`-k` byte budget is spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtBudget {
    /// Stop sending: this end ends the test when its budget is sent (a
    /// client), and every sender stops on the budget's last byte.
    Stop,
    /// UDP senders keep sending, and counting what they send, until the
    /// test is stopped; TCP senders stop on the budget's last byte. A
    /// server's: the client ends a reverse `-n`/`-k` test when it has
    /// *received* the budget, so datagrams lost on the way must be made up
    /// by more, or it waits for ever (iperf3's server sends until TEST_END
    /// too). TCP loses nothing, so its receiver gets the budget exactly.
    UdpUntilStopped,
}

/// The stop flags and the byte budget every data thread of one test polls.
#[derive(Debug)]
pub struct StopAndBudget {
    /// Set when the test is over for the senders (time up, TEST_END, error).
    pub stop: AtomicBool,
    /// Set when receivers should stop waiting for more data (after a drain).
    pub stop_receivers: AtomicBool,
    /// Bytes left to send across all streams (`-n`/`-k`); `None` = unbounded.
    pub budget: Option<AtomicI64>,
    /// Set when the byte budget has been fully sent (tells the client to end).
    pub budget_spent: AtomicBool,
    /// What senders do once the budget is spent.
    pub at_budget: AtBudget,
}

impl StopAndBudget {
    /// StopAndBudget state for a test with an optional byte budget, whose
    /// senders do `at_budget` once it is spent.
    pub fn new(budget: Option<u64>, at_budget: AtBudget) -> StopAndBudget {
        StopAndBudget {
            stop: AtomicBool::new(false),
            stop_receivers: AtomicBool::new(false),
            budget: budget.map(|b| AtomicI64::new(i64::try_from(b).unwrap_or(i64::MAX))),
            budget_spent: AtomicBool::new(false),
            at_budget,
        }
    }

    /// Whether a UDP sender goes on past a spent budget.
    pub(crate) fn udp_past_budget(&self) -> bool {
        self.budget.is_some() && self.at_budget == AtBudget::UdpUntilStopped
    }

    /// Claims up to `want` bytes of the budget; 0 means it is spent.
    pub(crate) fn claim(&self, want: usize) -> usize {
        let Some(b) = &self.budget else { return want };
        let want = want as i64;
        let mut left = b.load(Relaxed);
        loop {
            if left <= 0 {
                self.budget_spent.store(true, Relaxed);
                return 0;
            }
            let take = want.min(left);
            match b.compare_exchange_weak(left, left - take, Relaxed, Relaxed) {
                Ok(_) => return take as usize,
                Err(now) => left = now,
            }
        }
    }

    /// Returns bytes claimed but not written.
    pub(crate) fn unclaim(&self, n: usize) {
        if let Some(b) = &self.budget {
            b.fetch_add(n as i64, Relaxed);
        }
    }
}

/// Whether a socket call failed only for now (timeout, no data yet, a
/// signal): the loop goes round again rather than ending the stream.
pub(crate) fn transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Largest latency a histogram holds: an hour, in ns.
pub(crate) const MAX_NS: u64 = 3_600_000_000_000;

/// An empty latency histogram: 1 ns to [`MAX_NS`], three significant digits.
pub(crate) fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, 3).expect("bounds 1 ns..1 h at 3 digits are valid")
}

/// `d` in ns, clamped into a latency histogram's bounds.
fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos())
        .unwrap_or(MAX_NS)
        .clamp(1, MAX_NS)
}

/// An interval's and the whole test's histogram of one quantity.
#[derive(Debug)]
struct HistogramPair {
    interval: Histogram<u64>,
    total: Histogram<u64>,
}

/// One latency quantity of a stream (round trip, handshake, …): recorded
/// by its thread, taken per interval and summed at the end by the reporter.
#[derive(Debug, Default)]
pub(crate) struct LatencySlot(Mutex<Option<HistogramPair>>);

impl LatencySlot {
    /// Records one latency into the interval's and the total histogram.
    pub(crate) fn record(&self, d: Duration) {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let pair = g.get_or_insert_with(|| HistogramPair {
            interval: latency_histogram(),
            total: latency_histogram(),
        });
        let v = ns(d);
        // Values are clamped into the bounds, so recording cannot fail.
        let _ = pair.interval.record(v);
        let _ = pair.total.record(v);
    }

    /// Adds this interval's histogram to `into` and starts the next one empty.
    pub(crate) fn take_interval(&self, into: &mut Histogram<u64>) {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = g.as_mut() {
            let _ = into.add(&p.interval);
            p.interval.reset();
        }
    }

    /// Adds the whole test's histogram to `into`.
    pub(crate) fn add_total(&self, into: &mut Histogram<u64>) {
        let g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = g.as_ref() {
            let _ = into.add(&p.total);
        }
    }
}

/// What one request/response stream has done; part of [`Counters`].
#[derive(Debug, Default)]
pub struct RrCounters {
    /// Transactions completed (client) or answered (server).
    pub transactions: AtomicU64,
    pub(crate) interval_transactions: AtomicU64,
    /// UDP transactions never answered.
    pub lost: AtomicU64,
    pub(crate) interval_lost: AtomicU64,
    /// Round trip of each transaction (CRR: connect to last response byte).
    pub(crate) rtt: LatencySlot,
    /// CRR: the TCP handshake.
    pub(crate) connect: LatencySlot,
    /// CRR: request sent to response read.
    pub(crate) reqresp: LatencySlot,
}

impl RrCounters {
    pub(crate) fn done(&self, c: &Counters, bytes: u64) {
        self.transactions.fetch_add(1, Relaxed);
        self.interval_transactions.fetch_add(1, Relaxed);
        c.bytes.fetch_add(bytes, Relaxed);
    }

    pub(crate) fn lose(&self) {
        self.lost.fetch_add(1, Relaxed);
        self.interval_lost.fetch_add(1, Relaxed);
    }
}

/// Starts a stream's data thread, named `name`, running `body`: in the
/// batch scheduling class when `batch`, and with the CPU and run-queue wait
/// it used stored in `c` when it ends (read once before and once after the
/// loop: evidence of a starved end, at no cost per block).
pub(crate) fn spawn_stream(
    name: String,
    batch: bool,
    c: Arc<Counters>,
    body: impl FnOnce() + Send + 'static,
) -> io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(name).spawn(move || {
        if batch {
            let _ = host::batch_current_thread();
        }
        let sched0 = host::new_thread_schedstat();
        body();
        if let (Some((c0, w0)), Some((c1, w1))) = (sched0, host::thread_schedstat()) {
            c.thread_cpu_us.store(c1.saturating_sub(c0) / 1000, Relaxed);
            c.thread_wait_us
                .store(w1.saturating_sub(w0) / 1000, Relaxed);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_claimed_to_zero_and_given_back() {
        let b = StopAndBudget::new(Some(10), AtBudget::Stop);
        assert_eq!(b.claim(4), 4);
        assert_eq!(b.claim(8), 6);
        assert!(!b.budget_spent.load(Relaxed));
        assert_eq!(b.claim(1), 0);
        assert!(b.budget_spent.load(Relaxed));
        b.unclaim(3);
        assert_eq!(b.claim(5), 3);
        // Unbounded: every claim is granted whole.
        assert_eq!(
            StopAndBudget::new(None, AtBudget::Stop).claim(usize::MAX / 2),
            usize::MAX / 2
        );
    }

    #[test]
    fn a_latency_slot_hands_over_intervals_and_keeps_the_total() {
        let s = LatencySlot::default();
        let mut h = latency_histogram();
        s.take_interval(&mut h);
        assert!(h.is_empty());
        s.record(Duration::ZERO);
        s.record(Duration::from_secs(2 * 3600));
        s.take_interval(&mut h);
        // Clamped into the bounds: 1 ns and an hour.
        assert_eq!(h.len(), 2);
        assert_eq!(h.min(), 1);
        assert!(h.equivalent(h.max(), MAX_NS));
        let mut next = latency_histogram();
        s.take_interval(&mut next);
        assert!(next.is_empty());
        let mut total = latency_histogram();
        s.add_total(&mut total);
        assert_eq!(total.len(), 2);
    }

    #[test]
    fn only_waiting_errors_are_transient() {
        for k in [
            io::ErrorKind::WouldBlock,
            io::ErrorKind::TimedOut,
            io::ErrorKind::Interrupted,
        ] {
            assert!(transient(&io::Error::from(k)));
        }
        assert!(!transient(&io::Error::from(io::ErrorKind::ConnectionReset)));
    }
}
