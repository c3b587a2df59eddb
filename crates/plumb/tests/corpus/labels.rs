//! Flows labelled by hand (`crates/capture/tests/corpus/labels.json`):
//! each one's class and, for bulk flows whose cause the capture shows, the
//! limit plumb must name. The file's own shape is checked first, so a
//! label cannot quietly stop meaning anything.

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::Value;

use super::checks::{class, Check, Violation};
use super::{captures_dir, Run};

/// The classes a flow can be labelled with, as `-J` will name them.
pub const CLASSES: [&str; 4] = ["short", "request_response", "interactive", "bulk"];

/// The limits a bulk flow's cause can name (`plumb_record::diagnosis::Limit`).
pub const CAUSES: [&str; 8] = [
    "receive_window",
    "send_buffer",
    "congestion",
    "loss",
    "link",
    "cpu",
    "application",
    "path_mtu",
];

#[derive(Debug, Deserialize)]
pub struct Labels {
    /// How each of tshark's figures was computed.
    pub figures: Value,
    pub labels: Vec<Label>,
}

#[derive(Debug, Deserialize)]
pub struct Label {
    /// Relative to `crates/capture/tests`.
    pub file: String,
    /// As `-J`'s `flow.client` and `flow.server` name them.
    pub client: String,
    pub server: String,
    pub class: String,
    /// For a bulk flow: the limit, or null where the capture does not show
    /// one; null for every other class.
    pub cause: Option<String>,
    pub why: String,
    pub tshark: Figures,
}

/// tshark's figures for the flow, on the capture without duplicate frames.
#[derive(Debug, Deserialize)]
pub struct Figures {
    pub bytes_client_to_server: u64,
    pub bytes_server_to_client: u64,
    pub duration_s: f64,
    pub initial_rtt_ms: Option<f64>,
    pub data_segments: u64,
    pub retransmissions: u64,
    pub exchanges: u64,
    pub longest_idle_s: f64,
}

/// Reads the labels, panicking on a file that does not parse.
pub fn load() -> Labels {
    let path = captures_dir().join("corpus/labels.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What is wrong with the labels file itself: an unknown class or cause, a
/// cause on a flow that is not bulk, an empty reason, a missing file, a
/// flow labelled twice.
pub fn malformed(l: &Labels) -> Vec<String> {
    let mut bad = Vec::new();
    let mut seen = BTreeSet::new();
    for x in &l.labels {
        let at = format!("{} {} -> {}", x.file, x.client, x.server);
        if !CLASSES.contains(&x.class.as_str()) {
            bad.push(format!("{at}: class {:?}", x.class));
        }
        match (&x.cause, x.class.as_str()) {
            (Some(c), "bulk") if !CAUSES.contains(&c.as_str()) => {
                bad.push(format!("{at}: cause {c:?}"))
            }
            (Some(c), k) if k != "bulk" => bad.push(format!("{at}: cause {c:?} on a {k} flow")),
            _ => {}
        }
        if x.why.split_whitespace().count() < 8 {
            bad.push(format!("{at}: no sentence on why"));
        }
        if !captures_dir().join(&x.file).is_file() {
            bad.push(format!("{at}: no such file"));
        }
        if !seen.insert(at.clone()) {
            bad.push(format!("{at}: labelled twice"));
        }
    }
    bad
}

/// Each label against plumb's run of its file.
pub fn check(l: &Labels, runs: &[Run], out: &mut Vec<Violation>) {
    for x in &l.labels {
        let v = |check, what: String| Violation {
            check,
            file: x.file.clone(),
            flow: format!("{} -> {}", x.client, x.server),
            what,
        };
        let run = runs.iter().find(|r| r.file == x.file);
        let flow = run.and_then(|r| {
            r.flows().iter().find(|f| {
                f["flow"]["client"].as_str() == Some(&x.client)
                    && f["flow"]["server"].as_str() == Some(&x.server)
            })
        });
        let Some(f) = flow else {
            out.push(v(
                Check::LabelFlowMissing,
                "not among plumb's explained flows".into(),
            ));
            continue;
        };
        match class(f) {
            Some(c) if c != x.class => out.push(v(
                Check::LabelClass,
                format!("plumb says {c}, labelled {}", x.class),
            )),
            Some(_) => {}
            None => out.push(v(
                Check::LabelNotYetClassed,
                format!("labelled {}", x.class),
            )),
        }
        let limit = f["diagnosis"]["limit"].as_str().unwrap_or("none");
        if let Some(cause) = &x.cause {
            if limit != cause {
                let summary = f["diagnosis"]["summary"].as_str().unwrap_or("");
                out.push(v(
                    Check::LabelCause,
                    format!("plumb names {limit}, labelled {cause}: {summary}"),
                ));
            }
        }
    }
}
