//! `plumb why -r` held to figures that can be true, on real traffic: every
//! capture of the corpus (`crates/capture/tests/corpus/`, public captures
//! from Zeek's, Arkime's and tcpdump's test suites; where each comes from:
//! its README) and of `public/`, in text and `-J`, each within 10 s.
//!
//! What each run must hold (`corpus/checks.rs`): it ends without a panic,
//! with exit 0 (connections explained), 1 (no connection carried data: one
//! line on stderr, the `-J` document still printed) or 2 (not a capture, or
//! an empty one: one line on stderr, nothing on stdout), as docs/why.md
//! gives them, and both forms alike; no share above 100 %; no limit named
//! binding, and no other cap printed, whose model predicts less than the
//! measured rate / (1 + its tolerance); no tuning fix for a flow that is not
//! bulk. Beside them: capture duplicates are not counted as retransmissions
//! (`corpus/duplicates.rs`, with editcap and tshark), and the flows labelled
//! by hand (`corpus/labels.json`) come out with their class and cause.
//!
//! Every violation is printed. A check listed in [`NOT_YET_HELD`] does not
//! fail the test (plumb does not hold it yet); `PLUMB_CORPUS_STRICT=1` makes
//! every check fail the test.

mod common;
mod corpus;

use std::collections::BTreeMap;

use corpus::checks::{check_run, Check, Violation};
use corpus::{duplicates, labels, Outcome};

/// The checks today's plumb breaks on some captures of the corpus: each is
/// still run and every violation printed, but only once it is taken off
/// this list does a violation fail the test.
const NOT_YET_HELD: &[Check] = &[];

/// The corpus's bounds: enough captures from enough sources, small enough
/// to keep in the repository.
const MIN_FILES: usize = 300;
const MIN_SOURCES: usize = 3;
const MAX_BYTES: u64 = 40_000_000;

fn strict() -> bool {
    std::env::var("PLUMB_CORPUS_STRICT").is_ok_and(|v| v == "1")
}

/// Prints every violation of `checks`, grouped, and fails the test on those
/// of a check that is held (or on any under `PLUMB_CORPUS_STRICT=1`).
fn settle(checks: &[Check], v: &[Violation]) {
    let mut by: BTreeMap<Check, Vec<&Violation>> =
        checks.iter().map(|c| (*c, Vec::new())).collect();
    for x in v {
        by.entry(x.check).or_default().push(x);
    }
    let mut failing = Vec::new();
    for (check, list) in &by {
        let gated = check.report_only() || (!strict() && NOT_YET_HELD.contains(check));
        let state = match (list.is_empty(), gated) {
            (true, _) => "holds",
            (false, true) if check.report_only() => "reported",
            (false, true) => "NOT YET HELD",
            (false, false) => "FAILS",
        };
        eprintln!("{check:?}: {} violation(s), {state}", list.len());
        for x in list {
            eprintln!("  {} {}: {}", x.file, x.flow, x.what);
        }
        if !list.is_empty() && !gated {
            failing.push(format!("{check:?} ({})", list.len()));
        }
        if list.is_empty() && NOT_YET_HELD.contains(check) {
            eprintln!("  no violation of {check:?}: it may come off NOT_YET_HELD");
        }
    }
    assert!(failing.is_empty(), "violations: {}", failing.join(", "));
}

#[test]
fn the_corpus_is_documented_and_within_its_bounds() {
    let dir = corpus::captures_dir().join("corpus");
    let readme = std::fs::read_to_string(dir.join("README.md")).expect("corpus/README.md");
    let sources = corpus::sources();
    assert!(sources.len() >= MIN_SOURCES, "sources: {sources:?}");
    let mut files = 0;
    let mut bytes = 0;
    for s in &sources {
        assert!(
            dir.join(s).join("LICENSE").is_file(),
            "{s}: no LICENSE beside its files"
        );
        for f in corpus::captures_in(&format!("corpus/{s}")) {
            let name = f.trim_start_matches("corpus/");
            assert!(
                readme.contains(&format!("| `{name}` |")),
                "{name} is not in corpus/README.md"
            );
            files += 1;
        }
    }
    for e in walk(&dir) {
        bytes += e;
    }
    assert!(files >= MIN_FILES, "{files} captures");
    assert!(bytes < MAX_BYTES, "{bytes} B");
    eprintln!("{files} captures from {} sources, {bytes} B", sources.len());
}

/// The sizes of every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<u64> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir)
        .expect("readable")
        .filter_map(Result::ok)
    {
        let p = e.path();
        if p.is_dir() {
            v.extend(walk(&p));
        } else {
            v.push(e.metadata().map_or(0, |m| m.len()));
        }
    }
    v
}

#[test]
fn every_capture_ends_and_its_figures_can_be_true() {
    let runs = corpus::runs();
    let mut v = Vec::new();
    let mut ends: BTreeMap<&str, usize> = BTreeMap::new();
    let mut flows = 0;
    for r in runs {
        let end = match r.json {
            Outcome::Explained(_) => "explained",
            Outcome::NothingToExplain(_) => "no data (exit 1)",
            Outcome::BadFile(_) => "bad file (exit 2)",
            Outcome::Failed(_) => "failed",
        };
        *ends.entry(end).or_default() += 1;
        flows += r.flows().len();
        check_run(r, &mut v);
    }
    eprintln!("{} captures: {ends:?}; {flows} flows explained", runs.len());
    assert!(runs.len() >= MIN_FILES && flows > 0, "too little ran");
    settle(
        &[
            Check::Runs,
            Check::ShareOver100,
            Check::BindingBelowMeasured,
            Check::CapBelowMeasured,
            Check::TuningForNonBulk,
            Check::UnclassedShortTuned,
            Check::LongFlowText,
        ],
        &v,
    );
}

#[test]
fn capture_duplicates_are_not_counted_as_retransmissions() {
    if !duplicates::tools_present() {
        plumb_testkit::skip_tool!("editcap and tshark are needed (scripts/test installs tshark)");
        return;
    }
    let scratch = common::TempDir::new("why-corpus-dups");
    let mut v = Vec::new();
    let mut compared = 0;
    for r in corpus::runs()
        .iter()
        .filter(|r| duplicates::plumb_resent(r) > 0)
    {
        if let Some(c) = duplicates::compare(r, &scratch) {
            compared += 1;
            eprintln!(
                "{}: {} duplicate(s); plumb {}, tshark without them {}",
                c.file, c.dropped, c.plumb, c.tshark
            );
            v.extend(duplicates::judge(&c));
        }
    }
    // zeek's ssh-dups.pcap holds 280 duplicate frames among its resent ones.
    assert!(
        compared > 0,
        "no capture with duplicates and retransmissions"
    );
    settle(&[Check::DuplicateAsRetransmission], &v);
}

#[test]
fn hand_labelled_flows_come_out_as_labelled() {
    let l = labels::load();
    let bad = labels::malformed(&l);
    assert!(bad.is_empty(), "labels.json: {bad:#?}");
    let files: std::collections::BTreeSet<&str> =
        l.labels.iter().map(|x| x.file.as_str()).collect();
    // public/'s captures are Zeek's (public/README.md).
    let sources: std::collections::BTreeSet<&str> = files
        .iter()
        .map(|f| {
            f.strip_prefix("corpus/")
                .and_then(|r| r.split('/').next())
                .unwrap_or("zeek")
        })
        .collect();
    assert!(
        l.labels.len() >= 30 && files.len() >= 15 && sources.len() >= 2,
        "too few labels"
    );
    let mut per_class: BTreeMap<&str, usize> = BTreeMap::new();
    for x in &l.labels {
        *per_class.entry(x.class.as_str()).or_default() += 1;
    }
    eprintln!(
        "{} labelled flows in {} files: {per_class:?}",
        l.labels.len(),
        files.len()
    );
    let mut v = Vec::new();
    labels::check(&l, corpus::runs(), &mut v);
    settle(
        &[
            Check::LabelFlowMissing,
            Check::LabelClass,
            Check::LabelNotYetClassed,
            Check::LabelCause,
        ],
        &v,
    );
}
