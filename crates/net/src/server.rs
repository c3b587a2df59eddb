//! The server driver: accepts a control connection, drives [`ServerControl`]
//! through one test, accepts that test's data streams, refuses everyone else
//! with iperf3's "busy" byte, and goes back to listening.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use plumb_proto::server::{ServerControl, ServerEvent, ServerLimits};
use plumb_proto::{stream_id, udp, Cookie, State};
use plumb_report::text::TextSink;
use plumb_report::{Connected, EndRecord, IntervalRecord, Role, Sink, StartRecord, TestStart};

use crate::config::ServerConfig;
use crate::datapath::Drain;
use crate::errors::TestError;
use crate::session::{Plan, Session, Stream, StreamSocket};
use crate::signals;
use crate::sockets::{self, DataOptions};
use crate::{host, sockopt, sys};

/// How long all data streams of a test may take to connect.
const STREAMS_TIMEOUT: Duration = Duration::from_secs(10);
/// Past the test's own length, how long a test may run before the server gives up.
const WATCHDOG_SLACK: Duration = Duration::from_secs(40);

/// What `serve` learnt about the connection besides its outcome.
#[derive(Debug, Default)]
struct Served {
    /// The client got as far as sending parameters: this was a test.
    got_params: bool,
    /// The listener was made anew with data-stream options.
    listener_changed: bool,
}

/// Serves tests until interrupted (or after one with `-1`).
pub fn run(cfg: &ServerConfig, make_sink: &dyn Fn() -> Box<dyn Sink>) -> Result<(), TestError> {
    signals::install();
    let mut listener =
        sockets::listen_tcp(cfg.port, cfg.bind, cfg.family, None).map_err(TestError::Connect)?;
    let mut test_no = 1u64;
    let mut sink = make_sink();
    let mut banner = true;
    loop {
        if banner {
            sink.note("-----------------------------------------------------------");
            sink.note(&format!(
                "Server listening on {} (test #{test_no})",
                cfg.port
            ));
            sink.note("-----------------------------------------------------------");
        }
        let Some((ctl, peer)) = accept_until_signal(&listener) else {
            let _ = sink.finish();
            return Ok(());
        };
        let mut served = Served::default();
        let outcome = serve(cfg, &mut listener, ctl, peer, sink.as_mut(), &mut served);
        if served.listener_changed {
            // The next test must not inherit this one's buffer sizes, MSS or clamp.
            sockets::rebind_listener(&mut listener, cfg.bind, cfg.family, None)
                .map_err(TestError::Connect)?;
        }
        // A connection that never sent parameters (a port scan, a health check)
        // is not a test: it does not use up a -1 server and prints no report.
        banner = served.got_params;
        let host = sockets::host_string(&peer);
        if !served.got_params {
            if let Err(e) = &outcome {
                eprintln!("plumb server: connection from {host} without a test: {e}");
            }
            continue;
        }
        if let Err(e) = &outcome {
            sink.error(&e.to_string());
        }
        let _ = sink.finish();
        sink = make_sink();
        match &outcome {
            Ok(summary) => eprintln!("plumb server: test #{test_no} from {host}: {summary}"),
            Err(e) => eprintln!("plumb server: test #{test_no} from {host}: ended: {e}"),
        }
        if cfg.one_off || signals::interrupted() {
            return outcome.map(|_| ());
        }
        test_no += 1;
    }
}

fn accept_until_signal(l: &TcpListener) -> Option<(TcpStream, SocketAddr)> {
    loop {
        if signals::interrupted() {
            return None;
        }
        match sys::poll_one(l.as_fd(), libc::POLLIN, 200) {
            Ok(r) if r & libc::POLLIN != 0 => {
                if let Ok((s, a)) = l.accept() {
                    return Some((s, a));
                }
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Refuses connections that arrive while a test is running: iperf3's "busy".
fn refuse_pending(l: &TcpListener) {
    // Bounded: at most a burst of 64 per call.
    for _ in 0..64 {
        match sys::poll_one(l.as_fd(), libc::POLLIN, 0) {
            Ok(r) if r & libc::POLLIN != 0 => {
                if let Ok((mut s, _)) = l.accept() {
                    let _ = s.write_all(&[State::AccessDenied.to_byte()]);
                }
            }
            _ => return,
        }
    }
}

/// Tees records to the operator's sink and to a text capture for `--get-server-output`.
struct Tee<'a> {
    main: &'a mut dyn Sink,
    capture: TextSink<Vec<u8>>,
}

impl Sink for Tee<'_> {
    fn start(&mut self, s: &StartRecord) {
        self.main.start(s);
        self.capture.start(s);
    }
    fn interval(&mut self, i: &IntervalRecord) {
        self.main.interval(i);
        self.capture.interval(i);
    }
    fn end(&mut self, e: &EndRecord) {
        self.main.end(e);
        self.capture.end(e);
    }
    fn error(&mut self, m: &str) {
        self.main.error(m);
        self.capture.error(m);
    }
    fn note(&mut self, l: &str) {
        self.main.note(l);
        self.capture.note(l);
    }
    fn finish(&mut self) -> io::Result<()> {
        self.main.finish()
    }
}

fn flush(
    machine: &mut ServerControl,
    ctl: &mut TcpStream,
    out: &mut Vec<u8>,
) -> Result<(), TestError> {
    out.clear();
    while machine.poll_transmit(out) {}
    if !out.is_empty() {
        ctl.write_all(out).map_err(TestError::Control)?;
    }
    Ok(())
}

fn serve(
    cfg: &ServerConfig,
    listener: &mut TcpListener,
    mut ctl: TcpStream,
    peer: SocketAddr,
    sink: &mut dyn Sink,
    served: &mut Served,
) -> Result<String, TestError> {
    let _ = ctl.set_nodelay(true);
    let epoch = Instant::now();
    let mut machine = ServerControl::new(
        ServerLimits {
            handshake_timeout: cfg.handshake_timeout,
            ..ServerLimits::default()
        },
        Duration::ZERO,
    );
    let mut tee = Tee {
        main: sink,
        capture: TextSink::new(Vec::new(), false),
    };
    let mut session: Option<Session> = None;
    let mut cookie: Option<Cookie> = None;
    let mut params = None;
    let mut watchdog: Option<Instant> = None;
    let mut out = Vec::with_capacity(1024);
    let mut buf = vec![0u8; 16 * 1024];
    let mut summary = String::from("no test ran");
    loop {
        flush(&mut machine, &mut ctl, &mut out)?;
        while let Some(ev) = machine.poll_event() {
            match ev {
                ServerEvent::Cookie(c) => cookie = Some(c),
                ServerEvent::Params(p) => {
                    let p = *p;
                    served.got_params = true;
                    served.listener_changed = p.protocol == plumb_proto::params::Protocol::Tcp
                        && DataOptions::of(&p).need_listener_options();
                    tee.note(&format!(
                        "Accepted connection from {}, port {}",
                        sockets::host_string(&peer),
                        peer.port()
                    ));
                    let Some(c) = cookie else {
                        return Err(TestError::Protocol("parameters before the cookie".into()));
                    };
                    let plan = Plan::of(&p);
                    let opts = DataOptions::of(&p);
                    // Refuse what this host cannot do before the client opens streams.
                    if let Some(cc) = &opts.congestion {
                        let avail = host::tcp_sysctls()
                            .get("net.ipv4.tcp_available_congestion_control")
                            .cloned()
                            .unwrap_or_default();
                        if !avail.split_whitespace().any(|a| a == cc) {
                            let _ = machine.server_error(134, 0);
                            flush(&mut machine, &mut ctl, &mut out)?;
                            return Err(TestError::Server(format!(
                                "congestion control '{cc}' is not available"
                            )));
                        }
                    }
                    // The data listener must be ready before CREATE_STREAMS: a
                    // client's first UDP hello follows it within microseconds.
                    let udp = match prepare_streams(cfg, listener, &plan, &opts) {
                        Ok(u) => u,
                        Err(e) => {
                            let _ = machine.server_error(202, e.raw_os_error().unwrap_or(0));
                            flush(&mut machine, &mut ctl, &mut out)?;
                            return Err(TestError::Stream(e));
                        }
                    };
                    let _ = machine.create_streams();
                    flush(&mut machine, &mut ctl, &mut out)?;
                    let mut s = Session::new(plan.clone(), cfg.interval);
                    if let Err(e) = accept_streams(listener, udp, &c, &plan, &opts, &mut s, cfg) {
                        let _ = machine.server_error(204, e.raw_os_error().unwrap_or(0));
                        flush(&mut machine, &mut ctl, &mut out)?;
                        return Err(TestError::Stream(e));
                    }
                    tee.start(&start_record(&peer, &c, &p, &s, cfg.interval));
                    let _ = machine.start_test();
                    flush(&mut machine, &mut ctl, &mut out)?;
                    let now = Instant::now();
                    s.start(now, Drain::UntilQuiet);
                    watchdog =
                        Some(now + Duration::from_secs_f64(plan.time + plan.omit) + WATCHDOG_SLACK);
                    summary = format!(
                        "{} {} stream(s){}{}, {} s",
                        plan.protocol.name(),
                        plan.parallel,
                        if plan.reverse { ", reverse" } else { "" },
                        if plan.bidir { ", bidir" } else { "" },
                        plan.time
                    );
                    session = Some(s);
                    params = Some(p);
                }
                ServerEvent::TestEnd => {
                    if let Some(s) = session.as_mut() {
                        s.finish(Instant::now(), &mut tee);
                        close_streams(s);
                    }
                    let _ = machine.request_results();
                }
                ServerEvent::ClientResults(r) => {
                    let r = *r;
                    let s = session
                        .as_ref()
                        .ok_or_else(|| TestError::Protocol("results before a test".into()))?;
                    let cc = params
                        .as_ref()
                        .and_then(|p: &plumb_proto::params::TestParams| p.congestion.clone())
                        .or_else(|| {
                            host::tcp_sysctls()
                                .get("net.ipv4.tcp_congestion_control")
                                .cloned()
                        });
                    let end = s.end_record(&r, cc.clone());
                    tee.end(&end);
                    let mut local = s.local_results(cc);
                    if params.as_ref().is_some_and(|p| p.get_server_output) {
                        local.server_output_text =
                            Some(String::from_utf8_lossy(tee.capture.get_ref()).into_owned());
                    }
                    let _ = machine.send_results(&local);
                    let received: u64 = end.streams.iter().map(|x| x.received.bytes).sum();
                    let secs = end
                        .streams
                        .iter()
                        .map(|x| x.received.seconds)
                        .fold(0.0, f64::max);
                    summary = format!(
                        "{summary}: {} received, {}",
                        plumb_report::format::bytes(received as f64).trim(),
                        plumb_report::format::bitrate(if secs > 0.0 {
                            received as f64 * 8.0 / secs
                        } else {
                            0.0
                        })
                        .trim()
                    );
                }
                ServerEvent::Done { .. } => {
                    flush(&mut machine, &mut ctl, &mut out)?;
                    let _ = ctl.shutdown(std::net::Shutdown::Both);
                    return Ok(summary);
                }
                ServerEvent::ClientTerminated => {
                    if let Some(s) = session.as_mut() {
                        s.finish(Instant::now(), &mut tee);
                    }
                    return Err(TestError::Server("the client terminated the test".into()));
                }
                ServerEvent::Rejected { code, message } => {
                    flush(&mut machine, &mut ctl, &mut out)?;
                    return Err(TestError::Protocol(format!(
                        "parameters rejected (error {code}): {message}"
                    )));
                }
                ServerEvent::TimedOut { .. } => return Err(TestError::Timeout),
                ServerEvent::PeerClosed { phase } => {
                    if let Some(s) = session.as_mut() {
                        s.finish(Instant::now(), &mut tee);
                    }
                    return Err(TestError::Protocol(format!(
                        "the client closed the control connection ({})",
                        phase.as_str()
                    )));
                }
                ServerEvent::ProtocolError(e) => {
                    if let Some(s) = session.as_mut() {
                        s.finish(Instant::now(), &mut tee);
                    }
                    return Err(TestError::Protocol(e.to_string()));
                }
                other => {
                    if let Some(s) = session.as_mut() {
                        s.finish(Instant::now(), &mut tee);
                    }
                    return Err(TestError::Protocol(format!("unexpected event {other:?}")));
                }
            }
        }
        flush(&mut machine, &mut ctl, &mut out)?;
        let now = Instant::now();
        refuse_pending(listener);
        if signals::interrupted() {
            let _ = machine.terminate();
            let _ = flush(&mut machine, &mut ctl, &mut out);
            if let Some(s) = session.as_mut() {
                s.finish(now, &mut tee);
            }
            return Err(TestError::Interrupted);
        }
        if let Some(s) = session.as_mut() {
            if s.running() {
                s.tick(now, &mut tee);
            }
        }
        if watchdog.is_some_and(|w| now > w) {
            let _ = machine.server_error(160, 0);
            let _ = flush(&mut machine, &mut ctl, &mut out);
            if let Some(s) = session.as_mut() {
                s.finish(now, &mut tee);
            }
            return Err(TestError::Server(
                "the test ran far past its length; ended by the server".into(),
            ));
        }
        if let Some(t) = machine.poll_timeout() {
            if now.duration_since(epoch) >= t {
                machine.handle_timeout(now.duration_since(epoch));
                continue;
            }
        }
        let mut wake = now + Duration::from_millis(200);
        if let Some(t) = session.as_ref().and_then(Session::poll_at) {
            wake = wake.min(t);
        }
        if let Some(t) = machine.poll_timeout() {
            wake = wake.min(epoch + t);
        }
        if !crate::client::readable(&ctl, wake.saturating_duration_since(now)) {
            continue;
        }
        match ctl.read(&mut buf) {
            Ok(0) => machine.handle_eof(Instant::now().duration_since(epoch)),
            Ok(n) => machine.handle_input(&buf[..n], Instant::now().duration_since(epoch)),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => {
                if let Some(s) = session.as_mut() {
                    s.finish(Instant::now(), &mut tee);
                }
                return Err(TestError::Control(e));
            }
        }
    }
}

fn close_streams(s: &Session) {
    for st in &s.streams {
        if let StreamSocket::Tcp(t) = &st.socket {
            let _ = t.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// Readies what the data streams connect to: a listener carrying the
/// test's TCP options (they must be in the SYN-ACK), or the UDP socket.
fn prepare_streams(
    cfg: &ServerConfig,
    listener: &mut TcpListener,
    plan: &Plan,
    opts: &DataOptions,
) -> io::Result<Option<UdpSocket>> {
    match plan.protocol {
        plumb_report::Protocol::Tcp => {
            if opts.need_listener_options() {
                sockets::rebind_listener(listener, cfg.bind, cfg.family, Some(opts))?;
            }
            Ok(None)
        }
        plumb_report::Protocol::Udp => {
            let port = listener.local_addr()?.port();
            Ok(Some(sockets::bind_udp(port, cfg.bind, cfg.family, opts)?))
        }
    }
}

fn accept_streams(
    listener: &mut TcpListener,
    udp: Option<UdpSocket>,
    cookie: &Cookie,
    plan: &Plan,
    opts: &DataOptions,
    session: &mut Session,
    cfg: &ServerConfig,
) -> io::Result<()> {
    let deadline = Instant::now() + STREAMS_TIMEOUT;
    let n = plan.total_streams();
    match (plan.protocol, udp) {
        (plumb_report::Protocol::Tcp, _) => {
            while session.streams.len() < n {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client did not open all its streams",
                    ));
                }
                let ms = left.as_millis().min(1000) as i32;
                if sys::poll_one(listener.as_fd(), libc::POLLIN, ms)? & libc::POLLIN == 0 {
                    continue;
                }
                let (mut s, _) = listener.accept()?;
                s.set_read_timeout(Some(Duration::from_secs(5)))?;
                let mut got = [0u8; 37];
                if s.read_exact(&mut got).is_err() || !cookie.matches(&got) {
                    let _ = s.write_all(&[State::AccessDenied.to_byte()]);
                    continue;
                }
                s.set_read_timeout(None)?;
                let i = session.streams.len();
                let sender = !plan.client_sends(i);
                sockets::post_accept(&s, opts, sender)?;
                session.streams.push(Stream::new(
                    stream_id(i),
                    sender,
                    StreamSocket::Tcp(Arc::new(s)),
                ));
            }
        }
        (plumb_report::Protocol::Udp, None) => {
            return Err(io::Error::other("no UDP socket was prepared"));
        }
        (plumb_report::Protocol::Udp, Some(first)) => {
            let addr = listener.local_addr()?;
            let mut waiting = first;
            let mut hello = [0u8; 65_536];
            while session.streams.len() < n {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client did not open all its UDP streams",
                    ));
                }
                waiting.set_read_timeout(Some(left))?;
                let from = match waiting.recv_from(&mut hello) {
                    Ok((_, from)) => from,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                waiting.connect(from)?;
                // The next stream's hello follows our reply at once: its socket
                // must be bound before the reply goes out.
                let next = sockets::bind_udp(addr.port(), cfg.bind, cfg.family, opts)?;
                waiting.send(&udp::REPLY)?;
                let stream: UdpSocket = std::mem::replace(&mut waiting, next);
                let i = session.streams.len();
                let sender = !plan.client_sends(i);
                session.streams.push(Stream::new(
                    stream_id(i),
                    sender,
                    StreamSocket::Udp(Arc::new(stream)),
                ));
            }
        }
    }
    Ok(())
}

fn start_record(
    peer: &SocketAddr,
    cookie: &Cookie,
    p: &plumb_proto::params::TestParams,
    s: &Session,
    interval: f64,
) -> StartRecord {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let connected: Vec<Connected> = s
        .streams
        .iter()
        .filter_map(|st| {
            let (l, r, fd) = match &st.socket {
                StreamSocket::Tcp(t) => (
                    t.local_addr().ok()?,
                    t.peer_addr().ok()?,
                    std::os::fd::AsRawFd::as_raw_fd(&**t),
                ),
                StreamSocket::Udp(u) => (
                    u.local_addr().ok()?,
                    u.peer_addr().ok()?,
                    std::os::fd::AsRawFd::as_raw_fd(&**u),
                ),
            };
            Some(Connected {
                socket: fd,
                local_host: sockets::host_string(&l),
                local_port: l.port(),
                remote_host: sockets::host_string(&r),
                remote_port: r.port(),
            })
        })
        .collect();
    let (sndbuf, rcvbuf) = s
        .streams
        .first()
        .map(|st| match &st.socket {
            StreamSocket::Tcp(t) => (
                sockopt::send_buffer(t.as_fd()).unwrap_or(0),
                sockopt::recv_buffer(t.as_fd()).unwrap_or(0),
            ),
            StreamSocket::Udp(u) => (
                sockopt::send_buffer(u.as_fd()).unwrap_or(0),
                sockopt::recv_buffer(u.as_fd()).unwrap_or(0),
            ),
        })
        .unwrap_or((0, 0));
    StartRecord {
        role: Role::Server,
        version: format!("plumb {}", env!("CARGO_PKG_VERSION")),
        system_info: host::uname().to_string(),
        timesecs: now.as_secs(),
        timemillis: now.subsec_millis(),
        connecting_to: None,
        accepted_connection: Some((sockets::host_string(peer), peer.port())),
        cookie: cookie.as_str().into_owned(),
        tcp_mss: p.mss.map(|m| m as u32),
        tcp_mss_default: None,
        sock_bufsize: p.window.unwrap_or(0).max(0) as u64,
        sndbuf_actual: u64::from(sndbuf),
        rcvbuf_actual: u64::from(rcvbuf),
        test: TestStart {
            protocol: s.plan.protocol,
            num_streams: p.parallel as u32,
            blksize: p.len as u64,
            omit: p.omit as f64,
            duration: p.time as f64,
            bytes: p.num as u64,
            blocks: p.blockcount as u64,
            reverse: p.reverse,
            bidir: p.bidirectional,
            tos: p.tos.unwrap_or(0) as u32,
            target_bitrate: p.bandwidth as u64,
            interval,
        },
        connected,
        title: p.title.clone(),
        extra_data: p.extra_data.clone(),
    }
}
