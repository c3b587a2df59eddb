//! `TCP_INFO`: the kernel's per-connection TCP state and counters, read
//! from plumb's own sockets.
//!
//! This module owns the read ([`tcp_info`], through
//! [`crate::sys::tcp_info_raw`]). The decoded [`TcpInfo`] — bitfields
//! unpacked, fields the running kernel did not report as `None`, the kernel's
//! units — is `plumb-tcpinfo`'s, the same view `plumb-live` decodes sock_diag
//! answers into.

use std::io;
use std::os::fd::BorrowedFd;

use plumb_tcpinfo::TcpInfo;

use crate::sys;

/// Reads `TCP_INFO` for a TCP socket.
///
/// Works on any kernel: a shorter struct from an older kernel leaves the
/// newer fields `None` and [`TcpInfo::len`] records what was returned.
/// Allocates nothing, but it is a syscall: call it per interval, not per block.
pub fn tcp_info(fd: BorrowedFd<'_>) -> io::Result<TcpInfo> {
    let (raw, len) = sys::tcp_info_raw(fd)?;
    Ok(TcpInfo::from_raw(&raw, len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::{read_some, write_some};
    use crate::testutil::tcp_pair;
    use plumb_tcpinfo::STATE_ESTABLISHED;
    use std::os::fd::AsFd;

    /// Moves N bytes over loopback and checks that the counters at known
    /// offsets say so; a layout slip would put garbage in at least one.
    #[test]
    fn loopback_counters_match_bytes_moved() {
        const N: usize = 1_000_000;
        let (client, server) = tcp_pair();
        let block = vec![0x5a_u8; 64 * 1024];
        let writer = std::thread::spawn(move || {
            let mut sent = 0;
            while sent < N {
                let want = (N - sent).min(block.len());
                sent += write_some(client.as_fd(), &block[..want]).expect("write");
            }
            client
        });
        let mut buf = vec![0u8; 64 * 1024];
        let mut got = 0;
        while got < N {
            let n = read_some(server.as_fd(), &mut buf).expect("read");
            assert!(n > 0, "early EOF after {got} bytes");
            got += n;
        }
        let client = writer.join().expect("writer thread");

        // The final ACK may still be in flight; poll, bounded to ~2 s.
        let mut info = tcp_info(client.as_fd()).expect("tcp_info");
        for _ in 0..200 {
            if info.bytes_acked.unwrap_or(0) >= N as u64 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            info = tcp_info(client.as_fd()).expect("tcp_info");
        }
        let rx = tcp_info(server.as_fd()).expect("tcp_info");
        eprintln!("kernel returned {} bytes of tcp_info", info.len);

        assert!(info.len >= 104, "len {}", info.len);
        assert_eq!(info.state, STATE_ESTABLISHED);
        assert!(info.snd_mss > 0 && info.snd_mss <= 65_536, "{info:?}");
        assert!(info.pmtu >= 576, "{info:?}");
        assert!(info.snd_cwnd > 0, "{info:?}");
        assert!(info.rtt > 0 && info.rtt < 1_000_000, "{info:?}");
        if info.len >= 232 {
            // bytes_acked counts the SYN's sequence number too, hence >=.
            assert!(info.bytes_acked.unwrap_or(0) >= N as u64, "{info:?}");
            assert!(info.bytes_acked.unwrap_or(0) <= N as u64 + 2, "{info:?}");
            assert_eq!(rx.bytes_received, Some(N as u64), "{rx:?}");
            let sent = info.bytes_sent.unwrap_or(0);
            let retrans = info.bytes_retrans.unwrap_or(0);
            assert_eq!(sent - retrans, N as u64, "{info:?}");
            let segs = info.data_segs_out.unwrap_or(0) as usize;
            assert!((N / 65_536..=N).contains(&segs), "{info:?}");
            assert!(info.segs_out.unwrap_or(0) as usize >= segs, "{info:?}");
            let min_rtt = info.min_rtt.unwrap_or(0);
            assert!(min_rtt > 0 && min_rtt < 1_000_000, "{info:?}");
            assert!(info.delivered.unwrap_or(0) as usize >= segs, "{info:?}");
            assert_eq!(info.notsent_bytes, Some(0), "{info:?}");
        }
    }
}
