//! The capture page: per capture, its flows busiest first, each with its
//! figures, its verdict when one was given, and its direction's charts.

use std::fmt::Write as _;

use plumb_capture::Analysis;

use super::charts::{rate_chart, rtt_chart, tseq_chart, window_chart};
use super::extract::{flows, Flow, MAX_FLOWS};
use crate::chart::esc;
use crate::format::{rate, thousands};
use crate::html::page::head;

/// One capture for the page.
#[derive(Debug, Clone)]
pub struct CaptureInput {
    /// Its name on the page (the file's).
    pub name: String,
    /// Its evidence, with series ([`plumb_capture::analyze_file_with_series`]).
    pub analysis: Analysis,
    /// Verdicts by connection index, already written; a connection with
    /// none (or past the end) shows no verdict.
    pub verdicts: Vec<Option<String>>,
}

/// The page for one or more captures.
pub fn render_captures(inputs: &[CaptureInput]) -> String {
    let title = match inputs {
        [one] => format!("plumb report: {}", one.name),
        _ => format!("plumb report: {} captures", inputs.len()),
    };
    let mut s = head(&title);
    for c in inputs {
        capture_section(&mut s, c);
    }
    s.push_str("<footer>Written by plumb report. Everything on this page is inline: it loads nothing.</footer></body></html>\n");
    s
}

fn capture_section(s: &mut String, c: &CaptureInput) {
    let f = flows(&c.analysis, &c.verdicts);
    let _ = write!(
        s,
        "<article class=\"run capture\"><h2>{}</h2><p class=\"sub\">{} TCP segments, {} connections",
        esc(&c.name),
        thousands(f.segments as f64),
        thousands(c.analysis.connections.len() as f64),
    );
    if f.more > 0 {
        let _ = write!(
            s,
            "; the {MAX_FLOWS} busiest are drawn, {} more are not",
            thousands(f.more as f64)
        );
    }
    if f.dropped > 0 {
        let _ = write!(
            s,
            "; {} of the least busy were dropped to bound memory",
            thousands(f.dropped as f64)
        );
    }
    s.push_str(".</p>");
    if f.flows.is_empty() {
        s.push_str("<p class=\"note\">No TCP connection in this capture.</p>");
    }
    for flow in &f.flows {
        flow_section(s, flow);
    }
    s.push_str("</article>");
}

fn flow_section(s: &mut String, f: &Flow) {
    let _ = write!(
        s,
        "<section class=\"flow\" data-flow=\"{}\"><h3>{} → {}</h3>",
        f.index,
        esc(&f.client),
        esc(&f.server)
    );
    if let Some(v) = &f.verdict {
        let _ = write!(
            s,
            "<div class=\"verdict\" data-slot=\"verdict\"><p class=\"summary\">{}</p></div>",
            esc(v)
        );
    }
    let rtt = f
        .handshake_rtt_ms
        .map_or("not captured".into(), |ms| format!("{ms:.3} ms"));
    let mean = |b: u64| {
        if f.duration_s > 0.0 {
            format!(" ({})", rate(b as f64 * 8.0 / f.duration_s))
        } else {
            String::new()
        }
    };
    let rows = [
        (
            "segments",
            format!(
                "{} from the client · {} from the server",
                thousands(f.packets.0 as f64),
                thousands(f.packets.1 as f64)
            ),
        ),
        (
            "payload bytes",
            format!(
                "{}{} from the client · {}{} from the server",
                thousands(f.bytes.0 as f64),
                mean(f.bytes.0),
                thousands(f.bytes.1 as f64),
                mean(f.bytes.1)
            ),
        ),
        (
            "retransmitted segments",
            format!(
                "{} from the client · {} from the server",
                thousands(f.retransmissions.0 as f64),
                thousands(f.retransmissions.1 as f64)
            ),
        ),
        ("duration", format!("{:.3} s", f.duration_s)),
        ("handshake RTT", rtt),
    ];
    s.push_str("<table class=\"kv\">");
    for (k, v) in rows {
        let _ = write!(s, "<tr><td>{k}</td><td>{}</td></tr>", esc(&v));
    }
    s.push_str("</table>");
    if f.directions.is_empty() {
        s.push_str("<p class=\"note\">No data carried: nothing to draw.</p>");
    }
    for d in &f.directions {
        for chart in [tseq_chart(d), rate_chart(d), rtt_chart(d), window_chart(d)]
            .into_iter()
            .flatten()
        {
            s.push_str(&chart.to_html());
        }
        if !d.ack.is_empty() && d.window.is_empty() {
            s.push_str("<p class=\"note\">The handshake was not captured, so the window scale is unknown: the advertised window and its edge are not drawn.</p>");
        }
        if d.bin_s > 1e-6 {
            let _ = write!(
                s,
                "<p class=\"note\">Thinned to bins of {}: each mark spans a bin's lowest to highest sequence number.</p>",
                crate::format::time_us(d.bin_s * 1e6)
            );
        }
    }
    s.push_str("</section>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::capture::extract::tests::{analysis, capture};

    #[test]
    fn the_page_holds_each_flow_its_verdict_and_what_it_cannot_draw() {
        let a = analysis(&capture(30));
        let mut many = a.clone();
        for _ in 0..MAX_FLOWS {
            many.connections.push(a.connections[0].clone());
        }
        let html = render_captures(&[CaptureInput {
            name: "x<y>.pcap".into(),
            analysis: many,
            verdicts: vec![Some("Limited by <the receive window>".into())],
        }]);
        assert!(html.contains("<title>plumb report: x&lt;y&gt;.pcap</title>"));
        assert_eq!(html.matches("<section class=\"flow\"").count(), MAX_FLOWS);
        assert!(
            html.contains("the 12 busiest are drawn, 1 more are not"),
            "{html}"
        );
        // The verdict slot, escaped, on the first connection only.
        assert_eq!(html.matches("data-slot=\"verdict\"").count(), 1);
        assert!(html.contains("Limited by &lt;the receive window&gt;"));
        // No handshake in this capture: the window is said to be unknown.
        assert!(html.contains("the window scale is unknown"));
        assert!(
            html.contains("data-chart=\"tseq\"") && !html.contains("data-chart=\"capture-window\"")
        );
        assert!(!html.contains("src=") && !html.contains("href="));
    }
}
