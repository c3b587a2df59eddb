//! Reading the report's inputs into types: the edge between files and the
//! page. A `-J` document (plumb's or iperf3's, with its diagnosis or of
//! running connections), a `--json-stream` log reassembled into one, or a
//! `plumb top --json` log (its lines read into the record's
//! [`plumb_record::TopLine`]) becomes a [`Document`] ([`read_file`],
//! [`read_text`]). This module and its children are the only part of the
//! HTML report that reads JSON.

pub mod top_line;
pub mod top_log;

use std::path::Path;

use serde_json::Value;

pub use plumb_record::Document;

/// Reads the file at `path` into a document the page can draw, or says in
/// one line, naming the file, why it cannot.
pub fn read_file(path: &Path) -> Result<Document, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    read_text(&text, &path.display().to_string())
}

/// Reads `text`, the contents of the file `name`: a `plumb top --json` log,
/// a `-J` document or a `--json-stream` log, checked to hold something the
/// page can draw.
pub fn read_text(text: &str, name: &str) -> Result<Document, String> {
    if top_log::is_top_log(text) {
        return top_log::document_from_top(text)
            .map_err(|e| format!("{name} is not a whole plumb top --json log: {e}"));
    }
    let v = match serde_json::from_str::<Value>(text) {
        Ok(v) => v,
        Err(e) => crate::json::document_from_events(text)
            .ok_or_else(|| format!("{name} is not a -J document or a --json-stream log: {e}"))?,
    };
    if !v.is_object() {
        return Err(format!("{name}: not a JSON object"));
    }
    let doc = Document::from_value(v)
        .map_err(|e| format!("{name} is not a -J document plumb can read: {e}"))?;
    // Checked here, so that the one-line error names the file.
    crate::html::run_data(&doc).map_err(|e| format!("{name}: {e}"))?;
    Ok(doc)
}

/// The document a `--json-stream` log of one test adds up to; `None` when
/// the text is not such a log.
pub fn stream_document(text: &str) -> Option<Document> {
    crate::json::document_from_events(text).and_then(|v| Document::from_value(v).ok())
}

/// Whether `doc` carries a diagnosis.
pub fn has_diagnosis(doc: &Document) -> bool {
    matches!(doc.diagnosis, Some(Some(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_file_becomes_a_document() {
        // A --json-stream log: its events reassembled.
        let stream = concat!(
            r#"{"event":"start","data":{"version":"plumb 0.1.0"}}"#,
            "\n",
            r#"{"event":"error","data":"refused"}"#,
            "\n"
        );
        let doc = read_text(stream, "s.jsonl").expect("a document");
        assert_eq!(doc.error.as_deref(), Some("refused"));
        assert_eq!(doc.intervals.map(|i| i.len()), Some(0));
        // A plumb top --json log: its connections.
        let top =
            r#"{"interval":1,"local":"a:1","remote":"b:2","direction":"sender","rate_bps":5}"#;
        let doc = read_text(top, "t.ndjson").expect("a top log");
        assert_eq!(top_log::top_data(&doc).map(|t| t.rows), Some(1));
        // Neither, or a document of the wrong shape: said, naming the file.
        let e = read_text("{\"event\":", "x.json").expect_err("cut short");
        assert!(e.starts_with("x.json is not a -J document"), "{e}");
        let e = read_text(r#"{"start": {"version": 3}}"#, "v.json").expect_err("a number");
        assert!(
            e.starts_with("v.json is not a -J document plumb can read"),
            "{e}"
        );
    }
}
