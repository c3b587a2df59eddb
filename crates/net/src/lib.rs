//! Linux socket and host primitives for plumb.
//!
//! All `unsafe` lives in [`sys`]; the other modules wrap it in typed, safe
//! APIs: [`sockopt`] (socket options), [`tcpinfo`] (`TCP_INFO`), [`stream`]
//! (per-block TCP read/write/discard), [`zerocopy`] (`MSG_ZEROCOPY`,
//! `sendfile`, `splice`), [`udp`] (`sendmmsg`/`recvmmsg` with GSO/GRO) and
//! [`host`] (CPU usage, sysctls, `uname`, affinity, link speed, routes).

pub mod host;
pub mod sockopt;
pub mod stream;
pub mod sys;
pub mod tcpinfo;
pub mod udp;
pub mod zerocopy;

#[cfg(test)]
mod testutil;
