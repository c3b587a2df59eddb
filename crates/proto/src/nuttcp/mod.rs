//! nuttcp's control protocol (the 6.x line Debian ships), sans-IO: the
//! greeting, the client's one-line request, the server's `OK`/`KO`
//! answer, and the text the server sends back (its interval lines, `DONE`
//! and its closing figures). `docs/protocol-nuttcp.md` describes the bytes.
//!
//! - [`request`]: the client's parameter line, built and read with caps.
//! - [`reply`]: the greeting and answer lines, and the server's report
//!   lines, written and read back into figures.
//! - [`format`]: the client's `-f` options, which shape the server's lines.
//! - [`interval`]: a receiving server's interval lines, in either format.
//! - [`lines`]: a capped line splitter for the control connection.
//! - [`udp`]: the UDP markers and the byte-count stamp.
//! - [`brief`]: nuttcp's one-line summary, from a test's figures.

pub mod brief;
pub mod format;
pub mod interval;
pub mod lines;
pub mod reply;
pub mod request;
pub mod udp;

/// The protocol version plumb speaks and announces (nuttcp 6.1.2's).
pub const VERSION: &str = "6.1.2";

/// The longest control line either end accepts, in bytes (a stock request
/// is about 340).
pub const MAX_LINE: usize = 2048;

/// Bytes in a nuttcp "MB" (a mebibyte).
const MB: f64 = 1_048_576.0;
