//! Keeping the connections of a `plumb top --json` log the page draws:
//! every line checked (read into the record's [`plumb_record::TopLine`] by
//! [`crate::input::top_line::parse_line`]), and the [`MAX_DRAWN`] busiest
//! connections kept with all their readings ([`read_top`]).

use std::collections::HashMap;

use super::data::{Sample, TopConn, TopData, MAX_DRAWN};
use crate::input::top_line::parse_line;

/// What pass one keeps per connection.
struct Tally {
    sum_bps: f64,
    busy: bool,
    last: u64,
    order: usize,
}

/// Reads a `plumb top --json` log into the connections the page draws, or
/// says which line is wrong and why. Every line must be a row; a
/// connection's rows must come in rising intervals (as top writes them; two
/// logs joined end to end do not).
pub fn read_top(text: &str) -> Result<TopData, String> {
    let lines = || {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
    };
    // Pass one: check every line, and total each connection.
    let mut tally: HashMap<(String, String), Tally> = HashMap::new();
    let (mut rows, mut first, mut last) = (0u64, u64::MAX, 0u64);
    for (n, line) in lines() {
        let r = parse_line(line).map_err(|e| format!("line {}: {e}", n + 1))?;
        let i = r.interval;
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
        t.sum_bps += r.rate_bps;
        t.busy |= r.direction != "idle" || r.rate_bps > 0.0;
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
        let Ok(r) = parse_line(line) else { continue };
        let Some(&k) = drawn.get(&(r.local.clone(), r.remote.clone())) else {
            continue;
        };
        let sample = Sample::of(&r);
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
        c.samples.push(sample);
    }
    Ok(TopData {
        rows,
        first,
        last,
        seen: tally.len() as u64,
        conns: conns.into_iter().flatten().collect(),
        left_busy: busy.len().saturating_sub(MAX_DRAWN) as u64,
        left_busy_share: if total > 0.0 { left / total } else { 0.0 },
        left_idle: tally.values().filter(|t| !t.busy).count() as u64,
    })
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
        // Not a top document: one of a test, or one whose data is not a log's.
        let doc = |t: &str| Document::parse(t).expect("a document");
        assert!(top_data(&doc(r#"{"start": {}, "plumb_top": {}}"#)).is_none());
        assert!(top_data(&doc(r#"{"plumb_top": {"rows": "many"}}"#)).is_none());
        assert!(top_data(&doc("{}")).is_none());
    }
}
