//! `plumb top --json` logs on the page: the connections over time.
//!
//! A top log is NDJSON, one object per connection per interval (`interval`,
//! `local`, `remote`, `pid`, `command`, `direction`, `rate_bps`, `rtt_ms`,
//! `cwnd_bytes`, `window_bytes`, `retransmits`, `limit`, `congestion`, as
//! `plumb top`'s `write_json` writes them). This module tells such a log
//! from a `--json-stream` log (whose lines are `{"event":…}`), checks every
//! line, and keeps the [`MAX_DRAWN`] busiest connections by data moved with
//! all their readings — the rest are counted, not kept, so a log of a host
//! with thousands of sockets costs memory per connection, not per line. The
//! result is a document (`{"plumb_top": …}`) that [`panel`] draws: a table,
//! throughput, RTT and windows over time, and the limit named per interval.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::chart::{esc, Chart, Quantity, Series, Style};
use crate::format::{figures_trimmed, rate, thousands};
use crate::html::num;

/// At most this many connections are drawn: the busiest by data moved.
pub const MAX_DRAWN: usize = 8;

/// The key of a top log's document.
const KEY: &str = "plumb_top";

/// One reading of a connection: one line of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Top's interval number (the first rows are interval 1).
    pub interval: u64,
    /// `sender`, `receiver` or `idle`: what this host did in the interval.
    pub direction: String,
    /// The rate in the busier direction, bit/s.
    pub rate_bps: f64,
    /// Smoothed RTT, ms.
    pub rtt_ms: Option<f64>,
    /// Congestion window, bytes.
    pub cwnd_bytes: Option<f64>,
    /// The receiver's advertised window (the peer's when this host sends,
    /// this host's when it receives), bytes.
    pub window_bytes: Option<f64>,
    /// Segments retransmitted in the interval.
    pub retransmits: Option<f64>,
    /// The limit named (`receive_window`, `application`…), if any.
    pub limit: Option<String>,
}

/// One connection the page draws, with every reading of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopConn {
    /// This host's address and port.
    pub local: String,
    /// The peer's.
    pub remote: String,
    /// The owning process, when top could see it.
    pub pid: Option<u64>,
    /// Its command name.
    pub command: Option<String>,
    /// The congestion control.
    pub congestion: Option<String>,
    /// Its readings, by interval.
    pub samples: Vec<Sample>,
}

/// What a top log holds, as the page uses it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopData {
    /// Lines read (one per connection per interval).
    pub rows: u64,
    /// The first interval in the log.
    pub first: u64,
    /// The last.
    pub last: u64,
    /// Connections seen.
    pub seen: u64,
    /// The drawn ones, busiest first.
    pub conns: Vec<TopConn>,
    /// Busy connections not drawn (past [`MAX_DRAWN`]).
    pub left_busy: u64,
    /// Their share of all the data moved, 0–1.
    pub left_busy_share: f64,
    /// Connections idle in every reading.
    pub left_idle: u64,
}

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

impl TopConn {
    /// "#1 127.0.0.1:53066 → 127.0.0.1:5331": its number on the page (from 0).
    pub fn label(&self, k: usize) -> String {
        format!("#{} {} → {}", k + 1, self.local, self.remote)
    }

    /// This host sent on it in some interval.
    pub fn sends(&self) -> bool {
        self.samples.iter().any(|s| s.direction == "sender")
    }

    /// This host received on it in some interval.
    pub fn receives(&self) -> bool {
        self.samples.iter().any(|s| s.direction == "receiver")
    }

    /// What this host did on it, in words.
    pub fn role(&self) -> &'static str {
        match (self.sends(), self.receives()) {
            (true, true) => "sends and receives",
            (true, false) => "sends",
            (false, true) => "receives",
            (false, false) => "idle",
        }
    }

    /// The mean rate from its first reading to its last, bit/s; an interval
    /// without a reading counts as idle (top reads every busy connection
    /// every interval).
    pub fn mean_bps(&self) -> f64 {
        let (Some(a), Some(b)) = (self.samples.first(), self.samples.last()) else {
            return 0.0;
        };
        let n = (b.interval.saturating_sub(a.interval) + 1) as f64;
        self.samples.iter().map(|s| s.rate_bps).sum::<f64>() / n
    }

    /// Its limit in one interval, as the strip names it: the limit, "none
    /// named" (busy, no limit found) or "idle".
    pub fn limit_at(s: &Sample) -> String {
        if s.direction == "idle" {
            "idle".into()
        } else {
            s.limit
                .as_deref()
                .map_or_else(|| "none named".into(), |l| l.replace('_', " "))
        }
    }

    /// The limit's changes: "1–3 application, 4 receive window"; a gap in
    /// the readings ends a run. Each run is its first and last interval, its
    /// limit and its first reading.
    pub fn limit_runs(&self) -> Vec<(u64, u64, String, &Sample)> {
        let mut runs: Vec<(u64, u64, String, &Sample)> = Vec::new();
        for s in &self.samples {
            let l = Self::limit_at(s);
            match runs.last_mut() {
                Some(r) if r.1 + 1 == s.interval && r.2 == l => r.1 = s.interval,
                _ => runs.push((s.interval, s.interval, l, s)),
            }
        }
        runs
    }
}

impl TopData {
    /// The top log a document holds, if it is one.
    pub fn from_doc(doc: &Value) -> Option<TopData> {
        if !is_top_doc(doc) {
            return None;
        }
        Deserialize::deserialize(&doc[KEY]).ok()
    }

    /// What wrote it, for the page's subtitle.
    pub fn producer(&self) -> String {
        format!(
            "plumb top --json: {} readings of {} connection{}, intervals {} to {}",
            thousands(self.rows as f64),
            thousands(self.seen as f64),
            if self.seen == 1 { "" } else { "s" },
            self.first,
            self.last
        )
    }

    fn chart(&self, id: &str, title: &str, y: (Quantity, &str), series: Vec<Series>) -> Chart {
        Chart {
            id: id.into(),
            title: title.into(),
            x: (Quantity::Intervals, "time".into()),
            y: (y.0, y.1.into()),
            series,
            steps: true,
            x_range: Some((self.first.saturating_sub(1) as f64, self.last as f64)),
        }
    }
}

/// A step series of one reading per interval: each value from its
/// interval's start (`interval - 1`) to its end; a missing reading or value
/// breaks the line (a point that is not finite).
pub fn steps(samples: &[Sample], pick: impl Fn(&Sample) -> Option<f64>) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut open: Option<(u64, f64)> = None;
    for s in samples {
        let v = pick(s).filter(|v| v.is_finite());
        match (open, v) {
            (Some((i, _)), Some(v)) if s.interval == i + 1 => {
                out.push((i as f64, v));
                open = Some((s.interval, v));
            }
            (prev, v) => {
                if let Some((i, pv)) = prev {
                    out.push((i as f64, pv));
                    out.push((f64::NAN, f64::NAN));
                }
                open = v.map(|v| {
                    out.push((s.interval as f64 - 1.0, v));
                    (s.interval, v)
                });
            }
        }
    }
    match open {
        Some((i, v)) => out.push((i as f64, v)),
        None => {
            if out.last().is_some_and(|p| p.0.is_nan()) {
                out.pop();
            }
        }
    }
    out
}

/// Throughput over time, one line per drawn connection (receivers dashed,
/// drawn over the senders: on one host both ends of a transfer carry the
/// same rate).
pub fn throughput_chart(t: &TopData) -> Option<Chart> {
    let mut series: Vec<Series> = t
        .conns
        .iter()
        .enumerate()
        .map(|(k, c)| Series {
            name: format!("{} ({})", c.label(k), c.role()),
            points: steps(&c.samples, |s| Some(s.rate_bps)),
            style: if c.sends() {
                Style::Palette(k)
            } else {
                Style::Dashed(k)
            },
        })
        .collect();
    series.sort_by_key(|s| matches!(s.style, Style::Dashed(_)));
    (!series.is_empty()).then(|| {
        t.chart(
            "top-throughput",
            "Throughput of each connection (dashed: this host receives)",
            (Quantity::Rate, "rate"),
            series,
        )
    })
}

/// The smoothed RTT of the connections this host sends on.
pub fn rtt_chart(t: &TopData) -> Option<Chart> {
    let series: Vec<Series> = t
        .conns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.sends())
        .map(|(k, c)| Series {
            name: c.label(k),
            points: steps(&c.samples, |s| s.rtt_ms.filter(|r| *r > 0.0)),
            style: Style::Palette(k),
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    (!series.is_empty()).then(|| {
        t.chart(
            "top-rtt",
            "Round-trip time (TCP's smoothed RTT, at the sending end)",
            (Quantity::Millis, "RTT"),
            series,
        )
    })
}

/// The congestion window of the connections this host sends on (solid),
/// and the receiver's advertised window of every drawn one (dashed).
pub fn window_chart(t: &TopData) -> Option<Chart> {
    let mut series = Vec::new();
    for (k, c) in t.conns.iter().enumerate().filter(|(_, c)| c.sends()) {
        series.push(Series {
            name: format!("#{}: congestion window", k + 1),
            points: steps(&c.samples, |s| s.cwnd_bytes.filter(|w| *w > 0.0)),
            style: Style::Palette(k),
        });
    }
    for (k, c) in t.conns.iter().enumerate() {
        series.push(Series {
            name: format!("#{}: receiver's window", k + 1),
            points: steps(&c.samples, |s| s.window_bytes),
            style: Style::Dashed(k),
        });
    }
    series.retain(|s| !s.points.is_empty());
    (!series.is_empty()).then(|| {
        t.chart(
            "top-windows",
            "Congestion window (solid, at the sending end) and the receiver's advertised window (dashed)",
            (Quantity::Bytes, "window"),
            series,
        )
    })
}

/// The palette colour of a limit, the same on every page.
fn limit_class(s: &Sample) -> (&'static str, String) {
    if s.direction == "idle" {
        return ("mark idle", "idle".into());
    }
    let Some(l) = s.limit.as_deref() else {
        return ("mark none", "none".into());
    };
    let class = match l {
        "receive_window" => "mark s0",
        "send_buffer" => "mark s1",
        "congestion" => "mark s2",
        "loss" => "mark s3",
        "link" => "mark s4",
        "cpu" => "mark s5",
        "application" => "mark s6",
        "path_mtu" => "mark s7",
        _ => "mark other",
    };
    (class, l.to_string())
}

/// The limit named per interval: one row per drawn connection, a mark per
/// run of intervals with one limit (`data-intervals` says how many),
/// coloured by limit, with a legend of the limits present.
pub fn limit_strip(t: &TopData) -> Option<String> {
    if t.conns.is_empty() {
        return None;
    }
    const W: f64 = 720.0;
    const LEFT: f64 = 64.0;
    const RIGHT: f64 = 14.0;
    const TOP: f64 = 10.0;
    const ROW: f64 = 18.0;
    const GAP: f64 = 6.0;
    const BOTTOM: f64 = 42.0;
    let ph = t.conns.len() as f64 * (ROW + GAP) - GAP;
    let h = TOP + ph + BOTTOM;
    let xs = t
        .chart("x", "", (Quantity::Count, ""), Vec::new())
        .x_scale();
    let pw = W - LEFT - RIGHT;
    let px = |v: f64| LEFT + xs.frac(v).clamp(0.0, 1.0) * pw;
    let title = "Limit named in each interval (one row per connection; hover for the interval)";
    let mut s = format!(
        "<figure class=\"chart-box\"><figcaption>{title}</figcaption>\
         <svg class=\"chart\" data-chart=\"top-limits\" viewBox=\"0 0 {W} {h}\" role=\"img\" aria-label=\"{title}\" xmlns=\"http://www.w3.org/2000/svg\">"
    );
    crate::chart::x_grid(&mut s, &xs, px, TOP, TOP + ph);
    let mut present: Vec<(&'static str, String)> = Vec::new();
    for (k, c) in t.conns.iter().enumerate() {
        let y = TOP + k as f64 * (ROW + GAP);
        let _ = write!(
            s,
            "<text class=\"rowlabel\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">#{}</text>",
            LEFT - 6.0,
            y + ROW / 2.0 + 4.0,
            k + 1
        );
        // One mark per run of intervals with the same limit, so a day of
        // readings is as many marks as the limit changed.
        for (from, to, label, first) in c.limit_runs() {
            let (class, key) = limit_class(first);
            let (x0, x1) = (px(from as f64 - 1.0), px(to as f64));
            let when = if from == to {
                format!("interval {from}")
            } else {
                format!("intervals {from}–{to}")
            };
            let _ = write!(
                s,
                "<rect class=\"{class}\" data-limit=\"{}\" data-intervals=\"{}\" x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{ROW}\"><title>#{} {when}: {}</title></rect>",
                esc(&key),
                to - from + 1,
                x0 + 0.5,
                (x1 - x0 - 1.0).max(0.5),
                k + 1,
                esc(&label)
            );
            if !present.iter().any(|p| p.0 == class && p.1 == key) {
                present.push((class, key));
            }
        }
    }
    let _ = write!(
        s,
        "<text class=\"axis\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">time (intervals)</text></svg><ul class=\"legend\">",
        LEFT + pw / 2.0,
        h - 6.0
    );
    for (class, key) in present {
        let name = match key.as_str() {
            "none" => "busy, no limit named".to_string(),
            "idle" => "idle".to_string(),
            l => l.replace('_', " "),
        };
        let _ = write!(
            s,
            "<li><svg class=\"key\" viewBox=\"0 0 16 10\" width=\"16\" height=\"10\"><rect class=\"{class}\" x=\"1\" y=\"1\" width=\"14\" height=\"8\"/></svg>{}</li>",
            esc(&name)
        );
    }
    s.push_str("</ul></figure>");
    Some(s)
}

/// The connection table: identity, what this host did, rates, the limits
/// seen and when they changed.
fn table(t: &TopData) -> String {
    let mut s = String::from(
        "<table class=\"compare live\"><tr><th>#</th><th>connection</th><th>process</th><th>this host</th>\
         <th>mean rate</th><th>peak</th><th>retransmits</th><th>limits seen</th><th>limit by interval</th></tr>",
    );
    for (k, c) in t.conns.iter().enumerate() {
        let process = crate::html::process_name(c.command.as_deref(), c.pid, "unknown");
        let mut seen: Vec<(String, usize)> = Vec::new();
        for smp in c.samples.iter().filter(|s| s.direction != "idle") {
            let l = TopConn::limit_at(smp);
            match seen.iter_mut().find(|x| x.0 == l) {
                Some(x) => x.1 += 1,
                None => seen.push((l, 1)),
            }
        }
        let seen = if seen.is_empty() {
            "– (idle)".to_string()
        } else {
            seen.iter()
                .map(|(l, n)| format!("{l} ({n} of {})", c.samples.len()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let runs = c.limit_runs();
        let mut by: Vec<String> = runs
            .iter()
            .take(12)
            .map(|(a, b, l, _)| {
                if a == b {
                    format!("{a} {l}")
                } else {
                    format!("{a}–{b} {l}")
                }
            })
            .collect();
        if runs.len() > 12 {
            by.push(format!("and {} more changes", runs.len() - 12));
        }
        let peak = c.samples.iter().map(|s| s.rate_bps).fold(0.0, f64::max);
        let retrans: f64 = c.samples.iter().filter_map(|s| s.retransmits).sum();
        let mut who = c.role().to_string();
        if let Some(cc) = &c.congestion {
            let _ = write!(who, ", {cc}");
        }
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{} → {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            k + 1,
            esc(&c.local),
            esc(&c.remote),
            esc(&process),
            esc(&who),
            rate(c.mean_bps()),
            rate(peak),
            thousands(retrans),
            esc(&seen),
            esc(&by.join(", "))
        );
    }
    s.push_str("</table>");
    s
}

/// The panel of a top log: what it holds and left out, the table, the
/// charts over time and the limit per interval.
pub fn panel(t: &TopData) -> String {
    let mut s = String::from("<section class=\"top\"><h3>Connections over time</h3>");
    let n = t.conns.len();
    let _ = write!(
        s,
        "<p class=\"sub\">{} connection{} drawn, busiest first by data moved, over plumb top's intervals {} to {} \
         (1 s each unless top ran with -i; the log does not say).</p>",
        n,
        if n == 1 { "" } else { "s" },
        t.first,
        t.last
    );
    let mut left = Vec::new();
    if t.left_busy > 0 {
        left.push(format!(
            "{} more busy connection{} (together {} % of the data moved; only the {MAX_DRAWN} busiest are drawn)",
            t.left_busy,
            if t.left_busy == 1 { "" } else { "s" },
            figures_trimmed(t.left_busy_share * 100.0)
        ));
    }
    if t.left_idle > 0 {
        left.push(format!(
            "{} connection{} idle in every reading",
            t.left_idle,
            if t.left_idle == 1 { "" } else { "s" }
        ));
    }
    if !left.is_empty() {
        let _ = write!(
            s,
            "<p class=\"note\">Left out: {}.</p>",
            esc(&left.join("; "))
        );
    }
    if t.conns.is_empty() {
        s.push_str("<p class=\"note\">No connection moved data in any interval read: nothing to draw.</p></section>");
        return s;
    }
    s.push_str(&table(t));
    for c in [throughput_chart(t), rtt_chart(t), window_chart(t)]
        .into_iter()
        .flatten()
    {
        s.push_str(&c.to_html());
    }
    if t.conns.iter().any(|c| !c.sends()) {
        s.push_str(
            "<p class=\"note\">RTT and congestion window are drawn for the connections this host sends on: \
             a receiving end's TCP has little of its own to time, and its window is the sender's to use.</p>",
        );
    }
    s.extend(limit_strip(t));
    s.push_str("</section>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(interval: u64, v: f64) -> Sample {
        Sample {
            interval,
            direction: "sender".into(),
            rate_bps: v,
            rtt_ms: None,
            cwnd_bytes: None,
            window_bytes: None,
            retransmits: None,
            limit: None,
        }
    }

    #[test]
    fn steps_run_from_each_interval_start_and_break_at_gaps() {
        let s = [sample(1, 1.0), sample(2, 2.0), sample(4, 4.0)];
        let p = steps(&s, |s| Some(s.rate_bps));
        assert_eq!(p.len(), 6);
        assert_eq!(&p[..3], &[(0.0, 1.0), (1.0, 2.0), (2.0, 2.0)]);
        assert!(p[3].0.is_nan());
        assert_eq!(&p[4..], &[(3.0, 4.0), (4.0, 4.0)]);
        // A missing value breaks the line too, and nothing trails.
        let p = steps(&s, |s| (s.interval != 4).then_some(s.rate_bps));
        assert_eq!(p, vec![(0.0, 1.0), (1.0, 2.0), (2.0, 2.0)]);
        assert!(steps(&s, |_| None).is_empty());
    }
}
