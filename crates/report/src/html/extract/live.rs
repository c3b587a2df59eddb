//! `plumb why` on running connections (`live` and `connections`): each
//! connection's identity, rate and verdict ([`LiveConn`]), busiest first.
//! The document keeps each connection's totals over the sampling, not the
//! samples.

use plumb_record::Document as Record;

use super::diagnosis::Diagnosis;
use crate::input::views::{ConnView, Extras, LiveView};

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

/// Whether `doc` is `plumb why` on running connections (no test's `start`,
/// a `connections` array).
pub fn is_live(doc: &Record) -> bool {
    Extras::of(doc).live.is_some()
}

/// The connections of a document of `plumb why` on running connections,
/// busiest first (those without a diagnosis last); `None` for any other
/// document.
pub fn live_connections(doc: &Record) -> Option<Vec<LiveConn>> {
    Extras::of(doc).live.as_ref().map(sorted)
}

/// The connections of `live`, busiest first; one closed before it could be
/// measured comes last.
fn sorted(live: &LiveView) -> Vec<LiveConn> {
    let mut v: Vec<LiveConn> = live
        .connections
        .iter()
        .map(|c| LiveConn::of(&c.0))
        .collect();
    v.sort_by(|a, b| {
        b.diagnosis
            .is_some()
            .cmp(&a.diagnosis.is_some())
            .then(b.rate().total_cmp(&a.rate()))
    });
    v
}

impl Live {
    /// Reads `plumb why` on running connections from its view.
    pub fn of(live: &LiveView) -> Live {
        Live {
            connections: sorted(live),
            filter: live.about.filter.get().cloned(),
            seconds: live.about.seconds.get().copied(),
        }
    }
}

impl LiveConn {
    /// Reads one entry of `connections`.
    pub fn of(c: &ConnView) -> LiveConn {
        LiveConn {
            local: c.local.get().cloned(),
            remote: c.remote.get().cloned(),
            command: c.command.get().cloned(),
            pid: c.pid.get().copied(),
            this_host: c.this_host.get().cloned(),
            rate_bps: c.rate_bps.get().copied(),
            diagnosis: c.diagnosis.get().map(|d| Diagnosis::of(&d.0)),
            note: c.note.get().cloned(),
            congestion: c.congestion.get().cloned(),
            samples: c.samples.text.clone(),
            sample_count: c.samples.count,
            closed: c.closed.get() == Some(&true),
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
        Extras::of(doc).live.as_ref().map(Live::of)
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
    fn missing_keys_and_wrong_types() {
        let d = doc(r#"[{"rate_bps": "fast", "pid": -1, "samples": "many",
                         "closed": "yes", "this_host": "idle", "diagnosis": {}}]"#);
        assert!(is_live(&d));
        let c = &live_connections(&d).expect("live")[0];
        assert_eq!((c.rate_bps, c.pid, c.sample_count), (None, None, None));
        assert_eq!(c.samples.as_deref(), Some("many"));
        assert!(!c.closed);
        assert_eq!(c.rate(), 0.0);
        assert_eq!(c.limit(), "none: idle");
        assert_eq!(LiveConn::of(&ConnView::default()).limit(), "no diagnosis");
        // Not running connections: a test, or connections that are not a list.
        let test = Record::parse(r#"{"start": {}, "connections": []}"#).expect("a document");
        assert!(live(&test).is_none() && !is_live(&test));
        assert!(live(&doc("{}")).is_none());
    }
}
