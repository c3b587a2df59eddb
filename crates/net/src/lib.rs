//! Linux socket and host primitives for plumb.
//!
//! All `unsafe` lives in [`sys`]; the other modules wrap it in typed, safe
//! APIs: [`sockopt`] (socket options), [`tcpinfo`] (`TCP_INFO`), [`stream`]
//! (per-block TCP read/write/discard), [`zerocopy`] (`MSG_ZEROCOPY`,
//! `sendfile`, `splice`), [`udp`] (`sendmmsg`/`recvmmsg` with GSO/GRO) and
//! [`host`] (CPU usage, sysctls, `uname`, affinity, link speed, routes).
//!
//! [`buf`] gives the data path its page-aligned buffers.
//!
//! On top of them sits the one I/O layer that drives the sans-IO protocol of
//! `plumb-proto`: [`client`] and [`server`] own the control connection,
//! [`session`] a running test's streams, intervals and results, [`datapath`]
//! the per-stream threads, [`pacing`] the `-b` send schedule (on virtual time,
//! so it is tested without a clock), [`sockets`] socket creation and options.
#![warn(clippy::too_many_lines)]

pub mod buf;
pub mod cgroup;
pub mod client;
pub mod config;
pub mod datapath;
pub mod datathread;
pub mod errors;
pub mod host;
pub mod pacing;
pub mod rr;
pub mod server;
pub mod session;
pub mod signals;
pub mod sockets;
pub mod sockopt;
pub mod stream;
pub mod sys;
pub mod tcpinfo;
pub mod udp;
pub mod zerocopy;

#[cfg(test)]
mod testutil;
