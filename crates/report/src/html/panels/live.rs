//! `plumb why` on running connections: a table of every connection,
//! busiest first, then a verdict box per busy one. The document keeps each
//! connection's totals over the sampling, not the samples, so there is no
//! chart to draw.

use std::fmt::Write as _;

use super::verdict::verdict_html;
use crate::chart::esc;
use crate::format::{figures_trimmed, rate};
use crate::html::extract::live::LiveConn;
use crate::html::extract::Document;

/// A connection's owner as a page names it: `rsync (pid 42)`, `pid 42`, or
/// `unknown` when neither is known.
pub(crate) fn process_name(cmd: Option<&str>, pid: Option<u64>, unknown: &str) -> String {
    match (cmd, pid) {
        (Some(cmd), Some(pid)) => format!("{cmd} (pid {pid})"),
        (None, Some(pid)) => format!("pid {pid}"),
        _ => unknown.into(),
    }
}

fn process(c: &LiveConn) -> String {
    process_name(c.command.as_deref(), c.pid, "process unknown")
}

/// What this host did on `c`, as a verb.
fn end(c: &LiveConn) -> &'static str {
    match c.this_host.as_deref() {
        Some("sender") => "sends",
        Some("receiver") => "receives",
        Some("idle") => "idle",
        _ => "–",
    }
}

/// The first fix (the one for this host's system) with its expected rate.
fn first_fix(c: &LiveConn) -> String {
    c.diagnosis
        .as_ref()
        .and_then(|d| d.fixes.first())
        .map_or("–".into(), |f| {
            let e = f
                .expected_bps
                .map_or(String::new(), |e| format!(" → about {}", rate(e)));
            format!("{}{e}", f.note)
        })
}

/// The table of connections and a verdict box per busy one.
pub fn live_panel(d: &Document) -> Option<String> {
    let live = d.live.as_ref()?;
    let conns = &live.connections;
    let mut s = String::from("<section class=\"live\"><h3>Running connections</h3>");
    let _ = write!(
        s,
        "<p class=\"sub\">{} TCP connection{} matching {}, sampled through sock_diag for {} s; busiest first.</p>",
        conns.len(),
        if conns.len() == 1 { "" } else { "s" },
        esc(live.filter.as_deref().unwrap_or("the filter")),
        live.seconds.map_or("–".into(), figures_trimmed)
    );
    if conns.is_empty() {
        s.push_str("<p class=\"note\">No connection matched.</p></section>");
        return Some(s);
    }
    s.push_str(
        "<table class=\"compare live\"><tr><th>#</th><th>connection</th><th>process</th><th>this host</th>\
         <th>measured</th><th>limit</th><th>predicted</th><th>fix</th></tr>",
    );
    for (n, c) in conns.iter().enumerate() {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            n + 1,
            esc(&c.name()),
            esc(&process(c)),
            end(c),
            esc(&rate(c.rate())),
            esc(&c.limit()),
            c.diagnosis
                .as_ref()
                .and_then(|d| d.predicted_bps)
                .map_or("–".into(), rate),
            esc(&first_fix(c))
        );
    }
    s.push_str("</table>");
    for (n, c) in conns.iter().enumerate() {
        let Some(dg) = &c.diagnosis else { continue };
        if c.is_idle() {
            continue;
        }
        let mut about = vec![process(c), format!("this host {}", end(c)), rate(c.rate())];
        about.extend(c.congestion.clone());
        about.extend(c.samples.as_ref().map(|n| format!("{n} samples")));
        if c.closed {
            about.push("closed while sampled".into());
        }
        let head = format!(
            "<p class=\"conn\"><b>#{} {}</b> <span class=\"sub\">{}</span></p>",
            n + 1,
            esc(&c.name()),
            esc(&about.join(" · "))
        );
        s.push_str(&verdict_html(dg, "verdict conn", &head, true));
    }
    s.push_str("</section>");
    Some(s)
}
