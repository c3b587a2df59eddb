//! Numbers in words, as the findings and the lead sentence print them.

use plumb_model::units::{sig, thousands};
use plumb_model::{Bytes, Rate, Rtt};

pub(crate) fn mbps(bps: f64) -> String {
    Rate::from_bps(bps).map_or_else(|| "0 bit/s".into(), Rate::human)
}

pub(crate) fn ms(s: f64) -> String {
    Rtt::from_secs(s).map_or_else(|| "? ms".into(), Rtt::human)
}

pub(crate) fn bytes(b: u64) -> String {
    Bytes(b).human()
}

/// A share in percent: a share is never above the whole.
pub(crate) fn pct(share: f64) -> String {
    sig(share.clamp(0.0, 1.0) * 100.0, 2)
}

/// `9.344 Mbit/s` etc., for callers that print findings.
pub fn human_rate(bps: f64) -> String {
    mbps(bps)
}

/// `1,875,000` etc.
pub fn human_count(n: u64) -> String {
    thousands(n)
}

/// Seconds to three significant digits (`0.203`, `13.9`).
pub(crate) fn secs(s: f64) -> String {
    sig(s, 3)
}
