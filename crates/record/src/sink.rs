//! The contract between the measuring engine and the printers: the engine
//! pushes a test's [`engine`](crate::engine) records into a [`Sink`] as
//! the test runs; the printers (iperf3's text, `-J`, `--json-stream`)
//! implement it in `plumb-report`. Neither side depends on the other.

use crate::engine::{EndRecord, IntervalRecord, StartRecord};
use crate::Latency;

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
    /// A request/response test's or `--latency`'s figures, once, just
    /// before [`Sink::end`] (whose `end.plumb.latency` holds them too): a
    /// printer that shows them apart from the end's totals does so here.
    fn latency(&mut self, _latency: &Latency) {}
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
    fn latency(&mut self, l: &Latency) {
        self.first.latency(l);
        self.second.latency(l);
    }
    fn finish(&mut self) -> std::io::Result<()> {
        self.first.finish()?;
        self.second.finish()
    }
}

/// A sink that keeps one test's report for the client that asked for it
/// with `--get-server-output`, as an iperf3 server returns what it prints.
pub trait Capture: Sink {
    /// What the sink kept.
    fn output(&self) -> ServerOutput;
}

/// A server's report of one test, as `--get-server-output` returns it.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerOutput {
    /// Its text report (`server_output_text`).
    Text(String),
    /// Its `-J` document (`server_output_json`).
    Json(Box<crate::Document>),
}
