//! Turns the streams' counters into the engine's records: the start, one
//! interval record per `-i` period (and a last, shorter one), and the end.

use std::sync::Arc;
use std::time::{Duration, Instant};

use plumb_proto::UdpStats;
use plumb_record::engine::{
    IntervalDetail, IntervalRecord, Protocol, Role, StartRecord, StreamInterval, TestStart,
};
use plumb_record::{Connected, Sink};

use super::flow::Flow;
use super::watch::Watch;
use crate::host;

/// How often the reporting loop looks at the streams between intervals.
const TICK: Duration = Duration::from_millis(20);
/// A last interval shorter than this is not reported on its own.
const MIN_LAST: f64 = 0.01;

/// The counters of a test's streams, read at each interval.
pub(crate) struct Meter {
    flows: Vec<Arc<Flow>>,
    sockets: Vec<i32>,
    protocol: Protocol,
    sender: bool,
    epoch: Instant,
    last_t: f64,
    last: Vec<(u64, u64, UdpStats)>,
    watches: Vec<Option<Watch>>,
}

impl Meter {
    /// A meter whose time 0 is `epoch`.
    pub(crate) fn new(
        flows: Vec<Arc<Flow>>,
        sockets: Vec<i32>,
        protocol: Protocol,
        sender: bool,
        epoch: Instant,
    ) -> Meter {
        let last = vec![(0, 0, UdpStats::default()); flows.len()];
        Meter {
            flows,
            sockets,
            protocol,
            sender,
            epoch,
            last_t: 0.0,
            last,
            watches: Vec::new(),
        }
    }

    /// Reads TCP_INFO of these sending streams (by index) at each interval.
    pub(crate) fn with_watches(mut self, watches: Vec<Option<Watch>>) -> Meter {
        self.watches = watches;
        self
    }

    /// plumb's own record of this end's streams for `end.plumb`: each
    /// watched sender's last TCP_INFO, by stream index.
    pub(crate) fn end_plumb(&self, sender: bool) -> plumb_record::EndPlumb {
        let streams = (0..self.flows.len())
            .map(|i| plumb_proto::PlumbStreamInfo {
                id: u32::try_from(i + 1).unwrap_or(u32::MAX),
                tcp_info: self
                    .watches
                    .get(i)
                    .and_then(Option::as_ref)
                    .and_then(Watch::info),
                ..plumb_proto::PlumbStreamInfo::default()
            })
            .collect();
        let local = plumb_proto::PlumbResults {
            version: format!("plumb {}", env!("CARGO_PKG_VERSION")),
            system: Some(host::uname().to_string()),
            streams,
            ..plumb_proto::PlumbResults::default()
        };
        crate::end_plumb::end_plumb(Some(&local), None, sender)
    }

    /// Stream `i`'s TCP summary and retransmits over the test, when it is
    /// a watched sender.
    pub(crate) fn tcp_end(&self, i: usize) -> (Option<plumb_record::engine::TcpEnd>, Option<i64>) {
        match self.watches.get(i).and_then(Option::as_ref) {
            Some(w) => (w.end(), w.retransmits()),
            None => (None, None),
        }
    }

    /// Reports an interval every `interval` seconds (none for 0) until every
    /// stream's thread is over, then the rest as a last interval. The
    /// streams' own deadlines bound the loop.
    pub(crate) fn report(&mut self, sink: &mut dyn Sink, interval: f64) {
        let mut ticker = Ticker::new(self.epoch, interval);
        while !self.flows.iter().all(|f| f.is_done()) {
            std::thread::sleep(TICK);
            self.tick(sink, &mut ticker, Instant::now());
        }
        self.finish(sink, &ticker, Instant::now());
    }

    /// Reports the interval that ended by `now`, if one did.
    pub(crate) fn tick(&mut self, sink: &mut dyn Sink, t: &mut Ticker, now: Instant) {
        if let (Some(at), Some(s)) = (t.next, t.step) {
            if now >= at {
                sink.interval(&self.interval(at));
                t.next = Some(at + s);
            }
        }
    }

    /// Reports what came after the last whole interval, unless it is
    /// too short to say anything.
    pub(crate) fn finish(&mut self, sink: &mut dyn Sink, t: &Ticker, now: Instant) {
        let moved = self
            .flows
            .iter()
            .zip(&self.last)
            .any(|(f, (b, _, _))| f.bytes() > *b);
        if t.step.is_some() && moved && secs(self.epoch, now) - self.last_t > MIN_LAST {
            sink.interval(&self.interval(now));
        }
    }

    fn interval(&mut self, at: Instant) -> IntervalRecord {
        let t = secs(self.epoch, at);
        let mut streams = Vec::with_capacity(self.flows.len());
        for (i, f) in self.flows.iter().enumerate() {
            let (bytes, packets, udp) = (f.bytes(), f.packets(), f.udp());
            let (b0, p0, u0) = self.last[i];
            let detail = match (self.protocol, self.sender) {
                (Protocol::Tcp, _) => IntervalDetail::Tcp(
                    self.watches
                        .get_mut(i)
                        .and_then(Option::as_mut)
                        .and_then(Watch::sample),
                ),
                (Protocol::Udp, true) => IntervalDetail::UdpSender {
                    packets: packets - p0,
                },
                (Protocol::Udp, false) => IntervalDetail::UdpReceiver {
                    jitter_ms: udp.jitter * 1000.0,
                    lost: udp.lost as i64 - u0.lost as i64,
                    packets: udp.max_seq as i64 - u0.max_seq as i64,
                },
            };
            streams.push(StreamInterval {
                socket: self.sockets.get(i).copied().unwrap_or(0),
                start: self.last_t,
                end: t,
                bytes: bytes - b0,
                sender: self.sender,
                omitted: false,
                detail,
            });
            self.last[i] = (bytes, packets, udp);
        }
        self.last_t = t;
        IntervalRecord {
            streams,
            plumb: None,
        }
    }
}

/// When the next interval ends.
pub(crate) struct Ticker {
    step: Option<Duration>,
    next: Option<Instant>,
}

impl Ticker {
    /// Intervals of `interval` seconds from `epoch` (none for 0).
    pub(crate) fn new(epoch: Instant, interval: f64) -> Ticker {
        let step = (interval > 0.0 && interval.is_finite())
            .then(|| Duration::from_secs_f64(interval.min(86_400.0)));
        Ticker {
            step,
            next: step.map(|s| epoch + s),
        }
    }
}

fn secs(epoch: Instant, now: Instant) -> f64 {
    now.saturating_duration_since(epoch).as_secs_f64()
}

/// The start record of an iperf 2 test on either end.
pub(crate) fn start_record(
    role: Role,
    peer: (String, u16),
    test: TestStart,
    connected: Vec<Connected>,
    buffers: (u32, u32),
    window: u32,
) -> StartRecord {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let (connecting_to, accepted_connection) = match role {
        Role::Client => (Some(peer), None),
        Role::Server => (None, Some(peer)),
    };
    StartRecord {
        role,
        version: format!("plumb {}", env!("CARGO_PKG_VERSION")),
        system_info: host::uname().to_string(),
        timesecs: now.as_secs(),
        timemillis: now.subsec_millis(),
        connecting_to,
        accepted_connection,
        cookie: String::new(),
        tcp_mss: None,
        tcp_mss_default: None,
        sock_bufsize: u64::from(window),
        sndbuf_actual: u64::from(buffers.0),
        rcvbuf_actual: u64::from(buffers.1),
        test,
        connected,
        title: None,
        extra_data: None,
    }
}

/// The test an iperf 2 client's header asks for, as the start record
/// gives it (iperf 2 has no omit, no blocks, no bidirectional test).
pub(crate) fn test_start(
    h: &plumb_proto::iperf2::TestHeader,
    protocol: plumb_record::engine::Protocol,
    reverse: bool,
    interval: f64,
) -> plumb_record::engine::TestStart {
    let (duration, bytes) = match h.amount {
        plumb_proto::iperf2::Amount::Time(t) => (t.as_secs_f64(), 0),
        plumb_proto::iperf2::Amount::Bytes(n) => (0.0, n),
    };
    plumb_record::engine::TestStart {
        protocol,
        num_streams: h.threads.max(1),
        blksize: u64::from(h.buf_len),
        omit: 0.0,
        duration,
        bytes,
        blocks: 0,
        reverse,
        bidir: false,
        tos: u32::from(h.tos),
        target_bitrate: h.rate,
        interval,
    }
}
