//! nuttcp's UDP data on either end: a paced sender that brackets its
//! datagrams with nuttcp's markers and stamps each with its running byte
//! count, and a receiver that counts what arrives from its control peer
//! between the markers. Both report intervals into plumb's record (and a
//! receiving server, nuttcp's interval lines to its client).
//!
//! A test of several streams (nuttcp's `-N`) has one socket per data port.
//! As nuttcp 6.1.2 does on the wire, the sender deals its datagrams to the
//! sockets in turn at the test's one rate, stamps each with the count over
//! all streams and sends the begin markers on the first socket. A nuttcp
//! receiver reads its streams in that same turn, blocking on each, so the
//! first two end markers go to the socket whose turn is next (where it
//! waits: `EOD0`, then `EOD1` ends it), the rest one socket on each. (A
//! stock sender puts `EOD0` and `EOD1` on the socket that sent last; its
//! receiver then waits on the next one for `EOD2`, a second later, and an
//! interval with no data on the way fails the test with -i.) plumb's
//! receiver counts every socket's datagrams as one flow.

use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

use plumb_proto::nuttcp::format::Format;
use plumb_proto::nuttcp::interval::{self, Sent, Stretch};
use plumb_proto::nuttcp::request::Request;
use plumb_proto::nuttcp::udp::{read_stamp, stamp, Marker, END_MARKERS, MIN_DATA};
use plumb_record::engine::{IntervalDetail, IntervalRecord, StreamInterval};
use plumb_record::Sink;

use super::data::same_host;
use crate::signals;

/// The pause between `BOD0` and `BOD1` (room for the receiver to get ready).
const BEGIN_GAP: Duration = Duration::from_millis(250);
/// The pause between end markers.
const END_GAP: Duration = Duration::from_millis(500);
/// How long a receiver waits for a further end marker after `EOD0`.
const END_WAIT: Duration = Duration::from_secs(1);
/// A receiver's read timeout: how often it looks at the clock.
const READ_SLICE: Duration = Duration::from_millis(100);

/// Sizes a UDP socket's buffers: the request's window, else plumb's UDP
/// default (`sockets::UDP_DEFAULT_BUFFER`, 4 MiB), as for iperf3's UDP: a
/// receiver on a busy host is away for longer than the system default
/// holds datagrams of nuttcp's 8 KiB.
pub fn size_buffers(sock: &UdpSocket, window: u32) {
    let size = if window > 0 {
        window
    } else {
        crate::sockets::UDP_DEFAULT_BUFFER
    } as usize;
    let s = socket2::SockRef::from(sock);
    let _ = s.set_recv_buffer_size(size);
    let _ = s.set_send_buffer_size(size);
}

/// A sender's sockets: one per stream, from `local`, each connected to
/// the next of the request's data ports on `peer`, buffers sized.
///
/// # Errors
/// A socket cannot be bound or connected.
pub fn connected(local: IpAddr, peer: IpAddr, req: &Request) -> io::Result<Vec<UdpSocket>> {
    req.data_ports()
        .map(|port| {
            let s = UdpSocket::bind(SocketAddr::new(local, 0))?;
            s.connect(SocketAddr::new(peer, port))?;
            size_buffers(&s, req.window);
            Ok(s)
        })
        .collect()
}

/// A receiver's sockets: one bound on each of the request's data ports
/// on `local`, buffers sized.
///
/// # Errors
/// A port cannot be bound.
pub fn bound(local: IpAddr, req: &Request) -> io::Result<Vec<UdpSocket>> {
    req.data_ports()
        .map(|port| {
            let s = UdpSocket::bind(SocketAddr::new(local, port))?;
            size_buffers(&s, req.window);
            Ok(s)
        })
        .collect()
}

/// What one end moved.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Figures {
    /// Bytes of data datagrams.
    pub bytes: u64,
    /// Data datagrams.
    pub packets: u64,
    /// Seconds from the first to the last.
    pub seconds: f64,
    /// A receiver's view of the sender: the byte count the last datagram
    /// carried (what the sender had sent by then); 0 in a test without
    /// intervals, whose sender stamps nothing.
    pub stamped: u64,
}

/// Emits an interval when one is due.
pub struct Reporter {
    every: Option<Duration>,
    start: Instant,
    next: Instant,
    prev: (u64, u64, u64, f64),
    socket: i32,
    sender: bool,
    buflen: u64,
    /// A receiving server's control connection, for nuttcp's interval lines.
    pub lines_to: Option<TcpStream>,
    /// The form of those lines (the client's `-f` options).
    pub format: Format,
}

impl Reporter {
    /// A reporter for a socket, every `interval` seconds (0 for none).
    pub fn new(sock: &UdpSocket, interval: f64, sender: bool, buflen: u32) -> Reporter {
        let now = Instant::now();
        let every = (interval > 0.0).then(|| Duration::from_secs_f64(interval));
        Reporter {
            every,
            start: now,
            next: now + every.unwrap_or(Duration::MAX / 4),
            prev: (0, 0, 0, 0.0),
            socket: sock.as_raw_fd(),
            sender,
            buflen: u64::from(buflen.max(1)),
            lines_to: None,
            format: Format::DEFAULT,
        }
    }

    /// Starts the clock (a receiver's at `BOD1`).
    fn begin(&mut self, at: Instant) {
        self.start = at;
        self.next = at + self.every.unwrap_or(Duration::MAX / 4);
    }

    /// Emits the interval if it is due (or `last`), from the running totals
    /// and the sender's latest stamp.
    fn tick(&mut self, now: Instant, f: &Figures, stamp: u64, last: bool, sink: &mut dyn Sink) {
        let Some(every) = self.every else { return };
        if now < self.next && !last {
            return;
        }
        let end = now.saturating_duration_since(self.start).as_secs_f64();
        let (b0, p0, s0, t0) = self.prev;
        let bytes = f.bytes - b0;
        let packets = f.packets - p0;
        if last && bytes == 0 {
            return;
        }
        let expected = (stamp.saturating_sub(s0) / self.buflen).max(packets);
        let lost = expected - packets;
        let detail = if self.sender {
            IntervalDetail::UdpSender { packets }
        } else {
            IntervalDetail::UdpReceiver {
                jitter_ms: 0.0,
                lost: lost as i64,
                packets: expected as i64,
            }
        };
        sink.interval(&IntervalRecord {
            streams: vec![StreamInterval {
                socket: self.socket,
                start: t0,
                end,
                bytes,
                sender: self.sender,
                omitted: false,
                detail,
            }],
            plumb: None,
        });
        if let Some(c) = self.lines_to.as_mut() {
            // Since the start: datagrams the sender's latest count says it
            // sent, of which all but those received were dropped.
            let all = (stamp / self.buflen).max(f.packets);
            let now = Stretch {
                bytes,
                seconds: end - t0,
                udp: Some(Sent {
                    dropped: lost,
                    expected,
                    bytes: stamp.saturating_sub(s0),
                }),
            };
            let total = Stretch {
                bytes: f.bytes,
                seconds: end,
                udp: Some(Sent {
                    dropped: all - f.packets,
                    expected: all,
                    bytes: stamp,
                }),
            };
            let line = interval::line(self.format, &now, &total);
            if c.write_all(format!("{line}\n").as_bytes()).is_err() {
                self.lines_to = None;
            }
        }
        self.prev = (f.bytes, f.packets, stamp, end);
        while self.next <= now {
            self.next += every;
        }
    }
}

/// Sends for `seconds` at `rate_bps` (unpaced without one) over `socks`
/// in turn, markers first and last; `stop` ends it early (the peer went
/// away).
///
/// # Errors
/// A send that fails for another reason than a full buffer or the peer's
/// port being closed for a moment.
pub fn send(
    socks: &[UdpSocket],
    buflen: u32,
    rate_bps: Option<u64>,
    seconds: f64,
    rep: &mut Reporter,
    sink: &mut dyn Sink,
    stop: &mut dyn FnMut() -> bool,
) -> io::Result<Figures> {
    let mut buf = crate::datapath::payload(buflen as usize, false);
    // A receiver that binds only after the answer may miss the first
    // marker; it starts on the second, or on the first data datagram.
    std::thread::sleep(BEGIN_GAP / 5);
    let _ = socks[0].send(&Marker::Begin(0).bytes());
    std::thread::sleep(BEGIN_GAP);
    let _ = socks[0].send(&Marker::Begin(1).bytes());
    let start = Instant::now();
    rep.begin(start);
    let deadline = start + Duration::from_secs_f64(seconds);
    let gap = rate_bps
        .filter(|r| *r > 0)
        .map(|r| f64::from(buflen) * 8.0 / r as f64);
    let mut f = Figures::default();
    loop {
        let now = Instant::now();
        if now >= deadline || stop() || signals::interrupted() {
            break;
        }
        if let Some(g) = gap {
            let due = start + Duration::from_secs_f64(g * f.packets as f64);
            if due > now {
                std::thread::sleep((due - now).min(deadline - now));
                continue;
            }
        }
        stamp(&mut buf, f.bytes + u64::from(buflen));
        match socks[turn(f.packets, socks.len())].send(&buf) {
            Ok(n) => {
                f.bytes += n as u64;
                f.packets += 1;
            }
            Err(e) if send_may_retry(&e) => std::thread::sleep(Duration::from_micros(200)),
            Err(e) => return Err(e),
        }
        rep.tick(now, &f, f.bytes, false, sink);
    }
    let end = Instant::now();
    f.seconds = end.saturating_duration_since(start).as_secs_f64();
    rep.tick(end, &f, f.bytes, true, sink);
    let next = turn(f.packets, socks.len());
    for n in 0..END_MARKERS {
        let at = (next + usize::from(n.max(1) - 1)) % socks.len();
        let _ = socks[at].send(&Marker::End(n).bytes());
        if n + 1 < END_MARKERS {
            std::thread::sleep(END_GAP);
        }
    }
    Ok(f)
}

/// The socket that carries the datagram numbered `packet` of `streams`.
fn turn(packet: u64, streams: usize) -> usize {
    (packet % streams.max(1) as u64) as usize
}

/// A send error that passes: a full buffer, or an ICMP "port unreachable"
/// from a receiver that is not bound yet.
fn send_may_retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::ConnectionRefused | io::ErrorKind::Interrupted
    ) || e.raw_os_error() == Some(libc::ENOBUFS)
}

/// Receives datagrams from `from` on any of `socks` until an end marker
/// (or `deadline`, or `stop`), counting data between `BOD1` (or the first
/// datagram) and the end.
///
/// # Errors
/// A read that fails for another reason than its timeout.
pub fn receive(
    socks: &[UdpSocket],
    from: IpAddr,
    mut deadline: Instant,
    idle: Duration,
    rep: &mut Reporter,
    sink: &mut dyn Sink,
    stop: &mut dyn FnMut() -> bool,
) -> io::Result<Figures> {
    let mut turns = Turns::new(socks)?;
    let mut buf = vec![0u8; 65_536];
    let mut f = Figures::default();
    let (mut begin, mut last, mut latest) = (None::<Instant>, None::<Instant>, 0u64);
    let opened = Instant::now();
    loop {
        let now = Instant::now();
        if now >= deadline || stop() || signals::interrupted() {
            break;
        }
        if now.duration_since(last.or(begin).unwrap_or(opened)) > idle {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no data for {} ms (--rcv-timeout)", idle.as_millis()),
            ));
        }
        let Some((n, src)) = turns.next_datagram(&mut buf)? else {
            if begin.is_some() {
                rep.tick(Instant::now(), &f, latest, false, sink);
            }
            continue;
        };
        if !same_host(src.ip(), from) {
            continue;
        }
        let now = Instant::now();
        match Marker::parse(&buf[..n]) {
            Some(Marker::Begin(n)) => {
                if begin.is_none() && n >= 1 {
                    begin = Some(now);
                    rep.begin(now);
                }
                continue;
            }
            Some(Marker::End(0)) => {
                deadline = deadline.min(now + END_WAIT);
                continue;
            }
            Some(Marker::End(_)) => break,
            None if n < MIN_DATA => continue,
            None => {}
        }
        if begin.is_none() {
            begin = Some(now);
            rep.begin(now);
        }
        f.bytes += n as u64;
        f.packets += 1;
        // nuttcp's sender stamps its count only when the test reports
        // intervals; otherwise those bytes are its fill pattern.
        if rep.every.is_some() {
            latest = latest.max(read_stamp(&buf[..n]).unwrap_or(0));
        }
        last = Some(now);
        rep.tick(now, &f, latest, false, sink);
    }
    f.stamped = latest;
    if let (Some(b), Some(l)) = (begin, last) {
        f.seconds = l.saturating_duration_since(b).as_secs_f64();
        rep.tick(l, &f, latest, true, sink);
    }
    Ok(f)
}

/// A receiver's sockets, read in turn. One socket blocks in its read for
/// up to [`READ_SLICE`] (one system call a datagram, as before there were
/// streams); several are read without blocking, starting after the one that
/// gave the last datagram so that no stream waits behind another, and
/// waited on together with one `poll` when none has a datagram.
struct Turns<'a> {
    socks: &'a [UdpSocket],
    next: usize,
    /// The poll set, built once (`poll_many` writes each entry's revents).
    set: Vec<(std::os::fd::BorrowedFd<'a>, libc::c_short)>,
}

impl<'a> Turns<'a> {
    fn new(socks: &'a [UdpSocket]) -> io::Result<Turns<'a>> {
        if let [one] = socks {
            one.set_read_timeout(Some(READ_SLICE))?;
        } else {
            for s in socks {
                s.set_nonblocking(true)?;
            }
        }
        Ok(Turns {
            socks,
            next: 0,
            set: socks.iter().map(|s| (s.as_fd(), libc::POLLIN)).collect(),
        })
    }

    /// One datagram, or `None` after up to [`READ_SLICE`] with nothing to
    /// read.
    fn next_datagram(&mut self, buf: &mut [u8]) -> io::Result<Option<(usize, SocketAddr)>> {
        let n = self.socks.len();
        for k in 0..n {
            let i = (self.next + k) % n;
            match self.socks[i].recv_from(buf) {
                Ok(got) => {
                    self.next = (i + 1) % n;
                    return Ok(Some(got));
                }
                Err(e) if crate::datathread::transient(&e) => {}
                Err(e) => return Err(e),
            }
        }
        if n == 1 {
            // The read itself waited.
            return Ok(None);
        }
        for entry in &mut self.set {
            entry.1 = libc::POLLIN;
        }
        match crate::sys::poll_many(&mut self.set, READ_SLICE.as_millis() as i32) {
            Err(e) if !crate::datathread::transient(&e) => Err(e),
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_record::engine::{EndRecord, StartRecord};

    /// Keeps the intervals it is given.
    #[derive(Default)]
    struct Kept(Vec<IntervalRecord>);

    impl Sink for Kept {
        fn start(&mut self, _: &StartRecord) {}
        fn interval(&mut self, i: &IntervalRecord) {
            self.0.push(i.clone());
        }
        fn end(&mut self, _: &EndRecord) {}
        fn error(&mut self, _: &str) {}
        fn finish(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A receiver reporting every `interval` seconds (0: never) is sent
    /// two stamped data datagrams between the markers, with a stranger's
    /// datagrams and a short one around them: what it counted, and the
    /// intervals it reported.
    fn receive_two(interval: f64) -> (Figures, Vec<IntervalRecord>) {
        let rx = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let at = rx.local_addr().expect("addr");
        let peer = UdpSocket::bind("127.0.0.1:0").expect("peer");
        let stranger = UdpSocket::bind("127.0.0.2:0").expect("stranger");
        let mut d = vec![0u8; 100];
        stamp(&mut d, 100);
        stranger
            .send_to(&Marker::Begin(1).bytes(), at)
            .expect("send");
        stranger.send_to(&d, at).expect("send");
        for dg in [
            &Marker::Begin(0).bytes()[..],
            &Marker::Begin(1).bytes(),
            &d,
            &d,
            &[1, 2],
            &Marker::End(0).bytes(),
        ] {
            peer.send_to(dg, at).expect("send");
        }
        stranger.send_to(&d, at).expect("send");
        peer.send_to(&Marker::End(1).bytes(), at).expect("send");
        let mut rep = Reporter::new(&rx, interval, false, 100);
        let mut kept = Kept::default();
        let deadline = Instant::now() + Duration::from_secs(5);
        let f = receive(
            std::slice::from_ref(&rx),
            IpAddr::from([127, 0, 0, 1]),
            deadline,
            Duration::from_secs(5),
            &mut rep,
            &mut kept,
            &mut || false,
        )
        .expect("received");
        (f, kept.0)
    }

    #[test]
    fn a_receiver_counts_its_peers_data_between_the_markers_only() {
        let (f, intervals) = receive_two(0.0);
        // Without intervals a nuttcp sender stamps nothing (the bytes are
        // its fill pattern), so the stamp is not read.
        assert_eq!((f.bytes, f.packets, f.stamped), (200, 2, 0));
        assert!(intervals.is_empty());
        let (f, intervals) = receive_two(60.0);
        assert_eq!((f.bytes, f.packets, f.stamped), (200, 2, 100));
        assert_eq!(intervals.len(), 1, "the last, short interval");
    }

    /// Two receiving sockets and a sender's two sockets connected to them.
    fn two_streams() -> (Vec<UdpSocket>, Vec<UdpSocket>) {
        let rx: Vec<UdpSocket> = (0..2)
            .map(|_| UdpSocket::bind("127.0.0.1:0").expect("bind"))
            .collect();
        let tx = rx
            .iter()
            .map(|r| {
                let s = UdpSocket::bind("127.0.0.1:0").expect("bind");
                s.connect(r.local_addr().expect("addr")).expect("connect");
                s
            })
            .collect();
        (rx, tx)
    }

    /// Sends 0.1 s at one 100-byte datagram per 30 ms over `tx`.
    fn send_briefly(tx: &[UdpSocket]) -> Figures {
        let mut rep = Reporter::new(&tx[0], 1.0, true, 100);
        send(
            tx,
            100,
            Some(26_667),
            0.1,
            &mut rep,
            &mut Kept::default(),
            &mut || false,
        )
        .expect("sent")
    }

    /// Everything queued on a socket, without waiting.
    fn drain(s: &UdpSocket) -> Vec<Vec<u8>> {
        s.set_nonblocking(true).expect("nonblocking");
        let mut buf = [0u8; 2048];
        std::iter::from_fn(|| s.recv(&mut buf).ok().map(|n| buf[..n].to_vec())).collect()
    }

    #[test]
    fn a_sender_deals_its_datagrams_in_turn_and_ends_where_the_receiver_waits() {
        let (rx, tx) = two_streams();
        let f = send_briefly(&tx);
        assert!(f.packets >= 2, "the scenario: both streams carry data");
        let got: Vec<Vec<Vec<u8>>> = rx.iter().map(drain).collect();
        let data = |k: usize| got[k].iter().filter(|d| d.len() > 4).count() as u64;
        assert_eq!((data(0), data(1)), (f.packets.div_ceil(2), f.packets / 2));
        let markers =
            |k: usize| -> Vec<Marker> { got[k].iter().filter_map(|d| Marker::parse(d)).collect() };
        // nuttcp's receiver reads the streams in turn: after the last
        // datagram it waits on the next stream, so EOD0 and EOD1 go there.
        let next = (f.packets % 2) as usize;
        let (begin, end): (Vec<_>, Vec<_>) = (
            markers(0)
                .into_iter()
                .filter(|m| matches!(m, Marker::Begin(_)))
                .collect(),
            markers(next),
        );
        assert_eq!(begin, [Marker::Begin(0), Marker::Begin(1)]);
        assert!(markers(1).iter().all(|m| matches!(m, Marker::End(_))));
        assert_eq!(
            end.iter()
                .filter(|m| matches!(m, Marker::End(0) | Marker::End(1)))
                .count(),
            2
        );
        // Each datagram carries the count over both streams.
        let mut stamps: Vec<u64> = got.iter().flatten().filter_map(|d| read_stamp(d)).collect();
        stamps.sort_unstable();
        assert_eq!(stamps, (1..=f.packets).map(|n| n * 100).collect::<Vec<_>>());
    }

    #[test]
    fn a_receiver_counts_every_streams_datagrams_as_one_flow() {
        let (rx, tx) = two_streams();
        let sender = std::thread::spawn(move || send_briefly(&tx));
        let mut rep = Reporter::new(&rx[0], 0.0, false, 100);
        let deadline = Instant::now() + Duration::from_secs(10);
        let f = receive(
            &rx,
            IpAddr::from([127, 0, 0, 1]),
            deadline,
            Duration::from_secs(5),
            &mut rep,
            &mut Kept::default(),
            &mut || false,
        )
        .expect("received");
        let sent = sender.join().expect("sender");
        assert!(sent.packets >= 2, "the scenario: both streams carry data");
        assert_eq!((f.packets, f.bytes), (sent.packets, sent.bytes));
    }
}
