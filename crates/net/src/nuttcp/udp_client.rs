//! plumb's client's UDP test against a nuttcp server: this end sends to
//! the data ports the request named (one per stream), or receives there
//! from the server.

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

/// The sockets a receiving client binds before its request goes out, so
/// that the server's first datagrams find them.
///
/// # Errors
/// A data port cannot be bound.
pub fn bind_receiver(local: IpAddr, req: &Request) -> Result<Vec<UdpSocket>, TestError> {
    udp::bound(local, req).map_err(TestError::Stream)
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
    bound: Option<Vec<UdpSocket>>,
    sink: &mut dyn Sink,
) -> Result<(), TestError> {
    let sends = req.client_sends;
    let socks = match bound {
        Some(s) => s,
        None => {
            let local = ctl.stream.local_addr().map_err(TestError::Control)?.ip();
            udp::connected(local, server.ip(), req).map_err(TestError::Stream)?
        }
    };
    let peer = SocketAddr::new(server.ip(), if sends { req.port } else { 0 });
    sink.start(&udp_record::start(Role::Client, &socks, peer, req));
    let cpu0 = CpuSnapshot::take().ok().map(|c| (c, Instant::now()));
    let mut rep = Reporter::new(&socks[0], req.interval, sends, req.buflen);
    let mut never = || false;
    let mine = if sends {
        udp::send(
            &socks,
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
            &socks,
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
    let end = udp_record::end(&socks[0], sends, mine, theirs, req.buflen, cpu);
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
