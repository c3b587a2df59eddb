//! The connect path, for a host without `CAP_NET_RAW` (or with `--connect`):
//! an ordinary `connect()`, then `TCP_INFO`. It shows what the two ends
//! negotiated, so an option this host does not offer says nothing of the peer.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use plumb_tcpinfo::{tcp_info, TcpInfo, OPT_ECN, OPT_SACK, OPT_TIMESTAMPS, OPT_WSCALE};

use super::error::HandshakeError;
use crate::caveat::Caveat;
use plumb_record::handshake::Offer;

/// Bytes of every segment the timestamps option takes (10, padded to 12),
/// which `tcpi_snd_mss` leaves out.
const TIMESTAMPS_LEN: u32 = 12;

/// One connect: the time `connect()` took (one round trip) and `TCP_INFO`
/// right after it. The socket closes without sending data.
pub(super) fn one(
    addr: SocketAddr,
    timeout: Duration,
) -> Result<(Duration, TcpInfo), HandshakeError> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    let t0 = Instant::now();
    match sock.connect_timeout(&SockAddr::from(addr), timeout) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
            return Err(HandshakeError::Refused)
        }
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
            ) =>
        {
            return Err(HandshakeError::Timeout)
        }
        Err(e) => return Err(e.into()),
    }
    let rtt = t0.elapsed();
    Ok((rtt, tcp_info(sock.as_fd())?))
}

/// Whether this host offers an option in its own SYN (its sysctl is not "0").
fn offered(sysctls: &BTreeMap<String, String>, name: &str) -> bool {
    sysctls.get(name).map(String::as_str) != Some("0")
}

/// What `TCP_INFO` shows of the peer, given this host's sysctls: an option
/// this host did not ask for is unknown (`None`), with a caveat saying why.
pub(super) fn offer_of(info: &TcpInfo, sysctls: &BTreeMap<String, String>) -> (Offer, Vec<Caveat>) {
    let mut caveats = Vec::new();
    let mut known = |sysctl: &'static str, option: &'static str, bit: u8| {
        if offered(sysctls, sysctl) {
            Some(info.options & bit != 0)
        } else {
            caveats.push(Caveat::NotOffered { option, sysctl });
            None
        }
    };
    let window_scaling = known("net.ipv4.tcp_window_scaling", "window scaling", OPT_WSCALE);
    let sack = known("net.ipv4.tcp_sack", "SACK", OPT_SACK);
    let timestamps = known("net.ipv4.tcp_timestamps", "timestamps", OPT_TIMESTAMPS);
    // Linux asks for ECN only with tcp_ecn = 1 (2, the default, only accepts it).
    let ecn = match sysctls.get("net.ipv4.tcp_ecn").map(String::as_str) {
        Some("1") => Some(info.options & OPT_ECN != 0),
        v => {
            caveats.push(Caveat::EcnNotAsked {
                value: v.map(str::to_string),
            });
            None
        }
    };
    let ts = info.options & OPT_TIMESTAMPS != 0;
    let mss = (info.snd_mss > 0).then(|| info.snd_mss + if ts { TIMESTAMPS_LEN } else { 0 });
    // Linux keeps a segment within half the largest window the peer has
    // shown (tcp_bound_to_half_wnd): with a small SYN-ACK window the MSS in
    // use is that, not the peer's.
    if let (Some(m), Some(w)) = (mss, info.snd_wnd) {
        if w > 0 && m >= w / 2 {
            caveats.push(Caveat::MssHalfWindow { mss: m });
        }
    }
    let offer = Offer {
        window_scaling,
        wscale: window_scaling.filter(|&w| w).map(|_| info.snd_wscale),
        sack,
        timestamps,
        ecn,
        mss,
        initial_window: info.snd_wnd,
    };
    (offer, caveats)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sysctls(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn info(options: u8) -> TcpInfo {
        let raw = plumb_tcpinfo::RawTcpInfo {
            options,
            wscale: 0x77,
            snd_mss: 1448,
            ..Default::default()
        };
        TcpInfo::from_raw(&raw, plumb_tcpinfo::SIZE)
    }

    #[test]
    fn what_this_host_offers_is_read_from_the_connection() {
        let s = sysctls(&[
            ("net.ipv4.tcp_window_scaling", "1"),
            ("net.ipv4.tcp_sack", "1"),
            ("net.ipv4.tcp_timestamps", "1"),
            ("net.ipv4.tcp_ecn", "1"),
        ]);
        let (o, notes) = offer_of(&info(OPT_WSCALE | OPT_TIMESTAMPS), &s);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(o.window_scaling, Some(true));
        assert_eq!(o.wscale, Some(7));
        assert_eq!(
            (o.sack, o.timestamps, o.ecn),
            (Some(false), Some(true), Some(false))
        );
        // 1,448 B of data per segment plus 12 B of timestamps: the peer's 1,460.
        assert_eq!(o.mss, Some(1460));
    }

    #[test]
    fn what_this_host_does_not_offer_is_unknown_with_a_note() {
        let s = sysctls(&[
            ("net.ipv4.tcp_window_scaling", "0"),
            ("net.ipv4.tcp_ecn", "2"),
        ]);
        let (o, notes) = offer_of(&info(OPT_SACK), &s);
        assert_eq!((o.window_scaling, o.wscale, o.ecn), (None, None, None));
        assert_eq!(o.sack, Some(true));
        assert_eq!(o.mss, Some(1448));
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert_eq!(
            notes[0],
            Caveat::NotOffered {
                option: "window scaling",
                sysctl: "net.ipv4.tcp_window_scaling"
            }
        );
        assert_eq!(
            notes[1],
            Caveat::EcnNotAsked {
                value: Some("2".into())
            }
        );
    }

    #[test]
    fn an_mss_at_half_the_peers_window_is_flagged() {
        let raw = plumb_tcpinfo::RawTcpInfo {
            snd_mss: 32_741,
            options: OPT_TIMESTAMPS,
            snd_wnd: 65_483,
            ..Default::default()
        };
        let info = TcpInfo::from_raw(&raw, plumb_tcpinfo::SIZE);
        let s = sysctls(&[("net.ipv4.tcp_ecn", "1")]);
        let (o, notes) = offer_of(&info, &s);
        assert_eq!(o.mss, Some(32_753));
        assert_eq!(o.initial_window, Some(65_483));
        assert!(
            notes.contains(&Caveat::MssHalfWindow { mss: 32_753 }),
            "{notes:?}"
        );
    }
}
