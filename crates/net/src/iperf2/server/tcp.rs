//! One iperf 2 TCP connection on the server: its header (read with a
//! deadline and a length cap), the acknowledgement 2.1.8 expects, then the
//! data — received to the end, or sent for the header's time with `-R`.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use plumb_proto::iperf2::{Amount, HeaderAck, Mode, TestHeader, MAX_HEADER_LEN, VERSION_2_1_8};
use plumb_record::engine::{CpuUtil, EndRecord, Protocol, Role, StreamEnd, TcpEnd, Totals};
use plumb_record::Connected;
use plumb_tcpinfo::tcp_info;

use crate::config::ServerConfig;
use crate::iperf2::admit::{admit, deadline};
use crate::iperf2::flow::Flow;
use crate::iperf2::meter::{start_record, test_start, Meter};
use crate::iperf2::watch::Watch;
use crate::server::state::log;
use crate::server::Printer;
use crate::{signals, sockets, sockopt};

/// A write that makes no progress this long ends the test.
const STALL: Duration = Duration::from_secs(10);
/// How long a server that sent waits for its data to be acknowledged.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);
/// The largest buffer a client's `-l` may ask the server to send with.
const MAX_SEND_LEN: usize = 1 << 20;

/// Serves one connection; the reason in one line when it ends badly.
pub(crate) fn serve(
    cfg: &ServerConfig,
    printer: &dyn Printer,
    mut conn: TcpStream,
    peer: SocketAddr,
) -> Result<(), String> {
    if !cfg.access.permits(peer.ip()) {
        return Err("refused by --allow/--deny".into());
    }
    let setup = |c: &TcpStream| -> io::Result<()> {
        c.set_nonblocking(false)?;
        c.set_read_timeout(Some(cfg.handshake_timeout.max(Duration::from_millis(100))))?;
        c.set_write_timeout(Some(STALL))
    };
    setup(&conn).map_err(|e| e.to_string())?;
    let (h, header_len) = read_header(&mut conn)?;
    admit(cfg, peer, &h)?;
    if h.wants_ack() {
        conn.write_all(
            &HeaderAck {
                version: VERSION_2_1_8,
            }
            .encode(),
        )
        .map_err(|e| format!("cannot acknowledge the header: {e}"))?;
    }
    conn.set_read_timeout(Some(cfg.rcv_timeout.max(Duration::from_millis(100))))
        .map_err(|e| e.to_string())?;
    let reverse = h.mode() == Mode::Reverse;
    let mut sink = printer.sink();
    let host = sockets::host_string(&peer);
    sink.note(&format!(
        "Accepted iperf 2 connection from {host}, port {}",
        peer.port()
    ));
    sink.start(&start_record(
        Role::Server,
        (host, peer.port()),
        test_start(&h, Protocol::Tcp, reverse, cfg.interval),
        connected(&conn).into_iter().collect(),
        buffers(&conn),
        h.window,
    ));
    let flow = Arc::new(Flow::default());
    if !reverse {
        flow.add(header_len as u64);
    }
    let epoch = Instant::now();
    let until = deadline(cfg, &h, epoch);
    let fd = conn.as_raw_fd();
    let conn = Arc::new(conn);
    let (outcome, tcp) = run_data(&conn, &h, &flow, epoch, until, &mut *sink, cfg.interval);
    if reverse && outcome.is_ok() {
        wait_acknowledged(&conn);
    }
    let seconds = epoch.elapsed().as_secs_f64();
    let _ = conn.shutdown(Shutdown::Both);
    let t = Totals {
        bytes: flow.bytes(),
        seconds,
    };
    if let Err(why) = &outcome {
        sink.error(why);
    }
    let mut end = end_record(fd, reverse, t);
    (end.streams[0].tcp, end.streams[0].retransmits) = tcp;
    sink.end(&end);
    let _ = sink.finish();
    let bps = if seconds > 0.0 {
        t.bytes as f64 * 8.0 / seconds
    } else {
        0.0
    };
    if reverse {
        log(
            &peer,
            &format!("iperf 2 reverse test: {} bytes sent", t.bytes),
        );
    } else {
        log(
            &peer,
            &format!("iperf 2 test: {}", printer.received(t.bytes, bps)),
        );
    }
    outcome
}

/// Waits (at most [`DRAIN_LIMIT`]) until the client has acknowledged every
/// byte this end wrote, so that a sending test's time runs to its data's
/// arrival, as iperf 2's own server counts it, rather than to the last write
/// into the socket buffer, which would overstate the rate by what the buffer
/// held.
fn wait_acknowledged(conn: &TcpStream) {
    let t0 = Instant::now();
    while t0.elapsed() < DRAIN_LIMIT {
        match tcp_info(conn.as_fd()) {
            Ok(i) if i.unacked == 0 && i.notsent_bytes.unwrap_or(0) == 0 => return,
            Ok(_) => std::thread::sleep(Duration::from_millis(1)),
            Err(_) => return,
        }
    }
}

/// Moves the data on its own thread while this one reports intervals (with
/// TCP_INFO when the server sends); the outcome and the sender's summary.
fn run_data(
    conn: &Arc<TcpStream>,
    h: &TestHeader,
    flow: &Arc<Flow>,
    epoch: Instant,
    until: Instant,
    sink: &mut dyn plumb_record::Sink,
    interval: f64,
) -> (Result<(), String>, (Option<TcpEnd>, Option<i64>)) {
    let reverse = h.mode() == Mode::Reverse;
    std::thread::scope(|s| {
        let data = s.spawn(|| {
            let r = if reverse {
                send(conn, h, flow, epoch, until)
            } else {
                receive(conn, flow, until)
            };
            flow.finish();
            r
        });
        let watch = reverse.then(|| Watch::new(conn.clone()));
        let fd = conn.as_raw_fd();
        let mut meter = Meter::new(vec![flow.clone()], vec![fd], Protocol::Tcp, reverse, epoch)
            .with_watches(vec![watch]);
        meter.report(sink, interval);
        let r = data
            .join()
            .unwrap_or_else(|_| Err("the data thread panicked".into()));
        (r, meter.tcp_end(0))
    })
}

/// Reads the header: its first word says how long it is (at most
/// [`MAX_HEADER_LEN`] bytes); the rest must come within the read timeout.
fn read_header(conn: &mut TcpStream) -> Result<(TestHeader, usize), String> {
    let mut buf = [0u8; MAX_HEADER_LEN];
    let what = |e: io::Error| match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            "no iperf 2 test header arrived in time".to_string()
        }
        io::ErrorKind::UnexpectedEof => {
            "the connection closed inside the iperf 2 test header".into()
        }
        _ => format!("reading the iperf 2 test header: {e}"),
    };
    conn.read_exact(&mut buf[..4]).map_err(what)?;
    let flags = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    let len = TestHeader::tcp_len(flags).map_err(|e| e.to_string())?;
    conn.read_exact(&mut buf[4..len.max(4)]).map_err(what)?;
    let h = TestHeader::decode(&buf[..len]).map_err(|e| e.to_string())?;
    Ok((h, len))
}

fn receive(conn: &TcpStream, flow: &Flow, until: Instant) -> Result<(), String> {
    let mut buf = vec![0u8; 128 * 1024];
    let mut c = conn;
    loop {
        if signals::interrupted() {
            return Err("interrupted".into());
        }
        if Instant::now() > until {
            return Err(
                "the client kept sending past the test's end (or the server's maximum); closed"
                    .into(),
            );
        }
        match c.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => flow.add(n as u64),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err("the client went silent (--rcv-timeout)".into());
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Ok(()),
            Err(e) => return Err(format!("receiving: {e}")),
        }
    }
}

fn send(
    conn: &TcpStream,
    h: &TestHeader,
    flow: &Flow,
    epoch: Instant,
    until: Instant,
) -> Result<(), String> {
    let len = match h.buf_len as usize {
        0 => crate::iperf2::TCP_LEN as usize,
        n => n.min(MAX_SEND_LEN),
    };
    let buf: Vec<u8> = (0..len).map(|i| b'0' + (i % 10) as u8).collect();
    let (end, budget) = match h.amount {
        Amount::Time(t) => ((epoch + t).min(until), u64::MAX),
        Amount::Bytes(n) => (until, n),
    };
    let mut c = conn;
    while Instant::now() < end && flow.bytes() < budget && !signals::interrupted() {
        let room = usize::try_from(budget - flow.bytes())
            .unwrap_or(usize::MAX)
            .min(len);
        match c.write(&buf[..room]) {
            Ok(0) => return Err("the client closed the connection".into()),
            Ok(n) => flow.add(n as u64),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
                ) =>
            {
                return Ok(());
            }
            Err(e) => return Err(format!("sending: {e}")),
        }
    }
    Ok(())
}

fn connected(c: &TcpStream) -> Option<Connected> {
    let (l, r) = (c.local_addr().ok()?, c.peer_addr().ok()?);
    Some(Connected::new(
        c.as_raw_fd(),
        sockets::host_string(&l),
        l.port(),
        sockets::host_string(&r),
        r.port(),
    ))
}

pub(super) fn buffers(c: &impl AsFd) -> (u32, u32) {
    (
        sockopt::send_buffer(c.as_fd()).unwrap_or(0),
        sockopt::recv_buffer(c.as_fd()).unwrap_or(0),
    )
}

fn end_record(fd: i32, sender: bool, t: Totals) -> EndRecord {
    EndRecord {
        protocol: Protocol::Tcp,
        bidir: false,
        streams: vec![StreamEnd {
            socket: fd,
            sender,
            sent: t,
            received: t,
            retransmits: None,
            tcp: None,
            udp: None,
        }],
        cpu: CpuUtil::default(),
        sender_tcp_congestion: None,
        receiver_tcp_congestion: None,
        plumb: None,
        server_output_text: None,
        server_output_json: None,
    }
}
