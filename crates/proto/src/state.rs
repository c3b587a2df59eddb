//! The one-byte state messages of the control connection (spec §2.2).
//!
//! This module owns the mapping between bytes and [`State`]s, including the
//! signed-byte encoding of the two negative states. Which state may arrive
//! when is the business of [`crate::client`] and [`crate::server`].

use std::fmt;

/// A byte where a state message belongs that names no iperf3 state; it
/// becomes [`crate::ProtoError::UnknownState`] in the machines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("unknown state byte 0x{0:02x}")]
pub struct UnknownStateByte(pub u8);

/// A state message, as iperf3 numbers it.
///
/// Only the states that are actually sent on the wire are listed; iperf3's
/// internal states (3, 5–8, 15) are rejected as unknown if they ever arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i8)]
pub enum State {
    /// S→C: streams are set up; initialise timers and counters.
    TestStart = 1,
    /// S→C: start moving data (always right after `TestStart`).
    TestRunning = 2,
    /// C→S: the client declares the test over.
    TestEnd = 4,
    /// S→C: send your parameter JSON now.
    ParamExchange = 9,
    /// S→C: open the data streams now.
    CreateStreams = 10,
    /// S→C: the server was interrupted.
    ServerTerminate = 11,
    /// C→S: the client was interrupted.
    ClientTerminate = 12,
    /// S→C: send your results JSON now.
    ExchangeResults = 13,
    /// S→C: results are done; the client may print and finish.
    DisplayResults = 14,
    /// C→S: the client is finished and closes.
    IperfDone = 16,
    /// S→C: busy, or a data stream presented a wrong cookie.
    AccessDenied = -1,
    /// S→C: followed by two big-endian `i32`s, error code and errno (spec §7).
    ServerError = -2,
}

impl State {
    /// Every state that can appear on the wire.
    pub const ALL: [State; 12] = [
        State::TestStart,
        State::TestRunning,
        State::TestEnd,
        State::ParamExchange,
        State::CreateStreams,
        State::ServerTerminate,
        State::ClientTerminate,
        State::ExchangeResults,
        State::DisplayResults,
        State::IperfDone,
        State::AccessDenied,
        State::ServerError,
    ];

    /// Reads a state byte; the byte is signed, so `0xFF` is `AccessDenied`.
    pub fn from_byte(byte: u8) -> Result<State, UnknownStateByte> {
        Ok(match byte as i8 {
            1 => State::TestStart,
            2 => State::TestRunning,
            4 => State::TestEnd,
            9 => State::ParamExchange,
            10 => State::CreateStreams,
            11 => State::ServerTerminate,
            12 => State::ClientTerminate,
            13 => State::ExchangeResults,
            14 => State::DisplayResults,
            16 => State::IperfDone,
            -1 => State::AccessDenied,
            -2 => State::ServerError,
            _ => return Err(UnknownStateByte(byte)),
        })
    }

    /// The byte to put on the wire.
    pub fn to_byte(self) -> u8 {
        self as i8 as u8
    }

    /// iperf3's name for the state, e.g. `"PARAM_EXCHANGE"`.
    pub fn name(self) -> &'static str {
        match self {
            State::TestStart => "TEST_START",
            State::TestRunning => "TEST_RUNNING",
            State::TestEnd => "TEST_END",
            State::ParamExchange => "PARAM_EXCHANGE",
            State::CreateStreams => "CREATE_STREAMS",
            State::ServerTerminate => "SERVER_TERMINATE",
            State::ClientTerminate => "CLIENT_TERMINATE",
            State::ExchangeResults => "EXCHANGE_RESULTS",
            State::DisplayResults => "DISPLAY_RESULTS",
            State::IperfDone => "IPERF_DONE",
            State::AccessDenied => "ACCESS_DENIED",
            State::ServerError => "SERVER_ERROR",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (0x{:02x})", self.name(), self.to_byte())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_round_trips_through_its_byte() {
        for state in State::ALL {
            assert_eq!(State::from_byte(state.to_byte()), Ok(state));
        }
    }

    #[test]
    fn negative_states_use_signed_bytes() {
        assert_eq!(State::AccessDenied.to_byte(), 0xFF);
        assert_eq!(State::ServerError.to_byte(), 0xFE);
        assert_eq!(State::from_byte(0xFF), Ok(State::AccessDenied));
        assert_eq!(State::from_byte(0xFE), Ok(State::ServerError));
    }

    #[test]
    fn spec_byte_values() {
        let expected: [(State, u8); 10] = [
            (State::TestStart, 0x01),
            (State::TestRunning, 0x02),
            (State::TestEnd, 0x04),
            (State::ParamExchange, 0x09),
            (State::CreateStreams, 0x0A),
            (State::ServerTerminate, 0x0B),
            (State::ClientTerminate, 0x0C),
            (State::ExchangeResults, 0x0D),
            (State::DisplayResults, 0x0E),
            (State::IperfDone, 0x10),
        ];
        for (state, byte) in expected {
            assert_eq!(state.to_byte(), byte, "{state:?}");
        }
    }

    #[test]
    fn internal_and_unknown_bytes_are_rejected() {
        let known: Vec<u8> = State::ALL.iter().map(|s| s.to_byte()).collect();
        for byte in 0..=u8::MAX {
            let parsed = State::from_byte(byte);
            if known.contains(&byte) {
                assert!(parsed.is_ok(), "0x{byte:02x}");
            } else {
                assert_eq!(parsed, Err(UnknownStateByte(byte)));
            }
        }
        // Internal iperf3 states that are never sent.
        for byte in [3u8, 5, 6, 7, 8, 15] {
            assert!(State::from_byte(byte).is_err());
        }
    }

    #[test]
    fn unknown_state_error_quotes_the_byte() {
        let err = State::from_byte(0x42).expect_err("0x42 is not a state");
        assert_eq!(err.to_string(), "unknown state byte 0x42");
    }
}
