//! `plumb top --json` logs at the edge: telling one from a `--json-stream`
//! log (whose lines are `{"event":…}`), and carrying its rows (each line
//! read by [`crate::input::top_line::parse_line`]) in a document's
//! `top_rows`, from which [`top_data`] draws the connections
//! [`crate::top::log`] keeps.

use serde_json::Value;

use crate::top::data::TopData;
use crate::top::log::{read_rows, summarize};
use plumb_record::Document;

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
/// ([`document_from_top`]).
pub fn is_top_doc(doc: &Document) -> bool {
    doc.top_rows.is_some() && doc.start.is_none()
}

/// Reads a `plumb top --json` log into the document the page draws, or
/// says which line is wrong and why.
pub fn document_from_top(text: &str) -> Result<Document, String> {
    Ok(Document {
        top_rows: Some(read_rows(text)?),
        ..Document::default()
    })
}

/// The connections of the top log a document holds, if it is one.
pub fn top_data(doc: &Document) -> Option<TopData> {
    if !is_top_doc(doc) {
        return None;
    }
    doc.top_rows.as_deref().map(summarize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_top_log_is_told_by_its_first_line() {
        let ok =
            r#"{"interval":1,"local":"a","remote":"b","direction":"idle","rate_bps":0,"pid":null}"#;
        assert!(is_top_log(&format!("\n{ok}\n")));
        assert!(!is_top_log(r#"{"event":"start","data":{}}"#));
    }
}
