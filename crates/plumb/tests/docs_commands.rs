//! Every `plumb` command line the README, `docs/` and each `--help`'s
//! examples show runs here, as a
//! reader would type it, and succeeds: exit status 0, no panic, and a
//! command that runs until stopped (a server, the exporter, `top`, a held
//! lab) shows it works and ends on Ctrl-C.
//!
//! What differs from the reader's run, and why: the reader's hosts (`HOST`,
//! `nas.example`, `web.example`) are the far side of a pair of namespaces
//! this test builds ([`docs::scene`]); durations shrink to one second
//! (`-t N`, `--for N`, and `-t 1` for a test against `HOST` or a `demo`
//! that names no length; `top -n N` reads twice) so the whole list runs in a minute; the files a line reads are made beforehand in the
//! directory the lines run in; a line that names loopback (`--help`'s
//! `plumb -c 127.0.0.1`) runs on the far side, where a server listens.
//! `plumb lab` and `plumb demo` lines build their own labs and run outside
//! the scene. Needs root (namespaces).
//! A line added to the docs is run by this test without a change here.

mod common;
mod docs;

use common::*;
use docs::lines::{self, DocLine, Kind};
use docs::scene::{Scene, FAR};
use std::path::Path;

fn doc_lines() -> Vec<DocLine> {
    let help = |sub: &str| {
        let args: Vec<&str> = [sub, "--help"]
            .into_iter()
            .filter(|a| !a.is_empty())
            .collect();
        let out = run(plumb_bin(), &args, std::time::Duration::from_secs(10));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    lines::all(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."), help)
}

/// The reading itself: the docs hold the lines this test is about, each
/// block's lines found (a command split over lines read whole).
#[test]
fn the_docs_command_lines_are_found() {
    let all = doc_lines();
    assert!(all.len() >= 50, "only {} command lines found", all.len());
    let has = |s: &str| all.iter().any(|d| d.shown == s);
    assert!(has(
        "plumb calc --rate 1Gbit --rtt 15ms --window 17520 --tcp-timestamps off"
    ));
    assert!(all.iter().any(|d| d
        .shown
        .starts_with("plumb lab --rate 1g --rtt 15ms --far-exec")
        && d.shown.contains("--exec 'curl")));
    assert!(
        all.iter().all(|d| !d.shown.contains(" # ")),
        "a comment left in a line"
    );
    assert!(
        !all.iter().any(|d| d.shown.starts_with("plumb top —")),
        "output read as a command"
    );
}

/// How the test words each line: hosts and durations only.
#[test]
fn a_line_is_run_with_the_scene_host_and_short_durations() {
    let d = |s: &str| DocLine {
        places: vec![],
        shown: s.into(),
    };
    assert_eq!(
        d("plumb -c HOST --crr -t 10").as_run(FAR),
        "plumb -c 198.18.0.2 --crr -t 1"
    );
    assert_eq!(
        d("plumb handshake nas.example:445").as_run(FAR),
        "plumb handshake 198.18.0.2:445"
    );
    assert_eq!(
        d("plumb top -n 60 --json -p 873").as_run(FAR),
        "plumb top -n 2 --json -p 873"
    );
    assert_eq!(
        d("plumb -c HOST -n 1M").as_run(FAR),
        "plumb -c 198.18.0.2 -n 1M"
    );
    assert_eq!(d("plumb -s &").as_run(FAR), "plumb -s");
    assert_eq!(
        d("plumb -c HOST -J > before.json").as_run(FAR),
        "plumb -c 198.18.0.2 -t 1 -J > before.json"
    );
    assert_eq!(
        d("plumb why HOST --link 1g").as_run(FAR),
        "plumb why 198.18.0.2 -t 1 --link 1g"
    );
    assert_eq!(
        d("plumb demo --report demo.html").as_run(FAR),
        "plumb demo -t 1 --report demo.html"
    );
    assert_eq!(d("plumb -s &").kind(), Kind::Serves);
    assert_eq!(d("plumb top").kind(), Kind::Serves);
    assert_eq!(
        d("plumb lab --rate 1g --rtt 15ms --hold").kind(),
        Kind::Serves
    );
    assert_eq!(d("plumb demo -t 10").kind(), Kind::Lab);
}

/// What a line that runs until stopped prints once it works.
fn ready_mark(shown: &str) -> &'static str {
    if shown.contains("--hold") {
        "up until Ctrl-C"
    } else if shown.starts_with("plumb exporter") {
        "serving http"
    } else if shown.starts_with("plumb top") {
        "plumb top"
    } else {
        "listening"
    }
}

/// Runs one line; None when it did what it should, else what went wrong.
fn check(scene: &Scene, d: &DocLine) -> Option<String> {
    let cmd = d.as_run(FAR);
    // A line that names loopback runs where the server listens: on far.
    let ns = if d.kind() == Kind::Lab || cmd.contains("--hold") {
        ""
    } else if cmd.contains(" 127.0.0.1") {
        scene.far.as_str()
    } else {
        scene.near.as_str()
    };
    let failed = match d.kind() {
        Kind::Serves => scene.start_stop(ns, &cmd, ready_mark(&d.shown)).err(),
        Kind::Lab | Kind::Ends => {
            let limit = if d.kind() == Kind::Lab { 120 } else { 40 };
            let ran = scene.run(ns, &cmd, limit);
            match ran.status {
                Some(s) if s.success() && !ran.output.contains("panicked") => None,
                Some(s) => Some(format!("{s}: {}", ran.output)),
                None => Some(format!("ran past {limit} s: {}", ran.output)),
            }
        }
    };
    failed.map(|why| format!("{} ({}): `{cmd}`: {why}", d.shown, d.places.join(", ")))
}

fn run_kind(tag: &str, pick: impl Fn(&DocLine) -> bool) {
    if !can_lab() {
        return;
    }
    let scene = Scene::build(plumb_bin(), tag);
    let chosen: Vec<DocLine> = doc_lines().into_iter().filter(|d| pick(d)).collect();
    assert!(!chosen.is_empty());
    // The check fails a line that does not run: a flag plumb does not have.
    let wrong = DocLine {
        places: vec!["(this test)".into()],
        shown: "plumb calc --rate 1g --rtt 15ms --no-such-flag".into(),
    };
    assert!(check(&scene, &wrong).is_some(), "a wrong line passed");
    let failures: Vec<String> = chosen
        .iter()
        .filter_map(|d| {
            let t0 = std::time::Instant::now();
            let failed = check(&scene, d);
            eprintln!(
                "{:>5.1} s  {}  {}",
                t0.elapsed().as_secs_f64(),
                d.places[0],
                d.as_run(FAR)
            );
            failed
        })
        .collect();
    drop(scene);
    let left = leftovers();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(
        failures.is_empty(),
        "{} of {} lines failed:\n{}",
        failures.len(),
        chosen.len(),
        failures.join("\n")
    );
}

/// The lines that run in the scene: calc, why, top, report, handshake,
/// tests against far, the server and the exporter.
#[test]
fn every_scene_line_runs() {
    run_kind("s", |d| {
        d.kind() != Kind::Lab && !d.shown.contains("--hold")
    });
}

/// The lines that build a lab (`plumb lab`, `plumb demo`, a held lab).
#[test]
fn every_lab_line_runs() {
    run_kind("l", |d| d.kind() == Kind::Lab || d.shown.contains("--hold"));
}
