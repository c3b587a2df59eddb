//! Request/response data paths: `--rr` (TCP and UDP), `--crr` and the
//! `--latency` probe, on both ends, and the latency they measure.
//!
//! Owns the per-stream transaction loops, the greeting a plumb server
//! writes on their connections (see [`plumb_proto::rr`]), the latency
//! histograms (`hdrhistogram`, nanoseconds, three significant digits) and
//! their JSON summaries. The session spawns these loops in place of the
//! throughput loops when the parameters carry `plumb.rr`.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
pub use plumb_proto::params::UDP_LEN;
use plumb_proto::rr as wire;
pub use plumb_proto::rr::{RrMode, RrParams, MAX_BURST, MAX_TCP_MESSAGE, MIN_UDP_MESSAGE};
use serde_json::{json, Map, Value};

use crate::datathread::{
    latency_histogram as histogram, transient, Counters, StopAndBudget, MAX_NS, POLL_SLICE,
};
use crate::sockets::{self, StreamSocket};
use crate::sockopt;

/// How long a client waits for a plumb server's greeting.
pub const GREETING_TIMEOUT: Duration = Duration::from_secs(3);
/// A UDP transaction unanswered this long is counted lost.
pub const UDP_LOSS_TIMEOUT: Duration = Duration::from_secs(1);
/// After the stop, how long a TCP client waits for responses in flight.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);
/// How long a CRR client waits for a connection to be accepted.
const CRR_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a CRR server waits for a connection's request.
const CRR_REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// Idle probing before the load: this long, one probe per [`IDLE_EVERY`].
pub const IDLE_FOR: Duration = Duration::from_secs(1);
/// Interval of idle probes.
pub const IDLE_EVERY: Duration = Duration::from_millis(10);
/// Interval of probes under load: 10 a second of 1 byte each way, about
/// 21 kbit/s with headers and ACKs, under 1 % of any load above 2.1 Mbit/s.
pub const LOADED_EVERY: Duration = Duration::from_millis(100);

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

/// Holds a stream's transactions to `-b`: after each, sleeps until the bits
/// moved so far are due at the rate.
struct Pace {
    bps: u64,
    start: Instant,
    bits: u128,
}

impl Pace {
    fn new(bps: Option<u64>) -> Option<Pace> {
        bps.filter(|b| *b > 0).map(|bps| Pace {
            bps,
            start: Instant::now(),
            bits: 0,
        })
    }

    fn after(pace: &mut Option<Pace>, bytes: u64, stop: &dyn Fn() -> bool) {
        let Some(p) = pace.as_mut() else {
            return;
        };
        p.bits += u128::from(bytes) * 8;
        let due_ns = p.bits * 1_000_000_000 / u128::from(p.bps);
        let due = Duration::from_nanos(u64::try_from(due_ns).unwrap_or(u64::MAX));
        // Sleeps in slices, so a stop is seen within one.
        loop {
            let now = p.start.elapsed();
            if now >= due || stop() {
                return;
            }
            std::thread::sleep((due - now).min(POLL_SLICE));
        }
    }
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

fn tune(s: &TcpStream, busy_poll: Option<u32>) {
    let _ = s.set_nodelay(true);
    if let Some(us) = busy_poll {
        // Unprivileged callers may lower but not raise it: best effort.
        let _ = sockopt::set_busy_poll(s.as_fd(), us);
    }
}

/// `--busy-poll`'s time as the spin before each sleep.
fn spin_of(busy_poll_us: Option<u32>) -> Option<Duration> {
    busy_poll_us
        .filter(|us| *us > 0)
        .map(|us| Duration::from_micros(u64::from(us)))
}

/// A read that first polls the socket without sleeping for up to `spin`
/// (`--busy-poll`), then sleeps in the kernel as usual.
///
/// Why: `SO_BUSY_POLL` makes the kernel poll a device queue, which only a
/// NIC with NAPI has; loopback and most virtual devices have none, so there
/// the option changed nothing. Polling the socket itself takes the sleep and
/// the wake-up out of the round trip on any device, at the cost of a CPU
/// spinning on each end for up to `spin` per read.
fn read_spinning(
    fd: std::os::fd::BorrowedFd<'_>,
    buf: &mut [u8],
    spin: Option<Duration>,
    block: &mut dyn FnMut(&mut [u8]) -> io::Result<usize>,
) -> io::Result<usize> {
    if let Some(spin) = spin {
        let t0 = Instant::now();
        loop {
            match crate::sys::recv_nowait(fd, buf) {
                Ok(n) => return Ok(n),
                Err(e) if transient(&e) => {}
                Err(e) => return Err(e),
            }
            if t0.elapsed() >= spin {
                break;
            }
            std::hint::spin_loop();
        }
    }
    block(buf)
}

/// Reads exactly `buf.len()` bytes, spinning first for up to `spin` before
/// each read sleeps. `Ok(false)`: EOF before the first byte, or `give_up()`
/// turned true while nothing had arrived.
fn read_full(
    s: &TcpStream,
    buf: &mut [u8],
    give_up: &dyn Fn() -> bool,
    spin: Option<Duration>,
) -> io::Result<bool> {
    let mut off = 0;
    let mut r: &TcpStream = s;
    while off < buf.len() {
        match read_spinning(s.as_fd(), &mut buf[off..], spin, &mut |b| r.read(b)) {
            Ok(0) if off == 0 => return Ok(false),
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "the peer closed {off} bytes into a {}-byte message",
                        buf.len()
                    ),
                ))
            }
            Ok(n) => off += n,
            Err(e) if transient(&e) => {
                if give_up() {
                    if off == 0 {
                        return Ok(false);
                    }
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "a message stalled"));
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

fn write_full(s: &TcpStream, buf: &[u8], give_up: &dyn Fn() -> bool) -> io::Result<()> {
    let mut off = 0;
    let mut w: &TcpStream = s;
    while off < buf.len() {
        match w.write(&buf[off..]) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "the peer stopped reading",
                ))
            }
            Ok(n) => off += n,
            Err(e) if transient(&e) => {
                if give_up() {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "a message stalled"));
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
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
    let mut pace = Pace::new(ctx.pace_bps);
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
                Pace::after(&mut pace, per, &|| shared.stop.load(Relaxed));
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

fn serve_tcp(s: &TcpStream, p: RrParams, ctx: &RrContext, shared: &StopAndBudget, c: &Counters) {
    tune(s, p.busy_poll_us);
    let mut pace = Pace::new(ctx.pace_bps);
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
        Pace::after(&mut pace, per, &give_up);
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
    let mut pace = Pace::new(ctx.pace_bps);
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
        Pace::after(&mut pace, per, &|| shared.stop.load(Relaxed));
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
    let mut pace = Pace::new(ctx.pace_bps);
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
                crate::server::state::log(&from, "refused a CRR connection from another host");
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
        Pace::after(&mut pace, per, &|| shared.stop_receivers.load(Relaxed));
    }
}

fn client_udp(u: &UdpSocket, p: RrParams, ctx: &RrContext, shared: &StopAndBudget, c: &Counters) {
    let mut pace = Pace::new(ctx.pace_bps);
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
                        Pace::after(&mut pace, u64::from(p.request) + n as u64, &|| {
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
    let mut pace = Pace::new(ctx.pace_bps);
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
                        Pace::after(&mut pace, n as u64 + resp.len() as u64, &|| {
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

/// The `--latency` probe connection, client side.
#[derive(Debug)]
pub struct Probe {
    sock: Arc<TcpStream>,
    /// Idle round trips, ms.
    pub idle: Vec<f64>,
    /// Segments the probe connection resent (`TCP_INFO`), read by
    /// [`Probe::finish`]: a probe dropped at a full queue comes back a
    /// tail-loss probe or a retransmission timeout later, not a queue later.
    pub retransmits: Option<u64>,
    /// What the probes cost while the load ran, read by [`Probe::finish`].
    pub cost: Option<ProbeCost>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<(Vec<f64>, Option<u64>)>>,
    /// The probe connection's bytes and segments each way when the load
    /// began (`TCP_INFO`), and when.
    at_load: Option<(Instant, WireCount)>,
}

/// Bytes of payload and segments each way on a TCP connection.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct WireCount {
    bytes: u64,
    segments: u64,
}

impl WireCount {
    fn of(s: &TcpStream) -> Option<WireCount> {
        let i = crate::tcpinfo::tcp_info(s.as_fd()).ok()?;
        Some(WireCount {
            bytes: i.bytes_sent? + i.bytes_received?,
            segments: u64::from(i.segs_out?) + u64::from(i.segs_in?),
        })
    }
}

/// Per segment on an Ethernet wire, beyond the payload: IPv4 (20) and TCP
/// with timestamps (32) headers, and Ethernet's header, FCS, preamble and
/// inter-frame gap (38). IPv6 adds 20 more; the probe's share stays far
/// below a percent either way.
const PROBE_SEGMENT_OVERHEAD: u64 = 20 + 32 + 38;

/// What `--latency`'s probes took from the test while the load ran: their
/// bits on the wire (both ways, with headers and framing) and the CPU of
/// the thread that sent them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeCost {
    /// Seconds the loaded probes ran.
    pub secs: f64,
    /// Bits on the wire, both ways, per second.
    pub wire_bps: f64,
    /// CPU the probe thread used, seconds.
    pub thread_cpu_s: Option<f64>,
}

impl ProbeCost {
    fn between(a: (Instant, WireCount), b: WireCount, cpu_ns: Option<u64>) -> ProbeCost {
        let secs = a.0.elapsed().as_secs_f64();
        let bytes = b.bytes.saturating_sub(a.1.bytes)
            + b.segments.saturating_sub(a.1.segments) * PROBE_SEGMENT_OVERHEAD;
        ProbeCost {
            secs,
            wire_bps: if secs > 0.0 {
                bytes as f64 * 8.0 / secs
            } else {
                0.0
            },
            thread_cpu_s: cpu_ns.map(|n| n as f64 / 1e9),
        }
    }
}

/// One probe transaction's round trip.
fn probe_once(s: &TcpStream) -> io::Result<Duration> {
    let t0 = Instant::now();
    (&*s).write_all(&[0x50])?;
    let mut one = [0u8; 1];
    (&*s).read_exact(&mut one)?;
    Ok(t0.elapsed())
}

impl Probe {
    /// Opens the probe connection (the test's first data connection, with its
    /// cookie), checks the greeting, and measures idle latency for [`IDLE_FOR`].
    pub fn open(
        server: SocketAddr,
        bind: Option<IpAddr>,
        cookie: &[u8],
        timeout: Option<Duration>,
    ) -> io::Result<Probe> {
        let s = sockets::connect_tcp(server, bind, None, timeout, |s| s.set_nodelay(true))?;
        (&s).write_all(cookie)?;
        expect_greeting(&StreamSocket::Tcp(Arc::new(s.try_clone()?)))?;
        // A probe that waits longer than this is lost in a queue no user would wait in.
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut idle = Vec::new();
        let start = Instant::now();
        while start.elapsed() < IDLE_FOR {
            let t = Instant::now();
            idle.push(probe_once(&s)?.as_secs_f64() * 1e3);
            std::thread::sleep(IDLE_EVERY.saturating_sub(t.elapsed()));
        }
        Ok(Probe {
            sock: Arc::new(s),
            idle,
            retransmits: None,
            cost: None,
            stop: Arc::new(AtomicBool::new(false)),
            thread: None,
            at_load: None,
        })
    }

    /// Starts probing every [`LOADED_EVERY`] until [`Probe::finish`].
    pub fn start_loaded(&mut self) {
        self.at_load = WireCount::of(&self.sock).map(|w| (Instant::now(), w));
        let s = Arc::clone(&self.sock);
        let stop = Arc::clone(&self.stop);
        self.thread = std::thread::Builder::new()
            .name("plumb-probe".into())
            .spawn(move || {
                let mut loaded = Vec::new();
                while !stop.load(Relaxed) {
                    let t = Instant::now();
                    match probe_once(&s) {
                        Ok(d) => loaded.push(d.as_secs_f64() * 1e3),
                        Err(_) => break,
                    }
                    let mut left = LOADED_EVERY.saturating_sub(t.elapsed());
                    while !left.is_zero() && !stop.load(Relaxed) {
                        let step = left.min(Duration::from_millis(10));
                        std::thread::sleep(step);
                        left = left.saturating_sub(step);
                    }
                }
                (loaded, crate::host::thread_schedstat().map(|(run, _)| run))
            })
            .ok();
    }

    /// Stops the probes; the loaded round trips, ms.
    pub fn finish(&mut self) -> Vec<f64> {
        self.stop.store(true, Relaxed);
        let (loaded, cpu_ns) = self
            .thread
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        self.retransmits = crate::tcpinfo::tcp_info(self.sock.as_fd())
            .ok()
            .map(|i| u64::from(i.total_retrans));
        self.cost = self
            .at_load
            .zip(WireCount::of(&self.sock))
            .map(|(a, b)| ProbeCost::between(a, b, cpu_ns));
        let _ = self.sock.shutdown(std::net::Shutdown::Both);
        loaded
    }
}

/// Server: answers the probe connection on its own thread until the client
/// closes it or `shared` says the test is over.
pub fn serve_probe(s: TcpStream, shared: Arc<StopAndBudget>) -> io::Result<()> {
    s.set_nonblocking(false)?;
    greet_tcp(&s, 0)?;
    std::thread::Builder::new()
        .name("plumb-probe".into())
        .spawn(move || {
            let c = Counters::default();
            // The client probes at most every IDLE_EVERY; answering at twice
            // that rate at most keeps a hostile client from turning the probe
            // connection into a test no limit sees.
            let ctx = RrContext {
                pace_bps: Some(2 * 2 * 8 * (1_000 / IDLE_EVERY.as_millis().max(1) as u64)),
                ..RrContext::default()
            };
            serve_tcp(&s, RrParams::default(), &ctx, &shared, &c);
        })?;
    Ok(())
}

/// Percentiles of `h` (ns) in `unit` ("us" or "ms"), with its buckets.
fn percentiles(h: &Histogram<u64>, unit: &str) -> Map<String, Value> {
    let div = if unit == "ms" { 1e6 } else { 1e3 };
    let v = |x: u64| x as f64 / div;
    let mut m = Map::new();
    if h.is_empty() {
        return m;
    }
    m.insert(format!("min_{unit}"), json!(v(h.min())));
    for (name, q) in [("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p99_9", 99.9)] {
        m.insert(format!("{name}_{unit}"), json!(v(h.value_at_percentile(q))));
    }
    m.insert(format!("max_{unit}"), json!(v(h.max())));
    m.insert(format!("mean_{unit}"), json!(h.mean() / div));
    // Buckets a quarter of an octave wide from 1 µs: enough to draw the
    // shape, at most ~130 of them.
    let buckets: Vec<Value> = h
        .iter_log(1000, 2f64.powf(0.25))
        .filter(|b| b.count_since_last_iteration() > 0)
        .map(|b| {
            json!({
                format!("le_{unit}"): v(b.value_iterated_to()),
                "count": b.count_since_last_iteration(),
            })
        })
        .collect();
    m.insert("buckets".into(), Value::Array(buckets));
    m
}

fn sum_rate(m: &mut Map<String, Value>, tx: u64, lost: u64, secs: f64, p: RrParams, udp: bool) {
    let rate = if secs > 0.0 { tx as f64 / secs } else { 0.0 };
    m.insert("transactions".into(), json!(tx));
    m.insert("transactions_per_second".into(), json!(rate));
    if p.mode == RrMode::Crr {
        // One connection per transaction: the same count under the name a
        // CRR user looks for.
        m.insert("connections".into(), json!(tx));
        m.insert("connections_per_second".into(), json!(rate));
    }
    if udp {
        m.insert("lost".into(), json!(lost));
    }
}

/// Which counts [`gather`] sums.
#[derive(Clone, Copy)]
enum Span {
    /// This interval's, taken: the interval counters start again from zero.
    Interval,
    /// The whole test's so far, read.
    Total,
}

/// The counts and histograms of all `counters` over one span.
struct Gathered {
    tx: u64,
    lost: u64,
    rtt: Histogram<u64>,
    conn: Histogram<u64>,
    rr: Histogram<u64>,
}

fn gather<'a>(counters: impl Iterator<Item = &'a Counters>, span: Span) -> Gathered {
    let mut g = Gathered {
        tx: 0,
        lost: 0,
        rtt: histogram(),
        conn: histogram(),
        rr: histogram(),
    };
    for c in counters {
        let r = &c.rr;
        match span {
            Span::Interval => {
                g.tx += r.interval_transactions.swap(0, Relaxed);
                g.lost += r.interval_lost.swap(0, Relaxed);
                r.rtt.take_interval(&mut g.rtt);
                r.connect.take_interval(&mut g.conn);
                r.reqresp.take_interval(&mut g.rr);
            }
            Span::Total => {
                g.tx += r.transactions.load(Relaxed);
                g.lost += r.lost.load(Relaxed);
                r.rtt.add_total(&mut g.rtt);
                r.connect.add_total(&mut g.conn);
                r.reqresp.add_total(&mut g.rr);
            }
        }
    }
    g
}

/// The latency object of one interval over `counters`, resetting their
/// interval histograms.
pub fn interval_json<'a>(
    counters: impl Iterator<Item = &'a Counters>,
    p: RrParams,
    udp: bool,
    secs: f64,
) -> Value {
    let Gathered {
        tx,
        lost,
        rtt,
        conn,
        rr,
    } = gather(counters, Span::Interval);
    let mut m = percentiles(&rtt, "us");
    m.remove("buckets");
    sum_rate(&mut m, tx, lost, secs, p, udp);
    if p.mode == RrMode::Crr && !conn.is_empty() {
        m.insert(
            "connect_p50_us".into(),
            json!(conn.value_at_percentile(50.0) as f64 / 1e3),
        );
        m.insert(
            "request_response_p50_us".into(),
            json!(rr.value_at_percentile(50.0) as f64 / 1e3),
        );
    }
    json!({ "latency": Value::Object(m) })
}

/// The whole test's `latency` object over `counters`.
pub fn end_json<'a>(
    counters: impl Iterator<Item = &'a Counters>,
    p: RrParams,
    udp: bool,
    secs: f64,
) -> Value {
    let Gathered {
        tx,
        lost,
        rtt,
        conn,
        rr,
    } = gather(counters, Span::Total);
    let mut m = Map::new();
    m.insert(
        "test".into(),
        json!(match (p.mode, udp) {
            (RrMode::Crr, _) => "crr",
            (RrMode::Rr, true) => "udp_rr",
            (RrMode::Rr, false) => "tcp_rr",
        }),
    );
    m.insert("request_bytes".into(), json!(p.request));
    m.insert("response_bytes".into(), json!(p.response));
    m.insert("burst".into(), json!(p.burst));
    m.insert("seconds".into(), json!(secs));
    sum_rate(&mut m, tx, lost, secs, p, udp);
    m.extend(percentiles(&rtt, "us"));
    if p.mode == RrMode::Crr {
        m.insert("connect".into(), Value::Object(percentiles(&conn, "us")));
        m.insert(
            "request_response".into(),
            Value::Object(percentiles(&rr, "us")),
        );
    }
    Value::Object(m)
}

/// The `--latency` object: idle and loaded probes in ms, the increase, and
/// responsiveness as the IPPM draft computes it, with where plumb differs.
pub fn probe_json(
    idle_ms: &[f64],
    loaded_ms: &[f64],
    retransmits: Option<u64>,
    cost: Option<ProbeCost>,
    load_bps: f64,
) -> Value {
    let side = |s: &[f64]| {
        let mut h = histogram();
        for &x in s {
            let _ = h.record(((x * 1e6) as u64).clamp(1, MAX_NS));
        }
        let mut m = percentiles(&h, "ms");
        m.insert("probes".into(), json!(s.len()));
        m.insert("rpm".into(), json!(plumb_model::latency::rpm(s)));
        (m, h)
    };
    let (idle, hi) = side(idle_ms);
    let (loaded, hl) = side(loaded_ms);
    let p50 =
        |h: &Histogram<u64>| (!h.is_empty()).then(|| h.value_at_percentile(50.0) as f64 / 1e6);
    let increase = p50(&hl).zip(p50(&hi)).map(|(l, i)| l - i);
    let p99 = (!hl.is_empty()).then(|| hl.value_at_percentile(99.0) as f64 / 1e6);
    let increase_p99 = p99.zip(p50(&hi)).map(|(l, i)| l - i);
    json!({
        "idle": idle,
        "loaded": loaded,
        "increase_p50_ms": increase,
        "increase_p99_ms": increase_p99,
        "probe_retransmits": retransmits,
        "probe_cost": cost.map(|c| json!({
            "seconds": c.secs,
            "wire_bits_per_second": c.wire_bps,
            "share_of_load": (load_bps > 0.0).then(|| c.wire_bps / load_bps),
            "thread_cpu_s": c.thread_cpu_s,
            "thread_cpu_share_of_one_core": c.thread_cpu_s.filter(|_| c.secs > 0.0).map(|t| t / c.secs),
        })),
        "probe_interval_ms": {
            "idle": IDLE_EVERY.as_secs_f64() * 1e3,
            "loaded": LOADED_EVERY.as_secs_f64() * 1e3,
        },
        "rpm_method": "60000 / the 95th-percentile trimmed mean of the round trips (the slowest 5 % dropped), as the IETF IPPM responsiveness draft; differences: one probe kind, 1-byte request/response over plumb's own TCP connection opened before the load (the draft averages TCP, TLS and HTTP/2 handshakes on new connections and HTTP/2 requests on the loaded ones), probes every 100 ms for the whole test rather than after the draft's load ramp and stability check",
    })
}

/// Text lines for the end of a request/response test.
pub fn end_text(v: &Value) -> Vec<String> {
    let f = |k: &str| v[k].as_f64().unwrap_or(0.0);
    let what = if v.get("connections_per_second").is_some() {
        "connections"
    } else {
        "transactions"
    };
    let mut lines = vec![format!(
        "{}: {} {what}, {:.1} {what}/s{}",
        v["test"]
            .as_str()
            .unwrap_or("rr")
            .replace('_', " ")
            .to_uppercase(),
        v["transactions"],
        f("transactions_per_second"),
        v.get("lost")
            .map(|l| format!(", {l} lost"))
            .unwrap_or_default()
    )];
    let row = |name: &str, m: &Value| {
        let g = |k: &str| m[k].as_f64().unwrap_or(0.0);
        format!(
            "{name:<18} min {:.1}  p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}  mean {:.1} us",
            g("min_us"),
            g("p50_us"),
            g("p90_us"),
            g("p99_us"),
            g("p99_9_us"),
            g("max_us"),
            g("mean_us")
        )
    };
    lines.push(row("round trip", v));
    if v.get("connect").is_some() {
        lines.push(row("  connect", &v["connect"]));
        lines.push(row("  request/response", &v["request_response"]));
    }
    lines
}

/// Text lines for `--latency`.
pub fn probe_text(v: &Value) -> Vec<String> {
    let row = |name: &str, m: &Value| {
        let g = |k: &str| m[k].as_f64().unwrap_or(f64::NAN);
        format!(
            "{name:<7} {} probes: min {:.2}  p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2} ms, {:.0} RPM",
            m["probes"],
            g("min_ms"),
            g("p50_ms"),
            g("p90_ms"),
            g("p99_ms"),
            g("max_ms"),
            g("rpm")
        )
    };
    let mut lines = vec![
        "Latency (separate probe connection):".to_string(),
        row("idle", &v["idle"]),
        row("loaded", &v["loaded"]),
        format!(
            "the load added {:.2} ms at the median, {:.2} ms at p99{}",
            v["increase_p50_ms"].as_f64().unwrap_or(f64::NAN),
            v["increase_p99_ms"].as_f64().unwrap_or(f64::NAN),
            match v["probe_retransmits"].as_u64() {
                Some(n) if n > 0 => format!(
                    "; the probe connection resent {n} segment(s): a probe dropped at a full \
                     queue waits for its retransmission, not for the queue"
                ),
                _ => String::new(),
            }
        ),
    ];
    let c = &v["probe_cost"];
    if let Some(w) = c["wire_bits_per_second"].as_f64() {
        lines.push(format!(
            "the probes cost {:.1} kbit/s on the wire both ways{}{}",
            w / 1e3,
            c["share_of_load"]
                .as_f64()
                .map(|s| format!(" ({:.4} % of the load)", s * 100.0))
                .unwrap_or_default(),
            c["thread_cpu_share_of_one_core"]
                .as_f64()
                .map(|s| format!(" and {:.3} % of a core", s * 100.0))
                .unwrap_or_default()
        ));
    }
    lines
}

/// Puts the request/response and probe results under `end.plumb.latency`
/// and prints their text lines.
pub fn attach_end(
    end: &mut plumb_report::EndRecord,
    session: &crate::session::Session,
    probes: Option<(&Probe, &[f64])>,
    sink: &mut dyn plumb_report::Sink,
) {
    let v = if let Some(p) = session.plan.rr {
        let secs = end
            .streams
            .iter()
            .map(|s| s.sent.seconds.max(s.received.seconds))
            .fold(0.0, f64::max);
        let v = end_json(
            session.streams.iter().map(|s| &*s.counters),
            p,
            session.plan.protocol == plumb_report::Protocol::Udp,
            secs,
        );
        for l in end_text(&v) {
            sink.note(&l);
        }
        v
    } else if let Some((probe, loaded)) = probes {
        // The load: what its receivers got, summed over the streams.
        let load_bps = end
            .streams
            .iter()
            .map(|s| plumb_report::StreamEnd::rate(s.received))
            .sum();
        let v = probe_json(&probe.idle, loaded, probe.retransmits, probe.cost, load_bps);
        for l in probe_text(&v) {
            sink.note(&l);
        }
        v
    } else {
        return;
    };
    let plumb = end.plumb.get_or_insert_with(|| json!({}));
    if let Some(m) = plumb.as_object_mut() {
        m.insert("latency".into(), v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::tcp_stream_pair;

    /// `--busy-poll`'s spin returns what arrives while it polls, and hands
    /// over to the sleeping read when its time is up with nothing there.
    #[test]
    fn a_spinning_read_takes_what_arrives_then_sleeps() {
        let (a, b) = tcp_stream_pair();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            (&a).write_all(b"x").expect("write");
            a
        });
        let mut buf = [0u8; 4];
        let mut slept = false;
        let n = read_spinning(
            b.as_fd(),
            &mut buf,
            Some(Duration::from_secs(5)),
            &mut |_| {
                slept = true;
                Ok(0)
            },
        )
        .expect("read");
        assert_eq!((n, buf[0], slept), (1, b'x', false));
        let _a = writer.join().expect("writer");
        // Nothing to read: after 1 ms of polling the sleeping read is called.
        let t0 = Instant::now();
        let n = read_spinning(
            b.as_fd(),
            &mut buf,
            Some(Duration::from_millis(1)),
            &mut |_| Ok(99),
        )
        .expect("fallback");
        assert_eq!(n, 99);
        assert!(t0.elapsed() >= Duration::from_millis(1));
        // No spin: straight to the sleeping read.
        assert_eq!(spin_of(None), None);
        assert_eq!(spin_of(Some(0)), None);
        assert_eq!(spin_of(Some(50)), Some(Duration::from_micros(50)));
    }
}
