//! The TCP streams of plumb's iperf 2 client: a sender that writes iperf
//! 2's test header and then the shared data path's blocks, a receiver for
//! the reverse test, and the test's clock that ends both (their loops read
//! no clock of their own).

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use plumb_proto::iperf2::{HeaderAck, ACK_LEN, TCP_HEADER_LEN};
use plumb_record::engine::Totals;

use super::plan::{header, Outcome, Plan, GRACE};
use crate::datapath::{self, Drain, TcpRecv, TcpSource};
use crate::datathread::{self, Counters, StopAndBudget};
use crate::iperf2::flow::Flow;
use crate::plan::lowat_fits;
use crate::{host, signals};

/// A write or read that makes no progress this long ends the stream.
const STALL: Duration = Duration::from_secs(10);
/// How often the test's clock looks at the time.
const CLOCK_TICK: Duration = Duration::from_millis(10);

/// The test's clock for its TCP streams, whose loops read no clock: at
/// the test's end (or on a signal) it stops the senders and lets the
/// receivers drain; a receiver still reading [`GRACE`] later (at once on a
/// signal) has its connection shut, so no stream outlives the test by more.
pub(super) fn clock(
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

/// Sends iperf 2's test header, then the data until the clock stops it,
/// and waits for the server to close: what was sent, and when it had all.
pub(super) fn send(
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

/// Sends iperf 2's test header for a reverse test, then reads what the
/// server sends until it closes (or the clock ends the wait).
pub(super) fn receive(
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
