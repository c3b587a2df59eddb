//! plumb's `latency` objects: `end.plumb.latency` of a request/response
//! test (`--rr`, `--crr`) or of a throughput test with `--latency` probes,
//! and `intervals[].plumb.latency` of a request/response test.
//!
//! Percentiles are named with their unit (`p50_us`, `p50_ms`), and an empty
//! histogram writes none of them, so each is optional.
//!
//! The measuring engine fills these objects from its histograms with the
//! constructors at the end of this module ([`Summary`] and the
//! `from_summary`/`counted`/`new` functions), which hold the rules of what
//! a measured figure writes: floats for times and rates, integers for
//! counts, `null` for a figure that could not be had.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{nullable, Real};

/// `end.plumb.latency`: a request/response test's totals, or the idle and
/// loaded probes of `--latency`; the keys of the one at hand are present.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// `"tcp_rr"`, `"udp_rr"` or `"crr"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
    /// Request size, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_bytes: Option<u64>,
    /// Response size, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_bytes: Option<u64>,
    /// Requests in flight per stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u64>,
    /// Seconds the test ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<Real>,
    /// Transactions, their rate, and (CRR, UDP) connections and losses.
    #[serde(flatten)]
    pub rate: Transactions,
    /// Round-trip percentiles, µs.
    #[serde(flatten)]
    pub round_trip: PercentilesUs,
    /// CRR: connection set-up percentiles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<PercentilesUs>,
    /// CRR: request-to-response percentiles on the new connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_response: Option<PercentilesUs>,
    /// `--latency`: round trips with no load, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<Probes>,
    /// `--latency`: round trips under the test's load, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded: Option<Probes>,
    /// `--latency`: loaded p50 minus idle p50, ms (`null` without both).
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub increase_p50_ms: Option<Option<Real>>,
    /// `--latency`: loaded p99 minus idle p50, ms.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub increase_p99_ms: Option<Option<Real>>,
    /// `--latency`: retransmits on the probe connection.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub probe_retransmits: Option<Option<u64>>,
    /// `--latency`: what the probes cost.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub probe_cost: Option<Option<ProbeCost>>,
    /// `--latency`: probe spacing, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_interval_ms: Option<ProbeInterval>,
    /// `--latency`: how `rpm` is computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm_method: Option<String>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `intervals[].plumb.latency`: one interval of a request/response test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalLatency {
    /// Round-trip percentiles, µs (without buckets).
    #[serde(flatten)]
    pub round_trip: PercentilesUs,
    /// Transactions and their rate over the interval.
    #[serde(flatten)]
    pub rate: Transactions,
    /// CRR: median connection set-up, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_p50_us: Option<Real>,
    /// CRR: median request-to-response, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_response_p50_us: Option<Real>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Transaction counts, part of a latency object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Transactions {
    /// Transactions completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions: Option<u64>,
    /// Their rate, per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions_per_second: Option<Real>,
    /// CRR: connections (one per transaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u64>,
    /// CRR: their rate, per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections_per_second: Option<Real>,
    /// UDP: requests or responses lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
}

/// Percentiles of a histogram in µs, part of a latency object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PercentilesUs {
    /// Smallest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_us: Option<Real>,
    /// Median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_us: Option<Real>,
    /// 90th percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90_us: Option<Real>,
    /// 99th percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_us: Option<Real>,
    /// 99.9th percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_9_us: Option<Real>,
    /// Largest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_us: Option<Real>,
    /// Mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_us: Option<Real>,
    /// Non-empty buckets, a quarter of an octave wide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buckets: Option<Vec<BucketUs>>,
}

/// One histogram bucket in µs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BucketUs {
    /// Upper bound.
    pub le_us: Real,
    /// Samples in the bucket.
    pub count: u64,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `--latency`'s idle or loaded probes: percentiles in ms and the
/// responsiveness figure.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Probes {
    /// Smallest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_ms: Option<Real>,
    /// Median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ms: Option<Real>,
    /// 90th percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90_ms: Option<Real>,
    /// 99th percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ms: Option<Real>,
    /// 99.9th percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_9_ms: Option<Real>,
    /// Largest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ms: Option<Real>,
    /// Mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_ms: Option<Real>,
    /// Non-empty buckets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buckets: Option<Vec<BucketMs>>,
    /// Probes taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<u64>,
    /// Round trips per minute (`null` without probes).
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub rpm: Option<Option<Real>>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One histogram bucket in ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BucketMs {
    /// Upper bound.
    pub le_ms: Real,
    /// Samples in the bucket.
    pub count: u64,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What `--latency`'s probes cost the test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeCost {
    /// Seconds the probes ran.
    pub seconds: Real,
    /// Their rate on the wire.
    pub wire_bits_per_second: Real,
    /// That rate as a share of the load's (`null` without a load).
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub share_of_load: Option<Option<Real>>,
    /// CPU time of the probing thread, s (`null` where unread).
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub thread_cpu_s: Option<Option<Real>>,
    /// That time as a share of one core over `seconds`.
    #[serde(
        default,
        deserialize_with = "nullable::de",
        skip_serializing_if = "Option::is_none"
    )]
    pub thread_cpu_share_of_one_core: Option<Option<Real>>,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `--latency`'s probe spacing, ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeInterval {
    /// Between idle probes.
    pub idle: Real,
    /// Between loaded probes.
    pub loaded: Real,
    /// Keys this version does not know, carried as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A latency distribution's percentiles in one unit, the figures a
/// [`PercentilesUs`] or a [`Probes`] is made from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Smallest.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p99_9: f64,
    /// Largest.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// The non-empty buckets, ascending: (upper bound, samples).
    pub buckets: Vec<(f64, u64)>,
}

impl PercentilesUs {
    /// The keys of `s` (µs), with its buckets when `buckets`; none at all
    /// for an empty distribution.
    pub fn from_summary(s: Option<&Summary>, buckets: bool) -> Self {
        let Some(s) = s else {
            return PercentilesUs::default();
        };
        let f = |v: f64| Some(Real::float(v));
        PercentilesUs {
            min_us: f(s.min),
            p50_us: f(s.p50),
            p90_us: f(s.p90),
            p99_us: f(s.p99),
            p99_9_us: f(s.p99_9),
            max_us: f(s.max),
            mean_us: f(s.mean),
            buckets: buckets.then(|| {
                s.buckets
                    .iter()
                    .map(|&(le, count)| BucketUs {
                        le_us: Real::float(le),
                        count,
                        extra: Map::new(),
                    })
                    .collect()
            }),
        }
    }
}

impl Probes {
    /// One side of the probes: `probes` round trips summed up in `s` (ms,
    /// `None` when none was answered), and their round trips per minute.
    pub fn from_summary(s: Option<&Summary>, probes: u64, rpm: Option<f64>) -> Self {
        let mut p = Probes {
            probes: Some(probes),
            rpm: Some(rpm.map(Real::float)),
            ..Probes::default()
        };
        if let Some(s) = s {
            let f = |v: f64| Some(Real::float(v));
            p.min_ms = f(s.min);
            p.p50_ms = f(s.p50);
            p.p90_ms = f(s.p90);
            p.p99_ms = f(s.p99);
            p.p99_9_ms = f(s.p99_9);
            p.max_ms = f(s.max);
            p.mean_ms = f(s.mean);
            p.buckets = Some(
                s.buckets
                    .iter()
                    .map(|&(le, count)| BucketMs {
                        le_ms: Real::float(le),
                        count,
                        extra: Map::new(),
                    })
                    .collect(),
            );
        }
        p
    }
}

impl Transactions {
    /// `transactions` at `per_second`; a CRR test's (`connections`) are
    /// also given as its connections, the name a CRR user looks for, and a
    /// UDP test's count the `lost` ones.
    pub fn counted(
        transactions: u64,
        per_second: f64,
        connections: bool,
        lost: Option<u64>,
    ) -> Self {
        Transactions {
            transactions: Some(transactions),
            transactions_per_second: Some(Real::float(per_second)),
            connections: connections.then_some(transactions),
            connections_per_second: connections.then_some(Real::float(per_second)),
            lost,
        }
    }
}

impl ProbeCost {
    /// Probes that ran `seconds` at `wire_bps` on the wire, their thread
    /// using `thread_cpu_s` of CPU, beside a load of `load_bps`: their
    /// shares of the load and of one core, where those exist.
    pub fn new(seconds: f64, wire_bps: f64, thread_cpu_s: Option<f64>, load_bps: f64) -> Self {
        ProbeCost {
            seconds: Real::float(seconds),
            wire_bits_per_second: Real::float(wire_bps),
            share_of_load: Some((load_bps > 0.0).then(|| Real::float(wire_bps / load_bps))),
            thread_cpu_s: Some(thread_cpu_s.map(Real::float)),
            thread_cpu_share_of_one_core: Some(
                thread_cpu_s
                    .filter(|_| seconds > 0.0)
                    .map(|t| Real::float(t / seconds)),
            ),
            extra: Map::new(),
        }
    }
}

impl ProbeInterval {
    /// Probes every `idle` ms before the load and every `loaded` ms under it.
    pub fn new(idle: f64, loaded: f64) -> Self {
        ProbeInterval {
            idle: Real::float(idle),
            loaded: Real::float(loaded),
            extra: Map::new(),
        }
    }
}
