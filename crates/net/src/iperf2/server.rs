//! plumb's server for iperf 2 clients (`iperf -c ADDR [-u]`): a TCP
//! listener and a UDP socket on the one port, as `iperf -s` and
//! `iperf -s -u` together.
//!
//! # Threads
//! - The caller's thread is the **gate**: it accepts TCP connections and
//!   reads the UDP socket, both without blocking for long. Each TCP
//!   connection goes to a thread of its own (`tcp`), at most
//!   [`MAX_CONNECTIONS`] at once; UDP flows are counted in the gate itself
//!   (`udp`), at most `udp::MAX_FLOWS` at once, and a reverse UDP test
//!   gets a sending thread.
//! - Every test passes `admit` (`iperf2/admit.rs`) first: `--allow/--deny`, the operator's
//!   limits, and the kinds of test plumb answers. A refusal is one line
//!   on stderr and a closed connection (or ignored datagrams).

mod tcp;
mod udp;

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::admit::GATE_TICK;
use crate::config::ServerConfig;
use crate::errors::TestError;
use crate::server::state::log;
use crate::server::Printer;
use crate::{signals, sockets};

/// TCP connections served at once at most (per test slot).
pub const MAX_CONNECTIONS: usize = 128;

/// Serves iperf 2 clients on `cfg.port` until interrupted (or, with `-1`,
/// after one test).
pub fn run(cfg: &ServerConfig, printer: &dyn Printer) -> Result<(), TestError> {
    signals::install();
    // UDP first: once the TCP port listens (what a client, or a unit's
    // readiness check, can see), datagrams to the port are taken too.
    let opts = sockets::DataOptions::default();
    let udp_sock = sockets::bind_udp(cfg.port, cfg.bind, cfg.family, &opts, &cfg.local)
        .map_err(TestError::Connect)?;
    let listener = sockets::listen_tcp(cfg.port, cfg.bind, cfg.family, None, &cfg.local)
        .map_err(TestError::Connect)?;
    listener.set_nonblocking(true).map_err(TestError::Connect)?;
    udp_sock
        .set_read_timeout(Some(GATE_TICK))
        .map_err(TestError::Connect)?;
    {
        let mut banner = printer.sink();
        banner.note(&format!(
            "Server listening on TCP and UDP port {} (iperf 2 clients)",
            cfg.port
        ));
        // No finish(): a JSON sink would print an empty document for it.
    }
    let live = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let max_conns = MAX_CONNECTIONS.saturating_mul(cfg.max_tests.max(1));
    std::thread::scope(|scope| {
        let mut flows = udp::Flows::new(cfg, &udp_sock);
        loop {
            if signals::interrupted() {
                return Ok(());
            }
            if cfg.one_off && done.load(Ordering::Acquire) + flows.finished() > 0 {
                return Ok(());
            }
            while let Ok((conn, peer)) = listener.accept() {
                let Some(conn) = not_handed_over(cfg, conn, peer) else {
                    continue;
                };
                if live.load(Ordering::Acquire) >= max_conns {
                    log(
                        &peer,
                        "refused: the server has as many iperf 2 connections as it takes",
                    );
                    continue;
                }
                live.fetch_add(1, Ordering::AcqRel);
                let (live, done) = (&live, &done);
                scope.spawn(move || {
                    serve_tcp(cfg, printer, conn, peer);
                    live.fetch_sub(1, Ordering::AcqRel);
                    done.fetch_add(1, Ordering::AcqRel);
                });
            }
            flows.poll(scope, printer);
        }
    })
}

/// The connection, unless it is a data connection another tool's session
/// on this server expects from that peer on this port (a nuttcp data
/// connection on iperf 2's port), which goes to that session.
fn not_handed_over(cfg: &ServerConfig, conn: TcpStream, peer: SocketAddr) -> Option<TcpStream> {
    let Some(h) = &cfg.handoff else {
        return Some(conn);
    };
    let port = conn.local_addr().map_or(cfg.port, |a| a.port());
    h.offer(conn, peer.ip(), port)
}

fn serve_tcp(cfg: &ServerConfig, printer: &dyn Printer, conn: TcpStream, peer: SocketAddr) {
    if let Err(why) = tcp::serve(cfg, printer, conn, peer) {
        log(&peer, &why);
    }
}
