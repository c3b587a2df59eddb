//! A capture of many flows at a glance: how many flows of each class and
//! the bytes they carried, with what sets the pace of each class; then the
//! bulk flows ranked, busiest first, each with its one-line verdict.

use plumb_diagnose::class::PRECEDENCE;
use plumb_diagnose::rules::{human_count, human_rate};
use plumb_record::capture::Explanation;
use plumb_record::class::FlowClass;

/// Bulk flows in the ranking.
const RANKED: usize = 10;

/// The class table.
pub fn classes(flows: &[Explanation]) -> String {
    let mut s = "\nFlows by class (the rules: docs/classes.md):\n".to_string();
    for class in PRECEDENCE {
        let of: Vec<&Explanation> = flows.iter().filter(|x| x.class == class).collect();
        let bytes: u64 = of.iter().map(|x| x.flow.data_bytes).sum();
        let what = if of.is_empty() {
            String::new()
        } else {
            format!("   {}", pace(class, &of))
        };
        s += &format!(
            "  {:<17} {:>6} flow(s) {:>15} B{what}\n",
            class.words(),
            human_count(of.len() as u64),
            human_count(bytes)
        );
    }
    s
}

/// What sets the pace of the flows of `class`, in a few words.
fn pace(class: FlowClass, of: &[&Explanation]) -> String {
    match class {
        FlowClass::Bulk => "each ranked below".into(),
        FlowClass::Interactive => "idle most of their life: not a throughput problem".into(),
        FlowClass::RequestResponse => {
            let server = of
                .iter()
                .filter(|x| {
                    let s = &x.shape;
                    s.server_time
                        .zip(s.rtt_s)
                        .is_some_and(|(t, r)| t.mean_s > r)
                })
                .count();
            format!(
                "the server's time dominates in {server}, the round trips in {}",
                of.len() - server
            )
        }
        FlowClass::Short => {
            let mut trips: Vec<u64> = of
                .iter()
                .filter_map(|x| {
                    let s = &x.shape;
                    let before = u64::from(s.handshake_s.is_some())
                        + s.longest_run.map_or(0, |r| r.exchanges_before);
                    s.longest_run
                        .and_then(|r| s.round_trips(&r))
                        .map(|n| n + before)
                })
                .collect();
            trips.sort_unstable();
            match trips.get(trips.len() / 2) {
                Some(m) => format!(
                    "{m} round trips each (median): round trips, not bandwidth, set their time"
                ),
                None => "round trips, not bandwidth, set their time".into(),
            }
        }
    }
}

/// The bulk flows, busiest first, with the lead of each verdict.
pub fn ranking(flows: &[Explanation]) -> String {
    let bulk: Vec<(usize, &Explanation)> = flows
        .iter()
        .enumerate()
        .filter(|(_, x)| x.class == FlowClass::Bulk || x.diagnosis.limit.is_some())
        .collect();
    if bulk.is_empty() {
        return "\nNo flow was long enough for a steady rate: none is limited by a window, a buffer or the link.\n".into();
    }
    let mut s = "\nBulk flows, busiest first:\n".to_string();
    for (i, x) in bulk.iter().take(RANKED) {
        let f = &x.flow;
        s += &format!(
            "  {}. {} -> {}: {} B, {}: {}\n",
            i + 1,
            f.sender,
            f.receiver,
            human_count(f.data_bytes),
            human_rate(f.measured_bps),
            one_line(&x.diagnosis.summary)
        );
    }
    if bulk.len() > RANKED {
        s += &format!(
            "  … and {} more bulk flow(s) (-J lists them)\n",
            human_count((bulk.len() - RANKED) as u64)
        );
    }
    s
}

/// A verdict's lead up to its first semicolon.
fn one_line(summary: &str) -> &str {
    summary
        .split(';')
        .next()
        .unwrap_or(summary)
        .trim_end_matches('.')
}
