//! The connections `plumb why` sampled, explained one by one, busiest
//! first: each with its row of the document (identity, rate, samples,
//! class) and, when it was read twice, the diagnosis and the evidence it
//! was drawn from, with what sampling could not see said in its unknowns.
//! The caller words them and writes the document.

use std::collections::HashMap;

use plumb_diagnose::Evidence;
use plumb_model::Rate;
use plumb_record::diagnosis::Diagnosis;
use plumb_record::ConnectionRow;

use crate::connection_row::identity;
use crate::evidence::{explain_classed, Context, ProcCpu};
use crate::sample::Sampled;
use crate::sys::{Listeners, Owner};
use crate::{link, Track};

/// The note of a connection closed before a second sample.
pub const CLOSED_EARLY: &str = "closed before a second sample: nothing to measure";

/// One sampled connection, explained.
#[derive(Debug)]
pub struct Explained<'a> {
    /// The connection across the samples.
    pub track: &'a Track,
    /// Its owner, when found.
    pub owner: Option<Owner>,
    /// Its row of the document, the diagnosis not yet in it.
    pub row: ConnectionRow,
    /// The diagnosis and its evidence; `None` for a connection closed
    /// before a second sample ([`CLOSED_EARLY`] is its row's note).
    pub diagnosis: Option<(Diagnosis, Evidence)>,
}

/// Explains every connection `s` holds, busiest first. `link` is the rate
/// given, else each peer's route; `denied` counts the processes whose
/// sockets could not be read (an unknown owner may be one of them).
pub fn explain(s: &Sampled, link: Option<Rate>, denied: usize) -> Vec<Explained<'_>> {
    let mut tracks: Vec<&Track> = s.tracker.tracks.iter().collect();
    tracks.sort_by(|a, b| b.rate_bps().total_cmp(&a.rate_bps()));
    // One end reading per process, however many of its connections match.
    let mut cpus: HashMap<u32, Option<ProcCpu>> = HashMap::new();
    // Which end opened each connection: read once, after the sampling.
    let mut listeners = Listeners::default();
    // This host's settings, once: a fix for this end raises what it has.
    let sysctls = plumb_net::host::tcp_sysctls();
    let mut out = Vec::with_capacity(tracks.len());
    for tr in tracks {
        let owner = s.owner_of.get(&tr.first.cookie).cloned();
        let mut row = identity(tr, owner.as_ref());
        if tr.samples < 2 {
            row.closed = true;
            row.note = Some(CLOSED_EARLY.into());
            out.push(Explained {
                track: tr,
                owner,
                row,
                diagnosis: None,
            });
            continue;
        }
        let cpu = owner
            .as_ref()
            .and_then(|o| *cpus.entry(o.pid).or_insert_with(|| s.cpu(o.pid)));
        let ctx = Context {
            link: link::for_peer(tr.last.remote.ip(), link),
            cpu,
            pid: owner.as_ref().map(|o| o.pid),
            opened: listeners.opened(tr.last.local),
            sysctls: sysctls.clone(),
        };
        let (mut d, ev, class) = explain_classed(tr, &ctx);
        if tr.closed {
            d.unknown.push(format!(
                "the rest of the transfer: the connection closed {:.1} s into sampling",
                tr.t_last
            ));
        }
        if denied > 0 && owner.is_none() {
            d.unknown.push(format!(
                "the owning process: {denied} processes' sockets could not be read (run as root)"
            ));
        }
        row.closed = tr.closed;
        row.rate_bps = Some(tr.rate_bps());
        row.samples = Some(tr.samples);
        row.class = Some(class.class);
        row.class_why = Some(class.why);
        out.push(Explained {
            track: tr,
            owner,
            row,
            diagnosis: Some((d, ev)),
        });
    }
    out
}
