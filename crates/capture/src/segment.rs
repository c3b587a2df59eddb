//! Decoding one IP packet into what the TCP analysis needs: a TCP segment
//! (addresses, flags, sequence numbers, window, SYN options and the payload
//! length *from the IP header*, so a short snaplen still counts every byte)
//! or an ICMP "fragmentation needed" / ICMPv6 "packet too big" with the
//! connection it quotes.

use std::net::{IpAddr, SocketAddr};

use etherparse::{IpNumber, LaxIpSlice, TcpHeaderSlice};

use crate::options::{self, SynOptions};

/// A TCP segment's header facts.
#[derive(Debug, Clone)]
pub struct Segment {
    /// Sender.
    pub src: SocketAddr,
    /// Receiver.
    pub dst: SocketAddr,
    /// IPv4 TTL or IPv6 hop limit.
    pub ttl: u8,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number (meaningful when `ack` is set).
    pub ack_no: u32,
    /// SYN flag.
    pub syn: bool,
    /// ACK flag.
    pub ack: bool,
    /// FIN flag.
    pub fin: bool,
    /// RST flag.
    pub rst: bool,
    /// The window field, unscaled.
    pub window: u16,
    /// Payload bytes, from the IP length fields.
    pub payload_len: u32,
    /// The options, parsed on SYN segments only.
    pub syn_options: Option<SynOptions>,
    /// What a copy of this segment repeats and a resend of it does not
    /// (see `copies`).
    pub stamp: Stamp,
}

/// The header fields a capture duplicate repeats exactly, beyond the
/// sequence and acknowledgement numbers, window and length: the IPv4
/// identification (0 in IPv6), the TCP checksum, all flag bits, and a
/// digest of the TCP options (timestamps, SACK blocks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stamp {
    /// IPv4 identification; 0 for IPv6.
    pub ip_id: u16,
    /// The TCP checksum field as captured.
    pub checksum: u16,
    /// The TCP flags byte (CWR ... FIN).
    pub flags: u8,
    /// A digest of the option bytes.
    pub options: u32,
}

/// What one IP packet is, for the analysis.
#[derive(Debug, Clone)]
pub enum Decoded {
    /// A TCP segment.
    Tcp(Segment),
    /// ICMP fragmentation needed / ICMPv6 packet too big, quoting a packet
    /// sent from `src` to `dst`.
    TooBig {
        /// The quoted packet's sender.
        src: SocketAddr,
        /// The quoted packet's receiver.
        dst: SocketAddr,
        /// The MTU the message reports.
        mtu: u32,
    },
    /// Another protocol, or ICMP of another kind.
    Other,
    /// An IP fragment past the first: no TCP header to read.
    Fragment,
    /// Headers cut short (by the snaplen or the sender).
    Truncated,
    /// A SYN whose options are malformed, or lengths that disagree.
    Malformed,
}

/// The network layer's facts: addresses, TTL and the payload as declared.
struct Net<'a> {
    src: IpAddr,
    dst: IpAddr,
    ttl: u8,
    /// IPv4 identification (0 for IPv6).
    id: u16,
    proto: IpNumber,
    /// The captured payload (maybe cut short).
    payload: &'a [u8],
    /// The payload's length by the IP header.
    declared: u32,
    fragment: bool,
}

/// Decodes a packet sliced by `link::network`. `wire_after` is the
/// frame's wire length minus the bytes before the IP header: the fallback
/// length when the header's is zero (a GSO super-segment past 64 KiB).
pub fn decode(packet: &LaxIpSlice<'_>, frame: &[u8], orig_len: u32) -> Decoded {
    let Some(net) = net_of(packet, frame, orig_len) else {
        return Decoded::Truncated;
    };
    if net.fragment {
        return Decoded::Fragment;
    }
    match net.proto {
        IpNumber::TCP => tcp(&net),
        IpNumber::ICMP => too_big(net.payload, 3, 4, false),
        IpNumber::IPV6_ICMP => too_big(net.payload, 2, 0, true),
        _ => Decoded::Other,
    }
}

// Inlined into its two callers: returned through memory from a call, `Net`
// costs the per-packet path a few percent.
#[inline]
fn net_of<'a>(packet: &LaxIpSlice<'a>, frame: &[u8], orig_len: u32) -> Option<Net<'a>> {
    let (src, dst, ttl, id, start, declared_total, pay) = match packet {
        LaxIpSlice::Ipv4(v4) => {
            let h = v4.header();
            let total = u32::from(h.total_len());
            (
                IpAddr::V4(h.source_addr()),
                IpAddr::V4(h.destination_addr()),
                h.ttl(),
                h.identification(),
                h.slice(),
                total,
                v4.payload(),
            )
        }
        LaxIpSlice::Ipv6(v6) => {
            let h = v6.header();
            let pl = u32::from(h.payload_length());
            (
                IpAddr::V6(h.source_addr()),
                IpAddr::V6(h.destination_addr()),
                h.hop_limit(),
                0,
                h.slice(),
                if pl == 0 { 0 } else { pl + 40 },
                v6.payload(),
            )
        }
    };
    // Offsets by address: where the IP header and its payload start in the
    // frame (etherparse hands out sub-slices of it).
    let ip_at = (start.as_ptr() as usize).checked_sub(frame.as_ptr() as usize)?;
    let pay_at = (pay.payload.as_ptr() as usize).checked_sub(start.as_ptr() as usize)?;
    let total = if declared_total >= pay_at as u32 {
        declared_total
    } else {
        orig_len.saturating_sub(ip_at as u32)
    };
    Some(Net {
        src,
        dst,
        ttl,
        id,
        proto: pay.ip_number,
        payload: pay.payload,
        declared: total.checked_sub(pay_at as u32)?,
        fragment: pay.fragmented,
    })
}

fn tcp(net: &Net<'_>) -> Decoded {
    let Ok(h) = TcpHeaderSlice::from_slice(net.payload) else {
        // Too short, or a data offset below five words.
        return if net.payload.len() >= 13 && net.payload[12] >> 4 < 5 {
            Decoded::Malformed
        } else {
            Decoded::Truncated
        };
    };
    let hdr_len = u32::from(h.data_offset()) * 4;
    let Some(payload_len) = net.declared.checked_sub(hdr_len) else {
        return Decoded::Malformed;
    };
    let syn_options = if h.syn() {
        match options::parse(h.options()) {
            Ok(o) => Some(o),
            Err(options::Malformed) => return Decoded::Malformed,
        }
    } else {
        None
    };
    Decoded::Tcp(Segment {
        src: SocketAddr::new(net.src, h.source_port()),
        dst: SocketAddr::new(net.dst, h.destination_port()),
        ttl: net.ttl,
        seq: h.sequence_number(),
        ack_no: h.acknowledgment_number(),
        syn: h.syn(),
        ack: h.ack(),
        fin: h.fin(),
        rst: h.rst(),
        window: h.window_size(),
        payload_len,
        syn_options,
        stamp: Stamp {
            ip_id: net.id,
            checksum: h.checksum(),
            flags: h.slice()[13],
            options: digest(h.options()),
        },
    })
}

/// ICMP(v6) of type `kind` and code `code` carrying an MTU: the quoted
/// packet's addresses and ports name the connection.
fn too_big(icmp: &[u8], kind: u8, code: u8, v6: bool) -> Decoded {
    if icmp.len() < 8 || icmp[0] != kind || icmp[1] != code {
        return Decoded::Other;
    }
    let mtu = if v6 {
        u32::from_be_bytes([icmp[4], icmp[5], icmp[6], icmp[7]])
    } else {
        u32::from(u16::from_be_bytes([icmp[6], icmp[7]]))
    };
    let quoted = &icmp[8..];
    let Ok((inner, _)) = LaxIpSlice::from_slice(quoted) else {
        return Decoded::Truncated;
    };
    let Some(net) = net_of(&inner, quoted, quoted.len() as u32) else {
        return Decoded::Truncated;
    };
    // The quote holds at least the first 8 bytes of TCP: the two ports.
    if net.proto != IpNumber::TCP || net.payload.len() < 4 {
        return Decoded::Other;
    }
    let p = net.payload;
    Decoded::TooBig {
        src: SocketAddr::new(net.src, u16::from_be_bytes([p[0], p[1]])),
        dst: SocketAddr::new(net.dst, u16::from_be_bytes([p[2], p[3]])),
        mtu,
    }
}

/// A digest of TCP option bytes, eight at a time (and a last four: a
/// header's options fill whole 32-bit words), each word multiplied in so
/// that differences in two of them (a later timestamp and a later echo)
/// cannot cancel out but by a 2^-32 chance: two segments whose options
/// differ get different digests. Not keyed: a crafted capture gains
/// nothing from a collision but one segment miscounted as a copy.
fn digest(options: &[u8]) -> u32 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = (options.len() as u64).wrapping_mul(K);
    let mut words = options.chunks_exact(8);
    for w in &mut words {
        let v = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        h = (h ^ v).wrapping_mul(K);
    }
    // What is left is 4 bytes or none (options are whole words).
    if let [a, b, c, d, ..] = *words.remainder() {
        h = (h ^ u64::from(u32::from_le_bytes([a, b, c, d]))).wrapping_mul(K);
    }
    (h >> 32) as u32
}
