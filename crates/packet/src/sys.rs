//! The only `unsafe` code in plumb-packet: the packet socket's system calls.
//! The socket itself, its `sockaddr_ll` (bind, getsockname), the interface
//! index, the classic BPF program (`SO_ATTACH_FILTER` takes a pointer to
//! it), the options that are plain bytes or an `int` (`PACKET_VERSION`,
//! `PACKET_RX_RING`, `PACKET_ADD_MEMBERSHIP`, `PACKET_STATISTICS`), `poll`
//! and the mapping of the `PACKET_RX_RING` ring.
//!
//! Every function has a safe signature; each `unsafe` block says why what it
//! hands the kernel is valid.
#![allow(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

/// `SO_ATTACH_FILTER` (asm-generic/socket.h; the value on x86 and arm).
const SO_ATTACH_FILTER: libc::c_int = 26;
/// `TP_STATUS_KERNEL`: the block belongs to the kernel.
const TP_STATUS_KERNEL: u32 = 0;
/// `TP_STATUS_USER`: the block is full (or retired) and ours to read.
const TP_STATUS_USER: u32 = 1;
/// Where `block_status` sits in a `tpacket_block_desc` (after `version`
/// and `offset_to_priv`).
const BLOCK_STATUS_AT: usize = 8;

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// `socket(AF_PACKET, kind, protocol)` with close-on-exec; `protocol` 0
/// receives nothing until a bind names one. `PermissionDenied` without
/// `CAP_NET_RAW`.
pub fn packet_socket(kind: libc::c_int, protocol: u16) -> io::Result<OwnedFd> {
    // SAFETY: plain integer arguments; the kernel returns a new descriptor or -1.
    let fd = cvt(unsafe {
        libc::socket(
            libc::AF_PACKET,
            kind | libc::SOCK_CLOEXEC,
            libc::c_int::from(protocol.to_be()),
        )
    })?;
    // SAFETY: `fd` was just returned by socket() and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The index of the interface `name`; `None` when there is no such
/// interface (or the name cannot be one: empty, too long, a NUL inside).
pub fn ifindex(name: &str) -> Option<u32> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return None;
    }
    let c = CString::new(name).ok()?;
    // SAFETY: `c` is a NUL-terminated string that lives across the call.
    let index = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (index != 0).then_some(index)
}

fn sockaddr_ll(ifindex: u32, protocol: u16) -> io::Result<libc::sockaddr_ll> {
    // SAFETY: sockaddr_ll is a plain C struct; all-zero is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as libc::c_ushort;
    sll.sll_protocol = protocol.to_be();
    sll.sll_ifindex = libc::c_int::try_from(ifindex)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface index too large"))?;
    Ok(sll)
}

/// Binds the socket to interface `ifindex` for frames of `protocol`
/// (an `ETH_P_*` number, host order; 0 receives none).
pub fn bind(fd: BorrowedFd<'_>, ifindex: u32, protocol: u16) -> io::Result<()> {
    let sll = sockaddr_ll(ifindex, protocol)?;
    let len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    // SAFETY: `sll` is a valid sockaddr_ll of `len` bytes that outlives the call.
    cvt(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            std::ptr::from_ref(&sll).cast::<libc::sockaddr>(),
            len,
        )
    })?;
    Ok(())
}

/// The hardware type (`ARPHRD_*`) of the interface a bound packet socket
/// is bound to, from `getsockname`.
pub fn bound_hatype(fd: BorrowedFd<'_>) -> io::Result<u16> {
    // SAFETY: sockaddr_ll is a plain C struct; all-zero is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    // SAFETY: `sll` is writable for `len` bytes; the kernel writes at most
    // `len` and stores the length back into the live local `len`.
    cvt(unsafe {
        libc::getsockname(
            fd.as_raw_fd(),
            std::ptr::from_mut(&mut sll).cast::<libc::sockaddr>(),
            &mut len,
        )
    })?;
    Ok(sll.sll_hatype)
}

/// One classic BPF instruction, as `struct sock_filter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    /// Opcode.
    pub code: u16,
    /// Jump offset if true.
    pub jt: u8,
    /// Jump offset if false.
    pub jf: u8,
    /// The constant.
    pub k: u32,
}

/// Attaches the classic BPF `program` (`SO_ATTACH_FILTER`).
pub fn attach_filter(fd: BorrowedFd<'_>, program: &[Insn]) -> io::Result<()> {
    let mut insns: Vec<libc::sock_filter> = program
        .iter()
        .map(|i| libc::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect();
    let prog = libc::sock_fprog {
        len: u16::try_from(insns.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "filter too long"))?,
        filter: insns.as_mut_ptr(),
    };
    // SAFETY: `prog` points at `insns`, `prog.len` instructions long, and
    // both outlive the call; the kernel copies the program.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_ATTACH_FILTER,
            std::ptr::from_ref(&prog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// Converts a buffer length to `socklen_t`, refusing lengths the kernel
/// could not be told about rather than truncating them.
fn socklen(len: usize) -> io::Result<libc::socklen_t> {
    libc::socklen_t::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "option buffer too large"))
}

/// `getsockopt(fd, level, name)` into `buf`; returns how many bytes the
/// kernel wrote (the rest of `buf` is left untouched).
pub fn getsockopt_bytes(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    buf: &mut [u8],
) -> io::Result<usize> {
    let mut len = socklen(buf.len())?;
    // SAFETY: `buf` is valid for writes of `len` bytes and `len` is a live
    // local; the kernel writes at most `len` bytes and stores the count back.
    cvt(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    })?;
    // The kernel only ever shrinks `len`; clamp anyway so a surprise can
    // never make a caller index past its buffer.
    Ok((len as usize).min(buf.len()))
}

/// `setsockopt(fd, level, name, value)` with the value given as raw bytes.
pub fn setsockopt_bytes(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: &[u8],
) -> io::Result<()> {
    let len = socklen(value.len())?;
    // SAFETY: `value` is valid for reads of `len` bytes; the kernel copies it.
    cvt(unsafe { libc::setsockopt(fd.as_raw_fd(), level, name, value.as_ptr().cast(), len) })?;
    Ok(())
}

/// Sets an `int`-valued option.
pub fn setsockopt_int(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    setsockopt_bytes(fd, level, name, &value.to_ne_bytes())
}

/// `poll(2)` on one descriptor; returns the `revents` (0 on timeout).
/// `timeout_ms < 0` waits forever, so callers pass a bound.
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

/// A `PACKET_RX_RING` mapped into this process: `blocks` blocks of
/// `block_size` bytes each, handed back and forth with the kernel through
/// each block's status word. Unmapped on drop (before the socket closes:
/// the owner drops it first).
#[derive(Debug)]
pub struct RxRing {
    base: *mut u8,
    block_size: usize,
    blocks: usize,
}

// SAFETY: the mapping is owned by this value alone; the kernel's writes are
// synchronised through each block's status word (acquire/release), so
// moving the value to another thread shares nothing unsynchronised.
unsafe impl Send for RxRing {}

impl RxRing {
    /// Maps the ring the socket's `PACKET_RX_RING` option just set up.
    pub fn map(fd: BorrowedFd<'_>, block_size: usize, blocks: usize) -> io::Result<RxRing> {
        let len = block_size
            .checked_mul(blocks)
            .filter(|&l| l > 0)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty ring"))?;
        // SAFETY: a fresh shared mapping of the socket's ring, `len` bytes
        // as configured; the kernel checks the length against the ring.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(RxRing {
            base: base.cast(),
            block_size,
            blocks,
        })
    }

    /// Blocks in the ring.
    pub fn blocks(&self) -> usize {
        self.blocks
    }

    fn status(&self, i: usize) -> &AtomicU32 {
        assert!(i < self.blocks, "block {i} of {}", self.blocks);
        // SAFETY: block `i` lies inside the mapping (checked above); blocks
        // start on page boundaries, so the status word at offset 8 is
        // aligned for a u32, and the kernel only accesses it as one.
        unsafe {
            &*self
                .base
                .add(i * self.block_size + BLOCK_STATUS_AT)
                .cast::<AtomicU32>()
        }
    }

    /// If block `i` is the reader's (the kernel retired it), calls `read`
    /// with its bytes and then hands it back to the kernel.
    pub fn with_block<R>(&self, i: usize, read: impl FnOnce(&[u8]) -> R) -> Option<R> {
        if self.status(i).load(Ordering::Acquire) & TP_STATUS_USER == 0 {
            return None;
        }
        // SAFETY: the block is inside the mapping (status() checked `i`),
        // and while its status says USER the kernel does not write it; the
        // slice is gone (`read` returned) before the status goes back.
        let bytes = unsafe {
            std::slice::from_raw_parts(self.base.add(i * self.block_size), self.block_size)
        };
        let out = read(bytes);
        self.status(i).store(TP_STATUS_KERNEL, Ordering::Release);
        Some(out)
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: `base` and the length are exactly what mmap returned and
        // was given; no slice of the mapping outlives `with_block`.
        unsafe {
            libc::munmap(self.base.cast(), self.block_size * self.blocks);
        }
    }
}
