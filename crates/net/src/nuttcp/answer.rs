//! One nuttcp client's test on plumb's server: the data connections the
//! request asks for, plumb's session measuring this end, the interval
//! lines a receiving nuttcp server sends its client, and the closing
//! figures the client reads back, both in the format the client asked for.

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use plumb_proto::nuttcp::format::Format;
use plumb_proto::nuttcp::interval::{self, Stretch};
use plumb_proto::nuttcp::reply::Closing;
use plumb_proto::nuttcp::request::Request;
use plumb_proto::params::TestParams;
use plumb_proto::results::{Results, StreamResult};
use plumb_proto::stream_id;
use plumb_record::engine::{EndRecord, IntervalRecord, Role, StartRecord};
use plumb_record::{Latency, Sink};
use plumb_tcpinfo::tcp_info;

use super::control::Control;
use super::data::{self, client_listens};
use super::params::params_of;
use super::ready::Ready;
use crate::config::ServerConfig;
use crate::datapath::Drain;
use crate::errors::TestError;
use crate::handoff::Expected;
use crate::session::{Plan, Session, Stream};
use crate::sockets::{self, DataOptions, StreamSocket};
use crate::{host, signals};

/// How long past its own time a receiving server waits for the client's
/// data to end.
const END_GRACE: Duration = Duration::from_secs(10);

/// Runs an accepted request's data and sends the client its report.
///
/// # Errors
/// The data connections cannot be made, a stream fails, or the client goes.
pub fn serve_test(
    cfg: &ServerConfig,
    ctl: &mut Control,
    peer: SocketAddr,
    req: &Request,
    (handed, ready): (&[Expected], Ready),
    sink: &mut dyn Sink,
) -> Result<(), TestError> {
    let own = match ready {
        Ready::Udp(socks) => return super::udp_server::serve(cfg, ctl, peer, req, socks, sink),
        Ready::Tcp(own) => own,
    };
    let params = params_of(req);
    let opts = DataOptions::of(&params);
    let sends = !req.client_sends;
    let local = ctl.stream.local_addr().map_err(TestError::Control)?.ip();
    let socks = if client_listens(req) {
        data::connect(peer.ip(), req.port, req.streams, Some(local), &opts, sends)
    } else {
        data::accept_all(&own, handed, peer.ip(), &opts, sends)
    }
    .map_err(TestError::Stream)?;
    let mut plan = Plan::of(&params);
    plan.time = req.seconds;
    let mut session = Session::new(plan, req.interval);
    for (i, s) in socks.into_iter().enumerate() {
        session.streams.push(Stream::new(
            stream_id(i),
            sends,
            StreamSocket::Tcp(Arc::new(s)),
        ));
    }
    sink.start(&start_record(&session, &params, req, peer));
    let to_client = ctl.stream.try_clone().map_err(TestError::Control)?;
    let mut out = ToClient {
        inner: sink,
        ctl: (!sends && req.interval > 0.0).then_some(to_client),
        format: req.format,
        total: 0,
    };
    run(&mut session, ctl, req, cfg.rcv_timeout, &mut out)?;
    if !sends && req.interval > 0.0 {
        ctl.send("DONE\n")?;
    }
    let alone = session.end_record(&Results::default(), None);
    let end = session.end_record(
        &mirrored(&session, &alone),
        host::default_congestion_control(),
    );
    ctl.send(&closing(&session, &end, sends).to_lines(sends, req.format))?;
    sink.end(&end);
    let _ = ctl.stream.shutdown(std::net::Shutdown::Both);
    Ok(())
}

/// The start of the operator's report.
fn start_record(session: &Session, p: &TestParams, req: &Request, peer: SocketAddr) -> StartRecord {
    let mut r = session.start_record(
        &plumb_proto::Cookie::from_random(&[b'0'; 36]),
        p,
        0.0,
        req.seconds,
        req.interval,
    );
    r.role = Role::Server;
    r.cookie = String::new();
    r.accepted_connection = Some((sockets::host_string(&peer), peer.port()));
    r
}

/// Sends until the time is up, or receives until the client's data ends;
/// either way the test ends if the client closes its control connection.
fn run(
    session: &mut Session,
    ctl: &mut Control,
    req: &Request,
    idle: Duration,
    sink: &mut dyn Sink,
) -> Result<(), TestError> {
    let now = Instant::now();
    session.start(
        now,
        Drain::UntilEof {
            limit: Duration::from_secs(5),
        },
    );
    let sends = !req.client_sends;
    let time = Duration::from_secs_f64(req.seconds);
    let deadline = if sends {
        now + time
    } else {
        now + time + END_GRACE
    };
    // Bytes moved, and when they last changed: a test that stalls for
    // --rcv-timeout ends.
    let mut progress = (0u64, now);
    loop {
        let now = Instant::now();
        if signals::interrupted() {
            session.finish(now, sink);
            return Err(TestError::Interrupted);
        }
        if now >= deadline || session.all_done() || ctl.closed() {
            break;
        }
        let moved = bytes_moved(session);
        if moved != progress.0 {
            progress = (moved, now);
        } else if now.duration_since(progress.1) > idle {
            session.finish(now, sink);
            return Err(TestError::Ended(format!(
                "no data for {} ms (--rcv-timeout)",
                idle.as_millis()
            )));
        }
        session.tick(now, sink);
        let next = session.poll_at().unwrap_or(deadline).min(deadline);
        let wait = next.min(now + Duration::from_millis(50));
        // The wait is a read of the control connection: the client's close
        // ends the test. Lines it sends meanwhile mean nothing and are dropped.
        let _ = ctl.line_by(wait)?;
    }
    // A receiver's test ended with the client's last byte, not when this
    // loop next looked.
    let at = if sends || !session.all_done() {
        Instant::now()
    } else {
        last_byte(session).unwrap_or_else(Instant::now)
    };
    session.finish(at, sink);
    if ctl.closed() && sends {
        return Err(TestError::ControlClosed);
    }
    if let Some(e) = session.stream_error() {
        return Err(TestError::Ended(format!("data stream: {e}")));
    }
    Ok(())
}

/// Bytes all streams have moved so far.
fn bytes_moved(session: &Session) -> u64 {
    session
        .streams
        .iter()
        .map(|s| s.counters.bytes.load(Relaxed))
        .sum()
}

/// When the last byte of any stream arrived.
fn last_byte(session: &Session) -> Option<Instant> {
    session
        .streams
        .iter()
        .map(|s| s.counters.last_rx_ns.load(Relaxed))
        .max()
        .filter(|ns| *ns > 0)
        .map(|ns| crate::datathread::epoch() + Duration::from_nanos(ns))
}

/// The peer's figures for the operator's report: a nuttcp client reports
/// none to its server, and a TCP test that ran to the end of its data
/// delivered all of it, so each stream's count stands for both ends.
fn mirrored(session: &Session, alone: &EndRecord) -> Results {
    Results {
        sender_has_retransmits: -1,
        streams: session
            .streams
            .iter()
            .zip(&alone.streams)
            .map(|(s, e)| {
                let mine = if s.sender { e.sent } else { e.received };
                StreamResult {
                    id: s.id,
                    bytes: s.counters.bytes.load(Relaxed),
                    retransmits: -1,
                    end_time: mine.seconds,
                    ..StreamResult::default()
                }
            })
            .collect(),
        ..Results::default()
    }
}

/// The figures the client reads back.
fn closing(session: &Session, end: &EndRecord, sends: bool) -> Closing {
    let bytes = end
        .streams
        .iter()
        .map(|s| {
            if sends {
                s.sent.bytes
            } else {
                s.received.bytes
            }
        })
        .sum();
    let seconds = end
        .streams
        .iter()
        .map(|s| {
            if sends {
                s.sent.seconds
            } else {
                s.received.seconds
            }
        })
        .fold(0.0, f64::max);
    let infos: Vec<_> = session
        .streams
        .iter()
        .filter_map(|s| match &s.socket {
            StreamSocket::Tcp(t) => tcp_info(std::os::fd::AsFd::as_fd(&**t)).ok(),
            StreamSocket::Udp(_) => None,
        })
        .collect();
    Closing {
        bytes,
        seconds,
        cpu_percent: Some(end.cpu.host_total.round().clamp(0.0, 100_000.0) as u32),
        retrans: sends.then(|| infos.iter().map(|i| u64::from(i.total_retrans)).sum()),
        rtt_ms: if sends {
            infos.first().map(|i| f64::from(i.rtt) / 1000.0)
        } else {
            None
        },
    }
}

/// The operator's sink, and for a receiving server each interval as a
/// nuttcp line to the client too, in the client's format.
struct ToClient<'a> {
    inner: &'a mut dyn Sink,
    ctl: Option<TcpStream>,
    format: Format,
    /// Bytes of the intervals so far, for `-frunningtotal`.
    total: u64,
}

impl Sink for ToClient<'_> {
    fn start(&mut self, s: &StartRecord) {
        self.inner.start(s);
    }
    fn interval(&mut self, i: &IntervalRecord) {
        if let Some(c) = self.ctl.as_mut() {
            let bytes = i.streams.iter().map(|s| s.bytes).sum();
            self.total += bytes;
            let span = |f: fn(&plumb_record::engine::StreamInterval) -> f64| {
                i.streams.iter().map(f).fold(0.0, f64::max)
            };
            let now = Stretch {
                bytes,
                seconds: span(|s| s.end - s.start),
                udp: None,
            };
            let total = Stretch {
                bytes: self.total,
                seconds: span(|s| s.end),
                udp: None,
            };
            let line = format!("{}\n", interval::line(self.format, &now, &total));
            if std::io::Write::write_all(c, line.as_bytes()).is_err() {
                self.ctl = None;
            }
        }
        self.inner.interval(i);
    }
    fn end(&mut self, e: &EndRecord) {
        self.inner.end(e);
    }
    fn error(&mut self, m: &str) {
        self.inner.error(m);
    }
    fn note(&mut self, l: &str) {
        self.inner.note(l);
    }
    fn latency(&mut self, l: &Latency) {
        self.inner.latency(l);
    }
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
