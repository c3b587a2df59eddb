//! Keeping the connections of a `plumb top --json` log the page draws:
//! every line checked (read into the record's [`plumb_record::TopLine`] by
//! [`crate::input::top_line::parse_line`]; [`read_rows`]), and the
//! [`MAX_DRAWN`] busiest connections kept with all their readings
//! ([`summarize`]).

use std::collections::HashMap;

use plumb_record::TopLine;

use super::data::{Sample, TopConn, TopData, MAX_DRAWN};
use crate::input::top_line::parse_line;

/// What the first pass keeps per connection.
struct Tally {
    sum_bps: f64,
    busy: bool,
    order: usize,
}

/// Reads a `plumb top --json` log into its rows, or says which line is
/// wrong and why. Every line must be a row; a connection's rows must come
/// in rising intervals (as top writes them; two logs joined end to end do
/// not); a log holds at least one row.
pub fn read_rows(text: &str) -> Result<Vec<TopLine>, String> {
    // Per connection: the order it first came in, and its last interval.
    let mut seen: HashMap<(String, String), (usize, u64)> = HashMap::new();
    let mut rows = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let r = parse_line(line).map_err(|e| format!("line {}: {e}", n + 1))?;
        let i = r.interval;
        let order = seen.len();
        let t = seen
            .entry((r.local.clone(), r.remote.clone()))
            .or_insert((order, 0));
        if t.0 != order && i <= t.1 {
            return Err(format!(
                "line {}: the same connection again in interval {i} after interval {} (two logs joined?)",
                n + 1,
                t.1
            ));
        }
        t.1 = i;
        rows.push(r);
    }
    if rows.is_empty() {
        return Err("no rows".into());
    }
    Ok(rows)
}

/// The connections of a log's `rows` the page draws: the busiest by data
/// moved (rates summed over equal intervals; ties in the log's order), each
/// with all its readings, and what was left out.
pub fn summarize(rows: &[TopLine]) -> TopData {
    // Pass one: total each connection.
    let mut tally: HashMap<(&str, &str), Tally> = HashMap::new();
    let (mut first, mut last) = (u64::MAX, 0u64);
    for r in rows {
        let order = tally.len();
        let t = tally
            .entry((r.local.as_str(), r.remote.as_str()))
            .or_insert(Tally {
                sum_bps: 0.0,
                busy: false,
                order,
            });
        t.sum_bps += r.rate_bps;
        t.busy |= r.direction != "idle" || r.rate_bps > 0.0;
        first = first.min(r.interval);
        last = last.max(r.interval);
    }
    let mut busy: Vec<(&(&str, &str), &Tally)> = tally.iter().filter(|(_, t)| t.busy).collect();
    busy.sort_by(|a, b| {
        b.1.sum_bps
            .total_cmp(&a.1.sum_bps)
            .then(a.1.order.cmp(&b.1.order))
    });
    let total: f64 = busy.iter().map(|(_, t)| t.sum_bps).sum();
    let drawn: HashMap<(&str, &str), usize> = busy
        .iter()
        .take(MAX_DRAWN)
        .enumerate()
        .map(|(k, (key, _))| (**key, k))
        .collect();
    let left: f64 = busy.iter().skip(MAX_DRAWN).map(|(_, t)| t.sum_bps).sum();
    let mut conns: Vec<Option<TopConn>> = vec![None; drawn.len()];
    // Pass two: the drawn connections' readings.
    for r in rows {
        let Some(&k) = drawn.get(&(r.local.as_str(), r.remote.as_str())) else {
            continue;
        };
        let c = conns[k].get_or_insert_with(|| TopConn {
            local: r.local.clone(),
            remote: r.remote.clone(),
            pid: None,
            command: None,
            congestion: None,
            samples: Vec::new(),
        });
        c.pid = c.pid.or(r.pid);
        c.command = c.command.take().or_else(|| r.command.clone());
        c.congestion = c.congestion.take().or_else(|| r.congestion.clone());
        c.samples.push(Sample::of(r));
    }
    TopData {
        rows: rows.len() as u64,
        first,
        last,
        seen: tally.len() as u64,
        conns: conns.into_iter().flatten().collect(),
        left_busy: busy.len().saturating_sub(MAX_DRAWN) as u64,
        left_busy_share: if total > 0.0 { left / total } else { 0.0 },
        left_idle: tally.values().filter(|t| !t.busy).count() as u64,
    }
}

/// Reads a `plumb top --json` log into the connections the page draws, or
/// says which line is wrong and why ([`read_rows`], then [`summarize`]).
pub fn read_top(text: &str) -> Result<TopData, String> {
    read_rows(text).map(|rows| summarize(&rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::top_log::{document_from_top, is_top_doc, is_top_log, top_data};
    use plumb_record::Document;

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
        let t = top_data(&doc).expect("top data");
        assert_eq!(t, read_top(&log).expect("a top log"));
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
        // Not a top document: one of a test, or one read from JSON.
        let doc = |t: &str| Document::parse(t).expect("a document");
        let mut test = doc(r#"{"start": {}}"#);
        test.top_rows = Some(read_rows(&line(1, "b:1", 1.0, "")).expect("a row"));
        assert!(top_data(&test).is_none());
        assert!(top_data(&doc(r#"{"top_rows": [], "plumb_top": {"rows": 1}}"#)).is_none());
        assert!(top_data(&doc("{}")).is_none());
    }
}
