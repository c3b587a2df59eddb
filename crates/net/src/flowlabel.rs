//! An IPv6 flow label for a TCP stream (`-L`): Linux hands a label to a
//! socket only through its flow label manager (`IPV6_FLOWLABEL_MGR`, the
//! label leased for the destination), then sends it once
//! `IPV6_FLOWINFO_SEND` is on and the connect address carries it
//! ([`crate::local::LocalOptions::data_addr`]).

use std::io;
use std::net::Ipv6Addr;
use std::os::fd::BorrowedFd;

use crate::sys;

/// `IPV6_FL_A_GET`: lease a label.
const ACTION_GET: u8 = 0;
/// `IPV6_FL_S_ANY`: any socket may share it.
const SHARE_ANY: u8 = 255;
/// `IPV6_FL_F_CREATE`: create it when it does not exist.
const FLAG_CREATE: u16 = 1;

/// `struct in6_flowlabel_req` (linux/in6.h) as its 32 bytes: the
/// destination, the label (network order), action, share, flags, expiry and
/// linger, and padding.
fn request(dst: &Ipv6Addr, label: u32) -> [u8; 32] {
    let mut r = [0u8; 32];
    r[..16].copy_from_slice(&dst.octets());
    r[16..20].copy_from_slice(&label.to_be_bytes());
    r[20] = ACTION_GET;
    r[21] = SHARE_ANY;
    r[22..24].copy_from_slice(&FLAG_CREATE.to_ne_bytes());
    r
}

/// Leases `label` for `dst` on the socket and turns sending it on.
pub fn lease(fd: BorrowedFd<'_>, dst: &Ipv6Addr, label: u32) -> io::Result<()> {
    let req = request(dst, label);
    sys::setsockopt_bytes(fd, libc::IPPROTO_IPV6, libc::IPV6_FLOWLABEL_MGR, &req)?;
    sys::setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_FLOWINFO_SEND, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_is_the_kernels_layout() {
        let r = request(&Ipv6Addr::LOCALHOST, 0x12345);
        assert_eq!(r[15], 1, "::1 in the first 16 bytes");
        assert_eq!(
            &r[16..20],
            &[0x00, 0x01, 0x23, 0x45],
            "the label, network order"
        );
        assert_eq!((r[20], r[21]), (0, 255), "get, shared with any");
        assert_eq!(u16::from_ne_bytes([r[22], r[23]]), 1, "create");
        assert!(r[24..].iter().all(|&b| b == 0));
    }
}
