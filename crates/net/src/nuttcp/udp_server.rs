//! plumb's server's UDP test for a nuttcp client: it receives on the data
//! ports the request names (one per stream, from the first up), from the
//! control peer only, or sends to those ports on the control peer's
//! address, nowhere else.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use plumb_proto::nuttcp::reply::Closing;
use plumb_proto::nuttcp::request::Request;
use plumb_record::engine::Role;
use plumb_record::Sink;

use super::control::Control;
use super::udp::{self, Reporter};
use super::udp_record;
use crate::config::ServerConfig;
use crate::errors::TestError;
use crate::host::CpuSnapshot;

/// How long past the test's time a receiving server waits for the end.
const END_GRACE: Duration = Duration::from_secs(10);

/// Runs the UDP data of an accepted request on its sockets (made ready
/// before the answer, [`super::ready`]) and sends the client its report.
///
/// # Errors
/// The data socket fails.
pub fn serve(
    cfg: &ServerConfig,
    ctl: &mut Control,
    peer: SocketAddr,
    req: &Request,
    socks: Vec<UdpSocket>,
    sink: &mut dyn Sink,
) -> Result<(), TestError> {
    let sends = !req.client_sends;
    sink.start(&udp_record::start(
        Role::Server,
        &socks,
        SocketAddr::new(peer.ip(), if sends { req.port } else { 0 }),
        req,
    ));
    let cpu0 = CpuSnapshot::take().ok().map(|c| (c, Instant::now()));
    let mut rep = Reporter::new(&socks[0], req.interval, sends, req.buflen);
    if !sends {
        rep.lines_to = ctl.stream.try_clone().ok();
        rep.format = req.format;
    }
    // The client's close of its control connection ends the test.
    let probe = ctl.stream.try_clone().map_err(TestError::Control)?;
    let _ = probe.set_nonblocking(true);
    let mut gone = || {
        let mut b = [0u8; 64];
        matches!(probe.peek(&mut b), Ok(0))
    };
    let mine = if sends {
        udp::send(
            &socks,
            req.buflen,
            req.rate_bps(),
            req.seconds,
            &mut rep,
            sink,
            &mut gone,
        )
    } else {
        let deadline = Instant::now() + Duration::from_secs_f64(req.seconds) + END_GRACE;
        udp::receive(
            &socks,
            peer.ip(),
            deadline,
            cfg.rcv_timeout,
            &mut rep,
            sink,
            &mut gone,
        )
    }
    .map_err(TestError::Stream)?;
    if !sends && req.interval > 0.0 {
        ctl.send("DONE\n")?;
    }
    let cpu = udp_record::cpu(cpu0, None);
    let closing = Closing {
        bytes: mine.bytes,
        seconds: mine.seconds,
        cpu_percent: Some(cpu.host_total.round().clamp(0.0, 100_000.0) as u32),
        retrans: None,
        rtt_ms: None,
    };
    ctl.send(&closing.to_lines(sends, req.format))?;
    let end = udp_record::end(&socks[0], sends, mine, None, req.buflen, cpu);
    sink.end(&end);
    let _ = ctl.stream.shutdown(std::net::Shutdown::Both);
    Ok(())
}
