//! Capture pages: per TCP flow of a packet capture, busiest first, its
//! figures, the time-sequence graph Wireshark's tcptrace graph draws (data
//! sent, retransmissions apart, the ACK line, the advertised window's right
//! edge), throughput, RTT and the advertised window over time, and a slot
//! for the flow's verdict. Drawn from `plumb-capture`'s typed evidence and
//! series (asked for with [`plumb_capture::analyze_file_with_series`]),
//! self-contained as the other pages.
//!
//! - [`extract`] turns a connection into the [`Flow`] the page draws.
//! - [`charts`] draws a flow direction's charts.
//! - [`page`] puts the flows of one or more captures on one page.

pub mod charts;
pub mod extract;
pub mod page;

pub use extract::{flows, DataDirection, Flow, Flows, MAX_FLOWS};
pub use page::{render_captures, CaptureInput};
