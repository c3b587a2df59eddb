//! The server driver: one listening port, a gate thread that accepts and
//! handshakes every connection without blocking, and one thread per admitted
//! test.
//!
//! # Threads
//! - The **gate** (the caller's thread) owns the listener. It polls the
//!   listener and every connection still in its handshake, reads whatever is
//!   ready without blocking, and decides: a connection whose first 37 bytes
//!   are the cookie of a test accepting streams is that test's data stream
//!   ([`admission::Registry`]); any other is a control connection, driven
//!   through [`ServerControl`] up to its parameters. Parameters that pass the
//!   operator's limits take a test slot ([`admission::Slots`]) and the
//!   connection moves to a test thread. A connection that is silent past
//!   `handshake_timeout` is dropped; when `max_pending` connections are
//!   mid-handshake the oldest is dropped, so a flood cannot pin the gate.
//! - A **test** thread ([`test`]) authenticates, sets up the streams, runs
//!   the test and exchanges results; a client's mistake ends only its test.
//!
//! With every slot held (iperf3: one) a new control connection waits a
//! little before it gets ACCESS_DENIED ("busy"): [`BUSY_GRACE`], or up to
//! [`WAIT_FOR_SLOT`] when a test has had its last word and is only cleaning
//! up. iperf3's single-threaded server takes such a client from its accept
//! queue once the last test is over, and scripts run tests back to back —
//! also right after interrupting one, before the server has read the
//! client's goodbye. A connection that gets a slot in time goes on as if it
//! had just arrived. After a `-1` server's test, "busy" comes at once.

mod admission;
mod printer;
mod rate_cap;
pub(crate) mod state;
mod test;

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::net::UnixDatagram;
use std::sync::mpsc;
use std::sync::Mutex;
use std::thread::ScopedJoinHandle;
use std::time::{Duration, Instant};

use plumb_proto::cookie::COOKIE_LEN;
use plumb_proto::params::TestParams;
use plumb_proto::server::{ServerControl, ServerEvent, ServerLimits};
use plumb_proto::State;
use plumb_record::Sink;

pub use admission::{check_limits, cookie_key, requested_rate, Refusal, Registry, Route, Slots};
pub use printer::Printer;
use state::{log, Rebind, ServerState};

use crate::config::ServerConfig;
use crate::errors::TestError;
use crate::sockets;
use crate::{signals, sys};

/// How often the gate looks at signals and finished tests when idle.
const GATE_TICK: Duration = Duration::from_millis(200);
/// Connections accepted per wake-up at most, so the pending ones are served too.
const ACCEPT_BURST: usize = 64;
/// How long a control connection waits for a slot that is being freed.
const WAIT_FOR_SLOT: Duration = Duration::from_secs(2);
/// How long it waits for a slot held by a running test before "busy".
const BUSY_GRACE: Duration = Duration::from_millis(250);
/// How often the gate looks for the freed slot meanwhile.
const WAIT_TICK: Duration = Duration::from_millis(2);

/// How a test thread ended.
pub(crate) struct Outcome {
    pub test_no: u64,
    pub result: Result<String, TestError>,
}

enum Stage {
    /// Reading the first 37 bytes.
    Cookie { buf: [u8; COOKIE_LEN], have: usize },
    /// A control connection: cookie in, waiting for the parameters.
    Control(Box<ServerControl>),
    /// A control connection (cookie in) waiting for a slot (see the module
    /// docs); nothing more is read from it until it gets one.
    Waiting {
        cookie: [u8; COOKIE_LEN],
        since: Instant,
    },
}

struct Pending {
    sock: TcpStream,
    peer: SocketAddr,
    since: Instant,
    stage: Stage,
}

/// Serves tests until interrupted (or after one with `-1`), printing with
/// `printer`.
pub fn run(cfg: &ServerConfig, printer: &dyn Printer) -> Result<(), TestError> {
    signals::install();
    let listener = sockets::listen_tcp(cfg.port, cfg.bind, cfg.family, None, &cfg.local)
        .map_err(TestError::Connect)?;
    listener.set_nonblocking(true).map_err(TestError::Connect)?;
    let port = listener.local_addr().map_err(TestError::Connect)?.port();
    let (wake_tx, wake_rx) = UnixDatagram::pair().map_err(TestError::Connect)?;
    wake_rx.set_nonblocking(true).map_err(TestError::Connect)?;
    let (rebind_tx, rebind_rx) = mpsc::channel();
    let shared = ServerState {
        cfg,
        printer,
        registry: Registry::default(),
        slots: Slots::new(cfg.max_tests, cfg.limits.max_total_bitrate),
        udp_setup: Mutex::new(()),
        port,
        rebind_tx: Mutex::new(rebind_tx),
        wake_tx,
    };
    let mut gate = Gate {
        shared: &shared,
        listener,
        wake_rx,
        rebind_rx,
        pending: VecDeque::new(),
        epoch: Instant::now(),
        next_test: 1,
        admitted_any: false,
        banner: printer.sink(),
        last_busy: Instant::now(),
    };
    std::thread::scope(|scope| gate.serve(scope))
}

struct Gate<'s, 'a> {
    shared: &'s ServerState<'a>,
    listener: TcpListener,
    wake_rx: UnixDatagram,
    rebind_rx: mpsc::Receiver<Rebind>,
    pending: VecDeque<Pending>,
    epoch: Instant,
    next_test: u64,
    admitted_any: bool,
    banner: Box<dyn Sink>,
    /// When a test or a connection was last in hand (`--idle-timeout`).
    last_busy: Instant,
}

impl<'s, 'a: 's> Gate<'s, 'a> {
    fn print_banner(&mut self) {
        self.banner
            .note("-----------------------------------------------------------");
        self.banner.note(&format!(
            "Server listening on {} (test #{})",
            self.shared.port, self.next_test
        ));
        self.banner
            .note("-----------------------------------------------------------");
        // No finish(): a JSON sink would print an empty document for it.
    }

    fn serve<'scope>(
        &mut self,
        scope: &'scope std::thread::Scope<'scope, '_>,
    ) -> Result<(), TestError>
    where
        's: 'scope,
    {
        let cfg = self.shared.cfg;
        let mut tests: Vec<ScopedJoinHandle<'scope, Outcome>> = Vec::new();
        let mut last: Option<Result<(), TestError>> = None;
        self.print_banner();
        loop {
            // Finished tests: collect, log, and (-1) stop after the first.
            let mut i = 0;
            while i < tests.len() {
                if tests[i].is_finished() {
                    let t = tests.swap_remove(i);
                    let outcome = t.join().unwrap_or_else(|_| Outcome {
                        test_no: 0,
                        result: Err(TestError::Ended("a test thread panicked".into())),
                    });
                    last = Some(outcome.result.map(|_| ()));
                    if !cfg.one_off && !signals::interrupted() {
                        self.print_banner();
                    }
                    let _ = outcome.test_no;
                } else {
                    i += 1;
                }
            }
            if signals::interrupted()
                || (cfg.one_off && self.admitted_any && tests.is_empty())
                || self.idle_ends(!tests.is_empty())
            {
                break;
            }
            self.serve_rebinds();
            let wait = self.next_wakeup();
            let (listener_ready, ready) = match self.poll(wait) {
                Ok(r) => r,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
            };
            // Read what is ready in arrival order: a test numbers its data
            // streams in the order they connected. `progress` removes at
            // most the connection it reads, which shifts the later indices.
            let mut removed = 0;
            for idx in ready {
                let before = self.pending.len();
                let handoff = self.progress(idx - removed);
                if self.pending.len() < before {
                    removed += 1;
                }
                if let Some(handoff) = handoff {
                    if let Some(h) = self.admit(scope, handoff) {
                        tests.push(h);
                    }
                }
            }
            for handoff in self.promote_waiting() {
                if let Some(h) = self.admit(scope, handoff) {
                    tests.push(h);
                }
            }
            self.expire();
            if listener_ready {
                self.accept_burst();
            }
        }
        // Interrupted or done: tests see the same signal flag and end themselves.
        for t in tests {
            if let Ok(o) = t.join() {
                last = Some(o.result.map(|_| ()));
            }
        }
        if signals::interrupted() {
            return Err(TestError::Interrupted);
        }
        last.unwrap_or(Ok(()))
    }

    /// iperf3's `--idle-timeout`: with nothing in hand for that long, a
    /// `-1` server ends (`true`) and any other opens its listening socket
    /// anew, in case the old one got stuck.
    fn idle_ends(&mut self, busy: bool) -> bool {
        let cfg = self.shared.cfg;
        let Some(limit) = cfg.idle_timeout else {
            return false;
        };
        let now = Instant::now();
        if busy || !self.pending.is_empty() {
            self.last_busy = now;
            return false;
        }
        if now.duration_since(self.last_busy) < limit {
            return false;
        }
        self.last_busy = now;
        let secs = limit.as_secs();
        if cfg.one_off {
            self.banner.note(&format!(
                "no connection for {secs} s (--idle-timeout): exiting"
            ));
            return true;
        }
        let r =
            sockets::rebind_listener(&mut self.listener, cfg.bind, cfg.family, None, &cfg.local)
                .and_then(|()| self.listener.set_nonblocking(true));
        match r {
            Ok(()) => self.banner.note(&format!(
                "no connection for {secs} s (--idle-timeout): listening anew"
            )),
            Err(e) => self.banner.note(&format!(
                "no connection for {secs} s (--idle-timeout): cannot listen anew: {e}"
            )),
        }
        false
    }

    fn serve_rebinds(&mut self) {
        let mut drained = [0u8; 16];
        while self.wake_rx.recv(&mut drained).is_ok() {}
        while let Ok(req) = self.rebind_rx.try_recv() {
            let cfg = self.shared.cfg;
            let r = sockets::rebind_listener(
                &mut self.listener,
                cfg.bind,
                cfg.family,
                req.opts.as_ref(),
                &cfg.local,
            )
            .and_then(|()| self.listener.set_nonblocking(true));
            let _ = req.done.send(r);
        }
    }

    fn next_wakeup(&self) -> Duration {
        let now = Instant::now();
        let mut wait = if self.waiting_any() {
            WAIT_TICK
        } else {
            GATE_TICK
        };
        for p in &self.pending {
            let deadline = p.since + self.shared.cfg.handshake_timeout;
            wait = wait.min(deadline.saturating_duration_since(now));
        }
        wait
    }

    /// Polls the listener, the wake socket and the pending connections;
    /// returns whether the listener is ready and which pending ones are.
    fn poll(&self, wait: Duration) -> io::Result<(bool, Vec<usize>)> {
        let mut set = Vec::with_capacity(self.pending.len() + 2);
        set.push((self.listener.as_fd(), libc::POLLIN));
        set.push((self.wake_rx.as_fd(), libc::POLLIN));
        for p in &self.pending {
            // A waiting connection is not read; with no events asked, poll
            // reports only errors for it, so it cannot spin the gate.
            let events = match p.stage {
                Stage::Waiting { .. } => 0,
                _ => libc::POLLIN,
            };
            set.push((p.sock.as_fd(), events));
        }
        let ms = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX).max(1);
        sys::poll_many(&mut set, ms)?;
        let listener_ready = set[0].1 != 0;
        let ready = set
            .iter()
            .skip(2)
            .enumerate()
            .filter(|(_, (_, rev))| *rev != 0)
            .map(|(i, _)| i)
            .collect();
        Ok((listener_ready, ready))
    }

    fn since_epoch(&self, t: Instant) -> Duration {
        t.saturating_duration_since(self.epoch)
    }

    fn accept_burst(&mut self) {
        let cfg = self.shared.cfg;
        for _ in 0..ACCEPT_BURST {
            let (mut sock, peer) = match self.listener.accept() {
                Ok(a) => a,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    // EMFILE and friends: say so once per burst and let the
                    // pending handshakes drain before trying again.
                    eprintln!("plumb server: cannot accept: {e}");
                    return;
                }
            };
            if !cfg.access.permits(peer.ip()) {
                log(&peer, "refused: address not allowed (--allow/--deny)");
                let _ = sock.write(&[State::AccessDenied.to_byte()]);
                continue;
            }
            if cfg.one_off && self.admitted_any && !self.shared.registry.any_accepting() {
                // The one test is under way: "busy" at once, nothing read.
                let _ = sock.write(&[State::AccessDenied.to_byte()]);
                continue;
            }
            if sock.set_nonblocking(true).is_err() {
                continue;
            }
            let _ = sock.set_nodelay(true);
            if self.pending.len() >= cfg.max_pending.max(1) {
                if let Some(old) = self.pending.pop_front() {
                    log(
                        &old.peer,
                        "dropped: too many connections in their handshake; this was the oldest",
                    );
                }
            }
            self.pending.push_back(Pending {
                sock,
                peer,
                since: Instant::now(),
                stage: Stage::Cookie {
                    buf: [0; COOKIE_LEN],
                    have: 0,
                },
            });
        }
    }

    /// Drops connections whose handshake ran out of time.
    fn expire(&mut self) {
        let now = Instant::now();
        let limit = self.shared.cfg.handshake_timeout;
        let epoch = self.epoch;
        self.pending.retain_mut(|p| {
            if now.saturating_duration_since(p.since) < limit {
                return true;
            }
            let what = match &mut p.stage {
                Stage::Cookie { have, .. } => format!("sent {have} of the 37 cookie bytes"),
                Stage::Waiting { .. } => {
                    // Still owed an answer: the server is busy.
                    let _ = p.sock.write(&[State::AccessDenied.to_byte()]);
                    "waiting for a test slot; told busy".to_string()
                }
                Stage::Control(m) => {
                    m.handle_timeout(now.saturating_duration_since(epoch));
                    let mut out = Vec::new();
                    while m.poll_transmit(&mut out) {}
                    let _ = p.sock.write(&out);
                    m.phase().as_str().to_string()
                }
            };
            log(
                &p.peer,
                &format!(
                    "dropped: silent past the handshake timeout ({} ms; {what})",
                    limit.as_millis()
                ),
            );
            false
        });
    }

    /// Reads what pending connection `idx` has sent. Returns it when it has
    /// sent valid parameters (for [`Gate::admit`]).
    fn progress(&mut self, idx: usize) -> Option<(Pending, Box<TestParams>)> {
        let now = Instant::now();
        let t = self.since_epoch(now);
        let p = self.pending.get_mut(idx)?;
        match &mut p.stage {
            Stage::Cookie { buf, have } => {
                // Exactly the cookie: what follows on a data stream is data.
                match p.sock.read(&mut buf[*have..]) {
                    Ok(0) => {
                        let why = if *have == 0 {
                            "closed without sending anything".to_string()
                        } else {
                            format!("closed after {have} of the 37 cookie bytes")
                        };
                        let p = self.pending.remove(idx)?;
                        log(&p.peer, &why);
                        return None;
                    }
                    Ok(n) => *have += n,
                    Err(e) if retry(&e) => return None,
                    Err(e) => {
                        let p = self.pending.remove(idx)?;
                        log(&p.peer, &format!("dropped: {e}"));
                        return None;
                    }
                }
                if *have < COOKIE_LEN {
                    return None;
                }
                let first = *buf;
                self.route(idx, &first, t)
            }
            Stage::Waiting { .. } => None,
            Stage::Control(m) => {
                let mut buf = [0u8; 4096];
                match p.sock.read(&mut buf) {
                    Ok(0) => m.handle_eof(t),
                    Ok(n) => m.handle_input(&buf[..n], t),
                    Err(e) if retry(&e) => {}
                    Err(e) => {
                        let p = self.pending.remove(idx)?;
                        log(&p.peer, &format!("dropped: {e}"));
                        return None;
                    }
                }
                self.control_events(idx)
            }
        }
    }

    fn route(
        &mut self,
        idx: usize,
        first: &[u8; COOKIE_LEN],
        t: Duration,
    ) -> Option<(Pending, Box<TestParams>)> {
        match self.shared.registry.route(first) {
            Route::Stream(to) => {
                let p = self.pending.remove(idx)?;
                let peer = p.peer;
                if to.send((p.sock, p.peer)).is_err() {
                    log(&peer, "data connection for a test that just ended");
                }
                None
            }
            Route::Surplus => {
                let mut p = self.pending.remove(idx)?;
                log(
                    &p.peer,
                    "refused: a data connection for a test that has all its streams",
                );
                let _ = p.sock.write(&[State::AccessDenied.to_byte()]);
                None
            }
            Route::Control => {
                let one_off_done = self.shared.cfg.one_off && self.admitted_any;
                if !one_off_done && self.shared.slots.full() {
                    let p = self.pending.get_mut(idx)?;
                    p.stage = Stage::Waiting {
                        cookie: *first,
                        since: Instant::now(),
                    };
                    return None;
                }
                if one_off_done {
                    // Read only because a test awaits its streams: a data
                    // connection with a wrong cookie, or a second client.
                    let mut p = self.pending.remove(idx)?;
                    log(
                        &p.peer,
                        "refused: busy (-1, the one test is under way), or a data connection whose cookie matches no test",
                    );
                    let _ = p.sock.write(&[State::AccessDenied.to_byte()]);
                    return None;
                }
                self.start_control(idx, first, t)
            }
        }
    }

    /// Starts the control handshake of pending connection `idx` whose
    /// cookie is `first`.
    fn start_control(
        &mut self,
        idx: usize,
        first: &[u8; COOKIE_LEN],
        t: Duration,
    ) -> Option<(Pending, Box<TestParams>)> {
        let p = self.pending.get_mut(idx)?;
        let limits = ServerLimits {
            handshake_timeout: self.shared.cfg.handshake_timeout,
            ..ServerLimits::default()
        };
        let mut m = Box::new(ServerControl::new(
            limits,
            p.since.saturating_duration_since(self.epoch),
        ));
        m.handle_input(first, t);
        p.stage = Stage::Control(m);
        self.control_events(idx)
    }

    /// Moves waiting control connections on: into their handshake once a
    /// slot is free, or "busy" when the slot was not freed in time. Returns
    /// those that are (at once) ready to be admitted.
    fn promote_waiting(&mut self) -> Vec<(Pending, Box<TestParams>)> {
        let mut ready = Vec::new();
        let mut idx = 0;
        while idx < self.pending.len() {
            let Stage::Waiting { cookie, since } = self.pending[idx].stage else {
                idx += 1;
                continue;
            };
            let before = self.pending.len();
            if !self.shared.slots.full() {
                let t = self.since_epoch(Instant::now());
                if let Some(h) = self.start_control(idx, &cookie, t) {
                    ready.push(h);
                }
            } else if since.elapsed()
                > if self.shared.slots.freeing_soon() {
                    WAIT_FOR_SLOT
                } else {
                    BUSY_GRACE
                }
            {
                if let Some(mut p) = self.pending.remove(idx) {
                    log(
                        &p.peer,
                        "refused: busy (every test slot is held), or a data connection whose cookie matches no test",
                    );
                    let _ = p.sock.write(&[State::AccessDenied.to_byte()]);
                }
            }
            if self.pending.len() == before {
                idx += 1;
            }
        }
        ready
    }

    fn waiting_any(&self) -> bool {
        self.pending
            .iter()
            .any(|p| matches!(p.stage, Stage::Waiting { .. }))
    }

    /// Writes what the machine has to say and acts on its events.
    fn control_events(&mut self, idx: usize) -> Option<(Pending, Box<TestParams>)> {
        let p = self.pending.get_mut(idx)?;
        let Stage::Control(m) = &mut p.stage else {
            return None;
        };
        let mut out = Vec::new();
        while m.poll_transmit(&mut out) {}
        // A few bytes on a fresh connection: the send buffer has room.
        if !out.is_empty() && p.sock.write_all(&out).is_err() {
            let p = self.pending.remove(idx)?;
            log(&p.peer, "dropped: cannot write to it");
            return None;
        }
        let mut done: Option<String> = None;
        let mut params = None;
        while let Some(ev) = m.poll_event() {
            crate::debug::line(
                self.shared.cfg.debug,
                format_args!("{}: received {}", p.peer, ev.name()),
            );
            match ev {
                ServerEvent::Cookie(_) => {}
                ServerEvent::Params(p) => params = Some(p),
                ServerEvent::Rejected { code, message } => {
                    done = Some(format!("refused its parameters (error {code}): {message}"));
                }
                ServerEvent::TimedOut { phase } => {
                    done = Some(format!("dropped: timed out {}", phase.as_str()));
                }
                ServerEvent::PeerClosed { phase } => {
                    done = Some(format!("closed the connection {}", phase.as_str()));
                }
                ServerEvent::ProtocolError(e) => done = Some(format!("protocol error: {e}")),
                ServerEvent::ClientTerminated => {
                    done = Some("terminated (CLIENT_TERMINATE)".into())
                }
                other => done = Some(format!("unexpected event {other:?}")),
            }
        }
        if let Some(why) = done {
            let mut out = Vec::new();
            while m.poll_transmit(&mut out) {}
            let _ = p.sock.write(&out);
            let p = self.pending.remove(idx)?;
            log(&p.peer, &why);
            return None;
        }
        let params = params?;
        Some((self.pending.remove(idx)?, params))
    }

    /// Parameters are in: check the limits, take a slot, start the test.
    fn admit<'scope>(
        &mut self,
        scope: &'scope std::thread::Scope<'scope, '_>,
        (mut p, params): (Pending, Box<TestParams>),
    ) -> Option<ScopedJoinHandle<'scope, Outcome>>
    where
        's: 'scope,
    {
        let Stage::Control(mut m) = std::mem::replace(
            &mut p.stage,
            Stage::Cookie {
                buf: [0; COOKIE_LEN],
                have: 0,
            },
        ) else {
            return None;
        };
        let cookie = *m.cookie()?;
        let cfg = self.shared.cfg;
        let refuse = |m: &mut ServerControl, sock: &mut TcpStream, code: Option<i32>| {
            let _ = match code {
                Some(c) => m.server_error(c, 0),
                None => m.refuse(),
            };
            let mut out = Vec::new();
            while m.poll_transmit(&mut out) {}
            let _ = sock.write(&out);
        };
        let rate = match check_limits(&params, &cfg.limits) {
            Ok(r) => r,
            Err(r) => {
                refuse(&mut m, &mut p.sock, Some(r.code));
                log(
                    &p.peer,
                    &format!("refused (error {}): {}", r.code, r.message),
                );
                return None;
            }
        };
        if cfg.one_off && self.admitted_any {
            refuse(&mut m, &mut p.sock, None);
            return None;
        }
        let slot = match self.shared.slots.try_take(rate) {
            Ok(s) => s,
            Err(admission::NoSlot::Busy) => {
                refuse(&mut m, &mut p.sock, None);
                log(&p.peer, "refused: busy (every test slot is held)");
                return None;
            }
            Err(admission::NoSlot::Rate(r)) => {
                refuse(&mut m, &mut p.sock, Some(r.code));
                log(
                    &p.peer,
                    &format!("refused (error {}): {}", r.code, r.message),
                );
                return None;
            }
        };
        let test_no = self.next_test;
        self.next_test += 1;
        self.admitted_any = true;
        let key = cookie_key(cookie.as_bytes());
        self.shared.registry.admit(key);
        if p.sock.set_nonblocking(false).is_err() {
            self.shared.registry.remove(key);
            return None;
        }
        let shared = self.shared;
        let ctx = test::Admitted {
            ctl: p.sock,
            peer: p.peer,
            machine: m,
            cookie,
            params,
            slot,
            test_no,
            epoch: self.epoch,
        };
        let spawned = std::thread::Builder::new()
            .name(format!("plumb-test-{test_no}"))
            .spawn_scoped(scope, move || {
                let result = test::run(shared, ctx);
                shared.registry.remove(key);
                Outcome { test_no, result }
            });
        match spawned {
            Ok(h) => Some(h),
            Err(e) => {
                self.shared.registry.remove(key);
                eprintln!("plumb server: cannot start a thread for test #{test_no}: {e}");
                None
            }
        }
    }
}

fn retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}
