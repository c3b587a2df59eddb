//! `plumb why` on a capture, in text: what was read, then — for a capture
//! of several flows — how many flows of each class and their bytes, the
//! bulk flows ranked with a one-line verdict each, and each bulk flow's
//! verdict in at most [`flow::MAX_LINES`] lines; the other flows are
//! counted, not listed. `verbose` (`-V`) lists every flow with everything
//! the capture holds on it: its notes, each end's operating system, every
//! system's fixes and what a capture cannot know.
//!
//! The text reads the same [`CaptureDocument`] `-J` writes, and beside it
//! the evidence each flow's verdict weighed.

mod flow;
mod summary;

use plumb_diagnose::rules::human_count;
use plumb_diagnose::Evidence;
use plumb_record::capture::{CaptureDocument, Duplicates, Explanation};
use plumb_record::class::FlowClass;

pub use flow::MAX_LINES;

/// Flows from which on a capture opens with the class summary; fewer are
/// each shown whole.
const SUMMARY_FROM: usize = 3;
/// Bulk flows shown in detail without `verbose`.
const BULK_SHOWN: usize = 10;

/// The text of `doc`; `evidence` is what each of its flows' verdicts
/// weighed, in the same order.
pub fn render(doc: &CaptureDocument, evidence: &[Evidence], verbose: bool) -> String {
    let flows = &doc.explained[..];
    let mut s = header(doc);
    if let Some(w) = doc.kernel.as_ref().and_then(plumb_capture::kernel_warning) {
        s += &format!("{w}\n");
    }
    let many = flows.len() >= SUMMARY_FROM;
    if many {
        s += &summary::classes(flows);
        s += &summary::ranking(flows);
    }
    let shown = shown(flows, verbose, many);
    for (i, x) in &shown {
        s += "\n";
        s += &flow::render(i + 1, x, evidence.get(*i), verbose);
    }
    let hidden = flows.len() - shown.len();
    if hidden > 0 {
        s += &format!(
            "\n{} more flow(s), counted above and not listed: -V lists every flow, -J holds them all.\n",
            human_count(hidden as u64)
        );
    }
    s
}

/// The flows shown in detail, with their rank: every one with `verbose`
/// or when there are few; otherwise the busiest bulk flows.
fn shown(flows: &[Explanation], verbose: bool, many: bool) -> Vec<(usize, &Explanation)> {
    let all = flows.iter().enumerate();
    if verbose || !many {
        return all.collect();
    }
    all.filter(|(_, x)| x.class == FlowClass::Bulk || x.diagnosis.limit.is_some())
        .take(BULK_SHOWN)
        .collect()
}

/// The capture's lines: format, packets, connections, what was skipped.
fn header(doc: &CaptureDocument) -> String {
    let d = &doc.decode;
    let skipped = [
        (d.not_ip, "not IP"),
        (d.other_ip, "other IP"),
        (d.unknown_link, "unknown link type"),
        (d.truncated, "cut short"),
        (d.malformed, "malformed"),
        (d.fragments, "fragments"),
        (doc.read.oversize_records, "oversize records"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, w)| format!("{} {w}", human_count(*n)))
    .collect::<Vec<_>>();
    let with_data = doc.explained.len();
    let mut s = format!(
        "Capture {} ({}{}): {} packets, {} TCP segments; {} TCP connection(s), {} carried data{}.\n",
        doc.source,
        doc.read.format,
        if doc.read.gzip { ", gzip" } else { "" },
        human_count(doc.read.records),
        human_count(d.tcp),
        human_count(doc.connections as u64),
        human_count(with_data as u64),
        if with_data > 1 { ", busiest first" } else { "" },
    );
    if !skipped.is_empty() {
        s += &format!("Skipped: {}.\n", skipped.join(", "));
    }
    if let Some(line) = duplicates_text(&doc.duplicates) {
        s += &line;
    }
    if doc.dropped.connections > 0 {
        s += &format!(
            "Dropped: {} connection(s) ({} packets), the least busy past the ceiling of {} tracked.\n",
            human_count(doc.dropped.connections),
            human_count(doc.dropped.packets),
            human_count(doc.limits.max_connections as u64)
        );
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

#[cfg(test)]
mod tests {
    use super::{duplicates_text, Duplicates};

    #[test]
    fn duplicates_are_said_only_when_there_are_any() {
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
}
