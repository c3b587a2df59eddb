//! A test's setup as the configuration panel shows it ([`Config`]): who
//! wrote the document and both ends ([`Hosts`]), the test's parameters,
//! CPU, both hosts' sysctls, and the emulated link of a `plumb lab` run
//! ([`Lab`]).

use std::collections::BTreeMap;

use plumb_record::{Document as Record, PlumbSide};

use super::real::num;

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
    pub fn of(doc: &Record) -> Option<Config> {
        let st = doc.start.as_ref()?;
        let t = st.test_start.as_ref();
        let end = doc.end.as_ref();
        let cpu = end.and_then(|e| e.cpu_utilization_percent.as_ref());
        let sysctls = |side: fn(&plumb_record::EndPlumb) -> Option<&PlumbSide>| {
            let side = end?.plumb.as_ref().and_then(side)?;
            side.sysctl.as_ref().map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), Some(v.clone())))
                    .collect()
            })
        };
        Some(Config {
            hosts: Hosts::of(doc),
            written_by: st.version.clone(),
            time: st.timestamp.as_ref().map(|t| t.time.clone()),
            server: st
                .connecting_to
                .as_ref()
                .map(|c| (c.host.clone(), c.port.to_string())),
            protocol: t.map(|t| t.protocol.clone()),
            streams: t.map(|t| t.num_streams.to_string()),
            duration: t.map(|t| t.duration.to_string()),
            block_size: t.map(|t| t.blksize.to_string()),
            bidir: t.is_some_and(|t| t.bidir.unwrap_or(0) != 0),
            reverse: t.is_some_and(|t| t.reverse != 0),
            congestion_sender: end.and_then(|e| e.sender_tcp_congestion.clone()),
            congestion_receiver: end.and_then(|e| e.receiver_tcp_congestion.clone()),
            sndbuf: st.sndbuf_actual.map(|b| b.to_string()),
            rcvbuf: st.rcvbuf_actual.map(|b| b.to_string()),
            cpu_near: cpu.and_then(|c| num(c.host_total)),
            cpu_far: cpu.and_then(|c| num(c.remote_total)),
            sysctls_near: sysctls(|p| p.local.as_ref()?.as_ref()),
            sysctls_far: sysctls(|p| p.remote.as_ref()?.as_ref()),
            lab: doc.lab.as_ref().map(Lab::of),
        })
    }
}

impl Lab {
    /// Reads `lab`.
    pub fn of(lab: &plumb_record::Lab) -> Lab {
        let (c, e) = (&lab.configured, &lab.emulator);
        let m = lab.measured.as_ref().and_then(Option::as_ref);
        let real = |r: &Option<Option<plumb_record::Real>>| r.flatten().and_then(num);
        Lab {
            rate_bps: num(c.rate_bps),
            rtt_ms: num(c.rtt_ms),
            loss: real(&c.loss),
            queue: c.queue.clone().flatten(),
            seed: c.seed.flatten().map(|s| s.to_string()),
            measured_rtt_min_ms: m.and_then(|m| num(m.rtt_min_ms)),
            measured_rate_bps: m.and_then(|m| real(&m.rate_bps)),
            segments_delivered: Some(e.segments_delivered.to_string()),
            dropped_queue: Some(e.segments_dropped_queue.to_string()),
            dropped_loss: Some(e.segments_dropped_loss.to_string()),
            release_error_us: real(&e.release_error_p50_us).zip(real(&e.release_error_p99_us)),
        }
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
    pub fn of(doc: &Record) -> Hosts {
        let st = doc.start.as_ref();
        let plumb = doc.end.as_ref().and_then(|e| e.plumb.as_ref());
        let lab = doc.lab.is_some();
        let (near_role, far_role) = if st.is_some_and(|s| s.accepted_connection.is_some()) {
            ("server", "client")
        } else if st.is_some_and(|s| s.connecting_to.is_some()) || lab {
            ("client", "server")
        } else {
            ("", "")
        };
        let (near, far, near_short, far_short) = if lab {
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
        let writer_is_plumb = st
            .and_then(|s| s.version.as_deref())
            .is_some_and(|v| v.starts_with("plumb"));
        let remote = plumb.and_then(|p| p.remote.as_ref()?.as_ref());
        let far_given = remote
            .and_then(|r| r.system.as_deref())
            .filter(|s| !s.is_empty());
        let why_not = if !writer_is_plumb {
            "iperf3 does not exchange the hosts' systems or sysctls; its document holds only its own system"
        } else if doc.end.is_none() {
            "the test ended before the ends exchanged results"
        } else if remote.is_none() {
            "the far end is not plumb (a stock iperf3, say) and does not send its system or sysctls"
        } else {
            "the far plumb did not send this (an older version, or its /proc hides it)"
        };
        let local_system = plumb
            .and_then(|p| p.local.as_ref()?.as_ref())
            .and_then(|l| l.system.clone());
        Hosts {
            near,
            far,
            near_short,
            far_short,
            near_system: st.and_then(|s| s.system_info.clone()).or(local_system),
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

    fn config(text: &str) -> Option<Config> {
        Config::of(&Record::parse(text).expect("a document"))
    }

    #[test]
    fn a_plumb_client_test_with_both_hosts_sysctls_and_a_lab() {
        let c = config(
            r#"{
            "start": {"version": "plumb 0.1.0", "connecting_to": {"host": "h", "port": 5201},
                      "test_start": {"protocol": "TCP", "num_streams": 2, "blksize": 131072,
                                     "omit": 0, "duration": 10, "bytes": 0, "blocks": 0,
                                     "reverse": 1, "tos": 0},
                      "sndbuf_actual": 16384, "system_info": "Linux near"},
            "end": {"cpu_utilization_percent": {"host_total": 12.5, "host_user": 1,
                        "host_system": 1, "remote_total": null, "remote_user": 0,
                        "remote_system": 0},
                    "plumb": {"local": {"sysctl": {"net.b": "1", "net.a": "4096 131072"}},
                              "remote": {"system": "Linux far", "sysctl": {"net.a": "1"}}}},
            "lab": {"configured": {"rate_bps": 1e9, "rtt_ms": 15, "seed": 7},
                    "emulator": {"segments_delivered": 10, "segments_dropped_queue": 0,
                                 "segments_dropped_loss": 0, "max_queue_bytes": 0,
                                 "release_error_p50_us": 3, "release_error_p99_us": 9}}
        }"#,
        )
        .expect("a test");
        assert_eq!(c.written_by.as_deref(), Some("plumb 0.1.0"));
        assert_eq!(c.server, Some(("h".into(), "5201".into())));
        assert_eq!(c.streams.as_deref(), Some("2"));
        assert_eq!(c.duration.as_deref(), Some("10"));
        assert!(c.reverse && !c.bidir);
        // A figure written as null is no figure.
        assert_eq!((c.cpu_near, c.cpu_far), (Some(12.5), None));
        assert_eq!(c.sndbuf.as_deref(), Some("16384"));
        let near = c.sysctls_near.expect("near");
        assert_eq!(near.keys().collect::<Vec<_>>(), ["net.a", "net.b"]);
        assert_eq!(near["net.b"].as_deref(), Some("1"));
        let lab = c.lab.expect("lab");
        assert_eq!((lab.rate_bps, lab.seed.as_deref()), (Some(1e9), Some("7")));
        assert_eq!(lab.segments_delivered.as_deref(), Some("10"));
        assert_eq!(lab.release_error_us, Some((3.0, 9.0)));
        assert_eq!(c.hosts.far_system, "Linux far");
        assert!(c.hosts.far_known);
        assert_eq!(
            c.hosts.near,
            "client (this machine, near namespace of the lab)"
        );
    }

    #[test]
    fn missing_keys() {
        assert_eq!(config(r#"{"diagnosis": {}}"#), None);
        let c = config(
            r#"{"start": {"version": "iperf 3.12", "accepted_connection": {"host": "c", "port": 1}},
                "end": {"plumb": {"local": {}, "remote": null}}}"#,
        )
        .expect("a test");
        assert_eq!((c.server, c.duration, c.cpu_near), (None, None, None));
        assert!(!c.bidir);
        assert_eq!((c.sysctls_near, c.sysctls_far, c.lab), (None, None, None));
        assert!(!c.hosts.far_known);
        assert_eq!(c.hosts.near, "this host (server)");
        assert!(c
            .hosts
            .far_system
            .starts_with("not recorded: iperf3 does not"));
        let c =
            config(r#"{"start": {"version": "plumb 0.1.0"}, "end": {"plumb": {"remote": null}}}"#)
                .expect("a test");
        assert!(c.hosts.far_system.contains("the far end is not plumb"));
        assert_eq!(
            c.hosts.sysctls_missing(false, false).as_deref(),
            Some("Neither host's sysctls were recorded: the far end is not plumb (a stock iperf3, say) and does not send its system or sysctls.")
        );
    }
}
