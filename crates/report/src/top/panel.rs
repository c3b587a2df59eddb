//! The panel of a top log: what it holds and left out, the connection
//! table, the charts over time and the limit per interval.

use std::fmt::Write as _;

use super::charts::{limit_strip, rtt_chart, throughput_chart, window_chart};
use super::data::{TopConn, TopData, MAX_DRAWN};
use crate::chart::esc;
use crate::format::{figures_trimmed, rate, thousands};

/// The connection table: identity, what this host did, rates, the limits
/// seen and when they changed.
fn table(t: &TopData) -> String {
    let mut s = String::from(
        "<table class=\"compare live\"><tr><th>#</th><th>connection</th><th>process</th><th>this host</th>\
         <th>mean rate</th><th>peak</th><th>retransmits</th><th>limits seen</th><th>limit by interval</th></tr>",
    );
    for (k, c) in t.conns.iter().enumerate() {
        let process =
            crate::html::panels::live::process_name(c.command.as_deref(), c.pid, "unknown");
        let mut seen: Vec<(String, usize)> = Vec::new();
        for smp in c.samples.iter().filter(|s| s.direction != "idle") {
            let l = TopConn::limit_at(smp);
            match seen.iter_mut().find(|x| x.0 == l) {
                Some(x) => x.1 += 1,
                None => seen.push((l, 1)),
            }
        }
        let seen = if seen.is_empty() {
            "– (idle)".to_string()
        } else {
            seen.iter()
                .map(|(l, n)| format!("{l} ({n} of {})", c.samples.len()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let runs = c.limit_runs();
        let mut by: Vec<String> = runs
            .iter()
            .take(12)
            .map(|(a, b, l, _)| {
                if a == b {
                    format!("{a} {l}")
                } else {
                    format!("{a}–{b} {l}")
                }
            })
            .collect();
        if runs.len() > 12 {
            by.push(format!("and {} more changes", runs.len() - 12));
        }
        let peak = c.samples.iter().map(|s| s.rate_bps).fold(0.0, f64::max);
        let retrans: f64 = c.samples.iter().filter_map(|s| s.retransmits).sum();
        let mut who = c.role().to_string();
        if let Some(cc) = &c.congestion {
            let _ = write!(who, ", {cc}");
        }
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{} → {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            k + 1,
            esc(&c.local),
            esc(&c.remote),
            esc(&process),
            esc(&who),
            rate(c.mean_bps()),
            rate(peak),
            thousands(retrans),
            esc(&seen),
            esc(&by.join(", "))
        );
    }
    s.push_str("</table>");
    s
}

/// The panel of a top log: what it holds and left out, the table, the
/// charts over time and the limit per interval.
pub fn panel(t: &TopData) -> String {
    let mut s = String::from("<section class=\"top\"><h3>Connections over time</h3>");
    let n = t.conns.len();
    let _ = write!(
        s,
        "<p class=\"sub\">{} connection{} drawn, busiest first by data moved, over plumb top's intervals {} to {} \
         (1 s each unless top ran with -i; the log does not say).</p>",
        n,
        if n == 1 { "" } else { "s" },
        t.first,
        t.last
    );
    let mut left = Vec::new();
    if t.left_busy > 0 {
        left.push(format!(
            "{} more busy connection{} (together {} % of the data moved; only the {MAX_DRAWN} busiest are drawn)",
            t.left_busy,
            if t.left_busy == 1 { "" } else { "s" },
            figures_trimmed(t.left_busy_share * 100.0)
        ));
    }
    if t.left_idle > 0 {
        left.push(format!(
            "{} connection{} idle in every reading",
            t.left_idle,
            if t.left_idle == 1 { "" } else { "s" }
        ));
    }
    if !left.is_empty() {
        let _ = write!(
            s,
            "<p class=\"note\">Left out: {}.</p>",
            esc(&left.join("; "))
        );
    }
    if t.conns.is_empty() {
        s.push_str("<p class=\"note\">No connection moved data in any interval read: nothing to draw.</p></section>");
        return s;
    }
    s.push_str(&table(t));
    for c in [throughput_chart(t), rtt_chart(t), window_chart(t)]
        .into_iter()
        .flatten()
    {
        s.push_str(&c.to_html());
    }
    if t.conns.iter().any(|c| !c.sends()) {
        s.push_str(
            "<p class=\"note\">RTT and congestion window are drawn for the connections this host sends on: \
             a receiving end's TCP has little of its own to time, and its window is the sender's to use.</p>",
        );
    }
    s.extend(limit_strip(t));
    s.push_str("</section>");
    s
}
