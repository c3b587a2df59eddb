//! A test's setup as the configuration panel shows it ([`Config`]): who
//! wrote the document and both ends ([`Hosts`]), the test's parameters,
//! CPU, both hosts' sysctls, and the emulated link of a `plumb lab` run
//! ([`Lab`]).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{num, text};

/// What the configuration panel shows of a test (`start`, parts of `end`,
/// `lab`). Values the document wrote as scalars are kept as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Both ends, as the page names them.
    pub hosts: Hosts,
    /// `start.version`.
    pub written_by: Option<String>,
    /// `start.timestamp.time`.
    pub time: Option<String>,
    /// The server connected to: host, and the port as the document wrote it.
    pub server: Option<(String, String)>,
    /// `TCP`, `UDP`.
    pub protocol: Option<String>,
    /// Parallel streams.
    pub streams: Option<String>,
    /// The test's duration, s.
    pub duration: Option<String>,
    /// The block size, B.
    pub block_size: Option<String>,
    /// Data went both ways (`--bidir`).
    pub bidir: bool,
    /// Data went from the server to the client (`-R`).
    pub reverse: bool,
    /// The sender's congestion control.
    pub congestion_sender: Option<String>,
    /// The receiver's.
    pub congestion_receiver: Option<String>,
    /// The send buffer the kernel granted, B.
    pub sndbuf: Option<String>,
    /// The receive buffer the kernel granted, B.
    pub rcvbuf: Option<String>,
    /// CPU use of the end that wrote the document, %.
    pub cpu_near: Option<f64>,
    /// The other end's, %.
    pub cpu_far: Option<f64>,
    /// The writer's sysctls, when recorded: each key's value as written
    /// (`None` for one that is not a scalar).
    pub sysctls_near: Option<Sysctls>,
    /// The far end's.
    pub sysctls_far: Option<Sysctls>,
    /// The emulated link of a `plumb lab` run.
    pub lab: Option<Lab>,
}

/// One host's sysctls by key, sorted.
pub type Sysctls = BTreeMap<String, Option<String>>;

/// The emulated link of a `plumb lab` run (`lab`): as configured, as
/// measured, and what the emulator did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lab {
    /// The link rate configured, bit/s.
    pub rate_bps: Option<f64>,
    /// The round trip configured, ms.
    pub rtt_ms: Option<f64>,
    /// The loss configured, 0–1.
    pub loss: Option<f64>,
    /// The queue, as written.
    pub queue: Option<String>,
    /// The loss model's seed, as written.
    pub seed: Option<String>,
    /// The round trip measured (min), ms.
    pub measured_rtt_min_ms: Option<f64>,
    /// The link rate measured, bit/s.
    pub measured_rate_bps: Option<f64>,
    /// Segments delivered, as written.
    pub segments_delivered: Option<String>,
    /// Dropped by the queue, as written.
    pub dropped_queue: Option<String>,
    /// Dropped by the loss model, as written.
    pub dropped_loss: Option<String>,
    /// How late the emulator released segments, p50 and p99, µs.
    pub release_error_us: Option<(f64, f64)>,
}

impl Config {
    /// Reads the setup of the test `doc` records; `None` when it records
    /// none (no `start` object).
    pub fn of(doc: &Value) -> Option<Config> {
        let st = &doc["start"];
        if !st.is_object() {
            return None;
        }
        let t = &st["test_start"];
        let end = &doc["end"];
        let flag = |k: &str| t[k].as_i64().unwrap_or(0) != 0;
        let cpu = &end["cpu_utilization_percent"];
        let sysctls = |side: &str| {
            end["plumb"][side]["sysctl"]
                .as_object()
                .map(|m: &Map<String, Value>| m.iter().map(|(k, v)| (k.clone(), text(v))).collect())
        };
        Some(Config {
            hosts: Hosts::of(doc),
            written_by: text(&st["version"]),
            time: text(&st["timestamp"]["time"]),
            server: st["connecting_to"]["host"]
                .as_str()
                .map(|h| (h.to_string(), st["connecting_to"]["port"].to_string())),
            protocol: text(&t["protocol"]),
            streams: text(&t["num_streams"]),
            duration: text(&t["duration"]),
            block_size: text(&t["blksize"]),
            bidir: flag("bidir"),
            reverse: flag("reverse"),
            congestion_sender: text(&end["sender_tcp_congestion"]),
            congestion_receiver: text(&end["receiver_tcp_congestion"]),
            sndbuf: text(&st["sndbuf_actual"]),
            rcvbuf: text(&st["rcvbuf_actual"]),
            cpu_near: num(&cpu["host_total"]),
            cpu_far: num(&cpu["remote_total"]),
            sysctls_near: sysctls("local"),
            sysctls_far: sysctls("remote"),
            lab: Lab::of(&doc["lab"]),
        })
    }
}

impl Lab {
    /// Reads `lab`, if it is an object.
    pub fn of(lab: &Value) -> Option<Lab> {
        if !lab.is_object() {
            return None;
        }
        let (c, m, e) = (&lab["configured"], &lab["measured"], &lab["emulator"]);
        Some(Lab {
            rate_bps: num(&c["rate_bps"]),
            rtt_ms: num(&c["rtt_ms"]),
            loss: num(&c["loss"]),
            queue: text(&c["queue"]),
            seed: text(&c["seed"]),
            measured_rtt_min_ms: num(&m["rtt_min_ms"]),
            measured_rate_bps: num(&m["rate_bps"]),
            segments_delivered: text(&e["segments_delivered"]),
            dropped_queue: text(&e["segments_dropped_queue"]),
            dropped_loss: text(&e["segments_dropped_loss"]),
            release_error_us: num(&e["release_error_p50_us"]).zip(num(&e["release_error_p99_us"])),
        })
    }
}

/// The two ends of a test as the page names them, and what the document
/// says about each one's system.
#[derive(Debug, Clone, PartialEq)]
pub struct Hosts {
    /// The end that wrote the document: "this host (client)", or in the lab
    /// "client (this machine, near namespace of the lab)".
    pub near: String,
    /// The other end, likewise.
    pub far: String,
    /// Short column names: "client", "server", "this host".
    pub near_short: String,
    /// The far end's short name.
    pub far_short: String,
    /// The writer's system line, when the document has one.
    pub near_system: Option<String>,
    /// The far end's system line, or a sentence saying why it is not known.
    pub far_system: String,
    /// The far end's system is known (it sent it).
    pub far_known: bool,
    why_not: &'static str,
}

impl Hosts {
    /// Reads who wrote `doc` and what it holds about both ends.
    ///
    /// iperf3 writes only its own `start.system_info`; a plumb peer sends its
    /// system and sysctls in its results, which the writer keeps under
    /// `end.plumb.remote` (docs/protocol.md §6.2). In `plumb lab` both ends
    /// run on this machine, in two network namespaces (whose `net.*` sysctls
    /// may differ).
    pub fn of(doc: &Value) -> Hosts {
        let st = &doc["start"];
        let plumb = &doc["end"]["plumb"];
        let (near_role, far_role) = if st["accepted_connection"].is_object() {
            ("server", "client")
        } else if st["connecting_to"].is_object() || doc["lab"].is_object() {
            ("client", "server")
        } else {
            ("", "")
        };
        let (near, far, near_short, far_short) = if doc["lab"].is_object() {
            (
                "client (this machine, near namespace of the lab)".to_string(),
                "server (this machine, far namespace of the lab)".to_string(),
                "client (near)".to_string(),
                "server (far)".to_string(),
            )
        } else if near_role.is_empty() {
            (
                "this host".to_string(),
                "the other host".to_string(),
                "this host".to_string(),
                "the other host".to_string(),
            )
        } else {
            (
                format!("this host ({near_role})"),
                format!("the far host ({far_role})"),
                format!("this host ({near_role})"),
                format!("far host ({far_role})"),
            )
        };
        let writer_is_plumb = st["version"]
            .as_str()
            .is_some_and(|v| v.starts_with("plumb"));
        let remote = plumb["remote"].as_object();
        let far_given = remote
            .and_then(|r| r.get("system"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let why_not = if !writer_is_plumb {
            "iperf3 does not exchange the hosts' systems or sysctls; its document holds only its own system"
        } else if !doc["end"].is_object() {
            "the test ended before the ends exchanged results"
        } else if remote.is_none() {
            "the far end is not plumb (a stock iperf3, say) and does not send its system or sysctls"
        } else {
            "the far plumb did not send this (an older version, or its /proc hides it)"
        };
        Hosts {
            near,
            far,
            near_short,
            far_short,
            near_system: text(&st["system_info"]).or_else(|| text(&plumb["local"]["system"])),
            far_system: far_given
                .map_or_else(|| format!("not recorded: {why_not}"), str::to_string),
            far_known: far_given.is_some(),
            why_not,
        }
    }

    /// A note for the sysctls table: `None` when the far end's are there.
    pub fn sysctls_missing(&self, near: bool, far: bool) -> Option<String> {
        match (near, far) {
            (_, true) => None,
            (true, false) => Some(format!(
                "The {}'s sysctls were not recorded: {}.",
                self.far_short, self.why_not
            )),
            (false, false) => Some(format!(
                "Neither host's sysctls were recorded: {}.",
                self.why_not
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_plumb_client_test_with_both_hosts_sysctls_and_a_lab() {
        let doc = json!({
            "start": {"version": "plumb 0.1.0", "connecting_to": {"host": "h", "port": 5201},
                      "test_start": {"protocol": "TCP", "num_streams": 2, "reverse": 1},
                      "sndbuf_actual": 16384, "system_info": "Linux near"},
            "end": {"cpu_utilization_percent": {"host_total": 12.5},
                    "plumb": {"local": {"sysctl": {"net.b": 1, "net.a": "4096 131072"}},
                              "remote": {"system": "Linux far", "sysctl": {"net.a": {}}}}},
            "lab": {"configured": {"rate_bps": 1e9, "seed": 7},
                    "emulator": {"release_error_p50_us": 3, "release_error_p99_us": 9}},
        });
        let c = Config::of(&doc).expect("a test");
        assert_eq!(c.written_by.as_deref(), Some("plumb 0.1.0"));
        assert_eq!(c.server, Some(("h".into(), "5201".into())));
        assert_eq!(c.streams.as_deref(), Some("2"));
        assert!(c.reverse && !c.bidir);
        assert_eq!((c.cpu_near, c.cpu_far), (Some(12.5), None));
        assert_eq!(c.sndbuf.as_deref(), Some("16384"));
        let near = c.sysctls_near.expect("near");
        assert_eq!(near.keys().collect::<Vec<_>>(), ["net.a", "net.b"]);
        assert_eq!(near["net.b"].as_deref(), Some("1"));
        // A value that is no scalar is there, without a value.
        assert_eq!(c.sysctls_far.expect("far")["net.a"], None);
        let lab = c.lab.expect("lab");
        assert_eq!((lab.rate_bps, lab.seed.as_deref()), (Some(1e9), Some("7")));
        assert_eq!(lab.release_error_us, Some((3.0, 9.0)));
        assert_eq!(c.hosts.far_system, "Linux far");
        assert!(c.hosts.far_known);
    }

    #[test]
    fn missing_keys_and_wrong_types() {
        assert_eq!(Config::of(&json!({"diagnosis": {}})), None);
        assert_eq!(Config::of(&json!({"start": "yes"})), None);
        let c = Config::of(&json!({
            "start": {"version": "iperf 3.12", "connecting_to": {"host": 1},
                      "test_start": {"bidir": "1", "duration": [10]}},
            "end": {"cpu_utilization_percent": {"host_total": "high"}, "plumb": {"local": {"sysctl": [1]}}},
            "lab": [],
        }))
        .expect("a test");
        assert_eq!((c.server, c.duration, c.cpu_near), (None, None, None));
        assert!(!c.bidir);
        assert_eq!((c.sysctls_near, c.sysctls_far, c.lab), (None, None, None));
        assert!(!c.hosts.far_known);
        assert!(c
            .hosts
            .far_system
            .starts_with("not recorded: iperf3 does not"));
    }
}
