//! Self-measurement: what the lab actually does, next to what it was asked.
//!
//! Owns: [`Lab::probe`] (UDP ping-pong for the round trip, a short UDP burst
//! for the link rate) and [`Lab::tcp_transfer`] (one bulk TCP connection from
//! a sender thread in one namespace to a receiver thread in the other, plain
//! std sockets). Every loop here is bounded in time.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::emu::Rate;
use crate::lab::{io_err, Direction, Lab, LabError};
use crate::sys::{self, TcpInfo};
use crate::wire::ETHERNET_OVERHEAD;

/// Result of [`Lab::probe`].
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// Configured round-trip propagation delay.
    pub configured_rtt: Duration,
    /// Smallest measured round trip: the kernel's own RTT sample of a TCP
    /// handshake (SYN → SYN-ACK), so it includes two tiny serialisation
    /// times and the forwarder's release error, but no application scheduling.
    pub rtt_min: Duration,
    /// Median measured round trip.
    pub rtt_median: Duration,
    /// Round trips measured.
    pub rtt_samples: usize,
    /// Handshakes that gave no sample (lost or retransmitted SYN).
    pub rtt_lost: usize,
    /// Configured near→far rate.
    pub configured_rate: Rate,
    /// Measured near→far rate at the wire level (Ethernet framing included,
    /// so it is comparable with the configured rate), from the kernel arrival
    /// stamps of a burst of MTU-sized datagrams at the far end. `None` if the
    /// datagrams it is timed by were lost.
    pub rate: Option<Rate>,
    /// Burst datagrams sent.
    pub burst_sent: u32,
    /// Burst datagrams received.
    pub burst_received: u32,
}

/// Options of [`Lab::tcp_transfer`].
#[derive(Debug, Clone, PartialEq)]
pub struct TransferOptions {
    /// Which way the data goes.
    pub direction: Direction,
    /// How long the receiver measures, from the first byte.
    pub duration: Duration,
    /// Bytes in the first `warmup` after the first byte are not counted in
    /// [`TransferReport::goodput_bps`] (slow start).
    pub warmup: Duration,
    /// `TCP_WINDOW_CLAMP` on the receiver's listening socket, re-asserted on
    /// the connection whenever the kernel raised it (see
    /// [`TransferReport::clamp_reasserted`]).
    pub window_clamp: Option<u32>,
    /// `TCP_CONGESTION` on the sender (e.g. "reno"); None = system default.
    pub congestion: Option<String>,
    /// TCP port on the receiver (0 = any free one).
    pub port: u16,
}

impl Default for TransferOptions {
    fn default() -> Self {
        TransferOptions {
            direction: Direction::NearToFar,
            duration: Duration::from_secs(3),
            warmup: Duration::from_millis(500),
            window_clamp: None,
            congestion: None,
            port: 0,
        }
    }
}

/// Result of [`Lab::tcp_transfer`].
#[derive(Debug, Clone, PartialEq)]
pub struct TransferReport {
    /// Bytes the receiver got within `duration`.
    pub bytes: u64,
    /// Receiver's measuring time (first byte to end).
    pub elapsed: Duration,
    /// Application goodput after the warm-up, bit/s.
    pub goodput_bps: f64,
    /// Application goodput over the whole time, bit/s.
    pub overall_bps: f64,
    /// Sender's `TCP_INFO` at the end.
    pub sender: TcpInfo,
    /// How often the receiver found its window clamp raised by the kernel
    /// and set it again. Linux ≥ 6.8 recomputes `window_clamp` from the
    /// receive buffer whenever the skb scaling ratio changes (typically once,
    /// at the first data), so a clamp set only on the listener ends up as a
    /// 64 KiB window (the clamp did disable window scaling) instead of the
    /// requested one.
    pub clamp_reasserted: u32,
}

const PROBE_PINGS: usize = 8;
const BURST_PAYLOAD: usize = 1472; // 1500-byte IP packets at MTU 1500
/// Datagrams per `UDP_SEGMENT` send: 44 × 1472 + 28 ≤ 65 535.
const BURST_CHUNK: usize = 44;

impl Lab {
    /// Measures the round trip (eight TCP handshakes) and the near→far rate,
    /// for printing beside the configured values. Takes eight round trips plus
    /// ~20 ms of link time and briefly fills up to 80 % of the near→far queue.
    ///
    /// The rate comes from a burst of MTU-sized UDP datagrams sent with
    /// `UDP_SEGMENT` (44 per system call, so the sender outruns any link we
    /// emulate and the queue never runs dry), timed at the far end between
    /// the end of the first send and the end of the last one.
    pub fn probe(&self) -> Result<Probe, LabError> {
        let cfg = self.config();
        let link = &cfg.near_to_far;
        let rtt = cfg.rtt();
        let max_queue = link.rate.wire_time(link.queue_bytes)
            + cfg.far_to_near.rate.wire_time(cfg.far_to_near.queue_bytes);
        let ping_timeout = (rtt * 2 + max_queue).max(Duration::from_millis(200));
        let wire = (BURST_PAYLOAD + 28) as u64 + u64::from(ETHERNET_OVERHEAD);
        // A black hole below the burst's size would swallow it whole.
        let fits = |n: u32| n as usize >= BURST_PAYLOAD + 28;
        let mtu_ok = fits(cfg.mtu) && link.max_packet.is_none_or(fits);
        let by_time = link.rate.bytes_in(Duration::from_millis(20)) / wire;
        let by_queue = link.queue_bytes * 8 / 10 / wire;
        let burst = if mtu_ok {
            by_time.min(by_queue).clamp(6, 2000) as u32
        } else {
            0
        };
        // At least three sends, so the queue is still busy when the last starts.
        let chunk = (burst as usize / 3).clamp(1, BURST_CHUNK);
        let burst_time = link.rate.wire_time(wire * u64::from(burst));
        let far_limit =
            ping_timeout * (PROBE_PINGS as u32 + 2) + burst_time * 2 + rtt + Duration::from_secs(1);

        let far_addr = self.far_addr();
        let bind_far = move |what: &'static str| -> Result<UdpSocket, LabError> {
            let sock = UdpSocket::bind(SocketAddrV4::new(far_addr, 0)).map_err(io_err(what))?;
            sock.set_read_timeout(Some(Duration::from_millis(20)))
                .map_err(io_err("probe socket timeout"))?;
            Ok(sock)
        };
        let (port_tx, port_rx) = mpsc::channel();
        let ping_port_tx = port_tx.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let stop_far = stop.clone();
        let responder = self.spawn_in(crate::Side::Far, move || {
            let l = TcpListener::bind(SocketAddrV4::new(far_addr, 0))
                .map_err(io_err("binding probe listener"))?;
            let port = l.local_addr().map_err(io_err("probe address"))?.port();
            let _ = ping_port_tx.send((0, port));
            accept_until(&l, &stop_far, far_limit)
        })?;
        let receiver = self.spawn_in(crate::Side::Far, move || {
            let sock = bind_far("binding burst receiver")?;
            let _ = sys::set_rcvbuf_force(sock.as_fd(), 16 << 20);
            sys::enable_rx_timestamps(sock.as_fd()).map_err(io_err("SO_TIMESTAMPNS"))?;
            let port = sock.local_addr().map_err(io_err("probe address"))?.port();
            let _ = port_tx.send((1, port));
            receive_burst(&sock, burst, far_limit)
        })?;
        let mut ports = [0u16; 2];
        for _ in 0..2 {
            let (i, p) = port_rx
                .recv_timeout(Duration::from_secs(5))
                .map_err(|_| LabError::Measure("probe responder did not start".into()))?;
            ports[i] = p;
        }
        let near_addr = self.near_addr();
        let pinger = self.spawn_in(crate::Side::Near, move || {
            let rtts = handshake_rtts(SocketAddrV4::new(far_addr, ports[0]), ping_timeout);
            let burst_sock = UdpSocket::bind(SocketAddrV4::new(near_addr, 0))
                .map_err(io_err("binding probe sender"))?;
            burst_sock
                .connect(SocketAddrV4::new(far_addr, ports[1]))
                .map_err(io_err("connecting probe socket"))?;
            send_burst(&burst_sock, burst, chunk);
            std::thread::sleep(burst_time + ping_timeout);
            let _ = burst_sock.send(b"Q");
            Ok(rtts)
        })?;
        let join_err = |what: &str| LabError::Measure(format!("probe {what} panicked"));
        let rtts = pinger.join().map_err(|_| join_err("sender"));
        stop.store(true, Ordering::SeqCst);
        let rtts = rtts??;
        responder.join().map_err(|_| join_err("responder"))??;
        let (received, arrivals) = receiver.join().map_err(|_| join_err("receiver"))??;

        let mut sorted: Vec<Duration> = rtts.iter().flatten().copied().collect();
        sorted.sort();
        // From the end of the first chunk to the end of the last one, the link
        // serialised exactly the datagrams in between.
        let first_end = chunk.min(burst as usize).saturating_sub(1);
        let last = (burst as usize).saturating_sub(1);
        let rate = match (
            arrivals.get(first_end).copied().flatten(),
            arrivals.get(last).copied().flatten(),
        ) {
            (Some(a), Some(b)) if b > a && last > first_end => {
                let bits = (last - first_end) as f64 * wire as f64 * 8.0;
                Rate::from_bps((bits / (b - a).as_secs_f64()).round() as u64)
            }
            _ => None,
        };
        Ok(Probe {
            configured_rtt: rtt,
            rtt_min: sorted.first().copied().unwrap_or_default(),
            rtt_median: sorted.get(sorted.len() / 2).copied().unwrap_or_default(),
            rtt_samples: sorted.len(),
            rtt_lost: rtts.len() - sorted.len(),
            configured_rate: link.rate,
            rate,
            burst_sent: burst,
            burst_received: received,
        })
    }

    /// Runs one bulk TCP transfer through the lab and reports the receiver's
    /// goodput and the sender's `TCP_INFO`. The sender writes until the
    /// receiver has measured for `duration` (bounded by `duration + 10 s`).
    pub fn tcp_transfer(&self, opts: &TransferOptions) -> Result<TransferReport, LabError> {
        let sender_side = opts.direction.from_side();
        let receiver_side = sender_side.other();
        let rx_addr = self.addr(receiver_side);
        let done = Arc::new(AtomicBool::new(false));
        let limit = opts.duration + Duration::from_secs(10);
        let (port_tx, port_rx) = mpsc::channel();

        let o = opts.clone();
        let done_rx = done.clone();
        let receiver = self.spawn_in(receiver_side, move || {
            let l = TcpListener::bind(SocketAddrV4::new(rx_addr, o.port))
                .map_err(io_err("binding receiver"))?;
            if let Some(c) = o.window_clamp {
                sys::set_tcp_window_clamp(l.as_fd(), c).map_err(io_err("TCP_WINDOW_CLAMP"))?;
            }
            let port = l.local_addr().map_err(io_err("receiver address"))?.port();
            let _ = port_tx.send(port);
            let r = receive(&l, &o, limit);
            done_rx.store(true, Ordering::SeqCst);
            r
        })?;
        let port = port_rx
            .recv_timeout(Duration::from_secs(5))
            .map_err(|_| LabError::Measure("receiver did not start".into()))?;
        let o = opts.clone();
        let done_tx = done.clone();
        let sender = self.spawn_in(sender_side, move || {
            let r = send(SocketAddrV4::new(rx_addr, port), &o, &done_tx, limit);
            done_tx.store(true, Ordering::SeqCst);
            r
        })?;
        let info = sender
            .join()
            .map_err(|_| LabError::Measure("sender panicked".into()))?;
        let rx = receiver
            .join()
            .map_err(|_| LabError::Measure("receiver panicked".into()))??;
        let info = info?;
        Ok(TransferReport {
            bytes: rx.bytes,
            elapsed: rx.elapsed,
            goodput_bps: rx.goodput_bps,
            overall_bps: rx.bytes as f64 * 8.0 / rx.elapsed.as_secs_f64().max(1e-9),
            sender: info,
            clamp_reasserted: rx.clamp_reasserted,
        })
    }
}

/// Accepts (and drops) connections until told to stop.
fn accept_until(l: &TcpListener, stop: &AtomicBool, limit: Duration) -> Result<(), LabError> {
    let start = Instant::now();
    l.set_nonblocking(true)
        .map_err(io_err("listener nonblocking"))?;
    while !stop.load(Ordering::SeqCst) && start.elapsed() < limit {
        match l.accept() {
            Ok(_) => {}
            Err(e) if retryable(&e) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => return Err(io_err("probe accept")(e)),
        }
    }
    Ok(())
}

/// Datagrams received, and the kernel arrival stamp of each by number.
fn receive_burst(
    sock: &UdpSocket,
    burst: u32,
    limit: Duration,
) -> Result<(u32, Vec<Option<Duration>>), LabError> {
    let start = Instant::now();
    let mut buf = [0u8; 2048];
    let mut arrivals = vec![None; burst as usize];
    let mut got = 0;
    while start.elapsed() < limit && got < burst {
        let (n, stamp) = match sys::recv_timestamped(sock.as_fd(), &mut buf) {
            Ok(x) => x,
            Err(e) if retryable(&e) => continue,
            Err(e) => return Err(io_err("probe receive")(e)),
        };
        match buf[..n].first() {
            Some(b'B') if n >= 5 => {
                let i = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
                if let Some(slot) = arrivals.get_mut(i) {
                    if slot.is_none() {
                        got += 1;
                    }
                    // Without a kernel stamp the burst cannot be timed: stays None.
                    *slot = stamp;
                }
            }
            Some(b'Q') => break,
            _ => {}
        }
    }
    Ok((got, arrivals))
}

/// Sends datagrams 0..burst, numbered, in `UDP_SEGMENT` chunks if the
/// kernel allows, else one by one. A full buffer just paces the burst.
fn send_burst(sock: &UdpSocket, burst: u32, chunk: usize) {
    let gso = chunk > 1 && sys::set_udp_segment(sock.as_fd(), BURST_PAYLOAD as u16).is_ok();
    let per_send = if gso { chunk } else { 1 };
    let mut buf = vec![0u8; BURST_PAYLOAD * BURST_CHUNK];
    let mut next = 0u32;
    while next < burst {
        let n = (burst - next).min(per_send as u32);
        for k in 0..n {
            let d = &mut buf[k as usize * BURST_PAYLOAD..][..BURST_PAYLOAD];
            d[0] = b'B';
            d[1..5].copy_from_slice(&(next + k).to_be_bytes());
        }
        let _ = sock.send(&buf[..n as usize * BURST_PAYLOAD]);
        next += n;
    }
}

fn retryable(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

/// Round trips of TCP handshakes, as the kernel measured them (SYN sent to
/// SYN-ACK received, `tcpi_rtt` after connect): no application scheduling in
/// it. `None` for each connection that failed or whose SYN had to be resent.
fn handshake_rtts(to: SocketAddrV4, timeout: Duration) -> Vec<Option<Duration>> {
    (0..PROBE_PINGS)
        .map(|_| {
            let t = Instant::now();
            let s = TcpStream::connect_timeout(&SocketAddr::V4(to), timeout).ok()?;
            let info = sys::tcp_info(s.as_fd()).ok()?;
            // A resent SYN (≥ 1 s) gives no clean sample.
            (t.elapsed() < Duration::from_secs(1) && !info.rtt.is_zero()).then_some(info.rtt)
        })
        .collect()
}

struct Received {
    bytes: u64,
    elapsed: Duration,
    goodput_bps: f64,
    clamp_reasserted: u32,
}

fn receive(l: &TcpListener, o: &TransferOptions, limit: Duration) -> Result<Received, LabError> {
    let start = Instant::now();
    l.set_nonblocking(true)
        .map_err(io_err("listener nonblocking"))?;
    let mut stream = loop {
        match l.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if start.elapsed() > Duration::from_secs(10) {
                    return Err(LabError::Measure("no connection within 10 s".into()));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(io_err("accept")(e)),
        }
    };
    stream
        .set_nonblocking(false)
        .map_err(io_err("stream blocking"))?;
    stream
        .set_read_timeout(Some(Duration::from_millis(50)))
        .map_err(io_err("read timeout"))?;
    let mut buf = vec![0u8; 256 * 1024];
    let mut bytes = 0u64;
    let mut first: Option<Instant> = None;
    let mut warm: Option<(Instant, u64)> = None;
    let mut last = Instant::now();
    let mut clamp_reasserted = 0;
    while start.elapsed() < limit {
        if let Some(c) = o.window_clamp {
            if sys::tcp_window_clamp(stream.as_fd()).is_ok_and(|now| now != c) {
                sys::set_tcp_window_clamp(stream.as_fd(), c).map_err(io_err("TCP_WINDOW_CLAMP"))?;
                clamp_reasserted += 1;
            }
        }
        if let Some(f) = first {
            if f.elapsed() >= o.duration {
                break;
            }
            if warm.is_none() && f.elapsed() >= o.warmup {
                warm = Some((Instant::now(), bytes));
            }
        }
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                last = Instant::now();
                first.get_or_insert(last);
                bytes += n as u64;
            }
            Err(e) if retryable(&e) => {}
            Err(e) => return Err(io_err("receive")(e)),
        }
    }
    let first = first.ok_or_else(|| LabError::Measure("no data received".into()))?;
    let elapsed = last.duration_since(first);
    let (t0, b0) = warm.unwrap_or((first, 0));
    let window = last.saturating_duration_since(t0).as_secs_f64().max(1e-9);
    Ok(Received {
        bytes,
        elapsed,
        goodput_bps: (bytes - b0) as f64 * 8.0 / window,
        clamp_reasserted,
    })
}

fn send(
    to: SocketAddrV4,
    o: &TransferOptions,
    done: &AtomicBool,
    limit: Duration,
) -> Result<TcpInfo, LabError> {
    let start = Instant::now();
    // The source address follows from the lab's only route; no bind needed.
    let mut stream = TcpStream::connect_timeout(&SocketAddr::V4(to), Duration::from_secs(5))
        .map_err(io_err(format!("connecting to {to}")))?;
    if let Some(cc) = &o.congestion {
        sys::set_tcp_congestion(stream.as_fd(), cc)
            .map_err(io_err(format!("TCP_CONGESTION {cc}")))?;
    }
    stream
        .set_write_timeout(Some(Duration::from_millis(50)))
        .map_err(io_err("write timeout"))?;
    let buf = vec![0x5au8; 256 * 1024];
    while !done.load(Ordering::SeqCst) && start.elapsed() < limit {
        match stream.write(&buf) {
            Ok(_) => {}
            Err(e) if retryable(&e) => {}
            // The receiver hung up after measuring.
            Err(_) => break,
        }
    }
    sys::tcp_info(stream.as_fd()).map_err(io_err("TCP_INFO"))
}
