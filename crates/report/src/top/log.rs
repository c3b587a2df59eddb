//! Reading a `plumb top --json` log: telling it from a `--json-stream` log
//! (whose lines are `{"event":…}`), checking every line, and keeping the
//! [`MAX_DRAWN`] busiest connections with all their readings in a document
//! (`{"plumb_top": …}`) that [`TopData::from_doc`] reads back. The only part
//! of the top view that reads JSON.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{json, Value};

use super::data::{Sample, TopConn, TopData, MAX_DRAWN};
use crate::html::extract::num;

/// The key of a top log's document.
const KEY: &str = "plumb_top";

/// Whether `doc` is a `plumb top --json` log made into a document
/// ([`document_from_top`]): a cheap look at its keys, no decoding.
pub fn is_top_doc(doc: &Value) -> bool {
    doc.get(KEY).is_some() && doc.get("start").is_none()
}

/// Whether `text` is a `plumb top --json` log: its first non-blank line is
/// a row (`interval`, `local`, `remote`, `rate_bps`) and not an event.
pub fn is_top_log(text: &str) -> bool {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .and_then(|l| serde_json::from_str::<Value>(l).ok())
        .is_some_and(|v| {
            v.get("event").is_none()
                && v.get("interval").is_some_and(Value::is_u64)
                && v.get("local").is_some_and(Value::is_string)
                && v.get("remote").is_some_and(Value::is_string)
                && v.get("rate_bps").is_some()
        })
}

/// One line, checked: the connection's identity and the reading.
struct Row {
    local: String,
    remote: String,
    pid: Option<u64>,
    command: Option<String>,
    congestion: Option<String>,
    sample: Sample,
}

fn parse_row(line: &str) -> Result<Row, String> {
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
    if v.get("event").is_some() {
        return Err("a --json-stream event among plumb top rows".into());
    }
    let string = |k: &str| -> Result<String, String> {
        v[k].as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("no \"{k}\" string"))
    };
    let opt_string = |k: &str| -> Result<Option<String>, String> {
        match &v[k] {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone())),
            _ => Err(format!("\"{k}\" is not a string or null")),
        }
    };
    let opt_num = |k: &str| -> Result<Option<f64>, String> {
        match &v[k] {
            Value::Null => Ok(None),
            x => num(x)
                .filter(|n| *n >= 0.0)
                .map(Some)
                .ok_or_else(|| format!("\"{k}\" is not a number of 0 or more, or null")),
        }
    };
    let interval = v["interval"]
        .as_u64()
        .ok_or("no whole \"interval\" number")?;
    let rate_bps = opt_num("rate_bps")?.ok_or("no \"rate_bps\" number")?;
    let pid = match &v["pid"] {
        Value::Null => None,
        p => Some(p.as_u64().ok_or("\"pid\" is not a whole number or null")?),
    };
    Ok(Row {
        local: string("local")?,
        remote: string("remote")?,
        pid,
        command: opt_string("command")?,
        congestion: opt_string("congestion")?,
        sample: Sample {
            interval,
            direction: string("direction")?,
            rate_bps,
            rtt_ms: opt_num("rtt_ms")?,
            cwnd_bytes: opt_num("cwnd_bytes")?,
            window_bytes: opt_num("window_bytes")?,
            retransmits: opt_num("retransmits")?,
            limit: opt_string("limit")?,
        },
    })
}

/// What pass one keeps per connection.
struct Tally {
    sum_bps: f64,
    busy: bool,
    last: u64,
    order: usize,
}

/// Reads a `plumb top --json` log into the document the page draws, or
/// says which line is wrong and why. Every line must be a row; a
/// connection's rows must come in rising intervals (as top writes them; two
/// logs joined end to end do not).
pub fn document_from_top(text: &str) -> Result<Value, String> {
    let lines = || {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
    };
    // Pass one: check every line, and total each connection.
    let mut tally: HashMap<(String, String), Tally> = HashMap::new();
    let (mut rows, mut first, mut last) = (0u64, u64::MAX, 0u64);
    for (n, line) in lines() {
        let r = parse_row(line).map_err(|e| format!("line {}: {e}", n + 1))?;
        let i = r.sample.interval;
        let order = tally.len();
        let t = tally.entry((r.local, r.remote)).or_insert(Tally {
            sum_bps: 0.0,
            busy: false,
            last: 0,
            order,
        });
        if t.order != order && i <= t.last {
            return Err(format!(
                "line {}: the same connection again in interval {i} after interval {} (two logs joined?)",
                n + 1,
                t.last
            ));
        }
        t.last = i;
        t.sum_bps += r.sample.rate_bps;
        t.busy |= r.sample.direction != "idle" || r.sample.rate_bps > 0.0;
        rows += 1;
        first = first.min(i);
        last = last.max(i);
    }
    if rows == 0 {
        return Err("no rows".into());
    }
    // The busiest by data moved (rates summed over equal intervals), ties
    // in the log's order.
    let mut busy: Vec<(&(String, String), &Tally)> = tally.iter().filter(|(_, t)| t.busy).collect();
    busy.sort_by(|a, b| {
        b.1.sum_bps
            .total_cmp(&a.1.sum_bps)
            .then(a.1.order.cmp(&b.1.order))
    });
    let total: f64 = busy.iter().map(|(_, t)| t.sum_bps).sum();
    let drawn: HashMap<(String, String), usize> = busy
        .iter()
        .take(MAX_DRAWN)
        .enumerate()
        .map(|(k, (key, _))| ((*key).clone(), k))
        .collect();
    let left: f64 = busy.iter().skip(MAX_DRAWN).map(|(_, t)| t.sum_bps).sum();
    let mut conns: Vec<Option<TopConn>> = vec![None; drawn.len()];
    // Pass two: the drawn connections' readings.
    for (_, line) in lines() {
        let Ok(r) = parse_row(line) else { continue };
        let Some(&k) = drawn.get(&(r.local.clone(), r.remote.clone())) else {
            continue;
        };
        let c = conns[k].get_or_insert_with(|| TopConn {
            local: r.local,
            remote: r.remote,
            pid: None,
            command: None,
            congestion: None,
            samples: Vec::new(),
        });
        c.pid = c.pid.or(r.pid);
        c.command = c.command.take().or(r.command);
        c.congestion = c.congestion.take().or(r.congestion);
        c.samples.push(r.sample);
    }
    let data = TopData {
        rows,
        first,
        last,
        seen: tally.len() as u64,
        conns: conns.into_iter().flatten().collect(),
        left_busy: busy.len().saturating_sub(MAX_DRAWN) as u64,
        left_busy_share: if total > 0.0 { left / total } else { 0.0 },
        left_idle: tally.values().filter(|t| !t.busy).count() as u64,
    };
    let v = serde_json::to_value(&data).map_err(|e| e.to_string())?;
    Ok(json!({ KEY: v }))
}

impl TopData {
    /// The top log a document holds, if it is one.
    pub fn from_doc(doc: &Value) -> Option<TopData> {
        if !is_top_doc(doc) {
            return None;
        }
        Deserialize::deserialize(&doc[KEY]).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(interval: u64, remote: &str, rate: f64, extra: &str) -> String {
        format!(
            "{{\"interval\":{interval},\"local\":\"10.0.0.1:22\",\"remote\":\"{remote}\",\
             \"direction\":\"sender\",\"rate_bps\":{rate},\"pid\":7,\"command\":\"sshd\"{extra}}}\n"
        )
    }

    #[test]
    fn a_log_read_into_its_connections_busiest_first() {
        let log = line(1, "b:1", 10.0, ",\"rtt_ms\":1.5")
            + &line(1, "c:1", 30.0, ",\"limit\":\"receive_window\"")
            + &line(2, "b:1", 10.0, "");
        assert!(is_top_log(&log));
        let doc = document_from_top(&log).expect("a top log");
        assert!(is_top_doc(&doc));
        let t = TopData::from_doc(&doc).expect("top data");
        assert_eq!((t.rows, t.first, t.last, t.seen), (3, 1, 2, 2));
        let remotes: Vec<&str> = t.conns.iter().map(|c| c.remote.as_str()).collect();
        assert_eq!(remotes, ["c:1", "b:1"]);
        assert_eq!(
            t.conns[0].samples[0].limit.as_deref(),
            Some("receive_window")
        );
        assert_eq!(t.conns[1].samples[0].rtt_ms, Some(1.5));
        assert_eq!(t.conns[1].samples[1].rtt_ms, None);
        assert_eq!((t.conns[1].pid, t.left_busy, t.left_idle), (Some(7), 0, 0));
    }

    #[test]
    fn missing_keys_and_wrong_types() {
        let e = document_from_top(&line(1, "b:1", 10.0, ",\"rtt_ms\":\"fast\"")).expect_err("bad");
        assert!(e.contains("\"rtt_ms\" is not a number"), "{e}");
        let e =
            document_from_top("{\"interval\":1,\"local\":\"a\",\"remote\":\"b\",\"rate_bps\":1}")
                .expect_err("no direction");
        assert!(e.contains("no \"direction\" string"), "{e}");
        // Not a top document: one of a test, or one whose data is not a log's.
        assert!(TopData::from_doc(&json!({"start": {}, KEY: {}})).is_none());
        assert!(TopData::from_doc(&json!({KEY: {"rows": "many"}})).is_none());
        assert!(TopData::from_doc(&json!({})).is_none());
    }
}
