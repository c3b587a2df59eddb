//! One admitted test, on its own thread: authentication, the data streams
//! (TCP routed here by the gate, UDP taken by hello), the run with its
//! timers, and the results exchange.
//!
//! Everything a client can get wrong ends this test only, with a log line
//! naming the peer; the slot is freed when the thread returns.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use plumb_proto::params::TestParams;
use plumb_proto::server::{ServerControl, ServerEvent};
use plumb_proto::{auth, stream_id, udp, Cookie, State};
use plumb_record::engine::{EndRecord, IntervalRecord, Protocol, Role, StartRecord};
use plumb_record::{Capture, Latency, ServerOutput, Sink};

use super::admission::{code, cookie_key, Slot};
use super::rate_cap::RateCap;
use super::state::{log, ServerState};
use crate::config::canonical;
use crate::datapath::Drain;
use crate::datathread::AtBudget;
use crate::errors::TestError;
use crate::host;
use crate::session::{Plan, Session, Stream};
use crate::signals;
use crate::sockets::{self, DataOptions, StreamSocket};

/// How long all data streams of a test may take to connect.
const STREAMS_TIMEOUT: Duration = Duration::from_secs(10);
/// Past the test's own length, how long a test may run before the server gives up.
const WATCHDOG_SLACK: Duration = Duration::from_secs(40);
/// How long the client may take to send its results once asked.
const RESULTS_TIMEOUT: Duration = Duration::from_secs(30);
/// How long to wait for IPERF_DONE after our results.
const DONE_TIMEOUT: Duration = Duration::from_secs(10);
/// Window over which a test's rate is measured against its reservation.
const RATE_WINDOW: Duration = Duration::from_secs(5);
/// A test may exceed the rate it asked for by this factor (pacing is bursty).
const RATE_TOLERANCE: f64 = 1.25;

/// A control connection whose parameters were accepted, with its slot.
pub(crate) struct Admitted {
    pub ctl: TcpStream,
    pub peer: SocketAddr,
    pub machine: Box<ServerControl>,
    pub cookie: Cookie,
    pub params: Box<TestParams>,
    pub slot: Slot,
    pub test_no: u64,
    /// The gate's time origin, which the machine's deadlines count from.
    pub epoch: Instant,
}

/// Runs the test; the outcome line goes to stderr.
pub(crate) fn run(shared: &ServerState<'_>, a: Admitted) -> Result<String, TestError> {
    let peer = a.peer;
    let test_no = a.test_no;
    let mut sink = shared.printer.sink();
    let result = Test::new(shared, a, sink.as_mut()).drive();
    if let Err(e) = &result {
        sink.error(&e.to_string());
    }
    let _ = sink.finish();
    let host = sockets::host_string(&peer);
    match &result {
        Ok(summary) => eprintln!("plumb server: test #{test_no} from {host}: {summary}"),
        Err(e) => eprintln!("plumb server: test #{test_no} from {host}: ended: {e}"),
    }
    result
}

/// Tees records to the operator's sink and to a capture for
/// `--get-server-output`: the text report, or with `-J` the JSON document, as
/// an iperf3 server returns whichever it prints.
struct Tee<'a> {
    main: &'a mut dyn Sink,
    capture: Box<dyn Capture>,
}

impl Tee<'_> {
    /// Puts the captured report into the results sent to the client.
    fn attach(&self, r: &mut plumb_proto::results::Results) {
        match self.capture.output() {
            ServerOutput::Text(t) => r.server_output_text = Some(t),
            ServerOutput::Json(d) => r.server_output_json = Some(d.to_value()),
        }
    }
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
    fn latency(&mut self, l: &Latency) {
        self.main.latency(l);
        self.capture.latency(l);
    }
    fn finish(&mut self) -> io::Result<()> {
        self.main.finish()
    }
}

/// What the run loop of a test keeps between its turns.
struct RunState {
    /// The outcome line for the log, completed by the results.
    summary: String,
    /// When the server ends the test whatever the client does.
    watchdog: Option<Instant>,
    /// Data flows: the client has not sent TEST_END.
    running: bool,
    /// When the step the client owes (its results, IPERF_DONE) is late.
    step_deadline: Option<Instant>,
    /// The progress last seen, and when it changed (`--rcv-timeout`).
    last_seen: u64,
    last_progress: Instant,
    /// Bytes moved over the last seconds (`--max-bitrate`).
    samples: VecDeque<(Instant, u64)>,
    /// The average over `--server-bitrate-limit`'s window.
    cap: RateCap,
}

impl RunState {
    fn new(plan: &Plan, started: Instant, max_duration: Option<Duration>) -> Self {
        let summary = format!(
            "{} {} stream(s){}{}, {} s",
            plan.protocol.name(),
            plan.parallel,
            if plan.reverse { ", reverse" } else { "" },
            if plan.bidir { ", bidir" } else { "" },
            plan.time
        );
        let watchdog = if plan.time > 0.0 {
            Some(started + Duration::from_secs_f64(plan.time + plan.omit) + WATCHDOG_SLACK)
        } else {
            // Bounded by bytes or blocks: the operator's maximum, if any.
            max_duration.map(|m| started + m)
        };
        RunState {
            summary,
            watchdog,
            running: true,
            step_deadline: None,
            last_seen: 0,
            last_progress: started,
            samples: VecDeque::new(),
            cap: RateCap::default(),
        }
    }
}

struct Test<'s, 'a, 'k> {
    shared: &'s ServerState<'a>,
    ctl: TcpStream,
    peer: SocketAddr,
    machine: Box<ServerControl>,
    cookie: Cookie,
    params: TestParams,
    slot: Slot,
    epoch: Instant,
    tee: Tee<'k>,
    session: Option<Session>,
    out: Vec<u8>,
    listener_changed: bool,
}

impl Drop for Test<'_, '_, '_> {
    fn drop(&mut self) {
        self.slot.wind_down();
        if let Some(s) = self.session.as_mut() {
            s.stop_senders(Instant::now());
            s.stop_receivers();
        }
        if self.listener_changed {
            // The next test must not inherit this one's buffer sizes, MSS or clamp.
            if let Err(e) = self.shared.rebind(None) {
                eprintln!("plumb server: cannot restore the listener: {e}");
            }
        }
    }
}

impl<'s, 'a, 'k> Test<'s, 'a, 'k> {
    fn new(shared: &'s ServerState<'a>, a: Admitted, sink: &'k mut dyn Sink) -> Self {
        Test {
            shared,
            ctl: a.ctl,
            peer: a.peer,
            machine: a.machine,
            cookie: a.cookie,
            params: *a.params,
            slot: a.slot,
            epoch: a.epoch,
            tee: Tee {
                main: sink,
                capture: shared.printer.capture(),
            },
            session: None,
            out: Vec::with_capacity(1024),
            listener_changed: false,
        }
    }

    fn flush(&mut self) -> Result<(), TestError> {
        self.out.clear();
        while self.machine.poll_transmit(&mut self.out) {}
        if !self.out.is_empty() {
            self.ctl.write_all(&self.out).map_err(TestError::Control)?;
        }
        Ok(())
    }

    /// Sends SERVER_ERROR and returns the error for the log.
    fn fail(&mut self, code: i32, errno: i32, e: TestError) -> TestError {
        let _ = self.machine.server_error(code, errno);
        let _ = self.flush();
        self.finish_session();
        e
    }

    /// Ends the test early; the slot is as good as free from here on.
    fn finish_session(&mut self) {
        self.slot.wind_down();
        if let Some(s) = self.session.as_mut() {
            s.finish(Instant::now(), &mut self.tee);
        }
    }

    fn now(&self) -> Duration {
        Instant::now().saturating_duration_since(self.epoch)
    }

    fn drive(&mut self) -> Result<String, TestError> {
        let _ = self.ctl.set_nodelay(true);
        self.tee.note(&format!(
            "Accepted connection from {}, port {}",
            sockets::host_string(&self.peer),
            self.peer.port()
        ));
        self.authenticate()?;
        let mut plan = Plan::of(&self.params);
        // The client ends a -n/-k test when it has the budget: in reverse,
        // when it has *received* it, so UDP datagrams lost on the way are
        // made up by more until its TEST_END, as iperf3's server does.
        plan.at_budget = AtBudget::UdpUntilStopped;
        let opts = DataOptions::of(&self.params);
        self.check_congestion(&opts)?;
        self.pin_to_asked_cpu()?;
        let mut session = Session::new(plan.clone(), self.shared.cfg.interval);
        // Each sets its data listener up before CREATE_STREAMS: a client's
        // first UDP hello follows it within microseconds.
        match plan.protocol {
            Protocol::Tcp => self.tcp_streams(&plan, &opts, &mut session)?,
            Protocol::Udp => self.udp_streams(&plan, &opts, &mut session)?,
        }
        self.tee.start(&start_record(
            &self.peer,
            &self.cookie,
            &self.params,
            &session,
            self.shared.cfg.interval,
        ));
        let _ = self.machine.start_test();
        self.flush()?;
        let now = Instant::now();
        // A plumb client closes each stream after its last byte, so its tail
        // (still in its send buffer at TEST_END on a slow link) can be read to
        // the end and counted exactly; a stock iperf3 client closes only after
        // the results, so for it the drain stops when the stream goes quiet.
        let drain = if self.params.plumb.is_some() {
            Drain::UntilEof {
                limit: Duration::from_secs(10),
            }
        } else {
            Drain::UntilQuiet
        };
        session.start(now, drain);
        self.session = Some(session);
        self.run_test(&plan, now)
    }

    /// The TCP data connections of the test: a listener of the test's own
    /// where its options or a CRR test need one, then each stream the
    /// gate routes here by its cookie.
    fn tcp_streams(
        &mut self,
        plan: &Plan,
        opts: &DataOptions,
        session: &mut Session,
    ) -> Result<(), TestError> {
        let key = cookie_key(self.cookie.as_bytes());
        let (tx, rx) = mpsc::channel();
        // Listener options reach the SYN-ACK only through a new
        // listener; that is safe only while no other test can be
        // connecting (one slot). Otherwise they are set after accept.
        if opts.mptcp && self.shared.cfg.max_tests != 1 {
            // MPTCP reaches a stream only through a new listener,
            // which another test may be connecting to.
            let e = io::Error::new(
                io::ErrorKind::Unsupported,
                "MPTCP (-m) needs a server with --max-tests 1",
            );
            return Err(self.fail(202, libc::EPROTONOSUPPORT, TestError::Stream(e)));
        }
        if self.shared.cfg.max_tests == 1 && opts.need_listener_options() {
            self.shared
                .rebind(Some(opts.clone()))
                .map_err(|e| self.fail(202, e.raw_os_error().unwrap_or(0), TestError::Stream(e)))?;
            self.listener_changed = true;
        }
        if self
            .params
            .plumb
            .as_ref()
            .and_then(|x| x.rr)
            .is_some_and(|r| r.mode == plumb_proto::rr::RrMode::Crr)
        {
            // CRR connections come to a listener of their own, whose
            // port the greeting names; only the client's host may use it.
            let ip = self.ctl.local_addr().map_err(TestError::Control)?.ip();
            let l = std::net::TcpListener::bind((ip, 0))
                .map_err(|e| self.fail(202, e.raw_os_error().unwrap_or(0), TestError::Stream(e)))?;
            session.rr.listener = Some(Arc::new(l));
            session.rr.peer_ip = Some(self.peer.ip());
        }
        self.shared.registry.accept_streams(key, tx);
        self.create_streams()?;
        let r = self.accept_tcp(&rx, plan, opts, session);
        self.shared.registry.streams_complete(key);
        // Connections that raced in after the last stream get the refusal.
        while let Ok((mut extra, from)) = rx.try_recv() {
            log(&from, "refused: more data streams than the test announced");
            let _ = extra.write_all(&[State::AccessDenied.to_byte()]);
        }
        r.map_err(|e| self.fail(204, e.raw_os_error().unwrap_or(0), TestError::Stream(e)))?;
        Ok(())
    }

    /// The UDP data flows of the test, on the server's port.
    fn udp_streams(
        &mut self,
        plan: &Plan,
        opts: &DataOptions,
        session: &mut Session,
    ) -> Result<(), TestError> {
        let lock = self.udp_setup_lock()?;
        let first = sockets::bind_udp(
            self.shared.port,
            self.shared.cfg.bind,
            self.shared.cfg.family,
            opts,
            &self.shared.cfg.local,
        )
        .map_err(|e| self.fail(202, e.raw_os_error().unwrap_or(0), TestError::Stream(e)))?;
        self.create_streams()?;
        let r = self.accept_udp(first, plan, opts, session);
        drop(lock);
        r.map_err(|e| self.fail(204, e.raw_os_error().unwrap_or(0), TestError::Stream(e)))?;
        Ok(())
    }

    fn authenticate(&mut self) -> Result<(), TestError> {
        let Some(cfg) = self.shared.cfg.auth.as_deref() else {
            return Ok(());
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let r = auth::authenticate(
            &cfg.private_key,
            &cfg.users,
            self.params.authtoken.as_deref(),
            now,
            cfg.skew_secs,
        );
        match r {
            Ok(user) => {
                self.tee.note(&format!("Authenticated user '{user}'"));
                Ok(())
            }
            Err(e) => {
                // iperf3 up to 3.18 sends the code without the errno word.
                let _ = if legacy_auth_framing(&self.params.client_version) {
                    self.machine.server_error_code_only(code::AUTH)
                } else {
                    self.machine.server_error(code::AUTH, 0)
                };
                let _ = self.flush();
                self.slot.wind_down();
                Err(TestError::Ended(format!("authentication failed: {e}")))
            }
        }
    }

    /// `-A n,m` on the client: this test's threads run on CPU m. The test
    /// thread pins itself before it starts any stream, so the streams'
    /// threads inherit the CPU, and other tests keep the server's own (a
    /// server runs several tests at once; iperf3 pins its whole process and
    /// restores it after). The thread ends with the test: nothing to undo.
    fn pin_to_asked_cpu(&mut self) -> Result<(), TestError> {
        let Some(cpu) = self.params.server_affinity else {
            return Ok(());
        };
        let pinned = usize::try_from(cpu)
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
            .and_then(host::pin_current_thread);
        match pinned {
            Ok(()) => Ok(()),
            Err(e) => {
                let errno = e.raw_os_error().unwrap_or(libc::EINVAL);
                Err(self.fail(
                    132,
                    errno,
                    TestError::Ended(format!("cannot pin the test to CPU {cpu}: {e}")),
                ))
            }
        }
    }

    fn check_congestion(&mut self, opts: &DataOptions) -> Result<(), TestError> {
        // Refuse what this host cannot do before the client opens streams.
        if let Some(cc) = &opts.congestion {
            let avail = host::tcp_sysctls()
                .get("net.ipv4.tcp_available_congestion_control")
                .cloned()
                .unwrap_or_default();
            if !avail.split_whitespace().any(|a| a == cc) {
                return Err(self.fail(
                    134,
                    0,
                    TestError::Ended(format!("congestion control '{cc}' is not available")),
                ));
            }
        }
        Ok(())
    }

    fn create_streams(&mut self) -> Result<(), TestError> {
        self.machine
            .create_streams()
            .map_err(|e| TestError::Protocol(e.to_string()))?;
        self.flush()
    }

    fn udp_setup_lock(&mut self) -> Result<std::sync::MutexGuard<'s, ()>, TestError> {
        let deadline = Instant::now() + STREAMS_TIMEOUT;
        loop {
            match self.shared.udp_setup.try_lock() {
                Ok(g) => return Ok(g),
                Err(std::sync::TryLockError::Poisoned(p)) => return Ok(p.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => {}
            }
            if Instant::now() > deadline {
                return Err(self.fail(
                    202,
                    0,
                    TestError::Ended("another UDP test kept the UDP port busy".into()),
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// While streams connect the client has nothing to say; a close or
    /// CLIENT_TERMINATE on the control connection ends the wait at once.
    fn control_gone(&mut self) -> bool {
        if !sockets::readable(&self.ctl, Duration::ZERO) {
            return false;
        }
        let mut buf = [0u8; 512];
        let t = self.now();
        match self.ctl.read(&mut buf) {
            Ok(0) => self.machine.handle_eof(t),
            Ok(n) => self.machine.handle_input(&buf[..n], t),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            Err(_) => return true,
        }
        self.machine.is_closed()
    }

    /// Takes data streams from `next` until the test has all it announced;
    /// `next` waits at most the time it is given and says `None` when
    /// nothing came that is a stream. A client that takes too long, or
    /// leaves, ends the wait: `what` names its streams in the error.
    fn accept_streams(
        &mut self,
        plan: &Plan,
        session: &mut Session,
        what: &str,
        mut next: impl FnMut(Duration, &Session) -> io::Result<Option<Stream>>,
    ) -> io::Result<()> {
        let deadline = Instant::now() + STREAMS_TIMEOUT;
        while session.streams.len() < plan.total_streams() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || signals::interrupted() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the client opened {} of its {} {what}",
                        session.streams.len(),
                        plan.total_streams()
                    ),
                ));
            }
            if self.control_gone() {
                return Err(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "the client left while its streams were connecting",
                ));
            }
            if let Some(stream) = next(left.min(Duration::from_millis(100)), session)? {
                session.streams.push(stream);
            }
        }
        Ok(())
    }

    /// TCP streams, as the gate routes them here by their cookie.
    fn accept_tcp(
        &mut self,
        rx: &mpsc::Receiver<(TcpStream, SocketAddr)>,
        plan: &Plan,
        opts: &DataOptions,
        session: &mut Session,
    ) -> io::Result<()> {
        // --latency: the client's first connection is its probe, answered at once.
        let mut probe = self.params.plumb.as_ref().is_some_and(|p| p.latency);
        let crr_port = session
            .rr
            .listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
            .map_or(0, |a| a.port());
        self.accept_streams(plan, session, "streams", |wait, session| {
            let (s, _) = match rx.recv_timeout(wait) {
                Ok(c) => c,
                Err(mpsc::RecvTimeoutError::Timeout) => return Ok(None),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(io::Error::other("the server is shutting down"))
                }
            };
            if std::mem::take(&mut probe) {
                crate::rr::serve_probe(s, Arc::clone(&session.shared))?;
                return Ok(None);
            }
            s.set_nonblocking(false)?;
            let i = session.streams.len();
            let sender = !plan.client_sends(i);
            sockets::post_accept(&s, opts, sender)?;
            if plan.rr.is_some() {
                crate::rr::greet_tcp(&s, crr_port)?;
            }
            Ok(Some(Stream::new(
                stream_id(i),
                sender,
                StreamSocket::Tcp(Arc::new(s)),
            )))
        })
    }

    /// UDP streams, each announced by a hello on the socket bound for it.
    fn accept_udp(
        &mut self,
        first: UdpSocket,
        plan: &Plan,
        opts: &DataOptions,
        session: &mut Session,
    ) -> io::Result<()> {
        let (shared, peer) = (self.shared, self.peer);
        let mut waiting = first;
        let mut hello = [0u8; 2048];
        let mut stray = 0u64;
        let want_ip = canonical(peer.ip());
        self.accept_streams(plan, session, "UDP streams", |wait, session| {
            waiting.set_read_timeout(Some(wait))?;
            let (n, from) = match waiting.recv_from(&mut hello) {
                Ok(r) => r,
                Err(e) if crate::datathread::transient(&e) => return Ok(None),
                Err(e) => return Err(e),
            };
            // A hello is 4 bytes from the control connection's host; anything
            // else is someone else's datagram and is dropped.
            if n != udp::HELLO.len() || canonical(from.ip()) != want_ip {
                if stray == 0 {
                    log(
                        &from,
                        &format!("ignored a {n}-byte UDP datagram that is no hello of this test"),
                    );
                }
                stray += 1;
                return Ok(None);
            }
            waiting.connect(from)?;
            // The next stream's hello follows our reply at once: its socket
            // must be bound before the reply goes out.
            let next = sockets::bind_udp(
                shared.port,
                shared.cfg.bind,
                shared.cfg.family,
                opts,
                &shared.cfg.local,
            )?;
            waiting.send(&udp::REPLY)?;
            if plan.rr.is_some() {
                crate::rr::greet_udp(&waiting)?;
            }
            let stream: UdpSocket = std::mem::replace(&mut waiting, next);
            let i = session.streams.len();
            let sender = !plan.client_sends(i);
            Ok(Some(Stream::new(
                stream_id(i),
                sender,
                StreamSocket::Udp(Arc::new(stream)),
            )))
        })?;
        if stray > 1 {
            log(
                &peer,
                &format!("{stray} stray UDP datagrams were ignored while its streams connected"),
            );
        }
        Ok(())
    }

    /// Total bytes moved by all streams so far.
    fn bytes_moved(&self) -> u64 {
        self.session.as_ref().map_or(0, |s| {
            s.streams
                .iter()
                .map(|st| st.counters.bytes.load(Relaxed))
                .sum()
        })
    }

    /// What counts as progress for `--rcv-timeout`: every byte received,
    /// and the bytes sent up to the `-n`/`-k` budget. Datagrams sent past
    /// the budget, for a client that lost some, are not progress, so a
    /// client that never ends its test is still cut off.
    fn progress(&self) -> u64 {
        self.session.as_ref().map_or(0, |s| {
            let (sent, received) = s.streams.iter().fold((0u64, 0u64), |(tx, rx), st| {
                let b = st.counters.bytes.load(Relaxed);
                if st.sender {
                    (tx + b, rx)
                } else {
                    (tx, rx + b)
                }
            });
            received + s.plan.budget.map_or(sent, |b| sent.min(b))
        })
    }

    /// Runs the test to its end: the client's messages, the streams'
    /// intervals, and the limits the server enforces, until the results are
    /// exchanged or something ends the test.
    fn run_test(&mut self, plan: &Plan, started: Instant) -> Result<String, TestError> {
        let mut st = RunState::new(plan, started, self.shared.cfg.limits.max_duration);
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            self.flush()?;
            if let Some(summary) = self.handle_events(&mut st)? {
                return Ok(summary);
            }
            self.flush()?;
            let now = Instant::now();
            if signals::interrupted() {
                let _ = self.machine.terminate();
                let _ = self.flush();
                self.finish_session();
                return Err(TestError::Interrupted);
            }
            if st.running {
                self.check_running(now, &mut st)?;
            }
            if let Some(summary) = self.check_deadlines(now, &mut st)? {
                return Ok(summary);
            }
            self.read_control(now, &mut buf)?;
        }
    }

    /// Acts on what the client said; the test's summary line once it is
    /// over.
    fn handle_events(&mut self, st: &mut RunState) -> Result<Option<String>, TestError> {
        while let Some(ev) = self.machine.poll_event() {
            crate::debug::line(
                self.shared.cfg.debug,
                format_args!("{}: received {}", self.peer, ev.name()),
            );
            match ev {
                ServerEvent::TestEnd => {
                    st.running = false;
                    if let Some(s) = self.session.as_mut() {
                        s.finish(Instant::now(), &mut self.tee);
                        close_streams(s);
                    }
                    let _ = self.machine.request_results();
                    st.step_deadline = Some(Instant::now() + RESULTS_TIMEOUT);
                }
                ServerEvent::ClientResults(r) => {
                    st.summary = self.send_results(&r, std::mem::take(&mut st.summary))?;
                    st.step_deadline = Some(Instant::now() + DONE_TIMEOUT);
                }
                ServerEvent::Done { .. } => {
                    self.flush()?;
                    let _ = self.ctl.shutdown(std::net::Shutdown::Both);
                    return Ok(Some(std::mem::take(&mut st.summary)));
                }
                ServerEvent::ClientTerminated => {
                    self.finish_session();
                    return Err(TestError::Ended("the client terminated the test".into()));
                }
                ServerEvent::PeerClosed { phase } => {
                    self.finish_session();
                    return Err(TestError::Protocol(format!(
                        "the client closed the control connection ({})",
                        phase.as_str()
                    )));
                }
                ServerEvent::ProtocolError(e) => {
                    self.finish_session();
                    return Err(TestError::Protocol(e.to_string()));
                }
                other => {
                    self.finish_session();
                    return Err(TestError::Protocol(format!("unexpected event {other:?}")));
                }
            }
        }
        Ok(None)
    }

    /// While data flows: the streams' intervals, then `--rcv-timeout` (no
    /// progress on any stream for that long) and the reserved rate.
    fn check_running(&mut self, now: Instant, st: &mut RunState) -> Result<(), TestError> {
        let cfg = self.shared.cfg;
        if let Some(s) = self.session.as_mut() {
            s.tick(now, &mut self.tee);
        }
        let moved = self.bytes_moved();
        let progress = self.progress();
        if progress != st.last_seen {
            st.last_seen = progress;
            st.last_progress = now;
        } else if now.duration_since(st.last_progress) > cfg.rcv_timeout {
            return Err(self.fail(
                code::IDLE,
                0,
                TestError::Ended(format!(
                    "no data for {} ms (--rcv-timeout)",
                    cfg.rcv_timeout.as_millis()
                )),
            ));
        }
        if let Some(e) = self.check_cap(now, moved, &mut st.cap) {
            return Err(e);
        }
        match self.check_rate(now, moved, &mut st.samples) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// iperf3's `--server-bitrate-limit`: the average over its window.
    fn check_cap(&mut self, now: Instant, moved: u64, cap: &mut RateCap) -> Option<TestError> {
        let (bps, window) = self.shared.cfg.limits.bitrate_cap?;
        let avg = cap.over(now, moved, bps, window)?;
        Some(self.fail(
            code::TOTAL_RATE,
            0,
            TestError::Ended(format!(
                "the test averaged {avg:.0} bit/s over {} s, over this server's limit of {bps} bit/s \
                 (--server-bitrate-limit)",
                window.as_secs_f64()
            )),
        ))
    }

    /// The server's watchdog and the deadline of the step the client owes;
    /// the summary when a missing IPERF_DONE is all that is late.
    fn check_deadlines(
        &mut self,
        now: Instant,
        st: &mut RunState,
    ) -> Result<Option<String>, TestError> {
        if st.watchdog.is_some_and(|w| now > w) {
            return Err(self.fail(
                code::EXPIRED,
                0,
                TestError::Ended(
                    "the test ran past what the server allows; ended by the server".into(),
                ),
            ));
        }
        if st.step_deadline.is_some_and(|d| now > d) {
            if self.machine.phase() == plumb_proto::ServerPhase::AwaitDone {
                // Results are exchanged; a missing IPERF_DONE changes nothing.
                return Ok(Some(std::mem::take(&mut st.summary)));
            }
            self.finish_session();
            return Err(TestError::Timeout);
        }
        Ok(None)
    }

    /// Waits for the control connection until the next interval is due (at
    /// most 200 ms) and hands what arrives to the machine.
    fn read_control(&mut self, now: Instant, buf: &mut [u8]) -> Result<(), TestError> {
        let mut wake = now + Duration::from_millis(200);
        if let Some(t) = self.session.as_ref().and_then(Session::poll_at) {
            wake = wake.min(t);
        }
        if !sockets::readable(&self.ctl, wake.saturating_duration_since(now)) {
            return Ok(());
        }
        match self.ctl.read(buf) {
            Ok(0) => {
                let t = self.now();
                self.machine.handle_eof(t);
            }
            Ok(n) => {
                let t = self.now();
                self.machine.handle_input(&buf[..n], t);
            }
            Err(e) if crate::datathread::transient(&e) => {}
            Err(e) => {
                self.finish_session();
                return Err(TestError::Control(e));
            }
        }
        Ok(())
    }

    /// `--max-bitrate` / `--max-total-bitrate`: the rate over the last few
    /// seconds may not exceed what the test reserved (by much).
    fn check_rate(
        &mut self,
        now: Instant,
        moved: u64,
        samples: &mut VecDeque<(Instant, u64)>,
    ) -> Option<TestError> {
        let limits = &self.shared.cfg.limits;
        if limits.max_bitrate.is_none() && limits.max_total_bitrate.is_none() {
            return None;
        }
        if samples
            .back()
            .is_none_or(|(t, _)| now.duration_since(*t) >= Duration::from_millis(250))
        {
            samples.push_back((now, moved));
        }
        while samples.len() > 2
            && samples
                .front()
                .is_some_and(|(t, _)| now.duration_since(*t) > RATE_WINDOW)
        {
            samples.pop_front();
        }
        let (t0, b0) = *samples.front()?;
        let dt = now.duration_since(t0).as_secs_f64();
        if dt < 1.0 {
            return None;
        }
        let bps = (moved - b0) as f64 * 8.0 / dt;
        let allowed = self.slot.rate_bps() as f64 * RATE_TOLERANCE + 1e6;
        if bps > allowed {
            return Some(self.fail(
                code::TOTAL_RATE,
                0,
                TestError::Ended(format!(
                    "the test moved {:.0} bit/s, more than the {} bit/s it asked for",
                    bps,
                    self.slot.rate_bps()
                )),
            ));
        }
        None
    }

    fn send_results(
        &mut self,
        r: &plumb_proto::Results,
        summary: String,
    ) -> Result<String, TestError> {
        let s = self
            .session
            .as_ref()
            .ok_or_else(|| TestError::Protocol("results before a test".into()))?;
        let cc = self
            .params
            .congestion
            .clone()
            .or_else(host::default_congestion_control);
        let mut end = s.end_record(r, cc.clone());
        let mut local = s.local_results(cc);
        let others = self.slot.concurrent();
        if others > 0 {
            if let Some(p) = local.plumb.as_mut() {
                p.concurrent_tests = Some(others);
            }
            if let Some(p) = end.plumb.as_mut() {
                p.concurrent_tests = Some(others);
            }
            self.tee.note(&format!(
                "note: {others} other test(s) ran on this server at the same time"
            ));
        }
        self.tee.end(&end);
        if self.params.get_server_output {
            self.tee.attach(&mut local);
        }
        let _ = self.machine.send_results(&local);
        // The client may now finish and start its next test at once.
        self.slot.wind_down();
        let received: u64 = end.streams.iter().map(|x| x.received.bytes).sum();
        let secs = end
            .streams
            .iter()
            .map(|x| x.received.seconds)
            .fold(0.0, f64::max);
        let bps = if secs > 0.0 {
            received as f64 * 8.0 / secs
        } else {
            0.0
        };
        Ok(format!(
            "{summary}: {}{}",
            self.shared.printer.received(received, bps),
            if others > 0 {
                format!(" ({others} other test(s) at the same time)")
            } else {
                String::new()
            }
        ))
    }
}

/// Whether a client of this version expects an authentication failure as
/// iperf3 up to 3.18 sends it (code without errno word, spec §7).
fn legacy_auth_framing(client_version: &str) -> bool {
    !client_version.is_empty() && !super::admission::iperf3_minor_at_least(client_version, 19)
}

fn close_streams(s: &Session) {
    for st in &s.streams {
        if let StreamSocket::Tcp(t) = &st.socket {
            let _ = t.shutdown(std::net::Shutdown::Both);
        }
    }
}

fn start_record(
    peer: &SocketAddr,
    cookie: &Cookie,
    p: &TestParams,
    s: &Session,
    interval: f64,
) -> StartRecord {
    let mut r = s.start_record(cookie, p, p.omit as f64, p.time as f64, interval);
    r.role = Role::Server;
    r.accepted_connection = Some((sockets::host_string(peer), peer.port()));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_failure_framing_follows_the_client_version() {
        assert!(legacy_auth_framing("3.12"));
        assert!(legacy_auth_framing("3.18"));
        assert!(!legacy_auth_framing("3.19"));
        assert!(!legacy_auth_framing("3.21+"));
        assert!(!legacy_auth_framing(""));
        assert!(legacy_auth_framing("2.0"));
    }

    #[test]
    fn protocol_is_tcp_or_udp() {
        use plumb_proto::params::Protocol as WireProtocol;
        // SCTP parameters run as TCP (Plan::of); nothing else reaches here.
        let p = TestParams {
            protocol: WireProtocol::Sctp,
            ..TestParams::default()
        };
        assert_eq!(Plan::of(&p).protocol, Protocol::Tcp);
    }
}
