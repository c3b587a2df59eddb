//! The sections of a run on the page, top to bottom ([`PANELS`]). Each is a
//! [`Panel`]: a function of the typed [`Document`] that returns nothing
//! when the document holds nothing for it, so a new kind of result is one
//! more entry here.

pub mod config;
pub mod latency;
pub mod live;
pub mod missing;
pub mod verdict;

use super::charts::{limited_chart, retransmit_chart, rtt_chart, throughput_chart, window_chart};
use super::extract::Document;

/// One section of a run: its HTML, or nothing when the document holds
/// nothing for it.
pub type Panel = fn(&Document) -> Option<String>;

/// The sections of a run, top to bottom. A new kind of result is one more
/// entry here.
pub const PANELS: &[Panel] = &[
    verdict::error_panel,
    verdict::verdict_panel,
    live::live_panel,
    |d| d.top.as_ref().map(crate::top::panel),
    |d| throughput_chart(&d.run).map(|c| c.to_html()),
    |d| window_chart(&d.run).map(|c| c.to_html()),
    |d| rtt_chart(&d.run).map(|c| c.to_html()),
    |d| retransmit_chart(&d.run).map(|c| c.to_html()),
    |d| limited_chart(&d.run).map(|c| c.to_html()),
    latency::latency_panel,
    missing::missing_panel,
    config::config_panel,
];
