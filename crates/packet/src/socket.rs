//! The packet socket of a live capture, set up in the order that keeps
//! unfiltered packets out: opened for no protocol (it receives nothing),
//! bound to the interface to learn its hardware type, given its filter and
//! its receive ring, and only then bound for every protocol. Closing it
//! (drop) unmaps the ring, then closes the descriptor, which also ends the
//! promiscuous mode it asked for.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use crate::bpf::{self, Selection};
use crate::error::Error;
use crate::link::{self, Link};
use crate::ring;
use crate::sys::{self, RxRing};

/// `ETH_P_ALL`: every protocol (the filter then chooses).
const ETH_P_ALL: u16 = 0x0003;
const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
const PACKET_RX_RING: libc::c_int = 5;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_VERSION: libc::c_int = 10;
const TPACKET_V3: libc::c_int = 2;
const PACKET_MR_PROMISC: u16 = 1;

/// A bound packet socket with its ring.
#[derive(Debug)]
pub struct PacketSocket {
    // Declared before `fd`: the ring is unmapped before the socket closes.
    ring: RxRing,
    fd: OwnedFd,
    /// How the interface is read.
    pub link: Link,
    /// The interface took promiscuous mode (a SPAN port's frames are for
    /// other hosts' addresses).
    pub promiscuous: bool,
}

/// Packets the filter passed and packets the ring had no room for, since
/// the last read of the counters (reading resets them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Passed the filter (dropped ones included).
    pub received: u64,
    /// Dropped for want of room in the ring.
    pub dropped: u64,
}

impl PacketSocket {
    /// Opens, filters and binds a socket on `iface`.
    pub fn open(iface: &str, sel: &Selection) -> Result<PacketSocket, Error> {
        let index = sys::ifindex(iface).ok_or_else(|| Error::UnknownInterface(iface.into()))?;
        let probe =
            sys::packet_socket(libc::SOCK_RAW, 0).map_err(Error::socket("packet socket"))?;
        sys::bind(probe.as_fd(), index, 0).map_err(bind_error(iface))?;
        let hatype = sys::bound_hatype(probe.as_fd()).map_err(Error::socket("interface type"))?;
        let link = link::for_hatype(hatype);
        let fd = if link.sock_type == libc::SOCK_RAW {
            probe
        } else {
            drop(probe);
            let fd =
                sys::packet_socket(link.sock_type, 0).map_err(Error::socket("packet socket"))?;
            sys::bind(fd.as_fd(), index, 0).map_err(bind_error(iface))?;
            fd
        };
        let sel = Selection {
            skip_outgoing: link.loopback,
            ..sel.clone()
        };
        let program = bpf::program(link.framing, &sel).map_err(|_| Error::TooManyFilters)?;
        sys::attach_filter(fd.as_fd(), &program).map_err(Error::socket("attaching the filter"))?;
        let ring = setup_ring(fd.as_fd())?;
        let promiscuous = promisc(fd.as_fd(), index).is_ok();
        sys::bind(fd.as_fd(), index, ETH_P_ALL).map_err(bind_error(iface))?;
        Ok(PacketSocket {
            ring,
            fd,
            link,
            promiscuous,
        })
    }

    /// The descriptor, to poll.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The ring.
    pub fn ring(&self) -> &RxRing {
        &self.ring
    }

    /// Reads (and resets) the kernel's counters (`PACKET_STATISTICS`).
    pub fn counters(&self) -> Result<Counters, Error> {
        let mut st = [0u8; 12];
        let n = sys::getsockopt_bytes(self.fd(), libc::SOL_PACKET, PACKET_STATISTICS, &mut st)
            .map_err(Error::socket("reading the drop counter"))?;
        let word =
            |i: usize| u64::from(u32::from_ne_bytes([st[i], st[i + 1], st[i + 2], st[i + 3]]));
        if n < 8 {
            return Ok(Counters::default());
        }
        Ok(Counters {
            received: word(0),
            dropped: word(4),
        })
    }
}

/// An interface that vanished or is down between lookup and bind reads as
/// unknown; anything else is the kernel's.
fn bind_error(iface: &str) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| {
        if e.raw_os_error() == Some(libc::ENODEV) {
            Error::UnknownInterface(iface.into())
        } else {
            Error::socket("binding to the interface")(e)
        }
    }
}

fn setup_ring(fd: BorrowedFd<'_>) -> Result<RxRing, Error> {
    sys::setsockopt_int(fd, libc::SOL_PACKET, PACKET_VERSION, TPACKET_V3)
        .map_err(Error::socket("TPACKET_V3"))?;
    sys::setsockopt_bytes(fd, libc::SOL_PACKET, PACKET_RX_RING, &ring::request())
        .map_err(Error::socket("the receive ring"))?;
    RxRing::map(fd, ring::BLOCK_SIZE, ring::BLOCKS)
        .map_err(Error::socket("mapping the receive ring"))
}

/// `PACKET_ADD_MEMBERSHIP` with `PACKET_MR_PROMISC` (`struct packet_mreq`:
/// ifindex, type, address length, address[8]); it lasts as long as the
/// socket.
fn promisc(fd: BorrowedFd<'_>, index: u32) -> std::io::Result<()> {
    let mut mreq = [0u8; 16];
    mreq[0..4].copy_from_slice(&(index as i32).to_ne_bytes());
    mreq[4..6].copy_from_slice(&PACKET_MR_PROMISC.to_ne_bytes());
    sys::setsockopt_bytes(fd, libc::SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq)
}
