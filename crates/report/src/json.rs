//! iperf3's `-J` document: `start`, `intervals`, `end` (and `error`), so that a
//! parser written for iperf3 reads plumb's output unchanged, and the same
//! records as `--json-stream` events, one line each. plumb's extra evidence
//! goes under one extra key, `end.plumb`, which such parsers ignore.

use std::io::Write;

use serde_json::{json, Map, Value};

use crate::record::*;
use crate::Sink;

/// Collects a test's record and writes one JSON document on [`Sink::finish`].
pub struct JsonSink<W: Write> {
    out: W,
    start: Option<Value>,
    title: Option<String>,
    extra_data: Option<String>,
    intervals: Vec<Value>,
    end: Option<Value>,
    server_output: Option<(&'static str, Value)>,
    error: Option<String>,
}

impl<W: Write> JsonSink<W> {
    /// A sink writing the document to `out`.
    pub fn new(out: W) -> Self {
        JsonSink {
            out,
            start: None,
            title: None,
            extra_data: None,
            intervals: Vec::new(),
            end: None,
            server_output: None,
            error: None,
        }
    }

    /// The document as it stands (also used for `server_output_json`).
    pub fn document(&self) -> Value {
        let mut top = Map::new();
        top.insert(
            "start".into(),
            self.start.clone().unwrap_or_else(|| json!({})),
        );
        top.insert("intervals".into(), Value::Array(self.intervals.clone()));
        top.insert("end".into(), self.end.clone().unwrap_or_else(|| json!({})));
        if let Some(t) = &self.title {
            top.insert("title".into(), json!(t));
        }
        if let Some(x) = &self.extra_data {
            top.insert("extra_data".into(), json!(x));
        }
        if let Some((k, v)) = &self.server_output {
            top.insert((*k).into(), v.clone());
        }
        if let Some(e) = &self.error {
            top.insert("error".into(), json!(e));
        }
        Value::Object(top)
    }

    /// Gives back the writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

impl<W: Write> Sink for JsonSink<W> {
    fn start(&mut self, s: &StartRecord) {
        self.title.clone_from(&s.title);
        self.extra_data.clone_from(&s.extra_data);
        self.start = Some(start_json(s));
    }
    fn interval(&mut self, i: &IntervalRecord) {
        self.intervals.push(interval_json(i));
    }
    fn end(&mut self, e: &EndRecord) {
        if let Some(t) = &e.server_output_text {
            self.server_output = Some(("server_output_text", json!(t)));
        }
        if let Some(j) = &e.server_output_json {
            self.server_output = Some(("server_output_json", j.clone()));
        }
        self.end = Some(end_json(e));
    }
    fn error(&mut self, msg: &str) {
        // iperf3 keeps the first error; later ones are consequences.
        if self.error.is_none() {
            self.error = Some(msg.to_string());
        }
    }
    fn finish(&mut self) -> std::io::Result<()> {
        let doc = self.document();
        let text = serde_json::to_string_pretty(&doc).map_err(std::io::Error::other)?;
        writeln!(self.out, "{text}")?;
        self.out.flush()
    }
}

/// `--json-stream` (iperf3 3.17+): one JSON object per line as each record
/// arrives, `{"event":E,"data":…}` with E = `start`, `interval`, `error`,
/// `server_output_text`/`server_output_json`, and always a closing `end`
/// (with empty data when the test never ended), so a reader following the
/// stream sees every result the moment it exists.
pub struct JsonStreamSink<W: Write> {
    out: W,
    ended: bool,
    /// Write errors (a closed pipe) end printing, not the test.
    broken: bool,
}

impl<W: Write> JsonStreamSink<W> {
    /// A sink writing events to `out`, each line flushed.
    pub fn new(out: W) -> Self {
        JsonStreamSink {
            out,
            ended: false,
            broken: false,
        }
    }

    /// Gives back the writer.
    pub fn into_inner(self) -> W {
        self.out
    }

    fn event(&mut self, event: &str, data: Value) {
        if self.broken {
            return;
        }
        let line = json!({"event": event, "data": data});
        self.broken = !(writeln!(self.out, "{line}").is_ok() && self.out.flush().is_ok());
    }
}

impl<W: Write> Sink for JsonStreamSink<W> {
    fn start(&mut self, s: &StartRecord) {
        self.event("start", start_json(s));
    }
    fn interval(&mut self, i: &IntervalRecord) {
        self.event("interval", interval_json(i));
    }
    fn end(&mut self, e: &EndRecord) {
        if let Some(t) = &e.server_output_text {
            self.event("server_output_text", json!(t));
        }
        if let Some(j) = &e.server_output_json {
            self.event("server_output_json", j.clone());
        }
        self.event("end", end_json(e));
        self.ended = true;
    }
    fn error(&mut self, msg: &str) {
        self.event("error", json!(msg));
    }
    fn finish(&mut self) -> std::io::Result<()> {
        if !self.ended {
            self.event("end", json!({}));
            self.ended = true;
        }
        Ok(())
    }
}

/// Reassembles a `--json-stream` log (plumb's or iperf3's) into the `-J`
/// document it stands for, so tools that read saved documents read a saved
/// stream too. `None` unless every non-blank line is an event object.
pub fn document_from_events(text: &str) -> Option<Value> {
    let mut top = Map::new();
    let mut intervals = Vec::new();
    let mut any = false;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).ok()?;
        let event = v.get("event")?.as_str()?;
        let data = v.get("data")?.clone();
        any = true;
        match event {
            "interval" => intervals.push(data),
            // iperf3 closes an aborted stream with an empty end.
            "end" if data.as_object().is_some_and(Map::is_empty) => {}
            // The first error is the cause, as in a -J document.
            "error" if top.contains_key("error") => {}
            other => {
                top.insert(other.to_string(), data);
            }
        }
    }
    if !any {
        return None;
    }
    top.entry("start").or_insert_with(|| json!({}));
    top.insert("intervals".into(), Value::Array(intervals));
    top.entry("end").or_insert_with(|| json!({}));
    Some(Value::Object(top))
}

/// `Sun, 22 Nov 2026 02:38:32 GMT` for a Unix time (RFC 7231 IMF-fixdate).
pub fn http_date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days, Howard Hinnant's algorithm (public domain description).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    const WD: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MON: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        WD[(days.rem_euclid(7)) as usize],
        day,
        MON[(month - 1) as usize],
        year,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn start_json(s: &StartRecord) -> Value {
    let mut m = Map::new();
    m.insert(
        "connected".into(),
        Value::Array(
            s.connected
                .iter()
                .map(|c| {
                    json!({"socket": c.socket, "local_host": c.local_host, "local_port": c.local_port,
                           "remote_host": c.remote_host, "remote_port": c.remote_port})
                })
                .collect(),
        ),
    );
    m.insert("version".into(), json!(s.version));
    m.insert("system_info".into(), json!(s.system_info));
    m.insert(
        "timestamp".into(),
        json!({"time": http_date(s.timesecs), "timesecs": s.timesecs,
               "timemillisecs": s.timesecs * 1000 + u64::from(s.timemillis)}),
    );
    if let Some((h, p)) = &s.connecting_to {
        m.insert("connecting_to".into(), json!({"host": h, "port": p}));
    }
    if let Some((h, p)) = &s.accepted_connection {
        m.insert("accepted_connection".into(), json!({"host": h, "port": p}));
    }
    m.insert("cookie".into(), json!(s.cookie));
    if s.test.protocol == Protocol::Tcp {
        if let Some(mss) = s.tcp_mss {
            m.insert("tcp_mss".into(), json!(mss));
        } else if let Some(mss) = s.tcp_mss_default {
            m.insert("tcp_mss_default".into(), json!(mss));
        }
    }
    m.insert("target_bitrate".into(), json!(s.test.target_bitrate));
    m.insert("fq_rate".into(), json!(0));
    m.insert("sock_bufsize".into(), json!(s.sock_bufsize));
    m.insert("sndbuf_actual".into(), json!(s.sndbuf_actual));
    m.insert("rcvbuf_actual".into(), json!(s.rcvbuf_actual));
    let t = &s.test;
    m.insert(
        "test_start".into(),
        json!({"protocol": t.protocol.name(), "num_streams": t.num_streams, "blksize": t.blksize,
               "omit": t.omit, "duration": t.duration, "bytes": t.bytes, "blocks": t.blocks,
               "reverse": u8::from(t.reverse), "tos": t.tos, "target_bitrate": t.target_bitrate,
               "bidir": u8::from(t.bidir), "fqrate": 0, "interval": t.interval}),
    );
    Value::Object(m)
}

fn rate(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    }
}

fn stream_interval_json(s: &StreamInterval) -> Value {
    let secs = s.end - s.start;
    let mut m = Map::new();
    m.insert("socket".into(), json!(s.socket));
    m.insert("start".into(), json!(s.start));
    m.insert("end".into(), json!(s.end));
    m.insert("seconds".into(), json!(secs));
    m.insert("bytes".into(), json!(s.bytes));
    m.insert("bits_per_second".into(), json!(rate(s.bytes, secs)));
    match s.detail {
        IntervalDetail::Tcp(Some(t)) => {
            m.insert("retransmits".into(), json!(t.retransmits));
            m.insert("snd_cwnd".into(), json!(t.snd_cwnd));
            m.insert("snd_wnd".into(), json!(t.snd_wnd));
            m.insert("rtt".into(), json!(t.rtt));
            m.insert("rttvar".into(), json!(t.rttvar));
            m.insert("pmtu".into(), json!(t.pmtu));
            if let Some(l) = t.limited {
                // Not in iperf3's schema: under plumb's own key, as in `end`.
                m.insert(
                    "plumb".into(),
                    json!({
                        "busy_us": l.busy_us,
                        "rwnd_limited_us": l.rwnd_limited_us,
                        "sndbuf_limited_us": l.sndbuf_limited_us,
                    }),
                );
            }
        }
        IntervalDetail::Tcp(None) => {}
        IntervalDetail::UdpSender { packets } => {
            m.insert("packets".into(), json!(packets));
        }
        IntervalDetail::UdpReceiver {
            jitter_ms,
            lost,
            packets,
        } => {
            m.insert("jitter_ms".into(), json!(jitter_ms));
            m.insert("lost_packets".into(), json!(lost));
            m.insert("packets".into(), json!(packets));
            m.insert("lost_percent".into(), json!(percent(lost, packets)));
        }
    }
    m.insert("omitted".into(), json!(s.omitted));
    m.insert("sender".into(), json!(s.sender));
    Value::Object(m)
}

fn percent(lost: i64, packets: i64) -> f64 {
    if packets > 0 {
        100.0 * lost as f64 / packets as f64
    } else {
        0.0
    }
}

fn interval_sum_json(streams: &[&StreamInterval]) -> Value {
    let start = streams
        .iter()
        .map(|s| s.start)
        .fold(f64::INFINITY, f64::min);
    let end = streams.iter().map(|s| s.end).fold(0.0, f64::max);
    let start = if start.is_finite() { start } else { 0.0 };
    let secs = end - start;
    let bytes: u64 = streams.iter().map(|s| s.bytes).sum();
    let mut m = Map::new();
    m.insert("start".into(), json!(start));
    m.insert("end".into(), json!(end));
    m.insert("seconds".into(), json!(secs));
    m.insert("bytes".into(), json!(bytes));
    m.insert("bits_per_second".into(), json!(rate(bytes, secs)));
    let tcp_send: Vec<TcpSample> = streams
        .iter()
        .filter_map(|s| match s.detail {
            IntervalDetail::Tcp(t) => t,
            _ => None,
        })
        .collect();
    if !tcp_send.is_empty() {
        m.insert(
            "retransmits".into(),
            json!(tcp_send.iter().map(|t| t.retransmits).sum::<u64>()),
        );
    }
    let udp_send: u64 = streams
        .iter()
        .filter_map(|s| match s.detail {
            IntervalDetail::UdpSender { packets } => Some(packets),
            _ => None,
        })
        .sum();
    let udp_recv: Vec<(f64, i64, i64)> = streams
        .iter()
        .filter_map(|s| match s.detail {
            IntervalDetail::UdpReceiver {
                jitter_ms,
                lost,
                packets,
            } => Some((jitter_ms, lost, packets)),
            _ => None,
        })
        .collect();
    if !udp_recv.is_empty() {
        let jitter = udp_recv.iter().map(|u| u.0).sum::<f64>() / udp_recv.len() as f64;
        let lost: i64 = udp_recv.iter().map(|u| u.1).sum();
        let packets: i64 = udp_recv.iter().map(|u| u.2).sum();
        m.insert("jitter_ms".into(), json!(jitter));
        m.insert("lost_packets".into(), json!(lost));
        m.insert("packets".into(), json!(packets));
        m.insert("lost_percent".into(), json!(percent(lost, packets)));
    } else if streams
        .iter()
        .any(|s| matches!(s.detail, IntervalDetail::UdpSender { .. }))
    {
        m.insert("packets".into(), json!(udp_send));
    }
    m.insert("omitted".into(), json!(streams.iter().any(|s| s.omitted)));
    m.insert(
        "sender".into(),
        json!(streams.first().is_some_and(|s| s.sender)),
    );
    Value::Object(m)
}

/// Splits streams into the forward group and, in `--bidir`, the reverse group
/// (the local receiving streams), as iperf3 does for `sum` / `sum_bidir_reverse`.
fn groups<T>(items: &[T], bidir: bool, sender: impl Fn(&T) -> bool) -> (Vec<&T>, Vec<&T>) {
    if bidir {
        items.iter().partition(|s| sender(s))
    } else {
        (items.iter().collect(), Vec::new())
    }
}

fn interval_json(i: &IntervalRecord) -> Value {
    let bidir = i.streams.iter().any(|s| s.sender) && i.streams.iter().any(|s| !s.sender);
    let (fwd, rev) = groups(&i.streams, bidir, |s| s.sender);
    let mut m = Map::new();
    m.insert(
        "streams".into(),
        Value::Array(i.streams.iter().map(stream_interval_json).collect()),
    );
    m.insert("sum".into(), interval_sum_json(&fwd));
    if bidir {
        m.insert("sum_bidir_reverse".into(), interval_sum_json(&rev));
    }
    if let Some(p) = &i.plumb {
        m.insert("plumb".into(), p.clone());
    }
    Value::Object(m)
}

fn side_json(
    socket: i32,
    t: Totals,
    sender: bool,
    extra: impl FnOnce(&mut Map<String, Value>),
) -> Value {
    let mut m = Map::new();
    m.insert("socket".into(), json!(socket));
    m.insert("start".into(), json!(0));
    m.insert("end".into(), json!(t.seconds));
    m.insert("seconds".into(), json!(t.seconds));
    m.insert("bytes".into(), json!(t.bytes));
    m.insert("bits_per_second".into(), json!(StreamEnd::rate(t)));
    extra(&mut m);
    m.insert("sender".into(), json!(sender));
    Value::Object(m)
}

fn sum_json(streams: &[&StreamEnd], received: bool, udp: bool) -> Value {
    let seconds = streams
        .iter()
        .map(|s| {
            if received {
                s.received.seconds
            } else {
                s.sent.seconds
            }
        })
        .fold(0.0, f64::max);
    let bytes: u64 = streams
        .iter()
        .map(|s| {
            if received {
                s.received.bytes
            } else {
                s.sent.bytes
            }
        })
        .sum();
    let mut m = Map::new();
    m.insert("start".into(), json!(0));
    m.insert("end".into(), json!(seconds));
    m.insert("seconds".into(), json!(seconds));
    m.insert("bytes".into(), json!(bytes));
    m.insert("bits_per_second".into(), json!(rate(bytes, seconds)));
    if udp {
        let u: Vec<UdpEnd> = streams.iter().filter_map(|s| s.udp).collect();
        let sent: i64 = u.iter().map(|x| x.sent_packets).sum();
        if received {
            let lost: i64 = u.iter().map(|x| x.lost).sum();
            let packets: i64 = u.iter().map(|x| x.packets).sum();
            let jitter = if u.is_empty() {
                0.0
            } else {
                u.iter().map(|x| x.jitter_ms).sum::<f64>() / u.len() as f64
            };
            m.insert("jitter_ms".into(), json!(jitter));
            m.insert("lost_packets".into(), json!(lost));
            m.insert("packets".into(), json!(packets));
            m.insert("lost_percent".into(), json!(percent(lost, packets)));
        } else {
            m.insert("jitter_ms".into(), json!(0));
            m.insert("lost_packets".into(), json!(0));
            m.insert("packets".into(), json!(sent));
            m.insert("lost_percent".into(), json!(0));
        }
        // iperf3: UDP sum_sent is always the sending side, sum_received the receiving.
        m.insert("sender".into(), json!(!received));
    } else {
        if !received {
            let known: Vec<i64> = streams.iter().filter_map(|s| s.retransmits).collect();
            if !known.is_empty() {
                m.insert("retransmits".into(), json!(known.iter().sum::<i64>()));
            }
        }
        m.insert(
            "sender".into(),
            json!(streams.first().is_some_and(|s| s.sender)),
        );
    }
    Value::Object(m)
}

fn udp_stream_json(s: &StreamEnd) -> Value {
    let u = s.udp.unwrap_or_default();
    // iperf3 reports the sender's bytes and duration with the receiver's loss figures.
    side_json(s.socket, s.sent, s.sender, |m| {
        m.insert("jitter_ms".into(), json!(u.jitter_ms));
        m.insert("lost_packets".into(), json!(u.lost));
        m.insert("packets".into(), json!(u.packets));
        m.insert("lost_percent".into(), json!(percent(u.lost, u.packets)));
        m.insert("out_of_order".into(), json!(u.out_of_order));
    })
}

fn end_json(e: &EndRecord) -> Value {
    let udp = e.protocol == Protocol::Udp;
    let mut m = Map::new();
    let streams: Vec<Value> = e
        .streams
        .iter()
        .map(|s| {
            if udp {
                json!({ "udp": udp_stream_json(s) })
            } else {
                let sender = side_json(s.socket, s.sent, s.sender, |m| {
                    if let Some(r) = s.retransmits {
                        m.insert("retransmits".into(), json!(r));
                    }
                    if let Some(t) = s.tcp {
                        m.insert("max_snd_cwnd".into(), json!(t.max_snd_cwnd));
                        m.insert("max_snd_wnd".into(), json!(t.max_snd_wnd));
                        m.insert("max_rtt".into(), json!(t.max_rtt));
                        m.insert("min_rtt".into(), json!(t.min_rtt));
                        m.insert("mean_rtt".into(), json!(t.mean_rtt));
                    }
                });
                let receiver = side_json(s.socket, s.received, s.sender, |_| {});
                json!({ "sender": sender, "receiver": receiver })
            }
        })
        .collect();
    m.insert("streams".into(), Value::Array(streams));
    let (fwd, rev) = groups(&e.streams, e.bidir, |s| s.sender);
    if udp {
        m.insert("sum".into(), sum_json(&fwd, true, true));
    }
    m.insert("sum_sent".into(), sum_json(&fwd, false, udp));
    m.insert("sum_received".into(), sum_json(&fwd, true, udp));
    if e.bidir {
        if udp {
            m.insert("sum_bidir_reverse".into(), sum_json(&rev, true, true));
        }
        m.insert("sum_sent_bidir_reverse".into(), sum_json(&rev, false, udp));
        m.insert(
            "sum_received_bidir_reverse".into(),
            sum_json(&rev, true, udp),
        );
    }
    let c = e.cpu;
    m.insert(
        "cpu_utilization_percent".into(),
        json!({"host_total": c.host_total, "host_user": c.host_user, "host_system": c.host_system,
               "remote_total": c.remote_total, "remote_user": c.remote_user, "remote_system": c.remote_system}),
    );
    if !udp {
        if let Some(cc) = &e.sender_tcp_congestion {
            m.insert("sender_tcp_congestion".into(), json!(cc));
        }
        if let Some(cc) = &e.receiver_tcp_congestion {
            m.insert("receiver_tcp_congestion".into(), json!(cc));
        }
    }
    if let Some(p) = &e.plumb {
        m.insert("plumb".into(), p.clone());
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(http_date(1_795_319_903), "Sun, 22 Nov 2026 03:58:23 GMT");
        assert_eq!(http_date(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
    }

    fn tcp_end(sender: bool, sent: u64, recv: u64) -> StreamEnd {
        StreamEnd {
            socket: 5,
            sender,
            sent: Totals {
                bytes: sent,
                seconds: 2.0,
            },
            received: Totals {
                bytes: recv,
                seconds: 2.0,
            },
            retransmits: Some(3),
            tcp: sender.then_some(TcpEnd::default()),
            udp: None,
        }
    }

    fn end(streams: Vec<StreamEnd>, bidir: bool, protocol: Protocol) -> EndRecord {
        EndRecord {
            protocol,
            bidir,
            streams,
            cpu: CpuUtil::default(),
            sender_tcp_congestion: Some("cubic".into()),
            receiver_tcp_congestion: Some("cubic".into()),
            plumb: Some(json!({"x": 1})),
            server_output_text: None,
            server_output_json: None,
        }
    }

    #[test]
    fn tcp_sums_the_way_iperf3_parsers_read_them() {
        let mut sink = JsonSink::new(Vec::new());
        sink.end(&end(
            vec![tcp_end(true, 1000, 1000), tcp_end(true, 500, 500)],
            false,
            Protocol::Tcp,
        ));
        let d = sink.document();
        assert_eq!(d["end"]["sum_received"]["bytes"], 1500);
        assert_eq!(d["end"]["sum_received"]["bits_per_second"], 6000.0);
        assert_eq!(d["end"]["sum_sent"]["retransmits"], 6);
        assert_eq!(d["end"]["streams"][1]["sender"]["bytes"], 500);
        assert_eq!(d["end"]["plumb"]["x"], 1);
        assert!(d["end"].get("sum_sent_bidir_reverse").is_none());
    }

    #[test]
    fn bidir_splits_directions() {
        let mut sink = JsonSink::new(Vec::new());
        sink.end(&end(
            vec![tcp_end(true, 1000, 1000), tcp_end(false, 700, 700)],
            true,
            Protocol::Tcp,
        ));
        let d = sink.document();
        assert_eq!(d["end"]["sum_received"]["bytes"], 1000);
        assert_eq!(d["end"]["sum_received_bidir_reverse"]["bytes"], 700);
        assert_eq!(d["end"]["sum_sent_bidir_reverse"]["sender"], false);
    }

    #[test]
    fn udp_loss_percent() {
        let mut s = tcp_end(true, 1000, 900);
        s.udp = Some(UdpEnd {
            jitter_ms: 0.5,
            lost: 10,
            packets: 100,
            sent_packets: 100,
            out_of_order: 1,
        });
        let mut sink = JsonSink::new(Vec::new());
        sink.end(&end(vec![s], false, Protocol::Udp));
        let d = sink.document();
        assert_eq!(d["end"]["sum"]["lost_percent"], 10.0);
        assert_eq!(d["end"]["sum_received"]["bytes"], 900);
        assert_eq!(d["end"]["sum_sent"]["packets"], 100);
        assert_eq!(d["end"]["streams"][0]["udp"]["out_of_order"], 1);
        assert!(d["end"].get("sender_tcp_congestion").is_none());
    }

    #[test]
    fn stream_events_reassemble_into_the_document() {
        let mut rec = end(vec![tcp_end(true, 1000, 1000)], false, Protocol::Tcp);
        rec.server_output_json = Some(json!({"end": {"k": 2}}));
        let iv = IntervalRecord {
            streams: vec![StreamInterval {
                socket: 5,
                start: 0.0,
                end: 1.0,
                bytes: 1000,
                sender: true,
                omitted: false,
                detail: IntervalDetail::Tcp(None),
            }],
            plumb: None,
        };
        let mut stream = JsonStreamSink::new(Vec::new());
        let mut whole = JsonSink::new(Vec::new());
        for sink in [&mut stream as &mut dyn Sink, &mut whole] {
            sink.interval(&iv);
            sink.end(&rec);
            sink.finish().expect("finish");
        }
        let text = String::from_utf8(stream.into_inner()).expect("utf8");
        let events: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("one object per line"))
            .collect();
        let names: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
        assert_eq!(names, ["interval", "server_output_json", "end"]);
        let mut doc = whole.document();
        // -J gives an empty start when none was recorded; so does the stream.
        doc["start"] = json!({});
        assert_eq!(document_from_events(&text), Some(doc));
    }

    #[test]
    fn a_failed_stream_keeps_its_first_error() {
        let mut stream = JsonStreamSink::new(Vec::new());
        stream.error("unable to connect");
        stream.error("later");
        stream.finish().expect("finish");
        let text = String::from_utf8(stream.into_inner()).expect("utf8");
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(
            text.ends_with("{\"event\":\"end\",\"data\":{}}\n"),
            "{text}"
        );
        let doc = document_from_events(&text).expect("document");
        assert_eq!(doc["error"], "unable to connect");
        assert_eq!(doc["end"], json!({}));
    }

    #[test]
    fn only_event_lines_make_a_document() {
        assert_eq!(document_from_events(""), None);
        assert_eq!(document_from_events("{\"start\": {}}"), None);
        assert_eq!(
            document_from_events("{\"event\":\"start\",\"data\":{}}\nnot json"),
            None
        );
    }

    #[test]
    fn interval_sums() {
        let st = |socket, bytes, sender| StreamInterval {
            socket,
            start: 0.0,
            end: 1.0,
            bytes,
            sender,
            omitted: false,
            detail: IntervalDetail::Tcp(sender.then_some(TcpSample {
                retransmits: 2,
                ..TcpSample::default()
            })),
        };
        let v = interval_json(&IntervalRecord {
            streams: vec![st(5, 100, true), st(7, 50, true)],
            plumb: None,
        });
        assert_eq!(v["sum"]["bytes"], 150);
        assert_eq!(v["sum"]["retransmits"], 4);
        assert_eq!(v["sum"]["bits_per_second"], 1200.0);
        let v = interval_json(&IntervalRecord {
            streams: vec![st(5, 100, true), st(7, 50, false)],
            plumb: None,
        });
        assert_eq!(v["sum_bidir_reverse"]["bytes"], 50);
    }
}
