//! A report page as a file: the documents made ready for it (a diagnosis
//! added where a test's document has none and the evidence allows one), a
//! capture's connections with their verdicts, and the page written to a
//! temporary file renamed into place, so that a failure never leaves half a
//! report behind.

use std::io::Write;
use std::path::{Path, PathBuf};

use plumb_capture::{analyze_file_with_series, Analysis, CaptureFilters, OsGuess};
use plumb_diagnose::evidence::LinkRate;
use plumb_diagnose::{diagnose, Evidence, LinkSource};
use plumb_model::Rate;
use plumb_record::capture::Limits;

use crate::html::capture::CaptureInput;
use crate::html::{render, Input};
use crate::input::Document;

/// Connections a capture page tracks: the busiest survive the ceiling (the
/// page draws a dozen), and with [`SERIES_BUDGET`] it bounds the page's
/// memory whatever the capture's length (under 200 kB per direction).
const CAPTURE_CONNECTIONS: usize = 256;
/// Points of each kind per direction of a connection on a capture page.
const SERIES_BUDGET: usize = 1000;

/// Reads the capture at `path` for a page: with each flow's series, and
/// the ceiling on connections that bounds the page's memory.
pub fn page_analysis(path: &Path) -> Result<Analysis, plumb_capture::Error> {
    let limits = Limits {
        max_connections: CAPTURE_CONNECTIONS,
    };
    analyze_file_with_series(path, limits, SERIES_BUDGET)
}

/// The verdict of each connection of `a` (by index) that matches `f` and
/// carried data, as the capture page shows it: the lead sentence
/// `plumb why` prints for it (each end's operating system guessed by `os`).
pub fn verdicts(
    a: &Analysis,
    f: &CaptureFilters,
    link: Option<&LinkRate>,
    os: Option<OsGuess<'_>>,
) -> Vec<Option<String>> {
    a.connections
        .iter()
        .map(|c| {
            let carried = plumb_capture::data_direction(c).0.timing.new_bytes > 0;
            (carried && f.matches(c)).then(|| {
                plumb_capture::explain(c, link.cloned(), os)
                    .entry
                    .diagnosis
                    .summary
            })
        })
        .collect()
}

/// A capture for the page, with the verdicts of its connections that match
/// `f` and carried data (weighed with `link` when given).
pub fn capture_input(
    name: String,
    analysis: Analysis,
    f: &CaptureFilters,
    link: Option<&LinkRate>,
    os: Option<OsGuess<'_>>,
) -> CaptureInput {
    let verdicts = verdicts(&analysis, f, link, os);
    CaptureInput {
        name,
        analysis,
        verdicts,
    }
}

/// The name a file goes by on a page: its file name.
pub fn display_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    )
}

/// A document ready for the page: with a `diagnosis` when it has none and
/// the evidence allows one (the link rate from `link`, else the best
/// interval as a lower bound, as `plumb why --from` does).
pub fn input(name: String, doc: Document, link: Option<Rate>) -> Input {
    // A top log names a limit per connection and interval already.
    let top = crate::top::is_top_doc(&doc);
    if top || crate::input::has_diagnosis(&doc) {
        return Input { name, doc };
    }
    let link = link.map(|r| LinkRate {
        bps: r.bps(),
        source: LinkSource::Given,
    });
    let Ok(ev) = Evidence::from_document_or_best(&doc, link) else {
        return Input { name, doc };
    };
    let d = diagnose(&ev);
    let doc = doc.with_diagnosis(d);
    Input { name, doc }
}

/// Why a report was not written.
#[derive(Debug)]
pub enum WriteError {
    /// A document that cannot be reported on (a usage error).
    Bad(String),
    /// The file could not be written: the line that says so.
    Io(String),
}

/// Renders `inputs` and writes the page to `out` atomically: a temporary
/// file in the same directory, renamed over `out` once complete.
pub fn write(out: &Path, inputs: &[Input]) -> Result<(), WriteError> {
    let html = render(inputs).map_err(|e| WriteError::Bad(e.to_string()))?;
    write_html(out, &html)
}

/// Writes a page to `out` atomically.
pub fn write_html(out: &Path, html: &str) -> Result<(), WriteError> {
    let dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        out.file_name()
            .map_or("report".into(), |n| n.to_string_lossy()),
        std::process::id()
    ));
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(html.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, out)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        WriteError::Io(format!("cannot write {}: {e}", out.display()))
    })
}
