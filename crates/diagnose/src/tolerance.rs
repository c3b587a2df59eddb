//! How far a prediction may stray from the measurement and still explain
//! it, and how much of a test a limit counter must cover to show its limit
//! binding: the bars every rule is weighed against. The bars one rule alone
//! uses (the send buffer's and Mathis's tolerances, the CPU's shares) sit
//! with that rule in [`crate::rules`].

/// How far `measured / predicted` may stray either way (as a factor
/// 1 + TOLERANCE) for a ceiling computed from what TCP reports — window /
/// RTT, the link's goodput, the goodput at a small MSS, an application's
/// rate cap, a congestion window — to explain the measurement. Lab runs
/// that hold one of these by construction (1 Gb/s and 200 Mb/s links,
/// 5–20 ms, 4 s tests on this project's 2-core machine, recorded in
/// `tests/fixtures/lab-*.json`) measured 0.88–1.00 of the prediction: 0.88
/// for `-b 50M`, 0.985–0.999 for 17,520 B windows, 0.992 for full links,
/// 0.996 at MSS 536. A quarter leaves room for slow start
/// and for an RTT that queues inflate during a test, and is still narrow
/// enough that a cause predicting 1.6 times the rate cannot explain it.
pub const TOLERANCE: f64 = 0.25;

/// The share of the test a TCP limit counter (`rwnd_limited`,
/// `sndbuf_limited`, time not busy) must cover to show its limit binding.
/// Linux counts a window or buffer limit only while a send was held back
/// with the congestion window open, so a limit that holds the whole test
/// shows well under 100 %: the recorded lab runs with a 17,520 B window show
/// 32–39 % `rwnd_limited`, a 64 KiB send buffer under bbr 31 %
/// `sndbuf_limited`.
pub const BINDING_SHARE: f64 = 0.3;

/// The share a counter must cover to name its limit when the limit's own
/// prediction contradicts the measurement (the largest window would allow
/// far more than was measured). A third of the test is then not enough:
/// under bbr with 1 % loss an autotuned 4 MiB send buffer counted 31 %
/// `sndbuf_limited` while allowing 2.4 times the measured rate
/// (`tests/fixtures/lab-bbr-loss.json`).
pub const CONTRADICTED_SHARE: f64 = 0.5;

/// Each piece of evidence a finding would have used but the test did not
/// record multiplies its confidence by this.
pub const MISSING_FACTOR: f64 = 0.8;

/// Whether `predicted` explains `measured`: their ratio lies within a
/// factor of 1 + `tolerance` either way.
pub fn explains(measured: f64, predicted: f64, tolerance: f64) -> bool {
    if !(predicted > 0.0 && measured > 0.0) {
        return false;
    }
    let r = measured / predicted;
    r.is_finite() && r <= 1.0 + tolerance && r >= 1.0 / (1.0 + tolerance)
}
