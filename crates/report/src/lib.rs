//! The printers of what plumb measured, and the report that reads it back.
//!
//! This crate owns the printers: they implement `plumb_record`'s [`Sink`]
//! to turn the engine's record of a test (its start, its intervals and its
//! end, in the shape iperf3 reports them) into iperf3's human layout
//! ([`text::TextSink`]) or iperf3's `-J` JSON ([`json::JsonSink`]), and
//! they print a test's diagnosis in text ([`diagnosis`]) and the HTML report
//! drawn from that JSON ([`html`], with its charts in [`chart`], and
//! `plumb top --json` logs in [`top`]), whose files [`input`] reads into
//! types. The measuring engine pushes records into a [`Sink`]; it never
//! formats anything itself, and the printers never compute statistics
//! beyond summing what they are given.
//!
//! [`Sink`]: plumb_record::Sink
#![forbid(unsafe_code)]

pub mod calc;
pub mod chart;
pub mod diagnosis;
pub mod flows;
pub mod format;
pub mod html;
pub mod input;
pub mod json;
pub mod latency;
pub mod page_file;
pub mod text;
pub mod top;
pub mod verbose;
