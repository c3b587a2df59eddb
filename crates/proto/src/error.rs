//! The one error type of this crate's wire-facing code.
//!
//! Every variant quotes the offending value so a driver can log the error as
//! is. Parameter range failures have their own type, [`crate::ParamError`],
//! because they carry an iperf3 error code for the SERVER_ERROR reply.

use crate::state::{State, UnknownStateByte};

/// Something the peer sent (or the driver asked for) does not fit the protocol.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtoError {
    /// A byte where a state message belongs that names no iperf3 state.
    #[error("unknown state byte 0x{0:02x}")]
    UnknownState(u8),
    /// A valid state message the peer may not send at this point.
    #[error("unexpected state {state} while {phase}")]
    UnexpectedState {
        /// The state message that arrived.
        state: State,
        /// What the machine was doing, e.g. "waiting for PARAM_EXCHANGE".
        phase: &'static str,
    },
    /// A JSON length prefix above the configured limit.
    #[error("JSON length {len} exceeds the {max}-byte limit")]
    FrameTooLong {
        /// The announced length.
        len: u64,
        /// The configured limit.
        max: usize,
    },
    /// JSON nested deeper than the configured limit.
    #[error("JSON nesting exceeds {max} levels at byte {offset}")]
    JsonTooDeep {
        /// The configured depth limit.
        max: usize,
        /// Offset of the bracket that went one level too deep.
        offset: usize,
    },
    /// JSON that does not parse, or does not have the shape of the message.
    #[error("invalid {what} JSON: {detail}")]
    InvalidJson {
        /// Which message: "parameters" or "results".
        what: &'static str,
        /// The parser's complaint, with line and column.
        detail: String,
    },
    /// A message that cannot be encoded (only possible for absurd sizes).
    #[error("cannot encode {what}: {detail}")]
    Encode {
        /// Which message.
        what: &'static str,
        /// Why not.
        detail: String,
    },
    /// The peer closed the connection in the middle of a message.
    #[error("connection closed in the middle of the {what} ({have} of {need} bytes received)")]
    Truncated {
        /// Which message was being read.
        what: &'static str,
        /// Bytes of it received.
        have: usize,
        /// Bytes it needed.
        need: usize,
    },
    /// A UDP datagram (or buffer for one) shorter than the protocol minimum.
    #[error("UDP datagram of {len} bytes is shorter than the {min}-byte minimum")]
    DatagramTooShort {
        /// Its length.
        len: usize,
        /// The minimum.
        min: usize,
    },
    /// A command was issued in a phase where the protocol does not allow it.
    #[error("{command}() is not allowed while {phase}")]
    OutOfOrder {
        /// The command method that was called.
        command: &'static str,
        /// What the machine was doing.
        phase: &'static str,
    },
}

impl From<UnknownStateByte> for ProtoError {
    fn from(UnknownStateByte(byte): UnknownStateByte) -> Self {
        ProtoError::UnknownState(byte)
    }
}
