//! `plumb top --json` logs at the edge: telling one from a `--json-stream`
//! log (whose lines are `{"event":…}`), reading each line into a typed
//! [`TopRow`] with a one-line reason when it is not one, and carrying the
//! connections [`crate::top::log`] keeps as a document (`{"plumb_top": …}`)
//! that [`top_data`] reads back.

use serde::Deserialize;
use serde_json::Value;

use super::loose::Loose;
use crate::top::{Sample, TopData};
use plumb_record::Document;

/// The key of a top log's document.
const KEY: &str = "plumb_top";

/// One line of a top log, as written: each key leniently, so that the
/// checks of [`TopRow::parse`] can say which key is wrong and how.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawRow {
    event: Loose<Value>,
    interval: Loose<u64>,
    local: Loose<String>,
    remote: Loose<String>,
    pid: Loose<u64>,
    command: Loose<String>,
    congestion: Loose<String>,
    direction: Loose<String>,
    rate_bps: Loose<f64>,
    rtt_ms: Loose<f64>,
    cwnd_bytes: Loose<f64>,
    window_bytes: Loose<f64>,
    retransmits: Loose<f64>,
    limit: Loose<String>,
}

/// One line, checked: the connection's identity and the reading.
#[derive(Debug, Clone, PartialEq)]
pub struct TopRow {
    /// This host's address and port.
    pub local: String,
    /// The peer's.
    pub remote: String,
    /// The owning process.
    pub pid: Option<u64>,
    /// Its command name.
    pub command: Option<String>,
    /// The congestion control.
    pub congestion: Option<String>,
    /// The reading.
    pub sample: Sample,
}

/// A required string.
fn string(v: Loose<String>, k: &str) -> Result<String, String> {
    v.ok().ok_or_else(|| format!("no \"{k}\" string"))
}

/// A string or `null`.
fn opt_string(v: Loose<String>, k: &str) -> Result<Option<String>, String> {
    match v {
        Loose::Absent | Loose::Null => Ok(None),
        Loose::Is(s) => Ok(Some(s)),
        Loose::Wrong => Err(format!("\"{k}\" is not a string or null")),
    }
}

/// A number of 0 or more, or `null`.
fn opt_num(v: Loose<f64>, k: &str) -> Result<Option<f64>, String> {
    match v {
        Loose::Absent | Loose::Null => Ok(None),
        Loose::Is(n) if n >= 0.0 => Ok(Some(n)),
        _ => Err(format!("\"{k}\" is not a number of 0 or more, or null")),
    }
}

impl TopRow {
    /// Reads one line, or says why it is not a row.
    pub fn parse(line: &str) -> Result<TopRow, String> {
        let v: Value = serde_json::from_str(line).map_err(|e| {
            if e.is_eof() {
                format!("cut short ({e})")
            } else {
                format!("not JSON ({e})")
            }
        })?;
        if !v.is_object() {
            return Err("not a JSON object".into());
        }
        let r = RawRow::deserialize(v).map_err(|e| e.to_string())?;
        if !matches!(r.event, Loose::Absent) {
            return Err("a --json-stream event among plumb top rows".into());
        }
        let interval = r.interval.ok().ok_or("no whole \"interval\" number")?;
        let rate_bps = opt_num(r.rate_bps, "rate_bps")?.ok_or("no \"rate_bps\" number")?;
        let pid = match r.pid {
            Loose::Absent | Loose::Null => None,
            Loose::Is(p) => Some(p),
            Loose::Wrong => return Err("\"pid\" is not a whole number or null".into()),
        };
        Ok(TopRow {
            local: string(r.local, "local")?,
            remote: string(r.remote, "remote")?,
            pid,
            command: opt_string(r.command, "command")?,
            congestion: opt_string(r.congestion, "congestion")?,
            sample: Sample {
                interval,
                direction: string(r.direction, "direction")?,
                rate_bps,
                rtt_ms: opt_num(r.rtt_ms, "rtt_ms")?,
                cwnd_bytes: opt_num(r.cwnd_bytes, "cwnd_bytes")?,
                window_bytes: opt_num(r.window_bytes, "window_bytes")?,
                retransmits: opt_num(r.retransmits, "retransmits")?,
                limit: opt_string(r.limit, "limit")?,
            },
        })
    }
}

/// Whether `text` is a `plumb top --json` log: its first non-blank line is
/// a row (`interval`, `local`, `remote`, `rate_bps`) and not an event.
pub fn is_top_log(text: &str) -> bool {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .and_then(|l| serde_json::from_str::<RawRow>(l).ok())
        .is_some_and(|r| {
            matches!(r.event, Loose::Absent)
                && matches!(r.interval, Loose::Is(_))
                && matches!(r.local, Loose::Is(_))
                && matches!(r.remote, Loose::Is(_))
                && !matches!(r.rate_bps, Loose::Absent)
        })
}

/// Whether `doc` is a `plumb top --json` log made into a document
/// ([`document_from_top`]): a look at its keys, no decoding.
pub fn is_top_doc(doc: &Document) -> bool {
    doc.extra.contains_key(KEY) && doc.start.is_none()
}

/// A top log's connections as a document, for the page.
pub fn top_document(data: &TopData) -> Result<Document, String> {
    let mut doc = Document::default();
    let v = serde_json::to_value(data).map_err(|e| e.to_string())?;
    doc.extra.insert(KEY.into(), v);
    Ok(doc)
}

/// Reads a `plumb top --json` log into the document the page draws, or
/// says which line is wrong and why.
pub fn document_from_top(text: &str) -> Result<Document, String> {
    top_document(&crate::top::log::read_top(text)?)
}

/// The top log a document holds, if it is one.
pub fn top_data(doc: &Document) -> Option<TopData> {
    if !is_top_doc(doc) {
        return None;
    }
    TopData::deserialize(doc.extra.get(KEY)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_checked_key_by_key() {
        let ok =
            r#"{"interval":1,"local":"a","remote":"b","direction":"idle","rate_bps":0,"pid":null}"#;
        let r = TopRow::parse(ok).expect("a row");
        assert_eq!((r.pid, r.sample.rate_bps), (None, 0.0));
        for (line, why) in [
            (r#"{"event":"start"}"#, "a --json-stream event"),
            ("[1]", "not a JSON object"),
            ("{\"interval\":1", "cut short"),
            (r#"{"interval":1.5}"#, "no whole \"interval\" number"),
            (
                r#"{"interval":1,"rate_bps":-1}"#,
                "\"rate_bps\" is not a number of 0 or more",
            ),
            (
                r#"{"interval":1,"rate_bps":1,"pid":"x"}"#,
                "\"pid\" is not a whole number",
            ),
            (
                r#"{"interval":1,"rate_bps":1,"local":"a","remote":"b","direction":"idle","limit":3}"#,
                "\"limit\" is not a string or null",
            ),
        ] {
            let e = TopRow::parse(line).expect_err(line);
            assert!(e.contains(why), "{line}: {e}");
        }
        assert!(is_top_log(&format!("\n{ok}\n")));
        assert!(!is_top_log(r#"{"event":"start","data":{}}"#));
    }
}
