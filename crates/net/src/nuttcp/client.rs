//! plumb's client against a nuttcp server (`--tool nuttcp`): iperf3's
//! flags mapped onto nuttcp's request, the data connections opened (or,
//! with `--flip`, accepted from the server), plumb's own session measuring
//! this end, and the server's closing figures read back as the peer's
//! results, so the record, `-J` and `--why` are those of any plumb test.

use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use plumb_proto::nuttcp::format::Format;
use plumb_proto::nuttcp::reply::{self, Closing};
use plumb_proto::nuttcp::request::{Request, RATE_UNLIMITED};
use plumb_proto::results::{Results, StreamResult};
use plumb_proto::stream_id;
use plumb_record::engine::{EndRecord, Role};
use plumb_record::Sink;

use super::control::{read_closing, Control, MAX_TRAILING_LINES};
use super::data::{self, client_listens};
use crate::config::{ClientConfig, Transport};
use crate::datapath::Drain;
use crate::errors::TestError;
use crate::session::{Plan, Session, Stream};
use crate::sockets::{DataOptions, StreamSocket};
use crate::{host, signals};

/// How long the server has for each step of the exchange.
const STEP: Duration = Duration::from_secs(10);
/// nuttcp's default TCP buffer (write size).
const TCP_BUFLEN: u32 = 65_536;
/// nuttcp's default UDP datagram size.
pub const UDP_BUFLEN: u32 = 8192;
/// The UDP rate without `-b`, kbit/s: iperf3's 1 Mbit/s, as plumb keeps
/// iperf3's flags (nuttcp's own client sets no limit).
const UDP_RATE_KBPS: u64 = 1000;

/// Client flags a nuttcp server cannot be asked for, with the reason.
pub fn refused(cfg: &ClientConfig) -> Option<&'static str> {
    let s = &cfg.spec;
    let no = [
        (s.bidir, "--bidir: nuttcp tests one direction at a time"),
        (
            s.bytes > 0 || s.blocks > 0,
            "-n/-k: plumb asks a nuttcp server for a timed test (-t)",
        ),
        (s.omit > 0.0, "-O: nuttcp has no omitted start"),
        (
            s.rr.is_some(),
            "--rr/--crr: nuttcp measures throughput only",
        ),
        (s.latency, "--latency: nuttcp has no latency probe"),
        (
            cfg.auth.is_some(),
            "--username: nuttcp has no authentication",
        ),
        (
            s.get_server_output,
            "--get-server-output: a nuttcp server's figures are in the record already",
        ),
        (
            cfg.port == u16::MAX,
            "-p 65535: the nuttcp data port is the control port + 1",
        ),
        (
            s.transport == Transport::Udp && cfg.flip,
            "-u with --flip: nuttcp has no flipped UDP test (its own client refuses -u -F)",
        ),
        (
            s.transport == Transport::Udp && s.len.is_some_and(|l| !(32..=65_507).contains(&l)),
            "-u -l outside 32 to 65507 bytes",
        ),
    ];
    no.into_iter().find(|(bad, _)| *bad).map(|(_, why)| why)
}

/// The request for `cfg`'s test.
pub fn request(cfg: &ClientConfig) -> Request {
    let s = &cfg.spec;
    let udp = s.transport == Transport::Udp;
    let rate_kbps = match s.bandwidth {
        Some(b) if b > 0 => (b / 1000).max(1),
        _ if udp => UDP_RATE_KBPS,
        _ => RATE_UNLIMITED,
    };
    Request {
        buflen: s.len.unwrap_or(if udp { UDP_BUFLEN } else { TCP_BUFLEN }),
        window: s.window.unwrap_or(0),
        streams: s.parallel.max(1),
        rate_kbps,
        port: cfg.port.saturating_add(1),
        client_sends: !s.reverse,
        seconds: s.time,
        udp,
        interval: s.interval,
        flip: cfg.flip,
        format: Format::DEFAULT,
    }
}

/// Runs one test against a nuttcp server, reporting into `sink`.
///
/// # Errors
/// The step that failed, also sent to `sink` as an error.
pub fn run(cfg: &ClientConfig, sink: &mut dyn Sink) -> Result<(), TestError> {
    let r = run_inner(cfg, sink);
    if let Err(e) = &r {
        sink.error(&e.to_string());
    }
    r
}

fn run_inner(cfg: &ClientConfig, sink: &mut dyn Sink) -> Result<(), TestError> {
    signals::install();
    if let Some(why) = refused(cfg) {
        return Err(TestError::Ended(format!(
            "--tool nuttcp does not take {why}"
        )));
    }
    let (stream, server) = connect_control(cfg, sink)?;
    let mut ctl = Control::new(stream);
    let req = request(cfg);
    let params = super::params::client_params(cfg, &req);
    let opts = DataOptions::of(&params);
    let local_ip = ctl.stream.local_addr().map_err(TestError::Control)?.ip();
    // The receiving end listens and the transmitter connects, unless
    // flipped: listen before the server is asked to connect.
    let listens = client_listens(&req);
    let listeners = if listens && !req.udp {
        data::listen(local_ip, req.port, req.streams, &opts, req.client_sends)
            .map_err(TestError::Stream)?
    } else {
        Vec::new()
    };
    let bound = if req.udp && !req.client_sends {
        Some(super::udp_client::bind_receiver(local_ip, &req)?)
    } else {
        None
    };
    handshake(&mut ctl, &req)?;
    if req.udp {
        return super::udp_client::run(cfg, &req, &mut ctl, server, bound, sink);
    }
    let socks = if listens {
        data::accept_from(&listeners, server.ip(), &opts, req.client_sends)
    } else {
        data::connect(
            server.ip(),
            req.port,
            req.streams,
            cfg.bind,
            &opts,
            req.client_sends,
        )
    }
    .map_err(TestError::Stream)?;
    let mut plan = Plan::of(&params);
    plan.time = cfg.spec.time;
    let mut session = Session::new(plan, cfg.spec.interval);
    for (i, s) in socks.into_iter().enumerate() {
        let socket = StreamSocket::Tcp(Arc::new(s));
        session
            .streams
            .push(Stream::new(stream_id(i), req.client_sends, socket));
    }
    let mut start = session.start_record(
        &plumb_proto::Cookie::from_random(&[b'0'; 36]),
        &params,
        0.0,
        cfg.spec.time,
        cfg.spec.interval,
    );
    start.role = Role::Client;
    start.connecting_to = Some((cfg.host.clone(), cfg.port));
    start.cookie = String::new();
    sink.start(&start);
    run_session(&mut session, cfg.spec.time, sink)?;
    let closing = read_closing(&mut ctl)?;
    let peer = peer_results(&session, &closing, req.client_sends);
    let end = session.end_record(&peer, host::default_congestion_control());
    sink.end(&end);
    sink.note(&brief(&end, &closing, req.client_sends).line());
    Ok(())
}

/// Connects the control connection to the first of the host's addresses that answers.
fn connect_control(
    cfg: &ClientConfig,
    sink: &mut dyn Sink,
) -> Result<(TcpStream, SocketAddr), TestError> {
    sink.note(&format!(
        "Connecting to nuttcp server {}, control port {}",
        cfg.host, cfg.port
    ));
    crate::connect::connect_first(cfg, cfg.connect_timeout.or(Some(STEP)))
}

/// Greetings both ways, the request, the server's answer.
pub fn handshake(ctl: &mut Control, req: &Request) -> Result<(), TestError> {
    ctl.send(&reply::hello())?;
    let hello = ctl.expect(Instant::now() + STEP, "greeting")?;
    reply::parse_hello(&hello).map_err(TestError::Protocol)?;
    ctl.send(&req.to_line())?;
    let answer = ctl.expect(Instant::now() + STEP, "answer to the request")?;
    if reply::parse_answer(&answer).is_ok() {
        return Ok(());
    }
    // A refusal: the server's reason, the last line before its closing KO
    // (a stock server opens the refusal with a KO too).
    let mut why = answer;
    let deadline = Instant::now() + STEP;
    for _ in 0..MAX_TRAILING_LINES {
        match ctl.line_by(deadline)? {
            Some(l) if l.starts_with("KO") && why != "KO" => break,
            Some(l) if l.starts_with("KO") => {}
            Some(l) => why = l,
            None => break,
        }
    }
    let why = match why.rsplit_once("Error: ") {
        Some((_, w)) => w,
        None => why.split_once(": ").map_or(why.as_str(), |(_, w)| w),
    };
    Err(TestError::Server(why.to_string()))
}

/// Runs the data for `seconds`, reporting intervals, then ends this end.
fn run_session(session: &mut Session, seconds: f64, sink: &mut dyn Sink) -> Result<(), TestError> {
    let now = Instant::now();
    session.start(
        now,
        Drain::UntilEof {
            limit: Duration::from_secs(5),
        },
    );
    let deadline = now + Duration::from_secs_f64(seconds);
    loop {
        let now = Instant::now();
        if signals::interrupted() {
            session.finish(now, sink);
            return Err(TestError::Interrupted);
        }
        if now >= deadline || session.all_done() {
            break;
        }
        session.tick(now, sink);
        let next = session.poll_at().unwrap_or(deadline).min(deadline);
        std::thread::sleep(
            next.saturating_duration_since(Instant::now())
                .min(Duration::from_millis(50)),
        );
    }
    session.finish(Instant::now(), sink);
    if let Some(e) = session.stream_error() {
        return Err(TestError::Ended(format!("data stream: {e}")));
    }
    Ok(())
}

/// The server's figures as the peer's results, its total shared among the
/// streams as this end counted them.
fn peer_results(session: &Session, c: &Closing, client_sends: bool) -> Results {
    use std::sync::atomic::Ordering::Relaxed;
    let counts: Vec<u64> = session
        .streams
        .iter()
        .map(|s| s.counters.bytes.load(Relaxed))
        .collect();
    let total: u64 = counts.iter().sum();
    let n = counts.len().max(1) as u64;
    let streams = session
        .streams
        .iter()
        .zip(&counts)
        .map(|(s, &mine)| StreamResult {
            id: s.id,
            bytes: if total > 0 {
                (u128::from(c.bytes) * u128::from(mine) / u128::from(total)) as u64
            } else {
                c.bytes / n
            },
            retransmits: if client_sends {
                -1
            } else {
                c.retrans.map_or(-1, |r| r as i64)
            },
            end_time: c.seconds,
            ..StreamResult::default()
        })
        .collect();
    let cpu = f64::from(c.cpu_percent.unwrap_or(0));
    Results {
        cpu_util_total: cpu,
        cpu_util_system: cpu,
        sender_has_retransmits: if client_sends {
            -1
        } else {
            i64::from(c.retrans.is_some())
        },
        streams,
        ..Results::default()
    }
}

/// nuttcp's one-line summary for the test.
fn brief(end: &EndRecord, c: &Closing, client_sends: bool) -> plumb_proto::nuttcp::brief::Brief {
    let bytes = end.streams.iter().map(|s| s.received.bytes).sum();
    let seconds = end
        .streams
        .iter()
        .map(|s| s.received.seconds)
        .fold(0.0, f64::max);
    let (mine, theirs) = (
        end.cpu.host_total.round() as u32,
        end.cpu.remote_total.round() as u32,
    );
    let retrans = end
        .streams
        .iter()
        .filter_map(|s| s.retransmits)
        .map(|r| r.max(0) as u64)
        .sum();
    let rtt_ms = if client_sends {
        end.streams
            .iter()
            .filter_map(|s| s.tcp.as_ref())
            .map(|t| t.mean_rtt as f64 / 1000.0)
            .next()
            .or(c.rtt_ms)
    } else {
        c.rtt_ms
    };
    plumb_proto::nuttcp::brief::Brief {
        bytes,
        seconds,
        tx_cpu: if client_sends { mine } else { theirs },
        rx_cpu: if client_sends { theirs } else { mine },
        retrans: Some(retrans),
        rtt_ms,
        udp_sent: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TestSpec;

    fn cfg(spec: TestSpec, flip: bool) -> ClientConfig {
        ClientConfig {
            host: "127.0.0.1".into(),
            port: 5000,
            bind: None,
            cport: None,
            family: crate::config::Family::default(),
            connect_timeout: None,
            rcv_timeout: Duration::from_secs(120),
            spec,
            auth: None,
            local: crate::local::LocalOptions::default(),
            tool: plumb_proto::tool::Tool::Nuttcp,
            flip,
            debug: false,
        }
    }

    #[test]
    fn iperf3s_flags_become_nuttcps_request() {
        let r = request(&cfg(TestSpec::default(), false));
        assert_eq!((r.port, r.client_sends, r.streams), (5001, true, 1));
        assert_eq!(
            (r.buflen, r.window, r.rate_kbps),
            (65_536, 0, RATE_UNLIMITED)
        );
        let spec = TestSpec {
            reverse: true,
            time: 15.0,
            parallel: 4,
            window: Some(131_072),
            bandwidth: Some(50_000_000),
            interval: 5.0,
            len: Some(8192),
            ..TestSpec::default()
        };
        let r = request(&cfg(spec, true));
        assert!(!r.client_sends && r.flip && !r.udp);
        assert_eq!((r.seconds, r.streams, r.window), (15.0, 4, 131_072));
        assert_eq!((r.rate_kbps, r.interval, r.buflen), (50_000, 5.0, 8192));
        let udp = TestSpec {
            transport: Transport::Udp,
            ..TestSpec::default()
        };
        let r = request(&cfg(udp, false));
        assert_eq!((r.udp, r.buflen, r.rate_kbps), (true, UDP_BUFLEN, 1000));
        let mut c = cfg(TestSpec::default(), false);
        c.spec.bidir = true;
        assert!(refused(&c).is_some_and(|w| w.contains("--bidir")));
        assert!(refused(&cfg(TestSpec::default(), false)).is_none());
        // A sending client connects; with --flip it listens.
        assert!(!client_listens(&request(&cfg(TestSpec::default(), false))));
        assert!(client_listens(&request(&cfg(TestSpec::default(), true))));
    }
}
