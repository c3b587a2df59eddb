//! plumb's client's UDP test against a nuttcp server: this end sends to
//! the data port the request named, or receives there from the server.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use plumb_proto::nuttcp::brief::Brief;
use plumb_proto::nuttcp::request::Request;
use plumb_record::engine::Role;
use plumb_record::Sink;

use super::control::{read_closing, Control};
use super::udp::{self, Figures, Reporter};
use super::udp_record;
use crate::config::ClientConfig;
use crate::errors::TestError;
use crate::host::CpuSnapshot;

/// How long past the test's time a receiving client waits for the end.
const END_GRACE: Duration = Duration::from_secs(10);

/// The socket a receiving client binds before its request goes out, so
/// that the server's first datagrams find it.
///
/// # Errors
/// The data port cannot be bound.
pub fn bind_receiver(local: IpAddr, req: &Request) -> Result<UdpSocket, TestError> {
    UdpSocket::bind(SocketAddr::new(local, req.port)).map_err(TestError::Stream)
}

/// Runs the UDP data of an accepted request and reports it.
///
/// # Errors
/// The data socket fails, or the server sends no closing figures.
pub fn run(
    cfg: &ClientConfig,
    req: &Request,
    ctl: &mut Control,
    server: SocketAddr,
    bound: Option<UdpSocket>,
    sink: &mut dyn Sink,
) -> Result<(), TestError> {
    let sends = req.client_sends;
    let sock = match bound {
        Some(s) => s,
        None => {
            let local = ctl.stream.local_addr().map_err(TestError::Control)?.ip();
            let s = UdpSocket::bind(SocketAddr::new(local, 0)).map_err(TestError::Stream)?;
            s.connect(SocketAddr::new(server.ip(), req.port))
                .map_err(TestError::Stream)?;
            s
        }
    };
    let peer = SocketAddr::new(server.ip(), if sends { req.port } else { 0 });
    udp::size_buffers(&sock, req.window);
    sink.start(&udp_record::start(Role::Client, &sock, peer, req));
    let cpu0 = CpuSnapshot::take().ok().map(|c| (c, Instant::now()));
    let mut rep = Reporter::new(&sock, req.interval, sends, req.buflen);
    let mut never = || false;
    let mine = if sends {
        udp::send(
            &sock,
            req.buflen,
            req.rate_bps(),
            req.seconds,
            &mut rep,
            sink,
            &mut never,
        )
    } else {
        let deadline = Instant::now() + Duration::from_secs_f64(req.seconds) + END_GRACE;
        udp::receive(
            &sock,
            server.ip(),
            deadline,
            cfg.rcv_timeout,
            &mut rep,
            sink,
            &mut never,
        )
    }
    .map_err(TestError::Stream)?;
    let closing = read_closing(ctl)?;
    let theirs = Some(Figures {
        bytes: closing.bytes,
        seconds: closing.seconds,
        ..Figures::default()
    });
    let cpu = udp_record::cpu(cpu0, closing.cpu_percent);
    let end = udp_record::end(&sock, sends, mine, theirs, req.buflen, cpu);
    sink.end(&end);
    let s = &end.streams[0];
    let (mine_cpu, their_cpu) = (
        cpu.host_total.round() as u32,
        cpu.remote_total.round() as u32,
    );
    let brief = Brief {
        bytes: s.received.bytes,
        seconds: s.received.seconds,
        tx_cpu: if sends { mine_cpu } else { their_cpu },
        rx_cpu: if sends { their_cpu } else { mine_cpu },
        retrans: None,
        rtt_ms: None,
        udp_sent: Some((
            s.udp.map_or(0, |u| u.sent_packets.max(0) as u64),
            u64::from(req.buflen),
        )),
    };
    sink.note(&brief.line());
    Ok(())
}
