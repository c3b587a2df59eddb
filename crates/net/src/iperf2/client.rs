//! plumb's client against an iperf 2 server (`iperf -s [-u]`): one TCP
//! connection or UDP flow per `-P` stream, each opening with iperf 2's
//! test header; `-R` is iperf 2's reverse test (the server sends on the
//! client's connection or to its UDP port). A UDP sender ends with
//! negative sequence numbers until the server's report comes back. TCP
//! streams move their bytes on the shared data path's loops, as plumb's
//! own streams do ([`crate::datapath`]), with a clock thread to end them.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use plumb_proto::iperf2::{
    Amount, Datagram, HeaderAck, ServerReport, TestHeader, ACK_LEN, DATAGRAM_LEN, TCP_HEADER_LEN,
    UDP_HEADER_LEN,
};
use plumb_proto::UdpReceiver;
use plumb_record::engine::{
    CpuUtil, EndRecord, Protocol, Role, StreamEnd, TcpEnd, TestStart, Totals, UdpEnd,
};
use plumb_record::{Connected, Sink};

use super::flow::Flow;
use super::meter::{start_record, Meter};
use super::watch::Watch;
use crate::config::{ClientConfig, TestSpec, Transport, DEFAULT_UDP_RATE};
use crate::datapath::{self, Drain, TcpRecv, TcpSource};
use crate::datathread::{self, AtBudget, Counters, StopAndBudget};
use crate::errors::TestError;
use crate::session::lowat_fits;
use crate::sockets::{self, DataOptions};
use crate::{host, signals, sockopt};

/// A write or read that makes no progress this long ends the stream.
const STALL: Duration = Duration::from_secs(10);
/// How long past the test's end a receiver waits for the sender to stop.
const GRACE: Duration = Duration::from_secs(5);
/// How long a UDP sender repeats its final datagram waiting for the report.
const REPORT_WAIT: Duration = Duration::from_secs(3);
/// Between repeats of the final datagram.
const REPEAT: Duration = Duration::from_millis(10);
/// How long a reverse UDP test waits for the first datagram before it
/// sends its request again.
const ASK_AGAIN: Duration = Duration::from_millis(250);
/// The largest datagram read back.
const MAX_DATAGRAM: usize = 65_536;
/// How often the test's clock looks at the time.
const CLOCK_TICK: Duration = Duration::from_millis(10);

/// What the test asks of each stream.
#[derive(Debug, Clone, Copy)]
struct Plan {
    udp: bool,
    reverse: bool,
    streams: u32,
    len: usize,
    time: Duration,
    rate: u64,
    port: u16,
    len_given: bool,
}

/// One stream's results.
#[derive(Debug, Default)]
struct Outcome {
    sent: Totals,
    received: Totals,
    udp: Option<UdpEnd>,
    peer_version: Option<String>,
}

/// The plumb flags iperf 2's protocol has no room for, with the reason.
pub fn refused(spec: &TestSpec) -> Option<&'static str> {
    let checks: [(bool, &'static str); 9] = [
        (
            spec.bidir,
            "--bidir: iperf 2's full-duplex test is not built; run -R and a normal test",
        ),
        (
            spec.bytes > 0 || spec.blocks > 0,
            "-n/-k: iperf 2 tests are timed here (-t)",
        ),
        (spec.omit > 0.0, "-O: iperf 2 has no omit period"),
        (
            spec.rr.is_some(),
            "--rr: iperf 2's bounce-back test is not built",
        ),
        (spec.latency, "--latency: iperf3's protocol only"),
        (
            spec.get_server_output,
            "--get-server-output: an iperf 2 server returns no output",
        ),
        (spec.mptcp, "-m: iperf 2 tests run over TCP here"),
        (spec.zerocopy, "-Z: iperf3's protocol only"),
        (spec.parallel > 128, "-P: at most 128 streams"),
    ];
    checks.into_iter().find(|(on, _)| *on).map(|(_, why)| why)
}

/// Runs one test against the iperf 2 server at `cfg.host`, into `sink`.
pub fn run(cfg: &ClientConfig, sink: &mut dyn Sink) -> Result<(), TestError> {
    let r = run_inner(cfg, sink);
    if let Err(e) = &r {
        sink.error(&e.to_string());
    }
    r
}

fn run_inner(cfg: &ClientConfig, sink: &mut dyn Sink) -> Result<(), TestError> {
    signals::install();
    if let Some(why) = refused(&cfg.spec) {
        return Err(TestError::Ended(format!("--tool iperf2: {why}")));
    }
    let plan = plan(cfg);
    let addrs = sockets::resolve(&cfg.host, cfg.port, cfg.family).map_err(TestError::Connect)?;
    sink.note(&format!(
        "Connecting to host {}, port {} (iperf 2)",
        cfg.host, cfg.port
    ));
    let mut streams = Vec::new();
    for _ in 0..plan.streams {
        streams.push(open_any(cfg, &addrs, &plan)?);
    }
    let connected: Vec<Connected> = streams.iter().filter_map(Stream::connected).collect();
    let buffers = streams.first().map_or((0, 0), Stream::buffers);
    sink.start(&start_record(
        Role::Client,
        (cfg.host.clone(), cfg.port),
        test_start(cfg, &plan),
        connected,
        buffers,
        cfg.spec.window.unwrap_or(0),
    ));
    let sockets: Vec<i32> = streams.iter().map(Stream::fd).collect();
    let watches: Vec<Option<Watch>> = streams
        .iter()
        .map(|s| match s {
            Stream::Tcp(t) if !plan.reverse => Some(Watch::new(t.clone())),
            _ => None,
        })
        .collect();
    let flows: Vec<Arc<Flow>> = streams.iter().map(|_| Arc::new(Flow::default())).collect();
    let receivers: Vec<Arc<TcpStream>> = streams
        .iter()
        .filter_map(|s| match s {
            Stream::Tcp(t) if plan.reverse => Some(Arc::clone(t)),
            _ => None,
        })
        .collect();
    let shared = StopAndBudget::new(None, AtBudget::Stop);
    let epoch = Instant::now();
    let cpu0 = host::CpuSnapshot::take().ok();
    type Ended = ((Option<TcpEnd>, Option<i64>), io::Result<Outcome>);
    let (outcomes, plumb): (Vec<Ended>, _) = std::thread::scope(|scope| {
        let shared = &shared;
        let handles: Vec<_> = streams
            .into_iter()
            .zip(&flows)
            .map(|(s, f)| {
                scope.spawn(move || {
                    let r = s.run(&plan, f, epoch, shared);
                    f.finish();
                    r
                })
            })
            .collect();
        scope.spawn(|| clock(&plan, epoch, shared, &flows, &receivers));
        let protocol = if plan.udp {
            Protocol::Udp
        } else {
            Protocol::Tcp
        };
        let mut meter = Meter::new(
            flows.clone(),
            sockets.clone(),
            protocol,
            !plan.reverse,
            epoch,
        )
        .with_watches(watches);
        meter.report(sink, cfg.spec.interval);
        let done: Vec<io::Result<Outcome>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("a stream's thread panicked")))
            })
            .collect();
        let tcp_send = !plan.udp && !plan.reverse;
        let ended = (0..done.len())
            .map(|i| meter.tcp_end(i))
            .zip(done)
            .collect();
        (ended, tcp_send.then(|| meter.end_plumb(true)))
    });
    let mut ends = Vec::new();
    for (((tcp, retransmits), o), socket) in outcomes.into_iter().zip(&sockets) {
        let o = o.map_err(|e| TestError::Ended(format!("iperf 2 test: {e}")))?;
        if let Some(v) = &o.peer_version {
            sink.note(&format!("iperf {v} server"));
        }
        let mut end = stream_end(*socket, !plan.reverse, o);
        end.tcp = tcp;
        end.retransmits = retransmits;
        ends.push(end);
    }
    let mut end = end_record(&plan, ends);
    end.plumb = plumb;
    if let (Some(a), Ok(b)) = (cpu0, host::CpuSnapshot::take()) {
        // This end's CPU only: an iperf 2 server reports none of its own.
        let u = b.usage_since(&a, epoch.elapsed());
        end.cpu.host_total = u.process_total;
        end.cpu.host_user = u.process_user;
        end.cpu.host_system = u.process_system;
    }
    sink.end(&end);
    Ok(())
}

fn plan(cfg: &ClientConfig) -> Plan {
    let s = &cfg.spec;
    let udp = s.transport == Transport::Udp;
    let default_len = if udp { super::UDP_LEN } else { super::TCP_LEN };
    Plan {
        udp,
        reverse: s.reverse,
        streams: s.parallel.max(1),
        len: s.len.unwrap_or(default_len).max(1) as usize,
        time: Duration::from_secs_f64(s.time.clamp(0.0, 86_400.0)),
        rate: s
            .bandwidth
            .unwrap_or(if udp { DEFAULT_UDP_RATE } else { 0 }),
        port: cfg.port,
        len_given: s.len.is_some() || udp,
    }
}

fn test_start(cfg: &ClientConfig, p: &Plan) -> TestStart {
    TestStart {
        protocol: if p.udp { Protocol::Udp } else { Protocol::Tcp },
        num_streams: p.streams,
        blksize: p.len as u64,
        omit: 0.0,
        duration: p.time.as_secs_f64(),
        bytes: 0,
        blocks: 0,
        reverse: p.reverse,
        bidir: false,
        tos: u32::from(cfg.spec.tos),
        target_bitrate: if p.udp { p.rate } else { 0 },
        interval: cfg.spec.interval,
    }
}

/// The header every stream of this test sends.
fn header(p: &Plan) -> TestHeader {
    let mut h = TestHeader::client(p.udp, p.reverse, p.streams, p.port, Amount::Time(p.time));
    if p.len_given {
        h.buf_len = p.len as u32;
    }
    h.rate = p.rate;
    h
}

/// A connected stream, before its thread runs it.
enum Stream {
    Tcp(Arc<TcpStream>),
    Udp(UdpSocket),
}

fn open_any(cfg: &ClientConfig, addrs: &[SocketAddr], p: &Plan) -> Result<Stream, TestError> {
    let mut last = None;
    for a in addrs {
        match open(cfg, *a, p) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(TestError::Connect(
        last.unwrap_or_else(|| io::Error::other("no address")),
    ))
}

fn open(cfg: &ClientConfig, addr: SocketAddr, p: &Plan) -> io::Result<Stream> {
    let o = DataOptions {
        window: cfg.spec.window,
        mss: cfg.spec.mss,
        nodelay: cfg.spec.nodelay,
        congestion: cfg.spec.congestion.clone(),
        tos: cfg.spec.tos,
        ..DataOptions::default()
    };
    if p.udp {
        let s = sockets::connect_udp(addr, cfg.bind, cfg.cport, &o, |s| cfg.local.udp_data(s))?;
        return Ok(Stream::Udp(s));
    }
    let s = sockets::connect_tcp(addr, cfg.bind, cfg.cport, cfg.connect_timeout, |s| {
        cfg.local.tcp_data(s, addr)?;
        sockets::pre_connect(s, &o, !p.reverse, p.reverse, true)
    })?;
    sockets::post_accept(&s, &o, !p.reverse)?;
    Ok(Stream::Tcp(Arc::new(s)))
}

impl Stream {
    fn fd(&self) -> i32 {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Udp(s) => s.as_raw_fd(),
        }
    }

    fn connected(&self) -> Option<Connected> {
        let (l, r) = match self {
            Stream::Tcp(s) => (s.local_addr().ok()?, s.peer_addr().ok()?),
            Stream::Udp(s) => (s.local_addr().ok()?, s.peer_addr().ok()?),
        };
        Some(Connected::new(
            self.fd(),
            sockets::host_string(&l),
            l.port(),
            sockets::host_string(&r),
            r.port(),
        ))
    }

    fn buffers(&self) -> (u32, u32) {
        let fd = match self {
            Stream::Tcp(s) => s.as_fd(),
            Stream::Udp(s) => s.as_fd(),
        };
        (
            sockopt::send_buffer(fd).unwrap_or(0),
            sockopt::recv_buffer(fd).unwrap_or(0),
        )
    }

    fn run(
        self,
        p: &Plan,
        f: &Flow,
        epoch: Instant,
        shared: &StopAndBudget,
    ) -> io::Result<Outcome> {
        match (self, p.reverse) {
            (Stream::Tcp(s), false) => tcp_send(&s, p, f, epoch, shared),
            (Stream::Tcp(s), true) => tcp_receive(&s, p, f, epoch, shared),
            (Stream::Udp(s), false) => udp_send(&s, p, f, epoch),
            (Stream::Udp(s), true) => udp_receive(&s, p, f, epoch),
        }
    }
}

/// The wall clock, which iperf 2 stamps datagrams with.
fn wall() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// The test's clock for its TCP streams, whose loops read no clock: at
/// the test's end (or on a signal) it stops the senders and lets the
/// receivers drain; a receiver still reading [`GRACE`] later (at once on a
/// signal) has its connection shut, so no stream outlives the test by more.
fn clock(
    p: &Plan,
    epoch: Instant,
    shared: &StopAndBudget,
    flows: &[Arc<Flow>],
    receivers: &[Arc<TcpStream>],
) {
    let end = epoch + p.time;
    let hard_end = end + GRACE;
    while !flows.iter().all(|f| f.is_done()) {
        let now = Instant::now();
        let interrupted = signals::interrupted();
        if now >= end || interrupted {
            shared.stop.store(true, Relaxed);
            shared.stop_receivers.store(true, Relaxed);
        }
        if now >= hard_end || interrupted {
            for (s, f) in receivers.iter().zip(flows) {
                if !f.is_done() {
                    if !interrupted {
                        f.counters().fail(format!(
                            "the iperf 2 server had not ended its stream {} s after the test's end",
                            GRACE.as_secs()
                        ));
                    }
                    let _ = s.shutdown(Shutdown::Both);
                }
            }
            return;
        }
        let next = if now < end {
            end.min(now + CLOCK_TICK)
        } else {
            now + CLOCK_TICK
        };
        std::thread::sleep(next - now);
    }
}

fn tcp_send(
    s: &TcpStream,
    p: &Plan,
    f: &Flow,
    epoch: Instant,
    shared: &StopAndBudget,
) -> io::Result<Outcome> {
    let mut w = s;
    s.set_write_timeout(Some(STALL))?;
    s.set_read_timeout(Some(STALL))?;
    w.write_all(&header(p).encode())?;
    f.add(TCP_HEADER_LEN as u64);
    // `0123456789…`, as iperf 2 fills its buffers, in a page-aligned block
    // as plumb's own senders write; into the batch scheduling class after
    // the first block, as they go. The loop shuts the write side at the end.
    let block = Arc::new(datapath::payload_block(p.len, true));
    datapath::tcp_send(s, TcpSource::Copy(block), shared, f.counters(), None, true);
    let sent = Totals {
        bytes: f.bytes(),
        seconds: epoch.elapsed().as_secs_f64(),
    };
    if let Some(e) = f.counters().failure() {
        return Err(io::Error::other(format!(
            "the server dropped the connection ({e}); is it iperf 2's `iperf -s`?"
        )));
    }
    // The server closes once it has read to the end: then it has every
    // byte, and the receiver's time runs to here (the sender's own stops at
    // its last write, which the socket buffer still held), as iperf 2's
    // client counts its test.
    let peer_version = drain_until_close(s)?;
    Ok(Outcome {
        sent,
        received: Totals {
            seconds: epoch.elapsed().as_secs_f64(),
            ..sent
        },
        udp: None,
        peer_version,
    })
}

/// Reads what the server sends after the client's last byte (its header
/// acknowledgement, if it sent one) until it closes; the version the
/// acknowledgement names.
fn drain_until_close(mut s: &TcpStream) -> io::Result<Option<String>> {
    let mut first = Vec::with_capacity(ACK_LEN);
    let mut buf = [0u8; 4096];
    let until = Instant::now() + STALL;
    let not_closed =
        || io::Error::other("the iperf 2 server did not close the connection after the test");
    loop {
        if Instant::now() > until {
            return Err(not_closed());
        }
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let room = ACK_LEN.saturating_sub(first.len()).min(n);
                first.extend_from_slice(&buf[..room]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => break,
            // The read timeout is the whole wait.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(not_closed())
            }
            Err(e) => return Err(e),
        }
    }
    Ok(HeaderAck::decode(&first).ok().map(|a| a.version_text()))
}

fn tcp_receive(
    s: &TcpStream,
    p: &Plan,
    f: &Flow,
    epoch: Instant,
    shared: &StopAndBudget,
) -> io::Result<Outcome> {
    let mut w = s;
    s.set_write_timeout(Some(STALL))?;
    w.write_all(&header(p).encode())?;
    // As plumb's own receivers read: in the batch scheduling class, with
    // `SO_RCVLOWAT` while the streams' threads fit the CPUs, to the end of
    // the stream; the clock bounds the wait.
    let _ = host::batch_current_thread();
    let how = TcpRecv {
        len: p.len.max(64 * 1024),
        skip_copy: false,
        clamp: None,
        lowat: lowat_fits(p.streams as usize, host::online_cpus()),
        file: None,
    };
    let c = f.counters();
    datapath::tcp_recv(s, how, None, shared, c, Drain::UntilEof { limit: GRACE });
    if f.bytes() == 0 && !signals::interrupted() {
        return Err(io::Error::other(
            "the iperf 2 server sent nothing for the reverse test",
        ));
    }
    if let Some(e) = c.failure() {
        return Err(io::Error::other(e));
    }
    let t = Totals {
        bytes: f.bytes(),
        seconds: last_byte(c).map_or(0.0, |l| l.saturating_duration_since(epoch).as_secs_f64()),
    };
    Ok(Outcome {
        sent: t,
        received: t,
        udp: None,
        peer_version: None,
    })
}

/// When a receiving stream's last byte came: its last read after the
/// test's end when it drained any, else the end of its stream (the peer
/// closes after its last write).
fn last_byte(c: &Counters) -> Option<Instant> {
    match c.last_rx_ns.load(Relaxed) {
        0 => c.ended_at(),
        ns => Some(datathread::epoch() + Duration::from_nanos(ns)),
    }
}

/// A datagram buffer holding the test header after the datagram header.
fn udp_buffer(p: &Plan) -> Vec<u8> {
    let mut buf = crate::datapath::payload(p.len.max(UDP_HEADER_LEN), true);
    buf[DATAGRAM_LEN..UDP_HEADER_LEN].copy_from_slice(&header(p).encode());
    buf
}

fn refused_hint(e: io::Error, port: u16) -> io::Error {
    if e.kind() == io::ErrorKind::ConnectionRefused {
        io::Error::new(
            e.kind(),
            format!("nothing answers on UDP port {port} (is the server `iperf -s -u`?)"),
        )
    } else {
        e
    }
}

fn udp_send(s: &UdpSocket, p: &Plan, f: &Flow, epoch: Instant) -> io::Result<Outcome> {
    let mut buf = udp_buffer(p);
    let gap = if p.rate > 0 {
        Duration::from_secs_f64(buf.len() as f64 * 8.0 / p.rate as f64)
    } else {
        Duration::ZERO
    };
    let end = epoch + p.time;
    let mut id: i64 = 0;
    let mut next = epoch;
    loop {
        let now = Instant::now();
        if now >= end || signals::interrupted() {
            break;
        }
        if now < next {
            std::thread::sleep((next - now).min(end - now));
            continue;
        }
        id += 1;
        Datagram::stamped(id, wall())
            .encode(&mut buf)
            .map_err(io::Error::other)?;
        match s.send(&buf) {
            Ok(n) => f.add(n as u64),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
            Err(e) => return Err(refused_hint(e, p.port)),
        }
        // After a stall, catch up at most one second's worth.
        next = (next + gap).max(now.checked_sub(Duration::from_secs(1)).unwrap_or(now));
    }
    let seconds = epoch.elapsed().as_secs_f64();
    let report = final_exchange(s, &mut buf, id + 1).map_err(|e| refused_hint(e, p.port))?;
    Ok(Outcome {
        sent: Totals {
            bytes: f.bytes(),
            seconds,
        },
        received: Totals {
            bytes: report.bytes,
            seconds: report.duration.as_secs_f64(),
        },
        udp: Some(UdpEnd {
            jitter_ms: report.jitter.as_secs_f64() * 1000.0,
            lost: report.lost as i64,
            packets: report.datagrams as i64,
            sent_packets: f.packets() as i64,
            out_of_order: report.out_of_order as i64,
        }),
        peer_version: None,
    })
}

/// Sends the final datagram (sequence number `-last`) every 10 ms until
/// the server's report comes back, for at most [`REPORT_WAIT`].
fn final_exchange(s: &UdpSocket, buf: &mut [u8], last: i64) -> io::Result<ServerReport> {
    s.set_read_timeout(Some(REPEAT))?;
    let until = Instant::now() + REPORT_WAIT;
    let mut rb = vec![0u8; MAX_DATAGRAM];
    while Instant::now() < until {
        Datagram::stamped(-last, wall())
            .encode(buf)
            .map_err(io::Error::other)?;
        match s.send(buf) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        match s.recv(&mut rb) {
            Ok(n) if ServerReport::looks_like_report(&rb[..n]) => {
                return ServerReport::decode(&rb[..n]).map_err(io::Error::other);
            }
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::TimedOut,
        "the iperf 2 server sent no report for the UDP test",
    ))
}

fn udp_receive(s: &UdpSocket, p: &Plan, f: &Flow, epoch: Instant) -> io::Result<Outcome> {
    let mut request = udp_buffer(p);
    Datagram::stamped(1, wall())
        .encode(&mut request)
        .map_err(io::Error::other)?;
    s.send(&request).map_err(|e| refused_hint(e, p.port))?;
    s.set_read_timeout(Some(ASK_AGAIN))?;
    let hard_end = epoch + p.time + GRACE;
    let first_by = epoch + GRACE;
    let mut rx = UdpReceiver::new();
    let mut rb = vec![0u8; MAX_DATAGRAM];
    let mut last = epoch;
    loop {
        let now = Instant::now();
        if now > hard_end || signals::interrupted() {
            break;
        }
        if rx.stats().received == 0 && now > first_by {
            return Err(io::Error::other(
                "the iperf 2 server sent no datagrams for the reverse test",
            ));
        }
        let n = match s.recv(&mut rb) {
            Ok(n) => n,
            // A server between two tests may miss the request (iperf 2
            // rebinds its UDP listener after each): ask again until the
            // first datagram comes.
            Err(e) if rx.stats().received == 0 => {
                if !matches!(e.kind(), io::ErrorKind::Interrupted) {
                    let _ = s.send(&request);
                }
                continue;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(e) => return Err(refused_hint(e, p.port)),
        };
        let d = Datagram::decode(&rb[..n], true).map_err(io::Error::other)?;
        if d.id <= 0 {
            break;
        }
        rx.record(d.id as u64, d.sec, d.usec, wall());
        f.add(n as u64);
        f.set_udp(rx.stats());
        last = Instant::now();
    }
    let st = rx.stats();
    let seconds = last.saturating_duration_since(epoch).as_secs_f64();
    let per = f.bytes().checked_div(st.received).unwrap_or(0);
    Ok(Outcome {
        sent: Totals {
            bytes: f.bytes() + st.lost * per,
            seconds,
        },
        received: Totals {
            bytes: f.bytes(),
            seconds,
        },
        udp: Some(UdpEnd {
            jitter_ms: st.jitter * 1000.0,
            lost: st.lost as i64,
            packets: st.max_seq as i64,
            sent_packets: st.max_seq as i64,
            out_of_order: st.out_of_order as i64,
        }),
        peer_version: None,
    })
}

fn stream_end(socket: i32, sender: bool, o: Outcome) -> StreamEnd {
    StreamEnd {
        socket,
        sender,
        sent: o.sent,
        received: o.received,
        retransmits: None,
        tcp: None,
        udp: o.udp,
    }
}

fn end_record(p: &Plan, streams: Vec<StreamEnd>) -> EndRecord {
    EndRecord {
        protocol: if p.udp { Protocol::Udp } else { Protocol::Tcp },
        bidir: false,
        streams,
        cpu: CpuUtil::default(),
        sender_tcp_congestion: None,
        receiver_tcp_congestion: None,
        plumb: None,
        server_output_text: None,
        server_output_json: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_iperf2_has_no_room_for_are_refused() {
        assert_eq!(refused(&TestSpec::default()), None);
        type Set = fn(&mut TestSpec);
        let cases: [(Set, &str); 6] = [
            (|s| s.bidir = true, "--bidir"),
            (|s| s.bytes = 1000, "-n/-k"),
            (|s| s.omit = 1.0, "-O"),
            (|s| s.latency = true, "--latency"),
            (|s| s.get_server_output = true, "--get-server-output"),
            (|s| s.zerocopy = true, "-Z"),
        ];
        for (set, flag) in cases {
            let mut s = TestSpec::default();
            set(&mut s);
            assert!(refused(&s).is_some_and(|w| w.starts_with(flag)), "{flag}");
        }
    }

    fn config(spec: TestSpec) -> ClientConfig {
        ClientConfig {
            tool: plumb_proto::tool::Tool::Iperf2,
            host: "h".into(),
            port: 5001,
            bind: None,
            cport: None,
            family: crate::config::Family::Any,
            connect_timeout: None,
            rcv_timeout: Duration::from_secs(1),
            spec,
            auth: None,
            local: crate::local::LocalOptions::default(),
            debug: false,
            flip: false,
        }
    }

    #[test]
    fn defaults_are_iperf2s() {
        let tcp = plan(&config(TestSpec::default()));
        assert_eq!((tcp.len, tcp.rate, tcp.len_given), (128 * 1024, 0, false));
        let udp = plan(&config(TestSpec {
            transport: Transport::Udp,
            ..TestSpec::default()
        }));
        assert_eq!((udp.len, udp.rate), (1470, 1 << 20));
        let set = plan(&config(TestSpec {
            len: Some(9000),
            bandwidth: Some(5_000_000),
            parallel: 4,
            ..TestSpec::default()
        }));
        assert_eq!((set.len, set.rate, set.streams), (9000, 5_000_000, 4));
        assert_eq!(header(&set).buf_len, 9000);
    }

    #[test]
    fn the_header_carries_the_plan() {
        let p = Plan {
            udp: true,
            reverse: true,
            streams: 3,
            len: 1000,
            time: Duration::from_secs(5),
            rate: 10_000_000,
            port: 5001,
            len_given: true,
        };
        let h = TestHeader::decode(&header(&p).encode()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((h.threads, h.buf_len, h.rate), (3, 1000, 10_000_000));
        assert_eq!(h.amount, Amount::Time(Duration::from_secs(5)));
        assert_eq!(h.mode(), plumb_proto::iperf2::Mode::Reverse);
    }
}
