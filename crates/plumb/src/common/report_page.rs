//! The `--report FILE` of `plumb -c`, `plumb why`, `plumb lab` and `plumb
//! demo`: the page written by `plumb_report::page_file`, a line on stderr
//! saying where it went, and its failure as the command's error.

use std::path::Path;

use plumb_capture::CaptureFilters;
use plumb_model::Rate;
use plumb_report::html::capture::render_captures;
use plumb_report::html::Input;
use plumb_report::page_file::{self, WriteError};

use super::capture_verdicts::guesser;
use plumb_live::link::given_rate;

pub use plumb_report::page_file::input;

/// The `--report FILE` of `plumb why --from CAPTURE`: the capture page,
/// with verdicts for the connections that match `f`, and a line saying
/// where it went. `name` names the capture on the page (the file's name
/// when `None`).
pub fn capture_page_for(
    path: &Path,
    name: Option<&str>,
    f: &CaptureFilters,
    link: Option<Rate>,
    out: &Path,
) -> anyhow::Result<()> {
    let analysis = page_file::page_analysis(path)
        .map_err(|e| anyhow::anyhow!("no report: {}: {e}", path.display()))?;
    let name = name.map_or_else(|| page_file::display_name(path), str::to_string);
    let link = link.map(given_rate);
    let input = page_file::capture_input(name, analysis, f, link.as_ref(), Some(guesser()));
    said(out, page_file::write_html(out, &render_captures(&[input])))
}

/// The `--report FILE` of the measuring commands: one page from the
/// documents a command just produced, and a line saying where it went.
pub fn write_for(out: &Path, inputs: Vec<Input>) -> anyhow::Result<()> {
    said(out, page_file::write(out, &inputs))
}

/// The line saying where the page went, or why there is none.
fn said(out: &Path, r: Result<(), WriteError>) -> anyhow::Result<()> {
    match r {
        Ok(()) => {
            eprintln!("plumb: report written to {}", out.display());
            Ok(())
        }
        Err(WriteError::Bad(msg)) => Err(anyhow::anyhow!("no report: {msg}")),
        Err(WriteError::Io(msg)) => Err(anyhow::anyhow!(msg)),
    }
}
