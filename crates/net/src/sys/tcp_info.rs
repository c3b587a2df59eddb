//! The kernel's `struct tcp_info` byte for byte, and the `TCP_INFO` read.
//!
//! Layout follows `include/uapi/linux/tcp.h` through the AccECN counters
//! (Linux 6.18): 280 bytes. Older kernels return a prefix of it; newer
//! kernels may know more fields than this struct, in which case the kernel
//! truncates its copy to our length, which is always safe.

use std::io;
use std::os::fd::BorrowedFd;

/// `struct tcp_info` as the kernel lays it out (C ABI, natural alignment).
///
/// Bitfields are kept as the raw storage unit they live in: `wscale`
/// (`snd_wscale:4, rcv_wscale:4`), `app_limited_bits`
/// (`delivery_rate_app_limited:1, fastopen_client_fail:2`) and `ecn_bits`
/// (`ecn_mode:2, accecn_opt_seen:2, accecn_fail_mode:4, options2:24`).
/// Decoding them is the safe `tcpinfo` module's job.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(missing_docs)] // Field names are the kernel's `tcpi_*` names minus the prefix.
pub struct RawTcpInfo {
    pub state: u8,
    pub ca_state: u8,
    pub retransmits: u8,
    pub probes: u8,
    pub backoff: u8,
    pub options: u8,
    pub wscale: u8,
    pub app_limited_bits: u8,

    pub rto: u32,
    pub ato: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,

    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub fackets: u32,

    pub last_data_sent: u32,
    pub last_ack_sent: u32,
    pub last_data_recv: u32,
    pub last_ack_recv: u32,

    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    pub rtt: u32,
    pub rttvar: u32,
    pub snd_ssthresh: u32,
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,

    pub rcv_rtt: u32,
    pub rcv_space: u32,

    pub total_retrans: u32,

    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,

    pub notsent_bytes: u32,
    pub min_rtt: u32,
    pub data_segs_in: u32,
    pub data_segs_out: u32,

    pub delivery_rate: u64,

    pub busy_time: u64,
    pub rwnd_limited: u64,
    pub sndbuf_limited: u64,

    pub delivered: u32,
    pub delivered_ce: u32,

    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub dsack_dups: u32,
    pub reord_seen: u32,

    pub rcv_ooopack: u32,

    pub snd_wnd: u32,
    pub rcv_wnd: u32,

    pub rehash: u32,

    pub total_rto: u16,
    pub total_rto_recoveries: u16,
    pub total_rto_time: u32,

    pub received_ce: u32,
    pub delivered_e1_bytes: u32,
    pub delivered_e0_bytes: u32,
    pub delivered_ce_bytes: u32,
    pub received_e1_bytes: u32,
    pub received_e0_bytes: u32,
    pub received_ce_bytes: u32,
    pub ecn_bits: u32,
}

// The uapi struct has no implicit padding; if a field were mistyped above
// these would catch it at compile time rather than as garbage at run time.
const _: () = assert!(std::mem::size_of::<RawTcpInfo>() == 280);
const _: () = assert!(std::mem::offset_of!(RawTcpInfo, total_retrans) == 100);
const _: () = assert!(std::mem::offset_of!(RawTcpInfo, pacing_rate) == 104);
const _: () = assert!(std::mem::offset_of!(RawTcpInfo, delivery_rate) == 160);
const _: () = assert!(std::mem::offset_of!(RawTcpInfo, bytes_sent) == 200);
const _: () = assert!(std::mem::offset_of!(RawTcpInfo, total_rto_time) == 244);
const _: () = assert!(std::mem::offset_of!(RawTcpInfo, ecn_bits) == 276);

/// Reads `TCP_INFO` into a zeroed [`RawTcpInfo`] and returns it with the
/// number of bytes the kernel actually filled (the rest stays zero).
pub fn tcp_info_raw(fd: BorrowedFd<'_>) -> io::Result<(RawTcpInfo, usize)> {
    let mut raw = RawTcpInfo::default();
    // SAFETY: `RawTcpInfo` is `repr(C)`, made only of integers (so every bit
    // pattern is valid and there is no padding to expose), and the slice
    // covers exactly its bytes for as long as `raw` is borrowed here.
    let bytes = unsafe {
        std::slice::from_raw_parts_mut(
            (&mut raw as *mut RawTcpInfo).cast::<u8>(),
            std::mem::size_of::<RawTcpInfo>(),
        )
    };
    let len = super::getsockopt_bytes(fd, libc::IPPROTO_TCP, libc::TCP_INFO, bytes)?;
    Ok((raw, len))
}
