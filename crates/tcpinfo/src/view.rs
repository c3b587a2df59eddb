//! The typed view of `struct tcp_info`: bitfields unpacked, the `OPT_*`
//! bits, and every field after the 104 bytes Linux 2.6 had an `Option`,
//! `None` when the kernel's copy stopped before it.

use crate::raw::RawTcpInfo;

/// `TCPI_OPT_TIMESTAMPS`: bit in [`TcpInfo::options`].
pub const OPT_TIMESTAMPS: u8 = 1;
/// `TCPI_OPT_SACK`: bit in [`TcpInfo::options`].
pub const OPT_SACK: u8 = 2;
/// `TCPI_OPT_WSCALE`: bit in [`TcpInfo::options`].
pub const OPT_WSCALE: u8 = 4;
/// `TCPI_OPT_ECN`: bit in [`TcpInfo::options`].
pub const OPT_ECN: u8 = 8;
/// `TCPI_OPT_ECN_SEEN`: bit in [`TcpInfo::options`].
pub const OPT_ECN_SEEN: u8 = 16;
/// `TCPI_OPT_SYN_DATA`: bit in [`TcpInfo::options`].
pub const OPT_SYN_DATA: u8 = 32;
/// `TCPI_OPT_USEC_TS`: bit in [`TcpInfo::options`].
pub const OPT_USEC_TS: u8 = 64;
/// `TCPI_OPT_TFO_CHILD`: bit in [`TcpInfo::options`].
pub const OPT_TFO_CHILD: u8 = 128;

/// `TCP_ESTABLISHED`, the value of [`TcpInfo::state`] on a live connection.
pub const STATE_ESTABLISHED: u8 = 1;

/// Decoded `struct tcp_info` (Linux `include/uapi/linux/tcp.h`, through 6.18).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// Bytes of `struct tcp_info` the kernel returned; fields past it are
    /// `None`. 280 on 6.18+, 248 on 6.7–6.17, 232 on 5.4-era kernels.
    pub len: usize,

    /// TCP state (`TCP_ESTABLISHED` = 1, … see `include/net/tcp_states.h`).
    pub state: u8,
    /// Congestion-avoidance state (`TCP_CA_Open` = 0 … `TCP_CA_Loss` = 4).
    pub ca_state: u8,
    /// Consecutive unrecovered RTO retransmissions.
    pub retransmits: u8,
    /// Unanswered zero-window / keepalive probes.
    pub probes: u8,
    /// Current RTO backoff exponent.
    pub backoff: u8,
    /// Negotiated options, `OPT_*` bits.
    pub options: u8,
    /// Send window scale shift (low nibble of byte 6 on little-endian).
    pub snd_wscale: u8,
    /// Receive window scale shift.
    pub rcv_wscale: u8,
    /// The last delivery-rate sample was application-limited.
    pub delivery_rate_app_limited: bool,
    /// TCP Fast Open client failure reason (0 = none), 2 bits.
    pub fastopen_client_fail: u8,

    /// Retransmission timeout, µs.
    pub rto: u32,
    /// Delayed-ACK timeout, µs.
    pub ato: u32,
    /// Current send MSS, bytes.
    pub snd_mss: u32,
    /// Estimated peer MSS, bytes.
    pub rcv_mss: u32,

    /// Segments sent but not yet acknowledged (`packets_out`).
    pub unacked: u32,
    /// Segments SACKed (or dup-ACKed without SACK).
    pub sacked: u32,
    /// Segments considered lost.
    pub lost: u32,
    /// Segments retransmitted and still in flight.
    pub retrans: u32,
    /// Always 0 since FACK removal (Linux 4.15); kept for layout.
    pub fackets: u32,

    /// Time since the last data segment was sent, ms.
    pub last_data_sent: u32,
    /// Not tracked by Linux; always 0.
    pub last_ack_sent: u32,
    /// Time since the last data segment was received, ms.
    pub last_data_recv: u32,
    /// Time since the last ACK was received, ms.
    pub last_ack_recv: u32,

    /// Path MTU, bytes.
    pub pmtu: u32,
    /// Receive-side slow-start threshold (window clamp in use), bytes.
    pub rcv_ssthresh: u32,
    /// Smoothed RTT, µs.
    pub rtt: u32,
    /// RTT mean deviation, µs.
    pub rttvar: u32,
    /// Slow-start threshold, segments (huge = "infinite").
    pub snd_ssthresh: u32,
    /// Congestion window, segments.
    pub snd_cwnd: u32,
    /// Advertised MSS, bytes.
    pub advmss: u32,
    /// Reordering degree estimate, segments.
    pub reordering: u32,

    /// Receiver-side RTT estimate, µs.
    pub rcv_rtt: u32,
    /// Receive buffer auto-tuning space, bytes.
    pub rcv_space: u32,

    /// Total retransmitted segments over the connection's life.
    pub total_retrans: u32,

    /// Current pacing rate, bytes/s (Linux 3.15).
    pub pacing_rate: Option<u64>,
    /// `SO_MAX_PACING_RATE` cap, bytes/s (`u64::MAX` = none) (3.15).
    pub max_pacing_rate: Option<u64>,
    /// Bytes acknowledged by the peer, RFC 4898 `HCThruOctetsAcked` (4.1).
    pub bytes_acked: Option<u64>,
    /// Bytes received in sequence, RFC 4898 `HCThruOctetsReceived` (4.1).
    pub bytes_received: Option<u64>,
    /// Segments sent, including pure ACKs and retransmits (4.2).
    pub segs_out: Option<u32>,
    /// Segments received (4.2).
    pub segs_in: Option<u32>,

    /// Bytes written by the application but not yet sent (4.6).
    pub notsent_bytes: Option<u32>,
    /// Minimum RTT seen over the windowed filter, µs (4.6).
    pub min_rtt: Option<u32>,
    /// Segments received carrying data (4.6).
    pub data_segs_in: Option<u32>,
    /// Segments sent carrying data (4.6).
    pub data_segs_out: Option<u32>,

    /// Most recent delivery-rate sample, bytes/s (4.9).
    pub delivery_rate: Option<u64>,

    /// Time with data in flight, µs (4.10).
    pub busy_time: Option<u64>,
    /// Time limited by the peer's receive window, µs (4.10).
    pub rwnd_limited: Option<u64>,
    /// Time limited by the send buffer, µs (4.10).
    pub sndbuf_limited: Option<u64>,

    /// Segments delivered, including retransmits (4.18).
    pub delivered: Option<u32>,
    /// Segments delivered with ECN CE marks (4.18).
    pub delivered_ce: Option<u32>,

    /// Data bytes sent, including retransmits (4.19).
    pub bytes_sent: Option<u64>,
    /// Data bytes retransmitted (4.19).
    pub bytes_retrans: Option<u64>,
    /// DSACKs received (4.19).
    pub dsack_dups: Option<u32>,
    /// Reordering events seen (4.19).
    pub reord_seen: Option<u32>,

    /// Out-of-order packets received (5.4).
    pub rcv_ooopack: Option<u32>,

    /// Peer's advertised receive window after scaling, bytes (5.4).
    pub snd_wnd: Option<u32>,
    /// Our advertised receive window after scaling, bytes (6.2).
    pub rcv_wnd: Option<u32>,

    /// PLB- or timeout-triggered rehash attempts (6.2).
    pub rehash: Option<u32>,

    /// RTO timeouts, including SYN/SYN-ACK and recurring ones (6.7).
    pub total_rto: Option<u16>,
    /// RTO recoveries, including an unfinished one (6.7).
    pub total_rto_recoveries: Option<u16>,
    /// Time spent in RTO recoveries, ms (6.7).
    pub total_rto_time: Option<u32>,

    /// CE marks received, packets (6.18, AccECN).
    pub received_ce: Option<u32>,
    /// AccECN: bytes delivered with ECT(1) (6.18).
    pub delivered_e1_bytes: Option<u32>,
    /// AccECN: bytes delivered with ECT(0) (6.18).
    pub delivered_e0_bytes: Option<u32>,
    /// AccECN: bytes delivered with CE (6.18).
    pub delivered_ce_bytes: Option<u32>,
    /// AccECN: bytes received with ECT(1) (6.18).
    pub received_e1_bytes: Option<u32>,
    /// AccECN: bytes received with ECT(0) (6.18).
    pub received_e0_bytes: Option<u32>,
    /// AccECN: bytes received with CE (6.18).
    pub received_ce_bytes: Option<u32>,
    /// Negotiated ECN mode: 0 disabled, 1 RFC 3168, 2 AccECN, 3 pending (6.18).
    pub ecn_mode: Option<u8>,
    /// AccECN option seen: 0 not seen, 1 empty, 2 counters, 3 failed (6.18).
    pub accecn_opt_seen: Option<u8>,
    /// AccECN failure mode bits (6.18).
    pub accecn_fail_mode: Option<u8>,
    /// Further option bits beyond [`TcpInfo::options`], 24 bits (6.18).
    pub options2: Option<u32>,
}

/// Splits a byte holding two C bitfields `lo:4, hi:4`. GCC allocates
/// bitfields from the least significant bit on little-endian targets and
/// from the most significant on big-endian ones.
fn nibbles(byte: u8) -> (u8, u8) {
    if cfg!(target_endian = "little") {
        (byte & 0x0f, byte >> 4)
    } else {
        (byte >> 4, byte & 0x0f)
    }
}

/// Extracts bitfield `[first, first + width)` counted in declaration order
/// from a storage unit of `bits` bits (see [`nibbles`] for the rule).
fn bitfield(unit: u32, bits: u32, first: u32, width: u32) -> u32 {
    let shift = if cfg!(target_endian = "little") {
        first
    } else {
        bits - first - width
    };
    (unit >> shift) & ((1u32 << width) - 1)
}

impl TcpInfo {
    /// Decodes a raw struct of which the kernel filled the first `len` bytes.
    ///
    /// Bytes past `len` must be zero in `raw` (as [`RawTcpInfo::from_bytes`]
    /// guarantees); they are reported as `None` regardless.
    pub fn from_raw(raw: &RawTcpInfo, len: usize) -> Self {
        // A field is present when the kernel's copy covers its last byte.
        macro_rules! opt {
            ($field:ident) => {
                (len >= std::mem::offset_of!(RawTcpInfo, $field) + size_of_val(&raw.$field))
                    .then_some(raw.$field)
            };
        }
        let (snd_wscale, rcv_wscale) = nibbles(raw.wscale);
        let flags = u32::from(raw.app_limited_bits);
        let ecn_present = len >= std::mem::offset_of!(RawTcpInfo, ecn_bits) + size_of::<u32>();
        let ecn = |first, width| ecn_present.then(|| bitfield(raw.ecn_bits, 32, first, width));
        Self {
            len,
            state: raw.state,
            ca_state: raw.ca_state,
            retransmits: raw.retransmits,
            probes: raw.probes,
            backoff: raw.backoff,
            options: raw.options,
            snd_wscale,
            rcv_wscale,
            delivery_rate_app_limited: bitfield(flags, 8, 0, 1) != 0,
            // Fits: a 2-bit field.
            fastopen_client_fail: bitfield(flags, 8, 1, 2) as u8,
            rto: raw.rto,
            ato: raw.ato,
            snd_mss: raw.snd_mss,
            rcv_mss: raw.rcv_mss,
            unacked: raw.unacked,
            sacked: raw.sacked,
            lost: raw.lost,
            retrans: raw.retrans,
            fackets: raw.fackets,
            last_data_sent: raw.last_data_sent,
            last_ack_sent: raw.last_ack_sent,
            last_data_recv: raw.last_data_recv,
            last_ack_recv: raw.last_ack_recv,
            pmtu: raw.pmtu,
            rcv_ssthresh: raw.rcv_ssthresh,
            rtt: raw.rtt,
            rttvar: raw.rttvar,
            snd_ssthresh: raw.snd_ssthresh,
            snd_cwnd: raw.snd_cwnd,
            advmss: raw.advmss,
            reordering: raw.reordering,
            rcv_rtt: raw.rcv_rtt,
            rcv_space: raw.rcv_space,
            total_retrans: raw.total_retrans,
            pacing_rate: opt!(pacing_rate),
            max_pacing_rate: opt!(max_pacing_rate),
            bytes_acked: opt!(bytes_acked),
            bytes_received: opt!(bytes_received),
            segs_out: opt!(segs_out),
            segs_in: opt!(segs_in),
            notsent_bytes: opt!(notsent_bytes),
            min_rtt: opt!(min_rtt),
            data_segs_in: opt!(data_segs_in),
            data_segs_out: opt!(data_segs_out),
            delivery_rate: opt!(delivery_rate),
            busy_time: opt!(busy_time),
            rwnd_limited: opt!(rwnd_limited),
            sndbuf_limited: opt!(sndbuf_limited),
            delivered: opt!(delivered),
            delivered_ce: opt!(delivered_ce),
            bytes_sent: opt!(bytes_sent),
            bytes_retrans: opt!(bytes_retrans),
            dsack_dups: opt!(dsack_dups),
            reord_seen: opt!(reord_seen),
            rcv_ooopack: opt!(rcv_ooopack),
            snd_wnd: opt!(snd_wnd),
            rcv_wnd: opt!(rcv_wnd),
            rehash: opt!(rehash),
            total_rto: opt!(total_rto),
            total_rto_recoveries: opt!(total_rto_recoveries),
            total_rto_time: opt!(total_rto_time),
            received_ce: opt!(received_ce),
            delivered_e1_bytes: opt!(delivered_e1_bytes),
            delivered_e0_bytes: opt!(delivered_e0_bytes),
            delivered_ce_bytes: opt!(delivered_ce_bytes),
            received_e1_bytes: opt!(received_e1_bytes),
            received_e0_bytes: opt!(received_e0_bytes),
            received_ce_bytes: opt!(received_ce_bytes),
            // The casts below fit: each field is at most 4 bits wide.
            ecn_mode: ecn(0, 2).map(|v| v as u8),
            accecn_opt_seen: ecn(2, 2).map(|v| v as u8),
            accecn_fail_mode: ecn(4, 4).map(|v| v as u8),
            options2: ecn(8, 24),
        }
    }
}

/// The struct up to `total_retrans` has been there since Linux 2.6; anything
/// shorter is not a TCP_INFO.
pub const MIN_LEN: usize = 104;

impl TcpInfo {
    /// Decodes the kernel's bytes (a `getsockopt` buffer or sock_diag's
    /// INET_DIAG_INFO payload); `None` when shorter than the oldest struct.
    /// A field the bytes do not cover is `None`, never zero.
    pub fn decode(b: &[u8]) -> Option<TcpInfo> {
        if b.len() < MIN_LEN {
            return None;
        }
        let (raw, len) = RawTcpInfo::from_bytes(b);
        Some(TcpInfo::from_raw(&raw, len))
    }

    /// Timestamps were negotiated (12 bytes of every segment are options).
    pub fn timestamps(&self) -> bool {
        self.options & OPT_TIMESTAMPS != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::SIZE;

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
        let full = TcpInfo::from_raw(&raw, SIZE);
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
        let info = TcpInfo::from_raw(&raw, SIZE);
        assert_eq!(info.ecn_mode, Some(2));
        assert_eq!(info.accecn_opt_seen, Some(1));
        assert_eq!(info.accecn_fail_mode, Some(0xA));
        assert_eq!(info.options2, Some(0x123456));
    }

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
