//! What iperf3's flags ([`MeasureArgs`], `plumb_cli::measure`) ask of this
//! process at run time: the CPU it runs on and the printer its output goes
//! to, on stdout or `--logfile`.

use std::fs::OpenOptions;
use std::io::Write;
use std::process::ExitCode;

use plumb_cli::measure::MeasureArgs;
use plumb_record::engine::{EndRecord, IntervalRecord, StartRecord};
use plumb_record::{Latency, Sink};
use plumb_report::json::{JsonSink, JsonStreamSink};
use plumb_report::text::TextSink;

mod stamp;

/// Pins this process's threads from here on to `-A`'s n (the threads the
/// run starts inherit it); a CPU this process may not use is one line and
/// exit 1.
pub fn pin(a: &MeasureArgs) -> Result<(), ExitCode> {
    let Some(aff) = a.affinity else { return Ok(()) };
    plumb_net::host::pin_current_thread(aff.local as usize).map_err(|e| {
        eprintln!(
            "plumb: -A {}: cannot run on CPU {}: {e}",
            aff.local, aff.local
        );
        ExitCode::from(1)
    })
}

/// The output sink the flags ask for: iperf3 JSON or text, to stdout or `--logfile`.
pub fn sink(a: &MeasureArgs) -> anyhow::Result<Box<dyn Sink>> {
    let out: Box<dyn Write> = match &a.logfile {
        Some(path) => Box::new(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| anyhow::anyhow!("cannot open log file {}: {e}", path.display()))?,
        ),
        None => Box::new(std::io::stdout()),
    };
    Ok(printer(out, a, a.forceflush || a.logfile.is_some()))
}

/// Text output on the terminal: a test's error goes to stderr, once, as
/// iperf3 prints it — not into the report on stdout and then again on stderr.
/// [`ErrorsToStderr::printed`] tells the caller it need not print it again.
pub struct ErrorsToStderr<'a> {
    /// The text printer everything else goes to.
    pub inner: &'a mut dyn Sink,
    /// Whether an error has been printed.
    pub printed: bool,
}

impl Sink for ErrorsToStderr<'_> {
    fn start(&mut self, s: &StartRecord) {
        self.inner.start(s);
    }
    fn interval(&mut self, i: &IntervalRecord) {
        self.inner.interval(i);
    }
    fn end(&mut self, e: &EndRecord) {
        self.inner.end(e);
    }
    fn latency(&mut self, l: &Latency) {
        self.inner.latency(l);
    }
    fn error(&mut self, msg: &str) {
        // What was printed so far must come first on a shared terminal.
        let _ = self.inner.finish();
        if !self.printed {
            eprintln!("plumb: error - {msg}");
        }
        self.printed = true;
    }
    fn note(&mut self, line: &str) {
        self.inner.note(line);
    }
    fn finish(&mut self) -> std::io::Result<()> {
        self.inner.finish()
    }
}

/// The printer `-J`, `--json-stream` or neither asks for, writing to `out`;
/// `flush` makes the text printer flush every line.
pub fn printer(out: Box<dyn Write>, a: &MeasureArgs, flush: bool) -> Box<dyn Sink> {
    if a.json_stream {
        let sink = JsonStreamSink::new(out);
        if a.json_stream_full_output {
            Box::new(sink.with_full_output())
        } else {
            Box::new(sink)
        }
    } else if a.json {
        Box::new(JsonSink::new(out))
    } else {
        Box::new(text_printer(out, a, flush).with_verbose(a.verbose))
    }
}

/// iperf3's text layout with the flags that shape it: `-f`'s unit, and
/// each line started by `--timestamps` and `-T`'s title.
pub fn text_printer(out: Box<dyn Write>, a: &MeasureArgs, flush: bool) -> TextSink<Box<dyn Write>> {
    let out: Box<dyn Write> = if a.timestamps.is_some() || a.title.is_some() {
        Box::new(stamp::Stamped::new(
            out,
            a.timestamps.as_deref(),
            a.title.as_deref(),
        ))
    } else {
        out
    };
    TextSink::new(out, flush).with_format(a.format.unwrap_or_default())
}
