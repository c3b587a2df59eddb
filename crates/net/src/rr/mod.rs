//! Request/response data paths: `--rr` (TCP and UDP), `--crr` and the
//! `--latency` probe, on both ends, and the latency they measure. The
//! session runs these loops in place of the throughput loops when the
//! parameters carry `plumb.rr`.
//!
//! - [`loops`]: each stream's transaction loops, client and server, and
//!   what they need beyond the plan ([`RrContext`]); `io` (whole
//!   messages, `--busy-poll`'s spinning read) and `pace` (`-b`) under them.
//! - [`greeting`]: the greeting a plumb server writes on their connections
//!   (see [`plumb_proto::rr`]), which a client checks.
//! - [`probe`]: the `--latency` probe connection and what it cost.
//! - [`stats`]: counts and histograms (`hdrhistogram`, nanoseconds, three
//!   significant digits) summed into the document's latency objects
//!   ([`plumb_record::Latency`]), which the sinks print.
//!
//! The counters the loops write live with the other data-thread state in
//! [`crate::datathread`].

pub mod greeting;
mod io;
pub mod loops;
mod pace;
pub mod probe;
pub mod stats;

pub use greeting::{expect_greeting, greet_tcp, greet_udp, GREETING_TIMEOUT};
pub use loops::{run_stream, RrContext, UDP_LOSS_TIMEOUT};
pub use plumb_proto::params::UDP_LEN;
pub use plumb_proto::rr::{RrMode, RrParams, MAX_BURST, MAX_TCP_MESSAGE, MIN_UDP_MESSAGE};
pub use probe::{serve_probe, Probe, IDLE_EVERY, IDLE_FOR, LOADED_EVERY};
