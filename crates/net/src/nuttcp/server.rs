//! plumb's server for nuttcp clients (`plumb -s --tools nuttcp`): the
//! control port's listener and one test at a time, each on its own thread.
//! A client the access list refuses, one that arrives while a test runs
//! (one that does not end within a second), and one whose request breaks
//! the protocol or the operator's limits gets nuttcp's refusal (a reason
//! line, then `KO`) and the server goes on.
//!
//! The data connections follow the request: the receiving end listens on
//! the data port the client names and the transmitter connects, `-F` the
//! other way round. When plumb's server connects, it connects only to the
//! control connection's peer; when it listens, it takes a connection only
//! from that peer.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use plumb_proto::nuttcp::reply;
use plumb_proto::nuttcp::request::Request;
use plumb_record::Sink;

use super::answer::serve_test;
use super::control::Control;
use super::data::client_listens;
use super::ready::prepare;
use crate::config::{canonical, ServerConfig};
use crate::errors::TestError;
use crate::handoff::Expected;
use crate::server::Printer;
use crate::{signals, sockets};

/// How often the listener looks at signals and the running test.
const TICK: Duration = Duration::from_millis(100);
/// How long a new client waits for the running test's slot before it is
/// told the server is busy.
const BUSY_GRACE: Duration = Duration::from_secs(1);
/// The lowest data port a client may name.
const MIN_DATA_PORT: u16 = 1024;

/// Serves nuttcp clients on `cfg.port` until interrupted (or after one
/// test with `-1`).
///
/// # Errors
/// The control port cannot be listened on.
pub fn run(cfg: &ServerConfig, printer: &dyn Printer) -> Result<(), TestError> {
    signals::install();
    let listener = sockets::listen_tcp(cfg.port, cfg.bind, cfg.family, None, &cfg.local)
        .map_err(TestError::Connect)?;
    listener.set_nonblocking(true).map_err(TestError::Connect)?;
    let mut banner = printer.sink();
    banner.note("-----------------------------------------------------------");
    banner.note(&format!(
        "Server listening on {} (nuttcp clients; data on the port each names)",
        cfg.port
    ));
    banner.note("-----------------------------------------------------------");
    let busy = Arc::new(AtomicBool::new(false));
    std::thread::scope(|scope| {
        let mut served = 0u64;
        loop {
            if signals::interrupted() {
                return Err(TestError::Interrupted);
            }
            if cfg.one_off && served > 0 && !busy.load(Ordering::Acquire) {
                return Ok(());
            }
            let (stream, peer) = match accept(&listener) {
                Some(c) => c,
                None => continue,
            };
            if !cfg.access.permits(canonical(peer.ip())) {
                refuse(
                    stream,
                    &peer,
                    "access denied by the server's --allow/--deny",
                );
                continue;
            }
            if !slot_within_grace(&busy) || (cfg.one_off && served > 0) {
                refuse(
                    stream,
                    &peer,
                    "the server is busy running a test; try again later",
                );
                continue;
            }
            served += 1;
            let busy = Arc::clone(&busy);
            scope.spawn(move || {
                let mut sink = printer.sink();
                match one_test(cfg, stream, peer, sink.as_mut()) {
                    Ok(()) => log(&peer, "test done"),
                    Err(e) => {
                        log(&peer, &e.to_string());
                        sink.error(&e.to_string());
                    }
                }
                let _ = sink.finish();
                busy.store(false, Ordering::Release);
            });
        }
    })
}

/// Takes the one test slot, waiting up to [`BUSY_GRACE`] for a test that
/// is ending (its client may already be gone, and scripts run tests back
/// to back); `false` when it stays taken.
fn slot_within_grace(busy: &AtomicBool) -> bool {
    let until = Instant::now() + BUSY_GRACE;
    loop {
        if !busy.swap(true, Ordering::AcqRel) {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// One connection from the listener, or `None` after a tick without one.
fn accept(listener: &TcpListener) -> Option<(TcpStream, SocketAddr)> {
    match listener.accept() {
        Ok((s, peer)) => s.set_nonblocking(false).ok().map(|()| (s, peer)),
        Err(_) => {
            std::thread::sleep(TICK);
            None
        }
    }
}

/// The server's one line on stderr about a client.
fn log(peer: &SocketAddr, what: &str) {
    eprintln!(
        "plumb server (nuttcp): {} port {}: {what}",
        canonical(peer.ip()),
        peer.port()
    );
}

/// Greets, refuses with `why` and closes, within a second.
fn refuse(stream: TcpStream, peer: &SocketAddr, why: &str) {
    log(peer, why);
    let mut ctl = Control::new(stream);
    let _ = ctl.stream.set_write_timeout(Some(Duration::from_secs(1)));
    let _ = ctl.send(&reply::hello());
    let _ = ctl.send(&reply::refusal(why));
    ctl.close_gently();
}

/// One test on its control connection.
fn one_test(
    cfg: &ServerConfig,
    stream: TcpStream,
    peer: SocketAddr,
    sink: &mut dyn Sink,
) -> Result<(), TestError> {
    let mut ctl = Control::new(stream);
    ctl.stream
        .set_write_timeout(Some(cfg.handshake_timeout))
        .map_err(TestError::Control)?;
    let req = match handshake(cfg, &mut ctl) {
        Ok(r) => r,
        Err(why) => {
            // Whatever went wrong before the answer, the client hears why.
            let _ = ctl.send(&reply::refusal(&why));
            ctl.close_gently();
            return Err(TestError::Ended(format!("request refused: {why}")));
        }
    };
    // Registered and opened before the answer: the client connects or
    // sends once it has it, and a port this end cannot have is refused.
    let handed = expect_handed(cfg, peer, &req);
    let ready = match prepare(&ctl, peer, &req, &handed) {
        Ok(r) => r,
        Err(why) => {
            let _ = ctl.send(&reply::refusal(&why));
            ctl.close_gently();
            return Err(TestError::Ended(format!("request refused: {why}")));
        }
    };
    ctl.send(&reply::ok())?;
    let options = req.format.names();
    log(
        &peer,
        &format!(
            "nuttcp client {} test, {} s{}{options}",
            if req.client_sends {
                "sending"
            } else {
                "receiving"
            },
            req.seconds,
            if options.is_empty() { "" } else { ", " },
        ),
    );
    serve_test(cfg, &mut ctl, peer, &req, (&handed, ready), sink)
}

/// The data connections of a test whose client connects to a port another
/// tool's listener on this server owns: that listener hands them over.
fn expect_handed(cfg: &ServerConfig, peer: SocketAddr, req: &Request) -> Vec<Expected> {
    let Some(h) = cfg.handoff.as_ref().filter(|_| !client_listens(req)) else {
        return Vec::new();
    };
    req.data_ports()
        .filter(|p| h.shares(*p))
        .map(|p| h.expect(peer.ip(), p))
        .collect()
}

/// The greetings and the request, within the handshake timeout; the
/// reason in one line when the client breaks the protocol or the limits.
fn handshake(cfg: &ServerConfig, ctl: &mut Control) -> Result<Request, String> {
    let deadline = Instant::now() + cfg.handshake_timeout;
    let hello = ctl
        .expect(deadline, "greeting")
        .map_err(|e| e.to_string())?;
    reply::parse_hello(&hello)?;
    ctl.send(&reply::hello()).map_err(|e| e.to_string())?;
    let line = ctl.expect(deadline, "request").map_err(|e| e.to_string())?;
    Request::parse(&line).and_then(|r| within_limits(cfg, r))
}

/// The request, if the operator's limits and the server's own rules let it run.
fn within_limits(cfg: &ServerConfig, r: Request) -> Result<Request, String> {
    let l = &cfg.limits;
    if let Some(max) = l.max_duration.filter(|m| r.seconds > m.as_secs_f64()) {
        return Err(format!(
            "{} s asked, this server allows {} s",
            r.seconds,
            max.as_secs()
        ));
    }
    if let Some(max) = l.max_parallel.filter(|m| r.streams > *m) {
        return Err(format!(
            "{} streams asked, this server allows {max}",
            r.streams
        ));
    }
    if let Some(max) = l.max_bitrate.or(l.max_total_bitrate) {
        match r.rate_bps() {
            Some(b) if b <= max => {}
            Some(b) => {
                return Err(format!(
                    "{b} bit/s asked, this server allows {max} bit/s per test"
                ))
            }
            None => {
                return Err(
                    "an unlimited rate asked; this server needs -R RATE within its limit".into(),
                )
            }
        }
    }
    if r.port < MIN_DATA_PORT {
        return Err(format!(
            "data port {} refused (below {MIN_DATA_PORT})",
            r.port
        ));
    }
    if u32::from(r.port) + r.streams > 65_536 {
        return Err("data ports run past 65535".into());
    }
    let shared = cfg
        .handoff
        .as_ref()
        .and_then(|h| r.data_ports().find(|p| h.shares(*p)));
    if let (true, Some(p)) = (r.udp, shared) {
        return Err(format!(
            "UDP data port {p} is this server's iperf 2 port; give nuttcp -p with another data port"
        ));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> Request {
        Request {
            buflen: 65536,
            window: 0,
            streams: 1,
            rate_kbps: plumb_proto::nuttcp::request::RATE_UNLIMITED,
            port: 5001,
            client_sends: true,
            seconds: 10.0,
            udp: false,
            interval: 0.0,
            flip: false,
            format: plumb_proto::nuttcp::format::Format::DEFAULT,
        }
    }

    #[test]
    fn the_operators_limits_and_the_data_port() {
        let mut cfg = ServerConfig::default();
        assert!(within_limits(&cfg, req()).is_ok());
        cfg.limits.max_duration = Some(Duration::from_secs(5));
        assert!(within_limits(&cfg, req()).is_err_and(|e| e.contains("allows 5 s")));
        cfg.limits.max_duration = None;
        cfg.limits.max_parallel = Some(2);
        let many = Request {
            streams: 3,
            ..req()
        };
        assert!(within_limits(&cfg, many).is_err_and(|e| e.contains("3 streams")));
        cfg.limits.max_parallel = None;
        cfg.limits.max_bitrate = Some(1_000_000);
        assert!(within_limits(&cfg, req()).is_err_and(|e| e.contains("unlimited")));
        let slow = Request {
            rate_kbps: 500,
            ..req()
        };
        assert!(within_limits(&cfg, slow).is_ok());
        cfg.limits.max_bitrate = None;
        let low = Request { port: 80, ..req() };
        assert!(within_limits(&cfg, low).is_err_and(|e| e.contains("below 1024")));
        let high = Request {
            port: 65_535,
            streams: 2,
            ..req()
        };
        assert!(within_limits(&cfg, high).is_err_and(|e| e.contains("past 65535")));
    }
}
