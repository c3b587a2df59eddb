//! `--tool auto`: finds which tool's server listens on the host, trying
//! iperf3, iperf 2 and nuttcp in that order, each on its own port (or all
//! on the one `-p` names), with one short probe per port
//! ([`plumb_proto::detect`] says what it is and what the answers mean).
//! Every connect and read is bounded by [`PROBE_WAIT`]; a probe's
//! connection is closed, and the server's side of it seen closed, before
//! the test starts.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use plumb_proto::detect::{classify, decide, probe, Answer, REPLY_CAP};
use plumb_proto::tool::Tool;

use crate::config::Family;
use crate::sockets;

/// How long a probe waits to connect, and then for the server's reply.
pub const PROBE_WAIT: Duration = Duration::from_secs(1);

/// How long the next connection waits after a probe's connection ends.
pub const RELISTEN: Duration = Duration::from_millis(250);

/// Where the probes go: the host, the address family and `-B`'s address.
#[derive(Debug, Clone)]
pub struct Target {
    /// The host's name or address.
    pub host: String,
    /// `-4` / `-6`.
    pub family: Family,
    /// `-B`: this end's address.
    pub bind: Option<IpAddr>,
}

/// The tool and port of the first server found: each tool in turn on its
/// default port, or on `port` when one is given.
pub fn find(cfg: &Target, port: Option<u16>) -> Option<(Tool, u16)> {
    let mut seen: Vec<(u16, Option<Answer>)> = Vec::new();
    for tool in Tool::ALL {
        let p = port.unwrap_or(tool.default_port());
        let answers = match seen.iter().find(|(q, _)| *q == p) {
            Some((_, a)) => *a,
            None => {
                let a = probe_port(cfg, p);
                seen.push((p, a));
                a
            }
        };
        if let Some(found) = answers.and_then(|a| decide(tool, a)) {
            return Some((found, p));
        }
    }
    None
}

/// The answer from `port` to the probe, or `None` when nothing takes a
/// connection there.
fn probe_port(cfg: &Target, port: u16) -> Option<Answer> {
    let addr = sockets::resolve(&cfg.host, port, cfg.family)
        .ok()?
        .into_iter()
        .next()?;
    let bytes = probe(*crate::client::random_cookie().as_bytes());
    ask(cfg, addr, &bytes)
}

/// Connects, sends `bytes` and reads the reply until it says something,
/// the server closes, [`REPLY_CAP`] bytes or [`PROBE_WAIT`]; `None` when
/// the connection cannot be made.
fn ask(cfg: &Target, addr: SocketAddr, bytes: &[u8]) -> Option<Answer> {
    let mut s = sockets::connect_tcp(addr, cfg.bind, None, Some(PROBE_WAIT), |_| Ok(())).ok()?;
    if s.write_all(bytes).is_err() {
        return Some(Answer::Neither);
    }
    let answer = read_answer(&mut s);
    settle(&mut s);
    // A stock server needs a moment after the probe's connection before the
    // test's: without this pause a test connected at once from the same
    // process was reset by iperf3 3.12 (2 of 10 tries), and iperf 2.1.8
    // crashed after such a test (2 of 8); with it, 0 of 10 each. Why each
    // server does so was not traced.
    std::thread::sleep(RELISTEN);
    Some(answer)
}

/// Ends the probe and waits (at most [`PROBE_WAIT`]) for the server to
/// close its side: a stock iperf3 server still busy with the probe would
/// turn the test that follows away as busy.
fn settle(s: &mut TcpStream) {
    let _ = s.shutdown(std::net::Shutdown::Write);
    let deadline = Instant::now() + PROBE_WAIT;
    let mut buf = [0u8; 4096];
    // Bounded in bytes too: a server that keeps talking is not waited for.
    for _ in 0..16 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || s.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

fn read_answer(s: &mut TcpStream) -> Answer {
    let deadline = Instant::now() + PROBE_WAIT;
    let mut buf = [0u8; REPLY_CAP];
    let mut have = 0;
    while have < REPLY_CAP {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || s.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match s.read(&mut buf[have..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => have += n,
        }
        let said = classify(&buf[..have]);
        if said != Answer::Neither {
            return said;
        }
    }
    classify(&buf[..have])
}
