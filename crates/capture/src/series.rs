//! The time-sequence series of one direction of data, as Wireshark's
//! tcptrace graph draws it: the data sent (time, relative sequence range,
//! retransmitted or not), the receiver's ACK line and the right edge of its
//! advertised window, RTT samples and the advertised window over time.
//! Throughput per time bin is the data points' bytes over their bins.
//!
//! Memory is set by the number of connections, not by the capture's
//! length: each kind of point is held in a [`Binned`] of a fixed budget of
//! bins. When a budget is full its bin width doubles and neighbouring bins
//! merge, keeping the lowest start and highest end of the sequence ranges
//! (so the graph's shape and its first and last sequence numbers survive)
//! and the retransmitted ranges apart from new data (so retransmissions
//! stay visible however far the series is thinned). Series are made only
//! when asked for ([`crate::analyze_file_with_series`]): `plumb why` pays
//! nothing for them.

use serde::Serialize;

/// The first bin width: one microsecond, the resolution of most captures.
const FIRST_WIDTH_NS: u64 = 1_000;
/// The smallest budget accepted (a smaller one is raised to it).
pub const MIN_BUDGET: usize = 16;

/// A point that can absorb a later one of the same bin.
pub trait Merge {
    /// Folds `other` (later in time) into `self`.
    fn merge(&mut self, other: &Self);
}

/// Points in time bins of a common width, at most `budget` of them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Binned<P> {
    /// The first point's time, ns since the epoch: bin `k` starts at
    /// `origin_ns + k * width_ns`.
    pub origin_ns: u64,
    /// The bins' width, ns: 1 µs, doubled at each thinning.
    pub width_ns: u64,
    /// The bins, by index, ascending.
    pub bins: Vec<(u64, P)>,
    #[serde(skip)]
    budget: usize,
}

impl<P: Merge> Binned<P> {
    /// An empty series of at most `budget` bins.
    pub fn new(budget: usize) -> Binned<P> {
        Binned {
            origin_ns: 0,
            width_ns: FIRST_WIDTH_NS,
            bins: Vec::new(),
            budget: budget.max(MIN_BUDGET),
        }
    }

    /// The most bins this series holds.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Adds a point taken at `ts`. A point earlier than the last bin (a
    /// capture's timestamps can step back) joins the last bin.
    pub fn add(&mut self, ts: u64, p: P) {
        if self.bins.is_empty() {
            self.origin_ns = ts;
        }
        loop {
            let k = ts.saturating_sub(self.origin_ns) / self.width_ns;
            if let Some((last, lp)) = self.bins.last_mut() {
                if k <= *last {
                    return lp.merge(&p);
                }
            }
            if self.bins.len() < self.budget {
                return self.bins.push((k, p));
            }
            self.thin();
        }
    }

    /// Doubles the bin width and merges bins that fall together, until at
    /// most three quarters of the budget is used (so that thinning is rare:
    /// its cost is amortised over a quarter of the budget's points at least).
    fn thin(&mut self) {
        let room = self.budget - self.budget / 4;
        while self.bins.len() > room {
            self.width_ns = self.width_ns.saturating_mul(2);
            let mut out: Vec<(u64, P)> = Vec::with_capacity(self.bins.len());
            for (k, p) in self.bins.drain(..) {
                let k = k / 2;
                match out.last_mut() {
                    Some((last, lp)) if *last == k => lp.merge(&p),
                    _ => out.push((k, p)),
                }
            }
            self.bins = out;
        }
    }
}

/// A sequence range, relative to the sender's first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SeqRange {
    /// The lowest sequence number.
    pub start: i64,
    /// One past the highest.
    pub end: i64,
}

impl SeqRange {
    fn union(a: Option<SeqRange>, b: Option<SeqRange>) -> Option<SeqRange> {
        match (a, b) {
            (Some(a), Some(b)) => Some(SeqRange {
                start: a.start.min(b.start),
                end: a.end.max(b.end),
            }),
            (a, b) => a.or(b),
        }
    }
}

/// Data sent in one bin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DataPoint {
    /// The earliest segment's time, ns since the epoch.
    pub ts: u64,
    /// New data's sequence range.
    pub sent: Option<SeqRange>,
    /// Retransmitted data's sequence range.
    pub resent: Option<SeqRange>,
    /// Payload bytes, retransmissions included.
    pub bytes: u64,
}

impl Merge for DataPoint {
    fn merge(&mut self, o: &Self) {
        self.ts = self.ts.min(o.ts);
        self.sent = SeqRange::union(self.sent, o.sent);
        self.resent = SeqRange::union(self.resent, o.resent);
        self.bytes += o.bytes;
    }
}

/// The receiver's ACKs in one bin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AckPoint {
    /// The earliest ACK's time, ns since the epoch.
    pub ts: u64,
    /// The highest relative ACK number.
    pub ack: i64,
    /// The advertised window's right edge (ACK + scaled window), highest;
    /// absent while the window scale is unknown.
    pub edge: Option<i64>,
    /// The smallest advertised window, bytes (scaled); absent while the
    /// scale is unknown.
    pub window: Option<u64>,
}

impl Merge for AckPoint {
    fn merge(&mut self, o: &Self) {
        self.ts = self.ts.min(o.ts);
        self.ack = self.ack.max(o.ack);
        self.edge = self.edge.max(o.edge);
        self.window = match (self.window, o.window) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
}

/// RTT samples in one bin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RttPoint {
    /// The earliest sample's time (its ACK's), ns since the epoch.
    pub ts: u64,
    /// The smallest sample, ns.
    pub min_ns: u64,
    /// The largest sample, ns.
    pub max_ns: u64,
    /// Their sum, ns (with `count`, the mean).
    pub sum_ns: u64,
    /// Samples.
    pub count: u64,
}

impl Merge for RttPoint {
    fn merge(&mut self, o: &Self) {
        self.ts = self.ts.min(o.ts);
        self.min_ns = self.min_ns.min(o.min_ns);
        self.max_ns = self.max_ns.max(o.max_ns);
        self.sum_ns = self.sum_ns.saturating_add(o.sum_ns);
        self.count += o.count;
    }
}

/// Sequence numbers made relative to a base and unwrapped past 2³² (a
/// transfer of more than 4 GiB), against the highest one seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Unwrap {
    /// The raw and relative values of the highest number seen.
    high: Option<(u32, i64)>,
}

impl Unwrap {
    fn rel(&mut self, base: u32, seq: u32) -> i64 {
        let (raw, rel) = self.high.unwrap_or((base, 0));
        let r = rel + i64::from(seq.wrapping_sub(raw) as i32);
        if r > rel || self.high.is_none() {
            self.high = Some((seq, r));
        }
        r
    }
}

/// One direction's series: its data, and the ACKs, window and RTT the
/// other side returned for it. Sequence numbers are relative to the
/// sender's first data byte (its ISN + 1 when the SYN was captured).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// Data sent.
    pub data: Binned<DataPoint>,
    /// The receiver's ACK line and window.
    pub acks: Binned<AckPoint>,
    /// Round-trip times from the capture point: a data segment to the first
    /// ACK covering it, one segment in flight at a time, retransmitted data
    /// never timed (Karn's rule).
    pub rtt: Binned<RttPoint>,
    /// The raw sequence number relative 0 stands for.
    #[serde(skip)]
    base: Option<u32>,
    #[serde(skip)]
    seq: Unwrap,
    #[serde(skip)]
    ack: Unwrap,
    /// The segment being timed: its relative end and send time.
    #[serde(skip)]
    timing: Option<(i64, u64)>,
}

impl Series {
    /// An empty series of at most `budget` points of each kind.
    pub fn new(budget: usize) -> Series {
        Series {
            data: Binned::new(budget),
            acks: Binned::new(budget),
            rtt: Binned::new(budget),
            base: None,
            seq: Unwrap::default(),
            ack: Unwrap::default(),
            timing: None,
        }
    }

    /// The sender's SYN: its first data byte is relative 0.
    pub(crate) fn syn(&mut self, isn: u32) {
        self.base.get_or_insert(isn.wrapping_add(1));
    }

    /// A data segment of `len` bytes from `seq`, sent at `ts`.
    pub(crate) fn sent(&mut self, ts: u64, seq: u32, len: u32, resent: bool) {
        let base = *self.base.get_or_insert(seq);
        let start = self.seq.rel(base, seq);
        let range = Some(SeqRange {
            start,
            end: start + i64::from(len),
        });
        if resent {
            self.timing = None;
        } else if self.timing.is_none() {
            self.timing = Some((start + i64::from(len), ts));
        }
        let (sent, resent) = if resent { (None, range) } else { (range, None) };
        self.data.add(
            ts,
            DataPoint {
                ts,
                sent,
                resent,
                bytes: u64::from(len),
            },
        );
    }

    /// An ACK of this direction's data, with the receiver's window in bytes
    /// when its scale is known.
    pub(crate) fn acked(&mut self, ts: u64, ack_no: u32, window: Option<u64>) {
        let base = *self.base.get_or_insert(ack_no);
        let ack = self.ack.rel(base, ack_no);
        if let Some((end, sent_ts)) = self.timing {
            if ack >= end {
                self.timing = None;
                let d = ts.saturating_sub(sent_ts);
                self.rtt.add(
                    ts,
                    RttPoint {
                        ts,
                        min_ns: d,
                        max_ns: d,
                        sum_ns: d,
                        count: 1,
                    },
                );
            }
        }
        let edge = window.map(|w| ack.saturating_add(i64::try_from(w).unwrap_or(i64::MAX)));
        self.acks.add(
            ts,
            AckPoint {
                ts,
                ack,
                edge,
                window,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1460;

    /// A steady sender: `n` segments 10 µs apart, each ACKed 1 ms later,
    /// every 1000th resent once 500 µs after it was first sent.
    fn steady(n: u32, budget: usize) -> Series {
        let mut s = Series::new(budget);
        let isn = 4_000_000_000u32;
        s.syn(isn);
        let t0 = 1_000_000_000_000u64;
        for i in 0..n {
            let ts = t0 + u64::from(i) * 10_000;
            let seq = isn.wrapping_add(1).wrapping_add(i.wrapping_mul(MSS));
            s.sent(ts, seq, MSS, false);
            if i % 1000 == 999 {
                s.sent(ts + 500_000, seq, MSS, true);
            }
            s.acked(ts + 1_000_000, seq.wrapping_add(MSS), Some(1 << 20));
        }
        s
    }

    #[test]
    fn a_million_segments_stay_within_the_budget_with_exact_ends() {
        let n = 1_000_000u32;
        let s = steady(n, 1000);
        // The scenario: every segment was added, and the sequence wrapped
        // past 2³² (the ISN is 4 000 000 000).
        let bytes: u64 = s.data.bins.iter().map(|(_, p)| p.bytes).sum();
        assert_eq!(bytes, u64::from(n + n / 1000) * u64::from(MSS));
        for b in [&s.data.bins.len(), &s.acks.bins.len(), &s.rtt.bins.len()] {
            assert!((499..=1000).contains(b), "{b} bins");
        }
        let first = s.data.bins[0].1.sent.expect("new data");
        let last = s.data.bins.last().expect("bins").1.sent.expect("new data");
        assert_eq!(first.start, 0);
        assert_eq!(last.end, i64::from(n) * i64::from(MSS));
        let ack_last = s.acks.bins.last().expect("acks").1;
        assert_eq!(ack_last.ack, i64::from(n) * i64::from(MSS));
        assert_eq!(ack_last.edge, Some(ack_last.ack + (1 << 20)));
        // RTT: each new segment is timed when none is in flight; Karn's
        // rule drops the one a retransmission overlaps.
        let rtt = s.rtt.bins.iter().map(|(_, p)| p);
        assert!(rtt
            .clone()
            .all(|p| p.min_ns == 1_000_000 && p.max_ns == 1_000_000));
        assert!(rtt.map(|p| p.count).sum::<u64>() > u64::from(n) / 200);
    }

    #[test]
    fn retransmissions_stay_visible_after_thinning() {
        let s = steady(1_000_000, 200);
        let resent: Vec<SeqRange> = s.data.bins.iter().filter_map(|(_, p)| p.resent).collect();
        // The scenario thinned: 10 s in at most 200 bins, far wider than
        // the 10 ms between retransmissions.
        assert!(s.data.width_ns > 10_000_000, "{}", s.data.width_ns);
        assert!(
            resent.len() >= 100,
            "{} bins with retransmissions",
            resent.len()
        );
        assert_eq!(resent[0].start, 999 * i64::from(MSS));
    }

    #[test]
    fn ten_times_longer_keeps_the_same_number_of_points() {
        let short = steady(100_000, 500);
        let long = steady(1_000_000, 500);
        assert!(long.data.width_ns > short.data.width_ns);
        for (a, b) in [
            (short.data.bins.len(), long.data.bins.len()),
            (short.acks.bins.len(), long.acks.bins.len()),
        ] {
            assert!(a <= 500 && (249..=500).contains(&b), "{a} {b}");
        }
    }

    #[test]
    fn a_full_series_is_small() {
        // What docs/report.md states: one direction's series at a budget
        // of 1000 points of each kind takes under 200 kB.
        let per_index = std::mem::size_of::<(u64, DataPoint)>()
            + std::mem::size_of::<(u64, AckPoint)>()
            + std::mem::size_of::<(u64, RttPoint)>();
        eprintln!("a series takes {per_index} B per point index");
        assert!(per_index * 1000 < 200_000, "{per_index}");
    }

    #[test]
    fn a_short_flow_is_kept_point_for_point() {
        let s = steady(50, 1000);
        assert_eq!(s.data.width_ns, FIRST_WIDTH_NS);
        assert_eq!(s.data.bins.len(), 50);
        assert_eq!(s.data.bins[1].1.sent.map(|r| r.start), Some(1460));
    }

    #[test]
    fn acks_before_any_data_set_the_base() {
        let mut s = Series::new(100);
        s.acked(10, 5000, None);
        s.sent(20, 5000, 100, false);
        s.acked(30, 5100, Some(0));
        assert_eq!(s.data.bins[0].1.sent, Some(SeqRange { start: 0, end: 100 }));
        let last = s.acks.bins.last().expect("acks").1;
        assert_eq!(
            (last.ack, last.edge, last.window),
            (100, Some(100), Some(0))
        );
        assert_eq!(s.rtt.bins[0].1.min_ns, 10);
    }
}
