//! One target's handshake as the `-J` document gives it (`plumb-record`'s
//! [`Handshake`]), assembled from what the probe observed ([`Observed`]):
//! the RTTs summarised, the meaning and the caveats put in words.

use std::net::SocketAddr;
use std::time::Duration;

use plumb_model::Rtt;
use plumb_record::handshake::{Handshake, Method, Offer};

use crate::caveat::Caveat;
use crate::meaning::meaning;
use crate::os::{guess, SynFacts};

/// What a probe of one target observed, before it is put in words.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// How it was read.
    pub method: Method,
    /// Each handshake's RTT.
    pub rtts: Vec<Duration>,
    /// The SYN-ACK's TTL (SYN path only).
    pub ttl: Option<u8>,
    /// What the peer offers (or what was negotiated).
    pub offer: Offer,
    /// What the first SYN-ACK showed of its sender (SYN path only).
    pub syn_ack: Option<SynFacts>,
    /// What the reading cannot show.
    pub caveats: Vec<Caveat>,
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

/// The document's entry for `target` (as the user gave it), reached at `address`.
pub fn entry(target: &str, address: SocketAddr, o: Observed) -> Handshake {
    let (rtt_min_ms, rtt_median_ms) = min_median_ms(&o.rtts).unwrap_or((0.0, 0.0));
    // Microseconds are all a user-space clock around a handshake resolves.
    let us = |ms: f64| (ms * 1e3).round() / 1e3;
    // A loopback handshake can take under a microsecond of wall time.
    let rtt = Rtt::from_ms(rtt_min_ms.max(0.001)).unwrap_or_else(|| unreachable!("positive"));
    Handshake {
        target: target.to_string(),
        address: address.to_string(),
        method: o.method,
        shows: match o.method {
            Method::Syn => "offered",
            Method::Connect => "negotiated",
        }
        .to_string(),
        handshakes: o.rtts.len(),
        rtt_min_ms: us(rtt_min_ms),
        rtt_median_ms: us(rtt_median_ms),
        ttl: o.ttl,
        offer: o.offer,
        os_guess: o.syn_ack.as_ref().map(guess),
        meaning: meaning(&o.offer, rtt, address.is_ipv6()),
        notes: o.caveats.iter().map(Caveat::text).collect(),
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
    fn an_entry_says_what_it_shows_and_rounds_to_the_microsecond() {
        let o = Observed {
            method: Method::Connect,
            rtts: vec![Duration::from_nanos(15_123_456), Duration::from_millis(16)],
            ttl: None,
            offer: Offer {
                window_scaling: None,
                wscale: None,
                sack: Some(true),
                timestamps: Some(true),
                ecn: None,
                mss: Some(1460),
                initial_window: Some(65_160),
            },
            syn_ack: None,
            caveats: vec![Caveat::NoRawSocket],
        };
        let h = entry("nas:445", "198.18.0.2:445".parse().expect("addr"), o);
        assert_eq!((h.shows.as_str(), h.handshakes), ("negotiated", 2));
        assert_eq!(h.rtt_min_ms, 15.123);
        assert_eq!(h.rtt_median_ms, 15.562);
        assert_eq!(h.notes.len(), 1);
        assert!(h.notes[0].contains("CAP_NET_RAW"));
        assert_eq!(h.os_guess, None);
    }
}
