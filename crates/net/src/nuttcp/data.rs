//! nuttcp's TCP data connections, on either end: one per stream on the
//! data port and the ports after it. Normally the client connects to the
//! server; with `-F` (flip) the server connects back to the client. A
//! listening end takes a connection only from its control peer's address.

use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::handoff::Expected;
use crate::sockets::{self, DataOptions};

/// How long a listening end waits for each data connection, and a
/// connecting end keeps trying while the peer is not listening yet.
pub const DATA_WAIT: Duration = Duration::from_secs(10);

/// Listeners on `port`, `port + 1`, … on `local` (the control
/// connection's own address), one per stream.
///
/// # Errors
/// A port past 65535, or one that cannot be bound.
pub fn listen(
    local: IpAddr,
    port: u16,
    streams: u32,
    o: &DataOptions,
    sender: bool,
) -> io::Result<Vec<TcpListener>> {
    (0..streams)
        .map(|i| {
            let p = port_of(port, i)?;
            let addr = SocketAddr::new(local, p);
            let sock = socket2::Socket::new(
                socket2::Domain::for_address(addr),
                socket2::Type::STREAM,
                None,
            )?;
            sock.set_reuse_address(true)?;
            sockets::pre_connect(&sock, o, sender, !sender, true)?;
            sock.bind(&addr.into())
                .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
            sock.listen(8)?;
            let l: TcpListener = sock.into();
            l.set_nonblocking(true)?;
            Ok(l)
        })
        .collect()
}

/// The `i`th stream's port.
fn port_of(port: u16, i: u32) -> io::Result<u16> {
    u16::try_from(u32::from(port) + i)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "data ports run past 65535"))
}

/// One connection on each listener, from `peer` only (others are closed
/// and the wait goes on), each within [`DATA_WAIT`].
///
/// # Errors
/// A listener with no connection from `peer` in time.
pub fn accept_from(
    listeners: &[TcpListener],
    peer: IpAddr,
    o: &DataOptions,
    sender: bool,
) -> io::Result<Vec<TcpStream>> {
    let mut out = Vec::with_capacity(listeners.len());
    for l in listeners {
        let deadline = Instant::now() + DATA_WAIT;
        loop {
            match l.accept() {
                Ok((s, from)) if same_host(from.ip(), peer) => {
                    s.set_nonblocking(false)?;
                    sockets::post_accept(&s, o, sender)?;
                    out.push(s);
                    break;
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!(
                                "no data connection from {peer} within {}s",
                                DATA_WAIT.as_secs()
                            ),
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(out)
}

/// The listeners a listening end opens before it answers: one on each of
/// the request's data ports that another tool's listener does not own
/// (`handed`), with its port.
///
/// # Errors
/// A port that cannot be listened on (in use, or past 65535).
pub fn listen_own(
    local: IpAddr,
    req: &plumb_proto::nuttcp::request::Request,
    handed: &[Expected],
    o: &DataOptions,
    sender: bool,
) -> io::Result<Vec<(u16, TcpListener)>> {
    let mut own = Vec::new();
    for i in 0..req.streams {
        let p = port_of(req.port, i)?;
        if !handed.iter().any(|h| h.port() == p) {
            own.extend(listen(local, p, 1, o, sender)?.into_iter().map(|l| (p, l)));
        }
    }
    Ok(own)
}

/// A listening end's data connections, in port order: on each port
/// another tool's listener owns, the one it hands over (`handed`); on each
/// other, one from `peer` on this end's own listener (`own`).
///
/// # Errors
/// A connection that does not come.
pub fn accept_all(
    own: &[(u16, TcpListener)],
    handed: &[Expected],
    peer: IpAddr,
    o: &DataOptions,
    sender: bool,
) -> io::Result<Vec<TcpStream>> {
    let mut ports: Vec<u16> = own
        .iter()
        .map(|(p, _)| *p)
        .chain(handed.iter().map(Expected::port))
        .collect();
    ports.sort_unstable();
    let mut out = Vec::with_capacity(ports.len());
    for p in ports {
        if let Some(h) = handed.iter().find(|h| h.port() == p) {
            let s = h.take(DATA_WAIT)?;
            s.set_nonblocking(false)?;
            sockets::post_accept(&s, o, sender)?;
            out.push(s);
        } else if let Some((_, l)) = own.iter().find(|(q, _)| *q == p) {
            out.extend(accept_from(std::slice::from_ref(l), peer, o, sender)?);
        }
    }
    Ok(out)
}

/// Whether two addresses are the same host (an IPv4-mapped IPv6 address
/// equals its IPv4 form).
pub fn same_host(a: IpAddr, b: IpAddr) -> bool {
    a.to_canonical() == b.to_canonical()
}

/// Connects one stream to `to`, port `port + i` each, retrying a refused
/// connection until [`DATA_WAIT`] (the peer listens once it has answered).
///
/// # Errors
/// The last failure once the wait is over.
pub fn connect(
    to: IpAddr,
    port: u16,
    streams: u32,
    bind: Option<IpAddr>,
    o: &DataOptions,
    sender: bool,
) -> io::Result<Vec<TcpStream>> {
    (0..streams)
        .map(|i| {
            let addr = SocketAddr::new(to, port_of(port, i)?);
            let deadline = Instant::now() + DATA_WAIT;
            loop {
                let r = sockets::connect_tcp(addr, bind, None, Some(DATA_WAIT), |s| {
                    sockets::pre_connect(s, o, sender, !sender, true)
                });
                match r {
                    Err(e)
                        if e.kind() == io::ErrorKind::ConnectionRefused
                            && Instant::now() < deadline =>
                    {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    other => return other,
                }
            }
        })
        .collect()
}

/// Whether the client takes the data connections (nuttcp's transmitter
/// connects to its receiver; `-F` turns that round).
pub fn client_listens(req: &plumb_proto::nuttcp::request::Request) -> bool {
    req.client_sends == req.flip
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn a_listener_takes_only_its_control_peer() {
        let o = DataOptions::default();
        let l = TcpListener::bind("127.0.0.1:0").expect("listen");
        l.set_nonblocking(true).expect("nonblocking");
        let at = l.local_addr().expect("addr");
        let stranger = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
        let from_stranger = sockets::connect_tcp(at, Some(stranger), None, None, |_| Ok(()))
            .expect("connect from 127.0.0.2");
        let from_peer = TcpStream::connect(at).expect("connect from 127.0.0.1");
        let peer = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let got = accept_from(&[l], peer, &o, false).expect("the peer's connection");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].peer_addr().ok(), from_peer.local_addr().ok());
        assert_ne!(got[0].peer_addr().ok(), from_stranger.local_addr().ok());
    }

    #[test]
    fn mapped_addresses_are_the_same_host() {
        let v4 = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().expect("address");
        assert!(same_host(v4, mapped));
        assert!(!same_host(v4, IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2))));
    }
}
