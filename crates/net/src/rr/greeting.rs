//! The greeting a plumb server writes first on every request/response and
//! probe connection ([`plumb_proto::rr`]): it tells a plumb client that the
//! server answers transactions (a stock iperf3 server is silent) and, for
//! `--crr`, which port takes the new connections.

use std::io::{self, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::time::Duration;

use plumb_proto::rr as wire;

use crate::datathread::transient;
use crate::sockets::StreamSocket;

/// How long a client waits for a plumb server's greeting.
pub const GREETING_TIMEOUT: Duration = Duration::from_secs(3);

/// Server: greets a request/response or probe TCP stream.
pub fn greet_tcp(s: &TcpStream, crr_port: u16) -> io::Result<()> {
    (&*s).write_all(&wire::greeting(crr_port))
}

/// Server: greets a request/response UDP stream.
pub fn greet_udp(u: &UdpSocket) -> io::Result<()> {
    u.send(&wire::greeting(0)).map(|_| ())
}

fn not_plumb() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "the server is not plumb: it did not greet the request/response stream \
         (a stock iperf3 server runs throughput tests only; --rr, --crr and --latency need plumb -s)",
    )
}

/// Client: reads a plumb server's greeting; the CRR port in it.
pub fn expect_greeting(sock: &StreamSocket) -> io::Result<u16> {
    let mut g = [0u8; wire::GREETING_LEN];
    match sock {
        StreamSocket::Tcp(t) => {
            t.set_read_timeout(Some(GREETING_TIMEOUT))?;
            let mut r: &TcpStream = t;
            r.read_exact(&mut g).map_err(|e| {
                if transient(&e) || e.kind() == io::ErrorKind::UnexpectedEof {
                    not_plumb()
                } else {
                    e
                }
            })?;
            wire::parse_greeting(&g).ok_or_else(not_plumb)
        }
        StreamSocket::Udp(u) => {
            u.set_read_timeout(Some(GREETING_TIMEOUT))?;
            let mut buf = [0u8; 2048];
            // The server's hello reply may come again before the greeting.
            for _ in 0..4 {
                let n = u
                    .recv(&mut buf)
                    .map_err(|e| if transient(&e) { not_plumb() } else { e })?;
                if let Some(port) = wire::parse_greeting(&buf[..n]) {
                    return Ok(port);
                }
            }
            Err(not_plumb())
        }
    }
}
