//! The client driver: one loop that moves bytes between the control socket
//! and [`ClientControl`], opens the data streams when told, keeps the test's
//! time, and hands records to the sink.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use plumb_proto::client::{ClientControl, ClientEvent};
use plumb_proto::params::{PlumbParams, Protocol as WireProtocol, TestParams};
use plumb_proto::results::Results;
use plumb_proto::{stream_id, udp, Cookie};
use plumb_record::engine::{EndRecord, Protocol, Role, StartRecord, StreamEnd};
use plumb_record::{EndPlumb, Sink};

use crate::config::{ClientConfig, Transport, DEFAULT_TCP_LEN, DEFAULT_UDP_RATE};
use crate::datapath::Drain;
use crate::datathread::transient;
use crate::errors::{server_error_text, TestError};
use crate::rr::probe::Probe;
use crate::session::{Plan, Session, Stream};
use crate::signals;
use crate::sockets::{self, DataOptions, StreamSocket};
use crate::{host, sockopt};

/// How long the client waits for the server at each step of the handshake
/// and of the results exchange.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);

/// The parameters the client sends for `cfg`, and the datagram size for UDP.
pub fn params(cfg: &ClientConfig, control_mss: Option<u32>) -> TestParams {
    let s = &cfg.spec;
    let udp = s.transport == Transport::Udp;
    let mut p = TestParams {
        protocol: if udp {
            WireProtocol::Udp
        } else {
            WireProtocol::Tcp
        },
        ..TestParams::default()
    };
    // The wire carries whole seconds; the client keeps the exact time itself.
    p.omit = s.omit.ceil() as i64;
    p.time = s.time.ceil() as i64;
    p.num = i64::try_from(s.bytes).unwrap_or(i64::MAX);
    p.blockcount = i64::try_from(s.blocks).unwrap_or(i64::MAX);
    p.mss = s.mss.map(i64::from);
    p.nodelay = s.nodelay;
    p.parallel = i64::from(s.parallel);
    p.reverse = s.reverse;
    p.bidirectional = s.bidir;
    p.window = s.window.map(i64::from);
    p.len = i64::from(s.len.unwrap_or(if udp {
        // iperf3 sizes UDP datagrams to the control connection's MSS.
        control_mss
            .filter(|m| (16..=65_507).contains(m))
            .unwrap_or(1460)
    } else {
        DEFAULT_TCP_LEN
    }));
    let rate = requested_rate(s);
    // --total-bitrate: the peer (which may send, with -R) gets each stream's share.
    let rate = if s.total_bitrate {
        rate / u64::from(s.parallel.max(1))
    } else {
        rate
    };
    p.bandwidth = i64::try_from(rate).unwrap_or(i64::MAX);
    p.pacing_timer = Some(1000);
    p.fqrate = i64::try_from(s.fq_rate).unwrap_or(i64::MAX);
    p.mptcp = s.mptcp;
    p.flowlabel = cfg.local.flowlabel.map(i64::from);
    p.tos = (s.tos != 0).then_some(i64::from(s.tos));
    p.title.clone_from(&s.title);
    p.extra_data.clone_from(&s.extra_data);
    p.congestion.clone_from(&s.congestion);
    p.server_affinity = s.server_affinity.map(i64::from);
    p.get_server_output = s.get_server_output;
    p.udp_counters_64bit = s.udp_counters_64bit;
    p.repeating_payload = s.repeating_payload;
    p.zerocopy = s.zerocopy;
    if udp {
        set_gsro(&mut p, s.gsro);
    }
    p.client_version = "3.12".to_string();
    p.plumb = Some(PlumbParams {
        rwin: s.rwin,
        sndbuf: s.sndbuf,
        skip_rx_copy: s.skip_rx_copy,
        version: env!("CARGO_PKG_VERSION").to_string(),
        rr: s.rr,
        latency: s.latency,
    });
    p
}

/// Largest UDP payload of one GSO message (an IPv4 datagram's 65,535 bytes
/// less the IP and UDP headers).
const GSO_BUFFER: i64 = 65_507;
/// Most datagrams per GSO message asked of the peer: what plumb's own sender
/// puts in one where the kernel takes it (128, as iperf3 3.21+ asks; older
/// kernels take 64, and both senders fall back to that), so both directions
/// of a test are alike.
const GSO_MAX_DATAGRAMS: i64 = 128;

/// iperf3 3.21+'s GSO/GRO keys, sent with every UDP test whether on or off
/// (as that iperf3 does): `gso`/`gro` 1 or 0, the datagram size and the
/// largest GSO message (whole datagrams, at most 128) and GRO read. An
/// iperf3 3.21+ peer then sends and receives as asked; an older one
/// ignores the keys.
fn set_gsro(p: &mut TestParams, on: bool) {
    p.gso = Some(i64::from(on));
    p.gro = Some(i64::from(on));
    p.gso_dg_size = Some(if on { p.len } else { 0 });
    p.gso_bf_size = Some(if on && p.len > 0 {
        (GSO_BUFFER / p.len).clamp(1, GSO_MAX_DATAGRAMS) * p.len
    } else {
        GSO_BUFFER
    });
    p.gro_bf_size = Some(GSO_BUFFER);
}

/// The `authtoken` for `a`, stamped now (spec §10).
fn auth_token(a: &crate::config::ClientAuth) -> Result<String, TestError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let creds = plumb_proto::auth::Credentials {
        username: a.username.clone(),
        password: a.password.clone(),
        timestamp: now,
    };
    plumb_proto::auth::encrypt_token(&a.public_key, &creds, a.padding)
        .map_err(|e| TestError::Server(e.to_string()))
}

/// The rate `-b` asks for, bit/s (0 = unlimited), with iperf3's defaults.
///
/// A request/response test has no default cap, UDP or not: one transaction
/// in flight clocks itself, and iperf3's 1 Mbit/s UDP default, meant for a
/// flood, held a UDP `--rr` to about 1,000 transactions/s.
fn requested_rate(s: &crate::config::TestSpec) -> u64 {
    let udp_flood = s.transport == Transport::Udp && s.rr.is_none();
    s.bandwidth
        .unwrap_or(if udp_flood { DEFAULT_UDP_RATE } else { 0 })
}

pub(crate) fn random_cookie() -> Cookie {
    let mut r = [0u8; 36];
    if crate::sys::fill_random(&mut r).is_err() {
        // Uniqueness per test is all that matters; the clock is unique enough.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        for (i, b) in r.iter_mut().enumerate() {
            *b = (t >> (i % 16 * 8)) as u8 ^ i as u8;
        }
    }
    Cookie::from_random(&r)
}

/// Runs one test against `cfg.host`, reporting into `sink`.
pub fn run(cfg: &ClientConfig, sink: &mut dyn Sink) -> Result<(), TestError> {
    if cfg.tool == plumb_proto::tool::Tool::Nuttcp {
        return crate::nuttcp::client::run(cfg, sink);
    }
    if cfg.tool == plumb_proto::tool::Tool::Iperf2 {
        return crate::iperf2::client::run(cfg, sink);
    }
    let r = run_inner(cfg, sink);
    if let Err(e) = &r {
        sink.error(&e.to_string());
    }
    r
}

fn run_inner(cfg: &ClientConfig, sink: &mut dyn Sink) -> Result<(), TestError> {
    signals::install();
    let (ctl, server) = connect_control(cfg, sink)?;
    ClientRun::new(cfg, ctl, server, sink)?.drive(sink)
}

/// Connects the control connection to the first of `cfg.host`'s addresses
/// that answers.
fn connect_control(
    cfg: &ClientConfig,
    sink: &mut dyn Sink,
) -> Result<(TcpStream, SocketAddr), TestError> {
    sink.note(&format!(
        "Connecting to host {}, port {}",
        cfg.host, cfg.port
    ));
    crate::connect::connect_first(cfg, cfg.connect_timeout)
}

/// One test on the client: the control connection, its protocol machine,
/// the session and the clocks the driver loop keeps.
struct ClientRun<'c> {
    cfg: &'c ClientConfig,
    ctl: TcpStream,
    server: SocketAddr,
    control_mss: Option<u32>,
    params: TestParams,
    cookie: Cookie,
    machine: ClientControl,
    plan: Plan,
    opts: DataOptions,
    session: Session,
    probe: Option<Probe>,
    deadline: Option<Instant>,
    ended: bool,
    step_deadline: Instant,
    server_results: Option<Results>,
    /// The end record went out (with both ends' results).
    displayed: bool,
    out: Vec<u8>,
    buf: Vec<u8>,
}

impl<'c> ClientRun<'c> {
    fn new(
        cfg: &'c ClientConfig,
        ctl: TcpStream,
        server: SocketAddr,
        sink: &mut dyn Sink,
    ) -> Result<ClientRun<'c>, TestError> {
        ctl.set_nodelay(true).map_err(TestError::Control)?;
        let control_mss = sockopt::max_segment(ctl.as_fd()).ok();
        let mut params = params(cfg, control_mss);
        if let Some(a) = &cfg.auth {
            params.authtoken = Some(auth_token(a)?);
        }
        if cfg.spec.reverse {
            sink.note(&format!(
                "Reverse mode, remote host {} is sending",
                cfg.host
            ));
        }
        let cookie = random_cookie();
        let machine = ClientControl::new(cookie, params.clone());
        let mut plan = Plan::of(&params);
        plan.file = cfg.spec.file.clone();
        plan.time = cfg.spec.time;
        plan.omit = cfg.spec.omit;
        if cfg.spec.total_bitrate {
            // Our own senders share the whole rate through one pacer.
            plan.total_rate = Some(requested_rate(&cfg.spec)).filter(|&b| b > 0);
        }
        let opts = DataOptions::of(&params);
        let mut session = Session::new(plan.clone(), cfg.spec.interval);
        session.rr.bind = cfg.bind;
        session.rr.busy_poll = cfg.spec.busy_poll;
        Ok(ClientRun {
            cfg,
            ctl,
            server,
            control_mss,
            params,
            cookie,
            machine,
            plan,
            opts,
            session,
            probe: None,
            deadline: None,
            ended: false,
            step_deadline: Instant::now() + STEP_TIMEOUT,
            server_results: None,
            displayed: false,
            out: Vec::with_capacity(1024),
            buf: vec![0u8; 16 * 1024],
        })
    }

    /// The congestion control this end's TCP uses.
    fn local_cc(&self) -> Option<String> {
        self.params
            .congestion
            .clone()
            .or_else(host::default_congestion_control)
    }

    /// Writes what the machine has to send; whether there was any.
    fn transmit(&mut self) -> Result<bool, TestError> {
        self.out.clear();
        while self.machine.poll_transmit(&mut self.out) {}
        if self.out.is_empty() {
            return Ok(false);
        }
        self.ctl.write_all(&self.out).map_err(TestError::Control)?;
        crate::debug::line(
            self.cfg.debug,
            format_args!("sent {} bytes on the control connection", self.out.len()),
        );
        Ok(true)
    }

    /// Writes what the machine has to send on the way out, whatever happens
    /// to the write.
    fn transmit_last(&mut self) {
        self.out.clear();
        while self.machine.poll_transmit(&mut self.out) {}
        let _ = self.ctl.write_all(&self.out);
    }

    /// The driver loop: until the test is done or fails.
    fn drive(&mut self, sink: &mut dyn Sink) -> Result<(), TestError> {
        loop {
            self.transmit()?;
            while let Some(ev) = self.machine.poll_event() {
                crate::debug::line(self.cfg.debug, format_args!("received {}", ev.name()));
                self.step_deadline = Instant::now() + STEP_TIMEOUT;
                if self.on_event(ev, sink)? {
                    return Ok(());
                }
            }
            if self.transmit()? {
                continue;
            }
            let now = Instant::now();
            if signals::interrupted() {
                let _ = self.machine.terminate();
                self.transmit_last();
                self.end_alone(now, sink);
                return Err(TestError::Interrupted);
            }
            if self.session.running() {
                if self.end_if_due(now, sink)? {
                    continue;
                }
                // After the end check: at the deadline the last interval is
                // the one finish() emits. After TEST_END no interval is due:
                // the wait for the results is not part of the test.
                if !self.ended {
                    self.session.tick(now, sink);
                }
            }
            if now > self.step_deadline && (!self.session.running() || self.ended) {
                self.end_alone(now, sink);
                return Err(TestError::Timeout);
            }
            self.wait_and_read(now, sink)?;
        }
    }

    /// Acts on one event of the machine; `true` when the test is done.
    fn on_event(&mut self, ev: ClientEvent, sink: &mut dyn Sink) -> Result<bool, TestError> {
        match ev {
            ClientEvent::CreateStreams => {
                if self.cfg.spec.latency {
                    // Idle latency first, before any data stream exists.
                    let timeout = self.cfg.connect_timeout.or(Some(Duration::from_secs(10)));
                    let p =
                        Probe::open(self.server, self.cfg.bind, self.cookie.as_bytes(), timeout)
                            .map_err(|e| TestError::Ended(format!("latency probe: {e}")))?;
                    self.probe = Some(p);
                }
                connect_streams(
                    self.cfg,
                    self.server,
                    &self.cookie,
                    &self.plan,
                    &self.opts,
                    &mut self.session,
                )?;
            }
            ClientEvent::TestStart => {
                if self.plan.rr.is_some() {
                    self.expect_greetings()?;
                }
                sink.start(&start_record(
                    self.cfg,
                    &self.cookie,
                    &self.params,
                    &self.session,
                    &self.ctl,
                    self.control_mss,
                ));
            }
            ClientEvent::TestRunning => {
                let now = Instant::now();
                self.session.start(
                    now,
                    Drain::UntilEof {
                        limit: Duration::from_secs(5),
                    },
                );
                if self.plan.time > 0.0 {
                    self.deadline =
                        Some(now + Duration::from_secs_f64(self.plan.time + self.plan.omit));
                }
                if let Some(p) = self.probe.as_mut() {
                    p.start_loaded();
                }
            }
            ClientEvent::ResultsRequested => {
                // Receivers drain to the server's FIN so the counts are exact.
                self.session.finish(Instant::now(), sink);
                let results = self.session.local_results(self.local_cc());
                self.machine
                    .send_results(&results)
                    .map_err(|e| TestError::Protocol(e.to_string()))?;
            }
            ClientEvent::ServerResults(r) => self.server_results = Some(*r),
            ClientEvent::DisplayResults => self.display_results(sink),
            ClientEvent::Done => {
                self.transmit_last();
                let _ = self.ctl.shutdown(std::net::Shutdown::Both);
                return Ok(true);
            }
            other => return Err(self.failed(other, sink)),
        }
        Ok(false)
    }

    /// A plumb server greets each request/response stream; a stock iperf3
    /// server is silent. The greeting carries the CRR port.
    fn expect_greetings(&mut self) -> Result<(), TestError> {
        for s in &self.session.streams {
            match crate::rr::expect_greeting(&s.socket) {
                Ok(port) if port != 0 => {
                    self.session.rr.crr_addr = Some(SocketAddr::new(self.server.ip(), port));
                }
                Ok(_) => {}
                Err(e) => {
                    let _ = self.machine.terminate();
                    self.transmit_last();
                    return Err(TestError::Ended(e.to_string()));
                }
            }
        }
        Ok(())
    }

    /// Prints the end of the test: both ends' results, and the latency.
    fn display_results(&mut self, sink: &mut dyn Sink) {
        let peer = self.server_results.take().unwrap_or_default();
        if let Some(n) = peer
            .plumb
            .as_ref()
            .and_then(|p| p.concurrent_tests)
            .filter(|n| *n > 0)
        {
            sink.note(&format!(
                "note: the server ran {n} other test(s) at the same time as this one"
            ));
        }
        self.displayed = true;
        let mut end = self.session.end_record(&peer, self.local_cc());
        let loaded = self.probe.as_mut().map(Probe::finish);
        attach_latency(
            &mut end,
            &self.session,
            self.probe.as_ref().zip(loaded.as_deref()),
            sink,
        );
        sink.end(&end);
        if let Some(path) = &self.cfg.spec.file {
            crate::file_report::report(path, &self.session, sink);
        }
    }

    /// Ends the test without the server's results (interrupted, or they
    /// never came): when the test ran and its end has not gone out yet,
    /// this end's own counts and TCP state still make an end record, as
    /// iperf3 prints its summary on an interrupt. The receiving end's figures are missing from it, and its
    /// TCP_INFO still says what the peer acknowledged.
    fn end_alone(&mut self, now: Instant, sink: &mut dyn Sink) {
        let ran = self.session.running() && !self.displayed;
        self.session.finish(now, sink);
        if ran {
            sink.end(
                &self
                    .session
                    .end_record(&Results::default(), self.local_cc()),
            );
        }
    }

    /// The error an event that ends the test early stands for.
    fn failed(&mut self, ev: ClientEvent, sink: &mut dyn Sink) -> TestError {
        match ev {
            ClientEvent::AccessDenied => return TestError::Busy,
            ClientEvent::ServerError { code, errno } => {
                let mut text = server_error_text(code, errno);
                if self.cfg.spec.mptcp && errno == libc::EPROTONOSUPPORT {
                    text.push_str(": MPTCP (-m) streams are not available there");
                }
                return TestError::Server(text);
            }
            _ => {}
        }
        self.session.finish(Instant::now(), sink);
        match ev {
            ClientEvent::ServerTerminated => TestError::Server("the server has terminated".into()),
            ClientEvent::PeerClosed { .. } => {
                if self.cfg.auth.is_some() && self.session.streams.is_empty() {
                    // iperf3 3.21+ answers a failed authentication with a bare close.
                    return TestError::Server(
                        "the server closed the connection after the parameters \
                         (authentication failed?)"
                            .into(),
                    );
                }
                TestError::ControlClosed
            }
            ClientEvent::ProtocolError(e) => TestError::Protocol(e.to_string()),
            other => TestError::Protocol(format!("unexpected event {other:?}")),
        }
    }

    /// Ends the test when its time is up, its budget spent or every sender
    /// failed; `true` when it did just now.
    fn end_if_due(&mut self, now: Instant, sink: &mut dyn Sink) -> Result<bool, TestError> {
        let session = &self.session;
        let plan = &self.plan;
        let time_up = self.deadline.is_some_and(|d| now >= d);
        let we_send = session.streams.iter().any(|s| s.sender);
        let budget_done = plan.budget.is_some() && we_send && session.senders_done();
        let all_senders_failed = session.streams.iter().any(|s| s.sender)
            && session.senders_done()
            && plan.budget.is_none();
        if self.ended
            || !(time_up
                || budget_done
                || all_senders_failed
                || (plan.budget.is_some() && receivers_got_budget(session, plan)))
        {
            return Ok(false);
        }
        self.ended = true;
        self.session.stop_senders(now);
        // Let sender threads leave their loops before the server tears down.
        wait_senders(&self.session, Duration::from_secs(2));
        if budget_done {
            // A receiver counts what it read before TEST_END (iperf3's
            // stops reading then): a spent -n/-k budget ends once the
            // receiver has acknowledged all of it, so both ends count it.
            wait_drained(&self.session, Duration::from_secs(2));
        }
        self.machine
            .test_end()
            .map_err(|e| TestError::Protocol(e.to_string()))?;
        self.step_deadline = now + STEP_TIMEOUT;
        if let Some(e) = self.session.stream_error() {
            sink.note(&format!("warning: {e}"));
        }
        Ok(true)
    }

    /// Waits for the control connection until the next thing due, and
    /// feeds the machine what arrived.
    fn wait_and_read(&mut self, now: Instant, sink: &mut dyn Sink) -> Result<(), TestError> {
        // A -n/-k test ends when the senders say so: look often, so the
        // test (and the server's clock) stops within milliseconds of it.
        let idle = if self.plan.budget.is_some() && self.session.running() && !self.ended {
            Duration::from_millis(2)
        } else {
            Duration::from_millis(250)
        };
        let mut wake = now + idle;
        for t in [
            self.session.poll_at(),
            self.deadline,
            Some(self.step_deadline),
        ]
        .into_iter()
        .flatten()
        {
            wake = wake.min(t);
        }
        if !sockets::readable(&self.ctl, wake.saturating_duration_since(now)) {
            return Ok(());
        }
        match self.ctl.read(&mut self.buf) {
            Ok(0) => self.machine.handle_eof(now_since_start()),
            Ok(n) => self.machine.handle_input(&self.buf[..n], now_since_start()),
            Err(e) if transient(&e) => {}
            Err(e) => {
                self.session.finish(Instant::now(), sink);
                return Err(TestError::Control(e));
            }
        }
        Ok(())
    }
}

/// Puts the request/response or `--latency` result under
/// `end.plumb.latency` and hands it to the sink.
fn attach_latency(
    end: &mut EndRecord,
    session: &Session,
    probes: Option<(&Probe, &[f64])>,
    sink: &mut dyn Sink,
) {
    let latency = if let Some(p) = session.plan.rr {
        let secs = end
            .streams
            .iter()
            .map(|s| s.sent.seconds.max(s.received.seconds))
            .fold(0.0, f64::max);
        crate::rr::stats::end(
            session.streams.iter().map(|s| &*s.counters),
            p,
            session.plan.protocol == Protocol::Udp,
            secs,
        )
    } else if let Some((probe, loaded)) = probes {
        // The load: what its receivers got, summed over the streams.
        let load_bps = end
            .streams
            .iter()
            .map(|s| StreamEnd::rate(s.received))
            .sum();
        probe.result(loaded, load_bps)
    } else {
        return;
    };
    sink.latency(&latency);
    end.plumb.get_or_insert_with(EndPlumb::default).latency = Some(latency);
}

/// In reverse `-n`/`-k` tests the client counts what it received.
fn receivers_got_budget(s: &Session, plan: &Plan) -> bool {
    let Some(b) = plan.budget else { return false };
    if s.streams.iter().any(|st| st.sender) {
        return false;
    }
    let got: u64 = s
        .streams
        .iter()
        .map(|st| st.counters.bytes.load(std::sync::atomic::Ordering::Relaxed))
        .sum();
    got >= b
}

fn wait_senders(s: &Session, limit: Duration) {
    let t0 = Instant::now();
    while !s.senders_done() && t0.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Waits (at most `limit`) until every sent byte is acknowledged.
fn wait_drained(s: &Session, limit: Duration) {
    let t0 = Instant::now();
    while !s.senders_drained() && t0.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn now_since_start() -> Duration {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

fn connect_streams(
    cfg: &ClientConfig,
    server: SocketAddr,
    cookie: &Cookie,
    plan: &Plan,
    opts: &DataOptions,
    session: &mut Session,
) -> Result<(), TestError> {
    let timeout = cfg.connect_timeout.or(Some(Duration::from_secs(10)));
    for i in 0..plan.total_streams() {
        let sender = plan.client_sends(i);
        let port = cfg.cport.map(|p| p.saturating_add(i as u16));
        let socket = match plan.protocol {
            Protocol::Tcp => {
                let to = cfg.local.data_addr(server).map_err(TestError::Stream)?;
                let mut s =
                    sockets::connect_stream(to, cfg.bind, port, timeout, opts.mptcp, |sock| {
                        sockets::pre_connect(sock, opts, sender, !sender, true)?;
                        cfg.local.tcp_data(sock, server)
                    })
                    .map_err(TestError::Stream)?;
                s.write_all(cookie.as_bytes()).map_err(TestError::Stream)?;
                StreamSocket::Tcp(Arc::new(s))
            }
            Protocol::Udp => {
                let s = sockets::connect_udp(server, cfg.bind, port, opts, |sock| {
                    cfg.local.udp_data(sock)
                })
                .map_err(TestError::Stream)?;
                udp_hello(&s, !sender).map_err(TestError::Stream)?;
                StreamSocket::Udp(Arc::new(s))
            }
        };
        session
            .streams
            .push(Stream::new(stream_id(i), sender, socket));
    }
    Ok(())
}

/// The UDP "connect": hello, then the server's reply (a receiving stream may
/// see a couple of data datagrams first).
fn udp_hello(s: &UdpSocket, receiving: bool) -> io::Result<()> {
    s.send(&udp::HELLO)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    // On the heap: a 64 KiB array here, inlined into the client's loop, made
    // its frame 64 KiB larger and, by the stack probes of large frames,
    // resident for every test, TCP ones too.
    let mut buf = vec![0u8; 65_536];
    for _ in 0..(if receiving { 3 } else { 1 }) {
        let n = s.recv(&mut buf).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("no UDP reply from the server (is UDP blocked?): {e}"),
            )
        })?;
        if udp::is_reply(&buf[..n]) {
            return Ok(());
        }
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        "the server's UDP reply was not 6789",
    ))
}

fn start_record(
    cfg: &ClientConfig,
    cookie: &Cookie,
    p: &TestParams,
    session: &Session,
    ctl: &TcpStream,
    control_mss: Option<u32>,
) -> StartRecord {
    let _ = ctl;
    let mut r = session.start_record(cookie, p, cfg.spec.omit, cfg.spec.time, cfg.spec.interval);
    r.role = Role::Client;
    r.connecting_to = Some((cfg.host.clone(), cfg.port));
    r.tcp_mss_default = control_mss;
    r
}
