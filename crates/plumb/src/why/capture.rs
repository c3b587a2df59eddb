//! `plumb why --from FILE` / `-r FILE` on a packet capture: the file is
//! read by `plumb-capture`, every TCP connection that carried data is
//! explained with the same verdict, fields and fixes as a test, busiest
//! first; `--report` also writes the file's capture page with those
//! verdicts. [`explain_analysis`] takes any [`Analysis`], so a live packet
//! source feeds it the same way a file does.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use plumb_capture::{
    Analysis, CaptureFilters, DecodeStats, Dropped, Duplicates, Explanation, Limits, OsGuess,
    ReadStats, Truncation,
};
use plumb_diagnose::evidence::LinkRate;
use plumb_diagnose::rules::{human_count, human_rate};
use plumb_diagnose::LinkSource;
use plumb_model::Rate;
use serde::Serialize;

use crate::cli::usage_error;

/// Connections printed in the text; `-J` carries them all.
const SHOWN: usize = 10;

/// `plumb why -J` on a capture: the file's statistics and each connection
/// explained.
#[derive(Debug, Serialize)]
pub struct CaptureDocument<'a> {
    /// The file (or source) read.
    pub source: &'a str,
    /// The container: format, records, skipped records, and where the
    /// capture was cut short (`read.truncated`: `after_packet`, `at_byte`;
    /// null when whole).
    pub read: &'a ReadStats,
    /// Packets the decoders skipped, by reason.
    pub decode: &'a DecodeStats,
    /// The ceiling on tracked connections.
    pub limits: &'a Limits,
    /// Connections the ceiling dropped.
    pub dropped: &'a Dropped,
    /// TCP segments recorded more than once, counted once: `packets`, and
    /// of them `other_interface` (recorded on another pcapng interface).
    pub duplicates: &'a Duplicates,
    /// From an interface: the packet socket's counts (absent for a file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelCounts>,
    /// TCP connections tracked.
    pub connections: usize,
    /// Those that matched the filters and carried data, explained, busiest first.
    pub explained: &'a [Explanation],
}

/// What the kernel passed to a live capture, and what it dropped for want
/// of room in the ring: every figure of the analysis misses the dropped
/// packets.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct KernelCounts {
    /// Packets the socket's filter passed (those dropped included).
    pub received: u64,
    /// Packets read and analysed.
    pub read: u64,
    /// Packets dropped before they were read.
    pub dropped: u64,
}

impl KernelCounts {
    /// The sentence a reader needs when packets were dropped.
    fn warning(&self) -> Option<String> {
        (self.dropped > 0).then(|| {
            format!(
                "The kernel dropped {} of the {} packets the filter passed ({:.1} %) before plumb read them: the rates below read low and the missing segments look like losses; capture for less time, filter more narrowly (-p, --peer), or give plumb more CPU.",
                human_count(self.dropped),
                human_count(self.received),
                100.0 * self.dropped as f64 / self.received.max(1) as f64
            )
        })
    }
}

/// The filters of `plumb why` as they apply to a capture: `-p` only when
/// given, `--peer` at either end, `--conn`; `--pid` is refused.
pub fn filters(
    port: Option<u16>,
    live: &crate::live::LiveFilterArgs,
) -> Result<CaptureFilters, String> {
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
    json: bool,
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
    let code = explain_analysis(&path.display().to_string(), &a, None, f, link, json)?;
    if let Some(out) = report {
        // The page reads the file again as `plumb report` does: with each
        // flow's series and its ceiling on connections, which bound the
        // page's memory; the verdicts above keep every connection.
        drop(a);
        crate::report::capture_page_for(path, None, f, link, out)?;
    }
    Ok(code)
}

/// The one line on stderr for a capture cut short (nothing for a whole
/// one): where it was cut; what follows covers the packets before it.
pub fn say_where_cut(path: &Path, a: &Analysis) {
    if let Some(t) = a.read.truncated {
        eprintln!("plumb: {}: {}", path.display(), cut_text(&t));
    }
}

/// Where a capture was cut short, for the one line on stderr.
fn cut_text(t: &Truncation) -> String {
    format!(
        "cut short after packet {} at byte {}; the verdicts cover the packets before the cut",
        human_count(t.after_packet),
        human_count(t.at_byte)
    )
}

/// Each end's operating system, guessed from its SYN with
/// `plumb_handshake`'s table.
fn guesser() -> OsGuess<'static> {
    &super::os::read_syn
}

/// The verdict of each connection of `a` (by index) that matches `f` and
/// carried data, as the capture page shows it: the lead sentence
/// `plumb why` prints for it.
pub fn verdicts(a: &Analysis, f: &CaptureFilters, link: Option<Rate>) -> Vec<Option<String>> {
    let link = link.map(|r| LinkRate {
        bps: r.bps(),
        source: LinkSource::Given,
    });
    a.connections
        .iter()
        .map(|c| {
            let carried = plumb_capture::data_direction(c).0.timing.new_bytes > 0;
            (carried && f.matches(c)).then(|| {
                plumb_capture::explain(c, link.clone(), Some(guesser()))
                    .diagnosis
                    .summary
            })
        })
        .collect()
}

/// `--capture IFACE`: reads the interface for `--for` seconds (3 by
/// default; Ctrl-C ends it early), filtered in the kernel by `-p` and
/// `--peer`, and explains what it saw as a file's connections. With
/// `--report` the page is drawn from the pcapng the capture saves (the
/// `--write` file, else a scratch file removed afterwards), as `--from
/// FILE --report` draws it.
pub fn from_interface(iface: &str, a: &super::WhyArgs) -> anyhow::Result<ExitCode> {
    if iface == "any" {
        // A packet socket bound to no interface has no one link type to
        // record: tcpdump's pseudo-device is refused, not guessed at.
        return Ok(usage_error(
            "--capture any: plumb reads one interface; name it (see `ip link`)",
        ));
    }
    let f = match filters(a.measure.port, &a.live) {
        Ok(f) => f,
        Err(e) => return Ok(usage_error(e)),
    };
    let scratch = match (&a.measure.report, &a.write) {
        (Some(_), None) => Some(Scratch(
            std::env::temp_dir().join(format!("plumb-capture-{}.pcapng", std::process::id())),
        )),
        _ => None,
    };
    let secs = a.for_secs.unwrap_or(3.0);
    let mut spec =
        plumb_net::packet::CaptureSpec::new(iface, std::time::Duration::from_secs_f64(secs));
    spec.ports = f.port.into_iter().collect();
    spec.peers = f.peer.map(|(ip, _)| ip).into_iter().collect();
    spec.write = a
        .write
        .clone()
        .or_else(|| scratch.as_ref().map(|s| s.0.clone()));
    // Ctrl-C (the signal flag) ends the capture early.
    let got = plumb_net::packet::capture(&spec, &plumb_net::signals::flag());
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
        a.measure.link,
        a.measure.json,
    )?;
    if let (Some(out), Some(saved)) = (&a.measure.report, &spec.write) {
        drop(live);
        // Named for the interface, as the text names it.
        let name = format!("interface {iface}");
        crate::report::capture_page_for(saved, Some(&name), &f, a.measure.link, out)?;
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

/// Explains every connection of `a` that matches `f` and carried data:
/// the text (a header, then each connection's verdict, at most [`SHOWN`])
/// or the `-J` document ([`CaptureDocument`]).
pub fn explain_analysis(
    source: &str,
    a: &Analysis,
    kernel: Option<KernelCounts>,
    f: &CaptureFilters,
    link: Option<Rate>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let link = link.map(|r| LinkRate {
        bps: r.bps(),
        source: LinkSource::Given,
    });
    let flows = plumb_capture::explain_all(a, f, link.as_ref(), Some(guesser()));
    let mut out = std::io::stdout().lock();
    if json {
        let doc = CaptureDocument {
            source,
            read: &a.read,
            decode: &a.decode,
            limits: &a.limits,
            dropped: &a.dropped,
            duplicates: &a.duplicates,
            kernel,
            connections: a.connections.len(),
            explained: &flows,
        };
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        write!(out, "{}", header(source, a, flows.len()))?;
        if let Some(w) = kernel.and_then(|k| k.warning()) {
            writeln!(out, "{w}")?;
        }
        for (i, x) in flows.iter().take(SHOWN).enumerate() {
            write!(out, "\n{}", flow_text(i + 1, x))?;
        }
        if flows.len() > SHOWN {
            writeln!(
                out,
                "\n... and {} more connection(s) that carried data (narrow with -p, --peer or --conn; -J lists them all)",
                flows.len() - SHOWN
            )?;
        }
    }
    if flows.is_empty() {
        eprintln!("plumb: no TCP connection in {source} that matches the filters carried data");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The capture's lines: format, packets, connections, what was skipped.
fn header(source: &str, a: &Analysis, with_data: usize) -> String {
    let d = &a.decode;
    let skipped = [
        (d.not_ip, "not IP"),
        (d.other_ip, "other IP"),
        (d.unknown_link, "unknown link type"),
        (d.truncated, "cut short"),
        (d.malformed, "malformed"),
        (d.fragments, "fragments"),
        (a.read.oversize_records, "oversize records"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, w)| format!("{} {w}", human_count(*n)))
    .collect::<Vec<_>>();
    let mut s = format!(
        "Capture {source} ({}{}): {} packets, {} TCP segments; {} TCP connection(s), {} carried data{}.\n",
        a.read.format,
        if a.read.gzip { ", gzip" } else { "" },
        human_count(a.read.records),
        human_count(d.tcp),
        human_count(a.connections.len() as u64),
        human_count(with_data as u64),
        if with_data > 1 { ", busiest first" } else { "" },
    );
    if !skipped.is_empty() {
        s += &format!("Skipped: {}.\n", skipped.join(", "));
    }
    if a.dropped.connections > 0 {
        s += &format!(
            "Dropped: {} connection(s) ({} packets), the least busy past the ceiling of {} tracked.\n",
            human_count(a.dropped.connections),
            human_count(a.dropped.packets),
            human_count(a.limits.max_connections as u64)
        );
    }
    if let Some(line) = duplicates_text(&a.duplicates) {
        s += &line;
    }
    s
}

/// The capture duplicates' line, where there are any.
fn duplicates_text(d: &Duplicates) -> Option<String> {
    (d.packets > 0).then(|| {
        let other = if d.other_interface > 0 {
            format!(
                " ({} of them on another interface than the first)",
                human_count(d.other_interface)
            )
        } else {
            String::new()
        };
        format!(
            "Duplicates: {} packets are copies of one just before them{other}: the capture was taken on two interfaces or a mirror port saw both directions; each packet is counted once, never as a retransmission.\n",
            human_count(d.packets)
        )
    })
}

/// One connection: who sent what, the capture's notes, then the verdict as
/// for a test.
fn flow_text(n: usize, x: &Explanation) -> String {
    let f = &x.flow;
    let mut s = format!(
        "{n}. {} -> {}: {} B in {:.2} s, {} ({} packets)\n",
        f.sender,
        f.receiver,
        human_count(f.data_bytes),
        f.duration_s,
        rate_text(f.duration_s, f.measured_bps),
        human_count(f.packets)
    );
    for note in &x.notes {
        s += &format!("   - {note}\n");
    }
    s += "\n";
    s += &plumb_report::diagnosis::render(&x.diagnosis, &x.evidence);
    s
}

/// A flow's rate for its header line: none when its data passed at one
/// instant (no time to divide by), rather than a rate of 0.
fn rate_text(duration_s: f64, bps: f64) -> String {
    if duration_s > 0.0 {
        human_rate(bps)
    } else {
        "no rate (its data passed at one instant)".into()
    }
}

#[cfg(test)]
mod tests {
    use super::{cut_text, duplicates_text, rate_text, Duplicates, KernelCounts, Truncation};

    #[test]
    fn a_cut_names_its_packet_and_duplicates_are_said_only_when_there_are_any() {
        let t = Truncation {
            after_packet: 1234,
            at_byte: 567_890,
        };
        assert!(
            cut_text(&t).starts_with("cut short after packet 1,234 at byte 567,890;"),
            "{}",
            cut_text(&t)
        );
        assert_eq!(duplicates_text(&Duplicates::default()), None);
        let d = Duplicates {
            packets: 280,
            other_interface: 0,
        };
        let line = duplicates_text(&d).expect("a line");
        assert!(
            line.starts_with("Duplicates: 280 packets are copies")
                && !line.contains("interface than")
                && line.ends_with(".\n"),
            "{line}"
        );
        let d = Duplicates {
            packets: 3,
            other_interface: 2,
        };
        let line = duplicates_text(&d).expect("a line");
        assert!(line.contains("(2 of them on another interface"), "{line}");
    }

    #[test]
    fn a_flow_at_one_instant_has_no_rate_in_its_header() {
        assert_eq!(
            rate_text(0.0, 0.0),
            "no rate (its data passed at one instant)"
        );
        assert!(
            rate_text(1.0, 8e6).contains("Mbit/s"),
            "{}",
            rate_text(1.0, 8e6)
        );
    }

    #[test]
    fn drops_are_said_with_their_share_and_none_says_nothing() {
        let k = |dropped| KernelCounts {
            received: 1000,
            read: 1000 - dropped,
            dropped,
        };
        assert_eq!(k(0).warning(), None);
        let w = k(250).warning().expect("a warning");
        assert!(
            w.contains("dropped 250 of the 1,000") && w.contains("25.0 %"),
            "{w}"
        );
    }
}
