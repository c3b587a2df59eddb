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
use crate::input::{self, Input, Reader, Step};
use crate::params::TestParams;
use crate::results::Results;
use crate::state::State;

/// Limits on what a [`ClientControl`] accepts from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientLimits {
    /// Largest server results message, bytes (a `-J` report can be big).
    /// Keep it under 184 MB: a longer length prefix would start with a byte
    /// the machine reads as an abort message.
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

impl ClientEvent {
    /// The event in a word, iperf3's state name where there is one (for
    /// `-d`'s trace).
    pub fn name(&self) -> &'static str {
        match self {
            ClientEvent::CreateStreams => "CREATE_STREAMS",
            ClientEvent::TestStart => "TEST_START",
            ClientEvent::TestRunning => "TEST_RUNNING",
            ClientEvent::ResultsRequested => "EXCHANGE_RESULTS",
            ClientEvent::ServerResults(_) => "the server's results",
            ClientEvent::DisplayResults => "DISPLAY_RESULTS",
            ClientEvent::Done => "the end of the test (IPERF_DONE goes out)",
            ClientEvent::AccessDenied => "ACCESS_DENIED",
            ClientEvent::ServerError { .. } => "SERVER_ERROR",
            ClientEvent::ServerTerminated => "SERVER_TERMINATE",
            ClientEvent::PeerClosed { .. } => "the control connection closed",
            ClientEvent::ProtocolError(_) => "a protocol error",
        }
    }
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
/// IPERF_DONE is queued only as `DisplayResults` is handed out, so closing
/// the data streams in that event's handler keeps iperf3's order (data FINs
/// before IPERF_DONE) whatever the loop order.
///
/// Events describe input already read; a command issued in response may
/// fail with [`ProtoError::OutOfOrder`] if later input (e.g. ACCESS_DENIED)
/// has closed the machine meanwhile. Check [`is_closed`](Self::is_closed).
#[derive(Debug)]
pub struct ClientControl {
    cookie: Cookie,
    params: TestParams,
    limits: JsonLimits,
    phase: ClientPhase,
    input: Input,
    outbuf: Vec<u8>,
    events: VecDeque<ClientEvent>,
    test_end_sent: bool,
    test_start_time: Option<Duration>,
    /// The latest `now` given, for messages handled when a command resumes reading.
    now: Duration,
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
            input: Input::default(),
            events: VecDeque::new(),
            test_end_sent: false,
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
    /// driver owes a command (`test_end` once running, `send_results` when
    /// asked) only the server's abort messages are read; the rest waits.
    pub fn handle_input(&mut self, bytes: &[u8], now: Duration) {
        self.now = now;
        input::feed(self, bytes);
    }

    /// Reports that the server closed the control connection. Bytes already
    /// given are handled first.
    pub fn handle_eof(&mut self, now: Duration) {
        self.now = now;
        input::feed_eof(self);
    }

    /// Whether the driver owes a command before the server may speak again.
    fn waits_for_driver(&self) -> bool {
        match self.phase {
            ClientPhase::Running => !self.test_end_sent,
            ClientPhase::ResultsRequested => true,
            _ => false,
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
        input::process(self);
        Ok(())
    }

    /// Sends our results, after [`ClientEvent::ResultsRequested`].
    pub fn send_results(&mut self, results: &Results) -> Result<(), ProtoError> {
        if self.phase != ClientPhase::ResultsRequested {
            return Err(self.out_of_order("send_results"));
        }
        framing::write_frame(results, "results", &mut self.outbuf)?;
        self.phase = ClientPhase::AwaitServerResults;
        input::process(self);
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

    fn read_results(&mut self, buf: &[u8]) -> Step {
        match framing::read_frame::<Results>(buf, &self.limits, "results") {
            Ok(Some((results, len))) => {
                self.events
                    .push_back(ClientEvent::ServerResults(Box::new(results)));
                self.phase = ClientPhase::AwaitDisplayResults;
                Step::Consumed(len)
            }
            Ok(None) => Step::NeedBytes,
            Err(e) => self.fail(e),
        }
    }

    fn read_state(&mut self, buf: &[u8]) -> Step {
        let state = match State::from_byte(buf[0]) {
            Ok(state) => state,
            Err(e) => return self.fail(e.into()),
        };
        let (event, next) = match (self.phase, state) {
            (_, State::ServerError) => {
                let Some(msg) = buf.get(..SERVER_ERROR_LEN) else {
                    return Step::NeedBytes;
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

impl Reader for ClientControl {
    fn input(&mut self) -> &mut Input {
        &mut self.input
    }

    fn reads_no_more(&self) -> bool {
        self.is_closed()
    }

    fn step(&mut self, buf: &[u8]) -> Step {
        let abort = ABORT_BYTES.contains(&buf[0]);
        match self.phase {
            ClientPhase::Closed => Step::Stop,
            ClientPhase::AwaitServerResults if !abort => self.read_results(buf),
            // The server sends nothing before our TEST_END or our results
            // unless it aborts; anything else waits for the command.
            _ if self.waits_for_driver() && !abort => Step::Held,
            _ => self.read_state(buf),
        }
    }

    fn finish_at_eof(&mut self) {
        let buf = self.input.take();
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
}

/// A big-endian `i32` from exactly four bytes.
fn read_i32(bytes: &[u8]) -> i32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[..4]);
    i32::from_be_bytes(word)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{self, captured_client, captured_params, captured_server};
    use proptest::prelude::*;

    fn at(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    fn client() -> ClientControl {
        ClientControl::new(Cookie::from_wire(capture::COOKIE), captured_params())
    }

    fn drain(client: &mut ClientControl) -> (Vec<u8>, Vec<ClientEvent>) {
        let mut out = Vec::new();
        let mut events = Vec::new();
        // Events first: DISPLAY_RESULTS queues IPERF_DONE as it is handed out.
        while let Some(event) = client.poll_event() {
            events.push(event);
        }
        let _ = client.poll_transmit(&mut out);
        (out, events)
    }

    /// Everything the 3.12 server wrote on the control connection, with our −1.
    fn server_bytes() -> Vec<u8> {
        let mut bytes = vec![0x09, 0x0a, 0x01, 0x02, 0x0d];
        bytes.extend(capture::frame(capture::SERVER_RESULTS));
        bytes.push(0x0e);
        bytes
    }

    fn expected_client_bytes() -> Vec<u8> {
        let mut bytes = capture::COOKIE.to_vec();
        bytes.extend(capture::frame(capture::PARAMS));
        bytes.push(0x04);
        bytes.extend(capture::frame(capture::CLIENT_RESULTS));
        bytes.push(0x10);
        bytes
    }

    fn expected_events() -> Vec<ClientEvent> {
        vec![
            ClientEvent::CreateStreams,
            ClientEvent::TestStart,
            ClientEvent::TestRunning,
            ClientEvent::ResultsRequested,
            ClientEvent::ServerResults(Box::new(captured_server())),
            ClientEvent::DisplayResults,
            ClientEvent::Done,
        ]
    }

    /// Runs a client over `chunks`, reacting as a driver would: TEST_END as
    /// soon as the test runs, the captured results when asked.
    fn run(chunks: &[&[u8]]) -> (Vec<u8>, Vec<ClientEvent>) {
        let mut client = client();
        let mut out = Vec::new();
        let mut events = Vec::new();
        let _ = client.poll_transmit(&mut out);
        for (i, chunk) in chunks.iter().enumerate() {
            client.handle_input(chunk, at(i as u64));
            while let Some(event) = client.poll_event() {
                let done = match &event {
                    ClientEvent::TestRunning => client.test_end(),
                    ClientEvent::ResultsRequested => client.send_results(&captured_client()),
                    _ => Ok(()),
                };
                if let Err(e) = done {
                    assert!(client.is_closed(), "{e}");
                }
                events.push(event);
            }
            let _ = client.poll_transmit(&mut out);
        }
        (out, events)
    }

    #[test]
    fn replays_the_captured_test_step_by_step() {
        let mut c = client();
        assert_eq!(drain(&mut c), (capture::COOKIE.to_vec(), vec![]));

        c.handle_input(&[0x09], at(0));
        let (out, events) = drain(&mut c);
        assert_eq!(&out[..4], &[0, 0, 0, 0x91]);
        assert_eq!(&out[4..], capture::PARAMS.as_bytes(), "145-byte parameters");
        assert!(events.is_empty());

        c.handle_input(&[0x0a], at(1));
        assert_eq!(drain(&mut c), (vec![], vec![ClientEvent::CreateStreams]));
        c.handle_input(&[0x01, 0x02], at(2));
        assert_eq!(
            drain(&mut c),
            (
                vec![],
                vec![ClientEvent::TestStart, ClientEvent::TestRunning]
            )
        );
        assert_eq!(c.test_start_time(), Some(at(2)));

        c.test_end().expect("allowed");
        assert_eq!(drain(&mut c).0, [0x04]);
        c.handle_input(&[0x0d], at(2002));
        assert_eq!(drain(&mut c), (vec![], vec![ClientEvent::ResultsRequested]));
        c.send_results(&captured_client()).expect("allowed");
        assert_eq!(drain(&mut c).0, capture::frame(capture::CLIENT_RESULTS));

        c.handle_input(&capture::frame(capture::SERVER_RESULTS), at(2003));
        assert_eq!(
            drain(&mut c),
            (
                vec![],
                vec![ClientEvent::ServerResults(Box::new(captured_server()))]
            )
        );
        c.handle_input(&[0x0e], at(2004));
        let mut out = Vec::new();
        assert!(!c.poll_transmit(&mut out), "IPERF_DONE waits for the event");
        assert_eq!(c.poll_event(), Some(ClientEvent::DisplayResults));
        assert!(c.poll_transmit(&mut out));
        assert_eq!(out, [0x10]);
        assert_eq!(c.poll_event(), Some(ClientEvent::Done));
        assert_eq!(c.poll_event(), None);
        assert!(c.is_closed());
        c.handle_eof(at(2005));
        assert_eq!(drain(&mut c), (vec![], vec![]));
    }

    #[test]
    fn whole_transcript_in_one_read_or_byte_by_byte() {
        let bytes = server_bytes();
        assert_eq!(run(&[&bytes]), (expected_client_bytes(), expected_events()));
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(run(&singles), (expected_client_bytes(), expected_events()));
    }

    #[test]
    fn split_at_every_byte_boundary() {
        let bytes = server_bytes();
        for cut in 0..=bytes.len() {
            let (a, b) = bytes.split_at(cut);
            assert_eq!(
                run(&[a, b]),
                (expected_client_bytes(), expected_events()),
                "cut at {cut}"
            );
        }
    }

    fn running() -> ClientControl {
        let mut c = client();
        c.handle_input(&[0x09, 0x0a, 0x01, 0x02], at(0));
        let _ = drain(&mut c);
        c
    }

    fn awaiting_server_results() -> ClientControl {
        let mut c = running();
        c.test_end().expect("allowed");
        c.handle_input(&[0x0d], at(1));
        c.send_results(&captured_client()).expect("allowed");
        let _ = drain(&mut c);
        c
    }

    #[test]
    fn busy_server_refuses() {
        let mut c = client();
        c.handle_input(&[0xFF], at(0));
        let (out, events) = drain(&mut c);
        assert_eq!(out, capture::COOKIE);
        assert_eq!(events, [ClientEvent::AccessDenied]);
        assert!(c.is_closed());
    }

    #[test]
    fn server_error_with_one_or_two_words() {
        // 3.12 auth failure: code 142 and no errno word, then close.
        let mut c = client();
        c.handle_input(&[0x09, 0xFE, 0, 0, 0], at(0));
        c.handle_input(&[0x8E], at(1));
        assert_eq!(drain(&mut c).1, []);
        c.handle_eof(at(2));
        assert_eq!(
            drain(&mut c).1,
            [ClientEvent::ServerError {
                code: 142,
                errno: 0
            }]
        );

        let mut c = running();
        c.handle_input(&[0xFE, 0, 0, 0, 160, 0, 0, 0, 4], at(5));
        assert_eq!(
            drain(&mut c).1,
            [ClientEvent::ServerError {
                code: 160,
                errno: 4
            }]
        );

        let mut c = client();
        c.handle_input(&[0xFE, 0, 0], at(0));
        c.handle_eof(at(1));
        assert_eq!(
            drain(&mut c).1,
            [ClientEvent::ProtocolError(ProtoError::Truncated {
                what: "SERVER_ERROR message",
                have: 3,
                need: 9
            })]
        );
    }

    #[test]
    fn short_server_error_then_eof_while_the_driver_owes_test_end() {
        let mut c = running();
        c.handle_input(&[0xFE, 0, 0, 0, 0x8E], at(1));
        c.handle_eof(at(2));
        assert_eq!(
            drain(&mut c).1,
            [ClientEvent::ServerError {
                code: 142,
                errno: 0
            }]
        );
    }

    #[test]
    fn eof_instead_of_create_streams_is_a_refusal() {
        let mut c = client();
        c.handle_input(&[0x09], at(0));
        c.handle_eof(at(1));
        assert_eq!(
            drain(&mut c).1,
            [ClientEvent::PeerClosed {
                state: State::CreateStreams
            }]
        );
        let mut c = running();
        c.handle_eof(at(1));
        assert_eq!(
            drain(&mut c).1,
            [ClientEvent::PeerClosed {
                state: State::ExchangeResults
            }]
        );
    }

    #[test]
    fn server_terminate_is_answered_with_iperf_done() {
        let mut c = running();
        c.handle_input(&[0x0B], at(5));
        assert_eq!(
            drain(&mut c),
            (vec![0x10], vec![ClientEvent::ServerTerminated])
        );
        // Also in place of the server's results frame.
        let mut c = awaiting_server_results();
        c.handle_input(&[0x0B], at(5));
        assert_eq!(
            drain(&mut c),
            (vec![0x10], vec![ClientEvent::ServerTerminated])
        );
    }

    #[test]
    fn hostile_server_results() {
        let mut c = awaiting_server_results();
        c.handle_input(&[0x00, 0x10, 0x00, 0x00], at(5));
        assert_eq!(
            drain(&mut c).1,
            [ClientEvent::ProtocolError(ProtoError::FrameTooLong {
                len: 1 << 20,
                max: MAX_JSON_LEN
            })]
        );

        let mut c = awaiting_server_results();
        c.handle_input(&capture::frame(&"{".repeat(10_000)), at(5));
        assert_eq!(
            drain(&mut c).1,
            [ClientEvent::ProtocolError(ProtoError::JsonTooDeep {
                max: MAX_JSON_DEPTH,
                offset: MAX_JSON_DEPTH
            })]
        );

        let mut c = awaiting_server_results();
        c.handle_input(&capture::frame(r#"{"cpu_util_total":1}"#), at(5));
        match &drain(&mut c).1[..] {
            [ClientEvent::ProtocolError(e)] => {
                assert!(e.to_string().contains("missing field"), "{e}")
            }
            other => panic!("unexpected {other:?}"),
        }

        let mut c = awaiting_server_results();
        let frame = capture::frame(capture::SERVER_RESULTS);
        c.handle_input(&frame[..100], at(5));
        c.handle_eof(at(6));
        assert_eq!(
            drain(&mut c).1,
            [ClientEvent::ProtocolError(ProtoError::Truncated {
                what: "server results",
                have: 100,
                need: frame.len()
            })]
        );
    }

    #[test]
    fn unknown_and_misplaced_states_are_protocol_errors() {
        let mut c = client();
        c.handle_input(&[0x03], at(0));
        assert_eq!(
            drain(&mut c).1,
            [ClientEvent::ProtocolError(ProtoError::UnknownState(3))]
        );

        let mut c = client();
        c.handle_input(&[0x09, 0x01, 0x0a], at(0));
        let (_, events) = drain(&mut c);
        match &events[..] {
            [ClientEvent::ProtocolError(e)] => assert_eq!(
                e.to_string(),
                "unexpected state TEST_START (0x01) while waiting for CREATE_STREAMS"
            ),
            other => panic!("unexpected {other:?}"),
        }
        assert!(c.is_closed());
    }

    #[test]
    fn server_results_before_ours_wait_for_the_driver() {
        let mut c = running();
        c.test_end().expect("allowed");
        let mut input = vec![0x0d];
        input.extend(capture::frame(capture::SERVER_RESULTS));
        input.push(0x0e);
        c.handle_input(&input, at(1));
        assert_eq!(drain(&mut c).1, [ClientEvent::ResultsRequested]);
        c.send_results(&captured_client()).expect("allowed");
        let (_, events) = drain(&mut c);
        assert_eq!(
            events[0],
            ClientEvent::ServerResults(Box::new(captured_server()))
        );
        assert_eq!(
            events[1..],
            [ClientEvent::DisplayResults, ClientEvent::Done]
        );
    }

    #[test]
    fn commands_out_of_order_are_refused() {
        let mut c = client();
        assert_eq!(
            c.test_end(),
            Err(ProtoError::OutOfOrder {
                command: "test_end",
                phase: "waiting for PARAM_EXCHANGE"
            })
        );
        assert!(c.send_results(&captured_client()).is_err());
        let mut c = running();
        c.test_end().expect("first");
        assert!(c.test_end().is_err(), "only once");
        c.terminate().expect("allowed");
        assert_eq!(drain(&mut c).0, [0x04, 0x0C]);
        assert!(c.terminate().is_err());
    }

    #[test]
    fn limits_are_configurable() {
        let limits = ClientLimits {
            max_json_len: 10,
            max_json_depth: 2,
        };
        let mut c = ClientControl::with_limits(
            Cookie::from_wire(capture::COOKIE),
            captured_params(),
            limits,
        );
        c.handle_input(&[0x09, 0x0a, 0x01, 0x02], at(0));
        c.test_end().expect("allowed");
        c.handle_input(&[0x0d], at(1));
        c.send_results(&captured_client()).expect("allowed");
        let _ = drain(&mut c);
        c.handle_input(&[0, 0, 0, 11], at(2));
        assert_eq!(
            drain(&mut c).1,
            [ClientEvent::ProtocolError(ProtoError::FrameTooLong {
                len: 11,
                max: 10
            })]
        );
    }

    proptest! {
        #[test]
        fn any_bytes_never_panic(
            bytes in proptest::collection::vec(any::<u8>(), 0..1024),
            cut in 1usize..64,
        ) {
            let chunks: Vec<&[u8]> = bytes.chunks(cut).collect();
            let _ = run(&chunks);
            let mut c = client();
            for chunk in &chunks {
                c.handle_input(chunk, at(0));
            }
            c.handle_eof(at(1));
            let _ = drain(&mut c);
            prop_assert!(c.is_closed());
        }
    }
}
