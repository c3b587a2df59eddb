//! `struct tcp_info` as INET_DIAG_INFO carries it: bytes in, typed fields out.
//!
//! The layout is the kernel's uapi struct (the same one `plumb-net` reads
//! with `getsockopt`, see `crates/net/src/sys/tcp_info.rs`), in host byte
//! order. The attribute is as long as the running kernel's struct; a field
//! whose bytes the attribute does not cover is `None`, never zero.

/// Decoded TCP_INFO: the fields live diagnosis uses. Units are the kernel's:
/// µs for times unless noted, bytes per second for rates, bytes or segments
/// for windows as noted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// Bytes of the struct the kernel sent.
    pub len: usize,
    /// TCP state (1 = established).
    pub state: u8,
    /// Congestion-avoidance state (0 open … 4 loss).
    pub ca_state: u8,
    /// Negotiated options (`TCPI_OPT_*` bits; 1 = timestamps).
    pub options: u8,
    /// Send MSS, bytes.
    pub snd_mss: u32,
    /// Estimated peer MSS, bytes.
    pub rcv_mss: u32,
    /// Segments in flight, unacknowledged.
    pub unacked: u32,
    /// Segments considered lost now.
    pub lost: u32,
    /// ms since the last data segment was sent.
    pub last_data_sent: u32,
    /// ms since the last data segment was received.
    pub last_data_recv: u32,
    /// Path MTU, bytes.
    pub pmtu: u32,
    /// Receive-side slow-start threshold (the window clamp in use), bytes.
    pub rcv_ssthresh: u32,
    /// Smoothed RTT, µs.
    pub rtt: u32,
    /// RTT variance, µs.
    pub rttvar: u32,
    /// Slow-start threshold, segments.
    pub snd_ssthresh: u32,
    /// Congestion window, segments.
    pub snd_cwnd: u32,
    /// Advertised MSS, bytes.
    pub advmss: u32,
    /// The receiver's RTT estimate, µs.
    pub rcv_rtt: u32,
    /// Receive-buffer autotuning's space estimate, bytes.
    pub rcv_space: u32,
    /// Retransmitted segments over the connection's life.
    pub total_retrans: u32,
    /// Pacing rate, bytes/s (3.15).
    pub pacing_rate: Option<u64>,
    /// Bytes the peer acknowledged (4.1).
    pub bytes_acked: Option<u64>,
    /// Bytes received in order (4.1).
    pub bytes_received: Option<u64>,
    /// Segments sent (4.2).
    pub segs_out: Option<u32>,
    /// Bytes written but not yet sent (4.6).
    pub notsent_bytes: Option<u32>,
    /// Windowed minimum RTT, µs (4.6).
    pub min_rtt: Option<u32>,
    /// Segments sent carrying data (4.6).
    pub data_segs_out: Option<u32>,
    /// Latest delivery-rate sample, bytes/s (4.9).
    pub delivery_rate: Option<u64>,
    /// Time with data in flight, µs (4.10).
    pub busy_time: Option<u64>,
    /// Time limited by the peer's receive window, µs (4.10).
    pub rwnd_limited: Option<u64>,
    /// Time limited by the send buffer, µs (4.10).
    pub sndbuf_limited: Option<u64>,
    /// Data bytes sent, retransmits included (4.19).
    pub bytes_sent: Option<u64>,
    /// Data bytes retransmitted (4.19).
    pub bytes_retrans: Option<u64>,
    /// Out-of-order packets received (5.4).
    pub rcv_ooopack: Option<u32>,
    /// The peer's advertised window, bytes (5.4).
    pub snd_wnd: Option<u32>,
    /// The window this end advertises, bytes (6.2).
    pub rcv_wnd: Option<u32>,
}

/// Offsets of the fields in the uapi struct (checked against
/// `RawTcpInfo`'s compile-time asserts in plumb-net: total_retrans 100,
/// pacing_rate 104, delivery_rate 160, bytes_sent 200).
mod off {
    pub const STATE: usize = 0;
    pub const CA_STATE: usize = 1;
    pub const OPTIONS: usize = 5;
    pub const SND_MSS: usize = 16;
    pub const RCV_MSS: usize = 20;
    pub const UNACKED: usize = 24;
    pub const LOST: usize = 32;
    pub const LAST_DATA_SENT: usize = 44;
    pub const LAST_DATA_RECV: usize = 52;
    pub const PMTU: usize = 60;
    pub const RCV_SSTHRESH: usize = 64;
    pub const RTT: usize = 68;
    pub const RTTVAR: usize = 72;
    pub const SND_SSTHRESH: usize = 76;
    pub const SND_CWND: usize = 80;
    pub const ADVMSS: usize = 84;
    pub const RCV_RTT: usize = 92;
    pub const RCV_SPACE: usize = 96;
    pub const TOTAL_RETRANS: usize = 100;
    pub const PACING_RATE: usize = 104;
    pub const BYTES_ACKED: usize = 120;
    pub const BYTES_RECEIVED: usize = 128;
    pub const SEGS_OUT: usize = 136;
    pub const NOTSENT_BYTES: usize = 144;
    pub const MIN_RTT: usize = 148;
    pub const DATA_SEGS_OUT: usize = 156;
    pub const DELIVERY_RATE: usize = 160;
    pub const BUSY_TIME: usize = 168;
    pub const RWND_LIMITED: usize = 176;
    pub const SNDBUF_LIMITED: usize = 184;
    pub const BYTES_SENT: usize = 200;
    pub const BYTES_RETRANS: usize = 208;
    pub const RCV_OOOPACK: usize = 224;
    pub const SND_WND: usize = 228;
    pub const RCV_WND: usize = 232;
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 4)?;
    Some(u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at + 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_ne_bytes(a))
}

/// The struct up to `total_retrans` has been there since Linux 2.6; anything
/// shorter is not a TCP_INFO.
pub const MIN_LEN: usize = 104;

impl TcpInfo {
    /// Decodes an INET_DIAG_INFO payload; `None` when it is shorter than
    /// the oldest struct.
    pub fn decode(b: &[u8]) -> Option<TcpInfo> {
        if b.len() < MIN_LEN {
            return None;
        }
        let w = |at| u32_at(b, at).unwrap_or(0);
        Some(TcpInfo {
            len: b.len(),
            state: b[off::STATE],
            ca_state: b[off::CA_STATE],
            options: b[off::OPTIONS],
            snd_mss: w(off::SND_MSS),
            rcv_mss: w(off::RCV_MSS),
            unacked: w(off::UNACKED),
            lost: w(off::LOST),
            last_data_sent: w(off::LAST_DATA_SENT),
            last_data_recv: w(off::LAST_DATA_RECV),
            pmtu: w(off::PMTU),
            rcv_ssthresh: w(off::RCV_SSTHRESH),
            rtt: w(off::RTT),
            rttvar: w(off::RTTVAR),
            snd_ssthresh: w(off::SND_SSTHRESH),
            snd_cwnd: w(off::SND_CWND),
            advmss: w(off::ADVMSS),
            rcv_rtt: w(off::RCV_RTT),
            rcv_space: w(off::RCV_SPACE),
            total_retrans: w(off::TOTAL_RETRANS),
            pacing_rate: u64_at(b, off::PACING_RATE),
            bytes_acked: u64_at(b, off::BYTES_ACKED),
            bytes_received: u64_at(b, off::BYTES_RECEIVED),
            segs_out: u32_at(b, off::SEGS_OUT),
            notsent_bytes: u32_at(b, off::NOTSENT_BYTES),
            min_rtt: u32_at(b, off::MIN_RTT),
            data_segs_out: u32_at(b, off::DATA_SEGS_OUT),
            delivery_rate: u64_at(b, off::DELIVERY_RATE),
            busy_time: u64_at(b, off::BUSY_TIME),
            rwnd_limited: u64_at(b, off::RWND_LIMITED),
            sndbuf_limited: u64_at(b, off::SNDBUF_LIMITED),
            bytes_sent: u64_at(b, off::BYTES_SENT),
            bytes_retrans: u64_at(b, off::BYTES_RETRANS),
            rcv_ooopack: u32_at(b, off::RCV_OOOPACK),
            snd_wnd: u32_at(b, off::SND_WND),
            rcv_wnd: u32_at(b, off::RCV_WND),
        })
    }

    /// Timestamps were negotiated (12 bytes of every segment are options).
    pub fn timestamps(&self) -> bool {
        self.options & 1 != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_payloads_leave_newer_fields_none() {
        assert_eq!(TcpInfo::decode(&[0u8; 103]), None);
        let mut b = vec![0u8; 120];
        b[0] = 1;
        b[off::SND_MSS..off::SND_MSS + 4].copy_from_slice(&1448u32.to_ne_bytes());
        b[off::PACING_RATE..off::PACING_RATE + 8].copy_from_slice(&7u64.to_ne_bytes());
        let t = TcpInfo::decode(&b).expect("104+ bytes decode");
        assert_eq!((t.state, t.snd_mss, t.pacing_rate), (1, 1448, Some(7)));
        assert_eq!(t.bytes_acked, None);
        assert_eq!(t.rcv_wnd, None);
        let mut full = vec![0u8; 248];
        full[off::RCV_WND..off::RCV_WND + 4].copy_from_slice(&17_520u32.to_ne_bytes());
        let t = TcpInfo::decode(&full).expect("decode");
        assert_eq!(t.rcv_wnd, Some(17_520));
        assert_eq!(t.busy_time, Some(0));
    }
}
