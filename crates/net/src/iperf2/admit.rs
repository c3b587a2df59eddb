//! Whether and for how long plumb's server answers an iperf 2 test: the
//! operator's `--allow/--deny` and limits, and the kinds of iperf 2 test
//! it answers, checked on the test header; and the deadline that bounds
//! every test, however it was asked.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use plumb_proto::iperf2::{Amount, Mode, TestHeader};

use crate::config::ServerConfig;

/// How long the gate waits on the UDP socket before it looks at the
/// listener, the signals and the flows' clocks again.
pub(crate) const GATE_TICK: Duration = Duration::from_millis(20);
/// How long past its announced end a test may run before it is cut off.
pub(crate) const GRACE: Duration = Duration::from_secs(10);

/// Whether the server answers `h` from `peer`: the reason in one line if not.
pub(crate) fn admit(cfg: &ServerConfig, peer: SocketAddr, h: &TestHeader) -> Result<(), String> {
    if !cfg.access.permits(peer.ip()) {
        return Err("refused by --allow/--deny".into());
    }
    let what = match h.mode() {
        Mode::Normal | Mode::Reverse => None,
        Mode::Dual => {
            Some("iperf 2's dual test (-d) needs the server to connect back; not answered")
        }
        Mode::Tradeoff => {
            Some("iperf 2's tradeoff test (-r) needs the server to connect back; not answered")
        }
        Mode::FullDuplex => Some("iperf 2's --full-duplex test is not answered"),
        Mode::BounceBack => Some("iperf 2's --bounceback test is not answered"),
        Mode::Keyed => Some("iperf 2's --permit-key is not supported"),
    };
    if let Some(w) = what {
        return Err(format!("refused: {w}"));
    }
    let l = &cfg.limits;
    if let (Some(max), Amount::Time(t)) = (l.max_duration, h.amount) {
        if t > max {
            return Err(format!(
                "refused: a {:.1} s test is longer than the server's maximum of {:.1} s",
                t.as_secs_f64(),
                max.as_secs_f64()
            ));
        }
    }
    if l.max_parallel.is_some_and(|m| h.threads > m) {
        return Err(format!(
            "refused: {} parallel streams is over the server's limit",
            h.threads
        ));
    }
    if l.max_bitrate.is_some_and(|m| h.rate > m) {
        return Err(format!(
            "refused: {} bit/s is over the server's rate limit",
            h.rate
        ));
    }
    Ok(())
}

/// When a test from `h` must be over, however it was asked: its time and
/// [`GRACE`], no later than `--max-duration` allows.
pub(crate) fn deadline(cfg: &ServerConfig, h: &TestHeader, start: Instant) -> Instant {
    let asked = match h.amount {
        Amount::Time(t) => t,
        Amount::Bytes(_) => Duration::from_secs(3600),
    };
    let cap = cfg
        .limits
        .max_duration
        .unwrap_or(Duration::from_secs(86_400));
    start + asked.min(cap) + GRACE
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::IpPrefix;
    use plumb_proto::iperf2::{flags, upper};

    fn header(flags: u32, upper: u16, secs: u64) -> TestHeader {
        let mut h = TestHeader::client(
            false,
            false,
            2,
            5001,
            Amount::Time(Duration::from_secs(secs)),
        );
        h.flags |= flags;
        h.upper |= upper;
        h
    }

    #[test]
    fn admission_refuses_in_one_line() {
        let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap_or_else(|e| panic!("{e}"));
        let mut cfg = ServerConfig::default();
        assert_eq!(admit(&cfg, peer, &header(0, 0, 10)), Ok(()));
        let cases = [
            (
                header(flags::VERSION1 | flags::RUN_NOW, 0, 1),
                "dual test (-d)",
            ),
            (header(flags::VERSION1, 0, 1), "tradeoff test (-r)"),
            (
                header(flags::VERSION2, upper::FULLDUPLEX, 1),
                "--full-duplex",
            ),
            (header(flags::BOUNCEBACK, 0, 1), "--bounceback"),
            (header(flags::KEYCHECK, 0, 1), "--permit-key"),
        ];
        for (h, want) in cases {
            let why = admit(&cfg, peer, &h).err().unwrap_or_default();
            assert!(why.contains(want) && !why.contains('\n'), "{why}");
        }
        cfg.limits.max_duration = Some(Duration::from_secs(5));
        cfg.limits.max_parallel = Some(1);
        let why = admit(&cfg, peer, &header(0, 0, 10))
            .err()
            .unwrap_or_default();
        assert!(why.contains("longer than the server's maximum"), "{why}");
        let why = admit(&cfg, peer, &header(0, 0, 2))
            .err()
            .unwrap_or_default();
        assert!(why.contains("parallel streams"), "{why}");
        cfg.limits = Default::default();
        cfg.limits.max_bitrate = Some(1000);
        let mut fast = header(0, 0, 2);
        fast.rate = 1001;
        assert!(admit(&cfg, peer, &fast).is_err_and(|w| w.contains("rate limit")));
        cfg.limits = Default::default();
        cfg.access.deny = vec![IpPrefix::parse("127.0.0.0/8").unwrap_or_else(|e| panic!("{e}"))];
        assert!(admit(&cfg, peer, &header(0, 0, 2)).is_err_and(|w| w.contains("--allow/--deny")));
    }

    #[test]
    fn deadlines_are_capped() {
        let mut cfg = ServerConfig::default();
        let t0 = Instant::now();
        assert_eq!(
            deadline(&cfg, &header(0, 0, 3), t0),
            t0 + Duration::from_secs(3) + GRACE
        );
        cfg.limits.max_duration = Some(Duration::from_secs(1));
        assert_eq!(
            deadline(&cfg, &header(0, 0, 3), t0),
            t0 + Duration::from_secs(1) + GRACE
        );
    }
}
