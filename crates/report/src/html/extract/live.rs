//! `plumb why` on running connections (`live` and `connections`): each
//! connection's identity, rate and verdict ([`LiveConn`]), busiest first.
//! The document keeps each connection's totals over the sampling, not the
//! samples.

use plumb_record::{ConnectionRow, Document as Record};

use super::diagnosis::Diagnosis;

/// What `plumb why` on running connections recorded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Live {
    /// The filter the connections matched (`--port 5201`).
    pub filter: Option<String>,
    /// How long they were sampled, s.
    pub seconds: Option<f64>,
    /// The connections, busiest first; those without a diagnosis last.
    pub connections: Vec<LiveConn>,
}

/// One running connection.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveConn {
    /// This host's address and port.
    pub local: Option<String>,
    /// The peer's.
    pub remote: Option<String>,
    /// The owning process's command name.
    pub command: Option<String>,
    /// Its pid.
    pub pid: Option<u64>,
    /// `sender`, `receiver` or `idle`: what this host did.
    pub this_host: Option<String>,
    /// Its rate over the sampling, bit/s, as recorded beside the verdict.
    pub rate_bps: Option<f64>,
    /// Its verdict, when it could be measured.
    pub diagnosis: Option<Diagnosis>,
    /// Why there is no verdict.
    pub note: Option<String>,
    /// The congestion control.
    pub congestion: Option<String>,
    /// How many samples, as written.
    pub samples: Option<String>,
    /// How many samples, when a whole number.
    pub sample_count: Option<u64>,
    /// It closed while sampled.
    pub closed: bool,
}

/// A text the row gives (one left out reads as empty).
fn given(s: &str) -> Option<String> {
    Some(s.to_string()).filter(|s| !s.is_empty())
}

/// The rows of `doc` if it is `plumb why` on running connections (no
/// test's `start`, a `connections` list).
fn rows(doc: &Record) -> Option<&[ConnectionRow]> {
    doc.connections.as_deref().filter(|_| doc.start.is_none())
}

/// Whether `doc` is `plumb why` on running connections (no test's `start`,
/// a `connections` list).
pub fn is_live(doc: &Record) -> bool {
    rows(doc).is_some()
}

/// The connections of a document of `plumb why` on running connections,
/// busiest first (those without a diagnosis last); `None` for any other
/// document.
pub fn live_connections(doc: &Record) -> Option<Vec<LiveConn>> {
    rows(doc).map(sorted)
}

/// The connections of `rows`, busiest first; one closed before it could be
/// measured comes last.
fn sorted(rows: &[ConnectionRow]) -> Vec<LiveConn> {
    let mut v: Vec<LiveConn> = rows.iter().map(LiveConn::of).collect();
    v.sort_by(|a, b| {
        b.diagnosis
            .is_some()
            .cmp(&a.diagnosis.is_some())
            .then(b.rate().total_cmp(&a.rate()))
    });
    v
}

impl Live {
    /// Reads `plumb why` on running connections; `None` for any other
    /// document.
    pub fn of(doc: &Record) -> Option<Live> {
        let rows = rows(doc)?;
        Some(Live {
            connections: sorted(rows),
            filter: doc.live.as_ref().map(|l| l.filter.clone()),
            seconds: doc.live.as_ref().map(|l| l.seconds),
        })
    }
}

impl LiveConn {
    /// Reads one entry of `connections`.
    pub fn of(c: &ConnectionRow) -> LiveConn {
        LiveConn {
            local: given(&c.local),
            remote: given(&c.remote),
            command: c.command.clone(),
            pid: c.pid.map(u64::from),
            this_host: given(&c.this_host),
            rate_bps: c.rate_bps,
            diagnosis: c.diagnosis.as_ref().map(Diagnosis::of),
            note: c.note.clone(),
            congestion: c.congestion.clone(),
            samples: c.samples.map(|n| n.to_string()),
            sample_count: c.samples.map(u64::from),
            closed: c.closed,
        }
    }

    /// Its rate over the sampling, bit/s: as recorded, else as its verdict
    /// measured it, else 0.
    pub fn rate(&self) -> f64 {
        self.rate_bps
            .or_else(|| self.diagnosis.as_ref().and_then(|d| d.measured_bps))
            .unwrap_or(0.0)
    }

    /// Its name on the page: "local → remote".
    pub fn name(&self) -> String {
        format!(
            "{} → {}",
            self.local.as_deref().unwrap_or("?"),
            self.remote.as_deref().unwrap_or("?")
        )
    }

    /// The limit its verdict names, in words (or why there is none).
    pub fn limit(&self) -> String {
        let Some(dg) = &self.diagnosis else {
            return self.note.as_deref().unwrap_or("no diagnosis").to_string();
        };
        match &dg.limit {
            Some(l) => l.replace('_', " "),
            None if self.is_idle() => "none: idle".into(),
            None => "none named".into(),
        }
    }

    /// This host neither sent nor received on it.
    pub fn is_idle(&self) -> bool {
        self.this_host.as_deref() == Some("idle")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(conns: &str) -> Record {
        Record::parse(&format!(
            r#"{{"live": {{"filter": "--port 22", "seconds": 2.5}}, "connections": {conns}}}"#
        ))
        .expect("a document")
    }

    fn live(doc: &Record) -> Option<Live> {
        Live::of(doc)
    }

    #[test]
    fn busiest_first_and_unmeasured_last() {
        let d = doc(r#"[
            {"local": "a:1", "remote": "b:2", "note": "closed before a second sample", "closed": true},
            {"local": "a:3", "remote": "b:4", "rate_bps": 10.0, "diagnosis": {"limit": "application"}},
            {"local": "a:5", "pid": 42, "command": "rsync", "this_host": "sender",
             "diagnosis": {"measured_bps": 30.0, "limit": "receive_window"}, "samples": 20}
        ]"#);
        let l = live(&d).expect("live");
        assert_eq!(
            (l.filter.as_deref(), l.seconds),
            (Some("--port 22"), Some(2.5))
        );
        let rates: Vec<f64> = l.connections.iter().map(LiveConn::rate).collect();
        assert_eq!(rates, [30.0, 10.0, 0.0]);
        let c = &l.connections[0];
        assert_eq!(c.name(), "a:5 → ?");
        assert_eq!((c.command.as_deref(), c.pid), (Some("rsync"), Some(42)));
        assert_eq!(
            (c.samples.as_deref(), c.sample_count),
            (Some("20"), Some(20))
        );
        assert_eq!(c.limit(), "receive window");
        let gone = &l.connections[2];
        assert!(gone.closed && gone.diagnosis.is_none());
        assert_eq!(gone.limit(), "closed before a second sample");
    }

    #[test]
    fn missing_keys_and_other_shapes() {
        let d = doc(r#"[{"this_host": "idle", "diagnosis": {}}]"#);
        assert!(is_live(&d));
        let c = &live_connections(&d).expect("live")[0];
        assert_eq!((c.rate_bps, c.pid, c.sample_count), (None, None, None));
        assert_eq!((c.samples.as_deref(), c.local.as_deref()), (None, None));
        assert!(!c.closed);
        assert_eq!(c.rate(), 0.0);
        assert_eq!(c.limit(), "none: idle");
        assert_eq!(
            LiveConn::of(&ConnectionRow::default()).limit(),
            "no diagnosis"
        );
        // A row of another shape: no connections to read.
        assert!(!is_live(&doc(r#"[{"rate_bps": "fast"}]"#)));
        // Not running connections: a test, or connections that are not a list.
        let test = Record::parse(r#"{"start": {}, "connections": []}"#).expect("a document");
        assert!(live(&test).is_none() && !is_live(&test));
        assert!(live(&doc("{}")).is_none());
    }
}
