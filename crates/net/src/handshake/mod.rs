//! `plumb handshake`: the TCP handshake of any service, read from here with
//! nothing installed there — which options the peer offers (window scaling
//! and its shift, SACK, timestamps, ECN), its MSS and initial window, the
//! handshake's RTT, and what they mean for a transfer.
//!
//! Two ways to read it, chosen by privilege:
//! - [`Method::Syn`] (`CAP_NET_RAW`, IPv4): a SYN with every option from a
//!   raw socket ([`wire`] builds it, `raw` sends it); the SYN-ACK shows what
//!   the peer offers, whatever this host's sysctls.
//! - [`Method::Connect`]: `connect()` and `TCP_INFO`; it shows what the two
//!   ends negotiated, and an option this host does not offer is unknown.
//!
//! No data is sent; each target gets `count` handshakes (a lost one is
//! tried again, at most `attempts` times in all, `timeout` each).

pub mod document;
pub mod error;
pub mod meaning;
pub mod target;
pub mod wire;

mod connect;
mod raw;

pub use document::{Handshake, Method, Offer};
pub use error::HandshakeError;

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use plumb_model::Rtt;

/// How to probe.
#[derive(Debug, Clone, Copy)]
pub struct Probe {
    /// Handshakes per target.
    pub count: usize,
    /// How long to wait for each SYN-ACK.
    pub timeout: Duration,
    /// Tries in all per handshake before giving up.
    pub attempts: usize,
    /// The method to use; `None` picks the SYN path where it can.
    pub method: Option<Method>,
}

impl Default for Probe {
    fn default() -> Self {
        Probe {
            count: 3,
            timeout: Duration::from_secs(1),
            attempts: 3,
            method: None,
        }
    }
}

/// The fastest and the median of RTT samples, in ms (`None` when empty).
pub fn min_median_ms(samples: &[Duration]) -> Option<(f64, f64)> {
    let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    let n = ms.len();
    let median = match n {
        0 => return None,
        _ if n % 2 == 1 => ms[n / 2],
        _ => (ms[n / 2 - 1] + ms[n / 2]) / 2.0,
    };
    Some((ms[0], median))
}

/// Resolves `host` to the address to probe (IPv4 first: the SYN path's).
pub fn resolve(host: &str, port: u16) -> Result<SocketAddr, HandshakeError> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|_| HandshakeError::Resolve(host.to_string()))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| HandshakeError::Resolve(host.to_string()))
}

/// Runs `f` until it gives a sample, at most `p.attempts` times.
fn retried<T>(
    p: &Probe,
    mut f: impl FnMut(u32) -> Result<Option<T>, HandshakeError>,
) -> Result<T, HandshakeError> {
    for attempt in 0..p.attempts.max(1) {
        if let Some(v) = f(attempt as u32)? {
            return Ok(v);
        }
    }
    Err(HandshakeError::Timeout)
}

/// A sequence number no earlier probe of this process used.
fn fresh_seq(i: u32) -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    nanos ^ std::process::id().rotate_left(16) ^ i.wrapping_mul(0x9e37_79b9)
}

/// Reads `addr`'s handshake `p.count` times; `target` names it in the result.
pub fn handshake(target: &str, addr: SocketAddr, p: &Probe) -> Result<Handshake, HandshakeError> {
    let mut notes = Vec::new();
    if p.method != Some(Method::Connect) {
        match addr {
            SocketAddr::V4(v4) => match raw::RawProbe::open(v4) {
                Ok(probe) => return by_syn(target, addr, &probe, p),
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                    if p.method == Some(Method::Syn) {
                        return Err(HandshakeError::NoRawSocket);
                    }
                    notes.push("without CAP_NET_RAW (root) it connects and reads TCP_INFO: this shows what was negotiated (both ends' settings combined), not what the peer offers".to_string());
                }
                Err(e) => return Err(e.into()),
            },
            SocketAddr::V6(_) => {
                if p.method == Some(Method::Syn) {
                    return Err(io::Error::other("the raw SYN path is IPv4 only").into());
                }
                notes.push("the raw SYN path is IPv4 only: over IPv6 it connects and reads TCP_INFO, which shows what was negotiated (both ends' settings combined), not what the peer offers".to_string());
            }
        }
    }
    by_connect(target, addr, p, notes)
}

fn by_syn(
    target: &str,
    addr: SocketAddr,
    probe: &raw::RawProbe,
    p: &Probe,
) -> Result<Handshake, HandshakeError> {
    let mut rtts = Vec::new();
    let mut first = None;
    for i in 0..p.count.max(1) {
        let (rtt, seg) = retried(p, |a| probe.one(fresh_seq(i as u32 * 8 + a), p.timeout))?;
        rtts.push(rtt);
        first.get_or_insert(seg);
    }
    let Some(seg) = first else {
        return Err(HandshakeError::Timeout);
    };
    let o = seg.options;
    let offer = Offer {
        window_scaling: Some(o.wscale.is_some()),
        wscale: o.wscale,
        sack: Some(o.sack_permitted),
        timestamps: Some(o.timestamps.is_some()),
        ecn: Some(seg.flags & (wire::ECE | wire::CWR) == wire::ECE),
        mss: o.mss.map(u32::from),
        initial_window: Some(seg.window.into()),
    };
    Ok(finish(
        target,
        addr,
        Method::Syn,
        &rtts,
        Some(seg.ttl),
        offer,
        Vec::new(),
    ))
}

fn by_connect(
    target: &str,
    addr: SocketAddr,
    p: &Probe,
    mut notes: Vec<String>,
) -> Result<Handshake, HandshakeError> {
    let sysctls = crate::host::tcp_sysctls();
    let mut rtts = Vec::new();
    let mut first = None;
    for _ in 0..p.count.max(1) {
        let (rtt, info) = retried(p, |_| match connect::one(addr, p.timeout) {
            Ok(v) => Ok(Some(v)),
            Err(HandshakeError::Timeout) => Ok(None),
            Err(e) => Err(e),
        })?;
        rtts.push(rtt);
        first.get_or_insert(info);
    }
    let Some(info) = first else {
        return Err(HandshakeError::Timeout);
    };
    let (offer, unknown) = connect::offer_of(&info, &sysctls);
    notes.extend(unknown);
    Ok(finish(
        target,
        addr,
        Method::Connect,
        &rtts,
        None,
        offer,
        notes,
    ))
}

fn finish(
    target: &str,
    addr: SocketAddr,
    method: Method,
    rtts: &[Duration],
    ttl: Option<u8>,
    offer: Offer,
    notes: Vec<String>,
) -> Handshake {
    let (rtt_min_ms, rtt_median_ms) = min_median_ms(rtts).unwrap_or((0.0, 0.0));
    // Microseconds are all a user-space clock around a handshake resolves.
    let us = |ms: f64| (ms * 1e3).round() / 1e3;
    // A loopback handshake can take under a microsecond of wall time.
    let rtt = Rtt::from_ms(rtt_min_ms.max(0.001)).unwrap_or_else(|| unreachable!("positive"));
    Handshake {
        target: target.to_string(),
        address: addr.to_string(),
        method,
        shows: match method {
            Method::Syn => "offered",
            Method::Connect => "negotiated",
        },
        handshakes: rtts.len(),
        rtt_min_ms: us(rtt_min_ms),
        rtt_median_ms: us(rtt_median_ms),
        ttl,
        offer,
        meaning: meaning::meaning(&offer, rtt, addr.is_ipv6()),
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_and_median_of_odd_and_even_counts() {
        let ms = |v: &[u64]| {
            v.iter()
                .map(|&m| Duration::from_millis(m))
                .collect::<Vec<_>>()
        };
        assert_eq!(min_median_ms(&ms(&[17, 15, 30])), Some((15.0, 17.0)));
        assert_eq!(min_median_ms(&ms(&[16, 15, 30, 18])), Some((15.0, 17.0)));
        assert_eq!(min_median_ms(&[]), None);
    }

    #[test]
    fn a_lost_syn_is_tried_again_and_then_given_up() {
        let p = Probe::default();
        let mut tries = 0;
        let got = retried(&p, |a| {
            tries += 1;
            Ok((a == 2).then_some(a))
        });
        assert_eq!(got.ok(), Some(2));
        assert_eq!(tries, 3);
        let never: Result<(), _> = retried(&p, |_| Ok(None));
        assert!(matches!(never, Err(HandshakeError::Timeout)));
    }
}
