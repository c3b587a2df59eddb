//! The server side of one control connection (spec §3, §7), sans I/O.
//!
//! This module owns the order of the server's control messages and the
//! handshake deadline. Listening, accepting data streams, checking their
//! cookies (with [`matches()`]) and refusing a second client while a test runs
//! are the driver's.

use std::collections::VecDeque;
use std::time::Duration;

pub use crate::cookie::matches;
use crate::cookie::{Cookie, COOKIE_LEN};
use crate::error::ProtoError;
use crate::framing::{self, JsonLimits, MAX_JSON_DEPTH, MAX_JSON_LEN};
use crate::input::{self, Input, Reader, Step};
use crate::params::TestParams;
use crate::results::Results;
use crate::state::State;

/// iperf3's "cannot receive parameters" code, used for undecodable parameters.
pub const ERROR_RECV_PARAMS: i32 = 114;

/// Limits on what a [`ServerControl`] accepts from a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Largest parameters or results message, bytes. Keep it under 201 MB:
    /// a longer length prefix would start with CLIENT_TERMINATE's byte.
    pub max_json_len: usize,
    /// Deepest JSON nesting accepted.
    pub max_json_depth: usize,
    /// Time from accepting the connection within which the cookie and the
    /// parameters must have arrived, so a silent peer cannot hold the server.
    pub handshake_timeout: Duration,
}

impl Default for ServerLimits {
    /// 64 KiB messages, depth 32, 10 s handshake (iperf3 3.15+ gives up a
    /// control read after 10 s without data).
    fn default() -> ServerLimits {
        ServerLimits {
            max_json_len: MAX_JSON_LEN,
            max_json_depth: MAX_JSON_DEPTH,
            handshake_timeout: Duration::from_secs(10),
        }
    }
}

/// Where a [`ServerControl`] is in the exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerPhase {
    /// Reading the 37-byte cookie.
    AwaitCookie,
    /// PARAM_EXCHANGE sent; reading the parameters.
    AwaitParams,
    /// Parameters accepted; the driver prepares the data listener, then
    /// calls [`ServerControl::create_streams`] (or `server_error`).
    ParamsReceived,
    /// CREATE_STREAMS sent; the driver accepts the streams, then calls
    /// [`ServerControl::start_test`].
    CreatingStreams,
    /// TEST_START/TEST_RUNNING sent; waiting for TEST_END.
    Running,
    /// TEST_END received; the driver stops and closes its data streams, then
    /// calls [`ServerControl::request_results`].
    TestEnded,
    /// EXCHANGE_RESULTS sent; reading the client's results.
    AwaitClientResults,
    /// The client's results are in; the driver calls [`ServerControl::send_results`].
    ResultsReceived,
    /// DISPLAY_RESULTS sent; waiting for IPERF_DONE or EOF.
    AwaitDone,
    /// Finished, refused, terminated or failed; nothing more is read.
    Closed,
}

impl ServerPhase {
    /// A short description for error messages.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerPhase::AwaitCookie => "waiting for the cookie",
            ServerPhase::AwaitParams => "waiting for the parameters",
            ServerPhase::ParamsReceived => "waiting for the driver to create streams",
            ServerPhase::CreatingStreams => "creating streams",
            ServerPhase::Running => "running the test",
            ServerPhase::TestEnded => "waiting for the driver to request results",
            ServerPhase::AwaitClientResults => "waiting for the client's results",
            ServerPhase::ResultsReceived => "waiting for the driver's results",
            ServerPhase::AwaitDone => "waiting for IPERF_DONE",
            ServerPhase::Closed => "closed",
        }
    }
}

/// Something the server driver must act on.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// The cookie arrived; PARAM_EXCHANGE is queued. Keep it to check data streams.
    Cookie(Cookie),
    /// Valid parameters arrived: set up the data listener, then call
    /// [`ServerControl::create_streams`] — or `server_error` (e.g. auth failure, 142).
    Params(Box<TestParams>),
    /// The parameters were unusable; SERVER_ERROR `code`/0 is queued. Write it and close.
    Rejected {
        /// iperf3 error code sent to the client.
        code: i32,
        /// What was wrong, for the log.
        message: String,
    },
    /// TEST_END: stop, close the data streams, then call [`ServerControl::request_results`].
    TestEnd,
    /// The client's results arrived; call [`ServerControl::send_results`].
    ClientResults(Box<Results>),
    /// The test is over; close the control connection.
    Done {
        /// `true` for IPERF_DONE; `false` for a bare close after our results,
        /// which iperf3 logs as "client unexpectedly closed" and otherwise treats the same.
        clean: bool,
    },
    /// CLIENT_TERMINATE: the client was interrupted; drop the test.
    ClientTerminated,
    /// The client closed the connection at an unexpected point.
    PeerClosed {
        /// Where the exchange was.
        phase: ServerPhase,
    },
    /// The handshake did not complete within [`ServerLimits::handshake_timeout`].
    TimedOut {
        /// How far it got.
        phase: ServerPhase,
    },
    /// The client broke the protocol; the connection is unusable.
    ProtocolError(ProtoError),
}

impl ServerEvent {
    /// The event in a word, iperf3's state name where there is one (for
    /// `-d`'s trace).
    pub fn name(&self) -> &'static str {
        match self {
            ServerEvent::Cookie(_) => "the cookie",
            ServerEvent::Params(_) => "the parameters",
            ServerEvent::Rejected { .. } => "parameters rejected",
            ServerEvent::TestEnd => "TEST_END",
            ServerEvent::ClientResults(_) => "the client's results",
            ServerEvent::Done { .. } => "IPERF_DONE",
            ServerEvent::ClientTerminated => "CLIENT_TERMINATE",
            ServerEvent::PeerClosed { .. } => "the control connection closed",
            ServerEvent::TimedOut { .. } => "the handshake timed out",
            ServerEvent::ProtocolError(_) => "a protocol error",
        }
    }
}

/// CLIENT_TERMINATE may arrive where a results frame is expected; as the top
/// byte of a length prefix it would announce at least 201 MB, so the
/// reading is unambiguous.
const ABORT_BYTES: [u8; 1] = [0x0C];

/// The server's side of one control connection.
///
/// Methods, as in quinn's `Connection`:
/// - inputs: [`handle_input`](Self::handle_input), [`handle_eof`](Self::handle_eof),
///   [`handle_timeout`](Self::handle_timeout);
/// - outputs: [`poll_transmit`](Self::poll_transmit), [`poll_event`](Self::poll_event),
///   [`poll_timeout`](Self::poll_timeout);
/// - commands: [`create_streams`](Self::create_streams), [`start_test`](Self::start_test),
///   [`request_results`](Self::request_results), [`send_results`](Self::send_results),
///   [`refuse`](Self::refuse), [`server_error`](Self::server_error),
///   [`terminate`](Self::terminate).
///
/// Driver loop: on accept, create with [`ServerControl::new`]; then
/// repeatedly write what `poll_transmit` gives, handle events, wait for input
/// or `poll_timeout`, and feed `handle_input` / `handle_eof` /
/// `handle_timeout`. A normal test yields `Cookie`, `Params`
/// (`create_streams()`, accept N streams checking their cookies, `start_test()`),
/// `TestEnd` (close data streams, `request_results()`), `ClientResults`
/// (`send_results()`), `Done` (close). A connection arriving while another
/// test runs gets a fresh machine and [`refuse`](Self::refuse) at once.
///
/// Events describe input already read; a command issued in response may
/// fail with [`ProtoError::OutOfOrder`] if later input (e.g. CLIENT_TERMINATE)
/// has closed the machine meanwhile. Check [`is_closed`](Self::is_closed).
#[derive(Debug)]
pub struct ServerControl {
    limits: JsonLimits,
    phase: ServerPhase,
    deadline: Option<Duration>,
    cookie: Option<Cookie>,
    input: Input,
    outbuf: Vec<u8>,
    events: VecDeque<ServerEvent>,
}

impl ServerControl {
    /// A machine for a control connection accepted at `now`.
    pub fn new(limits: ServerLimits, now: Duration) -> ServerControl {
        ServerControl {
            limits: JsonLimits {
                max_len: limits.max_json_len,
                max_depth: limits.max_json_depth,
            },
            phase: ServerPhase::AwaitCookie,
            deadline: now.checked_add(limits.handshake_timeout),
            cookie: None,
            input: Input::default(),
            outbuf: Vec::new(),
            events: VecDeque::new(),
        }
    }

    /// The control connection's cookie, once received.
    pub fn cookie(&self) -> Option<&Cookie> {
        self.cookie.as_ref()
    }

    /// Where the exchange is.
    pub fn phase(&self) -> ServerPhase {
        self.phase
    }

    /// Whether the machine has finished (normally or not) and reads nothing more.
    pub fn is_closed(&self) -> bool {
        self.phase == ServerPhase::Closed
    }

    /// Feeds bytes read from the control connection.
    ///
    /// Partial messages are buffered. While the machine waits for a command
    /// (from `Params` until `start_test`, after `TestEnd`, after
    /// `ClientResults`) the client has nothing to say but CLIENT_TERMINATE;
    /// other bytes stay buffered until the command is given.
    pub fn handle_input(&mut self, bytes: &[u8], now: Duration) {
        self.handle_timeout(now);
        input::feed(self, bytes);
    }

    /// Reports that the client closed the control connection. Bytes already
    /// given are handled first.
    pub fn handle_eof(&mut self, now: Duration) {
        self.handle_timeout(now);
        input::feed_eof(self);
    }

    fn waits_for_driver(&self) -> bool {
        matches!(
            self.phase,
            ServerPhase::ParamsReceived
                | ServerPhase::CreatingStreams
                | ServerPhase::TestEnded
                | ServerPhase::ResultsReceived
        )
    }

    /// When [`handle_timeout`](Self::handle_timeout) must next be called, if ever.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Duration> {
        match self.phase {
            ServerPhase::AwaitCookie | ServerPhase::AwaitParams => self.deadline,
            _ => None,
        }
    }

    /// Lets the machine act on the passage of time; harmless to call early.
    pub fn handle_timeout(&mut self, now: Duration) {
        if self.poll_timeout().is_some_and(|deadline| now >= deadline) {
            self.events
                .push_back(ServerEvent::TimedOut { phase: self.phase });
            self.close();
        }
    }

    /// Appends the bytes to write on the control connection to `out`;
    /// returns whether there were any.
    #[must_use]
    pub fn poll_transmit(&mut self, out: &mut Vec<u8>) -> bool {
        if self.outbuf.is_empty() {
            return false;
        }
        out.append(&mut self.outbuf);
        true
    }

    /// The next event for the driver.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<ServerEvent> {
        self.events.pop_front()
    }

    /// Tells the client to open its data streams (CREATE_STREAMS), after [`ServerEvent::Params`].
    pub fn create_streams(&mut self) -> Result<(), ProtoError> {
        self.advance(
            "create_streams",
            ServerPhase::ParamsReceived,
            ServerPhase::CreatingStreams,
        )?;
        self.outbuf.push(State::CreateStreams.to_byte());
        input::process(self);
        Ok(())
    }

    /// Starts the test (TEST_START, TEST_RUNNING) once all streams are accepted.
    pub fn start_test(&mut self) -> Result<(), ProtoError> {
        self.advance(
            "start_test",
            ServerPhase::CreatingStreams,
            ServerPhase::Running,
        )?;
        self.outbuf
            .extend_from_slice(&[State::TestStart.to_byte(), State::TestRunning.to_byte()]);
        input::process(self);
        Ok(())
    }

    /// Asks for the client's results (EXCHANGE_RESULTS), after [`ServerEvent::TestEnd`].
    pub fn request_results(&mut self) -> Result<(), ProtoError> {
        self.advance(
            "request_results",
            ServerPhase::TestEnded,
            ServerPhase::AwaitClientResults,
        )?;
        self.outbuf.push(State::ExchangeResults.to_byte());
        input::process(self);
        Ok(())
    }

    /// Sends our results, then DISPLAY_RESULTS, after [`ServerEvent::ClientResults`].
    pub fn send_results(&mut self, results: &Results) -> Result<(), ProtoError> {
        if self.phase != ServerPhase::ResultsReceived {
            return Err(self.out_of_order("send_results"));
        }
        framing::write_frame(results, "results", &mut self.outbuf)?;
        self.outbuf.push(State::DisplayResults.to_byte());
        self.phase = ServerPhase::AwaitDone;
        input::process(self);
        Ok(())
    }

    /// Refuses the connection (ACCESS_DENIED): the server is busy. Close after writing.
    pub fn refuse(&mut self) -> Result<(), ProtoError> {
        self.finish_with("refuse", &[State::AccessDenied.to_byte()])
    }

    /// Reports an error (SERVER_ERROR, code, errno) and ends. Close after writing.
    pub fn server_error(&mut self, code: i32, errno: i32) -> Result<(), ProtoError> {
        self.finish_with("server_error", &server_error_bytes(code, errno))
    }

    /// Reports an error the way iperf3 up to 3.18 reports an authentication
    /// failure: SERVER_ERROR and the code, without the errno word (spec §7).
    /// Close after writing.
    pub fn server_error_code_only(&mut self, code: i32) -> Result<(), ProtoError> {
        let full = server_error_bytes(code, 0);
        self.finish_with("server_error", &full[..5])
    }

    /// Aborts the test (SERVER_TERMINATE), e.g. on a signal. Close after writing.
    pub fn terminate(&mut self) -> Result<(), ProtoError> {
        self.finish_with("terminate", &[State::ServerTerminate.to_byte()])
    }

    fn finish_with(&mut self, command: &'static str, bytes: &[u8]) -> Result<(), ProtoError> {
        if self.phase == ServerPhase::Closed {
            return Err(self.out_of_order(command));
        }
        self.outbuf.extend_from_slice(bytes);
        self.close();
        Ok(())
    }

    fn advance(
        &mut self,
        command: &'static str,
        from: ServerPhase,
        to: ServerPhase,
    ) -> Result<(), ProtoError> {
        if self.phase != from {
            return Err(self.out_of_order(command));
        }
        self.phase = to;
        Ok(())
    }

    fn out_of_order(&self, command: &'static str) -> ProtoError {
        ProtoError::OutOfOrder {
            command,
            phase: self.phase.as_str(),
        }
    }

    fn close(&mut self) {
        self.phase = ServerPhase::Closed;
        self.deadline = None;
        self.input.clear();
    }

    fn fail(&mut self, error: ProtoError) -> Step {
        self.events.push_back(ServerEvent::ProtocolError(error));
        self.close();
        Step::Stop
    }

    fn reject(&mut self, code: i32, message: String) -> Step {
        self.outbuf.extend_from_slice(&server_error_bytes(code, 0));
        self.events
            .push_back(ServerEvent::Rejected { code, message });
        self.close();
        Step::Stop
    }

    fn read_params(&mut self, buf: &[u8]) -> Step {
        let (params, len) = match framing::read_frame::<TestParams>(buf, &self.limits, "parameters")
        {
            Ok(Some(frame)) => frame,
            Ok(None) => return Step::NeedBytes,
            Err(e) => return self.reject(ERROR_RECV_PARAMS, e.to_string()),
        };
        if let Err(e) = params.validate() {
            return self.reject(e.code(), e.to_string());
        }
        self.events.push_back(ServerEvent::Params(Box::new(params)));
        self.phase = ServerPhase::ParamsReceived;
        self.deadline = None;
        Step::Consumed(len)
    }

    fn read_results(&mut self, buf: &[u8]) -> Step {
        match framing::read_frame::<Results>(buf, &self.limits, "results") {
            Ok(Some((results, len))) => {
                self.events
                    .push_back(ServerEvent::ClientResults(Box::new(results)));
                self.phase = ServerPhase::ResultsReceived;
                Step::Consumed(len)
            }
            Ok(None) => Step::NeedBytes,
            Err(e) => self.fail(e),
        }
    }

    fn read_state(&mut self, byte: u8) -> Step {
        let state = match State::from_byte(byte) {
            Ok(state) => state,
            Err(e) => return self.fail(e.into()),
        };
        let event = match (self.phase, state) {
            (_, State::ClientTerminate) => {
                self.events.push_back(ServerEvent::ClientTerminated);
                self.close();
                return Step::Stop;
            }
            (ServerPhase::Running, State::TestEnd) => {
                self.phase = ServerPhase::TestEnded;
                ServerEvent::TestEnd
            }
            (ServerPhase::AwaitDone, State::IperfDone) => {
                self.events.push_back(ServerEvent::Done { clean: true });
                self.close();
                return Step::Stop;
            }
            (phase, state) => {
                return self.fail(ProtoError::UnexpectedState {
                    state,
                    phase: phase.as_str(),
                })
            }
        };
        self.events.push_back(event);
        Step::Consumed(1)
    }
}

impl Reader for ServerControl {
    fn input(&mut self) -> &mut Input {
        &mut self.input
    }

    fn reads_no_more(&self) -> bool {
        self.is_closed()
    }

    fn step(&mut self, buf: &[u8]) -> Step {
        let abort = ABORT_BYTES.contains(&buf[0]);
        match self.phase {
            ServerPhase::Closed => Step::Stop,
            ServerPhase::AwaitCookie => {
                let Some(bytes) = buf.first_chunk::<COOKIE_LEN>() else {
                    return Step::NeedBytes;
                };
                let cookie = Cookie::from_wire(bytes);
                self.cookie = Some(cookie);
                self.events.push_back(ServerEvent::Cookie(cookie));
                self.outbuf.push(State::ParamExchange.to_byte());
                self.phase = ServerPhase::AwaitParams;
                Step::Consumed(COOKIE_LEN)
            }
            ServerPhase::AwaitParams if !abort => self.read_params(buf),
            ServerPhase::AwaitClientResults if !abort => self.read_results(buf),
            // The client sends nothing while we wait for the driver, except
            // when it is interrupted; anything else waits for the command.
            _ if self.waits_for_driver() && !abort => Step::Held,
            _ => self.read_state(buf[0]),
        }
    }

    fn finish_at_eof(&mut self) {
        let buf = self.input.take();
        let event = match (self.phase, buf.len()) {
            (ServerPhase::AwaitDone, 0) => ServerEvent::Done { clean: false },
            (phase, 0) => ServerEvent::PeerClosed { phase },
            (ServerPhase::AwaitCookie, have) => ServerEvent::ProtocolError(ProtoError::Truncated {
                what: "cookie",
                have,
                need: COOKIE_LEN,
            }),
            (ServerPhase::AwaitParams, have) => ServerEvent::ProtocolError(ProtoError::Truncated {
                what: "parameters",
                have,
                need: framing::frame_need(&buf),
            }),
            (_, have) => ServerEvent::ProtocolError(ProtoError::Truncated {
                what: "results",
                have,
                need: framing::frame_need(&buf),
            }),
        };
        self.events.push_back(event);
        self.close();
    }
}

/// SERVER_ERROR as iperf3 3.19+ sends it: state byte, code, errno.
fn server_error_bytes(code: i32, errno: i32) -> [u8; 9] {
    let mut out = [0u8; 9];
    out[0] = State::ServerError.to_byte();
    out[1..5].copy_from_slice(&code.to_be_bytes());
    out[5..9].copy_from_slice(&errno.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture;
    use crate::capture::{captured_client, captured_params, captured_server};
    use crate::params::Protocol;
    use proptest::prelude::*;

    fn at(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    fn server() -> ServerControl {
        ServerControl::new(ServerLimits::default(), at(0))
    }

    fn drain(server: &mut ServerControl) -> (Vec<u8>, Vec<ServerEvent>) {
        let mut out = Vec::new();
        let _ = server.poll_transmit(&mut out);
        let events = std::iter::from_fn(|| server.poll_event()).collect();
        (out, events)
    }

    /// Everything the 3.12 client wrote on the control connection (spec §11).
    fn client_bytes() -> Vec<u8> {
        let mut bytes = capture::COOKIE.to_vec();
        bytes.extend(capture::frame(capture::PARAMS));
        bytes.push(0x04);
        bytes.extend(capture::frame(capture::CLIENT_RESULTS));
        bytes.push(0x10);
        bytes
    }

    /// What we must write back: the capture, except that we print −1 signed.
    fn expected_server_bytes() -> Vec<u8> {
        let mut bytes = vec![0x09, 0x0a, 0x01, 0x02, 0x0d];
        bytes.extend(capture::frame(
            &capture::SERVER_RESULTS.replace("18446744073709551615", "-1"),
        ));
        bytes.push(0x0e);
        bytes
    }

    /// Runs a server over `chunks`, reacting to events as a driver would.
    fn run(chunks: &[&[u8]]) -> (Vec<u8>, Vec<ServerEvent>) {
        let mut server = server();
        let mut out = Vec::new();
        let mut events = Vec::new();
        for (i, chunk) in chunks.iter().enumerate() {
            server.handle_input(chunk, at(i as u64));
            let _ = server.poll_transmit(&mut out);
            while let Some(event) = server.poll_event() {
                let done = match &event {
                    ServerEvent::Params(_) => {
                        server.create_streams().and_then(|()| server.start_test())
                    }
                    ServerEvent::TestEnd => server.request_results(),
                    ServerEvent::ClientResults(_) => server.send_results(&captured_server()),
                    _ => Ok(()),
                };
                // A command can only fail because later input already ended
                // the test (events are handed out after the fact).
                if let Err(e) = done {
                    assert!(server.is_closed(), "{e}");
                }
                events.push(event);
                let _ = server.poll_transmit(&mut out);
            }
        }
        (out, events)
    }

    fn expected_events() -> Vec<ServerEvent> {
        vec![
            ServerEvent::Cookie(Cookie::from_wire(capture::COOKIE)),
            ServerEvent::Params(Box::new(captured_params())),
            ServerEvent::TestEnd,
            ServerEvent::ClientResults(Box::new(captured_client())),
            ServerEvent::Done { clean: true },
        ]
    }

    #[test]
    fn replays_the_captured_test_step_by_step() {
        let mut s = server();
        s.handle_input(capture::COOKIE, at(0));
        assert_eq!(
            drain(&mut s),
            (
                vec![0x09],
                vec![ServerEvent::Cookie(Cookie::from_wire(capture::COOKIE))]
            )
        );
        assert_eq!(s.cookie().map(Cookie::as_bytes), Some(capture::COOKIE));

        s.handle_input(&capture::frame(capture::PARAMS), at(1));
        assert_eq!(
            drain(&mut s),
            (
                vec![],
                vec![ServerEvent::Params(Box::new(captured_params()))]
            )
        );
        assert_eq!(s.poll_timeout(), None, "handshake complete");

        s.create_streams().expect("allowed");
        assert_eq!(drain(&mut s), (vec![0x0a], vec![]));
        s.start_test().expect("allowed");
        assert_eq!(drain(&mut s), (vec![0x01, 0x02], vec![]));

        s.handle_input(&[0x04], at(2000));
        assert_eq!(drain(&mut s), (vec![], vec![ServerEvent::TestEnd]));
        s.request_results().expect("allowed");
        assert_eq!(drain(&mut s), (vec![0x0d], vec![]));

        s.handle_input(&capture::frame(capture::CLIENT_RESULTS), at(2001));
        assert_eq!(
            drain(&mut s),
            (
                vec![],
                vec![ServerEvent::ClientResults(Box::new(captured_client()))]
            )
        );
        s.send_results(&captured_server()).expect("allowed");
        let (out, events) = drain(&mut s);
        assert_eq!(out, expected_server_bytes()[5..]);
        assert_eq!(out.last(), Some(&0x0e));
        assert!(events.is_empty());

        s.handle_input(&[0x10], at(2002));
        assert_eq!(
            drain(&mut s),
            (vec![], vec![ServerEvent::Done { clean: true }])
        );
        assert!(s.is_closed());
    }

    #[test]
    fn whole_transcript_in_one_read_or_byte_by_byte() {
        let bytes = client_bytes();
        assert_eq!(run(&[&bytes]), (expected_server_bytes(), expected_events()));
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(run(&singles), (expected_server_bytes(), expected_events()));
    }

    #[test]
    fn split_at_every_byte_boundary() {
        let bytes = client_bytes();
        for cut in 0..=bytes.len() {
            let (a, b) = bytes.split_at(cut);
            assert_eq!(
                run(&[a, b]),
                (expected_server_bytes(), expected_events()),
                "cut at {cut}"
            );
        }
    }

    fn after_cookie(rest: &[u8]) -> (Vec<u8>, Vec<ServerEvent>) {
        let mut s = server();
        s.handle_input(capture::COOKIE, at(0));
        let _ = drain(&mut s);
        s.handle_input(rest, at(1));
        drain(&mut s)
    }

    fn rejection(code: i32) -> Vec<u8> {
        let mut bytes = vec![0xFE];
        bytes.extend(code.to_be_bytes());
        bytes.extend([0, 0, 0, 0]);
        bytes
    }

    #[test]
    fn oversized_parameter_length_is_rejected_at_once() {
        let (out, events) = after_cookie(&[0xFF, 0xFF, 0xFF, 0xFF]);
        assert_eq!(out, rejection(114));
        assert_eq!(
            events,
            [ServerEvent::Rejected {
                code: 114,
                message: "JSON length 4294967295 exceeds the 65536-byte limit".into()
            }]
        );
    }

    #[test]
    fn configured_length_limit_applies() {
        let limits = ServerLimits {
            max_json_len: 100,
            ..ServerLimits::default()
        };
        let mut s = ServerControl::new(limits, at(0));
        s.handle_input(capture::COOKIE, at(0));
        s.handle_input(&[0, 0, 0, 0x91], at(0));
        let (_, events) = drain(&mut s);
        assert!(matches!(
            &events[..],
            [ServerEvent::Cookie(_), ServerEvent::Rejected { code: 114, message }]
                if message == "JSON length 145 exceeds the 100-byte limit"
        ));
    }

    #[test]
    fn invalid_parameter_json_is_rejected() {
        let (out, events) = after_cookie(&capture::frame(r#"{"tcp":true,"time":"#));
        assert_eq!(out, rejection(114));
        match &events[..] {
            [ServerEvent::Rejected { code: 114, message }] => {
                assert!(
                    message.starts_with("invalid parameters JSON: EOF"),
                    "{message}"
                )
            }
            other => panic!("unexpected {other:?}"),
        }
        let (_, events) = after_cookie(&capture::frame("[1,2,3]"));
        assert!(matches!(
            &events[..],
            [ServerEvent::Rejected { code: 114, .. }]
        ));
    }

    #[test]
    fn deeply_nested_parameters_are_rejected_without_recursion() {
        let deep = "[".repeat(10_000);
        let (out, events) = after_cookie(&capture::frame(&deep));
        assert_eq!(out, rejection(114));
        assert_eq!(
            events,
            [ServerEvent::Rejected {
                code: 114,
                message: "JSON nesting exceeds 32 levels at byte 32".into()
            }]
        );
    }

    #[test]
    fn out_of_range_parameters_get_their_iperf3_code() {
        let json = r#"{"tcp":true,"omit":0,"time":2,"parallel":200,"len":131072,"client_version":"3.21+"}"#;
        let (out, events) = after_cookie(&capture::frame(json));
        assert_eq!(out, rejection(6));
        assert_eq!(
            events,
            [ServerEvent::Rejected {
                code: 6,
                message: "parallel of 200 streams is outside 1..=128".into()
            }]
        );
        let udp_len = r#"{"udp":true,"len":8}"#;
        let (out, _) = after_cookie(&capture::frame(udp_len));
        assert_eq!(out, rejection(20));
    }

    #[test]
    fn lenient_parameters_are_accepted() {
        let json = r#"{"udp":1,"reverse":1,"len":1460.0,"parallel":2,"x":{"y":null}}"#;
        let (_, events) = after_cookie(&capture::frame(json));
        match &events[..] {
            [ServerEvent::Params(p)] => {
                assert_eq!(p.protocol, Protocol::Udp);
                assert!(p.reverse);
                assert_eq!((p.len, p.parallel), (1460, 2));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    fn running() -> ServerControl {
        let mut s = server();
        s.handle_input(capture::COOKIE, at(0));
        s.handle_input(&capture::frame(capture::PARAMS), at(0));
        s.create_streams().expect("allowed");
        s.start_test().expect("allowed");
        let _ = drain(&mut s);
        s
    }

    #[test]
    fn unknown_and_unexpected_state_bytes_are_protocol_errors() {
        let mut s = running();
        s.handle_input(&[0x05, 0x04], at(5));
        let (out, events) = drain(&mut s);
        assert!(out.is_empty());
        assert_eq!(
            events,
            [ServerEvent::ProtocolError(ProtoError::UnknownState(5))]
        );
        // The 04 after the bad byte was not read.
        s.handle_input(&[0x04], at(6));
        assert_eq!(drain(&mut s), (vec![], vec![]));
        assert!(s.is_closed());

        let mut s = running();
        s.handle_input(&[0x10], at(5));
        let (_, events) = drain(&mut s);
        match &events[..] {
            [ServerEvent::ProtocolError(e)] => {
                assert_eq!(
                    e.to_string(),
                    "unexpected state IPERF_DONE (0x10) while running the test"
                )
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn wrongly_typed_results_are_a_protocol_error() {
        let mut s = running();
        s.handle_input(&[0x04], at(5));
        s.request_results().expect("allowed");
        let _ = drain(&mut s);
        let bad = r#"{"cpu_util_total":"high","cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":1,"streams":[]}"#;
        s.handle_input(&capture::frame(bad), at(6));
        let (out, events) = drain(&mut s);
        assert!(out.is_empty());
        assert!(
            matches!(
                &events[..],
                [ServerEvent::ProtocolError(ProtoError::InvalidJson {
                    what: "results",
                    ..
                })]
            ),
            "{events:?}"
        );
    }

    #[test]
    fn client_terminate_anywhere_after_the_cookie() {
        let mut s = running();
        s.handle_input(&[0x0C], at(5));
        assert_eq!(drain(&mut s), (vec![], vec![ServerEvent::ClientTerminated]));
        assert!(s.is_closed());

        // In place of the results frame.
        let mut s = running();
        s.handle_input(&[0x04], at(5));
        s.request_results().expect("allowed");
        s.handle_input(&[0x0C], at(6));
        assert_eq!(
            drain(&mut s).1,
            [ServerEvent::TestEnd, ServerEvent::ClientTerminated]
        );

        // While the driver is still setting up streams.
        let mut s = server();
        s.handle_input(capture::COOKIE, at(0));
        s.handle_input(&capture::frame(capture::PARAMS), at(0));
        s.handle_input(&[0x0C], at(0));
        assert_eq!(drain(&mut s).1.last(), Some(&ServerEvent::ClientTerminated));
    }

    #[test]
    fn eof_handling_depends_on_the_phase() {
        // A bare close after our results is a (noted) normal end.
        let mut s = running();
        s.handle_input(&[0x04], at(5));
        s.request_results().expect("allowed");
        s.handle_input(&capture::frame(capture::CLIENT_RESULTS), at(6));
        s.send_results(&captured_server()).expect("allowed");
        let _ = drain(&mut s);
        s.handle_eof(at(7));
        assert_eq!(drain(&mut s).1, [ServerEvent::Done { clean: false }]);
        s.handle_eof(at(8));
        assert_eq!(drain(&mut s).1, []);

        let mut s = running();
        s.handle_eof(at(5));
        assert_eq!(
            drain(&mut s).1,
            [ServerEvent::PeerClosed {
                phase: ServerPhase::Running
            }]
        );

        // A truncated frame, then EOF.
        let mut s = server();
        let params = capture::frame(capture::PARAMS);
        s.handle_input(capture::COOKIE, at(0));
        s.handle_input(&params[..70], at(1));
        s.handle_eof(at(2));
        let (_, events) = drain(&mut s);
        assert_eq!(
            events.last(),
            Some(&ServerEvent::ProtocolError(ProtoError::Truncated {
                what: "parameters",
                have: 70,
                need: 149
            }))
        );

        let mut s = server();
        s.handle_input(&capture::COOKIE[..10], at(0));
        s.handle_eof(at(1));
        assert_eq!(
            drain(&mut s).1,
            [ServerEvent::ProtocolError(ProtoError::Truncated {
                what: "cookie",
                have: 10,
                need: 37
            })]
        );
    }

    #[test]
    fn a_negative_server_affinity_is_not_asked() {
        for (cpu, want) in [("-1", None), ("3", Some(3))] {
            let mut s = server();
            let mut input = capture::COOKIE.to_vec();
            input.extend(capture::frame(&format!(
                r#"{{"tcp":true,"omit":0,"server_affinity":{cpu},"time":1,"num":0,"blockcount":0,"parallel":1,"len":131072,"client_version":"3.12"}}"#
            )));
            s.handle_input(&input, at(0));
            match drain(&mut s).1.last() {
                Some(ServerEvent::Params(p)) => assert_eq!(p.server_affinity, want, "{cpu}"),
                other => panic!("{cpu}: {other:?}"),
            }
        }
    }

    #[test]
    fn eof_waits_for_input_held_for_the_driver() {
        let mut s = server();
        let mut input = capture::COOKIE.to_vec();
        input.extend(capture::frame(capture::PARAMS));
        input.push(0x04);
        s.handle_input(&input, at(0));
        s.handle_eof(at(1));
        let (_, events) = drain(&mut s);
        assert_eq!(events.len(), 2, "cookie and params only: {events:?}");
        s.create_streams().expect("allowed");
        assert_eq!(drain(&mut s).1, []);
        s.start_test().expect("allowed");
        assert_eq!(
            drain(&mut s).1,
            [
                ServerEvent::TestEnd,
                ServerEvent::PeerClosed {
                    phase: ServerPhase::TestEnded
                }
            ]
        );
    }

    #[test]
    fn handshake_must_finish_in_time() {
        let limits = ServerLimits {
            handshake_timeout: Duration::from_secs(10),
            ..ServerLimits::default()
        };
        let mut s = ServerControl::new(limits, at(1000));
        assert_eq!(s.poll_timeout(), Some(at(11_000)));
        s.handle_timeout(at(10_999));
        assert_eq!(drain(&mut s).1, []);
        s.handle_input(capture::COOKIE, at(5000));
        assert_eq!(
            s.poll_timeout(),
            Some(at(11_000)),
            "cookie alone is not enough"
        );
        s.handle_timeout(at(11_000));
        let (_, events) = drain(&mut s);
        assert_eq!(
            events,
            [
                ServerEvent::Cookie(Cookie::from_wire(capture::COOKIE)),
                ServerEvent::TimedOut {
                    phase: ServerPhase::AwaitParams
                }
            ]
        );
        assert_eq!(s.poll_timeout(), None);

        // Input that arrives after the deadline is not read.
        let mut s = ServerControl::new(limits, at(0));
        s.handle_input(capture::COOKIE, at(10_000));
        assert_eq!(
            drain(&mut s),
            (
                vec![],
                vec![ServerEvent::TimedOut {
                    phase: ServerPhase::AwaitCookie
                }]
            )
        );
    }

    #[test]
    fn refusal_error_and_terminate_bytes() {
        let mut s = server();
        s.refuse().expect("allowed");
        assert_eq!(drain(&mut s).0, [0xFF]);
        assert!(s.is_closed());
        assert!(s.refuse().is_err());

        let mut s = server();
        s.handle_input(capture::COOKIE, at(0));
        s.handle_input(&capture::frame(capture::PARAMS), at(0));
        s.server_error(142, 13).expect("allowed");
        let (out, _) = drain(&mut s);
        assert_eq!(out, [0x09, 0xFE, 0, 0, 0, 0x8E, 0, 0, 0, 0x0D]);

        let mut s = running();
        s.terminate().expect("allowed");
        assert_eq!(drain(&mut s).0, [0x0B]);
        s.handle_input(&[0x10], at(1));
        assert_eq!(drain(&mut s).1, [], "input after the end is ignored");
    }

    #[test]
    fn commands_out_of_order_are_refused() {
        let mut s = server();
        assert_eq!(
            s.start_test(),
            Err(ProtoError::OutOfOrder {
                command: "start_test",
                phase: "waiting for the cookie"
            })
        );
        assert!(s.create_streams().is_err());
        assert!(s.request_results().is_err());
        assert!(s.send_results(&captured_server()).is_err());
        let mut s = running();
        assert!(s.create_streams().is_err());
        assert!(s.request_results().is_err());
        assert_eq!(drain(&mut s), (vec![], vec![]));
    }

    #[test]
    fn data_stream_cookie_check_is_reexported() {
        let cookie = Cookie::from_wire(capture::COOKIE);
        assert!(matches(&cookie, capture::COOKIE));
        assert!(!matches(&cookie, &[b'a'; 37]));
    }

    proptest! {
        #[test]
        fn any_bytes_never_panic(
            bytes in proptest::collection::vec(any::<u8>(), 0..1024),
            cuts in proptest::collection::vec(1usize..64, 1..16),
        ) {
            let mut chunks = Vec::new();
            let mut rest = &bytes[..];
            for cut in cuts.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let (a, b) = rest.split_at((*cut).min(rest.len()));
                chunks.push(a);
                rest = b;
            }
            let _ = run(&chunks);
            let mut s = server();
            for chunk in &chunks {
                s.handle_input(chunk, at(0));
            }
            s.handle_eof(at(1));
            let _ = drain(&mut s);
            prop_assert!(s.is_closed());
        }

        #[test]
        fn any_bytes_after_a_valid_handshake_never_panic(
            bytes in proptest::collection::vec(any::<u8>(), 0..512),
        ) {
            let mut input = capture::COOKIE.to_vec();
            input.extend(capture::frame(capture::PARAMS));
            input.push(0x04);
            input.extend(&bytes);
            let (out, events) = run(&[&input]);
            prop_assert!(out.starts_with(&[0x09, 0x0a, 0x01, 0x02]));
            prop_assert!(events.len() >= 3);
            prop_assert_eq!(&events[2], &ServerEvent::TestEnd);
        }
    }
}
