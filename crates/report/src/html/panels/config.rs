//! The test's configuration: who wrote the document and both hosts'
//! systems, the test's parameters and CPU ([`config_panel`]), both hosts'
//! sysctls side by side, and the emulated link of a `plumb lab` run.

use std::fmt::Write as _;

use crate::chart::esc;
use crate::format::{figures, rate};
use crate::html::extract::config::{Config, Lab, Sysctls};
use crate::html::extract::Document;

/// The configuration section of a test; nothing for a document without one.
pub fn config_panel(d: &Document) -> Option<String> {
    let c = d.config.as_ref()?;
    let mut s =
        String::from("<section class=\"config\"><h3>Test configuration</h3><table class=\"kv\">");
    kv_rows(&mut s, &test_rows(c));
    s.push_str("</table>");
    // Both hosts' sysctls side by side (plumb records them; iperf3 does not).
    let (near, far) = (c.sysctls_near.as_ref(), c.sysctls_far.as_ref());
    if near.is_some() || far.is_some() {
        sysctl_table(&mut s, c, near, far);
    }
    if let Some(why) = c.hosts.sysctls_missing(near.is_some(), far.is_some()) {
        let _ = write!(s, "<p class=\"note\">{}</p>", esc(&why));
    }
    if let Some(lab) = &c.lab {
        s.push_str("<h3>Lab link (emulated)</h3><table class=\"kv\">");
        kv_rows(&mut s, &lab_rows(lab));
        s.push_str("</table>");
    }
    s.push_str("</section>");
    Some(s)
}

/// Rows of a two-column table: a name and its value.
fn kv_rows(s: &mut String, rows: &[(String, String)]) {
    for (k, v) in rows {
        let _ = write!(s, "<tr><td>{}</td><td>{}</td></tr>", esc(k), esc(v));
    }
}

/// The rows of the test's table: the writer, both hosts, the parameters,
/// the buffers granted and CPU; a value the document lacks has no row.
fn test_rows(c: &Config) -> Vec<(String, String)> {
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut add = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            rows.push((k.into(), v));
        }
    };
    let hosts = &c.hosts;
    add("written by", c.written_by.clone());
    add(&hosts.near, hosts.near_system.clone());
    add(&hosts.far, Some(hosts.far_system.clone()));
    add("time", c.time.clone());
    add(
        "server",
        c.server.as_ref().map(|(h, p)| format!("{h} port {p}")),
    );
    add("protocol", c.protocol.clone());
    add("streams", c.streams.clone());
    add("duration", c.duration.as_ref().map(|d| format!("{d} s")));
    add(
        "block size",
        c.block_size.as_ref().map(|b| format!("{b} B")),
    );
    let dir = if c.bidir {
        "both ways (--bidir)"
    } else if c.reverse {
        "server to client (-R)"
    } else {
        "client to server"
    };
    add("direction", Some(dir.into()));
    add("congestion control (sender)", c.congestion_sender.clone());
    add(
        "congestion control (receiver)",
        c.congestion_receiver.clone(),
    );
    add(
        "send buffer granted",
        c.sndbuf.as_ref().map(|b| format!("{b} B")),
    );
    add(
        "receive buffer granted",
        c.rcvbuf.as_ref().map(|b| format!("{b} B")),
    );
    let pct = |v: Option<f64>| v.map(|c| format!("{} %", figures(c)));
    add(&format!("CPU, {}", hosts.near_short), pct(c.cpu_near));
    add(&format!("CPU, {}", hosts.far_short), pct(c.cpu_far));
    rows
}

/// Both hosts' sysctls, one row per key either recorded; a row whose
/// values differ is marked.
fn sysctl_table(s: &mut String, c: &Config, near: Option<&Sysctls>, far: Option<&Sysctls>) {
    let mut keys: Vec<&String> = near
        .iter()
        .chain(far.iter())
        .flat_map(|m| m.keys())
        .collect();
    keys.sort();
    keys.dedup();
    let _ = write!(
        s,
        "<h3>Sysctls</h3><table class=\"kv sysctl\"><tr><th>key</th><th>{}</th><th>{}</th></tr>",
        esc(&c.hosts.near_short),
        esc(&c.hosts.far_short)
    );
    for k in keys {
        // A key the other host recorded and this one did not is "–"; a host
        // that recorded none is "not recorded".
        let get = |m: Option<&Sysctls>| match m {
            Some(m) => m.get(k).cloned().flatten().unwrap_or_else(|| "–".into()),
            None => "not recorded".into(),
        };
        let (a, b) = (get(near), get(far));
        let differ = if near.is_some() && far.is_some() && a != b {
            " class=\"differ\""
        } else {
            ""
        };
        let _ = write!(
            s,
            "<tr{differ}><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(k),
            esc(&a),
            esc(&b)
        );
    }
    s.push_str("</table>");
}

/// The emulated link's rows: as configured, as measured, what the
/// emulator did.
fn lab_rows(l: &Lab) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    let mut add = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            rows.push((k.to_string(), v));
        }
    };
    let ms = |v: Option<f64>| v.map(|r| format!("{} ms", figures(r)));
    add("link rate", l.rate_bps.map(rate));
    add("round trip", ms(l.rtt_ms));
    add("loss", l.loss.map(|l| format!("{} %", figures(l * 100.0))));
    add("queue", l.queue.clone());
    add("seed", l.seed.clone());
    add("measured round trip (min)", ms(l.measured_rtt_min_ms));
    add("measured link rate", l.measured_rate_bps.map(rate));
    add("segments delivered", l.segments_delivered.clone());
    add("dropped by the queue", l.dropped_queue.clone());
    add("dropped by the loss model", l.dropped_loss.clone());
    add(
        "release error p50 / p99",
        l.release_error_us
            .map(|(a, b)| format!("{} / {} µs", figures(a), figures(b))),
    );
    rows
}
