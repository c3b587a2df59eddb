//! The request/response loops of one stream, on both ends: TCP `--rr`
//! (up to `--burst` transactions in flight), `--crr` (a new connection per
//! transaction) and UDP `--rr` (lost transactions counted after
//! [`UDP_LOSS_TIMEOUT`]). Each loop counts its transactions and records
//! their latency in the stream's [`Counters`], and ends on the test's stop
//! flags or its `-n`/`-k` budget.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use plumb_proto::rr as wire;
use plumb_proto::rr::{RrMode, RrParams};

use super::io::{read_full, read_spinning, spin_of, tune, write_full};
use super::pace::TransactionPace;
use crate::datathread::{transient, Counters, StopAndBudget, POLL_SLICE};
use crate::server::state::log;
use crate::sockets::{self, StreamSocket};
use crate::sockopt;

/// A UDP transaction unanswered this long is counted lost.
pub const UDP_LOSS_TIMEOUT: Duration = Duration::from_secs(1);
/// After the stop, how long a TCP client waits for responses in flight.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);
/// How long a CRR client waits for a connection to be accepted.
const CRR_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a CRR server waits for a connection's request.
const CRR_REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// What the session needs beyond the plan to run request/response streams.
#[derive(Debug, Clone, Default)]
pub struct RrContext {
    /// Server: the listener CRR connections arrive on.
    pub listener: Option<Arc<TcpListener>>,
    /// Server: the only address CRR connections are taken from.
    pub peer_ip: Option<IpAddr>,
    /// Client: where CRR connections go.
    pub crr_addr: Option<SocketAddr>,
    /// Client: `-B`.
    pub bind: Option<IpAddr>,
    /// `--busy-poll` µs.
    pub busy_poll: Option<u32>,
    /// `-b`: most bit/s of requests and responses together per stream; a
    /// server holds its answers to it, so a test admitted under
    /// `--max-bitrate` stays within what it asked for.
    pub pace_bps: Option<u64>,
}

/// Runs one stream's loop: the client's transactions, or the server's answers.
pub fn run_stream(
    sock: &StreamSocket,
    client: bool,
    p: RrParams,
    ctx: &RrContext,
    shared: &StopAndBudget,
    c: &Counters,
) {
    match (sock, client, p.mode) {
        (StreamSocket::Tcp(t), true, RrMode::Rr) => client_tcp(t, p, ctx, shared, c),
        (StreamSocket::Tcp(t), false, RrMode::Rr) => serve_tcp(t, p, ctx, shared, c),
        (StreamSocket::Tcp(_), true, RrMode::Crr) => client_crr(p, ctx, shared, c),
        (StreamSocket::Tcp(_), false, RrMode::Crr) => serve_crr(p, ctx, shared, c),
        (StreamSocket::Udp(u), true, _) => client_udp(u, p, ctx, shared, c),
        (StreamSocket::Udp(u), false, _) => serve_udp(u, p, ctx, shared, c),
    }
    c.end();
}

/// Claims one request's worth of a `-n`/`-k` budget; false when spent.
fn claim(shared: &StopAndBudget, request: usize) -> bool {
    let got = shared.claim(request);
    if got < request {
        shared.unclaim(got);
        return false;
    }
    true
}

fn client_tcp(s: &TcpStream, p: RrParams, ctx: &RrContext, shared: &StopAndBudget, c: &Counters) {
    tune(s, ctx.busy_poll);
    let _ = s.set_read_timeout(Some(POLL_SLICE));
    let _ = s.set_write_timeout(Some(POLL_SLICE));
    let req = vec![0x52u8; p.request as usize];
    let mut resp = vec![0u8; p.response as usize];
    let per = u64::from(p.request) + u64::from(p.response);
    let mut inflight: VecDeque<Instant> = VecDeque::with_capacity(p.burst as usize);
    let mut stop_at: Option<Instant> = None;
    let mut pace = TransactionPace::new(ctx.pace_bps);
    loop {
        if stop_at.is_none() && shared.stop.load(Relaxed) {
            stop_at = Some(Instant::now());
        }
        while stop_at.is_none() && inflight.len() < p.burst as usize {
            if !claim(shared, req.len()) {
                stop_at = Some(Instant::now());
                break;
            }
            let t0 = Instant::now();
            if let Err(e) = write_full(s, &req, &|| shared.stop.load(Relaxed)) {
                c.fail(format!("request: {e}"));
                let _ = s.shutdown(std::net::Shutdown::Write);
                return;
            }
            inflight.push_back(t0);
        }
        let Some(t0) = inflight.pop_front() else {
            break;
        };
        let give_up = || stop_at.is_some_and(|t| t.elapsed() > DRAIN_LIMIT);
        match read_full(s, &mut resp, &give_up, spin_of(ctx.busy_poll)) {
            Ok(true) => {
                c.rr.rtt.record(t0.elapsed());
                c.rr.done(c, per);
                TransactionPace::after(&mut pace, per, &|| shared.stop.load(Relaxed));
            }
            Ok(false) => {
                c.fail("the server closed the stream with transactions in flight");
                break;
            }
            Err(e) => {
                c.fail(format!("response: {e}"));
                break;
            }
        }
    }
    // The server reads to our FIN, so its count ends where ours does.
    let _ = s.shutdown(std::net::Shutdown::Write);
}

pub(crate) fn serve_tcp(
    s: &TcpStream,
    p: RrParams,
    ctx: &RrContext,
    shared: &StopAndBudget,
    c: &Counters,
) {
    tune(s, p.busy_poll_us);
    let mut pace = TransactionPace::new(ctx.pace_bps);
    let _ = s.set_read_timeout(Some(POLL_SLICE));
    let _ = s.set_write_timeout(Some(POLL_SLICE));
    let mut req = vec![0u8; p.request as usize];
    let resp = vec![0x41u8; p.response as usize];
    let per = u64::from(p.request) + u64::from(p.response);
    let give_up = || shared.stop_receivers.load(Relaxed);
    let spin = spin_of(p.busy_poll_us);
    loop {
        match read_full(s, &mut req, &give_up, spin) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                c.fail(format!("request: {e}"));
                break;
            }
        }
        if let Err(e) = write_full(s, &resp, &give_up) {
            c.fail(format!("response: {e}"));
            break;
        }
        c.rr.done(c, per);
        TransactionPace::after(&mut pace, per, &give_up);
    }
}

/// Whether a connect error means this host ran out of ephemeral ports.
fn ports_exhausted(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EADDRNOTAVAIL)
}

fn client_crr(p: RrParams, ctx: &RrContext, shared: &StopAndBudget, c: &Counters) {
    let Some(addr) = ctx.crr_addr else {
        c.fail("no CRR port from the server");
        return;
    };
    let req = vec![0x52u8; p.request as usize];
    let mut resp = vec![0u8; p.response as usize];
    let per = u64::from(p.request) + u64::from(p.response);
    let never = || false;
    let mut pace = TransactionPace::new(ctx.pace_bps);
    while !shared.stop.load(Relaxed) && claim(shared, req.len()) {
        let t0 = Instant::now();
        // The handshake's time starts once the socket is made and set up,
        // just before connect(2) (-B's bind is the only call after it): the
        // transaction's round trip still counts from t0.
        let mut t_connect = t0;
        // A blocking connect bounded by SO_SNDTIMEO rather than socket2's
        // connect_timeout: that one adds a non-blocking switch, a poll and
        // two fcntl calls to every connection, which is what CRR times.
        let s = match sockets::connect_tcp(addr, ctx.bind, None, None, |s| {
            s.set_nodelay(true)?;
            s.set_write_timeout(Some(CRR_CONNECT_TIMEOUT))?;
            t_connect = Instant::now();
            Ok(())
        }) {
            Ok(s) => s,
            // Linux reports a connect cut short by SO_SNDTIMEO as EINPROGRESS.
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {
                c.fail(format!(
                    "connect: no answer within {} s",
                    CRR_CONNECT_TIMEOUT.as_secs()
                ));
                return;
            }
            Err(e) if ports_exhausted(&e) => {
                // plumb's server closes first, so these connections leave no
                // TIME_WAIT here: the range is full of other connections (or
                // of a peer's TIME_WAITs that closes first).
                c.fail(format!(
                    "out of local ports after {} connections: net.ipv4.ip_local_port_range \
                     is full (other connections, or TIME_WAITs of a peer that closes first, \
                     hold it); widen it, use fewer -P streams, or use --rr",
                    c.rr.transactions.load(Relaxed)
                ));
                return;
            }
            Err(e) => {
                c.fail(format!("connect: {e}"));
                return;
            }
        };
        let t1 = Instant::now();
        tune(&s, ctx.busy_poll);
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let r = write_full(&s, &req, &never).and_then(|()| read_full(&s, &mut resp, &never, None));
        match r {
            Ok(true) => {}
            Ok(false) => {
                c.fail("the server closed a CRR connection before its response");
                return;
            }
            Err(e) => {
                c.fail(format!("CRR transaction: {e}"));
                return;
            }
        }
        let t2 = Instant::now();
        // The server closes first, so TIME_WAIT stays on its side and this
        // host's ports are free again at once: wait for its FIN.
        let mut one = [0u8; 1];
        let _ = (&s).read(&mut one);
        drop(s);
        c.rr.connect.record(t1 - t_connect);
        c.rr.reqresp.record(t2 - t1);
        c.rr.rtt.record(t2 - t0);
        c.rr.done(c, per);
        TransactionPace::after(&mut pace, per, &|| shared.stop.load(Relaxed));
    }
}

fn serve_crr(p: RrParams, ctx: &RrContext, shared: &StopAndBudget, c: &Counters) {
    let Some(listener) = ctx.listener.as_ref() else {
        c.fail("no CRR listener");
        return;
    };
    let _ = listener.set_nonblocking(true);
    let mut req = vec![0u8; p.request as usize];
    let resp = vec![0x41u8; p.response as usize];
    let per = u64::from(p.request) + u64::from(p.response);
    let mut strangers = 0u64;
    let mut pace = TransactionPace::new(ctx.pace_bps);
    while !shared.stop_receivers.load(Relaxed) {
        let (s, from) = match listener.accept() {
            Ok(a) => a,
            Err(e) if transient(&e) => {
                let _ = crate::sys::poll_one(listener.as_fd(), libc::POLLIN, 100);
                continue;
            }
            Err(e) => {
                c.fail(format!("CRR accept: {e}"));
                return;
            }
        };
        if ctx
            .peer_ip
            .is_some_and(|ip| crate::config::canonical(ip) != crate::config::canonical(from.ip()))
        {
            strangers += 1;
            if strangers == 1 {
                log(&from, "refused a CRR connection from another host");
            }
            continue;
        }
        let _ = s.set_nonblocking(false);
        tune(&s, p.busy_poll_us);
        let _ = s.set_read_timeout(Some(CRR_REQUEST_TIMEOUT));
        let _ = s.set_write_timeout(Some(CRR_REQUEST_TIMEOUT));
        // A connection that sends nothing in time is dropped, not waited for.
        let at_timeout = || true;
        let answered = read_full(&s, &mut req, &at_timeout, None)
            .and_then(|got| got.then(|| write_full(&s, &resp, &at_timeout)).transpose());
        if let Ok(Some(())) = answered {
            c.rr.done(c, per);
        }
        let _ = s.shutdown(std::net::Shutdown::Both);
        drop(s);
        // Every connection counts against -b, answered or not: a client
        // cannot open connections faster by never finishing them.
        TransactionPace::after(&mut pace, per, &|| shared.stop_receivers.load(Relaxed));
    }
}

fn client_udp(u: &UdpSocket, p: RrParams, ctx: &RrContext, shared: &StopAndBudget, c: &Counters) {
    let mut pace = TransactionPace::new(ctx.pace_bps);
    if let Some(us) = ctx.busy_poll {
        let _ = sockopt::set_busy_poll(u.as_fd(), us);
    }
    let mut req = vec![0x52u8; p.request as usize];
    let mut buf = vec![0u8; 65_536];
    let mut inflight: VecDeque<(u64, Instant)> = VecDeque::with_capacity(p.burst as usize);
    let mut seq = 0u64;
    let mut stopping = false;
    let mut timeout: Option<Duration> = None;
    loop {
        stopping |= shared.stop.load(Relaxed);
        while !stopping && inflight.len() < p.burst as usize {
            if !claim(shared, req.len()) {
                stopping = true;
                break;
            }
            seq += 1;
            wire::put_seq(&mut req, seq);
            let t0 = Instant::now();
            match u.send(&req) {
                Ok(_) => inflight.push_back((seq, t0)),
                Err(e) if transient(&e) => {
                    shared.unclaim(req.len());
                    break;
                }
                Err(e) => {
                    c.fail(format!("request: {e}"));
                    return;
                }
            }
        }
        let Some(&(_, oldest)) = inflight.front() else {
            break;
        };
        let left = UDP_LOSS_TIMEOUT.saturating_sub(oldest.elapsed());
        if left.is_zero() {
            inflight.pop_front();
            c.rr.lose();
            continue;
        }
        // The wait is bounded by the oldest transaction's loss deadline; most
        // of the time that is further off than a poll slice, so the timeout
        // is set only when it changes (one setsockopt a transaction before).
        let wait = left.min(POLL_SLICE).max(Duration::from_micros(100));
        if timeout != Some(wait) {
            let _ = u.set_read_timeout(Some(wait));
            timeout = Some(wait);
        }
        match read_spinning(u.as_fd(), &mut buf, spin_of(ctx.busy_poll), &mut |b| {
            u.recv(b)
        }) {
            Ok(n) => {
                let now = Instant::now();
                // A late answer to a transaction already counted lost is dropped.
                if let Some(i) =
                    wire::seq_of(&buf[..n]).and_then(|s| inflight.iter().position(|(q, _)| *q == s))
                {
                    if let Some((_, t0)) = inflight.remove(i) {
                        c.rr.rtt.record(now - t0);
                        c.rr.done(c, u64::from(p.request) + n as u64);
                        TransactionPace::after(&mut pace, u64::from(p.request) + n as u64, &|| {
                            shared.stop.load(Relaxed)
                        });
                    }
                }
            }
            Err(e) if transient(&e) => {}
            Err(e) => {
                c.fail(format!("response: {e}"));
                return;
            }
        }
    }
}

fn serve_udp(u: &UdpSocket, p: RrParams, ctx: &RrContext, shared: &StopAndBudget, c: &Counters) {
    let mut pace = TransactionPace::new(ctx.pace_bps);
    if let Some(us) = p.busy_poll_us {
        let _ = sockopt::set_busy_poll(u.as_fd(), us);
    }
    let _ = u.set_read_timeout(Some(POLL_SLICE));
    let mut buf = vec![0u8; 65_536];
    let mut resp = vec![0x41u8; p.response as usize];
    let spin = spin_of(p.busy_poll_us);
    while !shared.stop_receivers.load(Relaxed) {
        match read_spinning(u.as_fd(), &mut buf, spin, &mut |b| u.recv(b)) {
            Ok(n) => {
                let Some(seq) = wire::seq_of(&buf[..n]) else {
                    continue;
                };
                wire::put_seq(&mut resp, seq);
                match u.send(&resp) {
                    Ok(_) => {
                        c.rr.done(c, n as u64 + resp.len() as u64);
                        TransactionPace::after(&mut pace, n as u64 + resp.len() as u64, &|| {
                            shared.stop_receivers.load(Relaxed)
                        });
                    }
                    Err(e) if transient(&e) => {}
                    Err(e) => {
                        c.fail(format!("response: {e}"));
                        return;
                    }
                }
            }
            Err(e) if transient(&e) => {}
            // A connected UDP socket reports the client's port closing; the test is over.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => return,
            Err(e) => {
                c.fail(format!("request: {e}"));
                return;
            }
        }
    }
}
