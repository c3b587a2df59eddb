//! The verdict box ([`verdict_html`]): a diagnosis's summary, rates, fixes
//! per system and evidence, for a test ([`verdict_panel`]) or for each
//! running connection; and the box that says a test failed
//! ([`error_panel`]).

use std::fmt::Write as _;

use crate::chart::esc;
use crate::format::{figures, os_name, rate};
use crate::html::extract::diagnosis::{Diagnosis, Evidence, Fix};
use crate::html::extract::Document;

/// A test that failed says so first (its document may hold nothing else).
pub fn error_panel(d: &Document) -> Option<String> {
    let e = d.error.as_deref()?;
    Some(format!(
        "<section class=\"verdict failed\"><p class=\"summary\">The test failed: {}</p></section>",
        esc(e)
    ))
}

/// The test's verdict, or a box saying the document names no limit.
pub fn verdict_panel(d: &Document) -> Option<String> {
    if d.live.is_some() {
        // Each running connection has its own verdict, in the live panel.
        return None;
    }
    let Some(dg) = &d.diagnosis else {
        return (!d.run.streams.is_empty()).then(|| {
            "<section class=\"verdict none\"><p>No diagnosis: the document holds too little evidence to name a limit.</p></section>"
                .into()
        });
    };
    // A diagnosis alone is the model's (plumb why --rate --rtt): its
    // "measured" rate is the model's own, not a measurement.
    Some(verdict_html(dg, "verdict", "", d.config.is_some()))
}

/// A diagnosis as the verdict box: `head` (HTML) above the summary;
/// `measured` when its rate was measured.
pub fn verdict_html(dg: &Diagnosis, class: &str, head: &str, measured: bool) -> String {
    let mut s = format!("<section class=\"{class}\">{head}");
    let _ = write!(
        s,
        "<p class=\"summary\">{}</p><table class=\"figures\"><tr>",
        esc(dg.summary.as_deref().unwrap_or("No limit named."))
    );
    let cell = |s: &mut String, k: &str, v: Option<f64>| {
        if let Some(v) = v {
            let _ = write!(s, "<td><span class=\"k\">{k}</span><b>{}</b></td>", rate(v));
        }
    };
    if measured {
        cell(&mut s, "measured", dg.measured_bps);
    }
    cell(&mut s, "predicted", dg.predicted_bps);
    cell(&mut s, "link carries", dg.link_bps);
    if let Some(c) = &dg.confidence {
        let _ = write!(
            s,
            "<td><span class=\"k\">confidence</span><b>{}</b></td>",
            esc(c)
        );
    }
    s.push_str("</tr></table>");
    if !dg.fixes.is_empty() {
        fixes(&mut s, &dg.fixes);
    }
    if !dg.evidence.is_empty() {
        evidence(&mut s, &dg.evidence);
    }
    s.push_str("</section>");
    s
}

/// What to change: the fix for this host's system, the others folded.
fn fixes(s: &mut String, fixes: &[Fix]) {
    s.push_str("<h3>What to change</h3><ul class=\"fixes\">");
    for (n, f) in fixes.iter().enumerate() {
        if n == 1 && fixes.len() > 2 {
            // The first fix is the one for this host's system; the rest fold.
            s.push_str("</ul><details><summary>Other systems</summary><ul class=\"fixes\">");
        }
        let expect = f.expected_bps.map_or(String::new(), |e| {
            format!(" → expect about <b>{}</b>", rate(e))
        });
        let _ = write!(
            s,
            "<li><b>{}</b>: {}{expect}",
            esc(os_name(&f.os)),
            esc(&f.note)
        );
        if !f.commands.is_empty() {
            s.push_str("<pre>");
            for c in &f.commands {
                let _ = writeln!(s, "{}", esc(c));
            }
            s.push_str("</pre>");
        }
        s.push_str("</li>");
    }
    s.push_str("</ul>");
    if fixes.len() > 2 {
        s.push_str("</details>");
    }
}

/// The evidence, folded: what was read and its value.
fn evidence(s: &mut String, ev: &[Evidence]) {
    s.push_str("<details><summary>Evidence</summary><table class=\"kv\">");
    for e in ev {
        let v = e.value.map_or(String::new(), |v| {
            if e.unit.as_deref() == Some("B") {
                format!("{} B", v as u64)
            } else {
                format!("{} {}", figures(v), e.unit.as_deref().unwrap_or(""))
            }
        });
        let _ = write!(s, "<tr><td>{}</td><td>{}</td></tr>", esc(&e.what), esc(&v));
    }
    s.push_str("</table></details>");
}
