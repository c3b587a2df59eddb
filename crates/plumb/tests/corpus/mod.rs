//! The captures `why_corpus.rs` holds `plumb why -r` to: the corpus of
//! public captures (`crates/capture/tests/corpus/`, where each comes from
//! and under which licence: its README) and the older `public/` set, each
//! run once in both forms (text and `-J`), in a few threads, the results
//! shared by every test of the binary.
#![allow(dead_code)]

pub mod checks;
pub mod duplicates;
pub mod labels;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;

use crate::common::{plumb_bin, try_run};

/// How long one `plumb why -r FILE` may run before it counts as a hang.
pub const LIMIT: Duration = Duration::from_secs(10);

/// Files in the capture directories that are not captures.
const NOT_CAPTURES: [&str; 3] = ["LICENSE", "README.md", "LICENSE.zeek"];

/// `crates/capture/tests`: the labels and the README name files relative
/// to it (`corpus/zeek/…`, `public/…`).
pub fn captures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../capture/tests")
}

/// The corpus's sources: its subdirectories (`zeek`, `arkime`, …), sorted.
pub fn sources() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(captures_dir().join("corpus"))
        .expect("the corpus directory")
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The captures of one directory under [`captures_dir`], as paths relative
/// to it, sorted.
pub fn captures_in(dir: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(captures_dir().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .filter_map(Result::ok)
        .filter(|e| e.path().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !NOT_CAPTURES.contains(&n.as_str()))
        .map(|n| format!("{dir}/{n}"))
        .collect();
    v.sort();
    v
}

/// Every capture: each corpus source's, then `public/`'s.
pub fn all_captures() -> Vec<String> {
    let mut v: Vec<String> = sources()
        .iter()
        .flat_map(|s| captures_in(&format!("corpus/{s}")))
        .collect();
    v.extend(captures_in("public"));
    v
}

/// What one form of `plumb why -r FILE` came to.
#[derive(Debug)]
pub enum Outcome {
    /// Exit 0: the `-J` document (or the text) with connections explained.
    Explained(String),
    /// Exit 1 with the one line docs/why.md gives it: no TCP connection
    /// carried data (the `-J` document is still printed, its `explained`
    /// empty).
    NothingToExplain(String),
    /// Exit 2 with one line on stderr: not a capture, or an empty one
    /// (docs/why.md: "a bad file ... is one line on stderr and exit 2").
    BadFile(String),
    /// Anything else: a panic, a signal, another exit code, more than one
    /// line of error, or no end within [`LIMIT`] — the reason.
    Failed(String),
}

/// Both forms' outcomes for one file, and the `-J` document when one was
/// printed.
#[derive(Debug)]
pub struct Run {
    /// Relative to [`captures_dir`].
    pub file: String,
    pub json: Outcome,
    pub text: Outcome,
    pub doc: Option<Value>,
}

impl Run {
    /// The explained flows of the `-J` document (none without one).
    pub fn flows(&self) -> &[Value] {
        self.doc
            .as_ref()
            .and_then(|d| d["explained"].as_array())
            .map_or(&[], Vec::as_slice)
    }

    /// The stdout of the text form, when it ran.
    pub fn text(&self) -> &str {
        match &self.text {
            Outcome::Explained(t) | Outcome::NothingToExplain(t) => t,
            _ => "",
        }
    }
}

/// Sorts an exit into an [`Outcome`].
fn outcome(result: Result<Output, Output>) -> Outcome {
    let o = match result {
        Ok(o) => o,
        Err(_) => return Outcome::Failed(format!("no end within {LIMIT:?}")),
    };
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    if err.contains("panicked") {
        return Outcome::Failed(format!("panicked: {}", err.trim()));
    }
    let one_line = err.trim_end().lines().count() == 1 && err.starts_with("plumb: ");
    match o.status.code() {
        Some(0) if err.trim().is_empty() => Outcome::Explained(out),
        Some(1) if one_line && err.contains("carried data") => Outcome::NothingToExplain(out),
        Some(2) if one_line && out.is_empty() => Outcome::BadFile(err.trim().to_string()),
        _ => Outcome::Failed(format!("{}; stderr: {}", o.status, err.trim())),
    }
}

/// Runs both forms on one file.
fn run_one(file: &str) -> Run {
    let path = captures_dir().join(file);
    let p = path.to_str().expect("a UTF-8 path");
    let json = outcome(try_run(plumb_bin(), &["why", "-r", p, "-J"], LIMIT));
    let text = outcome(try_run(plumb_bin(), &["why", "-r", p], LIMIT));
    let doc = match &json {
        Outcome::Explained(s) | Outcome::NothingToExplain(s) => serde_json::from_str(s).ok(),
        _ => None,
    };
    Run {
        file: file.to_string(),
        json,
        text,
        doc,
    }
}

/// Every capture run once, in file order; the first test to ask runs them
/// (in up to 4 threads), the others wait for it.
pub fn runs() -> &'static [Run] {
    static RUNS: OnceLock<Vec<Run>> = OnceLock::new();
    RUNS.get_or_init(|| {
        let files = all_captures();
        let next = AtomicUsize::new(0);
        let done = Mutex::new(Vec::with_capacity(files.len()));
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(f) = files.get(i) else { break };
                    let r = run_one(f);
                    done.lock().expect("results").push((i, r));
                });
            }
        });
        let mut v = done.into_inner().expect("results");
        v.sort_by_key(|(i, _)| *i);
        v.into_iter().map(|(_, r)| r).collect()
    })
}

/// A flow as `-J` names it: "client -> server" (the sender when the
/// client is unknown).
pub fn flow_name(x: &Value) -> String {
    let f = &x["flow"];
    let s = |k: &str| f[k].as_str().unwrap_or("").to_string();
    if s("client").is_empty() {
        format!("? -> {} (sender)", s("sender"))
    } else {
        format!("{} -> {}", s("client"), s("server"))
    }
}
