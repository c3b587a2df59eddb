//! `struct tcp_info` as the kernel lays it out, and its bytes read field by
//! field at their own offsets into [`RawTcpInfo`].

/// `struct tcp_info` as the kernel lays it out (C ABI, natural alignment).
///
/// Bitfields are kept as the raw storage unit they live in: `wscale`
/// (`snd_wscale:4, rcv_wscale:4`), `app_limited_bits`
/// (`delivery_rate_app_limited:1, fastopen_client_fail:2`) and `ecn_bits`
/// (`ecn_mode:2, accecn_opt_seen:2, accecn_fail_mode:4, options2:24`).
/// [`TcpInfo::from_raw`](crate::TcpInfo::from_raw) unpacks them.
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
const _: () = assert!(std::mem::offset_of!(RawTcpInfo, rcv_wnd) == 232);
const _: () = assert!(std::mem::offset_of!(RawTcpInfo, total_rto_time) == 244);
const _: () = assert!(std::mem::offset_of!(RawTcpInfo, ecn_bits) == 276);

/// The struct's size: what a `getsockopt` buffer needs.
pub const SIZE: usize = std::mem::size_of::<RawTcpInfo>();

impl RawTcpInfo {
    /// Decodes `b`, the kernel's bytes in host byte order. Returns the struct
    /// and how many of its bytes `b` covered (at most [`SIZE`]); a field `b`
    /// does not cover whole stays zero (see [`RawTcpInfo::covers`]).
    pub fn from_bytes(b: &[u8]) -> (RawTcpInfo, usize) {
        // Each field is read at its own offset in the repr(C) struct, so the
        // struct above is the only statement of the layout.
        macro_rules! rd {
            ($f:ident, $t:ty) => {{
                let at = std::mem::offset_of!(RawTcpInfo, $f);
                b.get(at..at + std::mem::size_of::<$t>())
                    .and_then(|s| s.try_into().ok())
                    .map_or(0, <$t>::from_ne_bytes)
            }};
        }
        let raw = RawTcpInfo {
            state: rd!(state, u8),
            ca_state: rd!(ca_state, u8),
            retransmits: rd!(retransmits, u8),
            probes: rd!(probes, u8),
            backoff: rd!(backoff, u8),
            options: rd!(options, u8),
            wscale: rd!(wscale, u8),
            app_limited_bits: rd!(app_limited_bits, u8),
            rto: rd!(rto, u32),
            ato: rd!(ato, u32),
            snd_mss: rd!(snd_mss, u32),
            rcv_mss: rd!(rcv_mss, u32),
            unacked: rd!(unacked, u32),
            sacked: rd!(sacked, u32),
            lost: rd!(lost, u32),
            retrans: rd!(retrans, u32),
            fackets: rd!(fackets, u32),
            last_data_sent: rd!(last_data_sent, u32),
            last_ack_sent: rd!(last_ack_sent, u32),
            last_data_recv: rd!(last_data_recv, u32),
            last_ack_recv: rd!(last_ack_recv, u32),
            pmtu: rd!(pmtu, u32),
            rcv_ssthresh: rd!(rcv_ssthresh, u32),
            rtt: rd!(rtt, u32),
            rttvar: rd!(rttvar, u32),
            snd_ssthresh: rd!(snd_ssthresh, u32),
            snd_cwnd: rd!(snd_cwnd, u32),
            advmss: rd!(advmss, u32),
            reordering: rd!(reordering, u32),
            rcv_rtt: rd!(rcv_rtt, u32),
            rcv_space: rd!(rcv_space, u32),
            total_retrans: rd!(total_retrans, u32),
            pacing_rate: rd!(pacing_rate, u64),
            max_pacing_rate: rd!(max_pacing_rate, u64),
            bytes_acked: rd!(bytes_acked, u64),
            bytes_received: rd!(bytes_received, u64),
            segs_out: rd!(segs_out, u32),
            segs_in: rd!(segs_in, u32),
            notsent_bytes: rd!(notsent_bytes, u32),
            min_rtt: rd!(min_rtt, u32),
            data_segs_in: rd!(data_segs_in, u32),
            data_segs_out: rd!(data_segs_out, u32),
            delivery_rate: rd!(delivery_rate, u64),
            busy_time: rd!(busy_time, u64),
            rwnd_limited: rd!(rwnd_limited, u64),
            sndbuf_limited: rd!(sndbuf_limited, u64),
            delivered: rd!(delivered, u32),
            delivered_ce: rd!(delivered_ce, u32),
            bytes_sent: rd!(bytes_sent, u64),
            bytes_retrans: rd!(bytes_retrans, u64),
            dsack_dups: rd!(dsack_dups, u32),
            reord_seen: rd!(reord_seen, u32),
            rcv_ooopack: rd!(rcv_ooopack, u32),
            snd_wnd: rd!(snd_wnd, u32),
            rcv_wnd: rd!(rcv_wnd, u32),
            rehash: rd!(rehash, u32),
            total_rto: rd!(total_rto, u16),
            total_rto_recoveries: rd!(total_rto_recoveries, u16),
            total_rto_time: rd!(total_rto_time, u32),
            received_ce: rd!(received_ce, u32),
            delivered_e1_bytes: rd!(delivered_e1_bytes, u32),
            delivered_e0_bytes: rd!(delivered_e0_bytes, u32),
            delivered_ce_bytes: rd!(delivered_ce_bytes, u32),
            received_e1_bytes: rd!(received_e1_bytes, u32),
            received_e0_bytes: rd!(received_e0_bytes, u32),
            received_ce_bytes: rd!(received_ce_bytes, u32),
            ecn_bits: rd!(ecn_bits, u32),
        };
        (raw, b.len().min(SIZE))
    }

    /// Whether `len` bytes cover a field at `offset` of `size` bytes (use
    /// `std::mem::offset_of!` and `size_of_val`).
    pub fn covers(len: usize, offset: usize, size: usize) -> bool {
        len >= offset + size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_come_from_their_offsets_and_uncovered_ones_stay_zero() {
        let mut b = vec![0u8; SIZE + 8];
        b[0] = 1;
        b[16..20].copy_from_slice(&1448u32.to_ne_bytes());
        b[104..112].copy_from_slice(&7u64.to_ne_bytes());
        b[232..236].copy_from_slice(&17_520u32.to_ne_bytes());
        b[276..280].copy_from_slice(&0xabcu32.to_ne_bytes());
        let (r, len) = RawTcpInfo::from_bytes(&b);
        assert_eq!(len, SIZE);
        assert_eq!((r.state, r.snd_mss, r.pacing_rate), (1, 1448, 7));
        assert_eq!((r.rcv_wnd, r.ecn_bits), (17_520, 0xabc));
        let (short, len) = RawTcpInfo::from_bytes(&b[..234]);
        assert_eq!(len, 234);
        assert_eq!((short.snd_mss, short.rcv_wnd), (1448, 0));
        assert!(!RawTcpInfo::covers(len, 232, 4));
        assert!(RawTcpInfo::covers(len, 228, 4));
        assert_eq!(RawTcpInfo::from_bytes(&[]).1, 0);
    }
}
