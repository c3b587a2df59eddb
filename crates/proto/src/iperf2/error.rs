//! What can be wrong with an iperf 2 peer's bytes, each in one line.

/// A decoding error: the peer's bytes are not what iperf 2 sends.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Iperf2Error {
    /// Fewer bytes than the structure needs.
    #[error("iperf 2 {what} of {have} bytes is shorter than its {need}-byte minimum")]
    Short {
        /// The structure.
        what: &'static str,
        /// Bytes present.
        have: usize,
        /// Bytes needed.
        need: usize,
    },
    /// The first word sets none of the bits that mark a test header.
    #[error("no iperf 2 test header (flags 0x{0:08x} mark none)")]
    NoHeader(u32),
    /// A header length outside what iperf 2 sends.
    #[error("iperf 2 test header length {len} is outside {min}..={max}")]
    BadLength {
        /// The length the flags give.
        len: usize,
        /// Smallest accepted.
        min: usize,
        /// Largest accepted.
        max: usize,
    },
    /// A field with a value iperf 2 never sends.
    #[error("iperf 2 {field} {value} is invalid")]
    BadField {
        /// The field.
        field: &'static str,
        /// Its value.
        value: i64,
    },
    /// A message of another type where an acknowledgement was expected.
    #[error("iperf 2 message type {0} is not a header acknowledgement")]
    NotAck(u32),
}
