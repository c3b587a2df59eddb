//! `plumb report FILE… [-o report.html]`, and the `--report FILE` of
//! `plumb -c`, `plumb why`, `plumb lab` and `plumb demo`.
//!
//! Glue only: reads packet captures (pcap, pcapng, gzip) with
//! `plumb_capture`, or `-J` documents and `--json-stream` logs (plumb's or
//! iperf3's) and `plumb top --json` logs with `plumb_report::input`, and
//! writes their page with `plumb_report::page_file`.

use std::path::Path;
use std::process::ExitCode;

use plumb_capture::{file_is_capture, CaptureFilters};
use plumb_report::html::capture::render_captures;
use plumb_report::page_file::{
    capture_input, display_name, input, page_analysis, write, write_html, WriteError,
};

use crate::common::capture_verdicts::{guesser, say_where_cut};
use crate::usage::usage_error;
use plumb_cli::report::ReportArgs;
use plumb_live::link::given_rate;

/// Runs `plumb report`.
pub fn run(a: &ReportArgs) -> anyhow::Result<ExitCode> {
    let captures = a.files.iter().filter(|p| file_is_capture(p)).count();
    if captures > 0 {
        if captures < a.files.len() {
            return Ok(usage_error(
                "captures and -J documents cannot share a page: report them apart",
            ));
        }
        return capture_report(a);
    }
    let mut inputs = Vec::with_capacity(a.files.len());
    for path in &a.files {
        let doc = match plumb_report::input::read_file(path) {
            Ok(d) => d,
            Err(msg) => return Ok(usage_error(msg)),
        };
        inputs.push(input(display_name(path), doc, a.link));
    }
    finish(&a.output, write(&a.output, &inputs))
}

/// `plumb report` of packet captures: one page of their flows, each that
/// carried data with the verdict `plumb why` gives it.
fn capture_report(a: &ReportArgs) -> anyhow::Result<ExitCode> {
    let link = a.link.map(given_rate);
    let mut inputs = Vec::with_capacity(a.files.len());
    for path in &a.files {
        match page_analysis(path) {
            Ok(analysis) => {
                // A capture cut short is drawn up to the cut, said once.
                say_where_cut(path, &analysis);
                inputs.push(capture_input(
                    display_name(path),
                    analysis,
                    &CaptureFilters::default(),
                    link.as_ref(),
                    Some(guesser()),
                ));
            }
            Err(e) => return Ok(usage_error(format!("{}: {e}", path.display()))),
        }
    }
    let html = render_captures(&inputs);
    finish(&a.output, write_html(&a.output, &html))
}

fn finish(out: &Path, r: Result<(), WriteError>) -> anyhow::Result<ExitCode> {
    match r {
        Ok(()) => {
            println!("wrote {}", out.display());
            Ok(ExitCode::SUCCESS)
        }
        Err(WriteError::Bad(msg)) => Ok(usage_error(msg)),
        Err(WriteError::Io(msg)) => Err(anyhow::anyhow!(msg)),
    }
}
