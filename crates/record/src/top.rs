//! One line of `plumb top --json` ([`TopLine`]): a connection in one
//! interval, with the keys the command documents. Without TCP_INFO (a dump
//! that carried none) the RTT, congestion window and window are unknown
//! (`null`), not zero. `plumb top` writes it; the HTML report reads a log
//! of them back into it.

use serde::{Deserialize, Serialize};

/// The NDJSON object. Every key is written; on reading, the keys that may
/// be unknown may also be absent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopLine {
    /// The interval's number.
    pub interval: u64,
    /// Local address and port (`127.0.0.1:5201`, `[::1]:5201`).
    pub local: String,
    /// Remote address and port.
    pub remote: String,
    /// The owning process (`null`: unknown).
    #[serde(default)]
    pub pid: Option<u64>,
    /// Its command name.
    #[serde(default)]
    pub command: Option<String>,
    /// `sender`, `receiver` or `idle`.
    pub direction: String,
    /// The interval's rate, bit/s.
    pub rate_bps: f64,
    /// Smoothed RTT, ms.
    #[serde(default)]
    pub rtt_ms: Option<f64>,
    /// Congestion window, bytes.
    #[serde(default)]
    pub cwnd_bytes: Option<u64>,
    /// The window the row shows, bytes.
    #[serde(default)]
    pub window_bytes: Option<u64>,
    /// Segments retransmitted in the interval (always written).
    #[serde(default)]
    pub retransmits: Option<u64>,
    /// The limit named now (`null`: none, or idle).
    #[serde(default)]
    pub limit: Option<String>,
    /// The connection's class over the interval (`null`: idle, not weighed).
    #[serde(default)]
    pub class: Option<String>,
    /// The congestion control.
    #[serde(default)]
    pub congestion: Option<String>,
    /// The interval was a full scan (every connection read), not a lookup of
    /// the followed ones.
    #[serde(default)]
    pub full_scan: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_whole_and_read_back() {
        let line = TopLine {
            interval: 3,
            local: "127.0.0.1:5201".into(),
            remote: "[::1]:40000".into(),
            pid: None,
            command: Some("rsync".into()),
            direction: "sender".into(),
            rate_bps: 1.5e6,
            rtt_ms: None,
            cwnd_bytes: Some(14480),
            window_bytes: None,
            retransmits: Some(2),
            limit: Some("receive_window".into()),
            class: Some("bulk".into()),
            congestion: None,
            full_scan: true,
        };
        let text = serde_json::to_string(&line).expect("serializes");
        assert_eq!(
            text,
            r#"{"interval":3,"local":"127.0.0.1:5201","remote":"[::1]:40000","pid":null,"command":"rsync","direction":"sender","rate_bps":1500000.0,"rtt_ms":null,"cwnd_bytes":14480,"window_bytes":null,"retransmits":2,"limit":"receive_window","class":"bulk","congestion":null,"full_scan":true}"#
        );
        assert_eq!(serde_json::from_str::<TopLine>(&text).ok(), Some(line));
        // The keys that may be unknown may be absent.
        let short: TopLine = serde_json::from_str(
            r#"{"interval":1,"local":"a","remote":"b","direction":"idle","rate_bps":0}"#,
        )
        .expect("a line");
        assert_eq!((short.retransmits, short.full_scan), (None, false));
    }
}
