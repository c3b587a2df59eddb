//! `TCP_INFO`: the kernel's per-connection TCP state and counters, read
//! from plumb's own sockets.
//!
//! This module owns the read ([`tcp_info`], through
//! [`crate::sys::tcp_info_raw`]). The decoded [`TcpInfo`] — bitfields
//! unpacked, fields the running kernel did not report as `None`, the kernel's
//! units — is `plumb-model`'s, the same view `plumb-live` decodes sock_diag
//! answers into.

use std::io;
use std::os::fd::BorrowedFd;

use crate::sys;

// The typed view lives beside the raw layout in `plumb-model`, shared with
// `plumb-live`'s sock_diag decoding.
pub use plumb_model::tcp_info::{
    TcpInfo, OPT_ECN, OPT_ECN_SEEN, OPT_SACK, OPT_SYN_DATA, OPT_TFO_CHILD, OPT_TIMESTAMPS,
    OPT_USEC_TS, OPT_WSCALE, STATE_ESTABLISHED,
};

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
    use crate::sys::RawTcpInfo;
    use crate::testutil::tcp_pair;
    use std::os::fd::AsFd;

    #[test]
    fn short_struct_from_old_kernel_reads_as_none() {
        let raw = RawTcpInfo {
            state: 1,
            wscale: 0x97,
            app_limited_bits: 0b101,
            total_retrans: 3,
            pacing_rate: 10,
            bytes_acked: 20,
            ..RawTcpInfo::default()
        };
        // 104 bytes: a Linux 3.x-era struct that ends at total_retrans.
        let old = TcpInfo::from_raw(&raw, 104);
        assert_eq!(old.total_retrans, 3);
        assert_eq!(old.pacing_rate, None);
        assert_eq!(old.min_rtt, None);
        assert_eq!(old.ecn_mode, None);
        if cfg!(target_endian = "little") {
            assert_eq!((old.snd_wscale, old.rcv_wscale), (7, 9));
            assert!(old.delivery_rate_app_limited);
            assert_eq!(old.fastopen_client_fail, 0b10);
        }
        // 120 bytes: pacing rates present, bytes_acked (ends at 128) not.
        let mid = TcpInfo::from_raw(&raw, 120);
        assert_eq!(mid.pacing_rate, Some(10));
        assert_eq!(mid.bytes_acked, None);
        let full = TcpInfo::from_raw(&raw, size_of::<RawTcpInfo>());
        assert_eq!(full.bytes_acked, Some(20));
        assert_eq!(full.ecn_mode, Some(0));
    }

    #[test]
    fn ecn_bitfield_unit_decodes_in_declaration_order() {
        // ecn_mode:2 = 2, accecn_opt_seen:2 = 1, fail_mode:4 = 0xA, options2 = 0x123456
        let unit = if cfg!(target_endian = "little") {
            2 | (1 << 2) | (0xA << 4) | (0x123456 << 8)
        } else {
            (2 << 30) | (1 << 28) | (0xA << 24) | 0x123456
        };
        let raw = RawTcpInfo {
            ecn_bits: unit,
            ..RawTcpInfo::default()
        };
        let info = TcpInfo::from_raw(&raw, size_of::<RawTcpInfo>());
        assert_eq!(info.ecn_mode, Some(2));
        assert_eq!(info.accecn_opt_seen, Some(1));
        assert_eq!(info.accecn_fail_mode, Some(0xA));
        assert_eq!(info.options2, Some(0x123456));
    }

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
