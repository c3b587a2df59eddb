//! The SYN path: a SYN with every option sent from a raw IPv4 socket, and
//! the peer's SYN-ACK read back from it. Needs `CAP_NET_RAW`.
//!
//! The source port is reserved by an ordinary TCP socket bound to it (never
//! listening), so no other connection of this host takes it meanwhile. No
//! socket of ours accepts the SYN-ACK, so the kernel answers it with a RST:
//! that is wanted — the peer frees its half-open connection at once instead
//! of resending its SYN-ACK, as after nmap's SYN scan.

use std::io::{self, Read};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use super::error::HandshakeError;
use plumb_handshake::wire::{self, Segment};

/// A raw socket for probing one IPv4 service.
pub(super) struct RawProbe {
    sock: Socket,
    src: Ipv4Addr,
    dst: SocketAddrV4,
}

/// The local address the kernel would use to reach `dst`: a UDP socket
/// connected there (connecting a UDP socket sends nothing) names it; an
/// unroutable destination fails here, before any packet.
pub(super) fn source_for(dst: SocketAddr) -> io::Result<SocketAddr> {
    let any: SocketAddr = if dst.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let u = UdpSocket::bind(any)?;
    u.connect(dst)?;
    u.local_addr()
}

impl RawProbe {
    /// Opens the raw socket: `PermissionDenied` without `CAP_NET_RAW`.
    pub(super) fn open(dst: SocketAddrV4) -> io::Result<RawProbe> {
        let sock = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::TCP))?;
        let SocketAddr::V4(src) = source_for(dst.into())? else {
            return Err(io::Error::other("an IPv4 destination gave an IPv6 source"));
        };
        Ok(RawProbe {
            sock,
            src: *src.ip(),
            dst,
        })
    }

    /// One handshake: sends a SYN with sequence number `seq` and waits up
    /// to `timeout` for its SYN-ACK. `Ok(None)` when none came in time.
    pub(super) fn one(
        &self,
        seq: u32,
        timeout: Duration,
    ) -> Result<Option<(Duration, Segment)>, HandshakeError> {
        let reserve = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
        reserve.bind(&SockAddr::from(SocketAddrV4::new(self.src, 0)))?;
        let src_port = reserve.local_addr()?.as_socket().map_or(0, |a| a.port());
        let tsval = seq.rotate_left(13);
        let syn = wire::build_syn(
            self.src,
            *self.dst.ip(),
            src_port,
            self.dst.port(),
            seq,
            tsval,
        );
        let to = SockAddr::from(SocketAddrV4::new(*self.dst.ip(), 0));
        let sent = Instant::now();
        self.sock.send_to(&syn, &to)?;
        let deadline = sent + timeout;
        let mut buf = [0u8; 1600];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            self.sock.set_read_timeout(Some(left))?;
            let n = match (&self.sock).read(&mut buf) {
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(None)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            let Ok(seg) = wire::parse_ipv4_tcp(&buf[..n]) else {
                continue;
            };
            let ours = seg.src == *self.dst.ip()
                && seg.src_port == self.dst.port()
                && seg.dst_port == src_port
                && seg.ack == seq.wrapping_add(1);
            if !ours {
                continue;
            }
            if seg.flags & wire::RST != 0 {
                return Err(HandshakeError::Refused);
            }
            if seg.flags & (wire::SYN | wire::ACK) == wire::SYN | wire::ACK {
                return Ok(Some((sent.elapsed(), seg)));
            }
        }
    }
}
