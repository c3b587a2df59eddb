//! `sendmmsg` / `recvmmsg` over caller-owned slot buffers, with the
//! `UDP_SEGMENT` (GSO), `UDP_GRO` and `SCM_TIMESTAMPNS` control messages.
//!
//! The header, iovec and control arrays live in a [`MmsgScratch`] allocated
//! once; each call only rewrites their pointers, so the per-batch path does
//! not allocate.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use super::cvt;

/// Control space per message, in `u64` words (so it is `cmsghdr`-aligned).
/// A received message may carry a `UDP_GRO` cmsg (`CMSG_SPACE(4)` = 24 bytes
/// on 64-bit) and an `SCM_TIMESTAMPNS` one (`CMSG_SPACE(16)` = 32 bytes);
/// 80 bytes holds both with room to spare. A cmsg that does not fit is cut
/// by the kernel (`MSG_CTRUNC`) and then simply not found.
const CONTROL_WORDS: usize = 10;

/// Preallocated `mmsghdr` / `iovec` / control arrays for up to `capacity`
/// messages per call.
pub struct MmsgScratch {
    hdrs: Vec<libc::mmsghdr>,
    iovs: Vec<libc::iovec>,
    control: Vec<u64>,
}

// SAFETY: the raw pointers inside `hdrs`/`iovs` are only meaningful during a
// single `sendmmsg`/`recvmmsg` call, which rewrites all of them first; between
// calls they are stale values that nothing dereferences, so moving the
// scratch to another thread cannot create shared access to anything.
unsafe impl Send for MmsgScratch {}

impl std::fmt::Debug for MmsgScratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MmsgScratch")
            .field("capacity", &self.hdrs.len())
            .finish()
    }
}

impl MmsgScratch {
    /// Allocates arrays for `capacity` messages per call.
    pub fn new(capacity: usize) -> Self {
        // SAFETY: `mmsghdr` and `iovec` are plain C structs for which all-zero
        // (null pointers, zero lengths) is a valid value.
        let (hdr, iov) = unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
        Self {
            hdrs: vec![hdr; capacity],
            iovs: vec![iov; capacity],
            control: vec![0; capacity * CONTROL_WORDS],
        }
    }

    /// Most messages one call can carry.
    pub fn capacity(&self) -> usize {
        self.hdrs.len()
    }
}

/// What `recvmmsg` reported for one slot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecvMeta {
    /// Bytes written into the slot.
    pub len: usize,
    /// `UDP_GRO` segment size when the kernel coalesced several datagrams
    /// of this size (the last may be shorter) into the slot.
    pub gro_segment: Option<u16>,
    /// `MSG_TRUNC` was set: the datagram was larger than the slot.
    pub truncated: bool,
    /// The kernel's receive time of the message (`SCM_TIMESTAMPNS`, the
    /// realtime clock) when the socket has `SO_TIMESTAMPNS` on.
    pub stamp: Option<std::time::Duration>,
}

fn invalid(msg: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// Sends `lens.len()` messages with one `sendmmsg`: message `i` is the first
/// `lens[i]` bytes of slot `i` (`buf[i * slot_size..]`).
///
/// With `gso_segment = Some(s)` each message carries a `UDP_SEGMENT` cmsg
/// and the kernel splits it into datagrams of `s` bytes (the last may be
/// shorter). `to` is the destination for unconnected sockets.
/// Returns how many messages the kernel accepted (may be fewer than asked).
pub fn sendmmsg(
    fd: BorrowedFd<'_>,
    scratch: &mut MmsgScratch,
    buf: &[u8],
    slot_size: usize,
    lens: &[usize],
    gso_segment: Option<u16>,
    to: Option<&socket2::SockAddr>,
) -> io::Result<usize> {
    let n = lens.len();
    if n > scratch.capacity() {
        return Err(invalid("more messages than the batch capacity"));
    }
    let fits = match n.checked_mul(slot_size) {
        Some(need) => slot_size > 0 && need <= buf.len(),
        None => false,
    };
    if !fits {
        return Err(invalid("slots do not fit in the buffer"));
    }
    if lens.iter().any(|&l| l > slot_size) {
        return Err(invalid("message longer than its slot"));
    }
    // SAFETY: CMSG_SPACE/CMSG_LEN are pure size computations.
    let (space, cmsg_len) = unsafe {
        (
            libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) as usize,
            libc::CMSG_LEN(std::mem::size_of::<u16>() as u32),
        )
    };
    debug_assert!(space <= CONTROL_WORDS * 8);
    let (name, namelen) = match to {
        Some(addr) => (addr.as_ptr() as *mut libc::c_void, addr.len()),
        None => (std::ptr::null_mut(), 0),
    };
    // Write the iovecs and clear the control words first, then take each
    // array's base pointer exactly once: no later `&mut` to an element can
    // invalidate the pointers the headers hold.
    for (i, (iov, &len)) in scratch.iovs.iter_mut().zip(lens).enumerate() {
        // The kernel only reads through iov_base for a send; the `*mut` is
        // the C type's spelling, not a licence to write.
        iov.iov_base = buf[i * slot_size..].as_ptr() as *mut libc::c_void;
        iov.iov_len = len;
    }
    if gso_segment.is_some() {
        scratch.control[..n * CONTROL_WORDS].fill(0);
    }
    let iovs = scratch.iovs.as_mut_ptr();
    let control = scratch.control.as_mut_ptr();
    for (i, hdr) in scratch.hdrs[..n].iter_mut().enumerate() {
        hdr.msg_len = 0;
        hdr.msg_hdr.msg_name = name;
        hdr.msg_hdr.msg_namelen = namelen;
        hdr.msg_hdr.msg_iov = iovs.wrapping_add(i);
        hdr.msg_hdr.msg_iovlen = 1;
        hdr.msg_hdr.msg_flags = 0;
        match gso_segment {
            Some(seg) => {
                hdr.msg_hdr.msg_control = control.wrapping_add(i * CONTROL_WORDS).cast();
                hdr.msg_hdr.msg_controllen = space as _;
                // SAFETY: the header points at this message's CONTROL_WORDS
                // u64s of `scratch.control` (in bounds: i < n <= capacity),
                // aligned for `cmsghdr` and at least `space` bytes, so
                // FIRSTHDR is non-null and header plus 2 data bytes fit.
                unsafe {
                    let cmsg = libc::CMSG_FIRSTHDR(&hdr.msg_hdr);
                    (*cmsg).cmsg_level = libc::SOL_UDP;
                    (*cmsg).cmsg_type = libc::UDP_SEGMENT;
                    (*cmsg).cmsg_len = cmsg_len as _;
                    std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), seg);
                }
            }
            None => {
                hdr.msg_hdr.msg_control = std::ptr::null_mut();
                hdr.msg_hdr.msg_controllen = 0;
            }
        }
    }
    let vlen = libc::c_uint::try_from(n).map_err(|_| invalid("too many messages"))?;
    // SAFETY: headers 0..n point at iovecs in `scratch.iovs`, which point into
    // `buf` within bounds checked above; control pointers are null or into
    // `scratch.control`; `to` outlives the call. All live until it returns.
    let sent = cvt(unsafe { libc::sendmmsg(fd.as_raw_fd(), scratch.hdrs.as_mut_ptr(), vlen, 0) })?;
    Ok(sent as usize)
}

/// Receives up to `meta.len()` messages (bounded by the scratch capacity
/// and the slots in `buf`) with one `recvmmsg`, message `i` into slot `i`.
///
/// `flags` is passed through: `MSG_WAITFORONE` blocks (up to the socket's
/// `SO_RCVTIMEO`) for the first message and then takes what is queued;
/// `MSG_DONTWAIT` never blocks. Returns the number of messages received;
/// `meta[..n]` describes them.
pub fn recvmmsg(
    fd: BorrowedFd<'_>,
    scratch: &mut MmsgScratch,
    buf: &mut [u8],
    slot_size: usize,
    meta: &mut [RecvMeta],
    flags: libc::c_int,
) -> io::Result<usize> {
    if slot_size == 0 {
        return Err(invalid("zero slot size"));
    }
    let n = meta
        .len()
        .min(scratch.capacity())
        .min(buf.len() / slot_size);
    if n == 0 {
        return Err(invalid("no room for any message"));
    }
    // Base pointers taken once, as in `sendmmsg`; offsets stay in bounds
    // because i < n <= min(capacity, buf.len() / slot_size).
    let base = buf.as_mut_ptr();
    let iovs = scratch.iovs.as_mut_ptr();
    let control = scratch.control.as_mut_ptr();
    for i in 0..n {
        let iov = libc::iovec {
            iov_base: base.wrapping_add(i * slot_size).cast(),
            iov_len: slot_size,
        };
        // SAFETY: `iovs` points at `scratch.iovs`, which has capacity >= n
        // initialized elements; nothing else borrows that vector meanwhile.
        unsafe { iovs.add(i).write(iov) };
        let hdr = &mut scratch.hdrs[i];
        hdr.msg_len = 0;
        hdr.msg_hdr.msg_name = std::ptr::null_mut();
        hdr.msg_hdr.msg_namelen = 0;
        hdr.msg_hdr.msg_iov = iovs.wrapping_add(i);
        hdr.msg_hdr.msg_iovlen = 1;
        hdr.msg_hdr.msg_control = control.wrapping_add(i * CONTROL_WORDS).cast();
        hdr.msg_hdr.msg_controllen = (CONTROL_WORDS * std::mem::size_of::<u64>()) as _;
        hdr.msg_hdr.msg_flags = 0;
    }
    let vlen = libc::c_uint::try_from(n).map_err(|_| invalid("too many messages"))?;
    // SAFETY: as for sendmmsg, every pointer in headers 0..n refers to
    // `buf` slots or `scratch.control` ranges of the stated lengths, all
    // exclusively borrowed for the call; the timeout pointer is null.
    let got = cvt(unsafe {
        libc::recvmmsg(
            fd.as_raw_fd(),
            scratch.hdrs.as_mut_ptr(),
            vlen,
            flags,
            std::ptr::null_mut(),
        )
    })? as usize;
    for (hdr, m) in scratch.hdrs[..got].iter().zip(meta.iter_mut()) {
        let (gro_segment, stamp) = received_cmsgs(&hdr.msg_hdr);
        *m = RecvMeta {
            len: (hdr.msg_len as usize).min(slot_size),
            gro_segment,
            truncated: hdr.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
            stamp,
        };
    }
    Ok(got)
}

/// Finds the `UDP_GRO` cmsg (an `int` segment size) and the
/// `SCM_TIMESTAMPNS` cmsg (a `timespec`) in a received header.
fn received_cmsgs(msg: &libc::msghdr) -> (Option<u16>, Option<std::time::Duration>) {
    let (mut seg, mut stamp) = (None, None);
    // SAFETY: pure size computations.
    let (int_len, ts_len) = unsafe {
        (
            libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize,
            libc::CMSG_LEN(std::mem::size_of::<libc::timespec>() as u32) as usize,
        )
    };
    // SAFETY: `msg` was just filled by recvmmsg; its control pointer and the
    // kernel-updated length describe bytes inside `scratch.control`, and the
    // CMSG macros only walk within that range.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(msg) };
    while !cmsg.is_null() {
        // SAFETY: non-null and inside the control buffer (see above).
        let hdr = unsafe { &*cmsg };
        let len = hdr.cmsg_len as usize;
        if hdr.cmsg_level == libc::SOL_UDP && hdr.cmsg_type == libc::UDP_GRO && len >= int_len {
            // SAFETY: the length check guarantees an int of data in bounds.
            let s: libc::c_int = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast()) };
            seg = u16::try_from(s).ok().filter(|&s| s > 0);
        } else if hdr.cmsg_level == libc::SOL_SOCKET
            && hdr.cmsg_type == libc::SCM_TIMESTAMPNS
            && len >= ts_len
        {
            // SAFETY: the length check guarantees a timespec of data in bounds.
            let ts: libc::timespec =
                unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast()) };
            if let (Ok(sec), Ok(nsec)) = (u64::try_from(ts.tv_sec), u32::try_from(ts.tv_nsec)) {
                if nsec < 1_000_000_000 {
                    stamp = Some(std::time::Duration::new(sec, nsec));
                }
            }
        }
        // SAFETY: same invariant as CMSG_FIRSTHDR.
        cmsg = unsafe { libc::CMSG_NXTHDR(msg, cmsg) };
    }
    (seg, stamp)
}
