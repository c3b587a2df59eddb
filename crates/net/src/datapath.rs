//! The per-stream data threads: the loops that move bytes, and the counters
//! they publish.
//!
//! One thread per stream. Inside a loop there is no allocation, no logging
//! and — for TCP — no clock read: a thread only makes its system call and adds
//! to a relaxed atomic counter that the reporter samples once per interval.
//! Threads notice the end of a test through [`Shared::stop`], checked once per
//! block; blocking calls carry a 100 ms socket timeout so that a stalled peer
//! cannot pin a thread past the end.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use plumb_proto::udp::{SeqWidth, UdpHeader, UdpReceiver};

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

/// Paces a sender to `rate` bit/s by sleeping between writes. It compares
/// with a schedule, not with the average since the start: after a stall it
/// resumes at the rate instead of bursting to catch up.
#[derive(Debug)]
pub struct Pacer {
    ns_per_byte: f64,
    next: Instant,
}

impl Pacer {
    /// A pacer for `bps` bit/s starting now; `None` for unlimited.
    pub fn new(bps: u64) -> Option<Pacer> {
        (bps > 0).then(|| Pacer {
            ns_per_byte: 8e9 / bps as f64,
            next: Instant::now(),
        })
    }

    /// Waits until `bytes` more may go, then books them.
    pub fn wait(&mut self, bytes: usize) {
        let now = Instant::now();
        if self.next > now {
            let gap = self.next - now;
            // Sleep most of the gap; the kernel's timer slack is ~50 µs.
            if gap > Duration::from_micros(200) {
                std::thread::sleep(gap - Duration::from_micros(100));
            }
            while Instant::now() < self.next {
                std::hint::spin_loop();
            }
        } else if now - self.next > Duration::from_millis(10) {
            // Fell behind (descheduled, blocked socket): forget the debt.
            self.next = now;
        }
        self.next += Duration::from_nanos((bytes as f64 * self.ns_per_byte) as u64);
    }
}

/// How a TCP sender puts bytes on the wire.
pub enum TcpSource {
    /// `write(2)` from a buffer.
    Copy(Vec<u8>),
    /// `sendfile(2)` from a memfd holding the payload (`-Z`, as iperf3).
    SendFile(MemfdSource),
}

/// Sends until stopped or the budget is spent; then shuts down the write side
/// so the receiver sees the exact end of the stream.
pub fn tcp_send(
    sock: &std::net::TcpStream,
    mut src: TcpSource,
    shared: &Shared,
    c: &Counters,
    bps: u64,
) {
    let _ = sock.set_write_timeout(Some(POLL_SLICE));
    let fd = sock.as_fd();
    let block = match &src {
        TcpSource::Copy(b) => b.len(),
        TcpSource::SendFile(m) => m.block_len(),
    };
    let mut pacer = Pacer::new(bps);
    let mut off = 0usize;
    while !shared.stop.load(Relaxed) {
        let want = shared.claim(block - off);
        if want == 0 {
            break;
        }
        if let Some(p) = pacer.as_mut() {
            p.wait(want);
        }
        let r = match &mut src {
            TcpSource::Copy(buf) => write_some(fd, &buf[off..off + want]),
            TcpSource::SendFile(m) => m.sendfile(fd, want),
        };
        match r {
            Ok(n) => {
                c.bytes.fetch_add(n as u64, Relaxed);
                shared.unclaim(want - n);
                off = (off + n) % block;
            }
            Err(e) if transient(&e) => shared.unclaim(want),
            Err(e) => {
                shared.unclaim(want);
                c.fail(format!("send: {e}"));
                break;
            }
        }
    }
    let _ = sock.shutdown(std::net::Shutdown::Write);
    c.done.store(true, Relaxed);
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
                // Bytes drained after the stop still count, so the receiver's
                // duration must run to the last of them. Only the drain reads
                // the clock, never the steady state.
                if shared.stop_receivers.load(Relaxed) {
                    c.last_rx_ns
                        .store(epoch().elapsed().as_nanos() as u64, Relaxed);
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
    c.done.store(true, Relaxed);
}

/// Puts the window clamp back to `want` if the kernel has raised it.
fn keep_clamp(fd: BorrowedFd<'_>, want: u32) {
    if crate::sockopt::window_clamp(fd).is_ok_and(|now| now > want) {
        let _ = crate::sockopt::set_window_clamp(fd, want);
    }
}

/// Datagrams a UDP sender hands the kernel per pacing step at most.
const UDP_BURST: usize = 32;

/// Sends `len`-byte datagrams with iperf3's header (monotonic timestamp,
/// sequence from 1) paced to `bps` (0 = as fast as possible).
pub fn udp_send(
    sock: &std::net::UdpSocket,
    len: usize,
    seq64: bool,
    repeating: bool,
    shared: &Shared,
    c: &Counters,
    bps: u64,
) {
    let _ = sock.set_write_timeout(Some(POLL_SLICE));
    let fd = sock.as_fd();
    let mut buf = payload(len, repeating);
    let mut seq: u64 = 0;
    let mut pacer = Pacer::new(bps);
    'outer: while !shared.stop.load(Relaxed) {
        if let Some(p) = pacer.as_mut() {
            p.wait(len);
        }
        // One clock read per burst: the stamps of a burst leave within microseconds.
        let (sec, usec) = clock_monotonic();
        let burst = if pacer.is_some() { 1 } else { UDP_BURST };
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
    }
    c.done.store(true, Relaxed);
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
    c.done.store(true, Relaxed);
}
