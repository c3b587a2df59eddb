//! iperf3's `-J` document: `start`, `intervals`, `end` (and `error`), so that a
//! parser written for iperf3 reads plumb's output unchanged, and the same
//! records as `--json-stream` events, one line each. plumb's extra evidence
//! goes under one extra key, `end.plumb`, which such parsers ignore.
//!
//! The printers build the typed [`plumb_record::Document`] from the records
//! they are given and serialize it: the document's schema is that crate's,
//! and plumb's extension objects arrive already in its types.

use std::io::Write;

use plumb_record::{self as doc, Document, Real};
use serde_json::{json, Map, Value};

use plumb_record::engine::*;
use plumb_record::{Capture, Event, ServerOutput, Sink};

/// Collects a test's record and writes one JSON document on [`Sink::finish`].
pub struct JsonSink<W: Write> {
    out: W,
    doc: Document,
}

impl<W: Write> JsonSink<W> {
    /// A sink writing the document to `out`.
    pub fn new(out: W) -> Self {
        JsonSink {
            out,
            doc: Document {
                intervals: Some(Vec::new()),
                ..Document::default()
            },
        }
    }

    /// The typed document as it stands, `start` and `end` empty until their
    /// records arrive.
    pub fn record(&self) -> Document {
        let mut d = self.doc.clone();
        fill_empty_parts(&mut d);
        d
    }

    /// Gives back the writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

impl<W: Write> Sink for JsonSink<W> {
    fn start(&mut self, s: &StartRecord) {
        self.doc.title.clone_from(&s.title);
        self.doc.extra_data.clone_from(&s.extra_data);
        self.doc.start = Some(start_record(s));
    }
    fn interval(&mut self, i: &IntervalRecord) {
        self.doc
            .intervals
            .get_or_insert_with(Vec::new)
            .push(interval_record(i));
    }
    fn end(&mut self, e: &EndRecord) {
        // The server's report is one key: text, or its JSON document.
        if let Some(t) = &e.server_output_text {
            self.doc.server_output_text = Some(t.clone());
            self.doc.server_output_json = None;
        }
        if let Some(j) = &e.server_output_json {
            self.doc.server_output_json = Some(j.clone());
            self.doc.server_output_text = None;
        }
        self.doc.end = Some(end_record(e));
    }
    fn error(&mut self, msg: &str) {
        // iperf3 keeps the first error; later ones are consequences.
        if self.doc.error.is_none() {
            self.doc.error = Some(msg.to_string());
        }
    }
    fn finish(&mut self) -> std::io::Result<()> {
        // In place, not on a copy: a long test's intervals are the bulk of
        // the memory an end holds at its peak.
        fill_empty_parts(&mut self.doc);
        let text = serde_json::to_string_pretty(&self.doc).map_err(std::io::Error::other)?;
        writeln!(self.out, "{text}")?;
        self.out.flush()
    }
}

impl<W: Write> Capture for JsonSink<W> {
    fn output(&self) -> ServerOutput {
        ServerOutput::Json(Box::new(self.record()))
    }
}

/// iperf3 writes `"start": {}` and `"end": {}` for the parts a failed test
/// never reached.
fn fill_empty_parts(d: &mut Document) {
    d.start.get_or_insert_with(doc::Start::default);
    d.end.get_or_insert_with(doc::End::default);
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
    /// `--json-stream-full-output`: the whole `-J` document, written after
    /// the events.
    full: Option<JsonSink<Vec<u8>>>,
}

impl<W: Write> JsonStreamSink<W> {
    /// A sink writing events to `out`, each line flushed.
    pub fn new(out: W) -> Self {
        JsonStreamSink {
            out,
            ended: false,
            broken: false,
            full: None,
        }
    }

    /// The same sink, also writing the whole `-J` document once the events
    /// are out, as iperf3's `--json-stream-full-output` does.
    pub fn with_full_output(mut self) -> Self {
        self.full = Some(JsonSink::new(Vec::new()));
        self
    }

    /// Gives back the writer.
    pub fn into_inner(self) -> W {
        self.out
    }

    fn event(&mut self, event: &Event) {
        if self.broken {
            return;
        }
        // Serializing an event cannot fail: its keys are strings and its
        // numbers are written as null when not finite.
        let Ok(line) = serde_json::to_string(event) else {
            return;
        };
        self.broken = !(writeln!(self.out, "{line}").is_ok() && self.out.flush().is_ok());
    }
}

impl<W: Write> Sink for JsonStreamSink<W> {
    fn start(&mut self, s: &StartRecord) {
        if let Some(f) = self.full.as_mut() {
            f.start(s);
        }
        self.event(&Event::Start(Box::new(start_record(s))));
    }
    fn interval(&mut self, i: &IntervalRecord) {
        if let Some(f) = self.full.as_mut() {
            f.interval(i);
        }
        self.event(&Event::Interval(Box::new(interval_record(i))));
    }
    fn end(&mut self, e: &EndRecord) {
        if let Some(f) = self.full.as_mut() {
            f.end(e);
        }
        if let Some(t) = &e.server_output_text {
            self.event(&Event::ServerOutputText(t.clone()));
        }
        if let Some(j) = &e.server_output_json {
            self.event(&Event::ServerOutputJson(j.clone()));
        }
        self.event(&Event::End(Box::new(end_record(e))));
        self.ended = true;
    }
    fn error(&mut self, msg: &str) {
        if let Some(f) = self.full.as_mut() {
            f.error(msg);
        }
        self.event(&Event::Error(msg.to_string()));
    }
    fn finish(&mut self) -> std::io::Result<()> {
        if !self.ended {
            self.event(&Event::End(Box::default()));
            self.ended = true;
        }
        match self.full.take() {
            Some(mut f) if !self.broken => {
                f.finish()?;
                self.out.write_all(&f.into_inner())?;
                self.out.flush()
            }
            _ => Ok(()),
        }
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

/// A count iperf3 writes as a signed integer.
fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn start_record(s: &StartRecord) -> doc::Start {
    let t = &s.test;
    let tcp = t.protocol == Protocol::Tcp;
    let host_port = |(host, port): &(String, u16)| doc::HostPort {
        host: host.clone(),
        port: *port,
        extra: Map::new(),
    };
    doc::Start {
        connected: Some(s.connected.clone()),
        version: Some(s.version.clone()),
        system_info: Some(s.system_info.clone()),
        timestamp: Some(doc::Timestamp {
            time: http_date(s.timesecs),
            timesecs: s.timesecs,
            timemillisecs: Some(s.timesecs * 1000 + u64::from(s.timemillis)),
            extra: Map::new(),
        }),
        connecting_to: s.connecting_to.as_ref().map(host_port),
        accepted_connection: s.accepted_connection.as_ref().map(host_port),
        cookie: Some(s.cookie.clone()),
        // iperf3 writes the MSS set with -M, else the default one, and
        // neither for UDP.
        tcp_mss: s.tcp_mss.filter(|_| tcp).map(u64::from),
        tcp_mss_default: s
            .tcp_mss_default
            .filter(|_| tcp && s.tcp_mss.is_none())
            .map(u64::from),
        target_bitrate: Some(t.target_bitrate),
        fq_rate: Some(0),
        sock_bufsize: Some(s.sock_bufsize),
        sndbuf_actual: Some(s.sndbuf_actual),
        rcvbuf_actual: Some(s.rcvbuf_actual),
        test_start: Some(doc::TestStart {
            protocol: t.protocol.name().into(),
            num_streams: u64::from(t.num_streams),
            blksize: t.blksize,
            omit: Real::float(t.omit),
            duration: Real::float(t.duration),
            bytes: t.bytes,
            blocks: t.blocks,
            reverse: u64::from(t.reverse),
            tos: u64::from(t.tos),
            target_bitrate: Some(t.target_bitrate),
            bidir: Some(u64::from(t.bidir)),
            fqrate: Some(0),
            interval: Some(Real::float(t.interval)),
            gso: None,
            gro: None,
            extra: Map::new(),
        }),
        extra: Map::new(),
    }
}

fn rate(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    }
}

fn stream_interval_record(s: &StreamInterval) -> doc::IntervalStream {
    let secs = s.end - s.start;
    let mut o = doc::IntervalStream {
        socket: s.socket,
        start: Real::float(s.start),
        end: Real::float(s.end),
        seconds: Real::float(secs),
        bytes: s.bytes,
        bits_per_second: Real::float(rate(s.bytes, secs)),
        retransmits: None,
        snd_cwnd: None,
        snd_wnd: None,
        rtt: None,
        rttvar: None,
        pmtu: None,
        reorder: None,
        plumb: None,
        jitter_ms: None,
        lost_packets: None,
        packets: None,
        lost_percent: None,
        omitted: s.omitted,
        sender: Some(s.sender),
        extra: Map::new(),
    };
    match s.detail {
        IntervalDetail::Tcp(Some(t)) => {
            o.retransmits = Some(signed(t.retransmits));
            o.snd_cwnd = Some(t.snd_cwnd);
            o.snd_wnd = Some(t.snd_wnd);
            o.rtt = Some(t.rtt);
            o.rttvar = Some(t.rttvar);
            o.pmtu = Some(t.pmtu);
            // Not in iperf3's schema: under plumb's own key, as in `end`.
            o.plumb = t.limited.map(|l| doc::LimitedTime {
                busy_us: l.busy_us,
                rwnd_limited_us: l.rwnd_limited_us,
                sndbuf_limited_us: l.sndbuf_limited_us,
                extra: Map::new(),
            });
        }
        IntervalDetail::Tcp(None) => {}
        IntervalDetail::UdpSender { packets } => o.packets = Some(signed(packets)),
        IntervalDetail::UdpReceiver {
            jitter_ms,
            lost,
            packets,
        } => {
            o.jitter_ms = Some(Real::float(jitter_ms));
            o.lost_packets = Some(lost);
            o.packets = Some(packets);
            o.lost_percent = Some(Real::float(percent(lost, packets)));
        }
    }
    o
}

fn percent(lost: i64, packets: i64) -> f64 {
    if packets > 0 {
        100.0 * lost as f64 / packets as f64
    } else {
        0.0
    }
}

fn interval_sum_record(streams: &[&StreamInterval]) -> doc::IntervalSum {
    let start = streams
        .iter()
        .map(|s| s.start)
        .fold(f64::INFINITY, f64::min);
    let end = streams.iter().map(|s| s.end).fold(0.0, f64::max);
    let start = if start.is_finite() { start } else { 0.0 };
    let secs = end - start;
    let bytes: u64 = streams.iter().map(|s| s.bytes).sum();
    let mut o = doc::IntervalSum {
        start: Real::float(start),
        end: Real::float(end),
        seconds: Real::float(secs),
        bytes,
        bits_per_second: Real::float(rate(bytes, secs)),
        retransmits: None,
        jitter_ms: None,
        lost_packets: None,
        packets: None,
        lost_percent: None,
        omitted: streams.iter().any(|s| s.omitted),
        sender: Some(streams.first().is_some_and(|s| s.sender)),
        extra: Map::new(),
    };
    let tcp_send: Vec<TcpSample> = streams
        .iter()
        .filter_map(|s| match s.detail {
            IntervalDetail::Tcp(t) => t,
            _ => None,
        })
        .collect();
    if !tcp_send.is_empty() {
        o.retransmits = Some(signed(tcp_send.iter().map(|t| t.retransmits).sum()));
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
        o.jitter_ms = Some(Real::float(jitter));
        o.lost_packets = Some(lost);
        o.packets = Some(packets);
        o.lost_percent = Some(Real::float(percent(lost, packets)));
    } else if streams
        .iter()
        .any(|s| matches!(s.detail, IntervalDetail::UdpSender { .. }))
    {
        o.packets = Some(signed(udp_send));
    }
    o
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

fn interval_record(i: &IntervalRecord) -> doc::Interval {
    let bidir = i.streams.iter().any(|s| s.sender) && i.streams.iter().any(|s| !s.sender);
    let (fwd, rev) = groups(&i.streams, bidir, |s| s.sender);
    doc::Interval {
        streams: i.streams.iter().map(stream_interval_record).collect(),
        sum: interval_sum_record(&fwd),
        sum_bidir_reverse: bidir.then(|| interval_sum_record(&rev)),
        plumb: i.plumb.clone(),
        extra: Map::new(),
    }
}

fn side_record(socket: i32, t: Totals, sender: bool) -> doc::TcpEndSide {
    doc::TcpEndSide {
        socket,
        start: Real::int(0),
        end: Real::float(t.seconds),
        seconds: Real::float(t.seconds),
        bytes: t.bytes,
        bits_per_second: Real::float(StreamEnd::rate(t)),
        retransmits: None,
        max_snd_cwnd: None,
        max_snd_wnd: None,
        max_rtt: None,
        min_rtt: None,
        mean_rtt: None,
        reorder: None,
        sender: Some(sender),
        extra: Map::new(),
    }
}

fn sum_record(streams: &[&StreamEnd], received: bool, udp: bool) -> doc::EndSum {
    let side = |s: &&StreamEnd| if received { s.received } else { s.sent };
    let seconds = streams.iter().map(|s| side(s).seconds).fold(0.0, f64::max);
    let bytes: u64 = streams.iter().map(|s| side(s).bytes).sum();
    let (start, end, secs, bps) = (
        Real::int(0),
        Real::float(seconds),
        Real::float(seconds),
        Real::float(rate(bytes, seconds)),
    );
    if udp {
        let u: Vec<UdpEnd> = streams.iter().filter_map(|s| s.udp).collect();
        let sent: i64 = u.iter().map(|x| x.sent_packets).sum();
        let (jitter_ms, lost_packets, packets, lost_percent) = if received {
            let lost: i64 = u.iter().map(|x| x.lost).sum();
            let packets: i64 = u.iter().map(|x| x.packets).sum();
            let jitter = if u.is_empty() {
                0.0
            } else {
                u.iter().map(|x| x.jitter_ms).sum::<f64>() / u.len() as f64
            };
            let pct = Real::float(percent(lost, packets));
            (Real::float(jitter), lost, packets, pct)
        } else {
            (Real::int(0), 0, sent, Real::int(0))
        };
        doc::EndSum::Udp(doc::UdpSum {
            start,
            end,
            seconds: secs,
            bytes,
            bits_per_second: bps,
            jitter_ms,
            lost_packets,
            packets,
            lost_percent,
            // iperf3: UDP sum_sent is always the sending side, sum_received the receiving.
            sender: Some(!received),
            extra: Map::new(),
        })
    } else {
        let known: Vec<i64> = streams.iter().filter_map(|s| s.retransmits).collect();
        doc::EndSum::Tcp(doc::TcpSum {
            start,
            end,
            seconds: secs,
            bytes,
            bits_per_second: bps,
            retransmits: (!received && !known.is_empty()).then(|| known.iter().sum()),
            sender: Some(streams.first().is_some_and(|s| s.sender)),
            extra: Map::new(),
        })
    }
}

fn udp_stream_record(s: &StreamEnd) -> doc::UdpEndStream {
    let u = s.udp.unwrap_or_default();
    // iperf3 reports the sender's bytes and duration with the receiver's loss figures.
    let t = s.sent;
    doc::UdpEndStream {
        socket: s.socket,
        start: Real::int(0),
        end: Real::float(t.seconds),
        seconds: Real::float(t.seconds),
        bytes: t.bytes,
        bits_per_second: Real::float(StreamEnd::rate(t)),
        jitter_ms: Real::float(u.jitter_ms),
        lost_packets: u.lost,
        packets: u.packets,
        lost_percent: Real::float(percent(u.lost, u.packets)),
        out_of_order: Some(u.out_of_order),
        sender: Some(s.sender),
        extra: Map::new(),
    }
}

fn tcp_stream_record(s: &StreamEnd) -> doc::EndStream {
    let mut sender = side_record(s.socket, s.sent, s.sender);
    sender.retransmits = s.retransmits;
    if let Some(t) = s.tcp {
        sender.max_snd_cwnd = Some(t.max_snd_cwnd);
        sender.max_snd_wnd = Some(t.max_snd_wnd);
        sender.max_rtt = Some(t.max_rtt);
        sender.min_rtt = Some(t.min_rtt);
        sender.mean_rtt = Some(t.mean_rtt);
    }
    doc::EndStream {
        sender: Some(sender),
        receiver: Some(side_record(s.socket, s.received, s.sender)),
        ..doc::EndStream::default()
    }
}

fn end_record(e: &EndRecord) -> doc::End {
    let udp = e.protocol == Protocol::Udp;
    let streams = e
        .streams
        .iter()
        .map(|s| {
            if udp {
                doc::EndStream {
                    udp: Some(udp_stream_record(s)),
                    ..doc::EndStream::default()
                }
            } else {
                tcp_stream_record(s)
            }
        })
        .collect();
    let (fwd, rev) = groups(&e.streams, e.bidir, |s| s.sender);
    let rev = e.bidir.then_some(rev);
    let c = e.cpu;
    doc::End {
        streams: Some(streams),
        sum: udp.then(|| sum_record(&fwd, true, true)),
        sum_sent: Some(sum_record(&fwd, false, udp)),
        sum_received: Some(sum_record(&fwd, true, udp)),
        sum_bidir_reverse: rev
            .as_ref()
            .filter(|_| udp)
            .map(|r| sum_record(r, true, true)),
        sum_sent_bidir_reverse: rev.as_ref().map(|r| sum_record(r, false, udp)),
        sum_received_bidir_reverse: rev.as_ref().map(|r| sum_record(r, true, udp)),
        cpu_utilization_percent: Some(doc::CpuUtilization {
            host_total: Real::float(c.host_total),
            host_user: Real::float(c.host_user),
            host_system: Real::float(c.host_system),
            remote_total: Real::float(c.remote_total),
            remote_user: Real::float(c.remote_user),
            remote_system: Real::float(c.remote_system),
            extra: Map::new(),
        }),
        sender_tcp_congestion: e.sender_tcp_congestion.clone().filter(|_| !udp),
        receiver_tcp_congestion: e.receiver_tcp_congestion.clone().filter(|_| !udp),
        plumb: e.plumb.clone(),
        extra: Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A part of the document as JSON.
    fn value<T: serde::Serialize>(part: &T) -> Value {
        serde_json::to_value(part).expect("serializes")
    }

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
            plumb: Some(doc::EndPlumb {
                concurrent_tests: Some(1),
                ..doc::EndPlumb::default()
            }),
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
        let d = sink.record().to_value();
        assert_eq!(d["end"]["sum_received"]["bytes"], 1500);
        assert_eq!(d["end"]["sum_received"]["bits_per_second"], 6000.0);
        assert_eq!(d["end"]["sum_sent"]["retransmits"], 6);
        assert_eq!(d["end"]["streams"][1]["sender"]["bytes"], 500);
        assert_eq!(d["end"]["plumb"]["concurrent_tests"], 1);
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
        let d = sink.record().to_value();
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
        let d = sink.record().to_value();
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
        let mut doc = whole.record().to_value();
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
        let v = value(&interval_record(&IntervalRecord {
            streams: vec![st(5, 100, true), st(7, 50, true)],
            plumb: None,
        }));
        assert_eq!(v["sum"]["bytes"], 150);
        assert_eq!(v["sum"]["retransmits"], 4);
        assert_eq!(v["sum"]["bits_per_second"], 1200.0);
        let v = value(&interval_record(&IntervalRecord {
            streams: vec![st(5, 100, true), st(7, 50, false)],
            plumb: None,
        }));
        assert_eq!(v["sum_bidir_reverse"]["bytes"], 50);
    }

    /// `end.plumb` and `intervals[].plumb` as the engine builds them are
    /// written as they came.
    #[test]
    fn plumb_extensions_are_written_as_given() {
        for text in [
            include_str!("../tests/fixtures/plumb-crr.json"),
            include_str!("../tests/fixtures/plumb-latency.json"),
            include_str!("../tests/fixtures/plumb-p2.json"),
            include_str!("../tests/fixtures/plumb-rr.json"),
        ] {
            let fixture: Value = serde_json::from_str(text).expect("JSON");
            let mut rec = end(vec![tcp_end(true, 1000, 1000)], false, Protocol::Tcp);
            rec.plumb =
                Some(serde_json::from_value(fixture["end"]["plumb"].clone()).expect("end.plumb"));
            let e = end_record(&rec);
            assert!(e.extra.is_empty(), "{:?}", e.extra);
            assert_eq!(value(&e)["plumb"], fixture["end"]["plumb"]);
            for iv in fixture["intervals"].as_array().expect("intervals") {
                let rec = IntervalRecord {
                    streams: Vec::new(),
                    plumb: iv
                        .get("plumb")
                        .map(|p| serde_json::from_value(p.clone()).expect("intervals[].plumb")),
                };
                let i = interval_record(&rec);
                assert!(i.extra.is_empty(), "{:?}", i.extra);
                assert_eq!(value(&i).get("plumb"), iv.get("plumb"));
            }
        }
    }
}
