//! What a `plumb top --json` log holds, as the page uses it ([`TopData`]):
//! the drawn connections ([`TopConn`]) with every reading ([`Sample`]),
//! and what was left out.

use serde::{Deserialize, Serialize};

use crate::format::thousands;

/// At most this many connections are drawn: the busiest by data moved.
pub const MAX_DRAWN: usize = 8;

/// One reading of a connection: one line of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Top's interval number (the first rows are interval 1).
    pub interval: u64,
    /// `sender`, `receiver` or `idle`: what this host did in the interval.
    pub direction: String,
    /// The rate in the busier direction, bit/s.
    pub rate_bps: f64,
    /// Smoothed RTT, ms.
    pub rtt_ms: Option<f64>,
    /// Congestion window, bytes.
    pub cwnd_bytes: Option<f64>,
    /// The receiver's advertised window (the peer's when this host sends,
    /// this host's when it receives), bytes.
    pub window_bytes: Option<f64>,
    /// Segments retransmitted in the interval.
    pub retransmits: Option<f64>,
    /// The limit named (`receive_window`, `application`…), if any.
    pub limit: Option<String>,
}

impl Sample {
    /// The reading a line of the log holds.
    pub fn of(l: &plumb_record::TopLine) -> Sample {
        let f = |n: Option<u64>| n.map(|n| n as f64);
        Sample {
            interval: l.interval,
            direction: l.direction.clone(),
            rate_bps: l.rate_bps,
            rtt_ms: l.rtt_ms,
            cwnd_bytes: f(l.cwnd_bytes),
            window_bytes: f(l.window_bytes),
            retransmits: f(l.retransmits),
            limit: l.limit.clone(),
        }
    }
}

/// One connection the page draws, with every reading of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopConn {
    /// This host's address and port.
    pub local: String,
    /// The peer's.
    pub remote: String,
    /// The owning process, when top could see it.
    pub pid: Option<u64>,
    /// Its command name.
    pub command: Option<String>,
    /// The congestion control.
    pub congestion: Option<String>,
    /// Its readings, by interval.
    pub samples: Vec<Sample>,
}

/// What a top log holds, as the page uses it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopData {
    /// Lines read (one per connection per interval).
    pub rows: u64,
    /// The first interval in the log.
    pub first: u64,
    /// The last.
    pub last: u64,
    /// Connections seen.
    pub seen: u64,
    /// The drawn ones, busiest first.
    pub conns: Vec<TopConn>,
    /// Busy connections not drawn (past [`MAX_DRAWN`]).
    pub left_busy: u64,
    /// Their share of all the data moved, 0–1.
    pub left_busy_share: f64,
    /// Connections idle in every reading.
    pub left_idle: u64,
}

impl TopConn {
    /// "#1 127.0.0.1:53066 → 127.0.0.1:5331": its number on the page (from 0).
    pub fn label(&self, k: usize) -> String {
        format!("#{} {} → {}", k + 1, self.local, self.remote)
    }

    /// This host sent on it in some interval.
    pub fn sends(&self) -> bool {
        self.samples.iter().any(|s| s.direction == "sender")
    }

    /// This host received on it in some interval.
    pub fn receives(&self) -> bool {
        self.samples.iter().any(|s| s.direction == "receiver")
    }

    /// What this host did on it, in words.
    pub fn role(&self) -> &'static str {
        match (self.sends(), self.receives()) {
            (true, true) => "sends and receives",
            (true, false) => "sends",
            (false, true) => "receives",
            (false, false) => "idle",
        }
    }

    /// The mean rate from its first reading to its last, bit/s; an interval
    /// without a reading counts as idle (top reads every busy connection
    /// every interval).
    pub fn mean_bps(&self) -> f64 {
        let (Some(a), Some(b)) = (self.samples.first(), self.samples.last()) else {
            return 0.0;
        };
        let n = (b.interval.saturating_sub(a.interval) + 1) as f64;
        self.samples.iter().map(|s| s.rate_bps).sum::<f64>() / n
    }

    /// Its limit in one interval, as the strip names it: the limit, "none
    /// named" (busy, no limit found) or "idle".
    pub fn limit_at(s: &Sample) -> String {
        if s.direction == "idle" {
            "idle".into()
        } else {
            s.limit
                .as_deref()
                .map_or_else(|| "none named".into(), |l| l.replace('_', " "))
        }
    }

    /// The limit's changes: "1–3 application, 4 receive window"; a gap in
    /// the readings ends a run. Each run is its first and last interval, its
    /// limit and its first reading.
    pub fn limit_runs(&self) -> Vec<(u64, u64, String, &Sample)> {
        let mut runs: Vec<(u64, u64, String, &Sample)> = Vec::new();
        for s in &self.samples {
            let l = Self::limit_at(s);
            match runs.last_mut() {
                Some(r) if r.1 + 1 == s.interval && r.2 == l => r.1 = s.interval,
                _ => runs.push((s.interval, s.interval, l, s)),
            }
        }
        runs
    }
}

impl TopData {
    /// What wrote it, for the page's subtitle.
    pub fn producer(&self) -> String {
        format!(
            "plumb top --json: {} readings of {} connection{}, intervals {} to {}",
            thousands(self.rows as f64),
            thousands(self.seen as f64),
            if self.seen == 1 { "" } else { "s" },
            self.first,
            self.last
        )
    }
}
