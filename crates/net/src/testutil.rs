//! Loopback fixtures shared by the unit tests (test builds only).
//!
//! Every socket made here is bound to 127.0.0.1 (or ::1) and carries a
//! 5-second read and write timeout, so a broken test fails instead of hanging.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::OwnedFd;
use std::time::Duration;

/// Upper bound on any single blocking call in a test.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);

fn loopback() -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, 0))
}

/// A connected loopback TCP pair `(client, server)` as owned descriptors.
pub fn tcp_pair() -> (OwnedFd, OwnedFd) {
    let (c, s) = tcp_stream_pair();
    (OwnedFd::from(c), OwnedFd::from(s))
}

/// A connected loopback TCP pair `(client, server)` with timeouts set.
pub fn tcp_stream_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind(loopback()).expect("bind loopback listener");
    let addr = listener.local_addr().expect("listener address");
    let client = TcpStream::connect_timeout(&addr, IO_TIMEOUT).expect("connect loopback");
    let (server, _) = listener.accept().expect("accept loopback");
    for s in [&client, &server] {
        s.set_read_timeout(Some(IO_TIMEOUT)).expect("read timeout");
        s.set_write_timeout(Some(IO_TIMEOUT))
            .expect("write timeout");
    }
    (client, server)
}

/// A connected loopback UDP pair `(sender, receiver)` with timeouts set.
pub fn udp_pair() -> (UdpSocket, UdpSocket) {
    let rx = UdpSocket::bind(loopback()).expect("bind loopback udp");
    let tx = UdpSocket::bind(loopback()).expect("bind loopback udp");
    tx.connect(rx.local_addr().expect("rx address"))
        .expect("connect udp");
    rx.connect(tx.local_addr().expect("tx address"))
        .expect("connect udp");
    for s in [&tx, &rx] {
        s.set_read_timeout(Some(IO_TIMEOUT)).expect("read timeout");
        s.set_write_timeout(Some(IO_TIMEOUT))
            .expect("write timeout");
    }
    (tx, rx)
}

/// Byte `i` of the test stream: a pattern that differs between neighbouring
/// blocks so a duplicated or dropped block is visible.
pub fn pattern(i: u64) -> u8 {
    (i.wrapping_mul(31) ^ (i >> 17)) as u8
}
