//! Evidence: everything a test recorded that bears on what limited it, as
//! typed fields, and the figures the rules derive from them (the RTT to
//! reason with, the loss rate, the window).
//!
//! What cannot be known is listed in [`Evidence::unknown`], never guessed.
//! The rules work on [`Evidence`] whatever built it: a `-J` document
//! ([`Evidence::from_document`], in `read`), the model alone, a live
//! connection.

use std::collections::BTreeMap;

use plumb_record::diagnosis::LatencyEvidence;

/// Where the link rate came from.
#[derive(Debug, Clone, PartialEq)]
pub enum LinkSource {
    /// The user said so (`--link`) or the lab configured it.
    Given,
    /// The speed of the interface the route uses (`/sys/class/net/IF/speed`).
    Interface(String),
    /// The test's own best interval: a lower bound, not the link.
    BestInterval,
    /// Inferred from the sender's evidence that the transfer fills its path
    /// (a standing queue, cwnd-limited time): see `path`.
    Inferred,
}

/// The bottleneck link's line rate.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkRate {
    /// bit/s on the wire.
    pub bps: f64,
    /// How it is known.
    pub source: LinkSource,
}

/// One sending stream's TCP state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamTcp {
    /// Payload bytes per segment (`tcpi_snd_mss`).
    pub mss: Option<u64>,
    /// The path MTU TCP works with (`tcpi_pmtu`): the interface's MTU until
    /// an ICMP "fragmentation needed" lowers it.
    pub pmtu: Option<u64>,
    /// Smallest RTT TCP saw, µs.
    pub min_rtt_us: Option<u64>,
    /// Smoothed RTT, µs (mean over the intervals when known).
    pub srtt_us: Option<u64>,
    /// Largest congestion window, bytes.
    pub max_cwnd: Option<u64>,
    /// Largest window the receiver advertised, bytes.
    pub max_snd_wnd: Option<u64>,
    /// `max_snd_wnd` is the receiver's window clamp (TCP_WINDOW_CLAMP, the
    /// most it can advertise), read at a plumb receiver whose sender
    /// recorded no TCP_INFO, rather than a window seen advertised.
    pub window_is_clamp: bool,
    /// Retransmitted segments.
    pub retransmits: Option<u64>,
    /// Retransmitted bytes.
    pub bytes_retrans: Option<u64>,
    /// Bytes this stream sent.
    pub bytes_sent: u64,
    /// Time with data outstanding, µs (includes the two below).
    pub busy_us: Option<u64>,
    /// Time limited by the receive window, µs.
    pub rwnd_limited_us: Option<u64>,
    /// Time limited by the send buffer, µs.
    pub sndbuf_limited_us: Option<u64>,
    /// SO_SNDBUF granted, bytes.
    pub sndbuf_actual: Option<u64>,
    /// SO_SNDBUF was set (`-w`, `--sndbuf`), so the kernel did not autotune it.
    pub sndbuf_set: bool,
    /// The share of the sender's samples in which the receiver advertised
    /// less than 3/4 of the largest window it had advertised before: its
    /// buffer held data its application had not read. Known where the
    /// window is sampled over time (a live connection, a capture).
    pub window_shrank_share: Option<f64>,
    /// Time the sender stalled in retransmission timeouts, µs: reporting
    /// intervals in which it could write nothing while its congestion
    /// window was down to one or two segments (what a timeout leaves).
    /// Known where the sender's intervals are (a client's own `-J`).
    pub stalled_us: Option<u64>,
    /// Payload the receiver acknowledged, bytes: `tcpi_bytes_acked`, less
    /// the SYN's sequence number on the end that opened the connection (the
    /// kernel counts it there only). What reached the receiver, also when
    /// its own count never came back.
    pub payload_acked: Option<u64>,
    /// Timeouts in a row the sender had not recovered from at the end
    /// (`tcpi_retransmits`): each one resent the head segment. Known for a
    /// live connection, where the period's retransmissions may hold only
    /// the last one or two of a long backoff.
    pub timeouts: Option<u64>,
}

/// One end's CPU over the test.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cpu {
    /// The process, percent of one core (iperf3's measure; can exceed 100).
    pub process_pct: f64,
    /// The busiest data thread: CPU it used, percent of the test.
    pub thread_cpu_pct: Option<f64>,
    /// The same thread: time it waited for a CPU while runnable (run queue,
    /// CPU quota), percent of the test.
    pub thread_wait_pct: Option<f64>,
    /// The whole machine busy, percent of all cores.
    pub system_busy_pct: Option<f64>,
    /// Softirq share of all cores, percent.
    pub softirq_pct: Option<f64>,
    /// The CPU quota of the end's cgroup, percent of one core, when one
    /// applied (a plumb end reports it).
    pub quota_pct: Option<f64>,
    /// Of the quota's enforcement periods with work during the test, the
    /// share in which it ran out and stopped the end's threads, percent.
    pub throttled_pct: Option<f64>,
}

/// What a UDP test's receiver counted: UDP has no window, no congestion
/// control and no retransmission, so its datagrams and where they were lost
/// are all there is to weigh beside the rate cap, the link and CPU.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UdpEvidence {
    /// What the sender sent, bit/s (iperf3's `sum_sent`).
    pub sent_bps: Option<f64>,
    /// Datagrams the receiver expected (received + lost).
    pub datagrams: u64,
    /// Datagrams that never arrived.
    pub lost: u64,
    /// Of those, dropped by the receiving socket because its buffer was
    /// full (`SO_MEMINFO` drops, counted by a plumb receiver only).
    pub socket_drops: Option<u64>,
    /// The receiving socket's buffer, bytes, when a plumb receiver said.
    pub rcvbuf_granted: Option<u64>,
    /// Payload bytes per datagram (`-l`).
    pub payload: Option<u64>,
}

impl UdpEvidence {
    /// The fraction of datagrams lost, 0 when none were expected.
    pub fn lost_fraction(&self) -> f64 {
        if self.datagrams == 0 {
            0.0
        } else {
            self.lost as f64 / self.datagrams as f64
        }
    }
}

/// Everything known about one test.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    /// Idle and loaded latency probes (`--latency`), when measured.
    pub latency: Option<LatencyEvidence>,
    /// TCP; a UDP test is weighed by its [`UdpEvidence`] instead.
    pub tcp: bool,
    /// A UDP test's datagram counts (`None` for TCP).
    pub udp: Option<UdpEvidence>,
    /// The server sent (`-R`).
    pub reverse: bool,
    /// Both sent; only the client-to-server direction is diagnosed.
    pub bidir: bool,
    /// Seconds counted.
    pub duration_s: f64,
    /// Receiver-measured goodput of the diagnosed direction, bit/s.
    pub measured_bps: f64,
    /// The best reporting interval, bit/s.
    pub best_interval_bps: f64,
    /// Application rate cap over all streams (`-b` × streams), bit/s.
    pub target_bps: Option<f64>,
    /// The link rate, if known.
    pub link: Option<LinkRate>,
    /// Sending streams.
    pub streams: Vec<StreamTcp>,
    /// Receiver SO_RCVBUF granted, bytes (first stream).
    pub rcvbuf_actual: Option<u64>,
    /// Congestion control of the sender.
    pub congestion: Option<String>,
    /// BBR's own estimate of the bottleneck's bandwidth, payload bit/s
    /// (`INET_DIAG_BBRINFO`), when the sender runs BBR and it was read.
    pub bbr_bw_bps: Option<f64>,
    /// CPU of the sending end.
    pub cpu_sender: Option<Cpu>,
    /// CPU of the receiving end.
    pub cpu_receiver: Option<Cpu>,
    /// TCP sysctls of the sending end.
    pub sysctl_sender: BTreeMap<String, String>,
    /// TCP sysctls of the receiving end.
    pub sysctl_receiver: BTreeMap<String, String>,
    /// Whether the sender is this host (the client).
    pub sender_is_local: bool,
    /// The peer is plumb (its evidence is in the document).
    pub peer_is_plumb: bool,
    /// The loss probability when it is known directly (the model's input
    /// in `plumb why --loss`), used instead of the retransmission rate.
    pub loss_probability: Option<f64>,
    /// Whether the sender puts TCP timestamps on its segments, when it is
    /// given rather than read from its sysctls (the model's header in
    /// `plumb why --tcp-timestamps`).
    pub tcp_timestamps: Option<bool>,
    /// What could not be known from this document.
    pub unknown: Vec<String>,
}

impl Evidence {
    /// The RTT to reason with: the mean smoothed RTT, else the minimum, seconds.
    pub fn rtt_s(&self) -> Option<f64> {
        let pick = |f: fn(&StreamTcp) -> Option<u64>| {
            let v: Vec<u64> = self
                .streams
                .iter()
                .filter_map(f)
                .filter(|r| *r > 0)
                .collect();
            (!v.is_empty()).then(|| v.iter().sum::<u64>() as f64 / v.len() as f64 / 1e6)
        };
        pick(|s| s.srtt_us).or_else(|| pick(|s| s.min_rtt_us))
    }

    /// The smallest RTT seen, seconds.
    pub fn min_rtt_s(&self) -> Option<f64> {
        self.streams
            .iter()
            .filter_map(|s| s.min_rtt_us)
            .filter(|r| *r > 0)
            .min()
            .map(|r| r as f64 / 1e6)
    }

    /// Payload bytes per segment (first stream that knows it).
    pub fn mss(&self) -> Option<u64> {
        self.streams.iter().find_map(|s| s.mss)
    }

    /// Fraction of the test a counter covers, summed over streams.
    pub fn fraction(&self, pick: fn(&StreamTcp) -> Option<u64>) -> Option<f64> {
        let total: Vec<u64> = self.streams.iter().filter_map(pick).collect();
        if total.is_empty() || self.duration_s <= 0.0 {
            return None;
        }
        let secs = total.iter().sum::<u64>() as f64 / 1e6 / self.streams.len() as f64;
        Some((secs / self.duration_s).min(1.0))
    }

    /// The loss probability if given, else retransmitted segments over
    /// segments sent, when both are known.
    pub fn loss_rate(&self) -> Option<f64> {
        if let Some(p) = self.loss_probability {
            return Some(p);
        }
        let mss = self.mss().unwrap_or(1448).max(1);
        let retr: u64 = self.streams.iter().filter_map(|s| s.retransmits).sum();
        let sent: u64 = self.streams.iter().map(|s| s.bytes_sent).sum();
        if self.streams.iter().all(|s| s.retransmits.is_none()) || sent == 0 {
            return None;
        }
        // Of every segment sent, new and resent: a share, never above 1,
        // however often the same segments were resent.
        let new = (sent as f64 / mss as f64).max(1.0);
        Some(retr as f64 / (new + retr as f64))
    }

    /// The summed largest advertised windows, bytes.
    pub fn window(&self) -> Option<u64> {
        let w: Vec<u64> = self.streams.iter().filter_map(|s| s.max_snd_wnd).collect();
        (!w.is_empty()).then(|| w.iter().sum())
    }

    /// Whether [`Evidence::window`] holds a receiver's window clamp (the
    /// most it can advertise) rather than windows seen advertised.
    pub fn window_is_clamp(&self) -> bool {
        self.streams.iter().any(|s| s.window_is_clamp)
    }
}
