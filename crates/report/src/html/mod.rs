//! The HTML report: one self-contained page from one or more `-J` documents.
//!
//! It draws the documents [`crate::input`] reads: the `-J` documents the
//! `-J` sink writes (plumb's, or a stock iperf3's, optionally with the
//! `diagnosis`, `model` and `lab` objects `plumb why`/`plumb lab` add),
//! `plumb why` on running connections, and `plumb top --json` logs
//! ([`crate::top`]). The work is in four parts:
//!
//! - [`extract`] reads a document's types into the [`Document`] the page
//!   draws: the series over time ([`RunData`]), latency, the verdict,
//!   running connections, the test's configuration.
//! - [`charts`] draws the charts of a run from those series.
//! - [`panels`] holds the sections of a run, top to bottom ([`PANELS`]).
//! - [`page`] puts them on one page, with the comparison of several tests.
//!
//! Packet captures have pages of their own ([`capture`]): per TCP flow, the
//! time-sequence graph, throughput, RTT and window.

pub mod capture;
pub mod charts;
pub mod extract;
pub mod page;
pub mod panels;
mod style;

pub use charts::{
    compare_chart, latency_chart, latency_interval_chart, limited_chart, retransmit_chart,
    rtt_chart, throughput_chart, window_chart,
};
pub use extract::bad::BadDocument;
pub use extract::config::{Config, Hosts, Lab};
pub use extract::diagnosis::{Diagnosis, Evidence, Fix};
pub use extract::latency::{
    distribution_ms, distribution_us, latency, Distribution, Figure, Latency, LatencyKind,
};
pub use extract::live::{is_live, live_connections, Live, LiveConn};
pub use extract::series::{run_data, RunData, StreamData};
pub use extract::{Document, Input};
pub use page::render;
pub use panels::{Panel, PANELS};
