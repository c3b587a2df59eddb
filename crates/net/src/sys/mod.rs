//! The one place in `plumb-net` that calls libc with `unsafe`.
//!
//! This module owns every raw system call the crate makes: `getsockopt` /
//! `setsockopt`, `read` / `write` / `recv` / `send`, the error queue that
//! carries `MSG_ZEROCOPY` completions, `sendfile` / `splice` / `memfd_create`,
//! `sendmmsg` / `recvmmsg` with their control messages, the host queries
//! (`getrusage`, `uname`, `sched_setaffinity`, `sysconf`, `clock_gettime`),
//! and the anonymous mappings behind the data path's buffers (`mmap`).
//!
//! Every function here has a safe signature: callers pass borrowed file
//! descriptors and Rust slices, and each `unsafe` block states why the
//! pointers it hands to the kernel are valid for the length it passes. The
//! other modules of the crate (`sockopt`, `stream`, `zerocopy`,
//! `udp`, `host`) build typed APIs on top and contain no `unsafe`.
//!
//! Errors are the kernel's: each call returns [`std::io::Error`] built from
//! `errno`, so callers can match on [`std::io::ErrorKind`] (`WouldBlock`,
//! `Interrupted`, `TimedOut`) exactly as they would with `std::net`.
//! `EINTR` is never retried here; the data-path callers decide.
#![allow(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod host;
mod io;
mod mem;
mod mmsg;
mod sockopt;

pub use host::{
    clock_monotonic, clock_pair, getrusage_self, online_cpus, sched_batch_self,
    sched_getaffinity_self, sched_policy_self, sched_setaffinity_self, uname, RawUname, Rusage,
};
pub use io::{
    memfd_create, pipe, poll_many, poll_one, read, recv_errqueue, recv_nowait, recv_trunc,
    send_flags, sendfile, set_pipe_size, splice, tee, write, ExtendedErr,
    SO_EE_CODE_ZEROCOPY_COPIED, SO_EE_ORIGIN_ZEROCOPY,
};
pub use mem::{
    fill_random, one_heap_arena, release_free_heap, release_stack_below, AnonMap, SinkMap,
};
pub use mmsg::{recvmmsg, sendmmsg, MmsgScratch, RecvMeta};
pub use sockopt::{getsockopt_bytes, getsockopt_int, setsockopt_bytes, setsockopt_int};

use std::io::Error;

/// Turns a `-1` return into the thread's `errno` as an [`std::io::Error`].
fn cvt(ret: libc::c_int) -> std::io::Result<libc::c_int> {
    if ret == -1 {
        Err(Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Like [`cvt`] for calls returning `ssize_t`; a non-negative count fits `usize`.
fn cvt_size(ret: libc::ssize_t) -> std::io::Result<usize> {
    // A negative return other than -1 is not produced by any of these calls;
    // treat it as the error path too rather than wrapping into a huge usize.
    usize::try_from(ret).map_err(|_| Error::last_os_error())
}
