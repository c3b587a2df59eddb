//! The request/response and `--latency` results as typed records, and their
//! two renderings: the text lines printed at the end of a test and the JSON
//! object under `end.plumb.latency` (and `intervals[].plumb.latency`).
//!
//! The measuring engine fills these records from its histograms; this
//! module only names, orders and prints what it is given. Every value keeps
//! the JSON kind it has always had: counts are integers, times and rates
//! floats, and a missing fact is `null` (or a missing key, where the key has
//! always been left out).

use serde_json::{json, Map, Value};

/// Percentiles of one latency distribution, in the unit the record names
/// (µs for request/response, ms for `--latency`).
#[derive(Debug, Clone, PartialEq)]
pub struct Percentiles {
    /// Fastest.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p99_9: f64,
    /// Slowest.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// The non-empty buckets of the distribution, ascending.
    pub buckets: Vec<Bucket>,
}

/// One bucket of a latency distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    /// Upper bound of the bucket, in the record's unit.
    pub le: f64,
    /// Values in the bucket.
    pub count: u64,
}

/// Which request/response test ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RrKind {
    /// `--rr` over TCP.
    TcpRr,
    /// `--rr` over UDP.
    UdpRr,
    /// `--crr`: a new TCP connection per transaction.
    Crr,
}

impl RrKind {
    /// The name under `"test"`.
    pub fn name(self) -> &'static str {
        match self {
            RrKind::TcpRr => "tcp_rr",
            RrKind::UdpRr => "udp_rr",
            RrKind::Crr => "crr",
        }
    }
}

/// Transactions over a span and their rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RrCount {
    /// Transactions completed.
    pub transactions: u64,
    /// Transactions per second over the span.
    pub per_second: f64,
    /// One connection per transaction (`--crr`): the count is also given
    /// under the name a CRR user looks for.
    pub connections: bool,
    /// UDP: transactions never answered (`None` for TCP).
    pub lost: Option<u64>,
}

/// One interval of a request/response test.
#[derive(Debug, Clone, PartialEq)]
pub struct RrInterval {
    /// Round trips of the interval's transactions, µs (`None`: none done).
    pub round_trip: Option<Percentiles>,
    /// The interval's transactions.
    pub count: RrCount,
    /// CRR: the medians of the handshake and of request to response, µs,
    /// when connections were made in the interval.
    pub crr_p50_us: Option<CrrMedians>,
}

/// A CRR interval's median handshake and request/response times, µs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CrrMedians {
    /// The TCP handshake.
    pub connect: f64,
    /// Request sent to response read.
    pub request_response: f64,
}

/// The whole of a request/response test.
#[derive(Debug, Clone, PartialEq)]
pub struct RrEnd {
    /// Which test ran.
    pub kind: RrKind,
    /// Bytes of each request.
    pub request_bytes: u32,
    /// Bytes of each response.
    pub response_bytes: u32,
    /// Transactions in flight per stream.
    pub burst: u32,
    /// Seconds the test ran.
    pub seconds: f64,
    /// The test's transactions.
    pub count: RrCount,
    /// Round trips, µs (`None`: none done).
    pub round_trip: Option<Percentiles>,
    /// CRR only: the two phases of each transaction.
    pub crr: Option<CrrPhases>,
}

/// A CRR test's transactions split into their phases, µs.
#[derive(Debug, Clone, PartialEq)]
pub struct CrrPhases {
    /// The TCP handshake (`None`: no connection made).
    pub connect: Option<Percentiles>,
    /// Request sent to response read.
    pub request_response: Option<Percentiles>,
}

/// One side (idle or loaded) of the `--latency` probes, ms.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeSide {
    /// Probes answered.
    pub probes: usize,
    /// Round trips per minute, as the IPPM responsiveness draft computes it.
    pub rpm: Option<f64>,
    /// Round trips, ms (`None`: no probe answered).
    pub round_trip: Option<Percentiles>,
}

/// What the probes took from the test while the load ran.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeCost {
    /// Seconds the loaded probes ran.
    pub secs: f64,
    /// Bits on the wire, both ways, per second.
    pub wire_bps: f64,
    /// CPU the probe thread used, seconds.
    pub thread_cpu_s: Option<f64>,
}

/// The `--latency` result: idle and loaded probes on a connection of their
/// own, and what the load added.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeLatency {
    /// Probes before the load.
    pub idle: ProbeSide,
    /// Probes while the load ran.
    pub loaded: ProbeSide,
    /// Loaded median minus idle median, ms.
    pub increase_p50_ms: Option<f64>,
    /// Loaded p99 minus idle median, ms.
    pub increase_p99_ms: Option<f64>,
    /// Segments the probe connection resent.
    pub retransmits: Option<u64>,
    /// What the loaded probes cost.
    pub cost: Option<ProbeCost>,
    /// The load's rate: what its receivers got, bit/s.
    pub load_bps: f64,
    /// Interval of the idle probes, ms.
    pub idle_every_ms: f64,
    /// Interval of the loaded probes, ms.
    pub loaded_every_ms: f64,
}

/// A test's latency result, whichever kind it measured.
#[derive(Debug, Clone, PartialEq)]
pub enum Latency {
    /// A request/response test (`--rr`, `--crr`).
    Rr(RrEnd),
    /// `--latency` probes beside a throughput test.
    Probe(ProbeLatency),
}

impl Latency {
    /// The object under `end.plumb.latency`.
    pub fn to_json(&self) -> Value {
        match self {
            Latency::Rr(r) => rr_end_json(r),
            Latency::Probe(p) => probe_json(p),
        }
    }

    /// The text lines printed at the end of the test.
    pub fn lines(&self) -> Vec<String> {
        match self {
            Latency::Rr(r) => rr_end_lines(r),
            Latency::Probe(p) => probe_lines(p),
        }
    }
}

/// How `--latency` computes RPM, and where it differs from the draft.
const RPM_METHOD: &str = "60000 / the 95th-percentile trimmed mean of the round trips (the slowest 5 % dropped), as the IETF IPPM responsiveness draft; differences: one probe kind, 1-byte request/response over plumb's own TCP connection opened before the load (the draft averages TCP, TLS and HTTP/2 handshakes on new connections and HTTP/2 requests on the loaded ones), probes every 100 ms for the whole test rather than after the draft's load ramp and stability check";

/// `p`'s keys with `unit` ("us" or "ms") as their suffix, buckets included
/// when `buckets`; no key at all for an empty distribution.
fn percentiles_json(p: Option<&Percentiles>, unit: &str, buckets: bool) -> Map<String, Value> {
    let mut m = Map::new();
    let Some(p) = p else {
        return m;
    };
    m.insert(format!("min_{unit}"), json!(p.min));
    for (name, v) in [
        ("p50", p.p50),
        ("p90", p.p90),
        ("p99", p.p99),
        ("p99_9", p.p99_9),
    ] {
        m.insert(format!("{name}_{unit}"), json!(v));
    }
    m.insert(format!("max_{unit}"), json!(p.max));
    m.insert(format!("mean_{unit}"), json!(p.mean));
    if buckets {
        let b: Vec<Value> = p
            .buckets
            .iter()
            .map(|b| {
                json!({
                    format!("le_{unit}"): b.le,
                    "count": b.count,
                })
            })
            .collect();
        m.insert("buckets".into(), Value::Array(b));
    }
    m
}

fn count_json(m: &mut Map<String, Value>, c: &RrCount) {
    m.insert("transactions".into(), json!(c.transactions));
    m.insert("transactions_per_second".into(), json!(c.per_second));
    if c.connections {
        m.insert("connections".into(), json!(c.transactions));
        m.insert("connections_per_second".into(), json!(c.per_second));
    }
    if let Some(lost) = c.lost {
        m.insert("lost".into(), json!(lost));
    }
}

/// The object under `intervals[].plumb`: `{"latency": {…}}`.
pub fn interval_json(i: &RrInterval) -> Value {
    let mut m = percentiles_json(i.round_trip.as_ref(), "us", false);
    count_json(&mut m, &i.count);
    if let Some(c) = i.crr_p50_us {
        m.insert("connect_p50_us".into(), json!(c.connect));
        m.insert("request_response_p50_us".into(), json!(c.request_response));
    }
    json!({ "latency": Value::Object(m) })
}

fn rr_end_json(r: &RrEnd) -> Value {
    let mut m = Map::new();
    m.insert("test".into(), json!(r.kind.name()));
    m.insert("request_bytes".into(), json!(r.request_bytes));
    m.insert("response_bytes".into(), json!(r.response_bytes));
    m.insert("burst".into(), json!(r.burst));
    m.insert("seconds".into(), json!(r.seconds));
    count_json(&mut m, &r.count);
    m.extend(percentiles_json(r.round_trip.as_ref(), "us", true));
    if let Some(c) = &r.crr {
        m.insert(
            "connect".into(),
            Value::Object(percentiles_json(c.connect.as_ref(), "us", true)),
        );
        m.insert(
            "request_response".into(),
            Value::Object(percentiles_json(c.request_response.as_ref(), "us", true)),
        );
    }
    Value::Object(m)
}

fn probe_side_json(s: &ProbeSide) -> Map<String, Value> {
    let mut m = percentiles_json(s.round_trip.as_ref(), "ms", true);
    m.insert("probes".into(), json!(s.probes));
    m.insert("rpm".into(), json!(s.rpm));
    m
}

fn probe_json(p: &ProbeLatency) -> Value {
    let load_bps = p.load_bps;
    json!({
        "idle": probe_side_json(&p.idle),
        "loaded": probe_side_json(&p.loaded),
        "increase_p50_ms": p.increase_p50_ms,
        "increase_p99_ms": p.increase_p99_ms,
        "probe_retransmits": p.retransmits,
        "probe_cost": p.cost.map(|c| json!({
            "seconds": c.secs,
            "wire_bits_per_second": c.wire_bps,
            "share_of_load": (load_bps > 0.0).then(|| c.wire_bps / load_bps),
            "thread_cpu_s": c.thread_cpu_s,
            "thread_cpu_share_of_one_core": c.thread_cpu_s.filter(|_| c.secs > 0.0).map(|t| t / c.secs),
        })),
        "probe_interval_ms": {
            "idle": p.idle_every_ms,
            "loaded": p.loaded_every_ms,
        },
        "rpm_method": RPM_METHOD,
    })
}

/// One row of request/response percentiles, µs (0 where none were taken).
fn rr_row(name: &str, p: Option<&Percentiles>) -> String {
    let g = |f: fn(&Percentiles) -> f64| p.map_or(0.0, f);
    format!(
        "{name:<18} min {:.1}  p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}  mean {:.1} us",
        g(|p| p.min),
        g(|p| p.p50),
        g(|p| p.p90),
        g(|p| p.p99),
        g(|p| p.p99_9),
        g(|p| p.max),
        g(|p| p.mean)
    )
}

/// Text lines for the end of a request/response test.
pub fn rr_end_lines(r: &RrEnd) -> Vec<String> {
    let what = if r.count.connections {
        "connections"
    } else {
        "transactions"
    };
    let mut lines = vec![format!(
        "{}: {} {what}, {:.1} {what}/s{}",
        r.kind.name().replace('_', " ").to_uppercase(),
        r.count.transactions,
        r.count.per_second,
        r.count
            .lost
            .map(|l| format!(", {l} lost"))
            .unwrap_or_default()
    )];
    lines.push(rr_row("round trip", r.round_trip.as_ref()));
    if let Some(c) = &r.crr {
        lines.push(rr_row("  connect", c.connect.as_ref()));
        lines.push(rr_row("  request/response", c.request_response.as_ref()));
    }
    lines
}

/// One row of probe percentiles, ms (NaN where none were taken).
fn probe_row(name: &str, s: &ProbeSide) -> String {
    let g = |f: fn(&Percentiles) -> f64| s.round_trip.as_ref().map_or(f64::NAN, f);
    format!(
        "{name:<7} {} probes: min {:.2}  p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2} ms, {:.0} RPM",
        s.probes,
        g(|p| p.min),
        g(|p| p.p50),
        g(|p| p.p90),
        g(|p| p.p99),
        g(|p| p.max),
        s.rpm.unwrap_or(f64::NAN)
    )
}

/// Text lines for `--latency`.
pub fn probe_lines(p: &ProbeLatency) -> Vec<String> {
    let mut lines = vec![
        "Latency (separate probe connection):".to_string(),
        probe_row("idle", &p.idle),
        probe_row("loaded", &p.loaded),
        format!(
            "the load added {:.2} ms at the median, {:.2} ms at p99{}",
            p.increase_p50_ms.unwrap_or(f64::NAN),
            p.increase_p99_ms.unwrap_or(f64::NAN),
            match p.retransmits {
                Some(n) if n > 0 => format!(
                    "; the probe connection resent {n} segment(s): a probe dropped at a full \
                     queue waits for its retransmission, not for the queue"
                ),
                _ => String::new(),
            }
        ),
    ];
    if let Some(c) = p.cost {
        lines.push(format!(
            "the probes cost {:.1} kbit/s on the wire both ways{}{}",
            c.wire_bps / 1e3,
            (p.load_bps > 0.0)
                .then(|| c.wire_bps / p.load_bps)
                .map(|s| format!(" ({:.4} % of the load)", s * 100.0))
                .unwrap_or_default(),
            c.thread_cpu_s
                .filter(|_| c.secs > 0.0)
                .map(|t| t / c.secs)
                .map(|s| format!(" and {:.3} % of a core", s * 100.0))
                .unwrap_or_default()
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pct(base: f64) -> Percentiles {
        Percentiles {
            min: base,
            p50: base + 1.0,
            p90: base + 2.0,
            p99: base + 3.0,
            p99_9: base + 4.0,
            max: base + 5.0,
            mean: base + 0.5,
            buckets: vec![Bucket {
                le: base + 5.0,
                count: 3,
            }],
        }
    }

    #[test]
    fn a_crr_end_keeps_its_keys_order_and_kinds() {
        let r = Latency::Rr(RrEnd {
            kind: RrKind::Crr,
            request_bytes: 1,
            response_bytes: 2,
            burst: 1,
            seconds: 2.0,
            count: RrCount {
                transactions: 4,
                per_second: 2.0,
                connections: true,
                lost: None,
            },
            round_trip: Some(pct(10.0)),
            crr: Some(CrrPhases {
                connect: Some(pct(1.0)),
                request_response: None,
            }),
        });
        let v = r.to_json();
        let keys: Vec<&str> = v
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "test",
                "request_bytes",
                "response_bytes",
                "burst",
                "seconds",
                "transactions",
                "transactions_per_second",
                "connections",
                "connections_per_second",
                "min_us",
                "p50_us",
                "p90_us",
                "p99_us",
                "p99_9_us",
                "max_us",
                "mean_us",
                "buckets",
                "connect",
                "request_response"
            ]
        );
        assert!(v["transactions"].is_u64() && v["transactions_per_second"].is_f64());
        assert_eq!(v["buckets"], json!([{"le_us": 15.0, "count": 3}]));
        assert_eq!(v["request_response"], json!({}));
        assert_eq!(
            r.lines(),
            [
                "CRR: 4 connections, 2.0 connections/s",
                "round trip         min 10.0  p50 11.0  p90 12.0  p99 13.0  p99.9 14.0  max 15.0  mean 10.5 us",
                "  connect          min 1.0  p50 2.0  p90 3.0  p99 4.0  p99.9 5.0  max 6.0  mean 1.5 us",
                "  request/response min 0.0  p50 0.0  p90 0.0  p99 0.0  p99.9 0.0  max 0.0  mean 0.0 us",
            ]
        );
    }

    #[test]
    fn an_interval_has_no_buckets_and_a_udp_one_counts_losses() {
        let v = interval_json(&RrInterval {
            round_trip: Some(pct(1.0)),
            count: RrCount {
                transactions: 3,
                per_second: 3.0,
                connections: false,
                lost: Some(1),
            },
            crr_p50_us: None,
        });
        let l = &v["latency"];
        assert!(l.get("buckets").is_none());
        assert_eq!(l["lost"], json!(1));
        assert_eq!(l["min_us"], json!(1.0));
    }

    #[test]
    fn probes_without_answers_print_nan_and_null() {
        let empty = ProbeSide {
            probes: 0,
            rpm: None,
            round_trip: None,
        };
        let p = Latency::Probe(ProbeLatency {
            idle: empty.clone(),
            loaded: empty,
            increase_p50_ms: None,
            increase_p99_ms: None,
            retransmits: Some(2),
            cost: Some(ProbeCost {
                secs: 2.0,
                wire_bps: 20_000.0,
                thread_cpu_s: Some(0.001),
            }),
            load_bps: 1e9,
            idle_every_ms: 10.0,
            loaded_every_ms: 100.0,
        });
        let v = p.to_json();
        assert_eq!(v["idle"], json!({"probes": 0, "rpm": null}));
        assert_eq!(v["increase_p50_ms"], Value::Null);
        assert_eq!(v["probe_cost"]["share_of_load"], json!(2e-5));
        assert_eq!(
            v["probe_cost"]["thread_cpu_share_of_one_core"],
            json!(0.0005)
        );
        let lines = p.lines();
        assert_eq!(
            lines[1],
            "idle    0 probes: min NaN  p50 NaN  p90 NaN  p99 NaN  max NaN ms, NaN RPM"
        );
        assert!(lines[3].starts_with("the load added NaN ms at the median, NaN ms at p99; the probe connection resent 2 segment(s)"));
        assert_eq!(
            lines[4],
            "the probes cost 20.0 kbit/s on the wire both ways (0.0020 % of the load) and 0.050 % of a core"
        );
    }
}
