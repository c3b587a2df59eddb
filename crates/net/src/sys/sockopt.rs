//! Raw `getsockopt` / `setsockopt` over byte buffers and `c_int`s.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use super::cvt;

/// Converts a buffer length to `socklen_t`, refusing lengths the kernel
/// could not be told about rather than truncating them.
fn socklen(len: usize) -> io::Result<libc::socklen_t> {
    libc::socklen_t::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "option buffer too large"))
}

/// `getsockopt(fd, level, name)` into `buf`; returns how many bytes the
/// kernel wrote (it may be fewer than `buf.len()`, e.g. `TCP_INFO` on an
/// older kernel, and the rest of `buf` is left untouched).
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

/// Reads an `int`-valued option.
///
/// Fails with `InvalidData` if the kernel returns anything but exactly four
/// bytes, so a misread option is never silently zero-extended.
pub fn getsockopt_int(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
) -> io::Result<libc::c_int> {
    let mut buf = [0u8; std::mem::size_of::<libc::c_int>()];
    let n = getsockopt_bytes(fd, level, name, &mut buf)?;
    if n != buf.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("getsockopt({level}, {name}) returned {n} bytes, expected 4"),
        ));
    }
    Ok(libc::c_int::from_ne_bytes(buf))
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
