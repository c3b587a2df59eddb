//! iperf3's human layout: one line per stream per interval, `[SUM]` lines with
//! several streams, and the sender/receiver summary at the end.

use std::io::Write;

use plumb_record::UdpSummary;

use crate::format::{bitrate_as, bytes, interval_secs, lost_of, RateFormat};
use plumb_record::engine::*;
use plumb_record::{Capture, Latency, ServerOutput, Sink};

const SEPARATOR: &str = "- - - - - - - - - - - - - - - - - - - - - - - - -";

/// Prints a test as iperf3 does, line by line as it happens.
pub struct TextSink<W: Write> {
    out: W,
    force_flush: bool,
    role: Role,
    protocol: Protocol,
    bidir: bool,
    streams: usize,
    header_done: bool,
    /// The bitrate column's unit (`-f`).
    format: RateFormat,
    /// `-V`: iperf3's verbose lines.
    verbose: bool,
    /// Write errors (a closed pipe) end printing, not the test.
    broken: bool,
}

impl<W: Write> TextSink<W> {
    /// A sink printing to `out`; `force_flush` flushes after every line (`--forceflush`).
    pub fn new(out: W, force_flush: bool) -> Self {
        TextSink {
            out,
            force_flush,
            role: Role::Client,
            protocol: Protocol::Tcp,
            bidir: false,
            streams: 0,
            header_done: false,
            format: RateFormat::Adaptive,
            verbose: false,
            broken: false,
        }
    }

    /// The same sink with iperf3's verbose lines (`-V`).
    pub fn with_verbose(mut self, verbose: bool) -> Self {
        self.verbose = verbose;
        self
    }

    /// The same sink with the bitrate column in `format`'s unit (`-f`).
    pub fn with_format(mut self, format: RateFormat) -> Self {
        self.format = format;
        self
    }

    /// The writer, e.g. the captured bytes of a `Vec<u8>`.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// Gives back the writer.
    pub fn into_inner(self) -> W {
        self.out
    }

    fn line(&mut self, s: &str) {
        if self.broken {
            return;
        }
        let ok =
            writeln!(self.out, "{s}").is_ok() && (!self.force_flush || self.out.flush().is_ok());
        self.broken = !ok;
    }

    fn role_tag(&self, sender: bool) -> &'static str {
        match (self.role, sender) {
            (Role::Client, true) => "[TX-C]",
            (Role::Client, false) => "[RX-C]",
            (Role::Server, true) => "[TX-S]",
            (Role::Server, false) => "[RX-S]",
        }
    }

    fn id(&self, socket: Option<i32>, sender: bool) -> String {
        let id = socket.map_or_else(|| "SUM".to_string(), |s| format!("{s:3}"));
        if self.bidir {
            format!("[{id}]{}", self.role_tag(sender))
        } else {
            format!("[{id}]")
        }
    }

    fn header(&self, sender: bool, summary: bool) -> String {
        let id = if self.bidir { "[ ID][Role]" } else { "[ ID]" };
        let tail = match (self.protocol, sender, summary) {
            (Protocol::Tcp, true, false) => "         Retr  Cwnd",
            (Protocol::Tcp, _, true) => "         Retr",
            (Protocol::Tcp, false, false) => "",
            (Protocol::Udp, true, false) => "         Total Datagrams",
            (Protocol::Udp, _, _) => "         Jitter    Lost/Total Datagrams",
        };
        format!("{id} Interval           Transfer     Bitrate{tail}")
    }
}

/// The one line saying how a UDP test moved its datagrams, from
/// `end.plumb.udp`: GSO, GRO, what jitter resolves, cut reads and socket
/// buffers. A fact the peer did not report (a stock iperf3) says so.
fn udp_line(u: &UdpSummary) -> Option<String> {
    let gsro = u.gsro.flatten()?;
    let gso = match u.gso_segments.flatten() {
        Some(n) if n > 1 => format!("GSO {n} datagrams/message"),
        Some(_) => "no GSO (1 datagram/message)".to_string(),
        None => match u.gso_segments_asked.flatten() {
            Some(n) => format!("GSO {n} datagrams/message asked of the sender (not reported)"),
            None => "sender's GSO not reported by the peer".to_string(),
        },
    };
    let gro = match u.gro.flatten() {
        Some(true) => "GRO on",
        Some(false) => "GRO off",
        None => "receiver's GRO not reported by the peer",
    };
    let jitter = match u.jitter_resolution.as_ref().and_then(Option::as_deref) {
        Some("datagram") => "jitter per datagram",
        Some("gro_batch") => "jitter per GRO read (not per datagram)",
        Some("read_batch") => "jitter per receive batch (not per datagram)",
        _ => "jitter resolution not reported",
    };
    let mut l = format!(
        "UDP {}: {gso}, {gro}; {jitter}",
        if gsro { "--gsro" } else { "--no-gsro" }
    );
    if let Some(us) = u.receive_poll_us.flatten() {
        l.push_str(&format!("; receiver polls {us} µs before it sleeps"));
    }
    if let Some(n) = u.truncated_reads.flatten() {
        l.push_str(&format!("; {n} truncated reads"));
    }
    if let Some(n) = u.socket_drops.flatten() {
        l.push_str(&format!(
            "; {n} dropped at the receiving socket (buffer full)"
        ));
    }
    if let Some(b) = u.socket_buffer_requested.flatten() {
        l.push_str(&format!("; socket buffers {} asked", bytes(b as f64)));
        if let (Some(snd), Some(rcv)) = (u.sndbuf_granted.flatten(), u.rcvbuf_granted.flatten()) {
            l.push_str(&format!(
                ", {} send / {} receive granted",
                bytes(snd as f64),
                bytes(rcv as f64)
            ));
        }
    }
    Some(l)
}

impl<W: Write> Sink for TextSink<W> {
    fn start(&mut self, s: &StartRecord) {
        self.role = s.role;
        self.protocol = s.test.protocol;
        self.bidir = s.test.bidir;
        self.streams = s.connected.len();
        if self.verbose {
            for l in crate::verbose::start_lines(s) {
                self.line(&l);
            }
        }
        for c in &s.connected {
            let l = format!(
                "[{:3}] local {} port {} connected to {} port {}",
                c.socket, c.local_host, c.local_port, c.remote_host, c.remote_port
            );
            self.line(&l);
        }
        if self.verbose {
            self.line(&crate::verbose::starting_test(s));
        }
    }

    fn interval(&mut self, i: &IntervalRecord) {
        if !self.header_done {
            self.header_done = true;
            let sender = i.streams.first().is_some_and(|s| s.sender) && !self.bidir;
            let h = self.header(
                sender || (self.bidir && self.protocol == Protocol::Tcp),
                false,
            );
            self.line(&h);
        }
        let mut groups: Vec<Vec<&StreamInterval>> = Vec::new();
        if self.bidir {
            groups.push(i.streams.iter().filter(|s| s.sender).collect());
            groups.push(i.streams.iter().filter(|s| !s.sender).collect());
        } else {
            groups.push(i.streams.iter().collect());
        }
        for s in &i.streams {
            let l = self.stream_line(
                Some(s.socket),
                s.start,
                s.end,
                s.bytes,
                s.sender,
                s.omitted,
                &[s.detail],
            );
            self.line(&l);
        }
        for g in groups.iter().filter(|g| g.len() > 1) {
            let start = g.iter().map(|s| s.start).fold(f64::INFINITY, f64::min);
            let end = g.iter().map(|s| s.end).fold(0.0, f64::max);
            let total: u64 = g.iter().map(|s| s.bytes).sum();
            let details: Vec<IntervalDetail> = g.iter().map(|s| s.detail).collect();
            let l = self.stream_line(None, start, end, total, g[0].sender, g[0].omitted, &details);
            self.line(&l);
        }
        if let Some(l) = i.plumb.as_ref().and_then(|p| p.latency.as_ref()) {
            self.line(&crate::latency::interval_line(l));
        }
        if i.streams.len() > 1 {
            self.line(SEPARATOR);
        }
    }

    fn end(&mut self, e: &EndRecord) {
        if self.streams <= 1 || !self.header_done {
            self.line(SEPARATOR);
        }
        if self.verbose {
            self.line(crate::verbose::SUMMARY);
        }
        let h = self.header(true, true);
        self.line(&h);
        let udp = e.protocol == Protocol::Udp;
        for s in &e.streams {
            for side in ["sender", "receiver"] {
                let l = self.end_line(Some(s.socket), s.sender, side, &[s], udp);
                self.line(&l);
            }
        }
        let mut groups: Vec<Vec<&StreamEnd>> = Vec::new();
        if e.bidir {
            groups.push(e.streams.iter().filter(|s| s.sender).collect());
            groups.push(e.streams.iter().filter(|s| !s.sender).collect());
        } else {
            groups.push(e.streams.iter().collect());
        }
        for g in groups.iter().filter(|g| g.len() > 1) {
            for side in ["sender", "receiver"] {
                let l = self.end_line(None, g[0].sender, side, g, udp);
                self.line(&l);
            }
        }
        let c = e.cpu;
        let l = format!(
            "CPU Utilization: local {:.1}% ({:.1}%u/{:.1}%s), remote {:.1}% ({:.1}%u/{:.1}%s)",
            c.host_total,
            c.host_user,
            c.host_system,
            c.remote_total,
            c.remote_user,
            c.remote_system
        );
        self.line("");
        self.line(&l);
        if let Some(l) = e.plumb.as_ref().and_then(|p| udp_line(p.udp.as_ref()?)) {
            self.line(&l);
        }
        if let (Some(s), Some(r)) = (&e.sender_tcp_congestion, &e.receiver_tcp_congestion) {
            if !udp {
                let l = format!("snd_tcp_congestion {s}, rcv_tcp_congestion {r}");
                self.line(&l);
            }
        }
        if let Some(t) = &e.server_output_text {
            self.line("");
            self.line("Server output:");
            for l in t.lines() {
                self.line(l);
            }
        }
        if let Some(j) = &e.server_output_json {
            self.line("");
            self.line("Server JSON output:");
            let text = serde_json::to_string_pretty(j).unwrap_or_default();
            for l in text.lines() {
                self.line(l);
            }
        }
    }

    fn error(&mut self, msg: &str) {
        let l = format!("plumb: error - {msg}");
        self.line(&l);
    }

    fn note(&mut self, line: &str) {
        self.line(line);
    }

    fn latency(&mut self, l: &Latency) {
        for l in crate::latency::lines(l) {
            self.line(&l);
        }
    }

    fn finish(&mut self) -> std::io::Result<()> {
        if self.broken {
            return Ok(());
        }
        self.out.flush()
    }
}

impl Capture for TextSink<Vec<u8>> {
    fn output(&self) -> ServerOutput {
        ServerOutput::Text(String::from_utf8_lossy(&self.out).into_owned())
    }
}

impl<W: Write> TextSink<W> {
    #[allow(clippy::too_many_arguments)]
    fn stream_line(
        &self,
        socket: Option<i32>,
        start: f64,
        end: f64,
        n: u64,
        sender: bool,
        omitted: bool,
        details: &[IntervalDetail],
    ) -> String {
        let secs = end - start;
        let bps = if secs > 0.0 {
            n as f64 * 8.0 / secs
        } else {
            0.0
        };
        let mut l = format!(
            "{} {}  {}  {}",
            self.id(socket, sender),
            interval_secs(start, end),
            bytes(n as f64),
            bitrate_as(bps, self.format)
        );
        match details.first() {
            Some(IntervalDetail::Tcp(Some(t))) => {
                let retr: u64 = details
                    .iter()
                    .map(|d| match d {
                        IntervalDetail::Tcp(Some(t)) => t.retransmits,
                        _ => 0,
                    })
                    .sum();
                if socket.is_some() {
                    l += &format!("  {retr:3}   {}       ", bytes(t.snd_cwnd as f64));
                } else {
                    l += &format!("  {retr:3}             ");
                }
            }
            Some(IntervalDetail::UdpSender { .. }) => {
                let p: u64 = details
                    .iter()
                    .map(|d| match d {
                        IntervalDetail::UdpSender { packets } => *packets,
                        _ => 0,
                    })
                    .sum();
                l += &format!("  {p}  ");
            }
            Some(IntervalDetail::UdpReceiver { .. }) => {
                let (mut j, mut lo, mut p, mut n) = (0.0, 0, 0, 0);
                for d in details {
                    if let IntervalDetail::UdpReceiver {
                        jitter_ms,
                        lost,
                        packets,
                    } = d
                    {
                        j += jitter_ms;
                        lo += lost;
                        p += packets;
                        n += 1;
                    }
                }
                l += &format!("  {:.3} ms  {}  ", j / f64::from(n.max(1)), lost_of(lo, p));
            }
            _ => l += "                  ",
        }
        if omitted {
            l += "(omitted)";
        }
        l.trim_end().to_string()
    }

    fn end_line(
        &self,
        socket: Option<i32>,
        sender: bool,
        side: &str,
        streams: &[&StreamEnd],
        udp: bool,
    ) -> String {
        let sending = side == "sender";
        let (n, secs): (u64, f64) = streams.iter().fold((0, 0.0), |(b, s), e| {
            let t = if sending { e.sent } else { e.received };
            (b + t.bytes, f64::max(s, t.seconds))
        });
        let bps = if secs > 0.0 {
            n as f64 * 8.0 / secs
        } else {
            0.0
        };
        let mut l = format!(
            "{} {}  {}  {}",
            self.id(socket, sender),
            interval_secs(0.0, secs),
            bytes(n as f64),
            bitrate_as(bps, self.format)
        );
        if udp {
            let (mut j, mut lo, mut p, mut sent, mut k) = (0.0, 0, 0, 0, 0);
            for u in streams.iter().filter_map(|s| s.udp) {
                j += u.jitter_ms;
                lo += u.lost;
                p += u.packets;
                sent += u.sent_packets;
                k += 1;
            }
            if sending {
                l += &format!("  {:.3} ms  {}  sender", 0.0, lost_of(0, sent));
            } else {
                l += &format!(
                    "  {:.3} ms  {}  receiver",
                    j / f64::from(k.max(1)),
                    lost_of(lo, p)
                );
            }
        } else if sending {
            let known: Vec<i64> = streams.iter().filter_map(|s| s.retransmits).collect();
            if known.is_empty() {
                l += "                  sender";
            } else {
                l += &format!("  {:3}             sender", known.iter().sum::<i64>());
            }
        } else {
            l += "                  receiver";
        }
        l
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tcp_sender_interval_line_looks_like_iperf3() {
        let mut sink = TextSink::new(Vec::new(), false);
        sink.interval(&IntervalRecord {
            streams: vec![StreamInterval {
                socket: 5,
                start: 0.0,
                end: 1.0,
                bytes: 1_535_450_000,
                sender: true,
                omitted: false,
                detail: IntervalDetail::Tcp(Some(TcpSample {
                    retransmits: 0,
                    snd_cwnd: 895 * 1024,
                    ..TcpSample::default()
                })),
            }],
            plumb: None,
        });
        let out = String::from_utf8(sink.into_inner()).unwrap_or_default();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd"
        );
        assert_eq!(
            lines[1],
            "[  5]   0.00-1.00   sec  1.43 GBytes  12.3 Gbits/sec    0    895 KBytes"
        );
    }

    #[test]
    fn udp_summary_shows_loss() {
        let mut sink = TextSink::new(Vec::new(), false);
        sink.protocol = Protocol::Udp;
        let s = StreamEnd {
            socket: 5,
            sender: true,
            sent: Totals {
                bytes: 1000,
                seconds: 1.0,
            },
            received: Totals {
                bytes: 900,
                seconds: 1.0,
            },
            retransmits: None,
            tcp: None,
            udp: Some(UdpEnd {
                jitter_ms: 0.014,
                lost: 1,
                packets: 10,
                sent_packets: 10,
                out_of_order: 0,
            }),
        };
        let l = sink.end_line(Some(5), true, "receiver", &[&s], true);
        assert!(l.ends_with("0.014 ms  1/10 (10%)  receiver"), "{l}");
    }
}
