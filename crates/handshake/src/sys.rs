//! The only `unsafe` code in plumb-handshake: one datagram from an IPv6 raw
//! socket with what the kernel strips from it, the sender's address and the
//! hop limit it arrived with (an `IPV6_HOPLIMIT` control message, asked for
//! with `IPV6_RECVHOPLIMIT`). An IPv6 raw socket hands over the payload
//! only, so the SYN path's TTL comes from here.
//!
//! A safe signature; each `unsafe` block says why the pointers it hands the
//! kernel are valid for the length it passes.
#![allow(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::io;
use std::net::Ipv6Addr;
use std::os::fd::{AsRawFd, BorrowedFd};

/// What [`recv_hoplimit`] read besides the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// Bytes written to the buffer.
    pub len: usize,
    /// The sender.
    pub from: Ipv6Addr,
    /// The hop limit as it arrived, when the control message came.
    pub hop_limit: Option<u8>,
}

/// `recvmsg(2)` of one datagram into `buf`, with its sender and hop limit.
pub fn recv_hoplimit(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<Received> {
    // u64 words give the control buffer the alignment `cmsghdr` needs; 8
    // words hold one int-sized control message with room.
    let mut control = [0u64; 8];
    // SAFETY: `sockaddr_in6` is a plain C struct; all-zero is a valid value.
    let mut from: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: as for `from`: all-zero (null pointers, zero lengths) is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = std::ptr::addr_of_mut!(from).cast();
    msg.msg_namelen = std::mem::size_of_val(&from) as _;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: `msg` points at `from`, `iov` (over `buf`) and `control`, all
    // alive across the call, each with its true length.
    let ret = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, 0) };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut hop_limit = None;
    // SAFETY: `msg` was filled by a successful recvmsg, so its control
    // pointer and (kernel-updated) length describe initialized bytes of
    // `control`; CMSG_FIRSTHDR/NXTHDR only walk within that range.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    while !cmsg.is_null() {
        // SAFETY: `cmsg` is non-null and inside `control` (see above).
        let hdr = unsafe { &*cmsg };
        // SAFETY: CMSG_LEN is a pure size computation.
        let min_len = unsafe { libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) };
        if hdr.cmsg_level == libc::IPPROTO_IPV6
            && hdr.cmsg_type == libc::IPV6_HOPLIMIT
            && hdr.cmsg_len as usize >= min_len as usize
        {
            // SAFETY: the length check guarantees an int of data after the
            // header, inside `control`; read_unaligned as the data is only
            // guaranteed `cmsghdr` alignment.
            let v: libc::c_int = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast()) };
            hop_limit = u8::try_from(v).ok();
        }
        // SAFETY: same invariant as CMSG_FIRSTHDR; returns null past the end.
        cmsg = unsafe { libc::CMSG_NXTHDR(&msg, cmsg) };
    }
    Ok(Received {
        len: ret as usize,
        from: Ipv6Addr::from(from.sin6_addr.s6_addr),
        hop_limit,
    })
}
