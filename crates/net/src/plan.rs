//! What both ends of a test derive from its parameters ([`Plan`]): the
//! protocol, lengths and rates, the options each data thread honours, and
//! whether a receiver batches its wake-ups.

use plumb_proto::params::{Protocol as WireProtocol, TestParams};

use plumb_record::engine::Protocol;

use crate::datathread::AtBudget;

/// What both ends derive from the parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// TCP or UDP.
    pub protocol: Protocol,
    /// Block / datagram size.
    pub len: usize,
    /// Streams per direction.
    pub parallel: usize,
    /// Server sends.
    pub reverse: bool,
    /// Both send.
    pub bidir: bool,
    /// bit/s per stream, 0 = unlimited.
    pub rate: u64,
    /// One rate, bit/s, shared by all of this end's sending streams instead of
    /// `rate` each (`--total-bitrate`; the wire carries only the per-stream
    /// share, so only the client that asked knows it).
    pub total_rate: Option<u64>,
    /// 64-bit UDP sequence numbers.
    pub seq64: bool,
    /// Payload `0123456789…`.
    pub repeating: bool,
    /// Send without copying (`-Z`: splice from a memfd).
    pub zerocopy: bool,
    /// Receive with MSG_TRUNC.
    pub skip_rx_copy: bool,
    /// Seconds omitted.
    pub omit: f64,
    /// Seconds to run (0 = bounded by bytes/blocks).
    pub time: f64,
    /// Byte budget across streams (from `-n`, or `-k` × len).
    pub budget: Option<u64>,
    /// What this end's senders do once the budget is spent: a client's
    /// stop ([`AtBudget::Stop`], from [`Plan::of`]); the server sets its own.
    pub at_budget: AtBudget,
    /// `--rwin`: the receive window clamp receiving streams hold.
    pub rwin: Option<u32>,
    /// Sending sockets have a fixed SO_SNDBUF (`-w`, `--sndbuf`), so the
    /// kernel does not autotune it.
    pub sndbuf_set: bool,
    /// UDP senders send GSO messages (iperf3 3.21+'s `gso`, `--gsro`).
    pub gso: bool,
    /// UDP receivers turn `UDP_GRO` on (iperf3 3.21+'s `gro`, `--gsro`).
    pub gro: bool,
    /// SO_SNDBUF/SO_RCVBUF asked for on UDP sockets: `-w` or plumb's default.
    pub udp_buffer: u32,
    /// Datagrams per GSO message the client asked for (`gso_bf_size /
    /// gso_dg_size`), when it asked for GSO.
    pub gso_asked: Option<u64>,
    /// A request/response test (`plumb.rr`): streams run [`crate::rr`] loops.
    pub rr: Option<plumb_proto::rr::RrParams>,
    /// `-F` on a client: TCP senders send this file, receivers write to it.
    pub file: Option<std::path::PathBuf>,
}

impl Plan {
    /// Derives the plan from the agreed parameters.
    pub fn of(p: &TestParams) -> Plan {
        let protocol = if p.protocol == WireProtocol::Udp {
            Protocol::Udp
        } else {
            Protocol::Tcp
        };
        // Validated parameters are non-negative; clamp anyway rather than wrap.
        let len = p.len.clamp(1, 1 << 20) as usize;
        let budget = if p.num > 0 {
            Some(p.num as u64)
        } else if p.blockcount > 0 {
            Some((p.blockcount as u64).saturating_mul(len as u64))
        } else {
            None
        };
        let plumb = p.plumb.clone().unwrap_or_default();
        Plan {
            protocol,
            len,
            parallel: p.parallel.clamp(1, 128) as usize,
            reverse: p.reverse,
            bidir: p.bidirectional,
            rate: p.bandwidth.max(0) as u64,
            total_rate: None,
            seq64: p.udp_counters_64bit,
            repeating: p.repeating_payload,
            zerocopy: p.zerocopy,
            skip_rx_copy: p.skip_rx_copy || plumb.skip_rx_copy,
            omit: p.omit.max(0) as f64,
            time: p.time.max(0) as f64,
            budget,
            at_budget: AtBudget::Stop,
            rwin: plumb.rwin,
            sndbuf_set: p.window.is_some_and(|w| w > 0) || plumb.sndbuf.is_some(),
            // As iperf3 3.21+: off unless the client asked (an older client
            // does not send the keys at all).
            gso: p.gso.is_some_and(|g| g > 0),
            gro: p.gro.is_some_and(|g| g > 0),
            udp_buffer: p
                .window
                .and_then(|w| u32::try_from(w).ok())
                .filter(|w| *w > 0)
                .unwrap_or(crate::sockets::UDP_DEFAULT_BUFFER),
            gso_asked: match (p.gso, p.gso_dg_size, p.gso_bf_size) {
                (Some(g), Some(dg), Some(bf)) if g > 0 && dg > 0 && bf >= dg => {
                    Some((bf / dg) as u64)
                }
                _ => None,
            },
            rr: plumb.rr,
            file: None,
        }
    }

    /// Data connections the client opens.
    pub fn total_streams(&self) -> usize {
        self.parallel * if self.bidir { 2 } else { 1 }
    }

    /// Whether a TCP receiver of this test should batch its wake-ups with
    /// `SO_RCVLOWAT` on a machine with `cpus` CPUs.
    ///
    /// The mark saves wake-ups of a reader that outruns its sender and has a
    /// CPU to itself — above all under bbr, whose paced sender would wake it
    /// for every small burst. Where the test's data threads outnumber the
    /// CPUs, every CPU has a runnable data thread anyway, and holding a
    /// reader back only lets its queue go cold in cache. Side by side on 2
    /// CPUs (loopback, 5–9 interleaved runs of 2 s, medians): one stream ran
    /// 44.7 Gb/s with the mark and 36.3 without under cubic, 29.1 and 20.7
    /// under bbr, and `-Z` under bbr 50.3 and 21.4; `-P 2` ran 78.0 with it
    /// and 80.9 without (bbr 32.7 and 35.0), `--bidir` 37.1 and 40.8, and
    /// once the data threads ran in the batch class, `-P 2` under bbr 38.0
    /// with it and 67.4 without.
    ///
    /// So the mark is on when the test's data threads — a sender and a
    /// receiver per stream, counted as if both ends shared this machine, as
    /// on loopback — fit the CPUs.
    pub fn recv_lowat(&self, cpus: usize) -> bool {
        lowat_fits(self.total_streams(), cpus)
    }

    /// Whether the client sends on the stream it opens `index`-th (bidir: its
    /// first N streams send, the next N receive).
    pub fn client_sends(&self, index: usize) -> bool {
        if self.bidir {
            index < self.parallel
        } else {
            !self.reverse
        }
    }
}

/// Whether the data threads of `streams` TCP streams, a sender and a
/// receiver each, fit `cpus` CPUs: then a receiver keeps `SO_RCVLOWAT`
/// (why: [`Plan::recv_lowat`]). For the clients whose streams run outside a
/// session (iperf 2's) too.
pub(crate) fn lowat_fits(streams: usize, cpus: usize) -> bool {
    2 * streams <= cpus
}
