//! What the document's writer did not record, said rather than drawn empty:
//! no samples over time for running connections, no intervals, TCP's state
//! absent from a UDP test or a receiving end, limit counters a stock
//! iperf3 does not keep.

use crate::chart::esc;
use crate::html::extract::Document;

/// A note of what is not in the document, when something is not.
pub fn missing_panel(d: &Document) -> Option<String> {
    if d.top.is_some() {
        // The top panel says what it drew and what it left out.
        return None;
    }
    if let Some(live) = &d.live {
        let samples = live.connections.iter().filter_map(|c| c.sample_count).max();
        return Some(format!(
            "<p class=\"note\">No charts: plumb why on running connections keeps each connection's totals over the time it sampled{}, not the samples themselves, so there is nothing over time to draw.</p>",
            samples.map_or(String::new(), |n| format!(" ({n} samples at most)"))
        ));
    }
    let run = &d.run;
    if run.streams.is_empty() {
        let what = if d.config.is_some() {
            "No intervals in this document."
        } else {
            "No test in this document: a diagnosis alone."
        };
        return Some(format!("<p class=\"note\">{what}</p>"));
    }
    let mut gaps = Vec::new();
    let senders = run.streams.iter().any(|s| s.sender);
    let udp = d
        .config
        .as_ref()
        .is_some_and(|c| c.protocol.as_deref() == Some("UDP"));
    if udp {
        gaps.push("TCP's state and limit counters: this was a UDP test".to_string());
    } else if !senders {
        gaps.push("TCP's state (window, RTT, retransmits): it is recorded by the sending end, and this end only received (a -R test: see the server's document)".to_string());
    } else {
        if run.streams.iter().all(|s| s.cwnd.is_empty()) {
            gaps.push("the congestion window".into());
        }
        if run.streams.iter().all(|s| s.rwnd_limited_pct.is_empty()) {
            gaps.push(format!(
                "the share of each interval limited by the receive window or the send buffer ({} does not record TCP_INFO's limit counters)",
                run.producer
            ));
        }
    }
    (!gaps.is_empty()).then(|| {
        let mut s = String::from("<p class=\"note\">Not in this document: ");
        s.push_str(&esc(&gaps.join("; ")));
        s.push_str(".</p>");
        s
    })
}
