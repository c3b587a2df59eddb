//! Linux socket and host primitives for plumb, and the one I/O layer that
//! runs its tests.
//!
//! # Layout
//! Files depend downward only: no file uses another that uses it back
//! (`scripts/import-cycles`).
//!
//! **Primitives.** All `unsafe` lives in [`sys`]; the other modules wrap it
//! in typed, safe APIs: [`sockopt`] (socket options), [`stream`] (per-block TCP read/write/discard), [`zerocopy`]
//! (`MSG_ZEROCOPY`, `sendfile`, `splice`), [`udp`] (`sendmmsg`/`recvmmsg`
//! with GSO/GRO), [`host`] (CPU usage, sysctls, `uname`, affinity, link
//! speed, routes) and [`cgroup`] (the CPU quota). [`buf`] gives the data
//! path its page-aligned buffers; [`sockets`] creates, connects and
//! configures sockets (and names a stream's socket, [`sockets::StreamSocket`]).
//!
//! **Data threads.** [`datathread`] holds what every data thread shares,
//! whatever it runs: the stop flags and byte budget, the per-stream
//! counters (request/response latency histograms included), the clock
//! origin, the poll slice, which errors are transient, and how a stream's
//! thread is started. It depends on none of the modules below, which all
//! use it:
//! - [`pacing`]: the `-b` send schedule, on virtual time so that it is
//!   tested without a clock;
//! - [`datapath`]: the TCP and UDP throughput loops;
//! - [`rr`]: the request/response loops, the server's greeting, the
//!   `--latency` probe and the latency statistics, each a file of its own.
//!
//! **Drivers.** [`session`] runs a test's streams, intervals and results on
//! either end; [`client`] and [`server`] own the control connection and drive
//! the sans-IO protocol of `plumb-proto` ([`server`]'s gate, admission,
//! shared state and per-test thread are files under it); [`nuttcp`] is
//! both roles again for nuttcp's protocol, on the same session. [`config`],
//! [`errors`], [`signals`] and [`debug`] (`-d`'s trace) serve them.
//!
//! Results leave this crate as the records of `plumb-report`, which prints
//! them; plumb's evidence under `end.plumb` and `intervals[].plumb`
//! (request/response and `--latency` results among it) as the document's
//! own types, those of `plumb-record`.

pub mod buf;
pub mod cgroup;
pub mod client;
pub mod config;
pub mod connect;
pub mod datapath;
pub mod datathread;
pub mod debug;
pub mod detect;
pub mod diskfile;
pub mod end_plumb;
pub mod errors;
pub mod file_report;
pub mod flowlabel;
pub mod handoff;
pub mod host;
pub mod iperf2;
pub mod local;
pub mod multi;
pub mod nuttcp;
pub mod pacing;
pub mod plan;
pub mod procfs;
pub mod rr;
pub mod server;
pub mod session;
pub mod signals;
pub mod sockets;
pub mod sockopt;
pub mod stream;
pub mod sys;
pub mod udp;
pub mod zerocopy;

#[cfg(test)]
mod testutil;
