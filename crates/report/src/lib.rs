//! What a test measured, and the sinks that print it.
//!
//! This crate owns the *record* of a throughput test — its start, its intervals
//! and its end, in the shape iperf3 reports them — and the printers that turn a
//! record into iperf3's human layout ([`text::TextSink`]) or iperf3's `-J` JSON
//! ([`json::JsonSink`]), a test's diagnosis in text ([`diagnosis`]), and the
//! HTML report drawn from that JSON ([`html`], with its charts in [`chart`],
//! and `plumb top --json` logs in [`top`]), whose files [`input`] reads into
//! types. The measuring engine pushes records into a [`Sink`]; it never
//! formats anything itself, and the printers never compute statistics
//! beyond summing what they are given.
#![warn(clippy::too_many_lines)]
#![forbid(unsafe_code)]

pub mod chart;
pub mod diagnosis;
pub mod flows;
pub mod format;
pub mod html;
pub mod input;
pub mod json;
pub mod latency;
pub mod record;
pub mod text;
pub mod top;

pub use record::*;

/// Receives a test's record as it happens. Call order: [`Sink::start`] once,
/// [`Sink::interval`] per reporting interval, then [`Sink::end`]; [`Sink::error`]
/// may come at any point (after which `end` may still follow with partial
/// results); [`Sink::finish`] last, once.
pub trait Sink {
    /// The test is set up: streams connected, parameters agreed.
    fn start(&mut self, start: &StartRecord);
    /// One reporting interval has passed.
    fn interval(&mut self, interval: &IntervalRecord);
    /// The test is over and both sides' results are in.
    fn end(&mut self, end: &EndRecord);
    /// Something went wrong; `msg` is one line for a person.
    fn error(&mut self, msg: &str);
    /// A free-form line (server banners, "Accepted connection from …").
    fn note(&mut self, _line: &str) {}
    /// Flushes whatever the sink holds back (the JSON document).
    fn finish(&mut self) -> std::io::Result<()>;
}

/// Sends every record to two sinks: a printer and a capture, say.
pub struct Tee<'a> {
    /// The first sink (finished by [`Sink::finish`]).
    pub first: &'a mut dyn Sink,
    /// The second sink (also finished).
    pub second: &'a mut dyn Sink,
}

impl Sink for Tee<'_> {
    fn start(&mut self, s: &StartRecord) {
        self.first.start(s);
        self.second.start(s);
    }
    fn interval(&mut self, i: &IntervalRecord) {
        self.first.interval(i);
        self.second.interval(i);
    }
    fn end(&mut self, e: &EndRecord) {
        self.first.end(e);
        self.second.end(e);
    }
    fn error(&mut self, m: &str) {
        self.first.error(m);
        self.second.error(m);
    }
    fn note(&mut self, l: &str) {
        self.first.note(l);
        self.second.note(l);
    }
    fn finish(&mut self) -> std::io::Result<()> {
        self.first.finish()?;
        self.second.finish()
    }
}
