//! The link and target figures of one answer ([`Figures`]): `plumb-diagnose`
//! computes them once, from the evidence and then from the primary finding,
//! so that the summary, the windows and streams needed and every "expect
//! about" agree.
//!
//! They are defined as `plumb calc` defines them: the window needed is the
//! bandwidth-delay product, line rate × RTT, and the streams needed are the
//! line rate over one stream's rate, so the model, a test and `calc` give
//! one answer for one path.

use serde::{Deserialize, Serialize};

/// The link and target figures of one answer, computed once so that the
/// summary, the windows and streams needed and every "expect about" agree.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Figures {
    /// The link's line rate, bit/s.
    pub link_bps: Option<f64>,
    /// What the link carries as TCP payload in full-size segments, bit/s.
    pub goodput_bps: Option<f64>,
    /// `goodput_bps` is the test's best interval, a lower bound on the link:
    /// no window, streams or expectation is derived from it.
    pub goodput_is_lower_bound: bool,
    /// Payload bytes of a full-size segment behind `goodput_bps`.
    pub segment_payload: u64,
    /// The RTT reasoned with, seconds.
    pub rtt_s: Option<f64>,
    /// The window one stream needs to fill the link: the bandwidth-delay
    /// product, the line rate `link_bps` over `rtt_s` (as `plumb calc`).
    pub window_needed_bytes: Option<u64>,
    /// The TCP payload the link carries in one round trip, `goodput_bps`
    /// over `rtt_s`: what the window needed holds beside its headers.
    pub window_goodput_bytes: Option<u64>,
    /// The buffer ceiling to set: twice the window needed (ESnet's margin),
    /// at least 4 MiB.
    pub buffer_bytes: Option<u64>,
    /// What one stream gets today under the primary limit (and any other
    /// binding one), bit/s.
    pub per_stream_bps: Option<f64>,
    /// Streams of `per_stream_bps` that together reach the line rate
    /// (⌈`link_bps` / `per_stream_bps`⌉, as `plumb calc`), when today's
    /// streams carry less than the goodput.
    pub streams_needed: Option<u64>,
    /// What to expect once the primary limit is gone: the goodput, or the
    /// next binding limit's prediction when lower, bit/s.
    pub expect_bps: Option<f64>,
}

impl Figures {
    /// The streams of `per_stream_bps` that reach the line rate, as
    /// `plumb calc` counts them, when `n` streams carry less than the
    /// link's goodput today and more than `n` are needed; `None` without a
    /// known link or a per-stream rate.
    pub fn streams(&self, n: f64) -> Option<u64> {
        let known_link = self.goodput_bps.filter(|_| !self.goodput_is_lower_bound)?;
        let per_stream = self.per_stream_bps?;
        if per_stream * n >= known_link * (1.0 - 1e-9) {
            return None;
        }
        let line = self.link_bps.unwrap_or(known_link);
        Some((line / per_stream).ceil().max(1.0) as u64).filter(|k| *k as f64 > n)
    }
}
