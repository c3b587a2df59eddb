//! The per-stream data threads: the loops that move bytes, and the counters
//! they publish.
//!
//! One thread per stream, not pinned: on the 2-core loopback bench, pinning
//! (sender and receiver on one core, or on different ones, or streams round
//! robin) won under cubic and lost under bbr, so the scheduler places them.
//! Inside a loop there is no allocation, no lock and no logging: a thread
//! makes its system call and adds to relaxed atomic counters that the
//! reporter samples once per interval. TCP loops read the clock once per 64
//! reads (the receiver's low-water tuner) and while draining. Threads notice
//! the end of a test through [`Shared::stop`], checked once per block;
//! blocking calls carry a 100 ms socket timeout so that a stalled peer cannot
//! pin a thread past the end.
//!
//! TCP: `write` or, with `-Z`, `splice` from a memfd; `read` or `MSG_TRUNC`
//! with `SO_RCVLOWAT` kept at about a millisecond of data.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use plumb_proto::udp::{SeqWidth, UdpHeader, UdpReceiver};

use crate::pacing::{Pacer, Schedule, UDP_QUANTUM};
use crate::stream::{read_some, recv_trunc, write_some};
use crate::sys::clock_monotonic;
use crate::zerocopy::MemfdSource;

/// How long a blocking socket call may wait before the loop looks at
/// [`Shared::stop`] again.
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
}

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
    fn end(&self) {
        let ns = epoch().elapsed().as_nanos().max(1);
        self.ended_ns
            .store(u64::try_from(ns).unwrap_or(u64::MAX), Release);
        self.done.store(true, Release);
    }
    fn fail(&self, e: impl std::fmt::Display) {
        if let Ok(mut slot) = self.error.lock() {
            slot.get_or_insert_with(|| e.to_string());
        }
    }
}

/// The process-wide instant that [`Counters::last_rx_ns`] counts from.
pub fn epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// State every stream of one test shares.
#[derive(Debug)]
pub struct Shared {
    /// Set when the test is over for the senders (time up, TEST_END, error).
    pub stop: AtomicBool,
    /// Set when receivers should stop waiting for more data (after a drain).
    pub stop_receivers: AtomicBool,
    /// Bytes left to send across all streams (`-n`/`-k`); `None` = unbounded.
    pub budget: Option<AtomicI64>,
    /// Set when the byte budget has been fully sent (tells the client to end).
    pub budget_spent: AtomicBool,
}

impl Shared {
    /// Shared state for a test with an optional byte budget.
    pub fn new(budget: Option<u64>) -> Shared {
        Shared {
            stop: AtomicBool::new(false),
            stop_receivers: AtomicBool::new(false),
            budget: budget.map(|b| AtomicI64::new(i64::try_from(b).unwrap_or(i64::MAX))),
            budget_spent: AtomicBool::new(false),
        }
    }

    /// Claims up to `want` bytes of the budget; 0 means it is spent.
    fn claim(&self, want: usize) -> usize {
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
    fn unclaim(&self, n: usize) {
        if let Some(b) = &self.budget {
            b.fetch_add(n as i64, Relaxed);
        }
    }
}

/// The bytes a sender repeats: random by default, `0123456789…` with
/// `--repeating-payload` (as iperf3).
pub fn payload(len: usize, repeating: bool) -> Vec<u8> {
    if repeating {
        return (0..len).map(|i| b'0' + (i % 10) as u8).collect();
    }
    // Random filler so that compressing links and dedup can't flatter the
    // result; xorshift seeded from the kernel is plenty for that.
    let mut seed = [0u8; 8];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| io::Read::read_exact(&mut f, &mut seed))
        .is_err()
    {
        seed = (Instant::now().elapsed().as_nanos() as u64 | 1).to_le_bytes();
    }
    let mut x = u64::from_le_bytes(seed) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

fn transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// How a TCP sender puts bytes on the wire.
pub enum TcpSource {
    /// `write(2)` from a buffer.
    Copy(Vec<u8>),
    /// `sendfile(2)` from a memfd holding the payload.
    SendFile(MemfdSource),
    /// `splice(2)` from a memfd through a pipe (`-Z`): the pages go to the
    /// socket by reference, so the sender never copies the payload.
    Splice(MemfdSource),
}

impl TcpSource {
    /// The zero-copy source `-Z` uses: splice from a memfd. On loopback it
    /// measured ahead of sendfile and far ahead of `MSG_ZEROCOPY`, whose
    /// completions all come back "copied" there (bench/run, `-Z`).
    pub fn zero_copy(payload: &[u8]) -> io::Result<TcpSource> {
        MemfdSource::new(payload).map(TcpSource::Splice)
    }

    fn block_len(&self) -> usize {
        match self {
            TcpSource::Copy(b) => b.len(),
            TcpSource::SendFile(m) | TcpSource::Splice(m) => m.block_len(),
        }
    }
}

/// A pacing schedule for a TCP sender of `block`-byte writes at `rate_bps`.
pub fn tcp_schedule(rate_bps: u64, block: usize) -> Option<Schedule> {
    Schedule::new(rate_bps, 1, block as u64)
}

/// Sends until stopped or the budget is spent; then shuts down the write side
/// so the receiver sees the exact end of the stream. `pacer` grants bytes,
/// a block at a time ([`tcp_schedule`]).
pub fn tcp_send(
    sock: &std::net::TcpStream,
    mut src: TcpSource,
    shared: &Shared,
    c: &Counters,
    mut pacer: Option<Pacer>,
) {
    let _ = sock.set_write_timeout(Some(POLL_SLICE));
    let fd = sock.as_fd();
    let block = src.block_len();
    let mut off = 0usize;
    while !shared.stop.load(Relaxed) {
        let want = shared.claim(block - off);
        if want == 0 {
            break;
        }
        let granted = match pacer.as_mut() {
            Some(p) => match p.wait(&shared.stop) {
                Some(g) => g as usize,
                None => {
                    shared.unclaim(want);
                    break;
                }
            },
            None => 0,
        };
        let r = match &mut src {
            TcpSource::Copy(buf) => write_some(fd, &buf[off..off + want]),
            TcpSource::SendFile(m) => m.sendfile(fd, want),
            TcpSource::Splice(m) => m.splice(fd, want),
        };
        let sent = match r {
            Ok(n) => {
                c.bytes.fetch_add(n as u64, Relaxed);
                shared.unclaim(want - n);
                off = (off + n) % block;
                n
            }
            Err(e) if transient(&e) => {
                shared.unclaim(want);
                0
            }
            Err(e) => {
                shared.unclaim(want);
                c.fail(format!("send: {e}"));
                break;
            }
        };
        if let Some(p) = pacer.as_mut() {
            p.refund(granted.saturating_sub(sent) as u64);
        }
    }
    let _ = sock.shutdown(std::net::Shutdown::Write);
    c.end();
}

/// How long a receiver keeps reading once told to stop: until the peer's FIN,
/// or — when the peer will not close first, as a stock iperf3 client does not —
/// until the socket has been quiet for one [`POLL_SLICE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drain {
    /// Read to EOF (bounded by `limit` after the stop).
    UntilEof {
        /// Give up this long after the stop.
        limit: Duration,
    },
    /// Stop at the first quiet slice after the stop.
    UntilQuiet,
}

/// Receives until EOF or until stopped and drained; `skip_copy` discards with
/// `MSG_TRUNC` instead of copying (the count stays exact).
pub fn tcp_recv(
    sock: &std::net::TcpStream,
    len: usize,
    skip_copy: bool,
    shared: &Shared,
    c: &Counters,
    drain: Drain,
    clamp: Option<u32>,
) {
    let _ = sock.set_read_timeout(Some(POLL_SLICE));
    let fd = sock.as_fd();
    let mut buf = if skip_copy {
        Vec::new()
    } else {
        vec![0u8; len]
    };
    let mut stopped_at: Option<Instant> = None;
    // A clamped window (--rwin) may never let the queue reach a low-water
    // mark, so the tuner stays off then.
    let mut lowat = clamp.is_none().then(|| LowWater::new(len / 2));
    loop {
        let r = if skip_copy {
            recv_trunc(fd, len)
        } else {
            read_some(fd, &mut buf)
        };
        match r {
            Ok(0) => break,
            Ok(n) => {
                c.bytes.fetch_add(n as u64, Relaxed);
                let stopping = shared.stop_receivers.load(Relaxed);
                // Bytes drained after the stop still count, so the receiver's
                // duration must run to the last of them. Only the drain reads
                // the clock, never the steady state.
                if stopping {
                    c.last_rx_ns
                        .store(epoch().elapsed().as_nanos() as u64, Relaxed);
                }
                if let Some(t) = lowat.as_mut() {
                    t.after_read(fd, n, stopping);
                }
                // Linux 6.x raises TCP_WINDOW_CLAMP when data starts to flow and
                // as the receive buffer is tuned; --rwin must hold all the time, so
                // look after every read. A clamped window keeps reads few and
                // small, so one getsockopt per read costs nothing measurable.
                if let Some(want) = clamp {
                    keep_clamp(fd, want);
                }
            }
            Err(e) if transient(&e) => {
                if let Some(t) = lowat.as_mut() {
                    t.idle(fd);
                }
                if shared.stop_receivers.load(Relaxed) {
                    match drain {
                        Drain::UntilQuiet => break,
                        Drain::UntilEof { limit } => {
                            let t = *stopped_at.get_or_insert_with(Instant::now);
                            if t.elapsed() > limit {
                                break;
                            }
                        }
                    }
                }
            }
            Err(e) => {
                // A reset after the test ended is the peer closing, not a failure.
                if !shared.stop_receivers.load(Relaxed) {
                    c.fail(format!("receive: {e}"));
                }
                break;
            }
        }
    }
    c.end();
}

/// How often (in reads) a TCP receiver re-estimates its low-water mark.
pub const LOWAT_CHECK_READS: u32 = 64;
/// The low-water mark is what this much time brings at the current rate.
pub const LOWAT_WINDOW: Duration = Duration::from_millis(1);
/// Below this the saving is not worth the delay; the mark is off.
pub const LOWAT_MIN: usize = 16 * 1024;

/// The `SO_RCVLOWAT` for data arriving at `bytes` per `elapsed`: what
/// [`LOWAT_WINDOW`] brings, rounded down to a power of two and capped at
/// `cap`; 0 (off) when that is under [`LOWAT_MIN`].
pub fn lowat_for(bytes: u64, elapsed: Duration, cap: usize) -> usize {
    let per_window = u128::from(bytes) * LOWAT_WINDOW.as_nanos() / elapsed.as_nanos().max(1);
    let w = per_window.min(cap as u128) as usize;
    if w < LOWAT_MIN {
        0
    } else {
        1 << (usize::BITS - 1 - w.leading_zeros())
    }
}

/// Keeps a TCP receiver's `SO_RCVLOWAT` at about a millisecond of data.
///
/// Without it a fast receiver is woken for nearly every segment batch the
/// sender's softirq queues, and each wake-up costs both ends (on loopback
/// the sender's CPU runs `sock_def_readable` and the scheduler). With it the
/// kernel wakes the reader once per mark's worth; slow streams keep the mark
/// off so that interval counts do not lag. The clock is read once per
/// [`LOWAT_CHECK_READS`] reads, and after a short read (the mark was not met:
/// data slowed down, a timeout, the end).
#[derive(Debug)]
struct LowWater {
    cap: usize,
    current: usize,
    reads: u32,
    bytes: u64,
    since: Instant,
    /// The kernel refused the option once; stop trying.
    broken: bool,
}

impl LowWater {
    fn new(cap: usize) -> LowWater {
        LowWater {
            cap,
            current: 0,
            reads: 0,
            bytes: 0,
            since: Instant::now(),
            broken: false,
        }
    }

    fn after_read(&mut self, fd: BorrowedFd<'_>, n: usize, stopping: bool) {
        self.reads += 1;
        self.bytes += n as u64;
        if stopping {
            // Draining: every byte should come out now, however few.
            self.set(fd, 0);
            return;
        }
        if self.reads >= LOWAT_CHECK_READS || n < self.current {
            let now = Instant::now();
            let want = lowat_for(self.bytes, now - self.since, self.cap);
            self.set(fd, want);
            self.reads = 0;
            self.bytes = 0;
            self.since = now;
        }
    }

    /// A read timed out: whatever the rate was, it is not now.
    fn idle(&mut self, fd: BorrowedFd<'_>) {
        self.set(fd, 0);
        self.reads = 0;
        self.bytes = 0;
        self.since = Instant::now();
    }

    fn set(&mut self, fd: BorrowedFd<'_>, want: usize) {
        if want == self.current || self.broken {
            return;
        }
        match crate::sockopt::set_recv_lowat(fd, want as u32) {
            Ok(()) => self.current = want,
            Err(_) => self.broken = true,
        }
    }
}

/// Puts the window clamp back to `want` if the kernel has raised it.
fn keep_clamp(fd: BorrowedFd<'_>, want: u32) {
    if crate::sockopt::window_clamp(fd).is_ok_and(|now| now > want) {
        let _ = crate::sockopt::set_window_clamp(fd, want);
    }
}

/// Datagrams a UDP sender hands the kernel per pacing step at most.
const UDP_BURST: usize = 32;

/// A pacing schedule for a UDP sender of `len`-byte datagrams at `rate_bps`.
pub fn udp_schedule(rate_bps: u64, len: usize) -> Option<Schedule> {
    Schedule::for_datagrams(rate_bps, len, UDP_QUANTUM, UDP_BURST)
}

/// Sends `len`-byte datagrams with iperf3's header (monotonic timestamp,
/// sequence from 1) as fast as possible or as `pacer` grants.
pub fn udp_send(
    sock: &std::net::UdpSocket,
    len: usize,
    seq64: bool,
    repeating: bool,
    shared: &Shared,
    c: &Counters,
    mut pacer: Option<Pacer>,
) {
    let _ = sock.set_write_timeout(Some(POLL_SLICE));
    let fd = sock.as_fd();
    let mut buf = payload(len, repeating);
    let mut seq: u64 = 0;
    'outer: while !shared.stop.load(Relaxed) {
        let burst = match pacer.as_mut() {
            Some(p) => match p.wait(&shared.stop) {
                Some(g) => g as usize,
                None => break,
            },
            None => UDP_BURST,
        };
        // One clock read per burst: the stamps of a burst leave within microseconds.
        let (sec, usec) = clock_monotonic();
        let mut sent = 0;
        for _ in 0..burst {
            if shared.claim(len) == 0 {
                break 'outer;
            }
            seq += 1;
            if (UdpHeader { sec, usec, seq })
                .encode(SeqWidth::from_counters_64bit(seq64), &mut buf)
                .is_err()
            {
                c.fail("datagram too short for the header");
                break 'outer;
            }
            match send_dgram(fd, &buf) {
                Ok(n) => {
                    c.bytes.fetch_add(n as u64, Relaxed);
                    c.packets.store(seq, Relaxed);
                    sent += 1;
                }
                Err(e) if transient(&e) || e.raw_os_error() == Some(libc::ENOBUFS) => {
                    // Not sent: reuse the sequence number, as nothing left.
                    seq -= 1;
                    shared.unclaim(len);
                    break;
                }
                Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {
                    // The receiver's port closed (test ended there); not our error.
                    break 'outer;
                }
                Err(e) => {
                    c.fail(format!("send: {e}"));
                    break 'outer;
                }
            }
        }
        if let Some(p) = pacer.as_mut() {
            p.refund((burst - sent) as u64);
        }
    }
    c.end();
}

fn send_dgram(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    write_some(fd, buf)
}

/// Receives datagrams and keeps iperf3's loss, out-of-order and jitter
/// counts (plus exact duplicates) until stopped.
pub fn udp_recv(
    sock: &std::net::UdpSocket,
    len: usize,
    seq64: bool,
    shared: &Shared,
    c: &Counters,
) {
    let _ = sock.set_read_timeout(Some(POLL_SLICE));
    let fd = sock.as_fd();
    let mut buf = vec![0u8; len.max(64) + 64];
    let mut stats = UdpReceiver::new();
    let width = SeqWidth::from_counters_64bit(seq64);
    let epoch = Instant::now();
    let (esec, eusec) = clock_monotonic();
    let epoch_mono = Duration::new(u64::from(esec), eusec * 1000);
    let mut stopped_at: Option<Instant> = None;
    loop {
        match read_some(fd, &mut buf) {
            Ok(n) => {
                let arrival = epoch_mono + epoch.elapsed();
                if let Ok(h) = UdpHeader::decode(&buf[..n], width) {
                    stats.record_header(&h, arrival);
                    let st = stats.stats();
                    c.bytes.fetch_add(n as u64, Relaxed);
                    c.packets.store(st.max_seq, Relaxed);
                    c.lost.store(st.lost as i64, Relaxed);
                    c.out_of_order.store(st.out_of_order as i64, Relaxed);
                    c.duplicates.store(st.duplicates, Relaxed);
                    c.jitter_bits.store(st.jitter.to_bits(), Relaxed);
                }
            }
            Err(e) if transient(&e) || e.raw_os_error() == Some(libc::ECONNREFUSED) => {
                if shared.stop_receivers.load(Relaxed) {
                    break;
                }
            }
            Err(e) => {
                if !shared.stop_receivers.load(Relaxed) {
                    c.fail(format!("receive: {e}"));
                }
                break;
            }
        }
        // A peer that keeps sending after the end cannot hold the thread.
        if shared.stop_receivers.load(Relaxed)
            && stopped_at.get_or_insert_with(Instant::now).elapsed() > Duration::from_secs(1)
        {
            break;
        }
    }
    c.end();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::tcp_pair;
    use std::net::TcpStream;
    use std::os::fd::OwnedFd;

    #[test]
    fn lowat_is_a_millisecond_of_data_within_bounds() {
        let s = Duration::from_secs(1);
        // 1 GB/s: 1 MB per ms, capped.
        assert_eq!(lowat_for(1_000_000_000, s, 64 * 1024), 64 * 1024);
        // 40 MB/s: 40 kB per ms -> 32 KiB.
        assert_eq!(lowat_for(40_000_000, s, 64 * 1024), 32 * 1024);
        // 10 MB/s: 10 kB per ms, under the floor: off.
        assert_eq!(lowat_for(10_000_000, s, 64 * 1024), 0);
        assert_eq!(lowat_for(5, s, 64 * 1024), 0);
        assert_eq!(
            lowat_for(u64::MAX, Duration::from_nanos(1), 1 << 20),
            1 << 20
        );
    }

    fn spawn_tcp_writer(fd: OwnedFd, n: usize) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let s = TcpStream::from(fd);
            let block = vec![7u8; 128 * 1024];
            let mut left = n;
            while left > 0 {
                let k = write_some(s.as_fd(), &block[..left.min(block.len())]).expect("write");
                left -= k;
            }
        })
    }

    /// The receiver with its low-water tuner (and with MSG_TRUNC) still
    /// counts every byte to EOF.
    #[test]
    fn tcp_receiver_counts_exactly_with_lowat() {
        for skip in [false, true] {
            const N: usize = 50_000_017;
            let (client, server) = tcp_pair();
            let w = spawn_tcp_writer(client, N);
            let shared = Shared::new(None);
            let c = Counters::default();
            let server = TcpStream::from(server);
            tcp_recv(
                &server,
                128 * 1024,
                skip,
                &shared,
                &c,
                Drain::UntilEof {
                    limit: Duration::from_secs(5),
                },
                None,
            );
            w.join().expect("writer");
            assert_eq!(c.bytes.load(Relaxed), N as u64, "skip_copy={skip}");
        }
    }

    /// Every TCP source sends exactly a budget that is not a block multiple.
    #[test]
    fn tcp_sources_spend_a_budget_exactly() {
        const N: u64 = 3 * 128 * 1024 + 4321;
        let buf = payload(128 * 1024, false);
        let sources = [
            TcpSource::Copy(buf.clone()),
            TcpSource::SendFile(MemfdSource::new(&buf).expect("memfd")),
            TcpSource::zero_copy(&buf).expect("memfd"),
        ];
        for src in sources {
            let (client, server) = tcp_pair();
            let reader = std::thread::spawn(move || {
                let s = TcpStream::from(server);
                let mut b = vec![0u8; 64 * 1024];
                let mut total = 0u64;
                loop {
                    match read_some(s.as_fd(), &mut b) {
                        Ok(0) | Err(_) => return total,
                        Ok(n) => total += n as u64,
                    }
                }
            });
            let shared = Shared::new(Some(N));
            let c = Counters::default();
            tcp_send(&TcpStream::from(client), src, &shared, &c, None);
            assert_eq!(c.bytes.load(Relaxed), N);
            assert_eq!(reader.join().expect("reader"), N);
        }
    }
}
