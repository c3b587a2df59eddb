//! `plumb why --from FILE` / `-r FILE` on a packet capture: the file is
//! read by `plumb-capture`, every TCP connection that carried data is
//! explained with the same verdict, fields and fixes as a test, busiest
//! first; `--report` also writes the file's capture page with those
//! verdicts. [`explain_analysis`] takes any [`Analysis`], so a live packet
//! source feeds it the same way a file does.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use plumb_capture::{Analysis, CaptureFilters};
use plumb_diagnose::evidence::LinkRate;
use plumb_diagnose::rules::human_count;
use plumb_diagnose::LinkSource;
use plumb_model::Rate;
use plumb_record::capture::{KernelCounts, Limits};

use crate::common::capture_verdicts::{guesser, say_where_cut};
use crate::common::report_page::capture_page_for;
use crate::usage::usage_error;
use plumb_cli::live_flags::LiveFilterArgs;

/// The filters of `plumb why` as they apply to a capture: `-p` only when
/// given, `--peer` at either end, `--conn`; `--pid` is refused.
pub fn filters(port: Option<u16>, live: &LiveFilterArgs) -> Result<CaptureFilters, String> {
    if live.pid.is_some() {
        return Err(
            "--pid: a capture has no processes; filter it with -p PORT, --peer ADDR or --conn SRC:SPORT,DST:DPORT"
                .into(),
        );
    }
    Ok(CaptureFilters {
        port,
        peer: live
            .peer
            .as_deref()
            .map(plumb_live::filter::parse_peer)
            .transpose()?,
        conn: live
            .conn
            .as_deref()
            .map(plumb_live::filter::parse_conn)
            .transpose()?,
    })
}

/// Reads the capture at `path` and explains it; with `report`, also
/// writes its page (`plumb report`'s capture page), each explained flow
/// with its verdict.
pub fn from_file(
    path: &Path,
    f: &CaptureFilters,
    link: Option<Rate>,
    out: Output,
    report: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let a = match plumb_capture::analyze_file(path, Limits::default()) {
        Ok(a) => a,
        Err(e) => return Ok(usage_error(format!("{}: {e}", path.display()))),
    };
    if a.read.records == 0 {
        let cut = a
            .read
            .truncated
            .map(|t| format!(" (it is cut short at byte {})", human_count(t.at_byte)))
            .unwrap_or_default();
        return Ok(usage_error(format!(
            "{}: the capture holds no packets{cut}",
            path.display()
        )));
    }
    say_where_cut(path, &a);
    let code = explain_analysis(&path.display().to_string(), &a, None, f, link, out)?;
    if let Some(out) = report {
        // The page reads the file again as `plumb report` does: with each
        // flow's series and its ceiling on connections, which bound the
        // page's memory; the verdicts above keep every connection.
        drop(a);
        capture_page_for(path, None, f, link, out)?;
    }
    Ok(code)
}

/// `plumb why --capture IFACE` as its flags describe it.
pub struct Listen<'a> {
    /// The interface to read.
    pub iface: &'a str,
    /// `-p`: only this port, at either end.
    pub port: Option<u16>,
    /// `--peer`, `--conn` (and `--pid`, refused).
    pub live: &'a LiveFilterArgs,
    /// `--for`: seconds to read.
    pub secs: f64,
    /// `--write`: also save what was read as pcapng.
    pub write: Option<&'a Path>,
    /// `--report`: the capture page.
    pub report: Option<&'a Path>,
    /// `--link`: the bottleneck's rate.
    pub link: Option<Rate>,
    /// `-J`, `-V`.
    pub out: Output,
}

/// `--capture IFACE`: reads the interface for `--for` seconds (3 by
/// default; Ctrl-C ends it early), filtered in the kernel by `-p` and
/// `--peer`, and explains what it saw as a file's connections. With
/// `--report` the page is drawn from the pcapng the capture saves (the
/// `--write` file, else a scratch file removed afterwards), as `--from
/// FILE --report` draws it.
pub fn from_interface(l: &Listen) -> anyhow::Result<ExitCode> {
    let iface = l.iface;
    if iface == "any" {
        // A packet socket bound to no interface has no one link type to
        // record: tcpdump's pseudo-device is refused, not guessed at.
        return Ok(usage_error(
            "--capture any: plumb reads one interface; name it (see `ip link`)",
        ));
    }
    let f = match filters(l.port, l.live) {
        Ok(f) => f,
        Err(e) => return Ok(usage_error(e)),
    };
    let scratch = match (l.report, l.write) {
        (Some(_), None) => Some(Scratch(
            std::env::temp_dir().join(format!("plumb-capture-{}.pcapng", std::process::id())),
        )),
        _ => None,
    };
    let mut spec =
        plumb_packet::CaptureSpec::new(iface, std::time::Duration::from_secs_f64(l.secs));
    spec.ports = f.port.into_iter().collect();
    spec.peers = f.peer.map(|(ip, _)| ip).into_iter().collect();
    spec.write = l
        .write
        .map(Path::to_path_buf)
        .or_else(|| scratch.as_ref().map(|s| s.0.clone()));
    // Ctrl-C (the signal flag) ends the capture early.
    let got = plumb_packet::capture(&spec, &plumb_net::signals::flag());
    let live = match got {
        Ok(l) => l,
        Err(e) => return Ok(usage_error(format!("--capture {iface}: {e}"))),
    };
    eprintln!(
        "plumb: {iface}: {} packets in {:.1} s passed the filter; {} read, {} dropped by the kernel",
        live.received,
        live.elapsed.as_secs_f64(),
        live.read,
        live.dropped
    );
    let kernel = KernelCounts {
        received: live.received,
        read: live.read,
        dropped: live.dropped,
    };
    let code = explain_analysis(
        &format!("interface {iface}"),
        &live.analysis,
        Some(kernel),
        &f,
        l.link,
        l.out,
    )?;
    if let (Some(out), Some(saved)) = (l.report, &spec.write) {
        drop(live);
        // Named for the interface, as the text names it.
        let name = format!("interface {iface}");
        capture_page_for(saved, Some(&name), &f, l.link, out)?;
    }
    Ok(code)
}

/// A file of this run's own, removed when dropped (also on an error).
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// How the verdicts are written: `-J`, or text with `-V`'s detail.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    /// `-J`: the document.
    pub json: bool,
    /// `-V`: every flow, with everything the capture holds on it.
    pub verbose: bool,
}

/// Explains every connection of `a` that matches `f` and carried data:
/// the text (`plumb_report::flows`) or the `-J` document
/// (`plumb_record::capture::CaptureDocument`).
pub fn explain_analysis(
    source: &str,
    a: &Analysis,
    kernel: Option<KernelCounts>,
    f: &CaptureFilters,
    link: Option<Rate>,
    out: Output,
) -> anyhow::Result<ExitCode> {
    let link = link.map(|r| LinkRate {
        bps: r.bps(),
        source: LinkSource::Given,
    });
    let flows = plumb_capture::explain_all(a, f, link.as_ref(), Some(guesser()));
    let (entries, evidence): (Vec<_>, Vec<_>) =
        flows.into_iter().map(|x| (x.entry, x.evidence)).unzip();
    let doc = plumb_capture::document(source, a, kernel, entries);
    let mut w = std::io::stdout().lock();
    if out.json {
        writeln!(w, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        write!(
            w,
            "{}",
            plumb_report::flows::render(&doc, &evidence, out.verbose)
        )?;
    }
    if doc.explained.is_empty() {
        eprintln!("plumb: no TCP connection in {source} that matches the filters carried data");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
