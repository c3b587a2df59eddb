//! The SYN path: a SYN with every option sent from a raw IPv4 or IPv6
//! socket, and the peer's SYN-ACK read back from it. Needs `CAP_NET_RAW`.
//! An IPv4 raw socket hands over the IP header with the TTL; an IPv6 one
//! only the TCP segment, so its hop limit and sender come from `recvmsg`'s
//! control message ([`crate::sys::recv_hoplimit`]).
//!
//! The source port is reserved by an ordinary TCP socket bound to it (never
//! listening), so no other connection of this host takes it meanwhile. No
//! socket of ours accepts the SYN-ACK, so the kernel answers it with a RST:
//! that is wanted — the peer frees its half-open connection at once instead
//! of resending its SYN-ACK, as after nmap's SYN scan.

use std::io::{self, Read};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use super::error::HandshakeError;
use crate::wire::{self, Segment};

/// A raw socket for probing one service.
pub(super) struct RawProbe {
    sock: Socket,
    src: IpAddr,
    dst: SocketAddr,
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
    pub(super) fn open(dst: SocketAddr) -> io::Result<RawProbe> {
        let sock = Socket::new(Domain::for_address(dst), Type::RAW, Some(Protocol::TCP))?;
        if dst.is_ipv6() {
            sock.set_recv_hoplimit_v6(true)?;
        }
        let src = source_for(dst)?.ip();
        Ok(RawProbe { sock, src, dst })
    }

    /// One packet from the raw socket, read as a TCP segment (`None`: not
    /// one, or not readable).
    fn next(&self, buf: &mut [u8]) -> io::Result<Option<Segment>> {
        if self.dst.is_ipv4() {
            let n = (&self.sock).read(buf)?;
            return Ok(wire::parse_ipv4_tcp(&buf[..n]).ok());
        }
        let r = crate::sys::recv_hoplimit(self.sock.as_fd(), buf)?;
        // Without the hop limit the TTL is unknown: 0 rounds up to 32, which
        // the OS guess calls unknown rather than guess from.
        let hops = r.hop_limit.unwrap_or(0);
        Ok(wire::parse_tcp(&buf[..r.len], r.from.into(), self.src, hops, None).ok())
    }

    /// One handshake: sends a SYN with sequence number `seq` and waits up
    /// to `timeout` for its SYN-ACK. `Ok(None)` when none came in time.
    pub(super) fn one(
        &self,
        seq: u32,
        timeout: Duration,
    ) -> Result<Option<(Duration, Segment)>, HandshakeError> {
        let reserve = Socket::new(
            Domain::for_address(self.dst),
            Type::STREAM,
            Some(Protocol::TCP),
        )?;
        reserve.bind(&SockAddr::from(SocketAddr::new(self.src, 0)))?;
        let src_port = reserve.local_addr()?.as_socket().map_or(0, |a| a.port());
        let tsval = seq.rotate_left(13);
        let syn = wire::build_syn(
            self.src,
            self.dst.ip(),
            src_port,
            self.dst.port(),
            seq,
            tsval,
        );
        // A raw socket's "port" is the protocol; 0 for both families.
        let to = SockAddr::from(SocketAddr::new(self.dst.ip(), 0));
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
            let seg = match self.next(&mut buf) {
                Ok(Some(seg)) => seg,
                Ok(None) => continue,
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
            let ours = seg.src == self.dst.ip()
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
