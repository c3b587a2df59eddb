//! The client side of the control connection (spec §3, §7), sans I/O.
//!
//! This module owns the order of the client's control messages: what it may
//! send when, and what each byte from the server means at each point. It
//! reads no socket and no clock; data streams, timers and output are the
//! driver's.

use std::collections::VecDeque;
use std::time::Duration;

use crate::cookie::Cookie;
use crate::error::ProtoError;
use crate::framing::{self, JsonLimits, MAX_JSON_DEPTH, MAX_JSON_LEN};
use crate::params::TestParams;
use crate::results::Results;
use crate::state::State;

/// Limits on what a [`ClientControl`] accepts from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientLimits {
    /// Largest server results message, bytes (a `-J` report can be big).
    pub max_json_len: usize,
    /// Deepest JSON nesting accepted.
    pub max_json_depth: usize,
}

impl Default for ClientLimits {
    fn default() -> ClientLimits {
        ClientLimits {
            max_json_len: MAX_JSON_LEN,
            max_json_depth: MAX_JSON_DEPTH,
        }
    }
}

/// Where a [`ClientControl`] is in the exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientPhase {
    /// Cookie sent; waiting for PARAM_EXCHANGE.
    AwaitParamExchange,
    /// Parameters sent; waiting for CREATE_STREAMS (EOF here is a refusal).
    AwaitCreateStreams,
    /// Streams being opened by the driver; waiting for TEST_START.
    AwaitTestStart,
    /// Waiting for TEST_RUNNING.
    AwaitTestRunning,
    /// Data flowing; the driver calls [`ClientControl::test_end`] when done,
    /// then the server sends EXCHANGE_RESULTS.
    Running,
    /// The server asked for results; the driver must call [`ClientControl::send_results`].
    ResultsRequested,
    /// Our results sent; waiting for the server's.
    AwaitServerResults,
    /// Waiting for DISPLAY_RESULTS.
    AwaitDisplayResults,
    /// Finished, refused, terminated or failed; nothing more is read.
    Closed,
}

impl ClientPhase {
    /// A short description for error messages.
    pub fn as_str(self) -> &'static str {
        match self {
            ClientPhase::AwaitParamExchange => "waiting for PARAM_EXCHANGE",
            ClientPhase::AwaitCreateStreams => "waiting for CREATE_STREAMS",
            ClientPhase::AwaitTestStart => "waiting for TEST_START",
            ClientPhase::AwaitTestRunning => "waiting for TEST_RUNNING",
            ClientPhase::Running => "running the test",
            ClientPhase::ResultsRequested => "waiting for the driver's results",
            ClientPhase::AwaitServerResults => "waiting for the server's results",
            ClientPhase::AwaitDisplayResults => "waiting for DISPLAY_RESULTS",
            ClientPhase::Closed => "closed",
        }
    }

    /// The state message this phase waits for, as reported by [`ClientEvent::PeerClosed`].
    fn awaited(self) -> State {
        match self {
            ClientPhase::AwaitParamExchange => State::ParamExchange,
            ClientPhase::AwaitCreateStreams => State::CreateStreams,
            ClientPhase::AwaitTestStart => State::TestStart,
            ClientPhase::AwaitTestRunning => State::TestRunning,
            ClientPhase::Running => State::ExchangeResults,
            ClientPhase::ResultsRequested
            | ClientPhase::AwaitServerResults
            | ClientPhase::AwaitDisplayResults
            | ClientPhase::Closed => State::DisplayResults,
        }
    }
}

/// Something the client driver must act on.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClientEvent {
    /// CREATE_STREAMS: open the data streams now, in order (sending streams first in bidir).
    CreateStreams,
    /// TEST_START: streams are accepted; reset counters and start the test clock.
    TestStart,
    /// TEST_RUNNING: start moving data.
    TestRunning,
    /// EXCHANGE_RESULTS: call [`ClientControl::send_results`].
    ResultsRequested,
    /// The server's results arrived.
    ServerResults(Box<Results>),
    /// DISPLAY_RESULTS: close the data streams and report; IPERF_DONE is
    /// queued as this event is handed out and [`ClientEvent::Done`] follows.
    DisplayResults,
    /// IPERF_DONE is queued; after writing it, close the control connection.
    Done,
    /// ACCESS_DENIED: the server is busy (iperf3 error 121) or refused us.
    AccessDenied,
    /// SERVER_ERROR with the server's iperf3 error code and errno (0 if it sent only the code).
    ServerError {
        /// iperf3 error code (spec §7).
        code: i32,
        /// The server's errno, or 0.
        errno: i32,
    },
    /// SERVER_TERMINATE: the server was interrupted (iperf3 error 120). IPERF_DONE is queued, as 3.12 does.
    ServerTerminated,
    /// The server closed the control connection where it should have sent
    /// `state`; in place of CREATE_STREAMS this is how ≤3.19 servers refuse parameters.
    PeerClosed {
        /// The state message that was expected.
        state: State,
    },
    /// The server broke the protocol; the connection is unusable.
    ProtocolError(ProtoError),
}

/// Bytes the server may send in place of a results frame when it aborts. As
/// the top byte of a length prefix they would announce at least 184 MB,
/// far over any limit, so the reading is unambiguous.
const ABORT_BYTES: [u8; 3] = [0x0B, 0xFE, 0xFF];

/// Length of a SERVER_ERROR message: state byte, code, errno.
const SERVER_ERROR_LEN: usize = 9;

/// The client's control connection.
///
/// Methods, as in quinn's `Connection`:
/// - inputs: [`handle_input`](Self::handle_input) with every byte read from
///   the control connection, [`handle_eof`](Self::handle_eof) once at EOF;
/// - outputs: [`poll_transmit`](Self::poll_transmit) (bytes to write, in
///   order) and [`poll_event`](Self::poll_event);
/// - commands: [`test_end`](Self::test_end), [`send_results`](Self::send_results),
///   [`terminate`](Self::terminate).
///
/// Driver loop: connect, create with [`ClientControl::new`] (the cookie is
/// queued), then repeatedly write everything `poll_transmit` gives, handle
/// every event, read and `handle_input`. A normal test yields
/// `CreateStreams` (open streams, each sending the cookie), `TestStart`,
/// `TestRunning` (send/receive until the test is over, then `test_end()`),
/// `ResultsRequested` (`send_results()`), `ServerResults`, `DisplayResults`
/// (close data streams), `Done` (write the queued IPERF_DONE, close).
/// Handle events before the next `poll_transmit` so data streams close
/// before IPERF_DONE goes out, as in iperf3.
#[derive(Debug)]
pub struct ClientControl {
    cookie: Cookie,
    params: TestParams,
    limits: JsonLimits,
    phase: ClientPhase,
    inbuf: Vec<u8>,
    outbuf: Vec<u8>,
    events: VecDeque<ClientEvent>,
    test_end_sent: bool,
    eof: bool,
    test_start_time: Option<Duration>,
    /// The latest `now` given, for messages handled when a command resumes reading.
    now: Duration,
}

enum Step {
    /// The message took this many bytes.
    Consumed(usize),
    /// More bytes, or a command from the driver, are needed.
    Wait,
    /// Nothing more is read.
    Stop,
}

impl ClientControl {
    /// A client that will present `cookie` and, when asked, `params`.
    ///
    /// Set `params.client_version` first. The parameters are sent as given;
    /// call [`TestParams::validate`] beforehand to stay inside current servers' limits.
    pub fn new(cookie: Cookie, params: TestParams) -> ClientControl {
        ClientControl::with_limits(cookie, params, ClientLimits::default())
    }

    /// Like [`ClientControl::new`] with explicit limits on server messages.
    pub fn with_limits(cookie: Cookie, params: TestParams, limits: ClientLimits) -> ClientControl {
        ClientControl {
            outbuf: cookie.as_bytes().to_vec(),
            cookie,
            params,
            limits: JsonLimits {
                max_len: limits.max_json_len,
                max_depth: limits.max_json_depth,
            },
            phase: ClientPhase::AwaitParamExchange,
            inbuf: Vec::new(),
            events: VecDeque::new(),
            test_end_sent: false,
            eof: false,
            test_start_time: None,
            now: Duration::ZERO,
        }
    }

    /// The test cookie (data streams send it too).
    pub fn cookie(&self) -> &Cookie {
        &self.cookie
    }

    /// The parameters this client sends.
    pub fn params(&self) -> &TestParams {
        &self.params
    }

    /// Where the exchange is.
    pub fn phase(&self) -> ClientPhase {
        self.phase
    }

    /// Whether the machine has finished (normally or not) and reads nothing more.
    pub fn is_closed(&self) -> bool {
        self.phase == ClientPhase::Closed
    }

    /// The `now` at which TEST_START was handled; iperf3 clients time the test from it.
    pub fn test_start_time(&self) -> Option<Duration> {
        self.test_start_time
    }

    /// Feeds bytes read from the control connection. Partial messages are
    /// buffered; several messages in one read are all handled. While the
    /// driver owes us its results, only the server's abort messages are read.
    pub fn handle_input(&mut self, bytes: &[u8], now: Duration) {
        self.now = now;
        if self.phase == ClientPhase::Closed || self.eof {
            return;
        }
        self.inbuf.extend_from_slice(bytes);
        self.process();
    }

    /// Reports that the server closed the control connection. Bytes already
    /// given are handled first.
    pub fn handle_eof(&mut self, now: Duration) {
        self.now = now;
        self.eof = true;
        self.process();
    }

    /// Handles buffered input as far as the phase allows, then a pending EOF.
    fn process(&mut self) {
        let buf = std::mem::take(&mut self.inbuf);
        let mut pos = 0;
        while pos < buf.len() {
            match self.step(&buf[pos..]) {
                Step::Consumed(n) => pos += n,
                Step::Wait => break,
                Step::Stop => pos = buf.len(),
            }
        }
        self.inbuf = buf;
        self.inbuf.drain(..pos);
        let held_for_driver = self.phase == ClientPhase::ResultsRequested && !self.inbuf.is_empty();
        if self.eof && self.phase != ClientPhase::Closed && !held_for_driver {
            self.finish_at_eof();
        }
    }

    fn finish_at_eof(&mut self) {
        let buf = std::mem::take(&mut self.inbuf);
        let event = match buf.first() {
            None => ClientEvent::PeerClosed {
                state: self.phase.awaited(),
            },
            // ≤3.18 servers send SERVER_ERROR without the errno word.
            Some(&0xFE) if buf.len() >= 5 => ClientEvent::ServerError {
                code: read_i32(&buf[1..5]),
                errno: 0,
            },
            Some(&0xFE) => ClientEvent::ProtocolError(ProtoError::Truncated {
                what: "SERVER_ERROR message",
                have: buf.len(),
                need: SERVER_ERROR_LEN,
            }),
            Some(_) => ClientEvent::ProtocolError(ProtoError::Truncated {
                what: "server results",
                have: buf.len(),
                need: framing::frame_need(&buf),
            }),
        };
        self.events.push_back(event);
        self.phase = ClientPhase::Closed;
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
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        let event = self.events.pop_front()?;
        if event == ClientEvent::DisplayResults {
            // IPERF_DONE goes out only now, so a driver that closes its data
            // streams on this event does so before the server sees IPERF_DONE.
            self.outbuf.push(State::IperfDone.to_byte());
            self.events.push_back(ClientEvent::Done);
        }
        Some(event)
    }

    /// Declares the test over (TEST_END). Allowed once, after TEST_RUNNING.
    pub fn test_end(&mut self) -> Result<(), ProtoError> {
        if self.phase != ClientPhase::Running || self.test_end_sent {
            return Err(self.out_of_order("test_end"));
        }
        self.test_end_sent = true;
        self.outbuf.push(State::TestEnd.to_byte());
        Ok(())
    }

    /// Sends our results, after [`ClientEvent::ResultsRequested`].
    pub fn send_results(&mut self, results: &Results) -> Result<(), ProtoError> {
        if self.phase != ClientPhase::ResultsRequested {
            return Err(self.out_of_order("send_results"));
        }
        framing::write_frame(results, "results", &mut self.outbuf)?;
        self.phase = ClientPhase::AwaitServerResults;
        self.process();
        Ok(())
    }

    /// Aborts the test (CLIENT_TERMINATE), e.g. on a signal; then close the connection.
    pub fn terminate(&mut self) -> Result<(), ProtoError> {
        if self.phase == ClientPhase::Closed {
            return Err(self.out_of_order("terminate"));
        }
        self.outbuf.push(State::ClientTerminate.to_byte());
        self.phase = ClientPhase::Closed;
        Ok(())
    }

    fn out_of_order(&self, command: &'static str) -> ProtoError {
        ProtoError::OutOfOrder {
            command,
            phase: self.phase.as_str(),
        }
    }

    fn fail(&mut self, error: ProtoError) -> Step {
        self.events.push_back(ClientEvent::ProtocolError(error));
        self.phase = ClientPhase::Closed;
        Step::Stop
    }

    /// Handles the message at the start of `buf` (never empty).
    fn step(&mut self, buf: &[u8]) -> Step {
        let abort = ABORT_BYTES.contains(&buf[0]);
        match self.phase {
            ClientPhase::Closed => Step::Stop,
            ClientPhase::AwaitServerResults if !abort => self.read_results(buf),
            // The server sends nothing before our results unless it aborts.
            ClientPhase::ResultsRequested if !abort => Step::Wait,
            _ => self.read_state(buf),
        }
    }

    fn read_results(&mut self, buf: &[u8]) -> Step {
        let (body, len) = match framing::split_frame(buf, self.limits.max_len) {
            Ok(Some(frame)) => frame,
            Ok(None) => return Step::Wait,
            Err(e) => return self.fail(e),
        };
        match framing::decode_json::<Results>(body, &self.limits, "results") {
            Ok(results) => {
                self.events
                    .push_back(ClientEvent::ServerResults(Box::new(results)));
                self.phase = ClientPhase::AwaitDisplayResults;
                Step::Consumed(len)
            }
            Err(e) => self.fail(e),
        }
    }

    fn read_state(&mut self, buf: &[u8]) -> Step {
        let state = match State::from_byte(buf[0]) {
            Ok(state) => state,
            Err(e) => return self.fail(e),
        };
        let (event, next) = match (self.phase, state) {
            (_, State::ServerError) => {
                let Some(msg) = buf.get(..SERVER_ERROR_LEN) else {
                    return Step::Wait;
                };
                let event = ClientEvent::ServerError {
                    code: read_i32(&msg[1..5]),
                    errno: read_i32(&msg[5..9]),
                };
                self.events.push_back(event);
                self.phase = ClientPhase::Closed;
                return Step::Consumed(SERVER_ERROR_LEN);
            }
            (_, State::AccessDenied) => (Some(ClientEvent::AccessDenied), ClientPhase::Closed),
            (_, State::ServerTerminate) => {
                self.outbuf.push(State::IperfDone.to_byte());
                (Some(ClientEvent::ServerTerminated), ClientPhase::Closed)
            }
            (ClientPhase::AwaitParamExchange, State::ParamExchange) => {
                if let Err(e) = framing::write_frame(&self.params, "parameters", &mut self.outbuf) {
                    return self.fail(e);
                }
                (None, ClientPhase::AwaitCreateStreams)
            }
            (ClientPhase::AwaitCreateStreams, State::CreateStreams) => (
                Some(ClientEvent::CreateStreams),
                ClientPhase::AwaitTestStart,
            ),
            (ClientPhase::AwaitTestStart, State::TestStart) => {
                self.test_start_time = Some(self.now);
                (Some(ClientEvent::TestStart), ClientPhase::AwaitTestRunning)
            }
            (ClientPhase::AwaitTestRunning, State::TestRunning) => {
                (Some(ClientEvent::TestRunning), ClientPhase::Running)
            }
            (ClientPhase::Running, State::ExchangeResults) => (
                Some(ClientEvent::ResultsRequested),
                ClientPhase::ResultsRequested,
            ),
            (ClientPhase::AwaitDisplayResults, State::DisplayResults) => {
                (Some(ClientEvent::DisplayResults), ClientPhase::Closed)
            }
            (phase, state) => {
                return self.fail(ProtoError::UnexpectedState {
                    state,
                    phase: phase.as_str(),
                })
            }
        };
        self.events.extend(event);
        self.phase = next;
        Step::Consumed(1)
    }
}

/// A big-endian `i32` from exactly four bytes.
fn read_i32(bytes: &[u8]) -> i32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[..4]);
    i32::from_be_bytes(word)
}
