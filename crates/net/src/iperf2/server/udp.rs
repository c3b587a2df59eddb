//! iperf 2's UDP tests on the server, counted in the gate thread: a flow
//! per client address, opened by a datagram carrying the test header,
//! closed by the client's negative sequence numbers — each answered with
//! the server report — or by silence. A reverse test (`-u -R`) gets a
//! thread that sends to the client's address from the server's port.

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::thread::Scope;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use plumb_proto::iperf2::{
    upper, Amount, Datagram, Mode, ServerReport, TestHeader, DATAGRAM_LEN, REPORT_LEN,
};
use plumb_proto::UdpReceiver;
use plumb_record::engine::{CpuUtil, EndRecord, Protocol, Role, StreamEnd, Totals, UdpEnd};
use plumb_record::{Connected, Sink};

use crate::config::{ServerConfig, DEFAULT_UDP_RATE};
use crate::iperf2::admit::{admit, deadline};
use crate::iperf2::flow::Flow;
use crate::iperf2::meter::{start_record, test_start, Meter, Ticker};
use crate::server::state::log;
use crate::server::Printer;
use crate::{signals, sockets};

/// UDP flows counted at once at most.
pub(crate) const MAX_FLOWS: usize = 64;
/// Datagrams read per call before the gate looks at its listener again.
const BATCH: usize = 1024;
/// How long a finished flow's report is sent again to repeated final datagrams.
const REPORT_KEEP: Duration = Duration::from_secs(2);
/// How long datagrams from an address whose header was refused are ignored.
const IGNORE_FOR: Duration = Duration::from_secs(5);
/// Addresses remembered as finished or ignored, at most.
const MAX_REMEMBERED: usize = 4096;
/// The largest datagram read.
const MAX_DATAGRAM: usize = 65_536;

/// A flow being received.
struct Active {
    header: TestHeader,
    rx: UdpReceiver,
    flow: Arc<Flow>,
    meter: Meter,
    ticker: Ticker,
    sink: Box<dyn Sink>,
    first: Instant,
    last: Instant,
    until: Instant,
}

/// Every UDP flow of the server.
pub(crate) struct Flows<'a> {
    cfg: &'a ServerConfig,
    sock: &'a UdpSocket,
    active: HashMap<SocketAddr, Active>,
    reports: HashMap<SocketAddr, ([u8; REPORT_LEN], Instant)>,
    ignored: HashMap<SocketAddr, Instant>,
    finished: usize,
    buf: Vec<u8>,
}

impl<'a> Flows<'a> {
    pub(crate) fn new(cfg: &'a ServerConfig, sock: &'a UdpSocket) -> Flows<'a> {
        Flows {
            cfg,
            sock,
            active: HashMap::new(),
            reports: HashMap::new(),
            ignored: HashMap::new(),
            finished: 0,
            buf: vec![0u8; MAX_DATAGRAM],
        }
    }

    /// Flows that have ended.
    pub(crate) fn finished(&self) -> usize {
        self.finished
    }

    /// Reads what has arrived (waiting one gate tick for the first
    /// datagram), then reports intervals and ends silent flows.
    pub(crate) fn poll<'s>(&mut self, scope: &'s Scope<'s, '_>, printer: &'s dyn Printer)
    where
        'a: 's,
    {
        let until = Instant::now() + crate::iperf2::admit::GATE_TICK;
        for _ in 0..BATCH {
            if Instant::now() > until {
                break;
            }
            match self.sock.recv_from(&mut self.buf) {
                Ok((n, peer)) => self.datagram(n, peer, scope, printer),
                Err(_) => break,
            }
        }
        self.sweep(Instant::now());
    }

    fn datagram<'s>(
        &mut self,
        n: usize,
        peer: SocketAddr,
        scope: &'s Scope<'s, '_>,
        printer: &'s dyn Printer,
    ) where
        'a: 's,
    {
        let now = Instant::now();
        if let Some((report, _)) = self.reports.get(&peer) {
            // The low word's sign is enough, whatever the sequence width.
            if Datagram::decode(&self.buf[..n], false).is_ok_and(|d| d.id < 0) {
                let _ = self.sock.send_to(report, peer);
            }
            return;
        }
        if self.ignored.get(&peer).is_some_and(|t| *t > now) {
            return;
        }
        if let Some(a) = self.active.get_mut(&peer) {
            let Ok(d) = Datagram::decode(&self.buf[..n], a.header.wide_seq()) else {
                return;
            };
            a.flow.add(n as u64);
            a.last = now;
            a.rx.record(d.id.unsigned_abs(), d.sec, d.usec, wall());
            a.flow.set_udp(a.rx.stats());
            if d.id < 0 {
                self.close(peer, true);
            }
            return;
        }
        if let Err((why, until)) = self.open(n, peer, now, scope, printer) {
            log(&peer, &why);
            self.ignore(peer, until.max(now + IGNORE_FOR));
        }
    }

    fn ignore(&mut self, peer: SocketAddr, until: Instant) {
        if self.ignored.len() >= MAX_REMEMBERED {
            self.ignored.clear();
        }
        self.ignored.insert(peer, until);
    }

    /// A datagram from a new address: its header, the server's checks,
    /// then a flow to count or a reverse test to send.
    fn open<'s>(
        &mut self,
        n: usize,
        peer: SocketAddr,
        now: Instant,
        scope: &'s Scope<'s, '_>,
        printer: &'s dyn Printer,
    ) -> Result<(), (String, Instant)>
    where
        'a: 's,
    {
        let b = &self.buf[..n];
        let bad = |e: plumb_proto::iperf2::Iperf2Error| (e.to_string(), now);
        let h = TestHeader::decode(b.get(DATAGRAM_LEN..).unwrap_or_default()).map_err(bad)?;
        // A client without 64-bit sequence numbers leaves the upper word to its pattern.
        let d = Datagram::decode(b, h.wide_seq()).map_err(bad)?;
        // A refused flow's datagrams are ignored to its end, logged once.
        let flow_end = deadline(self.cfg, &h, now);
        if d.id < 0 {
            return Err((
                "a final datagram of a flow this server does not know; ignored".into(),
                now,
            ));
        }
        admit(self.cfg, peer, &h).map_err(|why| (why, flow_end))?;
        if self.active.len() >= MAX_FLOWS {
            return Err((
                "refused: the server counts as many UDP flows as it takes".into(),
                flow_end,
            ));
        }
        if h.mode() == Mode::Reverse {
            let sock = self.sock.try_clone().map_err(|e| (e.to_string(), now))?;
            let cfg = self.cfg;
            scope.spawn(move || send_reverse(cfg, printer, &sock, peer, &h));
            // Its own datagrams (none are expected) are not a new test.
            self.ignore(peer, deadline(cfg, &h, now));
            self.finished += 1;
            return Ok(());
        }
        let mut sink = printer.sink();
        let host = sockets::host_string(&peer);
        sink.note(&format!(
            "Accepted iperf 2 UDP flow from {host}, port {}",
            peer.port()
        ));
        let fd = self.sock.as_raw_fd();
        sink.start(&start_record(
            Role::Server,
            (host, peer.port()),
            test_start(&h, Protocol::Udp, false, self.cfg.interval),
            connected(self.sock, peer).into_iter().collect(),
            (0, 0),
            h.window,
        ));
        let flow = Arc::new(Flow::default());
        let meter = Meter::new(vec![flow.clone()], vec![fd], Protocol::Udp, false, now);
        let mut a = Active {
            header: h,
            rx: UdpReceiver::new(),
            flow,
            meter,
            ticker: Ticker::new(now, self.cfg.interval),
            sink,
            first: now,
            last: now,
            until: deadline(self.cfg, &h, now),
        };
        a.flow.add(n as u64);
        a.rx.record(d.id.unsigned_abs(), d.sec, d.usec, wall());
        a.flow.set_udp(a.rx.stats());
        self.active.insert(peer, a);
        Ok(())
    }

    /// Intervals due, and flows past their time or silent too long.
    fn sweep(&mut self, now: Instant) {
        let idle = self.cfg.rcv_timeout.max(Duration::from_secs(1));
        let mut over = Vec::new();
        for (peer, a) in &mut self.active {
            a.meter.tick(&mut *a.sink, &mut a.ticker, now);
            if now > a.until
                || now.saturating_duration_since(a.last) > idle
                || signals::interrupted()
            {
                over.push(*peer);
            }
        }
        for peer in over {
            log(&peer, "the UDP flow ended without its final datagram");
            self.close(peer, false);
        }
        self.reports.retain(|_, (_, t)| *t > now);
        self.ignored.retain(|_, t| *t > now);
    }

    /// Ends a flow: its last interval and end record, and with `answer`
    /// the server report to the client.
    fn close(&mut self, peer: SocketAddr, answer: bool) {
        let Some(mut a) = self.active.remove(&peer) else {
            return;
        };
        self.finished += 1;
        let st = a.rx.stats();
        let report = ServerReport {
            bytes: a.flow.bytes(),
            duration: a.last.saturating_duration_since(a.first),
            lost: st.lost,
            out_of_order: st.out_of_order,
            datagrams: st.max_seq,
            jitter: Duration::from_secs_f64(st.jitter.clamp(0.0, 1e6)),
        };
        if answer && a.header.upper & upper::NOUDPFIN == 0 {
            let bytes = report.encode();
            let _ = self.sock.send_to(&bytes, peer);
            if self.reports.len() >= MAX_REMEMBERED {
                self.reports.clear();
            }
            self.reports
                .insert(peer, (bytes, Instant::now() + REPORT_KEEP));
        }
        a.meter.finish(&mut *a.sink, &a.ticker, a.last);
        let t = Totals {
            bytes: report.bytes,
            seconds: report.duration.as_secs_f64(),
        };
        let udp = UdpEnd {
            jitter_ms: st.jitter * 1000.0,
            lost: st.lost as i64,
            packets: st.max_seq as i64,
            sent_packets: st.max_seq as i64,
            out_of_order: st.out_of_order as i64,
        };
        a.sink
            .end(&end_record(self.sock.as_raw_fd(), false, t, Some(udp)));
        let _ = a.sink.finish();
        log(
            &peer,
            &format!(
                "iperf 2 UDP test: {} datagrams, {} lost, {} out of order",
                st.max_seq, st.lost, st.out_of_order
            ),
        );
    }
}

fn wall() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

fn connected(sock: &UdpSocket, peer: SocketAddr) -> Option<Connected> {
    let l = sock.local_addr().ok()?;
    Some(Connected::new(
        sock.as_raw_fd(),
        sockets::host_string(&l),
        l.port(),
        sockets::host_string(&peer),
        peer.port(),
    ))
}

fn end_record(fd: i32, sender: bool, t: Totals, udp: Option<UdpEnd>) -> EndRecord {
    EndRecord {
        protocol: Protocol::Udp,
        bidir: false,
        streams: vec![StreamEnd {
            socket: fd,
            sender,
            sent: t,
            received: t,
            retransmits: None,
            tcp: None,
            udp,
        }],
        cpu: CpuUtil::default(),
        sender_tcp_congestion: None,
        receiver_tcp_congestion: None,
        plumb: None,
        server_output_text: None,
        server_output_json: None,
    }
}

/// A reverse UDP test: datagrams to `peer` at the header's rate for its
/// time (within the server's limits), then the final negative ones.
fn send_reverse(
    cfg: &ServerConfig,
    printer: &dyn Printer,
    sock: &UdpSocket,
    peer: SocketAddr,
    h: &TestHeader,
) {
    let len = match h.buf_len as usize {
        0 => crate::iperf2::UDP_LEN as usize,
        n => n.clamp(DATAGRAM_LEN, 65_507),
    };
    let rate = match (h.rate, h.upper & upper::UNITS_PPS != 0) {
        (0, _) => DEFAULT_UDP_RATE,
        (r, true) => r.saturating_mul(len as u64 * 8),
        (r, false) => r,
    };
    let rate = cfg.limits.max_bitrate.map_or(rate, |m| rate.min(m));
    let mut sink = printer.sink();
    let host = sockets::host_string(&peer);
    sink.note(&format!(
        "Accepted iperf 2 reverse UDP test from {host}, port {}",
        peer.port()
    ));
    sink.start(&start_record(
        Role::Server,
        (host, peer.port()),
        test_start(h, Protocol::Udp, true, cfg.interval),
        connected(sock, peer).into_iter().collect(),
        (0, 0),
        h.window,
    ));
    let epoch = Instant::now();
    let end = match h.amount {
        Amount::Time(t) => (epoch + t).min(deadline(cfg, h, epoch) - crate::iperf2::admit::GRACE),
        Amount::Bytes(_) => deadline(cfg, h, epoch) - crate::iperf2::admit::GRACE,
    };
    let flow = Arc::new(Flow::default());
    let mut meter = Meter::new(
        vec![flow.clone()],
        vec![sock.as_raw_fd()],
        Protocol::Udp,
        true,
        epoch,
    );
    let mut ticker = Ticker::new(epoch, cfg.interval);
    let gap = Duration::from_secs_f64(len as f64 * 8.0 / rate.max(1) as f64);
    let mut buf: Vec<u8> = (0..len).map(|i| b'0' + (i % 10) as u8).collect();
    let mut id: i64 = 0;
    let mut next = epoch;
    let budget = match h.amount {
        Amount::Bytes(n) => n,
        Amount::Time(_) => u64::MAX,
    };
    loop {
        let now = Instant::now();
        if now >= end || flow.bytes() >= budget || signals::interrupted() {
            break;
        }
        meter.tick(&mut *sink, &mut ticker, now);
        if now < next {
            std::thread::sleep((next - now).min(end - now).min(Duration::from_millis(20)));
            continue;
        }
        id += 1;
        if Datagram::stamped(id, wall()).encode(&mut buf).is_ok()
            && sock.send_to(&buf, peer).is_ok()
        {
            flow.add(len as u64);
        }
        next = (next + gap).max(now.checked_sub(Duration::from_secs(1)).unwrap_or(now));
    }
    for _ in 0..2 {
        if Datagram::stamped(-(id + 1), wall())
            .encode(&mut buf)
            .is_ok()
        {
            let _ = sock.send_to(&buf, peer);
        }
    }
    let now = Instant::now();
    meter.finish(&mut *sink, &ticker, now);
    let t = Totals {
        bytes: flow.bytes(),
        seconds: now.saturating_duration_since(epoch).as_secs_f64(),
    };
    sink.end(&end_record(sock.as_raw_fd(), true, t, None));
    let _ = sink.finish();
    log(
        &peer,
        &format!("iperf 2 reverse UDP test: {id} datagrams sent"),
    );
}
