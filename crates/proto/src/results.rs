//! The results message both sides exchange at the end of a test (spec §6), typed.
//!
//! This module owns [`Results`] and its encoding: the iperf3 keys in iperf3's
//! order with its JSON types, signed `-1` on output, both −1 spellings, ints
//! for floats and missing `start_time`/`end_time`/`omitted_*` on input. It
//! also owns plumb's extension object, sent under `"plumb"`, which iperf3
//! ignores. How a receiver matches streams by ID is the driver's business.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::lenient;

/// One side's results.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Results {
    /// Process CPU use, percent, user + system.
    #[serde(serialize_with = "lenient::finite")]
    pub cpu_util_total: f64,
    /// Process CPU use in user mode, percent.
    #[serde(serialize_with = "lenient::finite")]
    pub cpu_util_user: f64,
    /// Process CPU use in kernel mode, percent.
    #[serde(serialize_with = "lenient::finite")]
    pub cpu_util_system: f64,
    /// 1 = this side sends and has TCP retransmit counts, 0 = sends without
    /// counts (UDP), −1 = only receives.
    #[serde(deserialize_with = "lenient::signed")]
    pub sender_has_retransmits: i64,
    /// TCP congestion control algorithm in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion_used: Option<String>,
    /// The server's text report, when the client asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output_text: Option<String>,
    /// The server's whole `-J` document, when asked for and the server runs with `-J`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output_json: Option<serde_json::Value>,
    /// One entry per local stream, in local order (both directions in bidir).
    pub streams: Vec<StreamResult>,
    /// plumb↔plumb extras; iperf3 ignores the key, and an entry that does not
    /// parse is dropped rather than failing the exchange.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::ignore_invalid"
    )]
    pub plumb: Option<PlumbResults>,
}

/// One stream's counters in a [`Results`] message.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StreamResult {
    /// Stream ID (1, 3, 4, … — see [`crate::stream_id`]).
    #[serde(deserialize_with = "lenient::unsigned32")]
    pub id: u32,
    /// Bytes sent (sender) or received (receiver) after the omit period.
    #[serde(deserialize_with = "lenient::unsigned")]
    pub bytes: u64,
    /// TCP retransmits (sender with counts), else −1.
    #[serde(deserialize_with = "lenient::signed")]
    pub retransmits: i64,
    /// UDP jitter in seconds (receiver), else 0.
    #[serde(serialize_with = "lenient::finite")]
    pub jitter: f64,
    /// Lost UDP datagrams (receiver), else 0.
    #[serde(deserialize_with = "lenient::signed")]
    pub errors: i64,
    /// `errors` at the end of the omit period, for the peer to subtract (3.14+).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_signed"
    )]
    pub omitted_errors: Option<i64>,
    /// `packets` at the end of the omit period (3.14+; sent together with `omitted_errors`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_signed"
    )]
    pub omitted_packets: Option<i64>,
    /// Datagrams sent (sender) or highest sequence number seen (receiver); 0 for TCP.
    #[serde(deserialize_with = "lenient::signed")]
    pub packets: i64,
    /// Always 0 in practice; absent from pre-3.2 peers.
    #[serde(default, serialize_with = "lenient::finite")]
    pub start_time: f64,
    /// The stream's run time in seconds; absent from pre-3.2 peers.
    #[serde(default, serialize_with = "lenient::finite")]
    pub end_time: f64,
}

/// plumb↔plumb result extras, sent under `"plumb"`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PlumbResults {
    /// The sending plumb's version.
    pub version: String,
    /// The sending host's system, the line iperf3 writes as
    /// `start.system_info` (`uname`: system, node name, release, version,
    /// machine). A peer's is bounded and stripped of control characters;
    /// anything but a string reads as absent.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_peer_text"
    )]
    pub system: Option<String>,
    /// System-wide CPU use during the test (not just this process).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_system_wide: Option<CpuTimes>,
    /// Relevant sysctl values, e.g. `net.ipv4.tcp_rmem`. A peer's are
    /// bounded like [`PlumbResults::system`], at most 64 entries, and
    /// entries that are not strings are dropped.
    #[serde(
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "lenient::peer_text_map"
    )]
    pub sysctl: BTreeMap<String, String>,
    /// Per-stream socket facts, matched to [`StreamResult`]s by `id`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<PlumbStreamInfo>,
    /// Server only: how many other tests ran on the server while this one
    /// did (a server with `--max-tests` above 1); absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrent_tests: Option<u64>,
    /// UDP tests: how this end moved datagrams.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub udp: Option<PlumbUdp>,
    /// The CPU quota of this end's cgroup and how often it held the end
    /// back during the test; absent where no quota applies. A peer's that
    /// does not parse is dropped alone.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::ignore_invalid"
    )]
    pub cgroup_cpu: Option<CgroupCpu>,
    /// The CPUs this end's test may run on, as Linux writes
    /// `Cpus_allowed_list` (`0`, `0-3,6`): what `-A` (or a cpuset) left it.
    /// A peer's is bounded like [`PlumbResults::system`].
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_peer_text"
    )]
    pub cpus_allowed: Option<String>,
}

/// A cgroup's CPU quota (CFS bandwidth control: v2 `cpu.max`, v1
/// `cpu.cfs_quota_us`) and its counters over the test (`cpu.stat`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CgroupCpu {
    /// The quota, percent of one core.
    #[serde(serialize_with = "lenient::finite")]
    pub quota_pct: f64,
    /// Enforcement periods (normally 100 ms) in which the cgroup had work.
    pub periods: u64,
    /// Of those, periods in which the quota ran out and its threads were
    /// stopped until the next period.
    pub throttled_periods: u64,
    /// Time its threads were held back, µs.
    pub throttled_us: u64,
}

impl CgroupCpu {
    /// The share of its periods with work in which the quota ran out,
    /// percent; `None` when no period had work.
    pub fn throttled_pct(&self) -> Option<f64> {
        (self.periods > 0)
            .then(|| self.throttled_periods.min(self.periods) as f64 / self.periods as f64 * 100.0)
    }
}

/// How one end of a UDP test moved its datagrams: what a UDP figure needs
/// beside it to be compared with another (GSO/GRO change the packet rate by
/// an order of magnitude, and how jitter is resolved).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PlumbUdp {
    /// The client asked for GSO and GRO (`--gsro`; iperf3 3.21+'s `gso`/`gro`).
    pub gsro: bool,
    /// A sending end: datagrams per send message (1 = one datagram per
    /// message, no GSO).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gso_segments: Option<u64>,
    /// Datagrams per GSO message the client asked the sending end for
    /// (`gso_bf_size / gso_dg_size`), when it asked for GSO: what a stock
    /// iperf3 sender uses, which does not report it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gso_segments_asked: Option<u64>,
    /// A receiving end: whether `UDP_GRO` was on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gro: Option<bool>,
    /// A receiving end: what one arrival time covers — `"datagram"` (the
    /// kernel's per-datagram receive time), `"gro_batch"` (one time per
    /// coalesced read) or `"read_batch"` (one clock read per `recvmmsg`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_resolution: Option<String>,
    /// A receiving end: how long a receive polls the socket before it
    /// sleeps, microseconds (0: it sleeps at once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receive_poll_us: Option<u64>,
    /// A receiving end: reads the kernel cut short (`MSG_TRUNC`), counted
    /// apart from loss.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated_reads: Option<u64>,
    /// A receiving end: packets the kernel dropped at its sockets because
    /// the receive buffer was full (`SO_MEMINFO`) — loss at the receiver
    /// itself, not on the path. With GRO one drop may be many datagrams.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub socket_drops: Option<u64>,
    /// SO_SNDBUF and SO_RCVBUF asked for on each UDP socket, bytes (`-w`, or
    /// plumb's default of 4 MiB; the kernel caps it at wmem_max/rmem_max).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub socket_buffer_requested: Option<u64>,
    /// SO_SNDBUF as the kernel reports it (twice what it grants for data).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sndbuf_granted: Option<u32>,
    /// SO_RCVBUF as the kernel reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rcvbuf_granted: Option<u32>,
}

/// System-wide CPU time shares over the test, percent of all CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuTimes {
    /// User mode.
    #[serde(serialize_with = "lenient::finite")]
    pub user: f64,
    /// User mode at low priority.
    #[serde(serialize_with = "lenient::finite")]
    pub nice: f64,
    /// Kernel mode, excluding interrupts.
    #[serde(serialize_with = "lenient::finite")]
    pub system: f64,
    /// Hard interrupts.
    #[serde(serialize_with = "lenient::finite")]
    pub irq: f64,
    /// Soft interrupts — where much of the network stack runs.
    #[serde(serialize_with = "lenient::finite")]
    pub softirq: f64,
    /// Waiting for I/O.
    #[serde(serialize_with = "lenient::finite")]
    pub iowait: f64,
    /// Taken by the hypervisor.
    #[serde(serialize_with = "lenient::finite")]
    pub steal: f64,
    /// Idle.
    #[serde(serialize_with = "lenient::finite")]
    pub idle: f64,
}

/// Socket facts about one stream that iperf3's results do not carry.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PlumbStreamInfo {
    /// The stream ID this describes.
    pub id: u32,
    /// SO_SNDBUF as the kernel reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sndbuf_actual: Option<u32>,
    /// A sending stream whose SO_SNDBUF was set (`-w`, `--sndbuf`): fixed,
    /// where the kernel would otherwise grow it as the window grows.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sndbuf_set: bool,
    /// SO_RCVBUF as the kernel reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rcvbuf_actual: Option<u32>,
    /// TCP_WINDOW_CLAMP in effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_clamp: Option<u32>,
    /// TCP_MAXSEG in effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mss: Option<u32>,
    /// Congestion control algorithm of this socket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
    /// TCP_INFO at the end of the test.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_info: Option<TcpInfoSummary>,
    /// CPU time the stream's thread used, µs (from its schedstat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_cpu_us: Option<u64>,
    /// Time the stream's thread was runnable but waited for a CPU — the run
    /// queue, or a CPU quota throttling it — µs. With `thread_cpu_us` it says
    /// whether the thread wanted more CPU than it got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_wait_us: Option<u64>,
}

/// The TCP_INFO fields plumb's diagnosis uses; `None` where the kernel lacks one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TcpInfoSummary {
    /// Time with data in flight, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_time_us: Option<u64>,
    /// Time limited by the receive window, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rwnd_limited_us: Option<u64>,
    /// Time limited by the send buffer, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sndbuf_limited_us: Option<u64>,
    /// Most recent delivery rate, bits/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery_rate_bps: Option<u64>,
    /// Minimum RTT seen, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rtt_us: Option<u64>,
    /// Smoothed RTT, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<u64>,
    /// RTT variance, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rttvar_us: Option<u64>,
    /// Congestion window, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snd_cwnd_bytes: Option<u64>,
    /// Peer's advertised window, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snd_wnd: Option<u64>,
    /// Segments retransmitted over the connection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_retrans: Option<u64>,
    /// Bytes retransmitted over the connection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_retrans: Option<u64>,
    /// Sequence space the peer acknowledged, the SYN's byte included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_acked: Option<u64>,
    /// Path MTU, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pmtu: Option<u64>,
    /// Sender MSS, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snd_mss: Option<u64>,
    /// Receiver's space estimate (drives receive-buffer autotuning), bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rcv_space: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{self, captured_client, captured_server};
    use crate::framing::{decode_json, encode_json, JsonLimits};
    use proptest::prelude::*;

    fn decode(json: &str) -> Result<Results, crate::ProtoError> {
        decode_json(json.as_bytes(), &JsonLimits::default(), "results")
    }

    fn encode(results: &Results) -> String {
        String::from_utf8(encode_json(results, "results").expect("encodes")).expect("UTF-8")
    }

    #[test]
    fn decodes_both_captured_results() {
        assert_eq!(decode(capture::CLIENT_RESULTS), Ok(captured_client()));
        // 18446744073709551615 is 3.12's spelling of −1.
        assert_eq!(decode(capture::SERVER_RESULTS), Ok(captured_server()));
    }

    #[test]
    fn encodes_like_iperf3_but_with_a_signed_minus_one() {
        assert_eq!(encode(&captured_client()), capture::CLIENT_RESULTS);
        let expected = capture::SERVER_RESULTS.replace("18446744073709551615", "-1");
        assert_eq!(encode(&captured_server()), expected);
    }

    #[test]
    fn udp_receiver_results_keep_their_jitter_digits() {
        let json = concat!(
            r#"{"cpu_util_total":1,"cpu_util_user":0.5,"cpu_util_system":0.5,"sender_has_retransmits":-1,"#,
            r#""streams":[{"id":1,"bytes":262144,"retransmits":-1,"jitter":2.4152191404253245e-05,"#,
            r#""errors":0,"omitted_errors":0,"omitted_packets":0,"packets":8,"start_time":0,"end_time":1.000005}]}"#
        );
        let results = decode(json).expect("decodes");
        assert_eq!(results.streams[0].jitter, 2.4152191404253245e-05);
        assert_eq!(results.streams[0].omitted_packets, Some(0));
        assert_eq!(encode(&results), json);
    }

    #[test]
    fn optional_and_old_fields_may_be_absent() {
        let json = concat!(
            r#"{"cpu_util_total":1.5,"cpu_util_user":1,"cpu_util_system":0.5,"sender_has_retransmits":0,"#,
            r#""streams":[{"id":3,"bytes":10.0,"retransmits":-1,"jitter":0,"errors":2,"packets":9}],"#,
            r#""server_output_text":"hello","future_key":[1]}"#
        );
        let results = decode(json).expect("decodes");
        let stream = &results.streams[0];
        assert_eq!(
            (stream.id, stream.bytes, stream.errors, stream.packets),
            (3, 10, 2, 9)
        );
        assert_eq!((stream.start_time, stream.end_time), (0.0, 0.0));
        assert_eq!(stream.omitted_errors, None);
        assert_eq!(results.server_output_text.as_deref(), Some("hello"));
        assert_eq!(results.congestion_used, None);
        assert_eq!(results.plumb, None);
    }

    #[test]
    fn required_fields_and_types_are_enforced() {
        let bad = [
            r#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":0}"#,
            r#"{"cpu_util_total":"1","cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":0,"streams":[]}"#,
            r#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":0,"streams":[{"id":1}]}"#,
            r#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":0,"streams":[{"id":1,"bytes":-5,"retransmits":0,"jitter":0,"errors":0,"packets":0}]}"#,
            r#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":true,"streams":[]}"#,
            r#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":0,"streams":{}}"#,
            r#"[]"#,
        ];
        for json in bad {
            let err = decode(json).expect_err(json);
            assert!(
                err.to_string().starts_with("invalid results JSON: "),
                "{err}"
            );
        }
    }

    #[test]
    fn non_finite_floats_are_sent_as_zero() {
        let results = Results {
            cpu_util_total: f64::NAN,
            cpu_util_user: f64::INFINITY,
            ..Results::default()
        };
        let json = encode(&results);
        assert!(
            json.starts_with(r#"{"cpu_util_total":0,"cpu_util_user":0,"#),
            "{json}"
        );
        assert_eq!(decode(&json).map(|r| r.cpu_util_total), Ok(0.0));
    }

    #[test]
    fn plumb_extras_travel_and_bad_ones_are_dropped() {
        let mut results = captured_client();
        results.plumb = Some(PlumbResults {
            version: "0.1.0".into(),
            system: Some("Linux far 6.1.0 #1 SMP x86_64".into()),
            cpu_system_wide: Some(CpuTimes {
                softirq: 12.5,
                idle: 80.0,
                ..CpuTimes::default()
            }),
            sysctl: [("net.core.rmem_max".to_owned(), "212992".to_owned())].into(),
            streams: vec![PlumbStreamInfo {
                id: 1,
                sndbuf_actual: Some(425_984),
                congestion: Some("cubic".into()),
                tcp_info: Some(TcpInfoSummary {
                    rtt_us: Some(1234),
                    rwnd_limited_us: Some(0),
                    ..TcpInfoSummary::default()
                }),
                ..PlumbStreamInfo::default()
            }],
            concurrent_tests: None,
            udp: Some(PlumbUdp {
                gsro: true,
                gso_segments: Some(64),
                ..PlumbUdp::default()
            }),
            cgroup_cpu: Some(CgroupCpu {
                quota_pct: 1.0,
                periods: 40,
                throttled_periods: 39,
                throttled_us: 3_800_000,
            }),
            cpus_allowed: Some("0-3,6".into()),
        });
        let g = results.plumb.as_ref().and_then(|p| p.cgroup_cpu);
        assert_eq!(g.and_then(|g| g.throttled_pct()), Some(97.5));
        assert_eq!(CgroupCpu::default().throttled_pct(), None);
        let json = encode(&results);
        assert!(
            json.contains(
                r#""cgroup_cpu":{"quota_pct":1,"periods":40,"throttled_periods":39,"throttled_us":3800000},"cpus_allowed":"0-3,6""#
            ),
            "{json}"
        );
        assert!(
            json.contains(
                r#""plumb":{"version":"0.1.0","system":"Linux far 6.1.0 #1 SMP x86_64","cpu_system_wide":{"#
            ),
            "{json}"
        );
        assert_eq!(decode(&json), Ok(results.clone()));

        let broken = json.replace(r#""rtt_us":1234"#, r#""rtt_us":"slow""#);
        let decoded = decode(&broken).expect("iperf3 part still decodes");
        assert_eq!(decoded.plumb, None);
        assert_eq!(decoded.streams, results.streams);
    }

    /// Results whose `plumb` object is `extras`, decoded.
    fn with_extras(extras: &str) -> Results {
        let json = capture::CLIENT_RESULTS.replacen('{', &format!(r#"{{"plumb":{extras},"#), 1);
        decode(&json).expect("the iperf3 part decodes")
    }

    #[test]
    fn a_peers_system_and_sysctls_are_bounded_and_typed() {
        // Wrong types drop the field alone, not the peer's other extras.
        let r = with_extras(
            r#"{"version":"9","system":17,"sysctl":{"a":"1","b":2,"c":null,"d":["x"]}}"#,
        );
        let p = r.plumb.expect("the rest of the extras stay");
        assert_eq!(p.version, "9");
        assert_eq!(p.system, None);
        let c = with_extras(r#"{"version":"9","cpus_allowed":[0,1]}"#);
        let c = c.plumb.expect("a bad cpus_allowed drops alone");
        assert_eq!((c.version.as_str(), c.cpus_allowed), ("9", None));
        let g = with_extras(r#"{"version":"9","cgroup_cpu":{"periods":"many"}}"#);
        let g = g.plumb.expect("a bad cgroup_cpu drops alone");
        assert_eq!((g.version.as_str(), g.cgroup_cpu), ("9", None));
        assert_eq!(p.sysctl, [("a".to_owned(), "1".to_owned())].into());
        for other in [r#"null"#, r#"{"x":"y"}"#, r#"[]"#, r#"true"#] {
            let r = with_extras(&format!(
                r#"{{"version":"9","system":{other},"sysctl":[1]}}"#
            ));
            let p = r.plumb.expect("extras stay");
            assert_eq!((p.system, p.sysctl.len()), (None, 0), "{other}");
        }

        // Oversized text is cut on a character boundary, control
        // characters (a terminal escape, a newline) become spaces, and only
        // so many sysctls are kept.
        let long = "é".repeat(3_000);
        let many: Vec<String> = (0..500).map(|i| format!(r#""k{i:03}":"v""#)).collect();
        let r = with_extras(&format!(
            r#"{{"system":"Linux \u001b[31mred\nx {long}","sysctl":{{{},"{long}":"{long}"}}}}"#,
            many.join(",")
        ));
        let p = r.plumb.expect("extras stay");
        let system = p.system.expect("a string");
        assert!(system.len() <= lenient::MAX_PEER_TEXT, "{}", system.len());
        assert!(system.starts_with("Linux  [31mred x éé"), "{system:?}");
        assert!(!system.chars().any(char::is_control));
        assert_eq!(p.sysctl.len(), lenient::MAX_PEER_SYSCTLS);
        assert!(p.sysctl.contains_key("k000"));
        assert!(p
            .sysctl
            .iter()
            .all(|(k, v)| k.len() <= lenient::MAX_PEER_TEXT && v.len() <= lenient::MAX_PEER_TEXT));

        // What plumb itself sends comes back as it was.
        let ok = with_extras(
            r#"{"system":"Linux a 6.1 #1 x86_64","sysctl":{"net.ipv4.tcp_rmem":"4096\t131072\t6291456"}}"#,
        );
        let p = ok.plumb.expect("extras");
        assert_eq!(p.system.as_deref(), Some("Linux a 6.1 #1 x86_64"));
        // A tab is a control character too: sysctl values come back spaced.
        assert_eq!(p.sysctl["net.ipv4.tcp_rmem"], "4096 131072 6291456");
    }

    fn finite() -> impl Strategy<Value = f64> {
        any::<f64>().prop_filter("JSON carries finite numbers only", |v| v.is_finite())
    }

    prop_compose! {
        fn arb_stream()(
            id in any::<u32>(), bytes in any::<u64>(), retransmits in any::<i64>(), jitter in finite(),
            errors in any::<i64>(), omitted in proptest::option::of((any::<i64>(), any::<i64>())),
            packets in any::<i64>(), start_time in finite(), end_time in finite(),
        ) -> StreamResult {
            StreamResult {
                id, bytes, retransmits, jitter, errors,
                omitted_errors: omitted.map(|o| o.0),
                omitted_packets: omitted.map(|o| o.1),
                packets, start_time, end_time,
            }
        }
    }

    prop_compose! {
        fn arb_plumb()(
            version in any::<String>(),
            // A peer's text is bounded and printable (see the test above);
            // what round-trips exactly is text that already is.
            system in proptest::option::of("[ -~é]{0,200}"),
            cpu in proptest::option::of(proptest::array::uniform8(finite())),
            sysctl in proptest::collection::btree_map("[ -~]{0,40}", "[ -~]{0,80}", 0..3),
            streams in proptest::collection::vec(
                (any::<u32>(), proptest::option::of(any::<u32>()), proptest::option::of(any::<String>()),
                 proptest::option::of(proptest::array::uniform14(proptest::option::of(any::<u64>())))),
                0..3),
        ) -> PlumbResults {
            PlumbResults {
                // Bounded peer text, as `system` is.
                cpus_allowed: system.clone(),
                version,
                system,
                cpu_system_wide: cpu.map(|c| CpuTimes {
                    user: c[0], nice: c[1], system: c[2], irq: c[3],
                    softirq: c[4], iowait: c[5], steal: c[6], idle: c[7],
                }),
                sysctl,
                streams: streams.into_iter().map(|(id, buf, congestion, info)| PlumbStreamInfo {
                    id,
                    sndbuf_actual: buf,
                    sndbuf_set: buf.is_some(),
                    rcvbuf_actual: buf,
                    window_clamp: None,
                    mss: buf,
                    congestion,
                    tcp_info: info.map(|t| TcpInfoSummary {
                        busy_time_us: t[0], rwnd_limited_us: t[1], sndbuf_limited_us: t[2],
                        delivery_rate_bps: t[3], min_rtt_us: t[4], rtt_us: t[5], rttvar_us: t[6],
                        snd_cwnd_bytes: t[7], snd_wnd: t[8], total_retrans: t[9],
                        bytes_retrans: t[10], bytes_acked: None, pmtu: t[11], snd_mss: t[12], rcv_space: t[13],
                    }),
                    thread_cpu_us: buf.map(u64::from),
                    thread_wait_us: None,
                }).collect(),
                concurrent_tests: None,
                udp: None,
                cgroup_cpu: None,
            }
        }
    }

    prop_compose! {
        fn arb_results()(
            cpu in proptest::array::uniform3(finite()),
            sender_has_retransmits in any::<i64>(),
            congestion_used in proptest::option::of(any::<String>()),
            server_output_text in proptest::option::of(any::<String>()),
            server_output_json in proptest::option::of(
                // Integral floats come back as JSON integers (iperf3 does not
                // distinguish them), so the passthrough gets fractional ones.
                (any::<String>(), finite().prop_filter("fractional", |f| f.fract() != 0.0), any::<i64>())
                    .prop_map(|(k, f, i)| {
                    serde_json::json!({ "end": { k: [f, i, null, true] } })
                })),
            streams in proptest::collection::vec(arb_stream(), 0..4),
            plumb in proptest::option::of(arb_plumb()),
        ) -> Results {
            Results {
                cpu_util_total: cpu[0],
                cpu_util_user: cpu[1],
                cpu_util_system: cpu[2],
                sender_has_retransmits,
                congestion_used,
                server_output_text,
                server_output_json,
                streams,
                plumb,
            }
        }
    }

    proptest! {
        #[test]
        fn encode_decode_round_trip(results in arb_results()) {
            let json = encode_json(&results, "results").expect("encodes");
            let limits = JsonLimits { max_len: usize::MAX, ..JsonLimits::default() };
            let back: Results = decode_json(&json, &limits, "results").expect("decodes");
            prop_assert_eq!(back, results);
        }
    }
}
