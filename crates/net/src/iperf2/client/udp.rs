//! The UDP flows of plumb's iperf 2 client: a paced sender whose
//! datagrams carry iperf 2's sequence numbers and wall-clock stamps and
//! which ends with negative sequence numbers until the server's report
//! comes back, and a receiver for the reverse test.

use std::io;
use std::net::UdpSocket;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use plumb_proto::iperf2::{Datagram, ServerReport, DATAGRAM_LEN, UDP_HEADER_LEN};
use plumb_proto::UdpReceiver;
use plumb_record::engine::{Totals, UdpEnd};

use super::plan::{header, Outcome, Plan, GRACE};
use crate::iperf2::flow::Flow;
use crate::signals;

/// How long a UDP sender repeats its final datagram waiting for the report.
const REPORT_WAIT: Duration = Duration::from_secs(3);
/// Between repeats of the final datagram.
const REPEAT: Duration = Duration::from_millis(10);
/// How long a reverse UDP test waits for the first datagram before it
/// sends its request again.
const ASK_AGAIN: Duration = Duration::from_millis(250);
/// The largest datagram read back.
const MAX_DATAGRAM: usize = 65_536;

/// The wall clock, which iperf 2 stamps datagrams with.
fn wall() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// A datagram buffer holding the test header after the datagram header.
fn udp_buffer(p: &Plan) -> Vec<u8> {
    let mut buf = crate::datapath::payload(p.len.max(UDP_HEADER_LEN), true);
    buf[DATAGRAM_LEN..UDP_HEADER_LEN].copy_from_slice(&header(p).encode());
    buf
}

/// A refused send or read (ICMP port unreachable) named as nothing
/// answering on the server's UDP port.
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

/// Sends paced datagrams, numbered and stamped with the wall clock, for
/// the test's time, then the final exchange: what was sent, and the
/// server's report of what arrived.
pub(super) fn send(s: &UdpSocket, p: &Plan, f: &Flow, epoch: Instant) -> io::Result<Outcome> {
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
            Err(e) if crate::datathread::transient(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::TimedOut,
        "the iperf 2 server sent no report for the UDP test",
    ))
}

/// Asks for a reverse test (again until the first datagram comes) and
/// counts what arrives until the sender's final datagram or the test's
/// end and its grace.
pub(super) fn receive(s: &UdpSocket, p: &Plan, f: &Flow, epoch: Instant) -> io::Result<Outcome> {
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
            Err(e) if crate::datathread::transient(&e) => continue,
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
