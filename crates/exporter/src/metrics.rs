//! The exporter's metrics in OpenMetrics text: one probe's result (a fresh
//! registry per probe, the blackbox-exporter pattern) and the exporter's own
//! running totals for `/metrics`.
//!
//! A probe describes one test, so its values are gauges (as blackbox_exporter's
//! `probe_*` are), in base units: bytes, seconds, bytes per second. Counters
//! (`_total`) are the exporter's own, cumulative since it started.
//!
//! With `--live-flows`, [`Own::new`] also registers the live sampler's
//! counters (`plumb_live_*`, labelled by class and limit only; see `live.rs`).

use std::sync::atomic::AtomicU64;

use plumb_record::diagnosis::Diagnosis;
use plumb_record::{Document, End, EndSum, Real};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

/// The media type Prometheus asks for and this text is.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The older Prometheus text format, for clients that ask for `text/plain`.
pub const CONTENT_TYPE_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Whether an `Accept` header asks for the Prometheus text format rather than
/// OpenMetrics: it names `text/plain` and not `application/openmetrics-text`.
/// Anything else (`*/*`, none, Prometheus's own header) gets OpenMetrics.
pub fn wants_text(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| a.contains("text/plain") && !a.contains("application/openmetrics-text"))
}

/// OpenMetrics text as the Prometheus text format (0.0.4): a counter's
/// metadata names its `_total` sample, and `# UNIT` and `# EOF` go. Tools
/// that read only that format (`promtool check metrics`, older scrapers)
/// otherwise see counters without help or type.
pub fn to_prometheus_text(om: &str) -> String {
    let counters: std::collections::HashSet<&str> = om
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(om.len());
    for line in om.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "]
            .into_iter()
            .find_map(|p| line.strip_prefix(p).map(|rest| (p, rest)));
        match meta.and_then(|(p, rest)| Some((p, rest.split_once(' ')?))) {
            Some((p, (name, rest))) if counters.contains(name) => {
                out += &format!("{p}{name}_total {rest}\n");
            }
            _ => {
                out += line;
                out.push('\n');
            }
        }
    }
    out
}

type Labels = Vec<(String, String)>;

/// What a probe found.
#[derive(Debug, Default)]
pub struct ProbeResult {
    /// The test ran to its end.
    pub up: bool,
    /// The peer's tool (`iperf3`, `iperf2`, `nuttcp`), once known.
    pub tool: Option<&'static str>,
    /// Wall-clock seconds of the whole probe.
    pub probe_seconds: f64,
    /// Test seconds asked for (after the caps).
    pub test_time: f64,
    /// The client's `-J` document (partial when the test failed).
    pub doc: Document,
    /// Smoothed RTT, seconds, from the evidence.
    pub rtt: Option<f64>,
    /// Minimum RTT, seconds.
    pub min_rtt: Option<f64>,
    /// The diagnosis, when the document held enough evidence for one.
    pub diagnosis: Option<Diagnosis>,
}

fn gauge(reg: &mut Registry, name: &str, help: &str, unit: Option<Unit>, v: f64) {
    let g = Gauge::<f64, AtomicU64>::default();
    g.set(v);
    match unit {
        Some(u) => reg.register_with_unit(name, help, u, g),
        None => reg.register(name, help, g),
    }
}

fn labelled(
    reg: &mut Registry,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    rows: &[(Labels, f64)],
) {
    let fam = Family::<Labels, Gauge<f64, AtomicU64>>::default();
    for (labels, v) in rows {
        fam.get_or_create(labels).set(*v);
    }
    match unit {
        Some(u) => reg.register_with_unit(name, help, u, fam),
        None => reg.register(name, help, fam),
    }
}

fn per_second() -> Option<Unit> {
    Some(Unit::Other("bytes_per_second".into()))
}

/// A figure that is there: `null` (read as NaN) is not.
fn num(r: Real) -> Option<f64> {
    Some(r.get()).filter(|x| !x.is_nan())
}

/// One probe's metrics as OpenMetrics text.
pub fn probe_text(r: &ProbeResult) -> String {
    let mut reg = Registry::default();
    gauge(
        &mut reg,
        "plumb_up",
        "Whether the test ran to its end (1) or failed (0)",
        None,
        if r.up { 1.0 } else { 0.0 },
    );
    if let Some(tool) = r.tool {
        labelled(
            &mut reg,
            "plumb_probe_tool_info",
            "The peer tool whose protocol the test spoke (named by tool=, or found by tool=auto)",
            None,
            &[(vec![("tool".to_string(), tool.to_string())], 1.0)],
        );
    }
    gauge(
        &mut reg,
        "plumb_probe_duration",
        "Wall-clock time of the whole probe",
        Some(Unit::Seconds),
        r.probe_seconds,
    );
    gauge(
        &mut reg,
        "plumb_probe_test_time",
        "Test time asked for, after --max-time and the scrape timeout",
        Some(Unit::Seconds),
        r.test_time,
    );
    if r.up {
        let end = r.doc.end.as_ref();
        volume_gauges(&mut reg, end);
        rtt_gauges(&mut reg, r);
        udp_gauges(&mut reg, end);
    }
    if let Some(d) = &r.diagnosis {
        diagnosis_gauges(&mut reg, d);
    }
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = encode(&mut out, &reg);
    out
}

/// The test's duration, bytes, throughput and retransmissions, as each side
/// counted them.
fn volume_gauges(reg: &mut Registry, end: Option<&End>) {
    let sent = end.and_then(|e| e.sum_sent.as_ref());
    let rcvd = end.and_then(|e| e.sum_received.as_ref());
    let seconds = |s: Option<&EndSum>| s.and_then(|s| num(s.seconds()));
    if let Some(s) = seconds(rcvd).or(seconds(sent)) {
        gauge(
            reg,
            "plumb_test_duration",
            "Measured duration of the test",
            Some(Unit::Seconds),
            s,
        );
    }
    if let Some(b) = sent.map(|s| s.bytes() as f64) {
        gauge(
            reg,
            "plumb_sent",
            "Bytes the sender sent",
            Some(Unit::Bytes),
            b,
        );
    }
    if let Some(b) = rcvd.map(|s| s.bytes() as f64) {
        gauge(
            reg,
            "plumb_received",
            "Bytes the receiver received",
            Some(Unit::Bytes),
            b,
        );
    }
    let mut rows = Vec::new();
    for (side, sum) in [("sender", sent), ("receiver", rcvd)] {
        if let Some(bps) = sum.and_then(|s| num(s.bits_per_second())) {
            rows.push((vec![("side".to_string(), side.to_string())], bps / 8.0));
        }
    }
    labelled(
        reg,
        "plumb_throughput",
        "Throughput of the test as each side counted it (x8 for bit/s)",
        per_second(),
        &rows,
    );
    let retransmits = match sent {
        Some(EndSum::Tcp(t)) => t.retransmits,
        _ => None,
    };
    if let Some(n) = retransmits.map(|n| n as f64) {
        gauge(
            reg,
            "plumb_retransmitted_segments",
            "TCP segments the sender retransmitted during the test",
            None,
            n,
        );
    }
}

/// The data streams' smoothed and minimum round-trip times.
fn rtt_gauges(reg: &mut Registry, r: &ProbeResult) {
    if let Some(rtt) = r.rtt {
        gauge(
            reg,
            "plumb_rtt",
            "Smoothed round-trip time of the data streams",
            Some(Unit::Seconds),
            rtt,
        );
    }
    if let Some(rtt) = r.min_rtt {
        gauge(
            reg,
            "plumb_min_rtt",
            "Minimum round-trip time of the data streams",
            Some(Unit::Seconds),
            rtt,
        );
    }
}

/// A UDP test's jitter and losses.
fn udp_gauges(reg: &mut Registry, end: Option<&End>) {
    let udp = match end.and_then(|e| e.sum.as_ref()) {
        Some(EndSum::Udp(u)) => Some(u),
        _ => None,
    };
    if let Some((udp, j)) = udp.and_then(|u| Some((u, num(u.jitter_ms)?))) {
        gauge(
            reg,
            "plumb_udp_jitter",
            "UDP jitter at the receiver (RFC 3550)",
            Some(Unit::Seconds),
            j / 1000.0,
        );
        gauge(
            reg,
            "plumb_udp_lost_packets",
            "UDP datagrams lost",
            None,
            udp.lost_packets as f64,
        );
        gauge(
            reg,
            "plumb_udp_packets",
            "UDP datagrams sent",
            None,
            udp.packets as f64,
        );
        if let Some(p) = num(udp.lost_percent) {
            gauge(
                reg,
                "plumb_udp_loss",
                "Share of UDP datagrams lost",
                Some(Unit::Other("ratio".into())),
                p / 100.0,
            );
        }
    }
}

/// The limit `plumb why` names, its predicted rate and the link it used.
fn diagnosis_gauges(reg: &mut Registry, d: &Diagnosis) {
    let limit = d.limit.map_or("none", |l| l.name()).to_string();
    let l = vec![("limit".to_string(), limit)];
    labelled(
        reg,
        "plumb_limit_info",
        "What limits the path, as plumb why names it (none: nothing found)",
        None,
        &[(l.clone(), 1.0)],
    );
    if let Some(p) = d.predicted_bps {
        labelled(
            reg,
            "plumb_limit_predicted",
            "Rate the model predicts under that limit (x8 for bit/s)",
            per_second(),
            &[(l, p / 8.0)],
        );
    }
    if let Some(link) = d.link_bps {
        gauge(
            reg,
            "plumb_link",
            "Bottleneck link rate the diagnosis used (given, interface, or best interval)",
            per_second(),
            link / 8.0,
        );
    }
}

/// How a `/probe` request ended, for the exporter's own counter.
#[derive(Debug, Clone, Copy)]
pub enum Outcome {
    /// The test ran to its end.
    Success,
    /// The test failed (server down, refused, timed out).
    Failure,
    /// 400: a malformed query.
    BadRequest,
    /// 403: a target outside the allow list.
    Forbidden,
    /// 429: that target was being probed.
    BusyTarget,
    /// 503: `--max-probes` were running.
    BusyFull,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::BadRequest => "bad_request",
            Outcome::Forbidden => "forbidden",
            Outcome::BusyTarget => "busy_target",
            Outcome::BusyFull => "busy_full",
        }
    }
}

/// The exporter's own metrics (`/metrics`).
#[derive(Debug)]
pub struct Own {
    registry: Registry,
    probes: Family<Labels, Counter>,
    probe_seconds: Counter<f64, AtomicU64>,
    running: Gauge,
}

impl Own {
    /// Registers the exporter's metrics, and the live-flow counters when given.
    pub fn new(max_probes: usize, live: Option<&crate::live::LiveCounters>) -> Own {
        let mut registry = Registry::default();
        let probes = Family::<Labels, Counter>::default();
        // Every outcome from the start, so rate() sees the first one happen.
        for o in [
            Outcome::Success,
            Outcome::Failure,
            Outcome::BadRequest,
            Outcome::Forbidden,
            Outcome::BusyTarget,
            Outcome::BusyFull,
        ] {
            let _ = probes.get_or_create(&vec![("result".into(), o.label().into())]);
        }
        registry.register(
            "plumb_exporter_probes",
            "Probe requests by how they ended",
            probes.clone(),
        );
        let probe_seconds = Counter::<f64, AtomicU64>::default();
        registry.register_with_unit(
            "plumb_exporter_probe",
            "Time spent running probes",
            Unit::Seconds,
            probe_seconds.clone(),
        );
        let running = Gauge::default();
        registry.register(
            "plumb_exporter_probes_running",
            "Probes running now",
            running.clone(),
        );
        let max: Gauge = Gauge::default();
        max.set(max_probes as i64);
        registry.register(
            "plumb_exporter_max_probes",
            "Probes that may run at once (--max-probes)",
            max,
        );
        if let Some(l) = live {
            registry.register_with_unit(
                "plumb_live_limited",
                "Seconds of transfer by the host's TCP connections, by the class and limit named for each (summed over connections; idle ones not counted)",
                Unit::Seconds,
                l.seconds.clone(),
            );
            registry.register_with_unit(
                "plumb_live",
                "Bytes the host's busy TCP connections moved (acknowledged plus received), by class and limit",
                Unit::Bytes,
                l.bytes.clone(),
            );
            registry.register(
                "plumb_live_samples",
                "Sampling intervals of the host's TCP connections done",
                l.samples.clone(),
            );
        }
        Own {
            registry,
            probes,
            probe_seconds,
            running,
        }
    }

    /// Counts a `/probe` request that ended as `o` after `seconds` of testing.
    pub fn count(&self, o: Outcome, seconds: f64) {
        self.probes
            .get_or_create(&vec![("result".into(), o.label().into())])
            .inc();
        if seconds > 0.0 {
            self.probe_seconds.inc_by(seconds);
        }
    }

    /// The `/metrics` text, with `running` probes now.
    pub fn text(&self, running: usize) -> String {
        self.running.set(running as i64);
        let mut out = String::new();
        let _ = encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_metrics_count_outcomes() {
        let own = Own::new(2, None);
        own.count(Outcome::Forbidden, 0.0);
        own.count(Outcome::Success, 1.25);
        let t = own.text(1);
        assert!(
            t.contains("plumb_exporter_probes_total{result=\"forbidden\"} 1\n"),
            "{t}"
        );
        assert!(
            t.contains("plumb_exporter_probes_total{result=\"busy_full\"} 0\n"),
            "{t}"
        );
        assert!(
            t.contains("plumb_exporter_probe_seconds_total 1.25\n"),
            "{t}"
        );
        assert!(t.contains("plumb_exporter_probes_running 1\n"), "{t}");
        assert!(t.ends_with("# EOF\n"), "{t}");
    }

    #[test]
    fn prometheus_text_names_counter_samples() {
        let own = Own::new(1, None);
        own.count(Outcome::Success, 2.0);
        let t = to_prometheus_text(&own.text(0));
        assert!(
            t.contains("# TYPE plumb_exporter_probes_total counter\n"),
            "{t}"
        );
        assert!(
            t.contains("# HELP plumb_exporter_probes_total Probe requests"),
            "{t}"
        );
        assert!(
            t.contains("# TYPE plumb_exporter_probes_running gauge\n"),
            "{t}"
        );
        assert!(!t.contains("# EOF") && !t.contains("# UNIT"), "{t}");
        assert!(wants_text(Some("text/plain;version=0.0.4")));
        assert!(!wants_text(Some(
            "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"
        )));
        assert!(!wants_text(Some("*/*")) && !wants_text(None));
    }

    #[test]
    fn a_failed_probe_says_so_and_no_more() {
        let t = probe_text(&ProbeResult {
            up: false,
            probe_seconds: 0.5,
            test_time: 5.0,
            ..ProbeResult::default()
        });
        assert!(
            t.contains("plumb_up 0.0\n") || t.contains("plumb_up 0\n"),
            "{t}"
        );
        assert!(!t.contains("plumb_throughput"), "{t}");
        assert!(!t.contains("plumb_probe_tool_info"), "no tool known: {t}");
        let t = probe_text(&ProbeResult {
            tool: Some("nuttcp"),
            ..ProbeResult::default()
        });
        assert!(
            t.contains("plumb_probe_tool_info{tool=\"nuttcp\"} 1"),
            "{t}"
        );
    }
}
#[cfg(test)]
mod probe_doc_tests {
    use super::*;

    fn text(doc: &str) -> String {
        probe_text(&ProbeResult {
            up: true,
            doc: Document::parse(doc).expect("a document"),
            ..ProbeResult::default()
        })
    }

    #[test]
    fn a_tcp_test_gives_bytes_rates_and_retransmits() {
        let t = text(include_str!("../../report/tests/fixtures/plumb-p2.json"));
        for line in [
            "plumb_sent_bytes 8421769216.0\n",
            "plumb_retransmitted_segments 24.0\n",
            "plumb_throughput_bytes_per_second{side=\"receiver\"}",
        ] {
            assert!(t.contains(line), "{line}: {t}");
        }
        assert!(!t.contains("plumb_udp"), "{t}");
    }

    #[test]
    fn a_udp_test_gives_jitter_and_loss() {
        let t = text(include_str!(
            "../../report/tests/fixtures/iperf3-3.22-udp.json"
        ));
        for line in [
            "plumb_udp_jitter_seconds 0.00008216734141336331\n",
            "plumb_udp_lost_packets 0.0\n",
            "plumb_udp_packets 573.0\n",
            "plumb_udp_loss_ratio 0.0\n",
        ] {
            assert!(t.contains(line), "{line}: {t}");
        }
        assert!(!t.contains("plumb_retransmitted"), "{t}");
    }
}
