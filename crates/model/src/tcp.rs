//! TCP throughput bounds: the bandwidth-delay product, the window limit, window
//! scaling and the Mathis loss limit.

use crate::units::{Bytes, LossRate, Rate, Rtt};

/// The largest receive window TCP can advertise without window scaling: the
/// 16-bit window field (RFC 793 §3.1).
pub const MAX_UNSCALED_WINDOW: Bytes = Bytes(65_535);

/// The largest window with RFC 7323 window scaling: shift ≤ 14 bounds it at 2³⁰ B
/// (RFC 7323 §2.3).
pub const MAX_SCALED_WINDOW: Bytes = Bytes(1 << 30);

/// The largest window-scale shift RFC 7323 §2.3 allows.
pub const MAX_WINDOW_SHIFT: u8 = 14;

/// Mathis et al.'s constant C = √(3/2) for periodic loss with delayed ACKs off
/// ("The Macroscopic Behavior of the TCP Congestion Avoidance Algorithm",
/// CCR 27(3), 1997, eq. 3).
pub const MATHIS_C: f64 = 1.224_744_871_391_589;

/// A bandwidth-delay product: how much data is in flight on a full pipe.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bdp {
    /// Bits in flight: rate × RTT.
    pub bits: f64,
}

impl Bdp {
    /// Bytes in flight (may be fractional).
    pub fn bytes(self) -> f64 {
        self.bits / 8.0
    }
    /// Whole bytes, rounded up: a window must be at least this large to fill the pipe.
    pub fn ceil_bytes(self) -> Bytes {
        Bytes(self.bytes().ceil() as u64)
    }
}

/// BDP = rate × RTT (RFC 1072 §1, "long fat pipes").
pub fn bdp(rate: Rate, rtt: Rtt) -> Bdp {
    Bdp {
        bits: rate.bps() * rtt.secs(),
    }
}

/// The most one TCP stream can carry with at most `window` unacknowledged bytes:
/// one window per round trip (RFC 1323 §1.1; RFC 6349 §3.3.1).
pub fn window_limited_rate(window: Bytes, rtt: Rtt) -> Rate {
    // Invariant: window ≥ 1 B (Bytes::parse refuses 0) and rtt > 0, so the rate is > 0.
    Rate::from_bps(window.bits() / rtt.secs()).unwrap_or_else(tiny_rate)
}

fn tiny_rate() -> Rate {
    // Only reached for a zero window, which the parsers refuse.
    Rate::from_bps(f64::MIN_POSITIVE)
        .unwrap_or_else(|| unreachable!("MIN_POSITIVE is a valid rate"))
}

/// The window one stream needs to carry `rate` over `rtt`: the BDP, rounded up.
pub fn window_needed(rate: Rate, rtt: Rtt) -> Bytes {
    bdp(rate, rtt).ceil_bytes()
}

/// How many parallel streams of `window` bytes each carry `rate` over `rtt`:
/// ⌈BDP / window⌉.
pub fn streams_needed(rate: Rate, rtt: Rtt, window: Bytes) -> u64 {
    let n = (bdp(rate, rtt).bytes() / window.get() as f64).ceil();
    n.max(1.0) as u64
}

/// Whether `window` can be advertised without RFC 7323 window scaling.
pub fn needs_scaling(window: Bytes) -> bool {
    window > MAX_UNSCALED_WINDOW
}

/// The smallest window-scale shift that can advertise `window`, or `None` when
/// even the largest shift (14) cannot (RFC 7323 §2.3). With shift 14 the field
/// reaches 65,535 × 2¹⁴ = 1,073,725,440 B, just under the nominal 2³⁰.
pub fn window_shift(window: Bytes) -> Option<u8> {
    (0..=MAX_WINDOW_SHIFT).find(|s| (MAX_UNSCALED_WINDOW.get() << s) >= window.get())
}

/// Loss-limited rate of one Reno/CUBIC-like stream (Mathis et al. 1997):
/// MSS / RTT × C / √p.
///
/// It models loss-based congestion control in congestion avoidance: it holds for
/// Reno and, roughly, for CUBIC at moderate BDPs; it does **not** hold for BBR,
/// which does not treat random loss as congestion.
pub fn mathis_rate(mss: Bytes, rtt: Rtt, loss: LossRate) -> Rate {
    let bps = mss.bits() / rtt.secs() * MATHIS_C / loss.probability().sqrt();
    Rate::from_bps(bps).unwrap_or_else(tiny_rate)
}

/// The loss rate at which Mathis caps one stream at `rate`: the inverse of
/// [`mathis_rate`], p = (MSS × C / (RTT × rate))².
pub fn loss_for_rate(mss: Bytes, rtt: Rtt, rate: Rate) -> f64 {
    let x = mss.bits() * MATHIS_C / (rtt.secs() * rate.bps());
    x * x
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(s: &str) -> Rate {
        Rate::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }
    fn rtt(s: &str) -> Rtt {
        Rtt::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn backup_scenario_window_limit() {
        // 17,520 B × 8 / 15 ms = 9.344 Mbit/s.
        let r = window_limited_rate(Bytes(17_520), rtt("15ms"));
        assert!((r.bps() - 9_344_000.0).abs() < 1e-6, "{}", r.bps());
        assert_eq!(streams_needed(rate("1G"), rtt("15ms"), Bytes(17_520)), 108);
        assert_eq!(window_needed(rate("1G"), rtt("15ms")), Bytes(1_875_000));
    }

    #[test]
    fn unscaled_window_at_100ms() {
        let r = window_limited_rate(Bytes(65_535), rtt("100ms"));
        assert!((r.bps() / 1e6 - 5.2428).abs() < 1e-4, "{}", r.bps());
        let r = window_limited_rate(Bytes(65_536), rtt("100ms"));
        assert_eq!(format!("{:.2}", r.bps() / 1e6), "5.24");
    }

    #[test]
    fn bdp_figures() {
        assert_eq!(
            bdp(rate("10Mbit"), rtt("100ms")).ceil_bytes(),
            Bytes(125_000)
        );
        assert_eq!(
            bdp(rate("1Gbit"), rtt("10ms")).ceil_bytes(),
            Bytes(1_250_000)
        );
        assert!((bdp(rate("1Gbit"), rtt("10ms")).bits - 10e6).abs() < 1e-6);
    }

    #[test]
    fn scaling() {
        assert!(!needs_scaling(Bytes(65_535)));
        assert!(needs_scaling(Bytes(65_536)));
        assert_eq!(window_shift(Bytes(65_535)), Some(0));
        assert_eq!(window_shift(Bytes(1_875_000)), Some(5));
        assert_eq!(window_shift(Bytes(65_535 << 14)), Some(14));
        assert_eq!(window_shift(Bytes((65_535 << 14) + 1)), None);
    }

    #[test]
    fn mathis_figure() {
        // MSS 1460, RTT 100 ms, p = 0.01 % → 1460·8/0.1 · 1.2247/0.01 ≈ 14.3 Mbit/s.
        let p = LossRate::parse("0.01%").unwrap_or_else(|e| panic!("{e}"));
        let r = mathis_rate(Bytes(1460), rtt("100ms"), p);
        assert!((r.bps() / 1e6 - 14.305).abs() < 0.001, "{}", r.bps());
        let back = loss_for_rate(Bytes(1460), rtt("100ms"), r);
        assert!((back - 1e-4).abs() < 1e-12);
    }
}
