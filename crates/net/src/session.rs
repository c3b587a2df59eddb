//! One running test, the same on both ends: its data streams and threads,
//! the interval reporter, the results this end sends, and the end record built
//! from both ends' results.
//!
//! The client and server drivers own the control connection and decide *when*
//! things happen; a [`Session`] does them.

use std::os::fd::AsFd;
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use plumb_proto::params::TestParams;
use plumb_proto::results::{
    CgroupCpu, CpuTimes, PlumbResults, PlumbStreamInfo, PlumbUdp, Results, StreamResult,
    TcpInfoSummary,
};
use plumb_record::engine::{
    CpuUtil, EndRecord, IntervalDetail, IntervalRecord, LimitedTime, Protocol, StreamEnd,
    StreamInterval, TcpEnd, TcpSample, Totals, UdpEnd,
};

use crate::buf::{DiscardBuf, PageBuf};
use crate::cgroup::CgroupCpuReading;
use crate::datapath::{self, Drain};
use crate::datathread::{self, Counters, StopAndBudget};
use crate::host::{self, CpuSnapshot};
use crate::pacing::PacerFactory;
use crate::sockets::StreamSocket;
use crate::sockopt;

mod job;
pub use crate::plan::Plan;
use job::StreamJob;
use plumb_tcpinfo::{tcp_info, TcpInfo};

#[derive(Debug, Default, Clone, Copy)]
struct Snapshot {
    bytes: u64,
    packets: u64,
    lost: i64,
    ooo: i64,
    retrans: u64,
}

#[derive(Debug, Default, Clone, Copy)]
struct TcpAcc {
    max_cwnd: u64,
    max_wnd: u64,
    max_rtt: u64,
    min_rtt: u64,
    sum_rtt: u64,
    samples: u64,
    /// TCP_INFO's cumulative busy/rwnd/sndbuf-limited times at the last
    /// interval, to report each interval's share.
    last_limited: LimitedTime,
}

/// How long an interval report waits for the sending threads' TCP_INFO
/// samples: a thread that has not answered by then is blocked in a call
/// (a full window), so its socket lock is free to take the sample directly.
const INFO_WAIT: Duration = Duration::from_millis(3);

/// One data stream of the session.
#[derive(Debug)]
pub struct Stream {
    /// iperf3 stream id (1, 3, 4, …).
    pub id: u32,
    /// This end sends on it.
    pub sender: bool,
    /// The socket.
    pub socket: StreamSocket,
    /// What its thread has done.
    pub counters: Arc<Counters>,
    thread: Option<JoinHandle<()>>,
    last: Snapshot,
    base: Snapshot,
    tcp: TcpAcc,
    end_secs: f64,
}

impl Stream {
    /// A stream around a connected socket.
    pub fn new(id: u32, sender: bool, socket: StreamSocket) -> Stream {
        Stream {
            id,
            sender,
            socket,
            counters: Arc::new(Counters::default()),
            thread: None,
            last: Snapshot::default(),
            base: Snapshot::default(),
            tcp: TcpAcc {
                min_rtt: u64::MAX,
                ..TcpAcc::default()
            },
            end_secs: 0.0,
        }
    }

    fn snapshot(&self) -> Snapshot {
        let c = &self.counters;
        Snapshot {
            bytes: c.bytes.load(Relaxed),
            packets: c.packets.load(Relaxed),
            lost: c.lost.load(Relaxed),
            ooo: c.out_of_order.load(Relaxed),
            retrans: self.last.retrans,
        }
    }

    fn tcp_info(&self) -> Option<TcpInfo> {
        match &self.socket {
            StreamSocket::Tcp(s) => tcp_info(s.as_fd()).ok(),
            StreamSocket::Udp(_) => None,
        }
    }

    /// Whether a running thread sends on this TCP stream (and so holds its
    /// socket lock most of the time: see [`crate::datathread::InfoMailbox`]).
    fn busy_tcp_sender(&self) -> bool {
        self.sender
            && matches!(self.socket, StreamSocket::Tcp(_))
            && self.thread.is_some()
            && !self.counters.done.load(Acquire)
    }

    /// A sample for an interval: from the sending thread when it runs,
    /// asked for with `ticket` (see [`Session::interval_record`]).
    fn interval_tcp_info(&self, ticket: Option<u64>, deadline: Instant) -> Option<TcpInfo> {
        ticket
            .and_then(|t| self.counters.info.collect(t, deadline))
            .or_else(|| self.tcp_info())
    }
}

/// A test in progress on this end.
#[derive(Debug)]
pub struct Session {
    /// The plan both ends follow.
    pub plan: Plan,
    /// Streams in creation order.
    pub streams: Vec<Stream>,
    /// Flags and budget shared with the threads.
    pub shared: Arc<StopAndBudget>,
    interval: Option<Duration>,
    started: Option<Instant>,
    /// Start of the counted period (after omit).
    counted_from: Option<Instant>,
    next_tick: Option<Instant>,
    interval_start: f64,
    cpu0: Option<CpuSnapshot>,
    cpu: Option<(f64, f64, f64)>,
    cpu_system: Option<CpuTimes>,
    /// The cgroup quota's counters at the start of the counted period, and
    /// what the quota did over it.
    cgroup0: Option<CgroupCpuReading>,
    cgroup_cpu: Option<CgroupCpu>,
    stopped_at: Option<Instant>,
    /// What request/response streams need beyond the plan.
    pub rr: crate::rr::RrContext,
}

impl Session {
    /// A session that reports every `interval` seconds (0 = never).
    pub fn new(plan: Plan, interval: f64) -> Session {
        let shared = Arc::new(StopAndBudget::new(plan.budget, plan.at_budget));
        Session {
            interval: (interval > 0.0).then(|| Duration::from_secs_f64(interval)),
            plan,
            streams: Vec::new(),
            shared,
            started: None,
            counted_from: None,
            next_tick: None,
            interval_start: 0.0,
            cpu0: None,
            cpu: None,
            cpu_system: None,
            cgroup0: None,
            cgroup_cpu: None,
            stopped_at: None,
            rr: crate::rr::RrContext::default(),
        }
    }

    /// Each stream's addresses, as the start of a report lists them.
    pub fn connected(&self) -> Vec<plumb_record::Connected> {
        self.streams
            .iter()
            .filter_map(|s| {
                let (l, r) = match &s.socket {
                    StreamSocket::Tcp(t) => (t.local_addr().ok()?, t.peer_addr().ok()?),
                    StreamSocket::Udp(u) => (u.local_addr().ok()?, u.peer_addr().ok()?),
                };
                Some(plumb_record::Connected::new(
                    s.socket.raw_fd(),
                    crate::sockets::host_string(&l),
                    l.port(),
                    crate::sockets::host_string(&r),
                    r.port(),
                ))
            })
            .collect()
    }

    /// SO_SNDBUF and SO_RCVBUF the kernel granted the first stream.
    pub fn granted_buffers(&self) -> (u32, u32) {
        self.streams
            .first()
            .map(|s| {
                let fd = match &s.socket {
                    StreamSocket::Tcp(t) => t.as_fd(),
                    StreamSocket::Udp(u) => u.as_fd(),
                };
                (
                    sockopt::send_buffer(fd).unwrap_or(0),
                    sockopt::recv_buffer(fd).unwrap_or(0),
                )
            })
            .unwrap_or((0, 0))
    }

    /// The start of a report for the test a [`Session`] runs; the caller sets the
    /// role-specific fields (peer, MSS default). `omit` and `duration` are the
    /// exact seconds (the wire carries whole ones).
    pub fn start_record(
        &self,
        cookie: &plumb_proto::Cookie,
        p: &TestParams,
        omit: f64,
        duration: f64,
        interval: f64,
    ) -> plumb_record::engine::StartRecord {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let (sndbuf, rcvbuf) = self.granted_buffers();
        plumb_record::engine::StartRecord {
            role: plumb_record::engine::Role::Client,
            version: format!("plumb {}", env!("CARGO_PKG_VERSION")),
            system_info: host::uname().to_string(),
            timesecs: now.as_secs(),
            timemillis: now.subsec_millis(),
            connecting_to: None,
            accepted_connection: None,
            cookie: cookie.as_str().into_owned(),
            tcp_mss: p.mss.map(|m| m as u32),
            tcp_mss_default: None,
            sock_bufsize: p.window.unwrap_or(0).max(0) as u64,
            sndbuf_actual: u64::from(sndbuf),
            rcvbuf_actual: u64::from(rcvbuf),
            test: plumb_record::engine::TestStart {
                protocol: self.plan.protocol,
                num_streams: p.parallel as u32,
                blksize: p.len as u64,
                omit,
                duration,
                bytes: p.num as u64,
                blocks: p.blockcount as u64,
                reverse: p.reverse,
                bidir: p.bidirectional,
                tos: p.tos.unwrap_or(0) as u32,
                target_bitrate: p.bandwidth as u64,
                interval,
            },
            connected: self.connected(),
            title: p.title.clone(),
            extra_data: p.extra_data.clone(),
        }
    }

    /// Whether the session's threads are running.
    pub fn running(&self) -> bool {
        self.started.is_some()
    }

    /// Starts every stream's thread; `now` is TEST_RUNNING.
    pub fn start(&mut self, now: Instant, drain: Drain) {
        self.started = Some(now);
        self.counted_from = if self.plan.omit > 0.0 {
            None
        } else {
            Some(now)
        };
        self.next_tick = self.interval.map(|i| now + i);
        let plan = self.plan.clone();
        let pacers = self.pacers();
        // Only receivers size anything by the CPU count; a sender's start
        // does not wait for the sysfs read.
        let cpus = if self.streams.iter().any(|s| !s.sender) {
            host::online_cpus()
        } else {
            1
        };
        let (block, sinks) = self.landing(cpus);
        let mut next_sink = sinks.iter().cycle();
        for s in &mut self.streams {
            let pacer = if s.sender { pacers.pacer() } else { None };
            let tcp = matches!(s.socket, StreamSocket::Tcp(_));
            let mut rr = self.rr.clone();
            rr.pace_bps = (plan.rate > 0).then_some(plan.rate);
            // TCP throughput only: a late UDP receiver loses datagrams, where
            // a late TCP receiver only lets its queue grow; and a
            // request/response thread's every wake-up is the latency it
            // measures, so it must preempt whatever runs on its CPU. A
            // paced sender (-b) too: it sleeps between grants, and a batch
            // thread's wake-up waits for the running thread's slice (128
            // KiB blocks at -b 1G moved 266 Mbit/s on an idle machine).
            //
            // A sender enters the class after its first block rather than
            // at its start: on two CPUs busy with idle-priority builds (in a
            // cgroup of their own), a sender in the class from its start
            // waited for a CPU a 4 ms tick at a time before its first write
            // (perf sched: five such waits, 41 ms from exec to the write).
            let batch = tcp && plan.rr.is_none() && pacer.is_none();
            let job = StreamJob {
                sock: s.socket.clone(),
                sender: s.sender,
                plan: plan.clone(),
                rr,
                shared: Arc::clone(&self.shared),
                counters: Arc::clone(&s.counters),
                pacer,
                block: block.clone().filter(|_| s.sender && tcp),
                // Each TCP receiver the next landing place, in turn.
                sink: if !s.sender && tcp {
                    next_sink.next().map(Arc::clone)
                } else {
                    None
                },
                cpus,
                drain,
                batch,
            };
            let handle = datathread::spawn_stream(
                format!("plumb-stream-{}", s.id),
                batch && !s.sender,
                Arc::clone(&s.counters),
                move || job.run(),
            );
            match handle {
                Ok(h) => s.thread = Some(h),
                Err(e) => {
                    if let Ok(mut slot) = s.counters.error.lock() {
                        *slot = Some(format!("cannot start a thread: {e}"));
                    }
                }
            }
        }
        // The CPU and cgroup baselines (/proc/stat, the cgroup's files) are
        // read while the streams start, not before their first block: the
        // streams' first fraction of a millisecond of CPU falls before the
        // baseline as the reading's own did after it, and the test's first
        // byte does not wait for some twenty system calls.
        self.cpu0 = CpuSnapshot::take().ok();
        self.cgroup0 = CgroupCpuReading::take();
    }

    /// What this end's TCP streams share: one payload block for every
    /// sender, and for the receivers one landing place per CPU they can run
    /// on (none when bytes are discarded unread, `--skip-rx-copy`).
    ///
    /// Why: a sender's block is the same bytes in every stream and only
    /// read, and a receiver's bytes are thrown away; with a block and a
    /// buffer of its own per stream, a `-P 8` end held 1 MiB of copies of
    /// the same 128 KiB, most of its peak resident memory beside its code.
    /// The landing places stay one per CPU so that receivers running at
    /// the same time mostly write to different memory.
    fn landing(&self, cpus: usize) -> (Option<Arc<PageBuf>>, Vec<Arc<DiscardBuf>>) {
        let p = &self.plan;
        let tcp = |s: &&Stream| matches!(s.socket, StreamSocket::Tcp(_));
        if p.rr.is_some() {
            return (None, Vec::new());
        }
        let block = self
            .streams
            .iter()
            .filter(tcp)
            .any(|s| s.sender)
            .then(|| Arc::new(datapath::payload_block(p.len, p.repeating)));
        let receivers = self
            .streams
            .iter()
            .filter(tcp)
            .filter(|s| !s.sender)
            .count();
        let places = if p.skip_rx_copy {
            0
        } else {
            receivers.min(cpus.max(1))
        };
        // A mapping that fails leaves the streams their own buffers.
        let sinks = (0..places)
            .map_while(|_| DiscardBuf::new(p.len.max(64 * 1024)).ok().map(Arc::new))
            .collect();
        (block, sinks)
    }

    /// The pacers of this end's sending streams: per stream at `rate`, or
    /// one schedule at `total_rate` for all of them.
    fn pacers(&self) -> PacerFactory {
        let p = &self.plan;
        let schedule = |rate| match p.protocol {
            Protocol::Tcp => datapath::tcp_schedule(rate, p.len),
            Protocol::Udp => datapath::udp_schedule(rate, p.len, p.gso),
        };
        match p.total_rate {
            Some(total) => PacerFactory::shared(schedule(total)),
            None => PacerFactory::per_stream(schedule(p.rate)),
        }
    }

    /// When the driver should call [`Session::tick`] next.
    pub fn poll_at(&self) -> Option<Instant> {
        let omit_end = match (self.started, self.counted_from) {
            (Some(s), None) => Some(s + Duration::from_secs_f64(self.plan.omit)),
            _ => None,
        };
        match (self.next_tick, omit_end) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Emits due intervals and ends the omit period when its time has come.
    pub fn tick(&mut self, now: Instant, sink: &mut dyn plumb_record::Sink) {
        let Some(started) = self.started else { return };
        if self.counted_from.is_none() && now >= started + Duration::from_secs_f64(self.plan.omit) {
            // Omit over: this interval ends here and counting restarts at zero.
            let r = self.interval_record(now, true);
            if let Some(r) = r {
                if self.interval.is_some() {
                    sink.interval(&r);
                }
            }
            for s in &mut self.streams {
                s.base = s.last;
            }
            self.counted_from = Some(now);
            self.interval_start = 0.0;
            self.next_tick = self.interval.map(|i| now + i);
            self.cpu0 = CpuSnapshot::take().ok();
            self.cgroup0 = CgroupCpuReading::take();
            return;
        }
        if let (Some(t), Some(i)) = (self.next_tick, self.interval) {
            if now >= t {
                if let Some(r) = self.interval_record(now, self.counted_from.is_none()) {
                    sink.interval(&r);
                }
                let mut next = t + i;
                while next <= now {
                    next += i;
                }
                self.next_tick = Some(next);
            }
        }
    }

    fn elapsed(&self, now: Instant) -> f64 {
        let from = self.counted_from.or(self.started).unwrap_or(now);
        now.saturating_duration_since(from).as_secs_f64()
    }

    fn interval_record(&mut self, now: Instant, omitted: bool) -> Option<IntervalRecord> {
        let end = self.elapsed(now);
        let start = self.interval_start;
        self.interval_start = end;
        if end - start < 1e-3 {
            return None;
        }
        let mut streams = Vec::with_capacity(self.streams.len());
        // Ask every sending thread first, so that the waits overlap.
        let tickets: Vec<Option<u64>> = self
            .streams
            .iter()
            .map(|s| s.busy_tcp_sender().then(|| s.counters.info.request()))
            .collect();
        let deadline = Instant::now() + INFO_WAIT;
        for (s, ticket) in self.streams.iter_mut().zip(tickets) {
            let snap = s.snapshot();
            let bytes = snap.bytes.saturating_sub(s.last.bytes);
            let detail = match (self.plan.protocol, s.sender) {
                (Protocol::Tcp, true) => {
                    let info = s.interval_tcp_info(ticket, deadline);
                    let sample = info.map(|i| {
                        let total = u64::from(i.total_retrans);
                        let sample = TcpSample {
                            retransmits: total.saturating_sub(s.last.retrans),
                            snd_cwnd: u64::from(i.snd_cwnd) * u64::from(i.snd_mss),
                            snd_wnd: u64::from(i.snd_wnd.unwrap_or(0)),
                            rtt: u64::from(i.rtt),
                            rttvar: u64::from(i.rttvar),
                            pmtu: u64::from(i.pmtu),
                            limited: limited_since(&mut s.tcp.last_limited, &i),
                        };
                        s.last.retrans = total;
                        sample
                    });
                    if let Some(t) = sample {
                        let a = &mut s.tcp;
                        a.max_cwnd = a.max_cwnd.max(t.snd_cwnd);
                        a.max_wnd = a.max_wnd.max(t.snd_wnd);
                        a.max_rtt = a.max_rtt.max(t.rtt);
                        a.min_rtt = a.min_rtt.min(t.rtt);
                        a.sum_rtt += t.rtt;
                        a.samples += 1;
                    }
                    IntervalDetail::Tcp(sample)
                }
                (Protocol::Tcp, false) => IntervalDetail::Tcp(None),
                (Protocol::Udp, true) => IntervalDetail::UdpSender {
                    packets: snap.packets - s.last.packets,
                },
                (Protocol::Udp, false) => IntervalDetail::UdpReceiver {
                    jitter_ms: s.counters.jitter() * 1e3,
                    lost: snap.lost - s.last.lost,
                    packets: snap.packets as i64 - s.last.packets as i64,
                },
            };
            let retrans = s.last.retrans;
            s.last = Snapshot { retrans, ..snap };
            streams.push(StreamInterval {
                socket: s.socket.raw_fd(),
                start,
                end,
                bytes,
                sender: s.sender,
                omitted,
                detail,
            });
        }
        let plumb = self.plan.rr.map(|p| plumb_record::IntervalPlumb {
            latency: Some(crate::rr::stats::interval(
                self.streams.iter().map(|s| &*s.counters),
                p,
                self.plan.protocol == Protocol::Udp,
                end - start,
            )),
            ..plumb_record::IntervalPlumb::default()
        });
        Some(IntervalRecord { streams, plumb })
    }

    /// Tells the senders to stop (time up, budget spent, TEST_END).
    pub fn stop_senders(&mut self, now: Instant) {
        if self.stopped_at.is_none() {
            // Senders that all ended on their own (a spent -n/-k budget)
            // stopped when the last of them did, however late the driver
            // looks.
            let ends: Option<Vec<Instant>> = self
                .streams
                .iter()
                .filter(|s| s.sender)
                .map(|s| s.counters.ended_at())
                .collect();
            let last = ends.and_then(|e| e.into_iter().max());
            self.stopped_at = Some(last.map_or(now, |t| t.min(now)));
        }
        self.shared.stop.store(true, Relaxed);
    }

    /// Tells receivers to finish once drained.
    pub fn stop_receivers(&self) {
        self.shared.stop_receivers.store(true, Relaxed);
    }

    /// Whether every sending thread has finished (budget spent, error).
    pub fn senders_done(&self) -> bool {
        self.streams
            .iter()
            .filter(|s| s.sender)
            .all(|s| s.counters.done.load(Relaxed))
    }

    /// Whether every TCP sending stream's data has left and been
    /// acknowledged (nothing unsent, nothing unacknowledged); a stream whose
    /// `TCP_INFO` cannot be read counts as drained.
    pub fn senders_drained(&self) -> bool {
        self.streams
            .iter()
            .filter(|s| s.sender)
            .filter_map(Stream::tcp_info)
            .all(|i| i.unacked == 0 && i.notsent_bytes.unwrap_or(0) == 0)
    }

    /// Whether every stream's thread has finished.
    pub fn all_done(&self) -> bool {
        self.streams
            .iter()
            .all(|s| s.thread.is_none() || s.counters.done.load(Relaxed))
    }

    /// The first error a stream thread reported.
    pub fn stream_error(&self) -> Option<String> {
        self.streams.iter().find_map(|s| s.counters.failure())
    }

    /// Ends the test on this end: stops everything, waits for the threads
    /// (receivers drain first), emits the last partial interval and fixes
    /// each stream's duration.
    pub fn finish(&mut self, now: Instant, sink: &mut dyn plumb_record::Sink) {
        self.stop_senders(now);
        self.stop_receivers();
        for s in &mut self.streams {
            if let Some(h) = s.thread.take() {
                let _ = h.join();
            }
        }
        let end = Instant::now();
        if self.started.is_some() {
            if self.interval.is_some() {
                // A sender's test ended when it stopped sending, not when the threads were joined.
                let all_send = self.streams.iter().all(|s| s.sender);
                let last = if all_send {
                    self.stopped_at.unwrap_or(end)
                } else {
                    end
                };
                if let Some(r) = self.interval_record(last, self.counted_from.is_none()) {
                    if r.streams.iter().any(|s| s.bytes > 0) {
                        sink.interval(&r);
                    }
                }
            }
            let stop = self.stopped_at.unwrap_or(end);
            let secs = self.elapsed(stop);
            let epoch = datathread::epoch();
            let from = self.counted_from.or(self.started).unwrap_or(end);
            for s in &mut self.streams {
                // A receiver ran until the last byte it drained after the stop.
                let last = s.counters.last_rx_ns.load(Relaxed);
                let until = if !s.sender && last > 0 {
                    (epoch + Duration::from_nanos(last)).max(stop)
                } else {
                    stop
                };
                s.end_secs = if until > stop {
                    until.saturating_duration_since(from).as_secs_f64()
                } else {
                    secs
                };
            }
            if let Some(c0) = &self.cpu0 {
                let wall = end
                    .saturating_duration_since(self.counted_from.or(self.started).unwrap_or(end));
                if let Ok(c1) = CpuSnapshot::take() {
                    let u = c1.usage_since(c0, wall);
                    self.cpu = Some((u.process_total, u.process_user, u.process_system));
                    self.cpu_system = c0
                        .system
                        .zip(c1.system)
                        .map(|(a, b)| system_percent(&a, &b));
                }
            }
            if let Some(g0) = &self.cgroup0 {
                self.cgroup_cpu = g0.again().and_then(|g1| g1.since(g0));
            }
        }
    }

    /// Final counters of a stream after the omit period.
    fn totals(s: &Stream) -> Snapshot {
        let now = s.snapshot();
        Snapshot {
            bytes: now.bytes.saturating_sub(s.base.bytes),
            packets: now.packets.saturating_sub(s.base.packets),
            lost: now.lost - s.base.lost,
            ooo: now.ooo - s.base.ooo,
            retrans: 0,
        }
    }

    /// This end's results for the peer (the iperf3 results object), with
    /// plumb's evidence under `plumb`.
    pub fn local_results(&self, congestion: Option<String>) -> Results {
        let (total, user, system) = self.cpu.unwrap_or((0.0, 0.0, 0.0));
        let any_send = self.streams.iter().any(|s| s.sender);
        let sender_has_retransmits = match (any_send, self.plan.protocol) {
            (false, _) => -1,
            (true, Protocol::Tcp) => 1,
            (true, Protocol::Udp) => 0,
        };
        let mut plumb_streams = Vec::new();
        let streams = self
            .streams
            .iter()
            .map(|s| {
                let t = Self::totals(s);
                let info = s.tcp_info();
                let retransmits = match (s.sender, self.plan.protocol, &info) {
                    (true, Protocol::Tcp, Some(i)) => i64::from(i.total_retrans),
                    _ => -1,
                };
                plumb_streams.push(stream_info(s, info.as_ref(), self.plan.sndbuf_set));
                let (jitter, errors, packets) = if s.sender {
                    (0.0, 0, t.packets as i64)
                } else {
                    (s.counters.jitter(), t.lost, t.packets as i64)
                };
                StreamResult {
                    id: s.id,
                    bytes: t.bytes,
                    retransmits,
                    jitter,
                    errors,
                    omitted_errors: Some(0),
                    omitted_packets: Some(0),
                    packets: if self.plan.protocol == Protocol::Tcp {
                        0
                    } else {
                        packets
                    },
                    start_time: 0.0,
                    end_time: s.end_secs,
                }
            })
            .collect();
        Results {
            cpu_util_total: total,
            cpu_util_user: user,
            cpu_util_system: system,
            sender_has_retransmits,
            congestion_used: congestion,
            server_output_text: None,
            server_output_json: None,
            streams,
            plumb: Some(PlumbResults {
                version: env!("CARGO_PKG_VERSION").to_string(),
                // The far end's -J and report show this host's system from it.
                system: Some(host::uname().to_string()),
                cpu_system_wide: self.cpu_system,
                sysctl: host::tcp_sysctls(),
                streams: plumb_streams,
                // The server driver fills this in when tests overlap.
                concurrent_tests: None,
                udp: self.udp_facts(),
                cgroup_cpu: self.cgroup_cpu,
                // The thread that runs the test: its streams inherited its
                // CPUs (a client's -A pins the process before the test, a
                // server's pins the test's thread before the streams).
                cpus_allowed: host::current_thread_affinity()
                    .ok()
                    .filter(|c| !c.is_empty())
                    .map(|c| host::cpu_list(&c)),
            }),
        }
    }

    /// How this end moved UDP datagrams (`None` for TCP): its senders' GSO
    /// segments, its receivers' GRO, jitter resolution and cut reads, and
    /// the socket buffers asked for and granted.
    fn udp_facts(&self) -> Option<PlumbUdp> {
        if self.plan.protocol != Protocol::Udp {
            return None;
        }
        let mut u = PlumbUdp {
            gsro: self.plan.gso || self.plan.gro,
            gso_segments_asked: self.plan.gso_asked,
            socket_buffer_requested: Some(u64::from(self.plan.udp_buffer)),
            ..PlumbUdp::default()
        };
        for s in &self.streams {
            let c = &s.counters;
            if s.sender {
                let segs = c.udp_gso_segs.load(Relaxed);
                if segs > 0 {
                    u.gso_segments = Some(u.gso_segments.unwrap_or(0).max(segs));
                }
            } else {
                match c.udp_gro.load(Relaxed) {
                    1 => u.gro = Some(u.gro.unwrap_or(false)),
                    2 => u.gro = Some(true),
                    _ => {}
                }
                if let Some(r) =
                    datapath::JitterResolution::from_code(c.udp_jitter_res.load(Relaxed))
                {
                    u.jitter_resolution = Some(r.as_str().to_string());
                    u.receive_poll_us = Some(
                        u64::try_from(datapath::UDP_RECV_POLL.as_micros()).unwrap_or(u64::MAX),
                    );
                }
                *u.truncated_reads.get_or_insert(0) += c.truncated_reads.load(Relaxed);
                let drops = c.socket_drops.load(Relaxed);
                if drops != u64::MAX {
                    *u.socket_drops.get_or_insert(0) += drops;
                }
            }
            if u.sndbuf_granted.is_none() {
                if let StreamSocket::Udp(sock) = &s.socket {
                    u.sndbuf_granted = sockopt::send_buffer(sock.as_fd()).ok();
                    u.rcvbuf_granted = sockopt::recv_buffer(sock.as_fd()).ok();
                }
            }
        }
        Some(u)
    }

    /// The end record from this end's counters and the peer's results.
    pub fn end_record(&self, peer: &Results, local_cc: Option<String>) -> EndRecord {
        let mut streams = Vec::with_capacity(self.streams.len());
        for s in &self.streams {
            let t = Self::totals(s);
            let p = peer.streams.iter().find(|p| p.id == s.id);
            let local = Totals {
                bytes: t.bytes,
                seconds: s.end_secs,
            };
            let remote = p.map_or(Totals::default(), |p| Totals {
                bytes: p.bytes,
                seconds: p.end_time - p.start_time,
            });
            let (sent, received) = if s.sender {
                (local, remote)
            } else {
                (remote, local)
            };
            let retransmits = if s.sender {
                match (self.plan.protocol, s.tcp_info()) {
                    (Protocol::Tcp, Some(i)) => Some(i64::from(i.total_retrans)),
                    _ => None,
                }
            } else {
                p.map(|p| p.retransmits).filter(|r| *r >= 0)
            };
            let tcp =
                (s.sender && self.plan.protocol == Protocol::Tcp && s.tcp.samples > 0).then(|| {
                    TcpEnd {
                        max_snd_cwnd: s.tcp.max_cwnd,
                        max_snd_wnd: s.tcp.max_wnd,
                        max_rtt: s.tcp.max_rtt,
                        min_rtt: s.tcp.min_rtt,
                        mean_rtt: s.tcp.sum_rtt / s.tcp.samples,
                    }
                });
            let udp = (self.plan.protocol == Protocol::Udp).then(|| {
                if s.sender {
                    let p = p.cloned().unwrap_or_default();
                    UdpEnd {
                        jitter_ms: p.jitter * 1e3,
                        lost: p.errors,
                        packets: p.packets,
                        sent_packets: t.packets as i64,
                        out_of_order: 0,
                    }
                } else {
                    UdpEnd {
                        jitter_ms: s.counters.jitter() * 1e3,
                        lost: t.lost,
                        packets: t.packets as i64,
                        sent_packets: p.map_or(0, |p| p.packets),
                        out_of_order: t.ooo,
                    }
                }
            });
            streams.push(StreamEnd {
                socket: s.socket.raw_fd(),
                sender: s.sender,
                sent,
                received,
                retransmits,
                tcp,
                udp,
            });
        }
        let (host_total, host_user, host_system) = self.cpu.unwrap_or((0.0, 0.0, 0.0));
        let we_send = self.streams.iter().any(|s| s.sender);
        let (snd_cc, rcv_cc) = if we_send {
            (local_cc.clone(), peer.congestion_used.clone())
        } else {
            (peer.congestion_used.clone(), local_cc)
        };
        let local = self.local_results(None);
        let plumb = crate::end_plumb::end_plumb(local.plumb.as_ref(), peer.plumb.as_ref(), we_send);
        EndRecord {
            protocol: self.plan.protocol,
            bidir: self.plan.bidir,
            streams,
            cpu: CpuUtil {
                host_total,
                host_user,
                host_system,
                remote_total: peer.cpu_util_total,
                remote_user: peer.cpu_util_user,
                remote_system: peer.cpu_util_system,
            },
            sender_tcp_congestion: snd_cc,
            receiver_tcp_congestion: rcv_cc,
            plumb: Some(plumb),
            server_output_text: peer.server_output_text.clone(),
            server_output_json: peer.server_output_json.clone(),
        }
    }
}

/// This interval's busy and limited times from TCP_INFO's cumulative
/// counters, remembering them in `last` for the next interval.
fn limited_since(last: &mut LimitedTime, i: &TcpInfo) -> Option<LimitedTime> {
    let now = LimitedTime {
        busy_us: i.busy_time?,
        rwnd_limited_us: i.rwnd_limited?,
        sndbuf_limited_us: i.sndbuf_limited?,
    };
    let delta = LimitedTime {
        busy_us: now.busy_us.saturating_sub(last.busy_us),
        rwnd_limited_us: now.rwnd_limited_us.saturating_sub(last.rwnd_limited_us),
        sndbuf_limited_us: now.sndbuf_limited_us.saturating_sub(last.sndbuf_limited_us),
    };
    *last = now;
    Some(delta)
}

fn stream_info(s: &Stream, info: Option<&TcpInfo>, sndbuf_set: bool) -> PlumbStreamInfo {
    let (sndbuf, rcvbuf, clamp, cc, mss) = match &s.socket {
        StreamSocket::Tcp(t) => {
            let fd = t.as_fd();
            (
                sockopt::send_buffer(fd).ok(),
                sockopt::recv_buffer(fd).ok(),
                sockopt::window_clamp(fd).ok(),
                sockopt::congestion(fd).ok().map(|c| c.as_str().to_string()),
                sockopt::max_segment(fd).ok(),
            )
        }
        StreamSocket::Udp(u) => {
            let fd = u.as_fd();
            (
                sockopt::send_buffer(fd).ok(),
                sockopt::recv_buffer(fd).ok(),
                None,
                None,
                None,
            )
        }
    };
    let cpu = s.counters.thread_cpu_us.load(Relaxed);
    let wait = s.counters.thread_wait_us.load(Relaxed);
    PlumbStreamInfo {
        id: s.id,
        thread_cpu_us: (cpu > 0 || wait > 0).then_some(cpu),
        thread_wait_us: (cpu > 0 || wait > 0).then_some(wait),
        sndbuf_actual: sndbuf,
        sndbuf_set: s.sender && sndbuf_set,
        rcvbuf_actual: rcvbuf,
        window_clamp: clamp,
        mss,
        congestion: cc,
        tcp_info: info.map(info_summary),
    }
}

/// What plumb keeps of a stream's last TCP_INFO (`end.plumb`'s `tcp_info`).
pub(crate) fn info_summary(i: &TcpInfo) -> TcpInfoSummary {
    TcpInfoSummary {
        busy_time_us: i.busy_time,
        rwnd_limited_us: i.rwnd_limited,
        sndbuf_limited_us: i.sndbuf_limited,
        // TCP_INFO gives bytes per second.
        delivery_rate_bps: i.delivery_rate.map(|r| r.saturating_mul(8)),
        min_rtt_us: i.min_rtt.map(u64::from),
        rtt_us: Some(u64::from(i.rtt)),
        rttvar_us: Some(u64::from(i.rttvar)),
        snd_cwnd_bytes: Some(u64::from(i.snd_cwnd) * u64::from(i.snd_mss)),
        snd_wnd: i.snd_wnd.map(u64::from),
        total_retrans: Some(u64::from(i.total_retrans)),
        bytes_retrans: i.bytes_retrans,
        bytes_acked: i.bytes_acked,
        pmtu: Some(u64::from(i.pmtu)),
        snd_mss: Some(u64::from(i.snd_mss)),
        rcv_space: Some(u64::from(i.rcv_space)),
    }
}

/// System-wide CPU time shares between two /proc/stat readings, percent of
/// all CPUs: the softirq share is where a receiving host's network stack shows.
fn system_percent(a: &host::SystemCpuTimes, b: &host::SystemCpuTimes) -> CpuTimes {
    let total = b.total().saturating_sub(a.total()).max(1) as f64;
    let pct = |x: u64, y: u64| 100.0 * y.saturating_sub(x) as f64 / total;
    CpuTimes {
        user: pct(a.user, b.user),
        nice: pct(a.nice, b.nice),
        system: pct(a.system, b.system),
        irq: pct(a.irq, b.irq),
        softirq: pct(a.softirq, b.softirq),
        iowait: pct(a.iowait, b.iowait),
        steal: pct(a.steal, b.steal),
        idle: pct(a.idle, b.idle),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(parallel: u8, bidir: bool) -> Plan {
        Plan::of(&TestParams {
            parallel: parallel.into(),
            bidirectional: bidir,
            ..TestParams::default()
        })
    }

    #[test]
    fn lowat_only_when_the_data_threads_fit_the_cpus() {
        // One stream: a sender and a receiver, one CPU each.
        assert!(plan(1, false).recv_lowat(2));
        assert!(!plan(1, false).recv_lowat(1));
        // -P 2 or --bidir on two CPUs: four data threads.
        assert!(!plan(2, false).recv_lowat(2));
        assert!(!plan(1, true).recv_lowat(2));
        assert!(plan(2, false).recv_lowat(4));
        assert!(!plan(2, true).recv_lowat(7));
        assert!(plan(2, true).recv_lowat(8));
    }
}
