//! Byte-stream system calls: read/write/recv/send, the socket error queue,
//! and the file-to-socket paths (`memfd_create`, `sendfile`, `splice`).
//!
//! None of these allocate; they are meant to be called once per block.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use super::{cvt, cvt_size};

/// `SO_EE_ORIGIN_ZEROCOPY` from `include/uapi/linux/errqueue.h` (not in `libc`).
pub const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
/// `SO_EE_CODE_ZEROCOPY_COPIED` from `include/uapi/linux/errqueue.h`: the
/// kernel fell back to copying the data (always the case over loopback).
pub const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;

/// `write(2)`: writes some prefix of `buf`, returning its length.
pub fn write(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes.
    cvt_size(unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) })
}

/// `read(2)`: fills some prefix of `buf`, returning its length (0 at EOF).
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
    cvt_size(unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) })
}

/// `send(2)` with explicit flags (e.g. `MSG_ZEROCOPY`, `MSG_DONTWAIT`).
///
/// With `MSG_ZEROCOPY` the kernel keeps reading `buf`'s pages after this
/// returns; that does not break Rust's aliasing rules (the kernel pins the
/// pages and only reads them), but the *bytes sent* are whatever the pages
/// hold at transmit time, so the caller must not rewrite `buf` until the
/// completion arrives on the error queue.
pub fn send_flags(fd: BorrowedFd<'_>, buf: &[u8], flags: libc::c_int) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the call.
    cvt_size(unsafe { libc::send(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len(), flags) })
}

/// `recv(2)` with `MSG_DONTWAIT`: what has arrived, or `WouldBlock` at once.
pub fn recv_nowait(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
    cvt_size(unsafe {
        libc::recv(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT,
        )
    })
}

/// `recv(fd, NULL, len, MSG_TRUNC)`: on a TCP socket the kernel consumes up
/// to `len` bytes without copying them anywhere and returns the count.
///
/// On a datagram socket `MSG_TRUNC` means something else (report the real
/// length) and the kernel would try to copy into the NULL buffer; it then
/// fails with `EFAULT`, which is an error, not memory unsafety, because the
/// NULL page is never ours.
pub fn recv_trunc(fd: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
    // SAFETY: the buffer pointer is NULL, which the kernel validates as a
    // user address and never resolves to memory owned by this process.
    cvt_size(unsafe { libc::recv(fd.as_raw_fd(), std::ptr::null_mut(), len, libc::MSG_TRUNC) })
}

/// `sendfile(2)` from `file` at `*offset` to `sock`; advances `*offset` by
/// the number of bytes sent and returns it.
pub fn sendfile(
    sock: BorrowedFd<'_>,
    file: BorrowedFd<'_>,
    offset: &mut libc::off_t,
    count: usize,
) -> io::Result<usize> {
    // SAFETY: `offset` is a live, exclusive `off_t` the kernel reads and updates.
    cvt_size(unsafe { libc::sendfile(sock.as_raw_fd(), file.as_raw_fd(), offset, count) })
}

/// `splice(2)` between two descriptors, one of which must be a pipe.
/// `off_in`/`off_out` are file offsets for the non-pipe side (`None` for a
/// pipe or a socket) and are advanced by the kernel.
pub fn splice(
    fd_in: BorrowedFd<'_>,
    off_in: Option<&mut libc::loff_t>,
    fd_out: BorrowedFd<'_>,
    off_out: Option<&mut libc::loff_t>,
    len: usize,
    flags: libc::c_uint,
) -> io::Result<usize> {
    let off_in = off_in.map_or(std::ptr::null_mut(), |o| o as *mut libc::loff_t);
    let off_out = off_out.map_or(std::ptr::null_mut(), |o| o as *mut libc::loff_t);
    // SAFETY: each offset pointer is NULL or derived from a live exclusive
    // reference that outlives the call; no user buffers are involved.
    cvt_size(unsafe {
        libc::splice(
            fd_in.as_raw_fd(),
            off_in,
            fd_out.as_raw_fd(),
            off_out,
            len,
            flags,
        )
    })
}

/// `tee(2)`: duplicates up to `len` bytes from the pipe `fd_in` into the
/// pipe `fd_out` without consuming them (page references, no copy).
pub fn tee(
    fd_in: BorrowedFd<'_>,
    fd_out: BorrowedFd<'_>,
    len: usize,
    flags: libc::c_uint,
) -> io::Result<usize> {
    // SAFETY: two descriptors and plain integers; no user memory is involved.
    cvt_size(unsafe { libc::tee(fd_in.as_raw_fd(), fd_out.as_raw_fd(), len, flags) })
}

/// `memfd_create(name, MFD_CLOEXEC)`: an anonymous in-memory file.
pub fn memfd_create(name: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: `name` is a valid NUL-terminated string for the call.
    let fd = cvt(unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) })?;
    // SAFETY: `fd` was just returned by the kernel and nobody else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `pipe2(O_CLOEXEC)`: returns `(read end, write end)`.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors the kernel writes.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `fcntl(F_SETPIPE_SZ)`: asks for a pipe buffer of `size` bytes and
/// returns the size granted (rounded up to a power-of-two page count).
pub fn set_pipe_size(pipe: BorrowedFd<'_>, size: usize) -> io::Result<usize> {
    let size = libc::c_int::try_from(size)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pipe size too large"))?;
    // SAFETY: F_SETPIPE_SZ takes an int argument and touches no user memory.
    let granted = cvt(unsafe { libc::fcntl(pipe.as_raw_fd(), libc::F_SETPIPE_SZ, size) })?;
    Ok(granted as usize)
}

/// `poll(2)` on one descriptor; returns the `revents` (0 on timeout).
/// `timeout_ms < 0` waits forever, so callers on the data path pass a bound.
pub fn poll_one(fd: BorrowedFd<'_>, events: libc::c_short, timeout_ms: i32) -> io::Result<i16> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    };
    // SAFETY: `pfd` is one valid `pollfd` and we pass nfds = 1.
    let n = cvt(unsafe { libc::poll(&mut pfd, 1, timeout_ms) })?;
    Ok(if n == 0 { 0 } else { pfd.revents })
}

/// `poll(2)` on several descriptors: `set` holds each descriptor with the
/// events wanted; on return the second element of each pair holds its
/// `revents`. Returns how many descriptors are ready (0 on timeout).
pub fn poll_many(
    set: &mut [(BorrowedFd<'_>, libc::c_short)],
    timeout_ms: i32,
) -> io::Result<usize> {
    let mut pfds: Vec<libc::pollfd> = set
        .iter()
        .map(|(fd, events)| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: *events,
            revents: 0,
        })
        .collect();
    let nfds = libc::nfds_t::try_from(pfds.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "too many descriptors"))?;
    // SAFETY: `pfds` is a valid array of `nfds` `pollfd`s for the call.
    let n = cvt(unsafe { libc::poll(pfds.as_mut_ptr(), nfds, timeout_ms) })?;
    for (slot, p) in set.iter_mut().zip(&pfds) {
        slot.1 = p.revents;
    }
    Ok(n as usize)
}

/// One `struct sock_extended_err` read from a socket's error queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtendedErr {
    /// `ee_errno`: 0 for zerocopy completions.
    pub errno: u32,
    /// `ee_origin`, e.g. [`SO_EE_ORIGIN_ZEROCOPY`].
    pub origin: u8,
    /// `ee_type`.
    pub kind: u8,
    /// `ee_code`, e.g. [`SO_EE_CODE_ZEROCOPY_COPIED`].
    pub code: u8,
    /// `ee_info`: first id of a zerocopy completion range.
    pub info: u32,
    /// `ee_data`: last id (inclusive) of a zerocopy completion range.
    pub data: u32,
}

/// Reads one message from the socket's error queue without blocking
/// (`recvmsg(MSG_ERRQUEUE | MSG_DONTWAIT)`).
///
/// Returns `Ok(None)` when the queue is empty, or when the message carried
/// no `IP_RECVERR` / `IPV6_RECVERR` control message.
pub fn recv_errqueue(fd: BorrowedFd<'_>) -> io::Result<Option<ExtendedErr>> {
    // u64 words give the control buffer the alignment `cmsghdr` needs; 16
    // words hold a `sock_extended_err` plus an offender address with room.
    let mut control = [0u64; 16];
    // SAFETY: `msghdr` is a plain C struct; all-zero (null pointers, zero
    // lengths) is a valid value, and it also zeroes any private padding.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    let flags = libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT;
    // SAFETY: `msg` points only at `control`, which lives across the call and
    // is `msg_controllen` bytes long; there is no data iovec.
    let ret = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, flags) };
    if ret < 0 {
        let err = io::Error::last_os_error();
        return if err.kind() == io::ErrorKind::WouldBlock {
            Ok(None)
        } else {
            Err(err)
        };
    }
    // SAFETY: `msg` was filled by a successful recvmsg, so its control
    // pointer and (kernel-updated) length describe initialized bytes of
    // `control`; CMSG_FIRSTHDR/NXTHDR only walk within that range.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    while !cmsg.is_null() {
        // SAFETY: `cmsg` is non-null and inside `control` (see above).
        let hdr = unsafe { &*cmsg };
        let is_recverr = (hdr.cmsg_level == libc::SOL_IP && hdr.cmsg_type == libc::IP_RECVERR)
            || (hdr.cmsg_level == libc::SOL_IPV6 && hdr.cmsg_type == libc::IPV6_RECVERR);
        let need = std::mem::size_of::<libc::sock_extended_err>();
        // SAFETY: CMSG_LEN is a pure size computation.
        let min_len = unsafe { libc::CMSG_LEN(need as u32) } as usize;
        if is_recverr && hdr.cmsg_len as usize >= min_len {
            // SAFETY: the length check above guarantees `need` bytes of data
            // after the header, inside `control`; read_unaligned because the
            // data is only guaranteed `cmsghdr` alignment.
            let ee: libc::sock_extended_err =
                unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast()) };
            return Ok(Some(ExtendedErr {
                errno: ee.ee_errno,
                origin: ee.ee_origin,
                kind: ee.ee_type,
                code: ee.ee_code,
                info: ee.ee_info,
                data: ee.ee_data,
            }));
        }
        // SAFETY: same invariant as CMSG_FIRSTHDR; returns null past the end.
        cmsg = unsafe { libc::CMSG_NXTHDR(&msg, cmsg) };
    }
    Ok(None)
}
