//! One line of `--json-stream` (iperf3 3.17+): a record the moment it
//! exists, written as `{"event": E, "data": …}`, with E one of `start`,
//! `interval`, `server_output_text`, `server_output_json`, `error` and
//! `end` (empty `data` when the test never ended); `plumb lab` adds a last
//! `lab` event with the link, the model and the diagnosis.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::diagnosis::Diagnosis;
use crate::{End, Interval, Lab, Model, Start};

/// A `--json-stream` event: its name is the tag, its record the `data`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", content = "data", rename_all = "snake_case")]
pub enum Event {
    /// The test's `start` object.
    Start(Box<Start>),
    /// One reporting interval.
    Interval(Box<Interval>),
    /// `--get-server-output` from a server without `-J`: its text report.
    ServerOutputText(String),
    /// `--get-server-output` from a server with `-J`: its document, as the
    /// server (any iperf3) wrote it.
    ServerOutputJson(Value),
    /// An error, as the `-J` document's `error`.
    Error(String),
    /// The totals; an empty object when the test never reached them.
    End(Box<End>),
    /// `plumb lab`'s last event.
    Lab(Box<LabEvent>),
}

/// The `data` of `plumb lab`'s `lab` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabEvent {
    /// The emulated link.
    pub lab: Lab,
    /// The model's prediction for the link.
    pub model: Model,
    /// The diagnosis (`plumb why --json`'s object), when one was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<Diagnosis>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_tagged_as_iperf3_writes_them() {
        let line = |e: &Event| serde_json::to_string(e).expect("serializes");
        assert_eq!(
            line(&Event::Error("refused".into())),
            r#"{"event":"error","data":"refused"}"#
        );
        assert_eq!(
            line(&Event::End(Box::default())),
            r#"{"event":"end","data":{}}"#
        );
        assert_eq!(
            line(&Event::ServerOutputText("t".into())),
            r#"{"event":"server_output_text","data":"t"}"#
        );
        let back: Event =
            serde_json::from_str(r#"{"event":"start","data":{"version":"iperf 3.17"}}"#)
                .expect("an event");
        match back {
            Event::Start(s) => assert_eq!(s.version.as_deref(), Some("iperf 3.17")),
            other => panic!("not a start: {other:?}"),
        }
    }
}
