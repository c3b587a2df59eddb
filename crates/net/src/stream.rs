//! Per-block TCP byte-stream calls: write, read, and read-and-discard.
//!
//! These are the innermost calls of a throughput loop, so they allocate
//! nothing, log nothing and read no clock. Each makes exactly one system
//! call and returns what the kernel did: short counts, `WouldBlock` on a
//! non-blocking socket and `Interrupted` on `EINTR` are the caller's to
//! handle (usually by calling again).

use std::io;
use std::os::fd::BorrowedFd;

use crate::sys;

/// Writes some prefix of `buf` with one `write(2)`; returns its length.
pub fn write_some(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    sys::write(fd, buf)
}

/// Reads into some prefix of `buf` with one `read(2)`; returns its length,
/// 0 meaning end of stream.
pub fn read_some(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    sys::read(fd, buf)
}

/// Consumes up to `len` bytes from a TCP socket without copying them to
/// user space (`recv(MSG_TRUNC)`), returning how many were discarded;
/// 0 means end of stream.
///
/// For a receiver that only counts bytes this saves the kernel-to-user
/// copy. Only meaningful on TCP sockets: on UDP the kernel would try to
/// copy into the absent buffer and the call fails with `EFAULT`.
pub fn recv_trunc(fd: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
    sys::recv_trunc(fd, len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{pattern, tcp_pair};
    use std::os::fd::AsFd;

    /// Sends `n` pattern bytes then closes; returns the writer thread.
    fn spawn_writer(fd: std::os::fd::OwnedFd, n: usize) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let block: Vec<u8> = (0..128 * 1024).map(pattern).collect();
            let mut sent = 0;
            while sent < n {
                let off = sent % block.len();
                let want = (n - sent).min(block.len() - off);
                sent += write_some(fd.as_fd(), &block[off..off + want]).expect("write");
            }
            drop(fd); // FIN tells the reader the exact end of the stream.
        })
    }

    #[test]
    fn recv_trunc_counts_exactly_n_bytes() {
        const N: usize = 3_000_017; // deliberately not a block multiple
        let (client, server) = tcp_pair();
        let writer = spawn_writer(client, N);
        let mut total = 0;
        // Bound: every call returns >= 1 byte until EOF, so N + 1 calls max.
        for _ in 0..=N {
            let n = recv_trunc(server.as_fd(), 128 * 1024).expect("recv_trunc");
            if n == 0 {
                break;
            }
            total += n;
        }
        writer.join().expect("writer thread");
        assert_eq!(total, N);
    }

    #[test]
    fn read_some_sees_the_written_bytes_in_order() {
        const N: usize = 1_000_003;
        let (client, server) = tcp_pair();
        let writer = spawn_writer(client, N);
        let mut buf = vec![0u8; 64 * 1024];
        let mut total = 0usize;
        for _ in 0..=N {
            let n = read_some(server.as_fd(), &mut buf).expect("read");
            if n == 0 {
                break;
            }
            for (i, &b) in buf[..n].iter().enumerate() {
                let pos = (total + i) % (128 * 1024);
                assert_eq!(b, pattern(pos as u64), "byte {}", total + i);
            }
            total += n;
        }
        writer.join().expect("writer thread");
        assert_eq!(total, N);
    }
}
