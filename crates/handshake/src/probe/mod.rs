//! The I/O of `plumb handshake`: the TCP handshake of any service, read
//! from here with nothing installed there — which options the peer offers
//! (window scaling and its shift, SACK, timestamps, ECN), its MSS and
//! initial window, and each handshake's RTT.
//!
//! Two ways to read it, chosen by privilege:
//! - [`Method::Syn`] (`CAP_NET_RAW`, IPv4 or IPv6): a SYN with every option from a
//!   raw socket ([`crate::wire`] builds it, `raw` sends it); the
//!   SYN-ACK shows what the peer offers, whatever this host's sysctls.
//! - [`Method::Connect`]: `connect()` and `TCP_INFO`; it shows what the two
//!   ends negotiated, and an option this host does not offer is unknown.
//!
//! What was seen leaves as an [`Observed`], which [`crate::meaning`] and
//! [`crate::document`] put in words; nothing here formats.
//!
//! No data is sent; each target gets `count` handshakes (a lost one is
//! tried again, at most `attempts` times in all, `timeout` each).

pub mod error;

mod connect;
mod raw;
mod sysctls;

pub use error::HandshakeError;

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use crate::caveat::Caveat;
use crate::document::Observed;
use crate::wire;
use plumb_record::handshake::Method;
use plumb_record::handshake::Offer;

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

/// Reads `addr`'s handshake `p.count` times.
pub fn handshake(addr: SocketAddr, p: &Probe) -> Result<Observed, HandshakeError> {
    let caveat = match (p.method, addr) {
        (Some(Method::Connect), _) => Caveat::ConnectAsked,
        (_, addr) => match raw::RawProbe::open(addr) {
            Ok(probe) => return by_syn(&probe, p),
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                if p.method == Some(Method::Syn) {
                    return Err(HandshakeError::NoRawSocket);
                }
                Caveat::NoRawSocket
            }
            Err(e) => return Err(e.into()),
        },
    };
    by_connect(addr, p, caveat)
}

fn by_syn(probe: &raw::RawProbe, p: &Probe) -> Result<Observed, HandshakeError> {
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
    let syn_ack = seg.facts();
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
    Ok(Observed {
        method: Method::Syn,
        rtts,
        ttl: Some(seg.ttl),
        offer,
        syn_ack: Some(syn_ack),
        caveats: Vec::new(),
    })
}

fn by_connect(addr: SocketAddr, p: &Probe, why: Caveat) -> Result<Observed, HandshakeError> {
    let sysctls = sysctls::read();
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
    let mut caveats = vec![why];
    caveats.extend(unknown);
    caveats.push(Caveat::NoOsGuess);
    Ok(Observed {
        method: Method::Connect,
        rtts,
        ttl: None,
        offer,
        syn_ack: None,
        caveats,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
