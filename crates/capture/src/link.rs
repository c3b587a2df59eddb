//! Link layers: from a captured frame to the network layer's bytes.
//! Ethernet (with 802.1Q/802.1ad VLAN tags, which etherparse walks), Linux
//! cooked captures v1 (SLL, 16-byte header) and v2 (SLL2, 20-byte header),
//! raw IP (LINKTYPE_RAW and the IPv4/IPv6-only types) and BSD loopback.

use etherparse::{EtherType, Ethernet2Slice, LaxIpSlice, LaxNetSlice, LaxSlicedPacket};

/// LINKTYPE_NULL: BSD loopback, a 4-byte host-order address family.
pub const NULL: u32 = 0;
/// LINKTYPE_ETHERNET.
pub const ETHERNET: u32 = 1;
/// LINKTYPE_RAW: the frame is an IPv4 or IPv6 packet.
pub const RAW: u32 = 101;
/// LINKTYPE_LOOP: OpenBSD loopback, a 4-byte network-order family.
pub const LOOP: u32 = 108;
/// LINKTYPE_LINUX_SLL: Linux cooked capture v1.
pub const LINUX_SLL: u32 = 113;
/// LINKTYPE_IPV4.
pub const IPV4: u32 = 228;
/// LINKTYPE_IPV6.
pub const IPV6: u32 = 229;
/// LINKTYPE_LINUX_SLL2: Linux cooked capture v2.
pub const LINUX_SLL2: u32 = 276;
/// DLT_RAW as some systems number it (12, 14).
const RAW_ALIASES: [u32; 2] = [12, 14];

/// Why a frame carried no IP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotIp {
    /// A link type this reader does not decode.
    UnknownLink,
    /// The frame is shorter than its link header.
    Truncated,
    /// A link header naming another protocol (ARP, ...).
    OtherProtocol,
}

/// Slices `frame` of link type `linktype` down to its IP packet.
/// `LaxIpSlice` keeps going over a packet cut short by the snaplen.
pub fn network(linktype: u32, frame: &[u8]) -> Result<LaxIpSlice<'_>, NotIp> {
    match linktype {
        ETHERNET => {
            let eth =
                Ethernet2Slice::from_slice_without_fcs(frame).map_err(|_| NotIp::Truncated)?;
            by_ether_type(eth.ether_type(), eth.payload_slice())
        }
        LINUX_SLL => {
            // Protocol (ether type) at bytes 14-15, the payload at 16.
            let (proto, rest) = split(frame, 14, 16)?;
            by_ether_type(EtherType(proto), rest)
        }
        LINUX_SLL2 => {
            // Protocol first (bytes 0-1), the payload at 20.
            let (proto, rest) = split(frame, 0, 20)?;
            by_ether_type(EtherType(proto), rest)
        }
        RAW | IPV4 | IPV6 => from_ip(frame),
        t if RAW_ALIASES.contains(&t) => from_ip(frame),
        NULL | LOOP => from_ip(frame.get(4..).ok_or(NotIp::Truncated)?),
        _ => Err(NotIp::UnknownLink),
    }
}

/// IPv4 and IPv6 go straight to the IP parser. Anything else (VLAN tags,
/// MACsec, ARP, ...) takes etherparse's whole walk, whose result is some
/// hundreds of bytes: moved once per packet, it would cost more than the
/// parsing itself, so the common case does without it.
fn by_ether_type(ether_type: EtherType, payload: &[u8]) -> Result<LaxIpSlice<'_>, NotIp> {
    match ether_type {
        EtherType::IPV4 | EtherType::IPV6 => from_ip(payload),
        _ => match LaxSlicedPacket::from_ether_type(ether_type, payload).net {
            Some(LaxNetSlice::Ipv4(v4)) => Ok(LaxIpSlice::Ipv4(v4)),
            Some(LaxNetSlice::Ipv6(v6)) => Ok(LaxIpSlice::Ipv6(v6)),
            _ => Err(NotIp::OtherProtocol),
        },
    }
}

fn from_ip(bytes: &[u8]) -> Result<LaxIpSlice<'_>, NotIp> {
    LaxIpSlice::from_slice(bytes)
        .map(|(ip, _)| ip)
        .map_err(|_| NotIp::OtherProtocol)
}

/// The big-endian u16 at `at` and the bytes from `payload` on.
fn split(frame: &[u8], at: usize, payload: usize) -> Result<(u16, &[u8]), NotIp> {
    let rest = frame.get(payload..).ok_or(NotIp::Truncated)?;
    Ok((u16::from_be_bytes([frame[at], frame[at + 1]]), rest))
}
