//! `plumb top --json` logs on the page: the connections over time.
//!
//! A top log is NDJSON, one object per connection per interval (`interval`,
//! `local`, `remote`, `pid`, `command`, `direction`, `rate_bps`, `rtt_ms`,
//! `cwnd_bytes`, `window_bytes`, `retransmits`, `limit`, `congestion`, as
//! `plumb top`'s `write_json` writes them). [`crate::input::top_log`] tells
//! such a log from a `--json-stream` log and [`crate::input::top_line`]
//! reads each line into a typed row, and the rows ride in the document
//! (`top_rows`) to the page; [`log`] keeps the [`MAX_DRAWN`] busiest
//! connections by data moved with all their readings and counts the rest.
//! The result, [`TopData`] ([`data`]), is what [`panel`] draws: a table, throughput, RTT and windows over time
//! ([`charts`]), and the limit named per interval. [`table`] is the live
//! command's own table, a line per connection.

pub mod charts;
pub mod data;
pub mod log;
mod panel;
pub mod table;

pub use crate::input::top_log::{document_from_top, is_top_doc, is_top_log, top_data};
pub use charts::{limit_strip, rtt_chart, steps, throughput_chart, window_chart};
pub use data::{Sample, TopConn, TopData, MAX_DRAWN};
pub use log::{read_rows, read_top, summarize};
pub use panel::panel;
