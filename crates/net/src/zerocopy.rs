//! Sending TCP payload without copying it per block: `MSG_ZEROCOPY`
//! ([`ZeroCopySender`]), file-backed `sendfile` / `splice` from a memfd
//! ([`MemfdSource`], what `iperf3 -Z` does with a temporary file), and
//! `tee` / `splice` from a pipe that holds the block's pages ([`TeeSource`],
//! what `-Z` uses).
//!
//! This module owns the buffer-lifetime bookkeeping these paths need. With
//! `MSG_ZEROCOPY` the kernel transmits straight from user pages after
//! `send` returns and later reports, on the socket's error queue, which
//! sends it is done with; a buffer is rewritten only after that report.
//! With `sendfile`/`splice`/`tee` the payload lives in page cache once and
//! the question never arises.
//!
//! Over loopback the kernel must copy anyway when it hands the data to the
//! receiving socket (completions come back flagged "copied"), so these
//! paths are there to be measured against plain `write`, not assumed faster.
//! None of the per-block methods allocate, log or read a clock.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use crate::sys;

/// Why a [`ZeroCopySender`] could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ZeroCopyError {
    /// The payload block was empty.
    #[error("zerocopy payload is empty")]
    EmptyPayload,
    /// `slots` or `max_outstanding` was 0.
    #[error("zerocopy sender needs at least one slot and one outstanding send (got {slots} slots, {max_outstanding} outstanding)")]
    NoCapacity {
        /// Requested number of buffers.
        slots: usize,
        /// Requested bound on in-flight sends.
        max_outstanding: usize,
    },
    /// `setsockopt(SO_ZEROCOPY)` failed (kernel older than 4.14, or not TCP).
    #[error("enabling SO_ZEROCOPY: {0}")]
    Enable(#[source] io::Error),
}

/// Counters kept by a [`ZeroCopySender`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZeroCopyStats {
    /// Successful `MSG_ZEROCOPY` sends (each gets one completion id).
    pub sends: u64,
    /// Send ids reported complete.
    pub completed: u64,
    /// Completion ranges whose pages the kernel copied instead
    /// (`SO_EE_CODE_ZEROCOPY_COPIED`); every one of them on loopback.
    pub copied_ranges: u64,
    /// Completion notifications read from the error queue.
    pub notifications: u64,
}

/// One in-flight send: its completion id and the slot it reads from.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    id: u32,
    slot: usize,
    done: bool,
}

/// Sends a fixed payload block over one TCP socket with `MSG_ZEROCOPY`,
/// from a ring of `slots` copies of it, reusing a slot only after the
/// kernel has reported every send from it complete.
///
/// Call order: [`ZeroCopySender::new`] (enables `SO_ZEROCOPY`), then
/// [`send`](Self::send) repeatedly with the *same* socket, then
/// [`drain`](Self::drain) before dropping. Completion ids are per socket,
/// so a sender must never be used with a second socket.
///
/// Dropping the sender without draining is memory-safe (the kernel pins
/// the pages it still reads), but if the allocation is reused the peer may
/// receive whatever is written there.
#[derive(Debug)]
pub struct ZeroCopySender {
    /// `slots * block` bytes; slot `i` is `buf[i * block..(i + 1) * block]`.
    buf: Vec<u8>,
    block: usize,
    /// Outstanding sends referring to each slot.
    refs: Vec<u32>,
    /// Ring of in-flight sends, oldest at `head`.
    ring: Vec<InFlight>,
    head: usize,
    len: usize,
    /// The id the kernel will give the next successful zerocopy send.
    next_id: u32,
    cur: usize,
    offset: usize,
    reap_timeout_ms: i32,
    fd: RawFd,
    stats: ZeroCopyStats,
}

/// Whether wrapping id `id` lies in the inclusive range `[lo, hi]`.
fn in_range(id: u32, lo: u32, hi: u32) -> bool {
    id.wrapping_sub(lo) <= hi.wrapping_sub(lo)
}

impl ZeroCopySender {
    /// Enables `SO_ZEROCOPY` on `sock` and copies `payload` into `slots`
    /// buffers. At most `max_outstanding` sends may await completion; when
    /// the bound or the next slot is busy, [`send`](Self::send) waits up to
    /// `reap_timeout_ms` for completions (then fails with `TimedOut`).
    pub fn new(
        sock: BorrowedFd<'_>,
        payload: &[u8],
        slots: usize,
        max_outstanding: usize,
        reap_timeout_ms: u16,
    ) -> Result<Self, ZeroCopyError> {
        if payload.is_empty() {
            return Err(ZeroCopyError::EmptyPayload);
        }
        if slots == 0 || max_outstanding == 0 {
            return Err(ZeroCopyError::NoCapacity {
                slots,
                max_outstanding,
            });
        }
        crate::sockopt::set_zerocopy(sock, true).map_err(ZeroCopyError::Enable)?;
        let mut buf = Vec::with_capacity(slots * payload.len());
        for _ in 0..slots {
            buf.extend_from_slice(payload);
        }
        Ok(Self {
            buf,
            block: payload.len(),
            refs: vec![0; slots],
            ring: vec![
                InFlight {
                    id: 0,
                    slot: 0,
                    done: true
                };
                max_outstanding
            ],
            head: 0,
            len: 0,
            next_id: 0,
            cur: 0,
            offset: 0,
            reap_timeout_ms: reap_timeout_ms.into(),
            fd: sock.as_raw_fd(),
            stats: ZeroCopyStats::default(),
        })
    }

    /// Length of the payload block.
    pub fn block_len(&self) -> usize {
        self.block
    }

    /// Sends still awaiting their completion.
    pub fn outstanding(&self) -> usize {
        self.len
    }

    /// Counters so far.
    pub fn stats(&self) -> ZeroCopyStats {
        self.stats
    }

    /// Sends at most `limit` bytes of the rest of the current block (one
    /// `send(MSG_ZEROCOPY)`), returning the bytes accepted. Blocks follow
    /// each other seamlessly, so the stream is the payload repeated; pass
    /// `usize::MAX` for whole blocks, a smaller `limit` to stop at an exact
    /// byte count.
    ///
    /// Reaps completions first if the in-flight bound is reached or the
    /// slot to send from is still referenced. On `ENOBUFS` (the socket's
    /// `optmem` budget for notifications is full) it reaps and retries once.
    pub fn send(&mut self, sock: BorrowedFd<'_>, limit: usize) -> io::Result<usize> {
        debug_assert_eq!(sock.as_raw_fd(), self.fd, "one sender per socket");
        // Starting a block in a slot the kernel may still read: wait for it.
        let need_slot = self.offset == 0 && self.refs[self.cur] > 0;
        if self.len == self.ring.len() || need_slot {
            self.reap_until(sock, |s| {
                s.len < s.ring.len() && !(s.offset == 0 && s.refs[s.cur] > 0)
            })?;
        }
        let start = self.cur * self.block + self.offset;
        let end = (self.cur + 1) * self.block;
        let end = end.min(start.saturating_add(limit));
        let flags = libc::MSG_ZEROCOPY;
        let n = match sys::send_flags(sock, &self.buf[start..end], flags) {
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                // Wait for at least one completion to free notification memory.
                let before = self.len;
                self.reap_until(sock, |s| s.len < before || s.len == 0)?;
                // Reaping moved nothing this method relies on: same slice.
                sys::send_flags(sock, &self.buf[start..end], flags)?
            }
            other => other?,
        };
        if n > 0 {
            self.push(self.next_id, self.cur);
            self.next_id = self.next_id.wrapping_add(1);
            self.stats.sends += 1;
            self.offset += n;
            if self.offset == self.block {
                self.offset = 0;
                self.cur = (self.cur + 1) % self.refs.len();
            }
        }
        Ok(n)
    }

    /// Reads every completion already queued without blocking; returns how
    /// many notifications were processed.
    pub fn reap(&mut self, sock: BorrowedFd<'_>) -> io::Result<usize> {
        let mut count = 0;
        // Each notification covers at least one id, so there can be no
        // more useful ones than sends in flight; +1 lets us see EAGAIN.
        for _ in 0..=self.ring.len() {
            match sys::recv_errqueue(sock)? {
                Some(ee) if ee.origin == sys::SO_EE_ORIGIN_ZEROCOPY && ee.errno == 0 => {
                    self.complete(ee.info, ee.data, ee.code);
                    count += 1;
                }
                Some(ee) => {
                    // A real socket error (e.g. ICMP) on the error queue.
                    return Err(io::Error::from_raw_os_error(
                        i32::try_from(ee.errno).unwrap_or(libc::EIO),
                    ));
                }
                None => break,
            }
        }
        Ok(count)
    }

    /// Waits (bounded by the reap timeout per wait, and by the number of
    /// sends in flight overall) until nothing is outstanding.
    pub fn drain(&mut self, sock: BorrowedFd<'_>) -> io::Result<()> {
        self.reap_until(sock, |s| s.len == 0)
    }

    /// Reaps, waiting on `POLLERR` between attempts, until `done(self)`.
    fn reap_until(&mut self, sock: BorrowedFd<'_>, done: impl Fn(&Self) -> bool) -> io::Result<()> {
        // Every wait that returns makes progress (>= 1 id completes) or
        // times out, so in-flight count + 1 rounds is enough.
        for _ in 0..=self.ring.len() {
            self.reap(sock)?;
            if done(self) {
                return Ok(());
            }
            // Events 0: POLLERR (error queue non-empty) is always reported.
            let revents = sys::poll_one(sock, 0, self.reap_timeout_ms)?;
            if revents == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no MSG_ZEROCOPY completion within the reap timeout",
                ));
            }
        }
        self.reap(sock)?;
        if done(self) {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "MSG_ZEROCOPY completions did not free a buffer",
            ))
        }
    }

    fn push(&mut self, id: u32, slot: usize) {
        // Callers reap until len < capacity before sending.
        debug_assert!(self.len < self.ring.len());
        let at = (self.head + self.len) % self.ring.len();
        self.ring[at] = InFlight {
            id,
            slot,
            done: false,
        };
        self.len += 1;
        self.refs[slot] += 1;
    }

    /// Marks ids `[lo, hi]` complete and releases their slots.
    fn complete(&mut self, lo: u32, hi: u32, code: u8) {
        self.stats.notifications += 1;
        if code & sys::SO_EE_CODE_ZEROCOPY_COPIED != 0 {
            self.stats.copied_ranges += 1;
        }
        let cap = self.ring.len();
        for k in 0..self.len {
            let e = &mut self.ring[(self.head + k) % cap];
            if !e.done && in_range(e.id, lo, hi) {
                e.done = true;
                self.refs[e.slot] -= 1;
                self.stats.completed += 1;
            }
        }
        // Ranges normally arrive in order; out-of-order ones leave holes
        // that are skipped once everything before them is done.
        while self.len > 0 && self.ring[self.head].done {
            self.head = (self.head + 1) % cap;
            self.len -= 1;
        }
    }
}

/// A payload block stored once in a memfd, sent repeatedly with
/// `sendfile(2)` or `splice(2)` so user space never touches it again.
#[derive(Debug)]
pub struct MemfdSource {
    memfd: OwnedFd,
    block: usize,
    /// Next byte of the block to send (sendfile and splice-in share it).
    offset: libc::off_t,
    /// Pipe for `splice`, created on first use: (read end, write end).
    pipe: Option<(OwnedFd, OwnedFd)>,
    /// Bytes sitting in the pipe, spliced in but not yet out.
    in_pipe: usize,
}

impl MemfdSource {
    /// Creates the memfd and writes `payload` into it once.
    pub fn new(payload: &[u8]) -> io::Result<Self> {
        if payload.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "memfd payload is empty",
            ));
        }
        let memfd = sys::memfd_create(c"plumb-payload")?;
        let mut written = 0;
        // A memfd write only comes up short on ENOSPC-like errors, but loop
        // (bounded by the payload length) rather than assume it.
        while written < payload.len() {
            let n = sys::write(memfd.as_fd(), &payload[written..])?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            written += n;
        }
        Ok(Self {
            memfd,
            block: payload.len(),
            offset: 0,
            pipe: None,
            in_pipe: 0,
        })
    }

    /// Length of the payload block.
    pub fn block_len(&self) -> usize {
        self.block
    }

    /// The block offset after sending `n` more bytes from `offset`.
    fn advanced(offset: libc::off_t, block: usize, n: usize) -> libc::off_t {
        // offset < block and n <= block - offset, so this stays in range.
        let next = offset as usize + n;
        if next >= block {
            0
        } else {
            next as libc::off_t
        }
    }

    /// Bytes left in the current block, capped at `limit`.
    fn want(&self, limit: usize) -> usize {
        (self.block - self.offset as usize).min(limit)
    }

    /// Sends at most `limit` bytes of the rest of the current block with
    /// one `sendfile`; returns bytes sent. The stream is the payload repeated.
    pub fn sendfile(&mut self, sock: BorrowedFd<'_>, limit: usize) -> io::Result<usize> {
        let mut off = self.offset;
        let n = sys::sendfile(sock, self.memfd.as_fd(), &mut off, self.want(limit))?;
        self.offset = Self::advanced(self.offset, self.block, n);
        Ok(n)
    }

    /// Sends with `splice`: memfd → pipe, then pipe → socket (two calls per
    /// block; the first call per source also creates the pipe, the only
    /// allocation-like step). Bytes left in the pipe by a short socket
    /// splice are sent first next time. Returns bytes put on the socket,
    /// at most `limit`.
    ///
    /// Do not mix with [`sendfile`](Self::sendfile) while bytes are in the
    /// pipe, or the stream would be reordered.
    pub fn splice(&mut self, sock: BorrowedFd<'_>, limit: usize) -> io::Result<usize> {
        let (r, w) = match &self.pipe {
            Some(pipe) => pipe,
            None => {
                let (r, w) = sys::pipe()?;
                // A pipe holding a whole block lets one splice move it; if the
                // kernel refuses (pipe-max-size), the default 64 KiB works too.
                let _ = sys::set_pipe_size(w.as_fd(), self.block);
                self.pipe.insert((r, w))
            }
        };
        if self.in_pipe == 0 {
            let mut off = self.offset as libc::loff_t;
            let want = (self.block - self.offset as usize).min(limit);
            let n = sys::splice(
                self.memfd.as_fd(),
                Some(&mut off),
                w.as_fd(),
                None,
                want,
                libc::SPLICE_F_MOVE,
            )?;
            self.in_pipe = n;
            self.offset = Self::advanced(self.offset, self.block, n);
        }
        pipe_to_socket(r.as_fd(), sock, &mut self.in_pipe, limit)
    }
}

/// Splices up to `limit` of the `in_pipe` bytes waiting in the pipe `r` to
/// `sock`, with more to follow (`SPLICE_F_MORE`); takes what went out off
/// `in_pipe` and returns it.
fn pipe_to_socket(
    r: BorrowedFd<'_>,
    sock: BorrowedFd<'_>,
    in_pipe: &mut usize,
    limit: usize,
) -> io::Result<usize> {
    let n = sys::splice(
        r,
        None,
        sock,
        None,
        (*in_pipe).min(limit),
        libc::SPLICE_F_MOVE | libc::SPLICE_F_MORE,
    )?;
    *in_pipe -= n;
    Ok(n)
}

/// A payload block held as page references in a pipe and sent with `tee(2)`
/// and `splice(2)`, the `-Z` sender.
///
/// [`MemfdSource::splice`] looks every page of every block up in the
/// memfd's page cache again (`filemap_get_entry`, `shmem_get_folio`, the
/// xarray walk): a quarter of a `-Z` sender's CPU on loopback. Here the
/// block is spliced from the memfd into a *held* pipe once; each block after
/// that is a `tee` of the held pipe into a *work* pipe (a reference count per
/// page, no lookup) and a `splice` of the work pipe to the socket. The
/// memfd stays open: a page-cache pipe buffer stops confirming once its file
/// is gone.
#[derive(Debug)]
pub struct TeeSource {
    _memfd: OwnedFd,
    /// Holds the whole block; only ever duplicated, never drained.
    held: (OwnedFd, OwnedFd),
    /// Carries one duplicated block to the socket.
    work: (OwnedFd, OwnedFd),
    block: usize,
    /// Bytes in the work pipe not yet on the socket.
    in_pipe: usize,
}

impl TeeSource {
    /// Holds `payload` in a pipe. Fails where a pipe cannot hold a whole
    /// block (`/proc/sys/fs/pipe-max-size`) or `tee` is missing; the caller
    /// then sends with [`MemfdSource`].
    pub fn new(payload: &[u8]) -> io::Result<Self> {
        let MemfdSource { memfd, block, .. } = MemfdSource::new(payload)?;
        let held = pipe_of(block)?;
        let work = pipe_of(block)?;
        let mut filled = 0;
        // Each splice moves at least a page or fails, so a block takes at
        // most block / 4096 + 1 rounds; the bound only guards the loop.
        for _ in 0..=block {
            if filled == block {
                break;
            }
            let mut off = filled as libc::loff_t;
            let n = sys::splice(
                memfd.as_fd(),
                Some(&mut off),
                held.1.as_fd(),
                None,
                block - filled,
                0,
            )?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            filled += n;
        }
        if filled != block {
            return Err(io::Error::other("could not fill the payload pipe"));
        }
        Ok(Self {
            _memfd: memfd,
            held,
            work,
            block,
            in_pipe: 0,
        })
    }

    /// Length of the payload block.
    pub fn block_len(&self) -> usize {
        self.block
    }

    /// Sends at most `limit` bytes with one `splice` (and, when the work
    /// pipe is empty, one `tee` of the whole block before it); returns bytes
    /// put on the socket. The stream is the payload repeated: bytes a short
    /// splice leaves in the work pipe go first next time.
    pub fn send(&mut self, sock: BorrowedFd<'_>, limit: usize) -> io::Result<usize> {
        if self.in_pipe == 0 {
            let n = sys::tee(self.held.0.as_fd(), self.work.1.as_fd(), self.block, 0)?;
            // The work pipe is empty and holds a block, so anything short
            // would restart the payload mid-block.
            if n != self.block {
                return Err(io::Error::other(format!(
                    "tee duplicated {n} of {} bytes",
                    self.block
                )));
            }
            self.in_pipe = n;
        }
        pipe_to_socket(self.work.0.as_fd(), sock, &mut self.in_pipe, limit)
    }
}

/// A pipe whose buffer holds at least `bytes`.
fn pipe_of(bytes: usize) -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = sys::pipe()?;
    if sys::set_pipe_size(w.as_fd(), bytes)? < bytes {
        return Err(io::Error::other("pipe too small for the block"));
    }
    Ok((r, w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::read_some;
    use crate::testutil::{pattern, tcp_pair};
    use std::os::fd::OwnedFd;

    const BLOCK: usize = 128 * 1024;

    fn payload() -> Vec<u8> {
        (0..BLOCK as u64).map(pattern).collect()
    }

    /// Reads until EOF, checking every byte is the payload repeated; returns the count.
    fn spawn_checking_reader(fd: OwnedFd) -> std::thread::JoinHandle<usize> {
        std::thread::spawn(move || {
            let expect = payload();
            let mut buf = vec![0u8; 64 * 1024];
            let mut total = 0usize;
            // Bounded: each read returns >= 1 byte or EOF (or times out).
            for _ in 0..64 * 1024 * 1024 {
                let n = read_some(fd.as_fd(), &mut buf).expect("read");
                if n == 0 {
                    break;
                }
                for (i, &b) in buf[..n].iter().enumerate() {
                    let pos = (total + i) % BLOCK;
                    assert_eq!(b, expect[pos], "stream byte {}", total + i);
                }
                total += n;
            }
            total
        })
    }

    #[test]
    fn senders_can_move_to_a_sending_thread() {
        fn is_send<T: Send>() {}
        is_send::<ZeroCopySender>();
        is_send::<MemfdSource>();
        is_send::<crate::udp::UdpBatch>();
    }

    #[test]
    fn range_check_handles_wraparound() {
        assert!(in_range(5, 3, 7));
        assert!(!in_range(8, 3, 7));
        assert!(in_range(1, u32::MAX - 1, 2));
        assert!(in_range(u32::MAX, u32::MAX - 1, 2));
        assert!(!in_range(3, u32::MAX - 1, 2));
    }

    #[test]
    fn zerocopy_moves_exactly_n_bytes_and_reaps_every_completion() {
        const N: usize = 8 * BLOCK + 12_345;
        let (client, server) = tcp_pair();
        let reader = spawn_checking_reader(server);
        // 4 slots, 8 in flight: forces slot reuse and therefore reaping.
        let mut zc =
            ZeroCopySender::new(client.as_fd(), &payload(), 4, 8, 2_000).expect("zerocopy sender");
        let mut sent = 0;
        for _ in 0..N {
            if sent == N {
                break;
            }
            sent += zc.send(client.as_fd(), N - sent).expect("zerocopy send");
        }
        zc.drain(client.as_fd()).expect("drain");
        let stats = zc.stats();
        drop(client);
        assert_eq!(sent, N);
        assert_eq!(reader.join().expect("reader"), N);
        assert_eq!(zc.outstanding(), 0);
        assert!(stats.sends >= 9, "{stats:?}");
        assert_eq!(stats.completed, stats.sends, "{stats:?}");
        assert!(stats.notifications >= 1, "{stats:?}");
        eprintln!("zerocopy stats over loopback: {stats:?}");
    }

    #[test]
    fn zerocopy_rejects_empty_configuration() {
        let (client, _server) = tcp_pair();
        assert!(matches!(
            ZeroCopySender::new(client.as_fd(), &[], 1, 1, 10),
            Err(ZeroCopyError::EmptyPayload)
        ));
        assert!(matches!(
            ZeroCopySender::new(client.as_fd(), &[1], 0, 1, 10),
            Err(ZeroCopyError::NoCapacity { .. })
        ));
    }

    /// Sends exactly `n` bytes through `send(fd, limit)` calls, the i-th
    /// with `limit(i, left)`, to a reader that checks every byte is the
    /// payload repeated; asserts both counts.
    fn moves_exactly(
        n: usize,
        mut send: impl FnMut(BorrowedFd<'_>, usize) -> io::Result<usize>,
        limit: impl Fn(usize, usize) -> usize,
    ) {
        let (client, server) = tcp_pair();
        let reader = spawn_checking_reader(server);
        let mut sent = 0;
        for i in 0..n {
            if sent == n {
                break;
            }
            sent += send(client.as_fd(), limit(i, n - sent).min(n - sent)).expect("send");
        }
        drop(client);
        assert_eq!(sent, n);
        assert_eq!(reader.join().expect("reader"), n);
    }

    #[test]
    fn sendfile_moves_exactly_n_bytes() {
        let mut src = MemfdSource::new(&payload()).expect("memfd");
        moves_exactly(5 * BLOCK + 777, |fd, l| src.sendfile(fd, l), |_, left| left);
    }

    #[test]
    fn tee_moves_exactly_n_bytes_of_the_repeated_payload() {
        let mut src = TeeSource::new(&payload()).expect("tee source");
        // Every third call limited: splits blocks and leaves bytes in the work pipe.
        let limit = |i: usize, left: usize| if i % 3 == 0 { 50_000 } else { left };
        moves_exactly(7 * BLOCK + 9_999, |fd, l| src.send(fd, l), limit);
    }

    #[test]
    fn splice_moves_exactly_n_bytes() {
        let mut src = MemfdSource::new(&payload()).expect("memfd");
        moves_exactly(6 * BLOCK + 4_321, |fd, l| src.splice(fd, l), |_, left| left);
    }
}
