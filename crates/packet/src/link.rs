//! Which link layer a capture records for an interface, from its hardware
//! type (`ARPHRD_*`): Ethernet and loopback frames are kept whole (link
//! type Ethernet; loopback carries a zeroed Ethernet header); every other
//! interface (tun, WireGuard, PPP, IP tunnels, ...) is read with
//! `SOCK_DGRAM`, which takes the link header off, and recorded as raw IP
//! — the filter passes IP packets only, so nothing else needs a header to
//! tell it apart.

use crate::bpf::Framing;

/// `ARPHRD_ETHER`.
const ARPHRD_ETHER: u16 = 1;
/// `ARPHRD_LOOPBACK`.
const ARPHRD_LOOPBACK: u16 = 772;
/// LINKTYPE_ETHERNET.
const LINKTYPE_ETHERNET: u32 = 1;
/// LINKTYPE_RAW: an IPv4 or IPv6 packet.
const LINKTYPE_RAW: u32 = 101;

/// How an interface is read and recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// `SOCK_RAW` (whole frames) or `SOCK_DGRAM` (from the IP header).
    pub sock_type: libc::c_int,
    /// Where the filter finds the IP header.
    pub framing: Framing,
    /// The LINKTYPE_* of the records.
    pub linktype: u32,
    /// The interface is loopback: every packet passes it twice (out, in).
    pub loopback: bool,
}

/// How an interface of hardware type `hatype` is read.
pub fn for_hatype(hatype: u16) -> Link {
    match hatype {
        ARPHRD_ETHER | ARPHRD_LOOPBACK => Link {
            sock_type: libc::SOCK_RAW,
            framing: Framing::Ethernet,
            linktype: LINKTYPE_ETHERNET,
            loopback: hatype == ARPHRD_LOOPBACK,
        },
        _ => Link {
            sock_type: libc::SOCK_DGRAM,
            framing: Framing::Ip,
            linktype: LINKTYPE_RAW,
            loopback: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ethernet_and_loopback_keep_frames_others_start_at_ip() {
        assert_eq!(for_hatype(1).linktype, 1);
        assert!(for_hatype(772).loopback && for_hatype(772).sock_type == libc::SOCK_RAW);
        // ARPHRD_NONE (tun, WireGuard) and ARPHRD_PPP.
        for t in [0xfffe, 512] {
            let l = for_hatype(t);
            assert_eq!(
                (l.linktype, l.framing, l.sock_type),
                (101, Framing::Ip, libc::SOCK_DGRAM)
            );
        }
    }
}
