//! The `--latency` probe: a TCP connection of its own, opened before the
//! load, on which the client times 1-byte transactions — every
//! [`IDLE_EVERY`] for [`IDLE_FOR`] before the load, then every
//! [`LOADED_EVERY`] while it runs — and the server answers them; and what
//! the probes cost the test.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use plumb_proto::rr::RrParams;
use plumb_record::{Latency, ProbeInterval, Real};
use plumb_tcpinfo::tcp_info;

use super::greeting::{expect_greeting, greet_tcp};
use super::loops::{serve_tcp, RrContext};
use super::stats;
use crate::datathread::{Counters, StopAndBudget};
use crate::host;
use crate::sockets::{self, StreamSocket};

/// Idle probing before the load: this long, one probe per [`IDLE_EVERY`].
pub const IDLE_FOR: Duration = Duration::from_secs(1);
/// Interval of idle probes.
pub const IDLE_EVERY: Duration = Duration::from_millis(10);
/// Interval of probes under load: 10 a second of 1 byte each way, about
/// 21 kbit/s with headers and ACKs, under 1 % of any load above 2.1 Mbit/s.
pub const LOADED_EVERY: Duration = Duration::from_millis(100);

/// The `--latency` probe connection, client side.
#[derive(Debug)]
pub struct Probe {
    sock: Arc<TcpStream>,
    /// Idle round trips, ms.
    pub idle: Vec<f64>,
    /// Segments the probe connection resent (`TCP_INFO`), read by
    /// [`Probe::finish`]: a probe dropped at a full queue comes back a
    /// tail-loss probe or a retransmission timeout later, not a queue later.
    pub retransmits: Option<u64>,
    /// What the probes cost while the load ran, read by [`Probe::finish`].
    pub cost: Option<ProbeCost>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<(Vec<f64>, Option<u64>)>>,
    /// The probe connection's bytes and segments each way when the load
    /// began (`TCP_INFO`), and when.
    at_load: Option<(Instant, WireCount)>,
}

/// What the probes took from the test while the load ran.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeCost {
    /// Seconds the loaded probes ran.
    pub secs: f64,
    /// Bits on the wire, both ways, per second.
    pub wire_bps: f64,
    /// CPU the probe thread used, seconds.
    pub thread_cpu_s: Option<f64>,
}

/// How `--latency` computes RPM, and where it differs from the draft.
const RPM_METHOD: &str = "60000 / the 95th-percentile trimmed mean of the round trips (the slowest 5 % dropped), as the IETF IPPM responsiveness draft; differences: one probe kind, 1-byte request/response over plumb's own TCP connection opened before the load (the draft averages TCP, TLS and HTTP/2 handshakes on new connections and HTTP/2 requests on the loaded ones), probes every 100 ms for the whole test rather than after the draft's load ramp and stability check";

/// Bytes of payload and segments each way on a TCP connection.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct WireCount {
    bytes: u64,
    segments: u64,
}

impl WireCount {
    fn of(s: &TcpStream) -> Option<WireCount> {
        let i = tcp_info(s.as_fd()).ok()?;
        Some(WireCount {
            bytes: i.bytes_sent? + i.bytes_received?,
            segments: u64::from(i.segs_out?) + u64::from(i.segs_in?),
        })
    }
}

/// Per segment on an Ethernet wire, beyond the payload: IPv4 (20) and TCP
/// with timestamps (32) headers, and Ethernet's header, FCS, preamble and
/// inter-frame gap (38). IPv6 adds 20 more; the probe's share stays far
/// below a percent either way.
const PROBE_SEGMENT_OVERHEAD: u64 = 20 + 32 + 38;

/// What `--latency`'s probes took from the test while the load ran, `secs`
/// long from wire count `a` to `b`: their bits on the wire (both ways,
/// with headers and framing) and the CPU of the thread that sent them.
fn cost_between(secs: f64, a: WireCount, b: WireCount, cpu_ns: Option<u64>) -> ProbeCost {
    let bytes = b.bytes.saturating_sub(a.bytes)
        + b.segments.saturating_sub(a.segments) * PROBE_SEGMENT_OVERHEAD;
    ProbeCost {
        secs,
        wire_bps: if secs > 0.0 {
            bytes as f64 * 8.0 / secs
        } else {
            0.0
        },
        thread_cpu_s: cpu_ns.map(|n| n as f64 / 1e9),
    }
}

/// One probe transaction's round trip.
fn probe_once(s: &TcpStream) -> io::Result<Duration> {
    let t0 = Instant::now();
    (&*s).write_all(&[0x50])?;
    let mut one = [0u8; 1];
    (&*s).read_exact(&mut one)?;
    Ok(t0.elapsed())
}

impl Probe {
    /// Opens the probe connection (the test's first data connection, with its
    /// cookie), checks the greeting, and measures idle latency for [`IDLE_FOR`].
    pub fn open(
        server: SocketAddr,
        bind: Option<IpAddr>,
        cookie: &[u8],
        timeout: Option<Duration>,
    ) -> io::Result<Probe> {
        let s = sockets::connect_tcp(server, bind, None, timeout, |s| s.set_nodelay(true))?;
        (&s).write_all(cookie)?;
        expect_greeting(&StreamSocket::Tcp(Arc::new(s.try_clone()?)))?;
        // A probe that waits longer than this is lost in a queue no user would wait in.
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut idle = Vec::new();
        let start = Instant::now();
        while start.elapsed() < IDLE_FOR {
            let t = Instant::now();
            idle.push(probe_once(&s)?.as_secs_f64() * 1e3);
            std::thread::sleep(IDLE_EVERY.saturating_sub(t.elapsed()));
        }
        Ok(Probe {
            sock: Arc::new(s),
            idle,
            retransmits: None,
            cost: None,
            stop: Arc::new(AtomicBool::new(false)),
            thread: None,
            at_load: None,
        })
    }

    /// Starts probing every [`LOADED_EVERY`] until [`Probe::finish`].
    pub fn start_loaded(&mut self) {
        self.at_load = WireCount::of(&self.sock).map(|w| (Instant::now(), w));
        let s = Arc::clone(&self.sock);
        let stop = Arc::clone(&self.stop);
        self.thread = std::thread::Builder::new()
            .name("plumb-probe".into())
            .spawn(move || {
                let mut loaded = Vec::new();
                while !stop.load(Relaxed) {
                    let t = Instant::now();
                    match probe_once(&s) {
                        Ok(d) => loaded.push(d.as_secs_f64() * 1e3),
                        Err(_) => break,
                    }
                    let mut left = LOADED_EVERY.saturating_sub(t.elapsed());
                    while !left.is_zero() && !stop.load(Relaxed) {
                        let step = left.min(Duration::from_millis(10));
                        std::thread::sleep(step);
                        left = left.saturating_sub(step);
                    }
                }
                (loaded, host::thread_schedstat().map(|(run, _)| run))
            })
            .ok();
    }

    /// Stops the probes; the loaded round trips, ms.
    pub fn finish(&mut self) -> Vec<f64> {
        self.stop.store(true, Relaxed);
        let (loaded, cpu_ns) = self
            .thread
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        self.retransmits = tcp_info(self.sock.as_fd())
            .ok()
            .map(|i| u64::from(i.total_retrans));
        self.cost = self
            .at_load
            .zip(WireCount::of(&self.sock))
            .map(|((t0, a), b)| cost_between(t0.elapsed().as_secs_f64(), a, b, cpu_ns));
        let _ = self.sock.shutdown(std::net::Shutdown::Both);
        loaded
    }
}

impl Probe {
    /// The `--latency` result: the idle probes, the `loaded` ones
    /// [`Probe::finish`] returned, and what they cost beside a load whose
    /// receivers got `load_bps`: `end.plumb.latency`.
    pub fn result(&self, loaded: &[f64], load_bps: f64) -> Latency {
        let idle = stats::probe_side(&self.idle);
        let loaded = stats::probe_side(loaded);
        let (increase_p50_ms, increase_p99_ms) = stats::increases(&idle, &loaded);
        Latency {
            idle: Some(idle),
            loaded: Some(loaded),
            increase_p50_ms: Some(increase_p50_ms.map(Real::float)),
            increase_p99_ms: Some(increase_p99_ms.map(Real::float)),
            probe_retransmits: Some(self.retransmits),
            probe_cost: Some(self.cost.map(|c| {
                plumb_record::ProbeCost::new(c.secs, c.wire_bps, c.thread_cpu_s, load_bps)
            })),
            probe_interval_ms: Some(ProbeInterval::new(
                IDLE_EVERY.as_secs_f64() * 1e3,
                LOADED_EVERY.as_secs_f64() * 1e3,
            )),
            rpm_method: Some(RPM_METHOD.into()),
            ..Latency::default()
        }
    }
}

/// Server: answers the probe connection on its own thread until the client
/// closes it or `shared` says the test is over.
pub fn serve_probe(s: TcpStream, shared: Arc<StopAndBudget>) -> io::Result<()> {
    s.set_nonblocking(false)?;
    greet_tcp(&s, 0)?;
    std::thread::Builder::new()
        .name("plumb-probe".into())
        .spawn(move || {
            let c = Counters::default();
            // The client probes at most every IDLE_EVERY; answering at twice
            // that rate at most keeps a hostile client from turning the probe
            // connection into a test no limit sees.
            let ctx = RrContext {
                pace_bps: Some(2 * 2 * 8 * (1_000 / IDLE_EVERY.as_millis().max(1) as u64)),
                ..RrContext::default()
            };
            serve_tcp(&s, RrParams::default(), &ctx, &shared, &c);
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cost_counts_payload_and_framing_both_ways() {
        let a = WireCount {
            bytes: 100,
            segments: 10,
        };
        let b = WireCount {
            bytes: 300,
            segments: 20,
        };
        let c = cost_between(2.0, a, b, Some(500_000_000));
        // 200 bytes of payload and 10 segments of framing over 2 s.
        let bits = (200 + 10 * PROBE_SEGMENT_OVERHEAD) as f64 * 8.0;
        assert_eq!(c.wire_bps, bits / 2.0);
        assert_eq!((c.secs, c.thread_cpu_s), (2.0, Some(0.5)));
        // No time: no rate; counters that went back: nothing counted.
        assert_eq!(cost_between(0.0, a, b, None).wire_bps, 0.0);
        assert_eq!(cost_between(1.0, b, a, None).wire_bps, 0.0);
    }
}
