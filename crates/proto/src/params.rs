//! The client's parameter message (spec §4), typed.
//!
//! This module owns [`TestParams`], its exact 3.12-style encoding (key order,
//! JSON types, flags that are off left out) and its tolerant decoding, plus
//! the post-3.21 range checks in [`TestParams::validate`]. It does not decide
//! what a server does with valid parameters.
//!
//! Decoding follows what iperf3 servers accept rather than what they send:
//! unknown keys are ignored; a flag is on if its value is `true`, a non-zero
//! number, or any string/array/object (≤3.17 servers only test presence), and
//! off if absent, `false`, `0` or `null`; numbers may be integers or floats
//! (floats truncate), and integers of 2^63 or more are the −1 quirk (§6.3);
//! any other wrongly typed key is ignored, as 3.18+ servers do. Absent
//! always-sent numbers take iperf3's defaults; absent optional keys stay unset.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Number, Value};

use crate::lenient::{int_from_f64, int_from_u64};

/// The transport of the data streams; exactly one key is sent (`"tcp":true` …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Protocol {
    /// TCP streams (the default when no protocol key is present).
    #[default]
    Tcp,
    /// UDP flows.
    Udp,
    /// SCTP associations.
    Sctp,
}

impl Protocol {
    /// The JSON key that selects this protocol.
    pub fn key(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Sctp => "sctp",
        }
    }
}

/// Default TCP block size (`len`), 128 KiB.
pub const DEFAULT_TCP_LEN: i64 = 128 * 1024;

/// The shortest and longest UDP datagram (`len`) iperf3 takes: its header
/// (sequence number and send time) needs 16 bytes; 65,507 fills an IPv4
/// datagram.
pub const UDP_LEN: std::ops::RangeInclusive<i64> = 16..=65_507;

/// Default `pacing_timer`, µs.
pub const DEFAULT_PACING_TIMER: i64 = 1000;

/// Everything a client tells a server about the test.
///
/// Integers are `i64` because the wire carries whatever the peer typed,
/// negatives included; [`TestParams::validate`] decides what is acceptable.
/// Fields are in the order iperf3 emits them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestParams {
    /// `tcp` / `udp` / `sctp`: the data transport.
    pub protocol: Protocol,
    /// `omit`: seconds at the start excluded from statistics.
    pub omit: i64,
    /// `server_affinity`: CPU the server should pin itself to.
    pub server_affinity: Option<i64>,
    /// `time`: test duration in seconds (0 when ended by `num`/`blockcount`).
    pub time: i64,
    /// `num`: end after this many bytes; 0 = unused.
    pub num: i64,
    /// `blockcount`: end after this many blocks; 0 = unused.
    pub blockcount: i64,
    /// `MSS`: TCP maximum segment size to set.
    pub mss: Option<i64>,
    /// `nodelay`: TCP_NODELAY on the data sockets.
    pub nodelay: bool,
    /// `parallel`: number of streams per direction.
    pub parallel: i64,
    /// `reverse`: the server sends.
    pub reverse: bool,
    /// `bidirectional`: both sides send (2 × `parallel` streams).
    pub bidirectional: bool,
    /// `mptcp`: use Multipath TCP (3.19+).
    pub mptcp: bool,
    /// `window`: socket buffer size in bytes.
    pub window: Option<i64>,
    /// `len`: block size (TCP) or datagram payload size (UDP).
    pub len: i64,
    /// `bandwidth`: target bits/s per stream; 0 = unlimited and not sent.
    pub bandwidth: i64,
    /// `fqrate`: kernel fair-queue pacing in bits/s; 0 = off and not sent.
    pub fqrate: i64,
    /// `pacing_timer`: throttle timer in µs (iperf3 always sends 1000).
    pub pacing_timer: Option<i64>,
    /// `burst`: blocks sent back-to-back per throttle check.
    pub burst: Option<i64>,
    /// `gso`: UDP segmentation offload on (3.21+).
    pub gso: Option<i64>,
    /// `gso_dg_size`: GSO datagram size (3.21+).
    pub gso_dg_size: Option<i64>,
    /// `gso_bf_size`: GSO buffer size (3.21+).
    pub gso_bf_size: Option<i64>,
    /// `gro`: UDP receive offload on (3.21+).
    pub gro: Option<i64>,
    /// `gro_bf_size`: GRO buffer size (3.21+).
    pub gro_bf_size: Option<i64>,
    /// `TOS`: the full IP TOS byte (DSCP << 2).
    pub tos: Option<i64>,
    /// `flowlabel`: IPv6 flow label.
    pub flowlabel: Option<i64>,
    /// `title`: echoed into the JSON output.
    pub title: Option<String>,
    /// `extra_data`: echoed into the JSON output.
    pub extra_data: Option<String>,
    /// `congestion`: requested TCP congestion control algorithm.
    pub congestion: Option<String>,
    /// `congestion_used`: algorithm actually in use (rarely sent).
    pub congestion_used: Option<String>,
    /// `get_server_output`: ask the server to return its report.
    pub get_server_output: bool,
    /// `udp_counters_64bit`: 64-bit UDP sequence numbers.
    pub udp_counters_64bit: bool,
    /// `repeating_payload`: filler `0123456789…` instead of random bytes.
    pub repeating_payload: bool,
    /// `zerocopy`: the sender uses sendfile.
    pub zerocopy: bool,
    /// `dont_fragment`: set DF on UDP over IPv4.
    pub dont_fragment: bool,
    /// `authtoken`: Base64 RSA-encrypted credentials (spec §10).
    pub authtoken: Option<String>,
    /// `skip_rx_copy`: the receiver discards data with MSG_TRUNC (3.19+).
    pub skip_rx_copy: bool,
    /// `client_version`: informational, e.g. `"3.12"`; always sent, empty if
    /// a peer left it out.
    pub client_version: String,
    /// `plumb`: extensions understood only by plumb peers; iperf3 ignores the key.
    pub plumb: Option<PlumbParams>,
}

impl Default for TestParams {
    /// iperf3's client defaults: TCP, 10 s, one stream, 128 KiB blocks,
    /// 1000 µs pacing timer, no client version yet.
    fn default() -> TestParams {
        TestParams {
            protocol: Protocol::Tcp,
            omit: 0,
            server_affinity: None,
            time: 10,
            num: 0,
            blockcount: 0,
            mss: None,
            nodelay: false,
            parallel: 1,
            reverse: false,
            bidirectional: false,
            mptcp: false,
            window: None,
            len: DEFAULT_TCP_LEN,
            bandwidth: 0,
            fqrate: 0,
            pacing_timer: Some(DEFAULT_PACING_TIMER),
            burst: None,
            gso: None,
            gso_dg_size: None,
            gso_bf_size: None,
            gro: None,
            gro_bf_size: None,
            tos: None,
            flowlabel: None,
            title: None,
            extra_data: None,
            congestion: None,
            congestion_used: None,
            get_server_output: false,
            udp_counters_64bit: false,
            repeating_payload: false,
            zerocopy: false,
            dont_fragment: false,
            authtoken: None,
            skip_rx_copy: false,
            client_version: String::new(),
            plumb: None,
        }
    }
}

/// plumb↔plumb parameters, sent under the key `"plumb"`.
///
/// Every field has a default and unknown keys are ignored, so plumb versions
/// can add fields without breaking each other. If the object does not parse
/// at all it is dropped (the test then runs as a plain iperf3 test).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PlumbParams {
    /// The sending plumb's version.
    pub version: String,
    /// Receiver TCP_WINDOW_CLAMP in bytes (caps the advertised window only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rwin: Option<u32>,
    /// Sender SO_SNDBUF in bytes (unlike `window`, not applied to the receiver).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sndbuf: Option<u32>,
    /// Receiver discards data without copying it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub skip_rx_copy: bool,
    /// A request/response test instead of a throughput test (`--rr`, `--crr`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rr: Option<crate::rr::RrParams>,
    /// The client opens a latency probe connection before its data streams (`--latency`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub latency: bool,
}

/// A parameter outside the range the post-3.21 iperf3 server accepts (spec §4).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParamError {
    /// `omit` outside 0..=600 s (iperf3 error 12).
    #[error("omit of {0} s is outside 0..=600")]
    Omit(i64),
    /// `time` outside 0..=86400 s (iperf3 error 5).
    #[error("time of {0} s is outside 0..=86400")]
    Time(i64),
    /// `MSS` outside 0..=32767 (iperf3 error 10).
    #[error("MSS of {0} bytes is outside 0..=32767")]
    Mss(i64),
    /// `parallel` outside 1..=128 (iperf3 error 6).
    #[error("parallel of {0} streams is outside 1..=128")]
    Parallel(i64),
    /// `window` outside 0..=512 MiB (iperf3 error 8).
    #[error("window of {0} bytes is outside 0..=536870912")]
    Window(i64),
    /// TCP/SCTP `len` outside 1..=1 MiB (iperf3 error 7).
    #[error("block length of {0} bytes is outside 1..=1048576")]
    Len(i64),
    /// UDP `len` outside 16..=65507 (iperf3 error 20).
    #[error("UDP datagram length of {0} bytes is outside 16..=65507")]
    UdpLen(i64),
    /// `burst` outside 1..=1000 (iperf3 error 15).
    #[error("burst of {0} blocks is outside 1..=1000")]
    Burst(i64),
    /// `TOS` outside 0..=255 (iperf3 error 21).
    #[error("TOS of {0} is outside 0..=255")]
    Tos(i64),
    /// `flowlabel` outside 0..=0xFFFFF (iperf3 error 127).
    #[error("flow label of {0} is outside 0..=1048575")]
    FlowLabel(i64),
    /// A number with no range of its own is negative (iperf3 error 114).
    #[error("{key} of {value} is negative")]
    Negative {
        /// The JSON key.
        key: &'static str,
        /// Its value.
        value: i64,
    },
}

impl ParamError {
    /// The iperf3 error code a server puts in its SERVER_ERROR reply.
    pub fn code(&self) -> i32 {
        match self {
            ParamError::Omit(_) => 12,
            ParamError::Time(_) => 5,
            ParamError::Mss(_) => 10,
            ParamError::Parallel(_) => 6,
            ParamError::Window(_) => 8,
            ParamError::Len(_) => 7,
            ParamError::UdpLen(_) => 20,
            ParamError::Burst(_) => 15,
            ParamError::Tos(_) => 21,
            ParamError::FlowLabel(_) => 127,
            ParamError::Negative { .. } => 114,
        }
    }
}

fn check(
    value: i64,
    range: std::ops::RangeInclusive<i64>,
    err: fn(i64) -> ParamError,
) -> Result<(), ParamError> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(err(value))
    }
}

impl TestParams {
    /// Checks every range the post-3.21 iperf3 server checks.
    ///
    /// Numbers with a range of their own report that range's code even when
    /// negative; the rest report 114 when negative. Releases up to 3.21 check
    /// nothing, but a client should stay inside these limits anyway.
    pub fn validate(&self) -> Result<(), ParamError> {
        check(self.omit, 0..=600, ParamError::Omit)?;
        check(self.time, 0..=86_400, ParamError::Time)?;
        if let Some(mss) = self.mss {
            check(mss, 0..=32_767, ParamError::Mss)?;
        }
        check(self.parallel, 1..=128, ParamError::Parallel)?;
        if let Some(window) = self.window {
            check(window, 0..=512 * 1024 * 1024, ParamError::Window)?;
        }
        match self.protocol {
            Protocol::Udp => check(self.len, UDP_LEN, ParamError::UdpLen)?,
            Protocol::Tcp | Protocol::Sctp => check(self.len, 1..=1024 * 1024, ParamError::Len)?,
        }
        if let Some(burst) = self.burst {
            check(burst, 1..=1000, ParamError::Burst)?;
        }
        if let Some(tos) = self.tos {
            check(tos, 0..=255, ParamError::Tos)?;
        }
        if let Some(label) = self.flowlabel {
            check(label, 0..=0xF_FFFF, ParamError::FlowLabel)?;
        }
        let others = [
            ("num", Some(self.num)),
            ("blockcount", Some(self.blockcount)),
            ("bandwidth", Some(self.bandwidth)),
            ("fqrate", Some(self.fqrate)),
            ("pacing_timer", self.pacing_timer),
            ("server_affinity", self.server_affinity),
            ("gso", self.gso),
            ("gso_dg_size", self.gso_dg_size),
            ("gso_bf_size", self.gso_bf_size),
            ("gro", self.gro),
            ("gro_bf_size", self.gro_bf_size),
        ];
        for (key, value) in others {
            if let Some(value) = value.filter(|v| *v < 0) {
                return Err(ParamError::Negative { key, value });
            }
        }
        Ok(())
    }

    /// Parses the parameters from a JSON object (tolerantly, see the module docs).
    pub fn from_object(map: &Map<String, Value>) -> TestParams {
        let mut p = TestParams {
            // Optional keys that iperf3 happens to send by default still read
            // as unset when absent, so decoding is the inverse of encoding.
            pacing_timer: None,
            ..TestParams::default()
        };
        // iperf3 checks the keys in this order and the last one present wins.
        for protocol in [Protocol::Tcp, Protocol::Udp, Protocol::Sctp] {
            if flag(map, protocol.key()) {
                p.protocol = protocol;
            }
        }
        set_int(map, "omit", &mut p.omit);
        // iperf3 sends -1 for "not asked": a negative CPU is no request.
        p.server_affinity = int(map, "server_affinity").filter(|c| *c >= 0);
        set_int(map, "time", &mut p.time);
        set_int(map, "num", &mut p.num);
        set_int(map, "blockcount", &mut p.blockcount);
        p.mss = int(map, "MSS");
        p.nodelay = flag(map, "nodelay");
        set_int(map, "parallel", &mut p.parallel);
        p.reverse = flag(map, "reverse");
        p.bidirectional = flag(map, "bidirectional");
        p.mptcp = flag(map, "mptcp");
        p.window = int(map, "window");
        set_int(map, "len", &mut p.len);
        set_int(map, "bandwidth", &mut p.bandwidth);
        set_int(map, "fqrate", &mut p.fqrate);
        p.pacing_timer = int(map, "pacing_timer");
        p.burst = int(map, "burst");
        p.gso = int(map, "gso");
        p.gso_dg_size = int(map, "gso_dg_size");
        p.gso_bf_size = int(map, "gso_bf_size");
        p.gro = int(map, "gro");
        p.gro_bf_size = int(map, "gro_bf_size");
        p.tos = int(map, "TOS");
        p.flowlabel = int(map, "flowlabel");
        p.title = string(map, "title");
        p.extra_data = string(map, "extra_data");
        p.congestion = string(map, "congestion");
        p.congestion_used = string(map, "congestion_used");
        p.get_server_output = flag(map, "get_server_output");
        p.udp_counters_64bit = flag(map, "udp_counters_64bit");
        p.repeating_payload = flag(map, "repeating_payload");
        p.zerocopy = flag(map, "zerocopy");
        p.dont_fragment = flag(map, "dont_fragment");
        p.authtoken = string(map, "authtoken");
        p.skip_rx_copy = flag(map, "skip_rx_copy");
        p.client_version = string(map, "client_version").unwrap_or_default();
        p.plumb = map
            .get("plumb")
            .and_then(|v| PlumbParams::deserialize(v).ok());
        p
    }
}

fn number(n: &Number) -> i64 {
    if let Some(i) = n.as_i64() {
        i
    } else if let Some(u) = n.as_u64() {
        int_from_u64(u)
    } else {
        n.as_f64().map_or(0, int_from_f64)
    }
}

fn int(map: &Map<String, Value>, key: &str) -> Option<i64> {
    match map.get(key)? {
        Value::Number(n) => Some(number(n)),
        _ => None,
    }
}

fn set_int(map: &Map<String, Value>, key: &str, field: &mut i64) {
    if let Some(v) = int(map, key) {
        *field = v;
    }
}

fn flag(map: &Map<String, Value>, key: &str) -> bool {
    match map.get(key) {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64() != Some(0.0),
        Some(Value::String(_) | Value::Array(_) | Value::Object(_)) => true,
    }
}

fn string(map: &Map<String, Value>, key: &str) -> Option<String> {
    match map.get(key)? {
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// The wire shape: field order is emission order, and `None` is "not sent".
#[derive(Serialize)]
struct Wire<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    tcp: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    udp: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sctp: Option<bool>,
    omit: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_affinity: Option<i64>,
    time: i64,
    num: i64,
    blockcount: i64,
    #[serde(rename = "MSS", skip_serializing_if = "Option::is_none")]
    mss: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nodelay: Option<bool>,
    parallel: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    reverse: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bidirectional: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mptcp: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    window: Option<i64>,
    len: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    bandwidth: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fqrate: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pacing_timer: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    burst: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gso: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gso_dg_size: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gso_bf_size: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gro: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gro_bf_size: Option<i64>,
    #[serde(rename = "TOS", skip_serializing_if = "Option::is_none")]
    tos: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flowlabel: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra_data: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    congestion: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    congestion_used: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    get_server_output: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    udp_counters_64bit: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    repeating_payload: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    zerocopy: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dont_fragment: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    authtoken: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    skip_rx_copy: Option<u8>,
    client_version: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    plumb: Option<&'a PlumbParams>,
}

/// A `true` flag, or nothing: never send a flag that is off (≤3.17 servers
/// would read `false` as on).
fn as_true(on: bool) -> Option<bool> {
    on.then_some(true)
}

/// The flags iperf3 sends as the number 1.
fn as_one(on: bool) -> Option<u8> {
    on.then_some(1)
}

fn non_zero(v: i64) -> Option<i64> {
    (v != 0).then_some(v)
}

impl Serialize for TestParams {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Wire {
            tcp: as_true(self.protocol == Protocol::Tcp),
            udp: as_true(self.protocol == Protocol::Udp),
            sctp: as_true(self.protocol == Protocol::Sctp),
            omit: self.omit,
            server_affinity: self.server_affinity,
            time: self.time,
            num: self.num,
            blockcount: self.blockcount,
            mss: self.mss,
            nodelay: as_true(self.nodelay),
            parallel: self.parallel,
            reverse: as_true(self.reverse),
            bidirectional: as_true(self.bidirectional),
            mptcp: as_true(self.mptcp),
            window: self.window,
            len: self.len,
            bandwidth: non_zero(self.bandwidth),
            fqrate: non_zero(self.fqrate),
            pacing_timer: self.pacing_timer,
            burst: self.burst,
            gso: self.gso,
            gso_dg_size: self.gso_dg_size,
            gso_bf_size: self.gso_bf_size,
            gro: self.gro,
            gro_bf_size: self.gro_bf_size,
            tos: self.tos,
            flowlabel: self.flowlabel,
            title: self.title.as_deref(),
            extra_data: self.extra_data.as_deref(),
            congestion: self.congestion.as_deref(),
            congestion_used: self.congestion_used.as_deref(),
            get_server_output: as_one(self.get_server_output),
            udp_counters_64bit: as_one(self.udp_counters_64bit),
            repeating_payload: as_one(self.repeating_payload),
            zerocopy: as_one(self.zerocopy),
            dont_fragment: as_one(self.dont_fragment),
            authtoken: self.authtoken.as_deref(),
            skip_rx_copy: as_one(self.skip_rx_copy),
            client_version: &self.client_version,
            plumb: self.plumb.as_ref(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for TestParams {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<TestParams, D::Error> {
        Map::<String, Value>::deserialize(deserializer).map(|map| TestParams::from_object(&map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{self, captured_params};
    use crate::framing::encode_json;
    use proptest::prelude::*;

    fn decode(json: &str) -> TestParams {
        serde_json::from_str(json).expect("decodes")
    }

    fn encode(params: &TestParams) -> String {
        String::from_utf8(encode_json(params, "parameters").expect("encodes")).expect("UTF-8")
    }

    #[test]
    fn encodes_the_captured_tcp_parameters_byte_for_byte() {
        assert_eq!(encode(&captured_params()), capture::PARAMS);
    }

    #[test]
    fn decodes_the_captured_parameters() {
        assert_eq!(decode(capture::PARAMS), captured_params());
    }

    #[test]
    fn every_key_in_emission_order_with_its_type() {
        let params = TestParams {
            protocol: Protocol::Udp,
            omit: 1,
            server_affinity: Some(2),
            time: 3,
            num: 4,
            blockcount: 5,
            mss: Some(1400),
            nodelay: true,
            parallel: 2,
            reverse: true,
            bidirectional: true,
            mptcp: true,
            window: Some(65536),
            len: 1460,
            bandwidth: 1_048_576,
            fqrate: 1000,
            pacing_timer: Some(1000),
            burst: Some(10),
            gso: Some(0),
            gso_dg_size: Some(0),
            gso_bf_size: Some(65507),
            gro: Some(0),
            gro_bf_size: Some(65507),
            tos: Some(184),
            flowlabel: Some(7),
            title: Some("t".into()),
            extra_data: Some("x".into()),
            congestion: Some("bbr".into()),
            congestion_used: Some("cubic".into()),
            get_server_output: true,
            udp_counters_64bit: true,
            repeating_payload: true,
            zerocopy: true,
            dont_fragment: true,
            authtoken: Some("abc=".into()),
            skip_rx_copy: true,
            client_version: "3.21+".into(),
            plumb: Some(PlumbParams {
                version: "0.1.0".into(),
                rwin: Some(1 << 20),
                sndbuf: None,
                skip_rx_copy: true,
                ..PlumbParams::default()
            }),
        };
        let expected = concat!(
            r#"{"udp":true,"omit":1,"server_affinity":2,"time":3,"num":4,"blockcount":5,"MSS":1400,"#,
            r#""nodelay":true,"parallel":2,"reverse":true,"bidirectional":true,"mptcp":true,"#,
            r#""window":65536,"len":1460,"bandwidth":1048576,"fqrate":1000,"pacing_timer":1000,"#,
            r#""burst":10,"gso":0,"gso_dg_size":0,"gso_bf_size":65507,"gro":0,"gro_bf_size":65507,"#,
            r#""TOS":184,"flowlabel":7,"title":"t","extra_data":"x","congestion":"bbr","#,
            r#""congestion_used":"cubic","get_server_output":1,"udp_counters_64bit":1,"#,
            r#""repeating_payload":1,"zerocopy":1,"dont_fragment":1,"authtoken":"abc=","#,
            r#""skip_rx_copy":1,"client_version":"3.21+","#,
            r#""plumb":{"version":"0.1.0","rwin":1048576,"skip_rx_copy":true}}"#
        );
        assert_eq!(encode(&params), expected);
        assert_eq!(decode(expected), params);
    }

    #[test]
    fn flags_that_are_off_are_never_sent() {
        let json = encode(&TestParams::default());
        for key in [
            "nodelay",
            "reverse",
            "bidirectional",
            "mptcp",
            "get_server_output",
            "zerocopy",
            "udp_counters_64bit",
            "repeating_payload",
            "dont_fragment",
            "skip_rx_copy",
            "bandwidth",
            "fqrate",
            "udp",
            "sctp",
            "false",
        ] {
            assert!(!json.contains(key), "{key} in {json}");
        }
    }

    #[test]
    fn flags_accept_booleans_numbers_and_presence() {
        let on = [
            r#"true"#, r#"1"#, r#"2.5"#, r#""yes""#, r#"[]"#, r#"{}"#, "-1",
        ];
        let off = [r#"false"#, r#"0"#, r#"0.0"#, r#"null"#];
        for value in on {
            let p = decode(&format!(r#"{{"reverse":{value},"zerocopy":{value}}}"#));
            assert!(p.reverse && p.zerocopy, "{value}");
        }
        for value in off {
            let p = decode(&format!(r#"{{"reverse":{value},"zerocopy":{value}}}"#));
            assert!(!p.reverse && !p.zerocopy, "{value}");
        }
        assert!(!decode("{}").reverse);
    }

    #[test]
    fn protocol_key_last_in_iperf3_order_wins() {
        assert_eq!(decode("{}").protocol, Protocol::Tcp);
        assert_eq!(decode(r#"{"udp":true}"#).protocol, Protocol::Udp);
        assert_eq!(decode(r#"{"sctp":1,"tcp":true}"#).protocol, Protocol::Sctp);
        assert_eq!(decode(r#"{"tcp":true,"udp":true}"#).protocol, Protocol::Udp);
        assert_eq!(decode(r#"{"udp":false}"#).protocol, Protocol::Tcp);
    }

    #[test]
    fn numbers_are_read_leniently() {
        let p = decode(
            r#"{"time":2.9,"parallel":4.0,"MSS":18446744073709551615,"window":-3,"len":1e3,"burst":"5","title":7,"pacing_timer":null}"#,
        );
        assert_eq!(p.time, 2);
        assert_eq!(p.parallel, 4);
        assert_eq!(p.mss, Some(-1));
        assert_eq!(p.window, Some(-3));
        assert_eq!(p.len, 1000);
        // Wrongly typed keys are ignored, as 3.18+ servers do.
        assert_eq!(p.burst, None);
        assert_eq!(p.title, None);
        assert_eq!(p.pacing_timer, None);
    }

    #[test]
    fn absent_keys_take_defaults_and_unknown_keys_are_ignored() {
        let p = decode(r#"{"udp":true,"whatever":{"deep":[1,2]},"len":1460}"#);
        assert_eq!(p.time, 10);
        assert_eq!(p.parallel, 1);
        assert_eq!(p.len, 1460);
        assert_eq!(p.client_version, "");
        assert_eq!(p.pacing_timer, None);
    }

    #[test]
    fn wrong_top_level_type_is_an_error() {
        assert!(serde_json::from_str::<TestParams>("[1,2]").is_err());
        assert!(serde_json::from_str::<TestParams>("\"tcp\"").is_err());
    }

    #[test]
    fn plumb_object_is_tolerant() {
        let p = decode(r#"{"plumb":{"version":"9.0","rwin":4096,"future":[1],"sndbuf":8192}}"#);
        assert_eq!(
            p.plumb,
            Some(PlumbParams {
                version: "9.0".into(),
                rwin: Some(4096),
                sndbuf: Some(8192),
                skip_rx_copy: false,
                ..PlumbParams::default()
            })
        );
        // Missing fields default; an unusable object is dropped, not fatal.
        assert_eq!(
            decode(r#"{"plumb":{}}"#).plumb,
            Some(PlumbParams::default())
        );
        assert_eq!(decode(r#"{"plumb":{"rwin":"big"}}"#).plumb, None);
        assert_eq!(decode(r#"{"plumb":3,"time":4}"#).time, 4);
    }

    #[test]
    #[allow(
        clippy::too_many_lines,
        reason = "a table of out-of-range parameters, each with the iperf3 code and message it must give"
    )]
    fn validate_reports_iperf3_codes_and_the_value() {
        let base = captured_params();
        assert_eq!(base.validate(), Ok(()));
        let udp = TestParams {
            protocol: Protocol::Udp,
            len: 1460,
            ..base.clone()
        };
        assert_eq!(udp.validate(), Ok(()));
        let cases: Vec<(TestParams, i32, &str)> = vec![
            (
                TestParams {
                    omit: 601,
                    ..base.clone()
                },
                12,
                "omit of 601 s is outside 0..=600",
            ),
            (
                TestParams {
                    omit: -1,
                    ..base.clone()
                },
                12,
                "omit of -1",
            ),
            (
                TestParams {
                    time: 86_401,
                    ..base.clone()
                },
                5,
                "time of 86401 s",
            ),
            (
                TestParams {
                    mss: Some(32_768),
                    ..base.clone()
                },
                10,
                "MSS of 32768",
            ),
            (
                TestParams {
                    parallel: 0,
                    ..base.clone()
                },
                6,
                "parallel of 0 streams",
            ),
            (
                TestParams {
                    parallel: 129,
                    ..base.clone()
                },
                6,
                "parallel of 129",
            ),
            (
                TestParams {
                    window: Some(512 * 1024 * 1024 + 1),
                    ..base.clone()
                },
                8,
                "window of 536870913",
            ),
            (
                TestParams {
                    len: 0,
                    ..base.clone()
                },
                7,
                "block length of 0",
            ),
            (
                TestParams {
                    len: 1024 * 1024 + 1,
                    ..base.clone()
                },
                7,
                "block length of 1048577",
            ),
            (
                TestParams {
                    len: 15,
                    ..udp.clone()
                },
                20,
                "UDP datagram length of 15",
            ),
            (
                TestParams {
                    len: 65_508,
                    ..udp.clone()
                },
                20,
                "UDP datagram length of 65508",
            ),
            (
                TestParams {
                    burst: Some(0),
                    ..base.clone()
                },
                15,
                "burst of 0",
            ),
            (
                TestParams {
                    burst: Some(1001),
                    ..base.clone()
                },
                15,
                "burst of 1001",
            ),
            (
                TestParams {
                    tos: Some(256),
                    ..base.clone()
                },
                21,
                "TOS of 256",
            ),
            (
                TestParams {
                    flowlabel: Some(0x10_0000),
                    ..base.clone()
                },
                127,
                "flow label of 1048576",
            ),
            (
                TestParams {
                    bandwidth: -5,
                    ..base.clone()
                },
                114,
                "bandwidth of -5 is negative",
            ),
            (
                TestParams {
                    num: -1,
                    ..base.clone()
                },
                114,
                "num of -1 is negative",
            ),
            (
                TestParams {
                    gro_bf_size: Some(-2),
                    ..base.clone()
                },
                114,
                "gro_bf_size of -2",
            ),
        ];
        for (params, code, message) in cases {
            let err = params.validate().expect_err(message);
            assert_eq!(err.code(), code, "{err}");
            assert!(err.to_string().starts_with(message), "{err} vs {message}");
        }
        // Edges that are allowed.
        let edges = TestParams {
            omit: 600,
            time: 86_400,
            mss: Some(32_767),
            parallel: 128,
            window: Some(512 * 1024 * 1024),
            len: 1024 * 1024,
            burst: Some(1000),
            tos: Some(255),
            flowlabel: Some(0xF_FFFF),
            ..base
        };
        assert_eq!(edges.validate(), Ok(()));
    }

    fn opt_int() -> impl Strategy<Value = Option<i64>> {
        proptest::option::of(any::<i64>())
    }

    fn opt_text() -> impl Strategy<Value = Option<String>> {
        proptest::option::of(any::<String>())
    }

    prop_compose! {
        fn arb_params()(
            protocol in prop_oneof![Just(Protocol::Tcp), Just(Protocol::Udp), Just(Protocol::Sctp)],
            ints in proptest::array::uniform8(any::<i64>()),
            opts in proptest::array::uniform14(opt_int()),
            flags in proptest::array::uniform10(any::<bool>()),
            texts in (opt_text(), opt_text(), opt_text(), opt_text(), opt_text()),
            client_version in any::<String>(),
            plumb in proptest::option::of((any::<String>(), proptest::option::of(any::<u32>()),
                                           proptest::option::of(any::<u32>()), any::<bool>())),
        ) -> TestParams {
            TestParams {
                protocol,
                omit: ints[0],
                // Decoding reads a negative CPU as not asked.
                server_affinity: opts[0].filter(|c| *c >= 0),
                time: ints[1],
                num: ints[2],
                blockcount: ints[3],
                mss: opts[1],
                nodelay: flags[0],
                parallel: ints[4],
                reverse: flags[1],
                bidirectional: flags[2],
                mptcp: flags[3],
                window: opts[2],
                len: ints[5],
                bandwidth: ints[6],
                fqrate: ints[7],
                pacing_timer: opts[3],
                burst: opts[4],
                gso: opts[5],
                gso_dg_size: opts[6],
                gso_bf_size: opts[7],
                gro: opts[8],
                gro_bf_size: opts[9],
                tos: opts[10],
                flowlabel: opts[11],
                title: texts.0,
                extra_data: texts.1,
                congestion: texts.2,
                congestion_used: texts.3,
                get_server_output: flags[4],
                udp_counters_64bit: flags[5],
                repeating_payload: flags[6],
                zerocopy: flags[7],
                dont_fragment: flags[8],
                authtoken: texts.4,
                skip_rx_copy: flags[9],
                client_version,
                plumb: plumb.map(|(version, rwin, sndbuf, skip_rx_copy)| PlumbParams {
                    version, rwin, sndbuf, skip_rx_copy, ..PlumbParams::default()
                }),
            }
        }
    }

    proptest! {
        #[test]
        fn encode_decode_round_trip(params in arb_params()) {
            let json = encode_json(&params, "parameters").expect("encodes");
            let back: TestParams = serde_json::from_slice(&json).expect("decodes");
            prop_assert_eq!(back, params);
        }
    }
}
