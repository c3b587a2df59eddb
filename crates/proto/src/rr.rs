//! plumb's latency test kinds inside iperf3's control protocol, sans I/O:
//! request/response (`--rr`), connect/request/response (`--crr`) and the
//! probe connection of `--latency`.
//!
//! This module owns their parameters (sent under `plumb.rr` and
//! `plumb.latency` in the parameters JSON, which iperf3 ignores), the limits
//! a server holds them to, the greeting a plumb server writes on each of
//! their connections, and the UDP request/response datagram.
//!
//! A stock iperf3 server ignores the `plumb` key and would run an ordinary
//! test, writing nothing on a data stream the client sends on. So a plumb
//! server greets every request/response connection with [`HELLO`] (and, for
//! CRR, the port of the listener it opened for the test's connections);
//! a client that is not greeted knows the server is no plumb and stops with
//! a message instead of waiting for responses that will never come.

use serde::{Deserialize, Serialize};

/// What a plumb server writes first on a request/response or probe stream.
pub const HELLO: [u8; 8] = *b"plumbRR1";
/// [`HELLO`] plus the big-endian CRR listener port (0 when there is none).
pub const GREETING_LEN: usize = HELLO.len() + 2;

/// Largest TCP request or response, bytes.
pub const MAX_TCP_MESSAGE: u32 = 1 << 20;
/// Largest UDP request or response (one IPv4 datagram).
pub const MAX_UDP_MESSAGE: u32 = 65_507;
/// Smallest UDP request or response: the transaction number.
pub const MIN_UDP_MESSAGE: u32 = 8;
/// Most transactions in flight per stream.
pub const MAX_BURST: u32 = 1024;
/// Longest SO_BUSY_POLL a client may ask the server to spin for, µs: a
/// millisecond of one server core per blocking read, at most.
pub const MAX_BUSY_POLL_US: u32 = 1000;

/// Which latency test a client asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RrMode {
    /// Requests and responses on one long-lived connection per stream.
    #[default]
    Rr,
    /// A new TCP connection per transaction.
    Crr,
}

/// The request/response test a client asks for (`plumb.rr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RrParams {
    /// RR or CRR.
    pub mode: RrMode,
    /// Request size, bytes.
    pub request: u32,
    /// Response size, bytes.
    pub response: u32,
    /// Transactions in flight per stream.
    pub burst: u32,
    /// `--busy-poll`: SO_BUSY_POLL µs for the server's sockets too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_poll_us: Option<u32>,
}

impl Default for RrParams {
    fn default() -> RrParams {
        RrParams {
            mode: RrMode::Rr,
            request: 1,
            response: 1,
            burst: 1,
            busy_poll_us: None,
        }
    }
}

/// Request/response parameters a server will not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RrError {
    /// A request or response size outside what the transport carries.
    #[error("{what} of {size} bytes is outside {min}..={max}")]
    Size {
        /// "request" or "response".
        what: &'static str,
        /// The size asked.
        size: u32,
        /// Smallest allowed.
        min: u32,
        /// Largest allowed.
        max: u32,
    },
    /// A burst outside 1..=[`MAX_BURST`].
    #[error("a burst of {0} transactions is outside 1..={MAX_BURST}")]
    Burst(u32),
    /// CRR over UDP.
    #[error("--crr needs TCP (a UDP transaction opens no connection)")]
    CrrUdp,
    /// A busy-poll time over [`MAX_BUSY_POLL_US`].
    #[error("--busy-poll {0} is over {MAX_BUSY_POLL_US} microseconds")]
    BusyPoll(u32),
}

impl RrParams {
    /// Checks the sizes and burst for `udp` or TCP.
    pub fn validate(&self, udp: bool) -> Result<(), RrError> {
        let (min, max) = if udp {
            (MIN_UDP_MESSAGE, MAX_UDP_MESSAGE)
        } else {
            (1, MAX_TCP_MESSAGE)
        };
        for (what, size) in [("request", self.request), ("response", self.response)] {
            if !(min..=max).contains(&size) {
                return Err(RrError::Size {
                    what,
                    size,
                    min,
                    max,
                });
            }
        }
        if !(1..=MAX_BURST).contains(&self.burst) {
            return Err(RrError::Burst(self.burst));
        }
        if udp && self.mode == RrMode::Crr {
            return Err(RrError::CrrUdp);
        }
        if let Some(us) = self.busy_poll_us.filter(|us| *us > MAX_BUSY_POLL_US) {
            return Err(RrError::BusyPoll(us));
        }
        Ok(())
    }
}

/// The greeting for a stream; `crr_port` is 0 for RR and probe streams.
pub fn greeting(crr_port: u16) -> [u8; GREETING_LEN] {
    let mut g = [0u8; GREETING_LEN];
    g[..HELLO.len()].copy_from_slice(&HELLO);
    g[HELLO.len()..].copy_from_slice(&crr_port.to_be_bytes());
    g
}

/// The CRR port in a greeting, or `None` when `bytes` is no plumb greeting.
pub fn parse_greeting(bytes: &[u8]) -> Option<u16> {
    if bytes.len() != GREETING_LEN || bytes[..HELLO.len()] != HELLO {
        return None;
    }
    Some(u16::from_be_bytes([
        bytes[HELLO.len()],
        bytes[HELLO.len() + 1],
    ]))
}

/// Writes transaction `seq` into the head of a UDP request or response
/// (`buf` at least [`MIN_UDP_MESSAGE`] bytes; the rest is filler).
pub fn put_seq(buf: &mut [u8], seq: u64) {
    if let Some(head) = buf.get_mut(..8) {
        head.copy_from_slice(&seq.to_be_bytes());
    }
}

/// The transaction number of a UDP request or response; `None` for a runt.
pub fn seq_of(datagram: &[u8]) -> Option<u64> {
    let head: [u8; 8] = datagram.get(..8)?.try_into().ok()?;
    Some(u64::from_be_bytes(head))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn limits_follow_the_transport() {
        let ok = RrParams::default();
        assert_eq!(ok.validate(false), Ok(()));
        // One byte cannot carry a UDP transaction number.
        assert!(matches!(ok.validate(true), Err(RrError::Size { .. })));
        let udp = RrParams {
            request: 8,
            response: 65_507,
            ..ok
        };
        assert_eq!(udp.validate(true), Ok(()));
        let big = RrParams {
            response: MAX_TCP_MESSAGE + 1,
            ..ok
        };
        assert!(big.validate(false).is_err());
        assert_eq!(
            RrParams { burst: 0, ..ok }.validate(false),
            Err(RrError::Burst(0))
        );
        let crr = RrParams {
            mode: RrMode::Crr,
            request: 8,
            response: 8,
            ..ok
        };
        assert_eq!(crr.validate(true), Err(RrError::CrrUdp));
        assert_eq!(crr.validate(false), Ok(()));
        let spin = |us| RrParams {
            busy_poll_us: Some(us),
            ..ok
        };
        assert_eq!(spin(MAX_BUSY_POLL_US).validate(false), Ok(()));
        assert_eq!(
            spin(MAX_BUSY_POLL_US + 1).validate(false),
            Err(RrError::BusyPoll(MAX_BUSY_POLL_US + 1))
        );
        // Absent, it is not sent: an older plumb server sees what it knew.
        assert!(!serde_json::to_string(&ok).expect("json").contains("busy"));
    }

    #[test]
    fn greeting_round_trips_and_rejects_strangers() {
        assert_eq!(parse_greeting(&greeting(40_000)), Some(40_000));
        assert_eq!(parse_greeting(&greeting(0)), Some(0));
        assert_eq!(parse_greeting(b"plumbRR2\0\0"), None);
        assert_eq!(parse_greeting(&HELLO), None);
    }

    #[test]
    fn params_decode_tolerantly() {
        let p: RrParams = serde_json::from_str(r#"{"mode":"crr","burst":4,"x":1}"#).expect("ok");
        assert_eq!((p.mode, p.burst, p.request), (RrMode::Crr, 4, 1));
        assert!(serde_json::from_str::<RrParams>(r#"{"mode":"bogus"}"#).is_err());
    }

    proptest! {
        #[test]
        fn sequence_numbers_round_trip(seq in any::<u64>(), pad in 0usize..64) {
            let mut buf = vec![0xAA; 8 + pad];
            put_seq(&mut buf, seq);
            prop_assert_eq!(seq_of(&buf), Some(seq));
        }

        #[test]
        fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..32)) {
            let _ = parse_greeting(&bytes);
            let _ = seq_of(&bytes);
        }
    }
}
