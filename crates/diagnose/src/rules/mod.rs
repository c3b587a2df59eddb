//! The rules: which limits the evidence shows and what each predicts, one
//! file per rule.
//!
//! Each rule looks at its own evidence (TCP's limit counters, windows,
//! buffers, retransmissions, CPU, the MSS, the link) and, when that evidence
//! is there, reports what it saw (a `Seen`, in `seen.rs`) with the rate its
//! `plumb-model` formula predicts (or none, for a cause with no rate model);
//! `weigh.rs` turns each into a [`Finding`] and picks the primary. A rule
//! never fires on evidence that is missing. `docs/diagnosis.md` gives the
//! reasoning.
//!
//! The rules, in the order they are asked (ties in confidence keep it):
//! `receive_window`, `send_buffer`, `application`, `udp_loss`, `cpu`,
//! `path_mtu`, `loss` and `link`; then, only when none of those explains
//! the rate or binds, `congestion` and a starved CPU thread (in `cpu`).
//! `context` holds what they all read.

mod application;
mod congestion;
pub(crate) mod context;
pub(crate) mod cpu;
mod link;
mod loss;
pub(crate) mod path_mtu;
mod receive_window;
mod send_buffer;
mod udp_loss;

pub use crate::human::{human_count, human_rate};
pub use crate::payload::{efficiency, sndbuf_payload, udp_efficiency, UDP_PAYLOAD};
pub use crate::summary::lead;
pub use crate::tolerance::{
    explains, BINDING_SHARE, CONTRADICTED_SHARE, MISSING_FACTOR, TOLERANCE,
};
pub use cpu::{
    quota_binds, quota_of, CGROUP_THROTTLED_SHARE, CPU_BINDING_SHARE, CPU_STARVED_SHARE,
    CPU_THREAD_BINDING_SHARE,
};
pub use loss::MATHIS_TOLERANCE;
pub use send_buffer::SNDBUF_TOLERANCE;
pub use udp_loss::UDP_LOSS_SEEN;

use plumb_record::diagnosis::{Diagnosis, Finding, Limit};

use crate::evidence::Evidence;
use crate::path;
use crate::seen::Seen;
use crate::weigh;
use context::Context;

/// Weighs the evidence. The one entry point: every evidence source (a `-J`
/// document, the model alone, a live connection) builds an [`Evidence`].
///
/// Without a given link rate, a transfer whose sender shows it filling its
/// path (`path`) is weighed against that path as its link. The inferred
/// path stands only when the answer agrees that the path is full (the link,
/// or a small MSS filling it with headers); where another cause explains
/// the rate better (loss, a window), the evidence is weighed as it came, so
/// no figure quotes a link that is only the measurement.
///
/// A sender that stalled in retransmission timeouts behind a path-MTU black
/// hole (`stall`) is limited by that, whatever the rates say.
pub fn diagnose(ev: &Evidence) -> Diagnosis {
    let mut d = weighed(ev);
    crate::stall::black_hole(ev, &mut d);
    d
}

/// The rules' answer, with the path inferred where it stands.
fn weighed(ev: &Evidence) -> Diagnosis {
    if let Some((e, p)) = path::with_path(ev, context::timestamps(ev)) {
        let d = weigh_all(&e, Some(p));
        if matches!(d.limit, Some(Limit::Link | Limit::PathMtu)) {
            return d;
        }
    }
    weigh_all(ev, None)
}

/// Every rule's observation weighed into the answer, with the path when it
/// was inferred.
fn weigh_all(ev: &Evidence, path: Option<path::PathFull>) -> Diagnosis {
    let mut cx = Context::new(ev);
    let mut unknown = unknown(ev);
    if path.is_some() {
        // The path's rate is no longer unknown, only not stated.
        unknown.retain(|u| !u.starts_with("the link rate"));
        unknown.push("the link rate: inferred from the path, not stated (--link states it)".into());
    }
    cx.path = path;
    let mut findings = weigh::each(observe(&cx, &mut unknown), cx.measured);
    path::only_feeds_the_queue(ev, &mut findings);
    // Two rules speak only when nothing above accounts for the rate.
    if !findings.iter().any(Finding::candidate) {
        findings.extend(congestion::seen(&cx).map(|s| s.weigh(cx.measured)));
    }
    if !findings.iter().any(Finding::candidate) {
        cpu::promote_starved(ev, &mut findings);
    }
    weigh::answer(ev, cx.figures, findings, unknown)
}

/// What every rule but the last two saw, in the order ties keep. The link
/// rule adds to `unknown` a stated link slower than the measurement.
fn observe(cx: &Context, unknown: &mut Vec<String>) -> Vec<Seen> {
    let mut seen = Vec::new();
    seen.extend(receive_window::seen(cx));
    seen.extend(send_buffer::seen(cx));
    seen.extend(application::seen(cx));
    seen.extend(udp_loss::seen(cx));
    seen.extend(cpu::seen(cx));
    seen.extend(path_mtu::seen(cx));
    seen.extend(path_mtu::lowered(cx));
    seen.extend(loss::seen(cx));
    seen.extend(link::seen(cx, unknown));
    seen
}

/// What the evidence could not tell, and what a UDP or bidirectional test
/// leaves out of the diagnosis.
fn unknown(ev: &Evidence) -> Vec<String> {
    let mut unknown = ev.unknown.clone();
    if !ev.tcp {
        unknown.push(
            "TCP's window, buffer and congestion evidence: UDP has none, so this UDP test is weighed by its rate cap, its loss, the link and CPU".into(),
        );
    }
    if ev.bidir {
        unknown.push("bidirectional test: only the client-to-server direction is diagnosed".into());
    }
    unknown
}
