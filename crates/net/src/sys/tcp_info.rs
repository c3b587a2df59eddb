//! The `TCP_INFO` read: the kernel's bytes, decoded by `plumb-tcpinfo`'s
//! [`RawTcpInfo`] (the one statement of the layout, shared with `plumb-live`).

use std::io;
use std::os::fd::BorrowedFd;

use plumb_tcpinfo::{RawTcpInfo, SIZE};

/// Reads `TCP_INFO` and returns it with the number of bytes the kernel
/// actually filled (the fields past them are zero). A newer kernel truncates
/// its copy to our buffer, which is always safe.
pub fn tcp_info_raw(fd: BorrowedFd<'_>) -> io::Result<(RawTcpInfo, usize)> {
    let mut bytes = [0u8; SIZE];
    let len = super::getsockopt_bytes(fd, libc::IPPROTO_TCP, libc::TCP_INFO, &mut bytes)?;
    Ok(RawTcpInfo::from_bytes(&bytes[..len.min(bytes.len())]))
}
