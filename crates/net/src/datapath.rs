//! The per-stream data threads: the loops that move bytes, and the counters
//! they publish.
//!
//! One thread per stream, not pinned: on the 2-core loopback bench, pinning
//! (sender and receiver on one core, or on different ones, or streams round
//! robin) won under cubic and lost under bbr, so the scheduler places them.
//! Inside a loop there is no allocation, no lock and no logging: a thread
//! makes its system call and adds to relaxed atomic counters that the
//! reporter samples once per interval. TCP loops read the clock once per 64
//! reads (the receiver's low-water tuner) and while draining; UDP loops once
//! per batch (the send stamp, the arrival time). Threads notice the end of a
//! test through [`StopAndBudget::stop`], checked once per block or batch; blocking
//! calls carry a 100 ms socket timeout so that a stalled peer cannot pin a
//! thread past the end.
//!
//! TCP: `write` or, with `-Z`, `tee` and `splice` from a pipe holding the
//! block; `read` or `MSG_TRUNC`, with `SO_RCVLOWAT` kept at about a
//! millisecond of data while the test's data threads fit the CPUs
//! (`Plan::recv_lowat`). UDP: `sendmmsg` of GSO messages and `recvmmsg`
//! with GRO, split back into datagrams so every sequence number is counted
//! ([`UdpSender`], [`UdpIntake`]).

use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use plumb_proto::udp::{SeqWidth, UdpHeader, UdpReceiver, UdpStats};

use crate::buf::{DiscardBuf, PageBuf};
use crate::datathread::{epoch, transient, Counters, StopAndBudget, POLL_SLICE};
use crate::diskfile::FileSource;
use crate::pacing::{Pacer, Schedule, UDP_QUANTUM};
use crate::stream::{read_some, recv_trunc, write_some};
use crate::sys::clock_monotonic;
use crate::udp::{UdpBatch, UdpBatchError};
use crate::zerocopy::{MemfdSource, TeeSource};

/// The bytes a sender repeats: random by default, `0123456789…` with
/// `--repeating-payload` (as iperf3).
pub fn payload(len: usize, repeating: bool) -> Vec<u8> {
    let mut out = vec![0u8; len];
    fill_payload(&mut out, repeating);
    out
}

/// [`payload`] written straight into a page-aligned buffer: a TCP sender's
/// block. Made in place, not copied from a `Vec`, so that a stream holds one
/// block, not two: a `Vec` would stay resident in the allocator's heap for
/// the whole test (1 MiB of a `-P 8` client's peak).
pub fn payload_block(len: usize, repeating: bool) -> PageBuf {
    let mut out = PageBuf::zeroed(len);
    fill_payload(&mut out, repeating);
    out
}

fn fill_payload(out: &mut [u8], repeating: bool) {
    if repeating {
        for (i, b) in out.iter_mut().enumerate() {
            *b = b'0' + (i % 10) as u8;
        }
        return;
    }
    // Random filler so that compressing links and dedup can't flatter the
    // result; xorshift seeded from the kernel is plenty for that.
    let mut seed = [0u8; 8];
    if crate::sys::fill_random(&mut seed).is_err() {
        seed = (Instant::now().elapsed().as_nanos() as u64 | 1).to_le_bytes();
    }
    let mut x = u64::from_le_bytes(seed) | 1;
    for chunk in out.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
}

/// How a TCP sender puts bytes on the wire.
pub enum TcpSource {
    /// `write(2)` from a buffer (the same block may serve every stream).
    Copy(Arc<PageBuf>),
    /// `sendfile(2)` from a memfd holding the payload.
    SendFile(MemfdSource),
    /// `splice(2)` from a memfd through a pipe: the pages go to the socket
    /// by reference, so the sender never copies the payload.
    Splice(MemfdSource),
    /// `tee(2)` from a pipe holding the block, then `splice(2)` (`-Z`): as
    /// [`TcpSource::Splice`] without a page-cache lookup per page.
    Tee(TeeSource),
    /// A file's bytes (`-F`); the stream ends where the file does.
    File(FileSource),
}

impl TcpSource {
    /// The zero-copy source `-Z` uses: tee and splice from a held pipe, or
    /// splice from a memfd where a pipe cannot hold the block. On loopback
    /// splice measured ahead of sendfile and far ahead of `MSG_ZEROCOPY`,
    /// whose completions all come back "copied" there (bench/run, `-Z`).
    pub fn zero_copy(payload: &[u8]) -> io::Result<TcpSource> {
        match TeeSource::new(payload) {
            Ok(t) => Ok(TcpSource::Tee(t)),
            Err(_) => MemfdSource::new(payload).map(TcpSource::Splice),
        }
    }

    fn block_len(&self) -> usize {
        match self {
            TcpSource::Copy(b) => b.len(),
            TcpSource::SendFile(m) | TcpSource::Splice(m) => m.block_len(),
            TcpSource::Tee(t) => t.block_len(),
            TcpSource::File(f) => f.block_len(),
        }
    }
}

/// A pacing schedule for a TCP sender of `block`-byte writes at `rate_bps`.
pub fn tcp_schedule(rate_bps: u64, block: usize) -> Option<Schedule> {
    Schedule::new(rate_bps, 1, block as u64)
}

/// Sends until stopped or the budget is spent; then shuts down the write side
/// so the receiver sees the exact end of the stream. `pacer` grants bytes,
/// a block at a time ([`tcp_schedule`]). With `batch_after_first` the
/// thread enters the batch scheduling class once its first write returns.
pub fn tcp_send(
    sock: &std::net::TcpStream,
    mut src: TcpSource,
    shared: &StopAndBudget,
    c: &Counters,
    mut pacer: Option<Pacer>,
    mut batch_after_first: bool,
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
            TcpSource::Tee(t) => t.send(fd, want),
            TcpSource::File(f) => f.send(fd, want),
        };
        let sent = match r {
            Ok(0) if matches!(src, TcpSource::File(_)) => {
                // The whole file is out: this stream is done.
                shared.unclaim(want);
                break;
            }
            Ok(n) => {
                c.bytes.fetch_add(n as u64, Relaxed);
                shared.unclaim(want - n);
                off = (off + n) % block;
                if batch_after_first {
                    // See `Session::start`: the batch class from the first
                    // block on, so that the test's first byte is not held.
                    let _ = crate::host::batch_current_thread();
                    batch_after_first = false;
                }
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
        c.info.answer_if_asked(fd);
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

/// The highest `SO_RCVLOWAT` a TCP receiver sets, independent of its read
/// size.
///
/// The mark decides how often the kernel wakes the reader, the read size
/// what its copies touch. Every wake-up is work on the sender's CPU on
/// loopback (`sock_def_readable`, an IPI), so the mark goes up to 1 MiB; the
/// reads stay at the block (128 KiB), so the destination stays in cache —
/// once woken, the reader drains the queue in block-sized reads without
/// sleeping. Side by side with iperf3 3.12 (loopback, cubic, 6 interleaved
/// runs of 2 s): 128 KiB reads with the mark at 64 KiB ran as iperf3; 2 MiB
/// reads with the mark at 1 MiB 15–30 % ahead, but 15 % behind iperf3 with
/// `-Z`, whose source pages are hot and whose copies then pay for a 2 MiB
/// destination; 128 KiB reads with the mark at 1 MiB kept the lead in both
/// (copy 46 vs 42 Gb/s, `-Z` 56 vs 50). When the mark is used at all is
/// [`TcpRecv::lowat`]'s question.
pub const LOWAT_MAX: usize = 1 << 20;

/// How a TCP receiver reads.
#[derive(Debug)]
pub struct TcpRecv {
    /// Bytes per read.
    pub len: usize,
    /// Discard with `MSG_TRUNC` instead of copying (the count stays exact).
    pub skip_copy: bool,
    /// `--rwin`: the window clamp to hold against the kernel's raises.
    pub clamp: Option<u32>,
    /// Keep `SO_RCVLOWAT` at about a millisecond of data ([`LowWater`]);
    /// whether that pays is `Plan::recv_lowat`'s decision.
    pub lowat: bool,
    /// `-F`: write every byte read to this file (read into the thread's
    /// own buffer then, never discarded).
    pub file: Option<std::fs::File>,
}

/// Receives until EOF or until stopped and drained. Bytes land in `sink`
/// when given (shared with other streams; see [`DiscardBuf`]), else in a
/// buffer of the thread's own.
pub fn tcp_recv(
    sock: &std::net::TcpStream,
    how: TcpRecv,
    sink: Option<&DiscardBuf>,
    shared: &StopAndBudget,
    c: &Counters,
    drain: Drain,
) {
    let TcpRecv {
        len,
        skip_copy,
        clamp,
        lowat,
        mut file,
    } = how;
    let skip_copy = skip_copy && file.is_none();
    let _ = sock.set_read_timeout(Some(POLL_SLICE));
    let fd = sock.as_fd();
    let sink = sink.filter(|s| !s.is_empty() && file.is_none());
    let own = if skip_copy || sink.is_some() { 0 } else { len };
    let mut buf = PageBuf::zeroed(own);
    let mut stopped_at: Option<Instant> = None;
    // A clamped window (--rwin) may never let the queue reach a low-water
    // mark, so the tuner stays off then.
    let mut lowat = (lowat && clamp.is_none()).then(|| LowWater::new(LOWAT_MAX, len));
    loop {
        let r = if skip_copy {
            recv_trunc(fd, len)
        } else if let Some(s) = sink {
            s.read(fd)
        } else {
            read_some(fd, &mut buf)
        };
        match r {
            Ok(0) => break,
            Ok(n) => {
                c.bytes.fetch_add(n as u64, Relaxed);
                if let Some(f) = file.as_mut() {
                    if let Err(e) = f.write_all(&buf[..n]) {
                        c.fail(format!("writing the -F file: {e}"));
                        break;
                    }
                }
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
    /// The read size: a read this long is not short, whatever the mark.
    read_len: usize,
    current: usize,
    reads: u32,
    bytes: u64,
    since: Instant,
    /// The kernel refused the option once; stop trying.
    broken: bool,
}

impl LowWater {
    fn new(cap: usize, read_len: usize) -> LowWater {
        LowWater {
            cap,
            read_len,
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
        if self.reads >= LOWAT_CHECK_READS || n < self.current.min(self.read_len) {
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

/// How long a UDP receiver polls its socket (`recvmmsg` with
/// `MSG_DONTWAIT`) before it sleeps in a blocking receive. A receiver that
/// sleeps must be woken for its next datagram, and on one host that wake-up
/// is paid by the sender's CPU, inside its `sendmmsg` (the receiving
/// socket's `sock_def_readable`: 7.8 % of all samples in a `perf` profile of
/// 1472-byte `--gsro` at `-b 0`, with the receiver idle 20 % of the time).
/// Polling while datagrams keep coming keeps the receiver awake: 1472 B
/// `--gsro` 62–66 against 33–60 Gbit/s, 64 B `--gsro` 27.7–28.4 against
/// 24.0–26.0 Mpps received (alternating pairs of 3 s runs), at the
/// receiver's CPU (60 → 88–94 % of a core). Without GSO nothing changed
/// (0.31–0.38 Mpps either way: that receiver never slept).
pub const UDP_RECV_POLL: Duration = Duration::from_micros(50);
/// After a poll that ran out, receives sleep at once until this long after
/// the receive that followed it: a paced sender's gaps are longer than the
/// poll, and polling through each would cost CPU for nothing (`-b 1G`,
/// 1472 B `--gsro`: the receiver at 22 % of a core polling every time, 3.5 %
/// with this, 3.3 % never polling).
pub const UDP_RECV_POLL_BACKOFF: Duration = Duration::from_millis(10);

/// Largest UDP payload one GSO message may carry: an IPv4 datagram's 65 535
/// bytes less the IP and UDP headers.
const GSO_MAX_BYTES: usize = 65_507;
/// Most datagrams a GSO message carries: the kernel's `UDP_MAX_SEGMENTS`,
/// 128 on newer kernels (6.18 here; iperf3 3.21+ sends as many). Half as
/// many messages per datagram halves the per-message work of both ends at
/// small datagram sizes (at 1472 B the 64 KiB message limit binds first).
const GSO_MAX_SEGMENTS: usize = 128;
/// Older kernels' `UDP_MAX_SEGMENTS`: a sender whose 128-segment message is
/// refused with `EINVAL` tries this before giving GSO up.
const GSO_OLD_MAX_SEGMENTS: usize = 64;
/// Memory of a UDP sender's batch: thousands of small datagrams, or a few
/// large GSO messages, per `sendmmsg`.
const UDP_SEND_BYTES: usize = 256 * 1024;
/// Memory of a UDP receiver's batch, per `recvmmsg`.
const UDP_RECV_BYTES: usize = 512 * 1024;

/// How a UDP sender lays its datagrams out: `segs` datagrams of `len` bytes
/// back to back in each message (one GSO message when `segs > 1`), `msgs`
/// messages per `sendmmsg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpLayout {
    /// Datagram length, bytes.
    pub len: usize,
    /// Datagrams per message.
    pub segs: usize,
    /// Messages per system call.
    pub msgs: usize,
}

impl UdpLayout {
    /// The layout for `len`-byte datagrams, with or without GSO.
    pub fn new(len: usize, gso: bool) -> UdpLayout {
        UdpLayout::with_max_segments(len, if gso { GSO_MAX_SEGMENTS } else { 1 })
    }

    /// The layout for `len`-byte datagrams, at most `max` per message.
    fn with_max_segments(len: usize, max: usize) -> UdpLayout {
        let len = len.max(1);
        let segs = (GSO_MAX_BYTES / len).clamp(1, max.max(1));
        let msgs = (UDP_SEND_BYTES / (segs * len)).clamp(1, crate::udp::MAX_SLOTS);
        UdpLayout { len, segs, msgs }
    }

    /// Datagrams per system call.
    pub fn capacity(&self) -> usize {
        self.segs * self.msgs
    }

    /// The layout to try after the kernel refused this one's GSO messages
    /// (`error` is what it said): an `EINVAL` for more segments than an older
    /// kernel's limit tries that limit, anything else (or a refusal at that
    /// limit) sends one datagram per message.
    fn after_refusal(&self, error: Option<i32>) -> UdpLayout {
        let max = if self.segs > GSO_OLD_MAX_SEGMENTS && error == Some(libc::EINVAL) {
            GSO_OLD_MAX_SEGMENTS
        } else {
            1
        };
        UdpLayout::with_max_segments(self.len, max)
    }

    /// Slot and byte offset within it of datagram `i` of a batch.
    fn position(&self, i: usize) -> (usize, usize) {
        (i / self.segs, (i % self.segs) * self.len)
    }

    /// Fills `lens` with the message lengths that carry `n` datagrams
    /// (`n <= capacity`); returns how many messages that is.
    pub fn message_lens(&self, n: usize, lens: &mut [usize]) -> usize {
        let full = n / self.segs;
        let rest = n % self.segs;
        let per = self.segs * self.len;
        lens[..full].fill(per);
        if rest > 0 {
            lens[full] = rest * self.len;
            full + 1
        } else {
            full
        }
    }
}

/// Whether a failed GSO send means "this path cannot do GSO" (old kernel, no
/// checksum offload on the route's device) rather than a real error.
fn gso_refused(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EIO | libc::EINVAL | libc::ENOPROTOOPT | libc::EOPNOTSUPP)
    )
}

/// A UDP sender's batch: datagrams preallocated with their filler, stamped
/// with consecutive sequence numbers (from 1, as iperf3) and one send time
/// per call, and handed to the kernel with one `sendmmsg` — GSO messages
/// where the kernel takes them, falling back to one datagram per message.
#[derive(Debug)]
pub struct UdpSender {
    layout: UdpLayout,
    batch: UdpBatch,
    lens: Vec<usize>,
    width: SeqWidth,
    /// Sequence number of the last datagram the kernel took.
    seq: u64,
    filler: Vec<u8>,
}

impl UdpSender {
    /// A sender of `filler.len()`-byte datagrams (at least the header's 16).
    pub fn new(filler: Vec<u8>, width: SeqWidth, gso: bool) -> Result<UdpSender, UdpBatchError> {
        UdpSender::with_layout(UdpLayout::new(filler.len(), gso), filler, width)
    }

    fn with_layout(
        layout: UdpLayout,
        filler: Vec<u8>,
        width: SeqWidth,
    ) -> Result<UdpSender, UdpBatchError> {
        let mut batch = UdpBatch::new(layout.msgs, layout.segs * layout.len)?;
        for m in 0..layout.msgs {
            for chunk in batch.slot_mut(m).chunks_mut(layout.len) {
                chunk.copy_from_slice(&filler[..chunk.len()]);
            }
        }
        Ok(UdpSender {
            layout,
            batch,
            lens: vec![0; layout.msgs],
            width,
            seq: 0,
            filler,
        })
    }

    /// Datagrams one call sends at most.
    pub fn capacity(&self) -> usize {
        self.layout.capacity()
    }

    /// Whether sends go as GSO messages.
    pub fn gso(&self) -> bool {
        self.layout.segs > 1
    }

    /// Datagrams per message (1 without GSO).
    pub fn segments(&self) -> usize {
        self.layout.segs
    }

    /// Sequence number of the last datagram sent (0 before any).
    pub fn last_seq(&self) -> u64 {
        self.seq
    }

    /// Stamps up to `n` datagrams with the next sequence numbers and the send
    /// time `stamp` (monotonic seconds and microseconds), and sends them with
    /// one `sendmmsg`. Returns how many datagrams the kernel took; numbers it
    /// did not take are used again by the next call, so the receiver sees
    /// every number exactly once.
    pub fn send(&mut self, fd: BorrowedFd<'_>, n: usize, stamp: (u32, u32)) -> io::Result<usize> {
        let n = n.min(self.capacity());
        if n == 0 {
            return Ok(0);
        }
        let len = self.layout.len;
        for i in 0..n {
            let (slot, at) = self.layout.position(i);
            let h = UdpHeader {
                sec: stamp.0,
                usec: stamp.1,
                seq: self.seq + 1 + i as u64,
            };
            h.encode(self.width, &mut self.batch.slot_mut(slot)[at..at + len])
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        }
        let msgs = self.layout.message_lens(n, &mut self.lens);
        let seg = (self.layout.segs > 1).then_some(len as u16);
        let taken = match self.batch.send(fd, &self.lens[..msgs], seg) {
            Ok(m) => m,
            Err(e) if seg.is_some() && gso_refused(&e) => {
                // Rebuild with fewer segments per message (64, then none:
                // at most twice) and send this batch again.
                let filler = std::mem::take(&mut self.filler);
                let seq = self.seq;
                let layout = self.layout.after_refusal(e.raw_os_error());
                *self = UdpSender::with_layout(layout, filler, self.width)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
                self.seq = seq;
                return self.send(fd, n, stamp);
            }
            Err(e) => return Err(e),
        };
        let sent = (taken * self.layout.segs).min(n);
        self.seq += sent as u64;
        Ok(sent)
    }

    #[cfg(test)]
    fn skip(&mut self, k: u64) {
        self.seq += k;
    }
}

/// A pacing schedule for a UDP sender of `len`-byte datagrams at `rate_bps`:
/// grants of about [`UDP_QUANTUM`]'s worth, at most one batch.
pub fn udp_schedule(rate_bps: u64, len: usize, gso: bool) -> Option<Schedule> {
    let batch = UdpLayout::new(len, gso).capacity();
    Schedule::for_datagrams(rate_bps, len, UDP_QUANTUM, batch)
}

/// Sends `len`-byte datagrams with iperf3's header (monotonic timestamp,
/// sequence from 1), a batch per system call, as fast as possible or as
/// `pacer` grants ([`udp_schedule`]).
///
/// All datagrams of one call carry the same send time (one clock read per
/// call; they leave within microseconds of each other). With `gso` they go
/// as GSO messages of up to 128 datagrams (64 on older kernels) where the
/// kernel takes them, else
/// one datagram per message; the datagrams per message actually used are
/// published in [`Counters::udp_gso_segs`].
///
/// It sends until stopped, or until a `-n`/`-k` budget is spent; with
/// [`crate::datathread::AtBudget::UdpUntilStopped`] it goes on past the
/// budget until stopped, and counts every datagram it sends.
#[allow(clippy::too_many_arguments)]
pub fn udp_send(
    sock: &std::net::UdpSocket,
    len: usize,
    seq64: bool,
    repeating: bool,
    gso: bool,
    shared: &StopAndBudget,
    c: &Counters,
    mut pacer: Option<Pacer>,
) {
    let _ = sock.set_write_timeout(Some(POLL_SLICE));
    let fd = sock.as_fd();
    let width = SeqWidth::from_counters_64bit(seq64);
    if len < width.header_len() {
        c.fail("datagram too short for the header");
        c.end();
        return;
    }
    let mut tx = match UdpSender::new(payload(len, repeating), width, gso) {
        Ok(t) => t,
        Err(e) => {
            c.fail(e);
            c.end();
            return;
        }
    };
    while !shared.stop.load(Relaxed) {
        let granted = match pacer.as_mut() {
            Some(p) => match p.wait(&shared.stop) {
                Some(g) => g as usize,
                None => break,
            },
            None => tx.capacity(),
        };
        // A byte budget (-n/-k) ends on whole datagrams, as iperf3's does:
        // the last one may overshoot it by less than a datagram. Past it a
        // server's sender goes on unclaimed (`AtBudget::UdpUntilStopped`),
        // so that a client that lost datagrams still receives its count.
        let want = granted.min(tx.capacity());
        let claimed = shared.claim(want * len);
        let past = claimed == 0 && shared.udp_past_budget();
        let n = if past { want } else { claimed.div_ceil(len) };
        let result = if n == 0 {
            Ok(0)
        } else {
            tx.send(fd, n, clock_monotonic())
        };
        let sent = *result.as_ref().unwrap_or(&0);
        shared.unclaim(claimed.saturating_sub(sent * len));
        if let Some(p) = pacer.as_mut() {
            p.refund(granted.saturating_sub(sent) as u64);
        }
        if sent > 0 {
            c.bytes.fetch_add((sent * len) as u64, Relaxed);
            c.packets.store(tx.last_seq(), Relaxed);
        }
        // After the send: a refused GSO send rebuilds the sender without it.
        c.udp_gso_segs.store(tx.segments() as u64, Relaxed);
        match result {
            Ok(_) if claimed == 0 && !past => break,
            Ok(_) => {}
            Err(e) if transient(&e) || e.raw_os_error() == Some(libc::ENOBUFS) => {}
            // The receiver's port closed (the test ended there): not our error.
            Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => break,
            Err(e) => {
                c.fail(format!("send: {e}"));
                break;
            }
        }
    }
    c.end();
}

/// How finely a UDP receiver's jitter resolves arrival times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JitterResolution {
    /// Each datagram has its own kernel receive time (GRO off).
    Datagram,
    /// One kernel receive time per coalesced GRO read: the datagrams of one
    /// read share it, so jitter is between reads, not datagrams.
    GroBatch,
    /// No kernel timestamps: one clock read per `recvmmsg` call.
    ReadBatch,
}

impl JitterResolution {
    /// The name plumb's JSON uses.
    pub fn as_str(self) -> &'static str {
        match self {
            JitterResolution::Datagram => "datagram",
            JitterResolution::GroBatch => "gro_batch",
            JitterResolution::ReadBatch => "read_batch",
        }
    }

    fn code(self) -> u8 {
        match self {
            JitterResolution::Datagram => 1,
            JitterResolution::GroBatch => 2,
            JitterResolution::ReadBatch => 3,
        }
    }

    /// From [`Counters::udp_jitter_res`] (0 = not a UDP receiver).
    pub fn from_code(c: u8) -> Option<JitterResolution> {
        match c {
            1 => Some(JitterResolution::Datagram),
            2 => Some(JitterResolution::GroBatch),
            3 => Some(JitterResolution::ReadBatch),
            _ => None,
        }
    }
}

/// Slots of a receiver with `UDP_GRO` on: each [`crate::udp::MAX_SLOT_SIZE`],
/// so 2 MiB of address space, of which only the bytes written are ever
/// touched (the batch is an anonymous mapping).
const UDP_GRO_SLOTS: usize = 32;

/// A UDP receiver's batch and statistics: one `recvmmsg` fills many slots,
/// GRO slots are split back into datagrams, and every datagram's header is
/// counted (loss, out-of-order, duplicates and jitter as iperf3 counts them).
///
/// Arrival time is the kernel's receive time of each message when the
/// socket has `SO_TIMESTAMPNS` on ([`UdpIntake::timestamps`]), mapped onto
/// the monotonic clock: per datagram without GRO, per coalesced read with
/// it (the kernel stamps the coalesced buffer once). Without timestamps it
/// is one clock read per `recvmmsg`, shared by the whole batch.
///
/// With GRO every slot holds 64 KiB, the most one coalesced read can carry
/// whatever the datagram length, so a read is never cut. Without GRO a slot
/// holds one datagram of the agreed length; a longer one is cut. A cut read
/// (`MSG_TRUNC`) is counted in [`UdpIntake::truncated_reads`], never as
/// loss: the datagrams whose headers arrived are counted as received.
#[derive(Debug)]
pub struct UdpIntake {
    batch: UdpBatch,
    width: SeqWidth,
    stats: UdpReceiver,
    bytes: u64,
    gro: bool,
    timestamps: bool,
    truncated: u64,
    /// How long a receive polls before it sleeps (zero: never).
    poll: Duration,
    /// After a poll that found nothing, receives sleep at once until then.
    poll_off_until: Option<Instant>,
}

impl UdpIntake {
    /// An intake for `len`-byte datagrams; `gro` when the socket has
    /// `UDP_GRO` on (slots then hold a whole coalesced read).
    pub fn new(len: usize, width: SeqWidth, gro: bool) -> Result<UdpIntake, UdpBatchError> {
        let (slots, slot) = if gro {
            (UDP_GRO_SLOTS, crate::udp::MAX_SLOT_SIZE)
        } else {
            let slot = len.clamp(1, crate::udp::MAX_SLOT_SIZE);
            (
                (UDP_RECV_BYTES / slot).clamp(1, crate::udp::MAX_SLOTS),
                slot,
            )
        };
        Ok(UdpIntake {
            batch: UdpBatch::new(slots, slot)?,
            width,
            stats: UdpReceiver::new(),
            bytes: 0,
            gro,
            timestamps: false,
            truncated: 0,
            poll: UDP_RECV_POLL,
            poll_off_until: None,
        })
    }

    /// Takes arrival times from the kernel's `SO_TIMESTAMPNS` (set on the
    /// socket by the caller) where a message carries one.
    pub fn timestamps(&mut self, on: bool) {
        self.timestamps = on;
    }

    /// How finely jitter resolves arrivals with this intake's settings.
    pub fn jitter_resolution(&self) -> JitterResolution {
        match (self.timestamps, self.gro) {
            (false, _) => JitterResolution::ReadBatch,
            (true, true) => JitterResolution::GroBatch,
            (true, false) => JitterResolution::Datagram,
        }
    }

    /// Receives one batch — polling for up to [`UDP_RECV_POLL`] first (see
    /// there), then waiting up to the socket's timeout for the first
    /// datagram — and counts it; returns how many datagrams it held.
    pub fn recv(&mut self, fd: BorrowedFd<'_>) -> io::Result<usize> {
        let now = Instant::now();
        let mut missed = false;
        if !self.poll.is_zero() && self.poll_off_until.is_none_or(|t| now >= t) {
            let deadline = now + self.poll;
            loop {
                match self.batch.try_recv(fd) {
                    Ok(_) => {
                        let (mono, real) = crate::sys::clock_pair();
                        return Ok(self.absorb(mono, real));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        if Instant::now() >= deadline {
                            missed = true;
                            break;
                        }
                        std::hint::spin_loop();
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        let got = self.batch.recv(fd);
        if missed {
            // Gaps longer than the poll (a paced or idle sender): sleep at
            // once from now on, and poll again only after a while. Counted
            // from the end of the sleep, so that a long sleep does not use
            // the back-off up.
            self.poll_off_until = Some(Instant::now() + UDP_RECV_POLL_BACKOFF);
        }
        got?;
        let (mono, real) = crate::sys::clock_pair();
        Ok(self.absorb(mono, real))
    }

    /// Counts the datagrams of the last receive. `now`/`real_now` are the
    /// monotonic and realtime clocks read together just after it: the
    /// fallback arrival time, and the offset that maps kernel timestamps
    /// (realtime) onto the monotonic clock of the senders' stamps.
    fn absorb(&mut self, now: Duration, real_now: Duration) -> usize {
        let mut n = 0;
        for slot in self.batch.iter_received() {
            if slot.truncated {
                self.truncated += 1;
            }
            // A stamp after `real_now` (a clock step) falls back to `now`.
            let arrival = match slot.stamp {
                Some(t) if self.timestamps => real_now
                    .checked_sub(t)
                    .and_then(|ago| now.checked_sub(ago))
                    .unwrap_or(now),
                _ => now,
            };
            for d in slot.datagrams() {
                // Runts without a header are not iperf3 datagrams: skipped.
                if let Ok(h) = UdpHeader::decode(d, self.width) {
                    self.stats.record_header(&h, arrival);
                    self.bytes += d.len() as u64;
                    n += 1;
                }
            }
        }
        n
    }

    /// Counts so far.
    pub fn stats(&self) -> UdpStats {
        self.stats.stats()
    }

    /// Payload bytes of the datagrams counted.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Reads the kernel cut short (`MSG_TRUNC`): a datagram, or a coalesced
    /// read, longer than its slot.
    pub fn truncated_reads(&self) -> u64 {
        self.truncated
    }
}

/// Receives datagrams in batches — with `UDP_GRO` when `gro` asks for it
/// and the kernel has it — and keeps iperf3's loss, out-of-order and jitter
/// counts (plus exact duplicates and cut reads) until stopped. Arrival
/// times come from the kernel's per-message timestamps where it gives them.
pub fn udp_recv(
    sock: &std::net::UdpSocket,
    len: usize,
    seq64: bool,
    gro: bool,
    shared: &StopAndBudget,
    c: &Counters,
) {
    let _ = sock.set_read_timeout(Some(POLL_SLICE));
    let fd = sock.as_fd();
    let gro = gro && crate::sockopt::set_udp_gro(fd, true).is_ok();
    let stamps = crate::sockopt::set_timestamp_ns(fd, true).is_ok();
    let mut rx = match UdpIntake::new(len, SeqWidth::from_counters_64bit(seq64), gro) {
        Ok(r) => r,
        Err(e) => {
            c.fail(e);
            c.end();
            return;
        }
    };
    rx.timestamps(stamps);
    // Drops before now (a stray burst before the test) are not the test's.
    let drops0 = crate::sockopt::socket_drops(fd).ok();
    c.udp_gro.store(if gro { 2 } else { 1 }, Relaxed);
    c.udp_jitter_res
        .store(rx.jitter_resolution().code(), Relaxed);
    let mut stopped_at: Option<Instant> = None;
    loop {
        match rx.recv(fd) {
            Ok(_) => {
                // Published once per batch: the reporter samples these.
                let st = rx.stats();
                c.bytes.store(rx.bytes(), Relaxed);
                c.packets.store(st.max_seq, Relaxed);
                c.lost.store(st.lost as i64, Relaxed);
                c.out_of_order.store(st.out_of_order as i64, Relaxed);
                c.duplicates.store(st.duplicates, Relaxed);
                c.jitter_bits.store(st.jitter.to_bits(), Relaxed);
                c.truncated_reads.store(rx.truncated_reads(), Relaxed);
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
    // Once, at the end: drops while the test ran, read outside the loop.
    let drops = drops0.zip(crate::sockopt::socket_drops(fd).ok());
    c.socket_drops.store(
        drops.map_or(u64::MAX, |(a, b)| u64::from(b.wrapping_sub(a))),
        Relaxed,
    );
    c.end();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datathread::AtBudget;
    use crate::testutil::{tcp_pair, udp_pair};
    use std::net::{TcpStream, UdpSocket};
    use std::os::fd::OwnedFd;

    fn width() -> SeqWidth {
        SeqWidth::from_counters_64bit(false)
    }

    #[test]
    fn payload_block_is_the_payload_on_a_page_boundary() {
        // Odd length: the last xorshift word is cut, as the Vec's was.
        let b = payload_block(128 * 1024 + 3, true);
        assert_eq!(b.as_ptr() as usize % PageBuf::ALIGN, 0);
        assert_eq!(&b[..], &payload(128 * 1024 + 3, true)[..]);
        assert_eq!(&b[8..12], b"8901");
        let r = payload_block(4099, false);
        assert_eq!(r.len(), 4099);
        assert_eq!(r.as_ptr() as usize % PageBuf::ALIGN, 0);
        // Random filler: neither zeros left from the mapping nor the digits.
        assert!(r.iter().filter(|&&x| x == 0).count() < 200);
        assert_ne!(&r[..16], &payload(16, true)[..]);
        assert_ne!(&r[..8], &r[8..16]);
    }

    /// Receives until `want` datagrams were counted or 50 quiet batches.
    fn drain(rx: &UdpSocket, intake: &mut UdpIntake, want: u64) {
        rx.set_read_timeout(Some(Duration::from_millis(200)))
            .expect("timeout");
        for _ in 0..10_000 {
            if intake.stats().received >= want {
                return;
            }
            if intake.recv(rx.as_fd()).is_err() {
                return;
            }
        }
    }

    #[test]
    fn layouts_fill_gso_messages_and_split_the_rest() {
        let l = UdpLayout::new(64, true);
        assert_eq!((l.segs, l.msgs), (128, 32));
        let l = UdpLayout::new(1472, true);
        assert_eq!(l.segs, 44);
        assert!(l.segs * l.len <= GSO_MAX_BYTES);
        let l = UdpLayout::new(40_000, true);
        assert_eq!(l.segs, 1);
        let l = UdpLayout::new(64, false);
        assert_eq!((l.segs, l.msgs), (1, crate::udp::MAX_SLOTS));

        let l = UdpLayout::new(100, true);
        let mut lens = vec![0; l.msgs];
        let m = l.message_lens(2 * l.segs + 3, &mut lens);
        assert_eq!(m, 3);
        assert_eq!(&lens[..3], &[l.segs * 100, l.segs * 100, 300]);
        assert_eq!(l.message_lens(l.segs, &mut lens), 1);
        assert_eq!(l.position(l.segs + 2), (1, 200));
    }

    /// An older kernel's EINVAL for 128 segments falls back to 64, any
    /// other refusal (or one at 64) to one datagram per message; a layout
    /// the 64 KiB limit already holds under 64 segments gives GSO up.
    #[test]
    fn a_refused_gso_layout_steps_down_to_64_then_none() {
        let l = UdpLayout::new(64, true);
        let old = l.after_refusal(Some(libc::EINVAL));
        assert_eq!((old.segs, old.msgs), (64, 64));
        let none = old.after_refusal(Some(libc::EINVAL));
        assert_eq!((none.segs, none.len), (1, 64));
        assert_eq!(l.after_refusal(Some(libc::EIO)).segs, 1);
        assert_eq!(l.after_refusal(None).segs, 1);
        let big = UdpLayout::new(1472, true);
        assert_eq!(big.after_refusal(Some(libc::EINVAL)).segs, 1);
    }

    fn round_trip(gso: bool, gro: bool) {
        const LEN: usize = 200;
        let (tx, rx) = udp_pair();
        let mut out = UdpSender::new(payload(LEN, true), width(), gso).expect("sender");
        if gro {
            crate::sockopt::set_udp_gro(rx.as_fd(), true).expect("GRO");
        }
        let mut intake = UdpIntake::new(LEN, width(), gro).expect("intake");
        // Room for a whole round even without GRO (each datagram its own skb).
        let _ = socket2::SockRef::from(&rx).set_recv_buffer_size(4 << 20);
        let per = out.capacity().min(100);
        let mut total = 0u64;
        // Interleave sends and receives so the socket buffer never overflows.
        for round in 0..5 {
            let n = out.send(tx.as_fd(), per, (7, round)).expect("send");
            assert!(n > 0);
            total += n as u64;
            drain(&rx, &mut intake, total);
        }
        assert_eq!(out.last_seq(), total);
        let st = intake.stats();
        assert_eq!((st.received, st.max_seq), (total, total));
        assert_eq!((st.lost, st.out_of_order, st.duplicates), (0, 0, 0));
        assert_eq!(intake.bytes(), total * LEN as u64);
    }

    #[test]
    fn a_receive_polls_while_datagrams_come_and_sleeps_after_a_quiet_poll() {
        const LEN: usize = 100;
        let (tx, rx) = udp_pair();
        // Well under the back-off, so that the back-off can be seen.
        rx.set_read_timeout(Some(Duration::from_millis(2)))
            .expect("timeout");
        let mut out = UdpSender::new(payload(LEN, true), width(), false).expect("sender");
        let mut intake = UdpIntake::new(LEN, width(), false).expect("intake");
        // Blocks (up to the timeout) until a datagram is queued, so that the
        // next receive's poll is sure to find it.
        let queued = |rx: &UdpSocket| {
            rx.set_read_timeout(Some(Duration::from_secs(2)))
                .expect("timeout");
            rx.peek(&mut [0u8; 1]).expect("a datagram is queued");
            rx.set_read_timeout(Some(Duration::from_millis(2)))
                .expect("timeout");
        };
        // Queued data is taken by the poll, and polling stays on.
        assert!(out.send(tx.as_fd(), 3, (1, 0)).expect("send") > 0);
        queued(&rx);
        assert!(intake.recv(rx.as_fd()).expect("recv") > 0);
        assert_eq!(intake.poll_off_until, None);
        // A quiet socket: the poll runs out, the receive sleeps until the
        // socket's timeout, and polling is off for the back-off from then.
        let before = Instant::now();
        let err = intake.recv(rx.as_fd()).expect_err("nothing to read");
        assert!(transient(&err), "{err}");
        let slept = before.elapsed();
        assert!(slept >= Duration::from_millis(1), "{slept:?}");
        let off = intake.poll_off_until.expect("polling backed off");
        assert!(off >= before + UDP_RECV_POLL + UDP_RECV_POLL_BACKOFF);
        assert!(off <= Instant::now() + UDP_RECV_POLL_BACKOFF);
        // Within the back-off a quiet receive does not poll: it would set a
        // later end. (2 ms each; only when the machine stalls for 10 ms can
        // this run past the back-off, and then it says so.)
        let err = intake.recv(rx.as_fd()).expect_err("nothing to read");
        assert!(transient(&err), "{err}");
        if Instant::now() < off {
            assert_eq!(intake.poll_off_until, Some(off), "polled in the back-off");
        }
        // Datagrams still arrive through the blocking receive meanwhile.
        assert!(out.send(tx.as_fd(), 1, (1, 1)).expect("send") > 0);
        queued(&rx);
        assert!(intake.recv(rx.as_fd()).expect("recv") > 0);
        // With polling off, a quiet receive never backs off.
        intake.poll = Duration::ZERO;
        intake.poll_off_until = None;
        assert!(intake.recv(rx.as_fd()).is_err());
        assert_eq!(intake.poll_off_until, None);
        assert_eq!(intake.stats().received, out.last_seq());
    }

    #[test]
    fn gso_batches_arrive_whole_through_gro() {
        round_trip(true, true);
    }

    #[test]
    fn gso_batches_arrive_whole_without_gro() {
        round_trip(true, false);
    }

    #[test]
    fn plain_batches_arrive_whole() {
        round_trip(false, false);
    }

    #[test]
    fn gaps_are_counted_as_loss_exactly() {
        const LEN: usize = 64;
        let (tx, rx) = udp_pair();
        crate::sockopt::set_udp_gro(rx.as_fd(), true).expect("GRO");
        let mut out = UdpSender::new(payload(LEN, false), width(), true).expect("sender");
        let mut intake = UdpIntake::new(LEN, width(), true).expect("intake");
        assert_eq!(out.send(tx.as_fd(), 100, (1, 0)).expect("send"), 100);
        out.skip(17); // 101..=117 never sent
        assert_eq!(out.send(tx.as_fd(), 50, (1, 1)).expect("send"), 50);
        drain(&rx, &mut intake, 150);
        let st = intake.stats();
        assert_eq!(st.received, 150);
        assert_eq!(st.max_seq, 167);
        assert_eq!(st.lost, 17);
        assert_eq!(st.out_of_order, 0);
    }

    /// Datagram `seq` of `len` bytes with iperf3's 32-bit header.
    fn datagram(seq: u64, len: usize) -> Vec<u8> {
        let mut d = vec![0u8; len];
        UdpHeader::stamped(seq, Duration::from_secs(1))
            .encode(width(), &mut d)
            .expect("long enough");
        d
    }

    /// What an iperf3 3.21+ `--gsro` client sends at 64 B: GSO messages of
    /// 128 datagrams (8 KiB), which reach a GRO socket whole. Slots sized by
    /// the datagram length (64 x 64 B) cut each read in half, and the
    /// missing half showed as 50 % loss; a GRO intake takes them whole.
    #[test]
    fn a_gro_read_of_128_small_datagrams_is_taken_whole() {
        const LEN: usize = 64;
        const SEGS: usize = 128;
        let (tx, rx) = udp_pair();
        crate::sockopt::set_udp_gro(rx.as_fd(), true).expect("GRO");
        let mut msg = Vec::with_capacity(SEGS * LEN);
        for seq in 1..=(3 * SEGS) as u64 {
            msg.extend_from_slice(&datagram(seq, LEN));
        }
        let mut out = crate::udp::UdpBatch::new(3, SEGS * LEN).expect("batch");
        for (m, chunk) in msg.chunks(SEGS * LEN).enumerate() {
            out.slot_mut(m).copy_from_slice(chunk);
        }
        let lens = [SEGS * LEN; 3];
        match out.send(tx.as_fd(), &lens, Some(LEN as u16)) {
            Ok(3) => {}
            // Kernels before 6.x take at most 64 segments per message.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                plumb_testkit::skip!("this kernel refuses 128-segment GSO messages");
                return;
            }
            other => panic!("GSO send: {other:?}"),
        }
        let mut intake = UdpIntake::new(LEN, width(), true).expect("intake");
        drain(&rx, &mut intake, 3 * SEGS as u64);
        let st = intake.stats();
        assert_eq!(
            (st.received, st.max_seq),
            (3 * SEGS as u64, 3 * SEGS as u64)
        );
        assert_eq!(st.lost, 0);
        assert_eq!(intake.truncated_reads(), 0);
    }

    /// A datagram longer than its slot is cut: counted as a truncated read,
    /// its header still counted as received, and no loss.
    #[test]
    fn a_truncated_read_is_counted_apart_from_loss() {
        const LEN: usize = 64;
        let (tx, rx) = udp_pair();
        let mut intake = UdpIntake::new(LEN, width(), false).expect("intake");
        tx.send(&datagram(1, LEN)).expect("send");
        tx.send(&datagram(2, 3 * LEN)).expect("send"); // longer than the slot
        tx.send(&datagram(3, LEN)).expect("send");
        drain(&rx, &mut intake, 3);
        let st = intake.stats();
        assert_eq!(intake.truncated_reads(), 1);
        assert_eq!((st.received, st.max_seq, st.lost), (3, 3, 0));
        assert_eq!(
            intake.bytes(),
            3 * LEN as u64,
            "only what was read is counted"
        );
    }

    /// The first socket to ask for timestamps switches the kernel's
    /// stamping on from a workqueue, later; until then `recvmsg` stamps a
    /// datagram when it is read. Probes until a datagram read 5 ms after it
    /// was sent carries a stamp at least 4 ms old (bounded: 200 probes).
    fn wait_for_arrival_stamps(tx: &UdpSocket, rx: &UdpSocket) {
        rx.set_read_timeout(Some(Duration::from_millis(200)))
            .expect("timeout");
        let mut batch = crate::udp::UdpBatch::new(1, 64).expect("batch");
        for _ in 0..200 {
            tx.send(&[0u8; 8]).expect("probe");
            std::thread::sleep(Duration::from_millis(5));
            batch.recv(rx.as_fd()).expect("probe back");
            let (_, real) = crate::sys::clock_pair();
            let stamp = batch.received(0).and_then(|r| r.stamp).expect("a stamp");
            if real.saturating_sub(stamp) >= Duration::from_millis(4) {
                return;
            }
        }
        panic!("the kernel never stamped a datagram on arrival");
    }

    /// With `SO_TIMESTAMPNS` and no GRO, arrivals are the kernel's, one per
    /// datagram: datagrams sent 20 ms apart and read in one batch give a
    /// transit difference of about 20 ms (with one clock read per batch it
    /// would be 0), so the first jitter step is about 20 ms / 16.
    #[test]
    fn kernel_timestamps_resolve_jitter_per_datagram() {
        const LEN: usize = 64;
        let (tx, rx) = udp_pair();
        crate::sockopt::set_timestamp_ns(rx.as_fd(), true).expect("SO_TIMESTAMPNS");
        wait_for_arrival_stamps(&tx, &rx);
        let mut intake = UdpIntake::new(LEN, width(), false).expect("intake");
        intake.timestamps(true);
        assert_eq!(intake.jitter_resolution(), JitterResolution::Datagram);
        // Both carry the same send stamp, so their transit times differ by
        // exactly the time between their arrivals.
        tx.send(&datagram(1, LEN)).expect("send");
        std::thread::sleep(Duration::from_millis(20));
        tx.send(&datagram(2, LEN)).expect("send");
        drain(&rx, &mut intake, 2);
        let st = intake.stats();
        assert_eq!(st.received, 2);
        let step = 0.020 / 16.0;
        assert!(
            st.jitter >= step && st.jitter < 3.0 * step,
            "jitter {} s, expected about {step} s",
            st.jitter
        );
        let mut plain = UdpIntake::new(LEN, width(), true).expect("intake");
        assert_eq!(plain.jitter_resolution(), JitterResolution::ReadBatch);
        plain.timestamps(true);
        assert_eq!(plain.jitter_resolution(), JitterResolution::GroBatch);
    }

    #[test]
    fn runts_are_not_counted() {
        let (tx, rx) = udp_pair();
        let mut intake = UdpIntake::new(64, width(), false).expect("intake");
        tx.send(&[1, 2, 3]).expect("runt");
        let mut out = UdpSender::new(payload(64, false), width(), false).expect("sender");
        assert_eq!(out.send(tx.as_fd(), 3, (0, 0)).expect("send"), 3);
        drain(&rx, &mut intake, 3);
        assert_eq!(intake.stats().received, 3);
        assert_eq!(intake.bytes(), 192);
    }

    /// The sender thread with a byte budget that is not a whole number of
    /// datagrams: it sends whole datagrams, the last overshooting, and the
    /// receiver thread counts every one of them.
    #[test]
    fn udp_threads_spend_a_budget_exactly() {
        const LEN: usize = 100;
        const BUDGET: u64 = 5_000 * LEN as u64 + 10;
        let (tx, rx) = udp_pair();
        // A big receive buffer so an unpaced burst is not dropped.
        let _ = socket2::SockRef::from(&rx).set_recv_buffer_size(8 << 20);
        let shared = std::sync::Arc::new(StopAndBudget::new(Some(BUDGET), AtBudget::Stop));
        let sent = std::sync::Arc::new(Counters::default());
        let got = std::sync::Arc::new(Counters::default());
        let receiver = {
            let (shared, got) = (shared.clone(), got.clone());
            std::thread::spawn(move || udp_recv(&rx, LEN, false, true, &shared, &got))
        };
        // Paced at 400 Mbit/s (0.5 M datagrams/s) so loopback drops none.
        let pacer = udp_schedule(400_000_000, LEN, true).map(Pacer::Own);
        udp_send(&tx, LEN, false, false, true, &shared, &sent, pacer);
        assert!(shared.budget_spent.load(Relaxed));
        assert_eq!(sent.packets.load(Relaxed), 5_001);
        assert_eq!(sent.bytes.load(Relaxed), 5_001 * LEN as u64);
        assert!(sent.ended_at().is_some());
        // Bounded: the receiver stops at its next quiet slice once told.
        for _ in 0..100 {
            if got.packets.load(Relaxed) >= 5_001 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        shared.stop_receivers.store(true, Relaxed);
        receiver.join().expect("receiver");
        assert_eq!(got.packets.load(Relaxed), 5_001);
        assert_eq!(got.lost.load(Relaxed), 0);
        assert_eq!(got.bytes.load(Relaxed), 5_001 * LEN as u64);
    }

    /// A server's sender (`AtBudget::UdpUntilStopped`) goes on past its
    /// budget until it is stopped, and what it says it sent is what the
    /// receiver counted: every datagram, the ones past the budget too.
    #[test]
    fn a_udp_sender_past_its_budget_sends_until_stopped_and_counts_it() {
        const LEN: usize = 100;
        const BUDGET: u64 = 1_000 * LEN as u64;
        let (tx, rx) = udp_pair();
        let _ = socket2::SockRef::from(&rx).set_recv_buffer_size(8 << 20);
        let shared = Arc::new(StopAndBudget::new(Some(BUDGET), AtBudget::UdpUntilStopped));
        let sent = Arc::new(Counters::default());
        let got = Arc::new(Counters::default());
        let receiver = {
            let (shared, got) = (shared.clone(), got.clone());
            std::thread::spawn(move || udp_recv(&rx, LEN, false, false, &shared, &got))
        };
        let sender = {
            let (shared, sent) = (shared.clone(), sent.clone());
            // 40 Mbit/s: 50,000 datagrams/s, which loopback drops none of.
            let pacer = udp_schedule(40_000_000, LEN, false).map(Pacer::Own);
            std::thread::spawn(move || {
                udp_send(&tx, LEN, false, false, false, &shared, &sent, pacer)
            })
        };
        // Three budgets' worth, bounded at 10 s.
        let t0 = Instant::now();
        while sent.packets.load(Relaxed) < 3_000 && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(shared.budget_spent.load(Relaxed), "the budget was spent");
        assert!(
            !sent.done.load(Relaxed),
            "the sender stopped at its budget: {} datagrams",
            sent.packets.load(Relaxed)
        );
        shared.stop.store(true, Relaxed);
        sender.join().expect("sender");
        let n = sent.packets.load(Relaxed);
        assert!(n >= 3_000, "{n} datagrams sent");
        assert_eq!(sent.bytes.load(Relaxed), n * LEN as u64);
        for _ in 0..100 {
            if got.packets.load(Relaxed) >= n {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        shared.stop_receivers.store(true, Relaxed);
        receiver.join().expect("receiver");
        assert_eq!(got.packets.load(Relaxed), n);
        assert_eq!(got.lost.load(Relaxed), 0);
        assert_eq!(got.bytes.load(Relaxed), n * LEN as u64);
    }

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

    /// Receivers that land their bytes in one shared place at the same time
    /// still count every byte of their own stream, and a sender's block
    /// shared by several streams sends exact counts on each.
    #[test]
    fn shared_landing_place_and_block_keep_each_streams_count() {
        const N: usize = 20_000_033;
        let sink = Arc::new(DiscardBuf::new(128 * 1024).expect("sink"));
        let block = Arc::new(payload_block(128 * 1024, false));
        let mut rx = Vec::new();
        for k in 0..3 {
            let (client, server) = tcp_pair();
            let n = N + k * 4099;
            let block = Arc::clone(&block);
            let w = std::thread::spawn(move || {
                let shared = StopAndBudget::new(Some(n as u64), AtBudget::Stop);
                let c = Counters::default();
                tcp_send(
                    &TcpStream::from(client),
                    TcpSource::Copy(block),
                    &shared,
                    &c,
                    None,
                    false,
                );
                c.bytes.load(Relaxed)
            });
            let sink = Arc::clone(&sink);
            rx.push(std::thread::spawn(move || {
                let shared = StopAndBudget::new(None, AtBudget::Stop);
                let c = Counters::default();
                let how = TcpRecv {
                    len: 128 * 1024,
                    skip_copy: false,
                    clamp: None,
                    lowat: false,
                    file: None,
                };
                let drain = Drain::UntilEof {
                    limit: Duration::from_secs(5),
                };
                tcp_recv(
                    &TcpStream::from(server),
                    how,
                    Some(&sink),
                    &shared,
                    &c,
                    drain,
                );
                let sent = w.join().expect("writer");
                assert_eq!(sent, n as u64);
                (n, c.bytes.load(Relaxed))
            }));
        }
        for h in rx {
            let (want, got) = h.join().expect("receiver");
            assert_eq!(got, want as u64);
        }
    }

    /// The receiver with its low-water tuner (and with MSG_TRUNC) still
    /// counts every byte to EOF.
    #[test]
    fn tcp_receiver_counts_exactly_with_lowat() {
        for skip in [false, true] {
            const N: usize = 50_000_017;
            let (client, server) = tcp_pair();
            let w = spawn_tcp_writer(client, N);
            let shared = StopAndBudget::new(None, AtBudget::Stop);
            let c = Counters::default();
            let server = TcpStream::from(server);
            let how = TcpRecv {
                len: 128 * 1024,
                skip_copy: skip,
                clamp: None,
                lowat: true,
                file: None,
            };
            let drain = Drain::UntilEof {
                limit: Duration::from_secs(5),
            };
            tcp_recv(&server, how, None, &shared, &c, drain);
            w.join().expect("writer");
            assert_eq!(c.bytes.load(Relaxed), N as u64, "skip_copy={skip}");
        }
    }

    /// Every TCP source sends exactly a budget that is not a block multiple,
    /// a server's (`AtBudget::UdpUntilStopped`) as well: TCP loses nothing.
    #[test]
    fn tcp_sources_spend_a_budget_exactly() {
        const N: u64 = 3 * 128 * 1024 + 4321;
        let buf = payload(128 * 1024, false);
        let sources = || {
            [
                TcpSource::Copy(Arc::new(PageBuf::from_slice(&buf))),
                TcpSource::SendFile(MemfdSource::new(&buf).expect("memfd")),
                TcpSource::Splice(MemfdSource::new(&buf).expect("memfd")),
                TcpSource::Tee(TeeSource::new(&buf).expect("tee")),
            ]
        };
        let runs = [AtBudget::Stop, AtBudget::UdpUntilStopped]
            .into_iter()
            .flat_map(|at| sources().map(|src| (at, src)));
        for (at, src) in runs {
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
            let shared = StopAndBudget::new(Some(N), at);
            let c = Counters::default();
            tcp_send(&TcpStream::from(client), src, &shared, &c, None, false);
            assert_eq!(c.bytes.load(Relaxed), N);
            assert_eq!(reader.join().expect("reader"), N);
        }
    }

    /// A running sender answers a TCP_INFO request between blocks; a request
    /// nobody answers gives up at its deadline.
    #[test]
    fn info_mailbox_is_answered_by_the_sending_thread() {
        let (client, server) = tcp_pair();
        let reader = std::thread::spawn(move || {
            let s = TcpStream::from(server);
            let mut b = vec![0u8; 64 * 1024];
            // Bounded by the sender's stop and the socket's read timeout.
            while let Ok(n) = read_some(s.as_fd(), &mut b) {
                if n == 0 {
                    break;
                }
            }
        });
        let shared = StopAndBudget::new(None, AtBudget::Stop);
        let c = Counters::default();
        let client = TcpStream::from(client);
        let src = TcpSource::Copy(Arc::new(PageBuf::from_slice(&payload(64 * 1024, false))));
        std::thread::scope(|scope| {
            scope.spawn(|| tcp_send(&client, src, &shared, &c, None, false));
            for _ in 0..3 {
                let ticket = c.info.request();
                let got = c
                    .info
                    .collect(ticket, Instant::now() + Duration::from_secs(5));
                let info = got.expect("the sender answers");
                assert!(info.snd_mss > 0, "{info:?}");
            }
            shared.stop.store(true, Relaxed);
        });
        assert!(c.bytes.load(Relaxed) > 0);
        reader.join().expect("reader");

        let idle = crate::datathread::InfoMailbox::default();
        let ticket = idle.request();
        let t0 = Instant::now();
        assert!(idle
            .collect(ticket, t0 + Duration::from_millis(20))
            .is_none());
        assert!(t0.elapsed() >= Duration::from_millis(20));
    }
}
