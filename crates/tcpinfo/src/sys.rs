//! The crate's one system call: `getsockopt(TCP_INFO)` into a byte buffer.
//!
//! A safe signature over one `unsafe` block that says why the buffer it
//! hands the kernel is valid for the length it passes.
#![allow(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `getsockopt(fd, IPPROTO_TCP, TCP_INFO)` into `buf`; how many bytes the
/// kernel wrote (an older kernel writes fewer, a newer one truncates its
/// copy to `buf`, and the rest of `buf` is left untouched).
pub fn getsockopt_tcp_info(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    let mut len = libc::socklen_t::try_from(buf.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "option buffer too large"))?;
    // SAFETY: `buf` is valid for writes of `len` bytes and `len` is a live
    // local; the kernel writes at most `len` bytes and stores the count back.
    let ret = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if ret == -1 {
        return Err(io::Error::last_os_error());
    }
    // The kernel only ever shrinks `len`; clamp anyway so a surprise can
    // never make a caller index past its buffer.
    Ok((len as usize).min(buf.len()))
}
