//! The server side of one control connection (spec §3, §7), sans I/O.
//!
//! This module owns the order of the server's control messages and the
//! handshake deadline. Listening, accepting data streams, checking their
//! cookies (with [`matches`]) and refusing a second client while a test runs
//! are the driver's.

use std::collections::VecDeque;
use std::time::Duration;

pub use crate::cookie::matches;
use crate::cookie::{Cookie, COOKIE_LEN};
use crate::error::ProtoError;
use crate::framing::{self, JsonLimits, MAX_JSON_DEPTH, MAX_JSON_LEN};
use crate::params::TestParams;
use crate::results::Results;
use crate::state::State;

/// iperf3's "cannot receive parameters" code, used for undecodable parameters.
pub const ERROR_RECV_PARAMS: i32 = 114;

/// Limits on what a [`ServerControl`] accepts from a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Largest parameters or results message, bytes.
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
#[derive(Debug)]
pub struct ServerControl {
    limits: JsonLimits,
    phase: ServerPhase,
    deadline: Option<Duration>,
    cookie: Option<Cookie>,
    inbuf: Vec<u8>,
    outbuf: Vec<u8>,
    events: VecDeque<ServerEvent>,
    eof: bool,
}

enum Step {
    Consumed(usize),
    NeedMore,
    Stop,
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
            inbuf: Vec::new(),
            outbuf: Vec::new(),
            events: VecDeque::new(),
            eof: false,
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
    pub fn handle_input(&mut self, bytes: &[u8], now: Duration) {
        self.handle_timeout(now);
        if self.phase == ServerPhase::Closed || self.eof {
            return;
        }
        self.inbuf.extend_from_slice(bytes);
        let buf = std::mem::take(&mut self.inbuf);
        let mut pos = 0;
        while pos < buf.len() {
            match self.step(&buf[pos..]) {
                Step::Consumed(n) => pos += n,
                Step::NeedMore => break,
                Step::Stop => pos = buf.len(),
            }
        }
        self.inbuf = buf;
        self.inbuf.drain(..pos);
    }

    /// Reports that the client closed the control connection.
    pub fn handle_eof(&mut self, now: Duration) {
        self.handle_timeout(now);
        if self.eof {
            return;
        }
        self.eof = true;
        if self.phase == ServerPhase::Closed {
            return;
        }
        let buf = std::mem::take(&mut self.inbuf);
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
        self.inbuf.clear();
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

    /// Handles the message at the start of `buf` (never empty).
    fn step(&mut self, buf: &[u8]) -> Step {
        match self.phase {
            ServerPhase::Closed => Step::Stop,
            ServerPhase::AwaitCookie => {
                let Some(bytes) = buf.first_chunk::<COOKIE_LEN>() else {
                    return Step::NeedMore;
                };
                let cookie = Cookie::from_wire(bytes);
                self.cookie = Some(cookie);
                self.events.push_back(ServerEvent::Cookie(cookie));
                self.outbuf.push(State::ParamExchange.to_byte());
                self.phase = ServerPhase::AwaitParams;
                Step::Consumed(COOKIE_LEN)
            }
            ServerPhase::AwaitParams if !ABORT_BYTES.contains(&buf[0]) => self.read_params(buf),
            ServerPhase::AwaitClientResults if !ABORT_BYTES.contains(&buf[0]) => {
                self.read_results(buf)
            }
            _ => self.read_state(buf[0]),
        }
    }

    fn read_params(&mut self, buf: &[u8]) -> Step {
        let (body, len) = match framing::split_frame(buf, self.limits.max_len) {
            Ok(Some(frame)) => frame,
            Ok(None) => return Step::NeedMore,
            Err(e) => return self.reject(ERROR_RECV_PARAMS, e.to_string()),
        };
        let params = match framing::decode_json::<TestParams>(body, &self.limits, "parameters") {
            Ok(params) => params,
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
        let (body, len) = match framing::split_frame(buf, self.limits.max_len) {
            Ok(Some(frame)) => frame,
            Ok(None) => return Step::NeedMore,
            Err(e) => return self.fail(e),
        };
        match framing::decode_json::<Results>(body, &self.limits, "results") {
            Ok(results) => {
                self.events
                    .push_back(ServerEvent::ClientResults(Box::new(results)));
                self.phase = ServerPhase::ResultsReceived;
                Step::Consumed(len)
            }
            Err(e) => self.fail(e),
        }
    }

    fn read_state(&mut self, byte: u8) -> Step {
        let state = match State::from_byte(byte) {
            Ok(state) => state,
            Err(e) => return self.fail(e),
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

/// SERVER_ERROR as iperf3 3.19+ sends it: state byte, code, errno.
fn server_error_bytes(code: i32, errno: i32) -> [u8; 9] {
    let mut out = [0u8; 9];
    out[0] = State::ServerError.to_byte();
    out[1..5].copy_from_slice(&code.to_be_bytes());
    out[5..9].copy_from_slice(&errno.to_be_bytes());
    out
}
