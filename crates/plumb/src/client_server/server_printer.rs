//! The server's printers, from the flags: the operator's output to stdout
//! or `--logfile`, the capture a client's `--get-server-output` reads (the
//! JSON document with `-J` or `--json-stream`, else the text report) and
//! iperf3's units on the outcome line.

use std::fs::OpenOptions;
use std::io::Write;

use plumb_record::{Capture, Sink};
use plumb_report::format;
use plumb_report::json::JsonSink;
use plumb_report::text::TextSink;

use crate::common::output::printer;
use plumb_cli::measure::MeasureArgs;

/// [`plumb_net::server::Printer`] for the flags `a`.
pub struct ServerPrinter<'a>(pub &'a MeasureArgs);

impl plumb_net::server::Printer for ServerPrinter<'_> {
    fn sink(&self) -> Box<dyn Sink> {
        let a = self.0;
        let out: Box<dyn Write> = match &a.logfile {
            Some(p) => match OpenOptions::new().create(true).append(true).open(p) {
                Ok(f) => Box::new(f),
                Err(_) => Box::new(std::io::stdout()),
            },
            None => Box::new(std::io::stdout()),
        };
        printer(out, a, a.forceflush)
    }

    fn capture(&self) -> Box<dyn Capture> {
        if self.0.json || self.0.json_stream {
            Box::new(JsonSink::new(Vec::new()))
        } else {
            Box::new(
                TextSink::new(Vec::new(), false)
                    .with_format(self.0.format.unwrap_or_default())
                    .with_verbose(self.0.verbose),
            )
        }
    }

    fn received(&self, bytes: u64, bits_per_second: f64) -> String {
        format!(
            "{} received, {}",
            format::bytes(bytes as f64).trim(),
            format::bitrate(bits_per_second).trim()
        )
    }
}
