//! `plumb top --json` logs at the edge: telling one from a `--json-stream`
//! log (whose lines are `{"event":…}`), reading each line into the record's
//! [`TopLine`] with a one-line reason when it is not one ([`parse_line`]),
//! and carrying the connections [`crate::top::log`] keeps as a document
//! (`{"plumb_top": …}`) that [`top_data`] reads back.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::top::TopData;
use plumb_record::{Document, TopLine};

/// The key of a top log's document.
const KEY: &str = "plumb_top";

/// A key that is there and not `null`.
fn given<'a>(o: &'a Map<String, Value>, k: &str) -> Option<&'a Value> {
    o.get(k).filter(|v| !v.is_null())
}

/// A required string.
fn string(o: &Map<String, Value>, k: &str) -> Result<(), String> {
    match o.get(k) {
        Some(Value::String(_)) => Ok(()),
        _ => Err(format!("no \"{k}\" string")),
    }
}

/// A string or `null`.
fn opt_string(o: &Map<String, Value>, k: &str) -> Result<(), String> {
    match given(o, k) {
        None | Some(Value::String(_)) => Ok(()),
        Some(_) => Err(format!("\"{k}\" is not a string or null")),
    }
}

/// A number of 0 or more, or `null`; `Some` when it is a number.
fn opt_num(o: &Map<String, Value>, k: &str) -> Result<Option<f64>, String> {
    match given(o, k) {
        None => Ok(None),
        Some(v) => v
            .as_f64()
            .filter(|n| *n >= 0.0)
            .map(Some)
            .ok_or_else(|| format!("\"{k}\" is not a number of 0 or more, or null")),
    }
}

/// Checks a line's keys in the order a reader would name the first wrong
/// one; what passes reads into a [`TopLine`].
fn check(o: &Map<String, Value>) -> Result<(), String> {
    if o.contains_key("event") {
        return Err("a --json-stream event among plumb top rows".into());
    }
    if o.get("interval").and_then(Value::as_u64).is_none() {
        return Err("no whole \"interval\" number".into());
    }
    opt_num(o, "rate_bps")?.ok_or("no \"rate_bps\" number")?;
    if given(o, "pid").is_some_and(|p| p.as_u64().is_none()) {
        return Err("\"pid\" is not a whole number or null".into());
    }
    string(o, "local")?;
    string(o, "remote")?;
    opt_string(o, "command")?;
    opt_string(o, "congestion")?;
    string(o, "direction")?;
    for k in ["rtt_ms", "cwnd_bytes", "window_bytes", "retransmits"] {
        opt_num(o, k)?;
    }
    opt_string(o, "limit")
}

/// Reads one line, or says why it is not a row.
pub fn parse_line(line: &str) -> Result<TopLine, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| {
        if e.is_eof() {
            format!("cut short ({e})")
        } else {
            format!("not JSON ({e})")
        }
    })?;
    let Some(o) = v.as_object() else {
        return Err("not a JSON object".into());
    };
    check(o)?;
    TopLine::deserialize(v).map_err(|e| e.to_string())
}

/// Whether `text` is a `plumb top --json` log: its first non-blank line is
/// a row (`interval`, `local`, `remote`, `rate_bps`) and not an event.
pub fn is_top_log(text: &str) -> bool {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .and_then(|l| serde_json::from_str::<Value>(l).ok())
        .is_some_and(|v| {
            v.as_object().is_some_and(|o| {
                !o.contains_key("event")
                    && o.get("interval").is_some_and(|i| i.as_u64().is_some())
                    && o.get("local").is_some_and(Value::is_string)
                    && o.get("remote").is_some_and(Value::is_string)
                    && o.contains_key("rate_bps")
            })
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
        let r = parse_line(ok).expect("a row");
        assert_eq!((r.pid, r.rate_bps), (None, 0.0));
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
            let e = parse_line(line).expect_err(line);
            assert!(e.contains(why), "{line}: {e}");
        }
        assert!(is_top_log(&format!("\n{ok}\n")));
        assert!(!is_top_log(r#"{"event":"start","data":{}}"#));
    }
}
