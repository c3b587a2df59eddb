//! The text of plumb's latency figures: the lines a request/response test
//! (`--rr`, `--crr`) or `--latency`'s probes print at the end of a test, and
//! the line under each request/response interval.
//!
//! The figures are the document's own latency objects
//! ([`plumb_record::Latency`] under `end.plumb.latency`,
//! [`plumb_record::IntervalLatency`] under `intervals[].plumb.latency`),
//! which the measuring engine fills and the JSON printer serializes; this
//! module only formats them. A figure the object lacks prints as 0 (request
//! and response percentiles) or NaN (probes), as nothing was measured.

use plumb_record::{IntervalLatency, Latency, PercentilesUs, Probes, Real};

/// A figure's value, `none` when absent.
fn get(v: Option<Real>, none: f64) -> f64 {
    v.map_or(none, Real::get)
}

/// A nullable figure's value, NaN when absent or `null`.
fn get_nullable(v: Option<Option<Real>>) -> f64 {
    get(v.flatten(), f64::NAN)
}

/// The text lines printed at the end of the test: a request/response
/// test's (one that names its `test`), or the probes'.
pub fn lines(l: &Latency) -> Vec<String> {
    match &l.test {
        Some(test) => rr_end_lines(test, l),
        None => probe_lines(l),
    }
}

/// One row of request/response percentiles, µs (0 where none were taken).
fn rr_row(name: &str, p: &PercentilesUs) -> String {
    let g = |v: Option<Real>| get(v, 0.0);
    format!(
        "{name:<18} min {:.1}  p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}  mean {:.1} us",
        g(p.min_us),
        g(p.p50_us),
        g(p.p90_us),
        g(p.p99_us),
        g(p.p99_9_us),
        g(p.max_us),
        g(p.mean_us)
    )
}

/// Text lines for the end of a request/response test `test` (`"tcp_rr"`).
fn rr_end_lines(test: &str, l: &Latency) -> Vec<String> {
    let c = &l.rate;
    let what = if c.connections.is_some() {
        "connections"
    } else {
        "transactions"
    };
    let mut lines = vec![format!(
        "{}: {} {what}, {:.1} {what}/s{}",
        test.replace('_', " ").to_uppercase(),
        c.transactions.unwrap_or(0),
        get(c.transactions_per_second, 0.0),
        c.lost.map(|l| format!(", {l} lost")).unwrap_or_default()
    )];
    lines.push(rr_row("round trip", &l.round_trip));
    if l.connect.is_some() || l.request_response.is_some() {
        let none = PercentilesUs::default();
        lines.push(rr_row("  connect", l.connect.as_ref().unwrap_or(&none)));
        lines.push(rr_row(
            "  request/response",
            l.request_response.as_ref().unwrap_or(&none),
        ));
    }
    lines
}

/// One row of probe percentiles, ms (NaN where none were taken).
fn probe_row(name: &str, s: Option<&Probes>) -> String {
    let none = Probes::default();
    let s = s.unwrap_or(&none);
    let g = |v: Option<Real>| get(v, f64::NAN);
    format!(
        "{name:<7} {} probes: min {:.2}  p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2} ms, {:.0} RPM",
        s.probes.unwrap_or(0),
        g(s.min_ms),
        g(s.p50_ms),
        g(s.p90_ms),
        g(s.p99_ms),
        g(s.max_ms),
        get_nullable(s.rpm)
    )
}

/// Text lines for `--latency`.
fn probe_lines(p: &Latency) -> Vec<String> {
    let mut lines = vec![
        "Latency (separate probe connection):".to_string(),
        probe_row("idle", p.idle.as_ref()),
        probe_row("loaded", p.loaded.as_ref()),
        format!(
            "the load added {:.2} ms at the median, {:.2} ms at p99{}",
            get_nullable(p.increase_p50_ms),
            get_nullable(p.increase_p99_ms),
            match p.probe_retransmits.flatten() {
                Some(n) if n > 0 => format!(
                    "; the probe connection resent {n} segment(s): a probe dropped at a full \
                     queue waits for its retransmission, not for the queue"
                ),
                _ => String::new(),
            }
        ),
    ];
    if let Some(c) = p.probe_cost.as_ref().and_then(Option::as_ref) {
        lines.push(format!(
            "the probes cost {:.1} kbit/s on the wire both ways{}{}",
            c.wire_bits_per_second.get() / 1e3,
            c.share_of_load
                .flatten()
                .map(|s| format!(" ({:.4} % of the load)", s.get() * 100.0))
                .unwrap_or_default(),
            c.thread_cpu_share_of_one_core
                .flatten()
                .map(|s| format!(" and {:.3} % of a core", s.get() * 100.0))
                .unwrap_or_default()
        ));
    }
    lines
}

/// The request/response line under an interval: transactions/s and
/// percentiles, µs.
pub fn interval_line(l: &IntervalLatency) -> String {
    let p = &l.round_trip;
    let g = |v: Option<Real>| get(v, 0.0);
    format!(
        "      {:.1} transactions/s  RTT min {:.1}  p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1} us",
        g(l.rate.transactions_per_second),
        g(p.min_us),
        g(p.p50_us),
        g(p.p90_us),
        g(p.p99_us),
        g(p.max_us)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_record::{IntervalPlumb, ProbeCost, ProbeInterval, Summary, Transactions};
    use serde_json::{json, Value};

    fn pct(base: f64) -> Summary {
        Summary {
            min: base,
            p50: base + 1.0,
            p90: base + 2.0,
            p99: base + 3.0,
            p99_9: base + 4.0,
            max: base + 5.0,
            mean: base + 0.5,
            buckets: vec![(base + 5.0, 3)],
        }
    }

    fn to_json<T: serde::Serialize>(v: &T) -> Value {
        serde_json::to_value(v).expect("serializes")
    }

    #[test]
    fn a_crr_end_keeps_its_keys_order_and_kinds() {
        let r = Latency {
            test: Some("crr".into()),
            request_bytes: Some(1),
            response_bytes: Some(2),
            burst: Some(1),
            seconds: Some(Real::float(2.0)),
            rate: Transactions::counted(4, 2.0, true, None),
            round_trip: PercentilesUs::from_summary(Some(&pct(10.0)), true),
            connect: Some(PercentilesUs::from_summary(Some(&pct(1.0)), true)),
            request_response: Some(PercentilesUs::from_summary(None, true)),
            ..Latency::default()
        };
        let v = to_json(&r);
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
            lines(&r),
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
        let i = IntervalLatency {
            round_trip: PercentilesUs::from_summary(Some(&pct(1.0)), false),
            rate: Transactions::counted(3, 3.0, false, Some(1)),
            ..IntervalLatency::default()
        };
        assert_eq!(
            interval_line(&i),
            "      3.0 transactions/s  RTT min 1.0  p50 2.0  p90 3.0  p99 4.0  max 6.0 us"
        );
        let v = to_json(&IntervalPlumb {
            latency: Some(i),
            ..IntervalPlumb::default()
        });
        let l = &v["latency"];
        assert!(l.get("buckets").is_none());
        assert_eq!(l["lost"], json!(1));
        assert_eq!(l["min_us"], json!(1.0));
    }

    #[test]
    fn probes_without_answers_print_nan_and_null() {
        let empty = Probes::from_summary(None, 0, None);
        let p = Latency {
            idle: Some(empty.clone()),
            loaded: Some(empty),
            increase_p50_ms: Some(None),
            increase_p99_ms: Some(None),
            probe_retransmits: Some(Some(2)),
            probe_cost: Some(Some(ProbeCost::new(2.0, 20_000.0, Some(0.001), 1e9))),
            probe_interval_ms: Some(ProbeInterval::new(10.0, 100.0)),
            ..Latency::default()
        };
        let v = to_json(&p);
        assert_eq!(v["idle"], json!({"probes": 0, "rpm": null}));
        assert_eq!(v["increase_p50_ms"], Value::Null);
        assert_eq!(v["probe_cost"]["share_of_load"], json!(2e-5));
        assert_eq!(
            v["probe_cost"]["thread_cpu_share_of_one_core"],
            json!(0.0005)
        );
        let lines = lines(&p);
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
