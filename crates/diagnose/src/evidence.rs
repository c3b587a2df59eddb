//! Evidence: everything a test recorded that bears on what limited it, parsed
//! once from the client's `-J` document into typed fields.
//!
//! plumb's document carries the sender's and receiver's `TCP_INFO` summaries,
//! socket buffers, CPU and TCP sysctls under `end.plumb`; a stock iperf3
//! document carries only the sender's RTT, windows and retransmits. What
//! cannot be known is listed in [`Evidence::unknown`], never guessed.
//!
//! The one module that reads JSON: everything after it works on the typed
//! [`Evidence`], whatever built it (a `-J` document, the model alone, a live
//! connection). It also reads the latency probes into
//! [`LatencyEvidence`] for [`crate::latency`].

use std::collections::BTreeMap;

use serde_json::Value;

use crate::latency::LatencyEvidence;

/// Where the link rate came from.
#[derive(Debug, Clone, PartialEq)]
pub enum LinkSource {
    /// The user said so (`--link`) or the lab configured it.
    Given,
    /// The speed of the interface the route uses (`/sys/class/net/IF/speed`).
    Interface(String),
    /// The test's own best interval: a lower bound, not the link.
    BestInterval,
}

/// The bottleneck link's line rate.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkRate {
    /// bit/s on the wire.
    pub bps: f64,
    /// How it is known.
    pub source: LinkSource,
}

/// One sending stream's TCP state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamTcp {
    /// Payload bytes per segment (`tcpi_snd_mss`).
    pub mss: Option<u64>,
    /// Smallest RTT TCP saw, µs.
    pub min_rtt_us: Option<u64>,
    /// Smoothed RTT, µs (mean over the intervals when known).
    pub srtt_us: Option<u64>,
    /// Largest congestion window, bytes.
    pub max_cwnd: Option<u64>,
    /// Largest window the receiver advertised, bytes.
    pub max_snd_wnd: Option<u64>,
    /// Retransmitted segments.
    pub retransmits: Option<u64>,
    /// Retransmitted bytes.
    pub bytes_retrans: Option<u64>,
    /// Bytes this stream sent.
    pub bytes_sent: u64,
    /// Time with data outstanding, µs (includes the two below).
    pub busy_us: Option<u64>,
    /// Time limited by the receive window, µs.
    pub rwnd_limited_us: Option<u64>,
    /// Time limited by the send buffer, µs.
    pub sndbuf_limited_us: Option<u64>,
    /// SO_SNDBUF granted, bytes.
    pub sndbuf_actual: Option<u64>,
    /// SO_SNDBUF was set (`-w`, `--sndbuf`), so the kernel did not autotune it.
    pub sndbuf_set: bool,
}

/// One end's CPU over the test.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cpu {
    /// The process, percent of one core (iperf3's measure; can exceed 100).
    pub process_pct: f64,
    /// The busiest data thread: CPU it used, percent of the test.
    pub thread_cpu_pct: Option<f64>,
    /// The same thread: time it waited for a CPU while runnable (run queue,
    /// CPU quota), percent of the test.
    pub thread_wait_pct: Option<f64>,
    /// The whole machine busy, percent of all cores.
    pub system_busy_pct: Option<f64>,
    /// Softirq share of all cores, percent.
    pub softirq_pct: Option<f64>,
    /// The CPU quota of the end's cgroup, percent of one core, when one
    /// applied (a plumb end reports it).
    pub quota_pct: Option<f64>,
    /// Of the quota's enforcement periods with work during the test, the
    /// share in which it ran out and stopped the end's threads, percent.
    pub throttled_pct: Option<f64>,
}

/// What a UDP test's receiver counted: UDP has no window, no congestion
/// control and no retransmission, so its datagrams and where they were lost
/// are all there is to weigh beside the rate cap, the link and CPU.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UdpEvidence {
    /// What the sender sent, bit/s (iperf3's `sum_sent`).
    pub sent_bps: Option<f64>,
    /// Datagrams the receiver expected (received + lost).
    pub datagrams: u64,
    /// Datagrams that never arrived.
    pub lost: u64,
    /// Of those, dropped by the receiving socket because its buffer was
    /// full (`SO_MEMINFO` drops, counted by a plumb receiver only).
    pub socket_drops: Option<u64>,
    /// The receiving socket's buffer, bytes, when a plumb receiver said.
    pub rcvbuf_granted: Option<u64>,
    /// Payload bytes per datagram (`-l`).
    pub payload: Option<u64>,
}

impl UdpEvidence {
    /// The fraction of datagrams lost, 0 when none were expected.
    pub fn lost_fraction(&self) -> f64 {
        if self.datagrams == 0 {
            0.0
        } else {
            self.lost as f64 / self.datagrams as f64
        }
    }
}

/// Everything known about one test.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    /// Idle and loaded latency probes (`--latency`), when measured.
    pub latency: Option<LatencyEvidence>,
    /// TCP; a UDP test is weighed by its [`UdpEvidence`] instead.
    pub tcp: bool,
    /// A UDP test's datagram counts (`None` for TCP).
    pub udp: Option<UdpEvidence>,
    /// The server sent (`-R`).
    pub reverse: bool,
    /// Both sent; only the client-to-server direction is diagnosed.
    pub bidir: bool,
    /// Seconds counted.
    pub duration_s: f64,
    /// Receiver-measured goodput of the diagnosed direction, bit/s.
    pub measured_bps: f64,
    /// The best reporting interval, bit/s.
    pub best_interval_bps: f64,
    /// Application rate cap over all streams (`-b` × streams), bit/s.
    pub target_bps: Option<f64>,
    /// The link rate, if known.
    pub link: Option<LinkRate>,
    /// Sending streams.
    pub streams: Vec<StreamTcp>,
    /// Receiver SO_RCVBUF granted, bytes (first stream).
    pub rcvbuf_actual: Option<u64>,
    /// Congestion control of the sender.
    pub congestion: Option<String>,
    /// CPU of the sending end.
    pub cpu_sender: Option<Cpu>,
    /// CPU of the receiving end.
    pub cpu_receiver: Option<Cpu>,
    /// TCP sysctls of the sending end.
    pub sysctl_sender: BTreeMap<String, String>,
    /// TCP sysctls of the receiving end.
    pub sysctl_receiver: BTreeMap<String, String>,
    /// Whether the sender is this host (the client).
    pub sender_is_local: bool,
    /// The peer is plumb (its evidence is in the document).
    pub peer_is_plumb: bool,
    /// The loss probability when it is known directly (the model's input
    /// in `plumb why --loss`), used instead of the retransmission rate.
    pub loss_probability: Option<f64>,
    /// What could not be known from this document.
    pub unknown: Vec<String>,
}

fn u(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
}

fn f(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn sysctls(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// The receiver's datagram counts from `end`: `sum_received` where the
/// document has it (plumb, iperf3 3.1x and later), else `sum`; its socket
/// buffer from `rcv`, the receiving end's `end.plumb` side.
fn udp_evidence(ts: &Value, end: &Value, rcv: &Value) -> UdpEvidence {
    let rx = if end["sum_received"]["packets"].is_u64() {
        &end["sum_received"]
    } else {
        &end["sum"]
    };
    let udp = &end["plumb"]["udp"];
    UdpEvidence {
        sent_bps: f(&end["sum_sent"]["bits_per_second"]),
        datagrams: u(&rx["packets"]).unwrap_or(0),
        lost: u(&rx["lost_packets"]).unwrap_or(0),
        socket_drops: u(&udp["socket_drops"]),
        rcvbuf_granted: u(&rcv["udp"]["rcvbuf_granted"]),
        payload: u(&ts["blksize"]).filter(|b| *b > 0),
    }
}

/// The best reporting interval that was not omitted, bit/s (0 without any).
fn best_interval(doc: &Value) -> f64 {
    doc["intervals"]
        .as_array()
        .map(|iv| {
            iv.iter()
                .filter(|i| i["sum"]["omitted"] != true)
                .filter_map(|i| f(&i["sum"]["bits_per_second"]))
                .fold(0.0, f64::max)
        })
        .unwrap_or(0.0)
}

/// One end's CPU: `process_pct` is iperf3's figure for its process, `side`
/// its `end.plumb` object (empty for a stock iperf3 end), `dur` the test's
/// seconds. `None` when the process figure is missing.
fn end_cpu(process_pct: Option<f64>, side: &Value, dur: f64) -> Option<Cpu> {
    let c = &side["cpu_system_wide"];
    let system_busy = f(&c["idle"]).map(|i| 100.0 - i);
    let softirq = f(&c["softirq"]);
    let (thread_cpu, thread_wait) = busiest_thread(side, dur);
    let (quota, throttled) = cgroup_quota(side);
    process_pct.map(|p| Cpu {
        process_pct: p,
        thread_cpu_pct: thread_cpu,
        thread_wait_pct: thread_wait,
        system_busy_pct: system_busy,
        softirq_pct: softirq,
        quota_pct: quota,
        throttled_pct: throttled,
    })
}

/// The data thread that wanted the most CPU on a side: the share of the
/// test it ran and the share it waited for a CPU, percent.
fn busiest_thread(side: &Value, dur: f64) -> (Option<f64>, Option<f64>) {
    let best = side["streams"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|st| Some((u(&st["thread_cpu_us"])?, u(&st["thread_wait_us"])?)))
        .max_by_key(|(c, w)| c + w);
    match best {
        Some((c, w)) if dur > 0.0 => (Some(c as f64 / 1e4 / dur), Some(w as f64 / 1e4 / dur)),
        _ => (None, None),
    }
}

/// The cgroup quota a plumb end ran under, percent of one core, and the
/// share of its periods in which the quota ran out, percent.
fn cgroup_quota(side: &Value) -> (Option<f64>, Option<f64>) {
    let g = &side["cgroup_cpu"];
    // A peer's figure outside any real quota (0.01 % to 10,000
    // cores) is dropped rather than printed.
    let q = f(&g["quota_pct"]).filter(|q| (0.01..=1e6).contains(q));
    let t = match (u(&g["periods"]), u(&g["throttled_periods"])) {
        (Some(p), Some(t)) if p > 0 => Some(t.min(p) as f64 / p as f64 * 100.0),
        _ => None,
    };
    (q, q.and(t))
}

/// The diagnosed direction's streams: in bidir the client's sending ones.
/// `snd` is the sending end's `end.plumb` object.
fn sending_streams(end: &Value, snd: &Value, bidir: bool) -> Vec<StreamTcp> {
    let streams = end["streams"].as_array().cloned().unwrap_or_default();
    let plumb_streams = snd["streams"].as_array().cloned().unwrap_or_default();
    streams
        .iter()
        .enumerate()
        .filter(|(_, s)| !bidir || s["sender"]["sender"] == true)
        .map(|(i, s)| stream_tcp(&s["sender"], plumb_streams.get(i)))
        .collect()
}

/// One sending stream from iperf3's `sender` summary and, when the sending
/// end is plumb, its own record of the stream.
fn stream_tcp(sender: &Value, plumb: Option<&Value>) -> StreamTcp {
    let info = plumb.map(|p| &p["tcp_info"]).unwrap_or(&Value::Null);
    let mut st = StreamTcp {
        mss: u(&info["snd_mss"]),
        min_rtt_us: u(&info["min_rtt_us"]).or_else(|| u(&sender["min_rtt"])),
        srtt_us: u(&sender["mean_rtt"])
            .filter(|r| *r > 0)
            .or_else(|| u(&info["rtt_us"])),
        max_cwnd: u(&sender["max_snd_cwnd"]).or_else(|| u(&info["snd_cwnd_bytes"])),
        max_snd_wnd: u(&sender["max_snd_wnd"]).or_else(|| u(&info["snd_wnd"])),
        retransmits: u(&sender["retransmits"]).or_else(|| u(&info["total_retrans"])),
        bytes_retrans: u(&info["bytes_retrans"]),
        bytes_sent: u(&sender["bytes"]).unwrap_or(0),
        busy_us: u(&info["busy_time_us"]),
        rwnd_limited_us: u(&info["rwnd_limited_us"]),
        sndbuf_limited_us: u(&info["sndbuf_limited_us"]),
        sndbuf_actual: plumb.and_then(|p| u(&p["sndbuf_actual"])),
        sndbuf_set: plumb.is_some_and(|p| p["sndbuf_set"] == true),
    };
    // A stock iperf3 sender reports -1 (as a huge unsigned) when it cannot count.
    if st.retransmits.is_some_and(|r| r > u64::from(u32::MAX)) {
        st.retransmits = None;
    }
    st
}

/// What the document could not tell, from what [`Evidence::from_json`]
/// found in it.
fn unknowns(ev: &Evidence) -> Vec<String> {
    let mut unknown = Vec::new();
    if ev.tcp && ev.streams.iter().all(|s| s.busy_us.is_none()) {
        unknown.push(if ev.peer_is_plumb || ev.sender_is_local {
            "the sender's TCP limit counters (busy, rwnd_limited, sndbuf_limited): kernel too old"
                .into()
        } else {
            "the sender's TCP limit counters: the sending server is not plumb".into()
        });
    }
    if !ev.peer_is_plumb {
        unknown.push(
            "the remote host's TCP settings, buffers and system CPU: the peer is not plumb".into(),
        );
    }
    if ev.link.is_none() {
        unknown.push("the link rate: give --link (e.g. --link 1g)".into());
    }
    unknown
}

impl LatencyEvidence {
    /// Reads `end.plumb.latency` of a `-J` document; `None` without loaded probes.
    pub fn from_json(doc: &Value) -> Option<LatencyEvidence> {
        let l = &doc["end"]["plumb"]["latency"];
        let g = |side: &str, k: &str| l[side][k].as_f64();
        Some(LatencyEvidence {
            idle_p50_ms: g("idle", "p50_ms")?,
            loaded_p50_ms: g("loaded", "p50_ms")?,
            loaded_p99_ms: g("loaded", "p99_ms")?,
            loaded_rpm: g("loaded", "rpm"),
            predicted_queue_ms: doc["model"]["queue_delay_ms"].as_f64(),
        })
    }
}

impl Evidence {
    /// Reads a client's `-J` document. `link` is the link rate when known.
    pub fn from_json(doc: &Value, link: Option<LinkRate>) -> Result<Evidence, String> {
        let ts = &doc["start"]["test_start"];
        let end = &doc["end"];
        if end.get("sum_received").is_none() {
            return Err(match doc["error"].as_str() {
                Some(e) => format!("the test did not complete: {e}"),
                None => {
                    "the document has no end.sum_received: not a completed iperf3/plumb test".into()
                }
            });
        }
        let mut ev = Evidence {
            tcp: ts["protocol"].as_str() != Some("UDP"),
            reverse: u(&ts["reverse"]) == Some(1),
            bidir: u(&ts["bidir"]) == Some(1),
            duration_s: f(&end["sum_received"]["seconds"]).unwrap_or(0.0),
            measured_bps: f(&end["sum_received"]["bits_per_second"]).unwrap_or(0.0),
            congestion: end["sender_tcp_congestion"].as_str().map(str::to_string),
            link,
            ..Evidence::default()
        };
        ev.sender_is_local = !ev.reverse;
        ev.latency = LatencyEvidence::from_json(doc);

        let per_stream = u(&ts["target_bitrate"]).filter(|b| *b > 0);
        let n = u(&ts["num_streams"]).unwrap_or(1).max(1);
        ev.target_bps = per_stream.map(|b| b as f64 * n as f64);
        ev.best_interval_bps = best_interval(doc);
        let plumb = &end["plumb"];
        ev.peer_is_plumb = plumb["remote"].is_object();
        let (snd, rcv) = if ev.sender_is_local {
            (&plumb["local"], &plumb["remote"])
        } else {
            (&plumb["remote"], &plumb["local"])
        };
        ev.sysctl_sender = sysctls(&snd["sysctl"]);
        ev.sysctl_receiver = sysctls(&rcv["sysctl"]);
        ev.rcvbuf_actual = u(&rcv["streams"][0]["rcvbuf_actual"]);
        if !ev.tcp {
            ev.udp = Some(udp_evidence(ts, end, rcv));
        }
        let cpu = &end["cpu_utilization_percent"];
        let (snd_pct, rcv_pct) = if ev.sender_is_local {
            (f(&cpu["host_total"]), f(&cpu["remote_total"]))
        } else {
            (f(&cpu["remote_total"]), f(&cpu["host_total"]))
        };
        ev.cpu_sender = end_cpu(snd_pct, snd, ev.duration_s);
        ev.cpu_receiver = end_cpu(rcv_pct, rcv, ev.duration_s);
        ev.streams = sending_streams(end, snd, ev.bidir);
        ev.unknown = unknowns(&ev);
        Ok(ev)
    }

    /// Reads a `-J` document from its text, as [`Evidence::from_json`]
    /// does from the parsed document: the tests' fixtures.
    #[cfg(test)]
    pub(crate) fn from_text(text: &str, link: Option<LinkRate>) -> Result<Evidence, String> {
        let doc: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        Evidence::from_json(&doc, link)
    }

    /// The RTT to reason with: the mean smoothed RTT, else the minimum, seconds.
    pub fn rtt_s(&self) -> Option<f64> {
        let pick = |f: fn(&StreamTcp) -> Option<u64>| {
            let v: Vec<u64> = self
                .streams
                .iter()
                .filter_map(f)
                .filter(|r| *r > 0)
                .collect();
            (!v.is_empty()).then(|| v.iter().sum::<u64>() as f64 / v.len() as f64 / 1e6)
        };
        pick(|s| s.srtt_us).or_else(|| pick(|s| s.min_rtt_us))
    }

    /// The smallest RTT seen, seconds.
    pub fn min_rtt_s(&self) -> Option<f64> {
        self.streams
            .iter()
            .filter_map(|s| s.min_rtt_us)
            .filter(|r| *r > 0)
            .min()
            .map(|r| r as f64 / 1e6)
    }

    /// Payload bytes per segment (first stream that knows it).
    pub fn mss(&self) -> Option<u64> {
        self.streams.iter().find_map(|s| s.mss)
    }

    /// Fraction of the test a counter covers, summed over streams.
    pub fn fraction(&self, pick: fn(&StreamTcp) -> Option<u64>) -> Option<f64> {
        let total: Vec<u64> = self.streams.iter().filter_map(pick).collect();
        if total.is_empty() || self.duration_s <= 0.0 {
            return None;
        }
        let secs = total.iter().sum::<u64>() as f64 / 1e6 / self.streams.len() as f64;
        Some((secs / self.duration_s).min(1.0))
    }

    /// The loss probability if given, else retransmitted segments over
    /// segments sent, when both are known.
    pub fn loss_rate(&self) -> Option<f64> {
        if let Some(p) = self.loss_probability {
            return Some(p);
        }
        let mss = self.mss().unwrap_or(1448).max(1);
        let retr: u64 = self.streams.iter().filter_map(|s| s.retransmits).sum();
        let sent: u64 = self.streams.iter().map(|s| s.bytes_sent).sum();
        if self.streams.iter().all(|s| s.retransmits.is_none()) || sent == 0 {
            return None;
        }
        Some(retr as f64 / (sent as f64 / mss as f64).max(1.0))
    }

    /// The summed largest advertised windows, bytes.
    pub fn window(&self) -> Option<u64> {
        let w: Vec<u64> = self.streams.iter().filter_map(|s| s.max_snd_wnd).collect();
        (!w.is_empty()).then(|| w.iter().sum())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::LatencyEvidence;
    use crate::testing::*;

    #[test]
    fn latency_probes_are_read_and_missing_ones_give_nothing() {
        let doc = json!({"end": {"plumb": {"latency": {
            "idle": {"p50_ms": 15.0}, "loaded": {"p50_ms": 97.0, "p99_ms": 115.0, "rpm": 600.0}
        }}}, "model": {"queue_delay_ms": 100.0}});
        assert_eq!(
            LatencyEvidence::from_json(&doc),
            Some(LatencyEvidence {
                idle_p50_ms: 15.0,
                loaded_p50_ms: 97.0,
                loaded_p99_ms: 115.0,
                loaded_rpm: Some(600.0),
                predicted_queue_ms: Some(100.0),
            })
        );
        assert_eq!(LatencyEvidence::from_json(&json!({"end": {}})), None);
    }

    #[test]
    fn reads_a_stock_iperf3_document() {
        let doc: serde_json::Value =
            serde_json::from_str(include_str!("../tests/fixtures/iperf3-3.12-forward.json"))
                .expect("fixture");
        let e = Evidence::from_json(&doc, None).expect("evidence");
        assert!(e.tcp && !e.reverse && !e.peer_is_plumb);
        assert_eq!(e.streams.len(), 1);
        assert_eq!(e.streams[0].max_snd_wnd, Some(6_930_432));
        assert!(e.unknown.iter().any(|u| u.contains("not plumb")));
        assert!(e.unknown.iter().any(|u| u.contains("--link")));
        let d = diagnose(&e);
        consistent(&d);
        // Loopback at 40 Gbit/s: iperf3 3.12 used a whole core sending.
        assert_eq!(d.limit, Some(Limit::Cpu), "{:?}", d.findings);
        assert!(d.summary.contains("CPU on the sender"), "{}", d.summary);
    }
}
