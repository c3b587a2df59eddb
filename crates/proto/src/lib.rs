//! A sans-IO implementation of iperf3's control and data protocol.
//!
//! This crate turns bytes into typed protocol messages and back, and keeps
//! the state machines of both ends of the control connection. It opens no
//! socket, starts no thread, reads no clock and prints nothing: the driver
//! (`plumb-net`) feeds it bytes and the current time (a [`Duration`](std::time::Duration) since
//! an epoch of its choosing) and writes out what it is given. The reference
//! for every byte is `docs/protocol.md`; section numbers below refer to it.
//!
//! # Tour
//! - [`state`]: the one-byte state messages, signed (`0xFF` = ACCESS_DENIED).
//! - [`cookie`]: the 37-byte test cookie, made from driver-supplied random bytes.
//! - [`framing`]: `u32` length + JSON, with length and nesting limits, and
//!   iperf3's number style.
//! - [`params`]: [`TestParams`], the client's parameters, encoded 3.12-style
//!   and decoded tolerantly, plus the `plumb` extension object.
//! - [`results`]: [`Results`], exchanged by both sides at the end.
//! - [`client`] / [`server`]: the control-connection machines —
//!   `handle_*` inputs, `poll_*` outputs, commands — in the manner of quinn-proto.
//! - [`udp`]: the UDP connect handshake values, the datagram header and the
//!   receiver's loss/out-of-order/jitter arithmetic.
//! - [`iperf2`]: iperf 2's test header, UDP datagram header and server
//!   report (`docs/protocol-iperf2.md`), for `--tool iperf2`.
//! - [`stream_id`]: the 1, 3, 4, 5, … numbering of data streams.
//! - [`nuttcp`]: nuttcp's control text (request, answer, report lines).
//! - [`auth`]: the authentication token (§10): plaintext, RSA (PKCS#1 v1.5
//!   and OAEP), Base64, the authorized-users file and the skew check; keys,
//!   file text, time and randomness are the caller's.
//!
//! # A normal test on the control connection (§3.1)
//! ```text
//! client                                    server
//!   cookie (37 bytes)            ──▶
//!                                ◀──  09 PARAM_EXCHANGE
//!   u32 len + parameter JSON     ──▶
//!                                ◀──  0A CREATE_STREAMS
//!   (data streams connect, each sending the cookie; UDP: "9876" / "6789")
//!                                ◀──  01 TEST_START, 02 TEST_RUNNING
//!   (data flows for omit + time, timed by the client)
//!   04 TEST_END                  ──▶
//!                                ◀──  0D EXCHANGE_RESULTS
//!   u32 len + results JSON       ──▶
//!                                ◀──  u32 len + results JSON, 0E DISPLAY_RESULTS
//!   10 IPERF_DONE, close         ──▶
//! ```
//! Either side may abort: the server with `FF` (busy), `FE` + code + errno
//! (error) or `0B` (terminated), the client with `0C` (terminated).
//!
//! # Not here
//! - Reading key and users files, the clock and the random device for
//!   authentication: [`auth`] takes their contents as arguments.
//! - Timers other than the server's handshake deadline: the test duration,
//!   the server watchdog, `--rcv-timeout` and 3.15+ control-read timeouts are
//!   kept by the driver, which has the clock.
//! - Per-interval statistics and the `-J` report.
//! - Matching results to streams by ID (error 208) and stream bookkeeping.
#![forbid(unsafe_code)]

pub mod auth;
pub mod client;
pub mod cookie;
pub mod detect;
mod error;
pub mod framing;
mod input;
pub mod iperf2;
mod lenient;
pub mod nuttcp;
pub mod params;
pub mod results;
pub mod rr;
pub mod server;
pub mod state;
pub mod tool;
pub mod udp;

#[cfg(test)]
mod capture;
#[cfg(test)]
mod pair;

pub use client::{ClientControl, ClientEvent, ClientLimits, ClientPhase};
pub use cookie::Cookie;
pub use error::ProtoError;
pub use framing::MAX_JSON_LEN;
pub use params::{ParamError, PlumbParams, Protocol, TestParams};
pub use results::{CpuTimes, PlumbResults, PlumbStreamInfo, Results, StreamResult, TcpInfoSummary};
pub use server::{ServerControl, ServerEvent, ServerLimits, ServerPhase};
pub use state::State;
pub use udp::{UdpHeader, UdpReceiver, UdpStats};

/// The ID of the data stream created (client) or accepted (server) at
/// `index`, counting from 0: 1, 3, 4, 5, … — iperf3 skips 2 (§3.4), and
/// results are matched by these IDs.
pub fn stream_id(index: usize) -> u32 {
    match index {
        0 => 1,
        n => u32::try_from(n).map_or(u32::MAX, |n| n.saturating_add(2)),
    }
}

/// The creation index of the stream with this ID, if any stream has it.
pub fn stream_index(id: u32) -> Option<usize> {
    match id {
        1 => Some(0),
        0 | 2 => None,
        n => usize::try_from(n - 2).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_ids_skip_two() {
        let ids: Vec<u32> = (0..6).map(stream_id).collect();
        assert_eq!(ids, [1, 3, 4, 5, 6, 7]);
        for (index, id) in ids.iter().enumerate() {
            assert_eq!(stream_index(*id), Some(index));
        }
        assert_eq!(stream_index(2), None);
        assert_eq!(stream_index(0), None);
        assert_eq!(stream_id(usize::MAX), u32::MAX);
    }
}
