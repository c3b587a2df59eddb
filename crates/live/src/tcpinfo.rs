//! `struct tcp_info` as INET_DIAG_INFO carries it: bytes in, typed fields out.
//!
//! The layout is the kernel's uapi struct, decoded by `plumb-model`'s
//! `tcp_info` (the same decoder `plumb-net` reads `getsockopt` with), in host
//! byte order. The attribute is as long as the running kernel's struct; a
//! field whose bytes the attribute does not cover is `None`, never zero.

use plumb_model::tcp_info::RawTcpInfo;

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

/// The struct up to `total_retrans` has been there since Linux 2.6; anything
/// shorter is not a TCP_INFO.
pub const MIN_LEN: usize = 104;

impl TcpInfo {
    /// Decodes an INET_DIAG_INFO payload; `None` when it is shorter than
    /// the oldest struct. The bytes are read by `plumb-model`'s
    /// [`RawTcpInfo`], the layout `plumb-net` reads its own sockets with;
    /// here a field the payload does not cover becomes `None`.
    pub fn decode(b: &[u8]) -> Option<TcpInfo> {
        if b.len() < MIN_LEN {
            return None;
        }
        let (r, len) = RawTcpInfo::from_bytes(b);
        // The field when the payload covers it.
        macro_rules! opt {
            ($f:ident) => {
                RawTcpInfo::covers(
                    len,
                    std::mem::offset_of!(RawTcpInfo, $f),
                    std::mem::size_of_val(&r.$f),
                )
                .then_some(r.$f)
            };
        }
        Some(TcpInfo {
            len: b.len(),
            state: r.state,
            ca_state: r.ca_state,
            options: r.options,
            snd_mss: r.snd_mss,
            rcv_mss: r.rcv_mss,
            unacked: r.unacked,
            lost: r.lost,
            last_data_sent: r.last_data_sent,
            last_data_recv: r.last_data_recv,
            pmtu: r.pmtu,
            rcv_ssthresh: r.rcv_ssthresh,
            rtt: r.rtt,
            rttvar: r.rttvar,
            snd_ssthresh: r.snd_ssthresh,
            snd_cwnd: r.snd_cwnd,
            advmss: r.advmss,
            rcv_rtt: r.rcv_rtt,
            rcv_space: r.rcv_space,
            total_retrans: r.total_retrans,
            pacing_rate: opt!(pacing_rate),
            bytes_acked: opt!(bytes_acked),
            bytes_received: opt!(bytes_received),
            segs_out: opt!(segs_out),
            notsent_bytes: opt!(notsent_bytes),
            min_rtt: opt!(min_rtt),
            data_segs_out: opt!(data_segs_out),
            delivery_rate: opt!(delivery_rate),
            busy_time: opt!(busy_time),
            rwnd_limited: opt!(rwnd_limited),
            sndbuf_limited: opt!(sndbuf_limited),
            bytes_sent: opt!(bytes_sent),
            bytes_retrans: opt!(bytes_retrans),
            rcv_ooopack: opt!(rcv_ooopack),
            snd_wnd: opt!(snd_wnd),
            rcv_wnd: opt!(rcv_wnd),
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
        b[16..20].copy_from_slice(&1448u32.to_ne_bytes());
        b[104..112].copy_from_slice(&7u64.to_ne_bytes());
        let t = TcpInfo::decode(&b).expect("104+ bytes decode");
        assert_eq!((t.state, t.snd_mss, t.pacing_rate), (1, 1448, Some(7)));
        assert_eq!(t.bytes_acked, None);
        assert_eq!(t.rcv_wnd, None);
        let mut full = vec![0u8; 248];
        full[232..236].copy_from_slice(&17_520u32.to_ne_bytes());
        let t = TcpInfo::decode(&full).expect("decode");
        assert_eq!(t.rcv_wnd, Some(17_520));
        assert_eq!(t.busy_time, Some(0));
    }
}
