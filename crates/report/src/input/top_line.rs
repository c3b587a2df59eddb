//! One line of a `plumb top --json` log at the edge: read into the
//! record's [`TopLine`] after its keys are checked in the order a reader
//! would name the first wrong one, or refused with a one-line reason
//! ([`parse_line`]).

use serde::Deserialize;
use serde_json::{Map, Value};

use plumb_record::TopLine;

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
    }
}
