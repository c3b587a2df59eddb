//! `plumb top`'s watch: the host's TCP connections, read every interval,
//! each with the limit named now from the same evidence as `plumb why` (the
//! owning process's CPU over the interval included). The rates are deltas
//! between two readings of a connection. The connections busy now or lately
//! are read every interval by a lookup of each; the full sock_diag dump that
//! finds the others (and new ones) runs as often as its measured CPU cost
//! fits the schedule ([`crate::scan`]).
//!
//! [`run`] is the loop over a [`Top`] configuration; each interval goes to a
//! [`TopSink`] as an [`Interval`] of [`RowView`]s, which the sink prints
//! (a table, or `--json` lines through [`RowView::line`]). [`watched`]
//! keeps the connections across intervals, [`row`] makes a connection's
//! row, [`lookups`] what rows look up beyond the socket.

pub mod interval;
pub mod lookups;
pub mod row;
pub mod run;
pub mod watched;

pub use interval::Interval;
pub use row::{Row, RowView};
pub use run::{run, Top, TopSink};
