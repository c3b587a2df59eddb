//! plumb's client against an iperf 2 server (`iperf -s [-u]`): one TCP
//! connection or UDP flow per `-P` stream, each opening with iperf 2's
//! test header; `-R` is iperf 2's reverse test (the server sends on the
//! client's connection or to its UDP port). A UDP sender ends with
//! negative sequence numbers until the server's report comes back. TCP
//! streams move their bytes on the shared data path's loops, as plumb's
//! own streams do ([`crate::datapath`]), with a clock thread to end them
//! ([`tcp`]); the UDP flows are their own loops ([`udp`]). This module
//! opens the streams, runs them and puts their record together.

use std::io;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use plumb_record::engine::{CpuUtil, EndRecord, Protocol, Role, StreamEnd, TcpEnd, TestStart};
use plumb_record::{Connected, Sink};

mod plan;
mod tcp;
mod udp;

use plan::{Outcome, Plan};

use super::flow::Flow;
use super::meter::{start_record, Meter};
use super::watch::Watch;
use crate::config::{ClientConfig, TestSpec, Transport, DEFAULT_UDP_RATE};
use crate::datathread::{AtBudget, StopAndBudget};
use crate::errors::TestError;
use crate::sockets::{self, DataOptions};
use crate::{host, signals, sockopt};

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
    let epoch = Instant::now();
    let cpu0 = host::CpuSnapshot::take().ok();
    let (outcomes, plumb) = run_streams(&plan, streams, epoch, cfg.spec.interval, sink);
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

/// One stream's end as its thread and the meter saw it: TCP_INFO's
/// figures and retransmissions, and the stream's outcome.
type Ended = ((Option<TcpEnd>, Option<i64>), io::Result<Outcome>);

/// Runs every stream on its own thread (and the TCP streams' clock),
/// reporting intervals into `sink` every `interval` seconds meanwhile;
/// each stream's end, and plumb's own figures of a TCP sending test.
fn run_streams(
    plan: &Plan,
    streams: Vec<Stream>,
    epoch: Instant,
    interval: f64,
    sink: &mut dyn Sink,
) -> (Vec<Ended>, Option<plumb_record::EndPlumb>) {
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
    std::thread::scope(|scope| {
        let shared = &shared;
        let handles: Vec<_> = streams
            .into_iter()
            .zip(&flows)
            .map(|(s, f)| {
                scope.spawn(move || {
                    let r = s.run(plan, f, epoch, shared);
                    f.finish();
                    r
                })
            })
            .collect();
        scope.spawn(|| tcp::clock(plan, epoch, shared, &flows, &receivers));
        let protocol = if plan.udp {
            Protocol::Udp
        } else {
            Protocol::Tcp
        };
        let mut meter = Meter::new(flows.clone(), sockets, protocol, !plan.reverse, epoch)
            .with_watches(watches);
        meter.report(sink, interval);
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
    })
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
            (Stream::Tcp(s), false) => tcp::send(&s, p, f, epoch, shared),
            (Stream::Tcp(s), true) => tcp::receive(&s, p, f, epoch, shared),
            (Stream::Udp(s), false) => udp::send(&s, p, f, epoch),
            (Stream::Udp(s), true) => udp::receive(&s, p, f, epoch),
        }
    }
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
    use super::plan::header;
    use super::*;
    use plumb_proto::iperf2::{Amount, TestHeader};

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
