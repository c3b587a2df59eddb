//! The system calls `-D` needs that the standard library does not offer:
//! `fork`, `setsid`, and pointing the standard descriptors at `/dev/null`.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// Which side of a fork this is.
pub enum Forked {
    /// The original process.
    Parent,
    /// The new process.
    Child,
}

/// `fork(2)`. The caller is single-threaded (plumb forks before any test
/// thread starts), so the child may go on running Rust code.
pub fn fork() -> io::Result<Forked> {
    // SAFETY: fork has no memory-safety preconditions; with one thread in
    // the process the child's copy of the heap and locks is consistent.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        _ => Ok(Forked::Parent),
    }
}

/// `setsid(2)`: a session of its own, so the terminal's hang-up and its
/// Ctrl-C no longer reach the daemon.
pub fn setsid() -> io::Result<()> {
    // SAFETY: setsid takes no arguments and touches no memory of ours.
    if unsafe { libc::setsid() } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Points standard input, output and error at `null` (`dup2(2)`).
pub fn redirect_std(null: &OwnedFd) -> io::Result<()> {
    for fd in 0..=2 {
        // SAFETY: both descriptors are open; dup2 replaces fd atomically.
        if unsafe { libc::dup2(null.as_raw_fd(), fd) } == -1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
