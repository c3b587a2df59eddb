//! `TCP_INFO` read from a socket of this process: the kernel's bytes
//! ([`crate::sys`]) decoded into the typed view.

use std::io;
use std::os::fd::BorrowedFd;

use crate::raw::{RawTcpInfo, SIZE};
use crate::sys;
use crate::view::TcpInfo;

/// Reads `TCP_INFO` for a TCP socket.
///
/// Works on any kernel: a shorter struct from an older kernel leaves the
/// newer fields `None` and [`TcpInfo::len`] records what was returned.
/// Allocates nothing, but it is a syscall: call it per interval, not per block.
pub fn tcp_info(fd: BorrowedFd<'_>) -> io::Result<TcpInfo> {
    let mut bytes = [0u8; SIZE];
    let len = sys::getsockopt_tcp_info(fd, &mut bytes)?;
    let (raw, len) = RawTcpInfo::from_bytes(&bytes[..len]);
    Ok(TcpInfo::from_raw(&raw, len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::STATE_ESTABLISHED;
    use std::io::{Read, Write};
    use std::net::{Ipv4Addr, TcpListener, TcpStream};
    use std::os::fd::AsFd;
    use std::time::Duration;

    /// A connected loopback pair `(client, server)`, each call bounded.
    fn tcp_pair() -> (TcpStream, TcpStream) {
        let timeout = Duration::from_secs(10);
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind loopback");
        let addr = listener.local_addr().expect("listener address");
        let client = TcpStream::connect_timeout(&addr, timeout).expect("connect loopback");
        let (server, _) = listener.accept().expect("accept loopback");
        for s in [&client, &server] {
            s.set_read_timeout(Some(timeout)).expect("read timeout");
            s.set_write_timeout(Some(timeout)).expect("write timeout");
        }
        (client, server)
    }

    /// Moves N bytes over loopback and checks that the counters at known
    /// offsets say so; a layout slip would put garbage in at least one.
    #[test]
    fn loopback_counters_match_bytes_moved() {
        const N: usize = 1_000_000;
        let (mut client, mut server) = tcp_pair();
        let block = vec![0x5a_u8; 64 * 1024];
        let writer = std::thread::spawn(move || {
            let mut sent = 0;
            while sent < N {
                let want = (N - sent).min(block.len());
                sent += client.write(&block[..want]).expect("write");
            }
            client
        });
        let mut buf = vec![0u8; 64 * 1024];
        let mut got = 0;
        while got < N {
            let n = server.read(&mut buf).expect("read");
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
            std::thread::sleep(Duration::from_millis(10));
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
