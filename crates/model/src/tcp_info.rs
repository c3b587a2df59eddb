//! The kernel's `struct tcp_info`, and its bytes decoded: the one layout
//! both ends of plumb read it with — `plumb-net` from `getsockopt(TCP_INFO)`
//! on its own sockets, `plumb-live` from sock_diag's INET_DIAG_INFO
//! attribute on any socket of the host. Pure: bytes in, fields out, as the
//! raw [`RawTcpInfo`] and the typed [`TcpInfo`] (bitfields unpacked; a field
//! after the 104 bytes Linux 2.6 had is an `Option`, `None` when the
//! kernel's copy stopped before it).
//!
//! Layout follows `include/uapi/linux/tcp.h` through the AccECN counters
//! (Linux 6.18): 280 bytes. Older kernels send a prefix of it; newer
//! kernels may send more, and the bytes past this struct are ignored.

/// `struct tcp_info` as the kernel lays it out (C ABI, natural alignment).
///
/// Bitfields are kept as the raw storage unit they live in: `wscale`
/// (`snd_wscale:4, rcv_wscale:4`), `app_limited_bits`
/// (`delivery_rate_app_limited:1, fastopen_client_fail:2`) and `ecn_bits`
/// (`ecn_mode:2, accecn_opt_seen:2, accecn_fail_mode:4, options2:24`).
/// Unpacking them is the reader's job (`plumb-net`'s `tcpinfo`).
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
    /// Bytes past `len` must be zero in `raw` (as `plumb-net`'s `getsockopt` read and [`RawTcpInfo::from_bytes`]
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
