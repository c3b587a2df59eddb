//! `plumb top`'s table: a header line, the column headings and one line per
//! connection (process, peer, direction, rate, RTT, congestion window,
//! window, resends, class, limit), each cut to the screen's width. Unknown
//! figures (a dump without TCP_INFO) are `-`, not zero.

use std::net::SocketAddr;

use plumb_model::Rate;
use plumb_record::class::FlowClass;
use plumb_record::diagnosis::Limit;

use crate::format::size_compact;

/// One connection's line, as numbers.
#[derive(Debug, Clone, Copy)]
pub struct TableRow<'a> {
    /// The owning process's command and pid, when known.
    pub owner: Option<(&'a str, u32)>,
    /// The remote end.
    pub peer: SocketAddr,
    /// `sender`, `receiver` or `idle`.
    pub direction: &'a str,
    /// The interval's rate, bit/s.
    pub rate_bps: f64,
    /// Smoothed RTT, ms.
    pub rtt_ms: Option<f64>,
    /// Congestion window, bytes.
    pub cwnd_bytes: Option<f64>,
    /// The window the row shows, bytes.
    pub window_bytes: Option<u32>,
    /// Segments retransmitted in the interval.
    pub retransmits: u64,
    /// The class over the interval.
    pub class: Option<FlowClass>,
    /// The limit named now.
    pub limit: Option<Limit>,
}

/// The first line: how many connections, how many busy, and the pace.
pub fn header(
    connections: usize,
    busy: usize,
    interval_s: f64,
    scan_every_s: f64,
    screen: bool,
) -> String {
    format!(
        "plumb top — {connections} connections, {busy} busy; interval {interval_s} s, full scan every {} s{}",
        secs(scan_every_s),
        if screen { "; q quits" } else { "" }
    )
}

/// The column headings.
pub fn headings() -> String {
    format!(
        "{:<16} {:<24} {:<9} {:>12} {:>8} {:>10} {:>10} {:>5}  {:<16} {}",
        "PROCESS", "PEER", "DIR", "RATE", "RTT ms", "CWND", "WINDOW", "RETR", "CLASS", "LIMIT"
    )
}

/// One connection's line, at most `width` bytes.
pub fn line(r: &TableRow<'_>, width: usize) -> String {
    let proc_ = r
        .owner
        .map_or_else(|| "?".into(), |(command, pid)| format!("{command}/{pid}"));
    let human = |b: f64| Rate::from_bps(b).map_or_else(|| "0".into(), Rate::human);
    let mut line = format!(
        "{:<16} {:<24} {:<9} {:>12} {:>8} {:>10} {:>10} {:>5}  {:<16} {}",
        proc_.chars().take(16).collect::<String>(),
        r.peer.to_string(),
        r.direction,
        human(r.rate_bps),
        r.rtt_ms.map_or("-".into(), |t| format!("{t:.2}")),
        r.cwnd_bytes.map_or("-".into(), size_compact),
        r.window_bytes
            .map_or("-".into(), |w| size_compact(f64::from(w))),
        r.retransmits,
        r.class.map_or("-", FlowClass::words),
        r.limit.map_or("-", |l| l.name()),
    );
    line.truncate(width);
    line
}

/// Seconds to two decimals, without trailing zeros.
fn secs(s: f64) -> String {
    let r = (s * 100.0).round() / 100.0;
    format!("{r}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection the kernel sent no TCP_INFO for has an unknown RTT and
    /// window, not zero ones; windows are in one form for every row.
    #[test]
    fn no_tcp_info_is_unknown_not_zero() {
        let unknown = TableRow {
            owner: None,
            peer: "127.0.0.1:40000".parse().expect("addr"),
            direction: "sender",
            rate_bps: 0.0,
            rtt_ms: None,
            cwnd_bytes: None,
            window_bytes: None,
            retransmits: 0,
            class: None,
            limit: None,
        };
        let known = TableRow {
            owner: Some(("rsync", 42)),
            rtt_ms: Some(15.0),
            cwnd_bytes: Some(14_480.0),
            window_bytes: Some(2_320_000),
            ..unknown
        };
        let cols = |l: &str| l.split_whitespace().map(String::from).collect::<Vec<_>>();
        // PROCESS PEER DIR RATE RTT CWND WINDOW RETR CLASS LIMIT (an idle rate is "0")
        let l = line(&unknown, 200);
        assert_eq!(
            cols(&l)[..7],
            ["?", "127.0.0.1:40000", "sender", "0", "-", "-", "-"],
            "{l}"
        );
        let l = line(&known, 200);
        assert_eq!(cols(&l)[0], "rsync/42", "{l}");
        assert_eq!(cols(&l)[4..7], ["15.00", "14.5K", "2.32M"], "{l}");
        assert_eq!(line(&known, 10).len(), 10, "cut to the width");
        assert_eq!(
            headings().split_whitespace().count(),
            11,
            "RTT ms is two words"
        );
        assert!(header(3, 1, 1.0, 10.0, true).ends_with("full scan every 10 s; q quits"));
    }
}
