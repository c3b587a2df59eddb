//! The emulated link, one direction, as a pure state machine.
//!
//! Owns: queueing, serialisation, propagation delay, random loss, jitter,
//! reordering and duplication of the packets handed to it — and nothing else.
//! There is no clock and no I/O in here: every call takes `now`, and the
//! caller asks [`Link::next_release`] when to come back (like smoltcp's
//! `poll_at`). The same [`LinkConfig`] (seed included) and the same calls
//! produce the same drops and release times, bit for bit.
//!
//! # The model
//!
//! A packet offered at `now` goes through, per wire-sized segment (a GSO
//! packet stands for `ceil(payload / gso_size)` segments, see
//! [`Layout`](crate::wire::Layout)):
//!
//! 1. the **size limit** [`LinkConfig::max_packet`] — a segment of more IP
//!    bytes is dropped without a word (no ICMP "fragmentation needed" goes
//!    back), as a path-MTU black hole does; it uses no link time;
//! 2. the **loss model** ([`LossModel`]) — a lost segment uses no link time;
//! 3. the **drop-tail queue** of [`LinkConfig::queue_bytes`] *wire* bytes. The
//!    backlog is the work still ahead of the serialiser, including the unsent
//!    part of the frame on the wire; a segment that would push it past the limit
//!    is dropped. Counting wire bytes makes "a queue of Q bytes" the same thing as
//!    "at most Q × 8 / rate of queueing delay";
//! 4. **serialisation** at [`LinkConfig::rate`]: a segment of `L` IP bytes
//!    holds the link for `(L + 38) × 8 / rate` (38 B of Ethernet framing, see
//!    [`ETHERNET_OVERHEAD`]). Time is tracked exactly, as a rational number of
//!    nanoseconds, so rounding never accumulates;
//! 5. **propagation delay** [`LinkConfig::delay`], plus optional jitter
//!    `U(0, jitter)` that never lets a packet overtake the one before it.
//!
//! A packet is released once its last surviving segment has arrived, the way a
//! GRO receiver would see it. If only some segments survived, the packet is
//! marked and the forwarder writes the survivors as separate packets
//! ([`Packet::for_each_frame`]); intact GSO packets pass through whole, which is
//! what makes the emulator fast.
//!
//! With probability [`Reorder::probability`] a packet instead skips ahead:
//! its delay is cut by [`Reorder::advance`] (never below its serialisation end)
//! and it may overtake others. With probability [`LinkConfig::duplicate`] a copy
//! is released right after the original (copies use no link time).

use std::collections::{BinaryHeap, VecDeque};
use std::fmt;
use std::num::NonZeroU64;
use std::ops::{Add, AddAssign};
use std::time::Duration;

use crate::packet::{Packet, Pool};
use crate::rng::{Chance, Rng};
pub use crate::wire::ETHERNET_OVERHEAD;

/// A point in emulated time: nanoseconds since an epoch the caller picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(u64);

impl Time {
    /// The epoch.
    pub const ZERO: Time = Time(0);

    /// `ns` nanoseconds after the epoch.
    pub const fn from_nanos(ns: u64) -> Time {
        Time(ns)
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Time from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Time) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Time {
    type Output = Time;
    fn add(self, d: Duration) -> Time {
        Time(self.0.saturating_add(duration_ns(d)))
    }
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A link rate in bits per second (never zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(NonZeroU64);

impl Rate {
    /// `bps` bits per second; `None` for zero.
    pub const fn from_bps(bps: u64) -> Option<Rate> {
        match NonZeroU64::new(bps) {
            Some(r) => Some(Rate(r)),
            None => None,
        }
    }

    /// `mbps` × 10^6 bit/s; `None` if that rounds to zero or is not finite.
    pub fn from_mbps(mbps: f64) -> Option<Rate> {
        Self::from_f64(mbps * 1e6)
    }

    /// `gbps` × 10^9 bit/s; `None` if not positive and finite.
    pub fn from_gbps(gbps: f64) -> Option<Rate> {
        Self::from_f64(gbps * 1e9)
    }

    fn from_f64(bps: f64) -> Option<Rate> {
        if (1.0..1.8e19).contains(&bps) {
            Rate::from_bps(bps.round() as u64)
        } else {
            None
        }
    }

    /// Bits per second.
    pub const fn bps(self) -> u64 {
        self.0.get()
    }

    /// Time `bytes` of wire bytes take to serialise, rounded up to the ns.
    pub fn wire_time(self, bytes: u64) -> Duration {
        let ns = (u128::from(bytes) * 8 * 1_000_000_000).div_ceil(u128::from(self.bps()));
        Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// Bytes the link carries in `d` (rounded down).
    pub fn bytes_in(self, d: Duration) -> u64 {
        let b = u128::from(self.bps()) * d.as_nanos() / 8 / 1_000_000_000;
        u64::try_from(b).unwrap_or(u64::MAX)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.bps() as f64;
        if b >= 1e9 {
            write!(f, "{} Gbit/s", b / 1e9)
        } else if b >= 1e6 {
            write!(f, "{} Mbit/s", b / 1e6)
        } else if b >= 1e3 {
            write!(f, "{} kbit/s", b / 1e3)
        } else {
            write!(f, "{} bit/s", b)
        }
    }
}

/// Bandwidth-delay product in bytes: `rate × rtt / 8`.
pub fn bdp_bytes(rate: Rate, rtt: Duration) -> u64 {
    rate.bytes_in(rtt)
}

/// A queue size as users like to say it; see [`QueueLimit::to_bytes`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QueueLimit {
    /// So many wire bytes.
    Bytes(u64),
    /// As many bytes as the link serialises in this time (the worst-case
    /// queueing delay).
    Delay(Duration),
    /// This multiple of the bandwidth-delay product.
    Bdp(f64),
}

impl Default for QueueLimit {
    /// One BDP, the classic rule of thumb for a single TCP flow.
    fn default() -> Self {
        QueueLimit::Bdp(1.0)
    }
}

impl QueueLimit {
    /// The limit in wire bytes for a link of `rate` in a path of round trip `rtt`.
    pub fn to_bytes(self, rate: Rate, rtt: Duration) -> u64 {
        match self {
            QueueLimit::Bytes(b) => b,
            QueueLimit::Delay(d) => rate.bytes_in(d),
            QueueLimit::Bdp(m) if m.is_finite() && m > 0.0 => {
                (bdp_bytes(rate, rtt) as f64 * m).round() as u64
            }
            QueueLimit::Bdp(_) => 0,
        }
    }
}

/// Which segments the link loses at random.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum LossModel {
    /// No random loss.
    #[default]
    None,
    /// Each segment is lost independently with this probability.
    Bernoulli(f64),
    /// Bursty loss, see [`GilbertElliott`].
    GilbertElliott(GilbertElliott),
}

/// The Gilbert–Elliott two-state loss model.
///
/// A Markov chain steps once per segment between a *good* and a *bad* state:
/// good → bad with probability `p`, bad → good with probability `r`. After
/// stepping, the segment is lost with probability `1 − k` in the good state
/// and `1 − h` in the bad state (`h` and `k` are the classic "success"
/// probabilities; Gilbert's original model is `k = 1, h = 0`).
///
/// The chain spends `π_bad = p / (p + r)` of the time in the bad state, so the
/// mean loss rate is `π_good (1 − k) + π_bad (1 − h)`, and bad periods last
/// `1 / r` segments on average. [`GilbertElliott::from_loss_and_burst`] builds
/// the simple model from the two numbers users think in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GilbertElliott {
    /// Probability of going good → bad at a segment.
    pub p: f64,
    /// Probability of going bad → good at a segment.
    pub r: f64,
    /// Probability a segment survives in the bad state.
    pub h: f64,
    /// Probability a segment survives in the good state.
    pub k: f64,
}

impl GilbertElliott {
    /// Gilbert's model (`k = 1`, `h = 0`: lose exactly the segments sent in the
    /// bad state) with mean loss rate `loss` and mean burst length
    /// `mean_burst` segments: `r = 1 / mean_burst`, `p = loss · r / (1 − loss)`.
    pub fn from_loss_and_burst(loss: f64, mean_burst: f64) -> Result<Self, ConfigError> {
        if !(0.0..1.0).contains(&loss) {
            return Err(ConfigError::LossRate(loss));
        }
        if !(mean_burst >= 1.0 && mean_burst.is_finite()) {
            return Err(ConfigError::BurstLength(mean_burst));
        }
        let r = 1.0 / mean_burst;
        let p = loss * r / (1.0 - loss);
        if p > 1.0 {
            // e.g. 90 % loss in bursts of 1: the good state cannot be left fast enough.
            return Err(ConfigError::Unreachable { loss, mean_burst });
        }
        Ok(GilbertElliott {
            p,
            r,
            h: 0.0,
            k: 1.0,
        })
    }

    /// Long-run fraction of segments lost.
    pub fn mean_loss(&self) -> f64 {
        if self.p + self.r == 0.0 {
            return 1.0 - self.k;
        }
        let bad = self.p / (self.p + self.r);
        (1.0 - bad) * (1.0 - self.k) + bad * (1.0 - self.h)
    }
}

/// Reordering: some packets take a shortcut.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reorder {
    /// Probability that a packet skips ahead.
    pub probability: f64,
    /// How much less delay such a packet gets.
    pub advance: Duration,
}

/// Everything about one direction of an emulated link.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkConfig {
    /// Serialisation rate (Ethernet framing included, see [`ETHERNET_OVERHEAD`]).
    pub rate: Rate,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Drop-tail queue limit in wire bytes (see [`QueueLimit`] for conversions).
    pub queue_bytes: u64,
    /// Random loss, per wire-sized segment.
    pub loss: LossModel,
    /// Each packet's delay grows by `U(0, jitter)`, without reordering. Zero = off.
    pub jitter: Duration,
    /// Optional reordering.
    pub reorder: Option<Reorder>,
    /// Probability that a packet is duplicated.
    pub duplicate: f64,
    /// RNG seed; the same seed and inputs give the same run.
    pub seed: u64,
    /// Silently drop every wire-sized segment of more IP bytes than this (a
    /// GSO packet is judged per segment: `gso_size` + headers), sending no
    /// ICMP back: a path-MTU black hole. `None` = off.
    pub max_packet: Option<u32>,
}

impl LinkConfig {
    /// A plain link: `rate`, one-way `delay`, a queue of one BDP for a round
    /// trip of `2 × delay`, nothing random.
    pub fn new(rate: Rate, delay: Duration) -> LinkConfig {
        LinkConfig {
            rate,
            delay,
            queue_bytes: QueueLimit::default().to_bytes(rate, delay * 2),
            loss: LossModel::None,
            jitter: Duration::ZERO,
            reorder: None,
            duplicate: 0.0,
            seed: 1,
            max_packet: None,
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let prob = |name: &'static str, value: f64| {
            if (0.0..=1.0).contains(&value) {
                Ok(())
            } else {
                Err(ConfigError::Probability { name, value })
            }
        };
        match self.loss {
            LossModel::None => {}
            LossModel::Bernoulli(p) => prob("loss", p)?,
            LossModel::GilbertElliott(g) => {
                prob("gilbert-elliott p", g.p)?;
                prob("gilbert-elliott r", g.r)?;
                prob("gilbert-elliott h", g.h)?;
                prob("gilbert-elliott k", g.k)?;
            }
        }
        if let Some(r) = self.reorder {
            prob("reorder", r.probability)?;
        }
        prob("duplicate", self.duplicate)?;
        if self.queue_bytes == 0 {
            return Err(ConfigError::ZeroQueue);
        }
        if let Some(m) = self.max_packet {
            if m < MIN_IP_PACKET {
                return Err(ConfigError::MaxPacket(m));
            }
        }
        Ok(())
    }
}

/// The smallest IP packet every host must be able to pass (RFC 791's 68 B):
/// a size limit below it would block any IPv4 path.
pub const MIN_IP_PACKET: u32 = 68;

/// A [`LinkConfig`] that makes no sense.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A probability outside `[0, 1]`.
    #[error("{name} probability {value} is not between 0 and 1")]
    Probability {
        /// Which parameter.
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// A loss rate outside `[0, 1)`.
    #[error("loss rate {0} is not in [0, 1)")]
    LossRate(f64),
    /// A mean burst length below one segment.
    #[error("mean loss burst length {0} is not at least 1")]
    BurstLength(f64),
    /// Loss rate and burst length that no Gilbert chain produces.
    #[error("a loss rate of {loss} with mean bursts of {mean_burst} needs p > 1")]
    Unreachable {
        /// Requested loss rate.
        loss: f64,
        /// Requested mean burst length.
        mean_burst: f64,
    },
    /// A queue that holds nothing.
    #[error("queue limit is 0 bytes; nothing could ever pass")]
    ZeroQueue,
    /// A packet-size limit below what IPv4 requires every link to carry.
    #[error("largest packet {0} B is below the 68 B every IPv4 link must carry")]
    MaxPacket(u32),
}

/// What the link did with an offered packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Every segment was queued.
    Queued,
    /// Some segments of a GSO packet were dropped, the rest queued.
    Partial {
        /// Segments lost to the loss model.
        lost: u32,
        /// Segments dropped because the queue was full.
        overflowed: u32,
        /// Segments dropped for being over [`LinkConfig::max_packet`].
        too_big: u32,
    },
    /// Every segment was dropped and at least one because the queue was full.
    DroppedQueueFull,
    /// Every segment was dropped, at least one lost to the loss model and
    /// none because the queue was full.
    DroppedLoss,
    /// Every segment was over [`LinkConfig::max_packet`].
    DroppedTooBig,
}

/// Segments and IP bytes (headers counted once per segment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counter {
    /// Wire-sized segments.
    pub segments: u64,
    /// IP bytes of those segments.
    pub bytes: u64,
}

impl Counter {
    fn add(&mut self, segments: u64, bytes: u64) {
        self.segments += segments;
        self.bytes += bytes;
    }
}

impl AddAssign for Counter {
    fn add_assign(&mut self, o: Counter) {
        self.add(o.segments, o.bytes);
    }
}

/// What one direction of the link has done so far.
///
/// Conservation: `offered = delivered + dropped_queue + dropped_loss +
/// dropped_too_big + (in flight) − duplicated`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkStats {
    /// Packets offered (a GSO packet counts once).
    pub packets_offered: u64,
    /// Packets released (an intact GSO packet counts once; a cut-up one once).
    pub packets_released: u64,
    /// Segments and bytes offered.
    pub offered: Counter,
    /// Segments and bytes released (duplicates included).
    pub delivered: Counter,
    /// Dropped because the queue was full.
    pub dropped_queue: Counter,
    /// Dropped by the loss model.
    pub dropped_loss: Counter,
    /// Dropped for being over [`LinkConfig::max_packet`] (no ICMP sent).
    pub dropped_too_big: Counter,
    /// Extra copies made by duplication.
    pub duplicated: Counter,
    /// Packets that skipped ahead.
    pub reordered: u64,
    /// GSO packets that lost some but not all segments, so had to be cut up.
    pub gso_split: u64,
    /// Largest backlog seen, in wire bytes.
    pub max_queue_bytes: u64,
}

impl AddAssign for LinkStats {
    fn add_assign(&mut self, o: LinkStats) {
        self.packets_offered += o.packets_offered;
        self.packets_released += o.packets_released;
        self.offered += o.offered;
        self.delivered += o.delivered;
        self.dropped_queue += o.dropped_queue;
        self.dropped_loss += o.dropped_loss;
        self.dropped_too_big += o.dropped_too_big;
        self.duplicated += o.duplicated;
        self.reordered += o.reordered;
        self.gso_split += o.gso_split;
        self.max_queue_bytes = self.max_queue_bytes.max(o.max_queue_bytes);
    }
}

#[derive(Debug, Clone)]
enum LossState {
    None,
    Bernoulli(Chance),
    Gilbert {
        to_bad: Chance,
        to_good: Chance,
        lose_good: Chance,
        lose_bad: Chance,
        bad: bool,
    },
}

impl LossState {
    fn new(m: LossModel) -> LossState {
        match m {
            LossModel::None => LossState::None,
            LossModel::Bernoulli(p) if p <= 0.0 => LossState::None,
            LossModel::Bernoulli(p) => LossState::Bernoulli(Chance::new(p)),
            LossModel::GilbertElliott(g) => LossState::Gilbert {
                to_bad: Chance::new(g.p),
                to_good: Chance::new(g.r),
                lose_good: Chance::new(1.0 - g.k),
                lose_bad: Chance::new(1.0 - g.h),
                bad: false,
            },
        }
    }

    #[inline]
    fn lose(&mut self, rng: &mut Rng) -> bool {
        match self {
            LossState::None => false,
            LossState::Bernoulli(c) => rng.chance(*c),
            LossState::Gilbert {
                to_bad,
                to_good,
                lose_good,
                lose_bad,
                bad,
            } => {
                *bad = if *bad {
                    !rng.chance(*to_good)
                } else {
                    rng.chance(*to_bad)
                };
                rng.chance(if *bad { *lose_bad } else { *lose_good })
            }
        }
    }
}

#[derive(Debug)]
struct Entry {
    due: Time,
    segments: u32,
    bytes: u64,
    pkt: Packet,
}

/// A reordered entry in the min-heap: ordered by due time, then arrival.
#[derive(Debug)]
struct Ahead {
    seq: u64,
    entry: Entry,
}

impl PartialEq for Ahead {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o).is_eq()
    }
}
impl Eq for Ahead {}
impl PartialOrd for Ahead {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ahead {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the earliest first.
        (o.entry.due, o.seq).cmp(&(self.entry.due, self.seq))
    }
}

const NS_PER_S: u128 = 1_000_000_000;

/// One direction of an emulated link. See the [module docs](self) for the model.
///
/// Call order: [`enqueue`](Link::enqueue) packets as they arrive, ask
/// [`next_release`](Link::next_release) when the next one is due, and call
/// [`release_due`](Link::release_due) at (or after) that time. `now` must never
/// go backwards between calls. Buffers come from [`alloc`](Link::alloc) and go
/// back through [`recycle`](Link::recycle).
#[derive(Debug)]
pub struct Link {
    rate_bps: u64,
    delay_ns: u64,
    /// Queue limit in wire bits × 10^9, the unit backlog is computed in.
    queue_limit: u128,
    loss: LossState,
    jitter_ns: u64,
    reorder: Chance,
    reorder_advance_ns: u64,
    duplicate: Chance,
    max_packet: Option<u32>,
    rng: Rng,
    /// The serialiser is busy until `busy_ns + busy_frac / rate_bps` ns.
    busy_ns: u64,
    busy_frac: u64,
    last_in_order: Time,
    fifo: VecDeque<Entry>,
    ahead: BinaryHeap<Ahead>,
    seq: u64,
    pool: Pool,
    stats: LinkStats,
}

impl Link {
    /// A link in its initial state: empty, idle, RNG freshly seeded.
    pub fn new(cfg: LinkConfig) -> Result<Link, ConfigError> {
        cfg.validate()?;
        let (reorder, reorder_advance_ns) = match cfg.reorder {
            Some(r) => (Chance::new(r.probability), duration_ns(r.advance)),
            None => (Chance::NEVER, 0),
        };
        Ok(Link {
            rate_bps: cfg.rate.bps(),
            delay_ns: duration_ns(cfg.delay),
            queue_limit: u128::from(cfg.queue_bytes) * 8 * NS_PER_S,
            loss: LossState::new(cfg.loss),
            jitter_ns: duration_ns(cfg.jitter),
            reorder,
            reorder_advance_ns,
            duplicate: Chance::new(cfg.duplicate),
            max_packet: cfg.max_packet,
            rng: Rng::new(cfg.seed),
            busy_ns: 0,
            busy_frac: 0,
            last_in_order: Time::ZERO,
            fifo: VecDeque::new(),
            ahead: BinaryHeap::new(),
            seq: 0,
            pool: Pool::default(),
            stats: LinkStats::default(),
        })
    }

    /// An empty buffer for the next read.
    pub fn alloc(&mut self) -> Packet {
        self.pool.take()
    }

    /// Gives a released (or unused) packet's buffer back.
    pub fn recycle(&mut self, pkt: Packet) {
        self.pool.give(pkt);
    }

    /// Buffers allocated so far; flat once the link has warmed up.
    pub fn allocations(&self) -> u64 {
        self.pool.allocations()
    }

    /// Counters so far.
    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Packets waiting to be released (in the queue or in flight).
    pub fn in_flight(&self) -> usize {
        self.fifo.len() + self.ahead.len()
    }

    /// Wire bytes still ahead of the serialiser at `now`.
    pub fn backlog_bytes(&self, now: Time) -> u64 {
        (self.backlog_e9(now) / (8 * NS_PER_S)) as u64
    }

    /// Backlog in wire bits × 10^9.
    fn backlog_e9(&self, now: Time) -> u128 {
        if self.busy_ns < now.0 {
            return 0;
        }
        u128::from(self.busy_ns - now.0) * u128::from(self.rate_bps) + u128::from(self.busy_frac)
    }

    /// Offers a packet that arrived at `now`. The link takes the buffer either
    /// way; dropped packets go straight back to the pool.
    pub fn enqueue(&mut self, now: Time, mut pkt: Packet) -> Verdict {
        let layout = pkt.layout();
        self.stats.packets_offered += 1;
        self.stats
            .offered
            .add(u64::from(layout.segments), layout.total_ip_len());
        if self.busy_ns < now.0 {
            self.busy_ns = now.0;
            self.busy_frac = 0;
        }
        let rate = u128::from(self.rate_bps);
        let (mut lost, mut overflowed, mut too_big) = (0u32, 0u32, 0u32);
        let (mut kept, mut kept_bytes) = (0u32, 0u64);
        for i in 0..layout.segments {
            let ip_len = u64::from(layout.segment_ip_len(i));
            // Before the loss model, so that a black hole leaves the random
            // loss of the segments that fit as it would be without it.
            if self.max_packet.is_some_and(|m| ip_len > u64::from(m)) {
                too_big += 1;
                self.stats.dropped_too_big.add(1, ip_len);
                pkt.mark_dropped(i);
                continue;
            }
            if self.loss.lose(&mut self.rng) {
                lost += 1;
                self.stats.dropped_loss.add(1, ip_len);
                pkt.mark_dropped(i);
                continue;
            }
            let wire = u128::from(layout.segment_wire_len(i)) * 8 * NS_PER_S;
            let backlog = self.backlog_e9(now) + wire;
            if backlog > self.queue_limit {
                overflowed += 1;
                self.stats.dropped_queue.add(1, ip_len);
                pkt.mark_dropped(i);
                continue;
            }
            self.stats.max_queue_bytes = self
                .stats
                .max_queue_bytes
                .max((backlog / (8 * NS_PER_S)) as u64);
            let t = wire + u128::from(self.busy_frac);
            self.busy_ns += (t / rate) as u64;
            self.busy_frac = (t % rate) as u64;
            kept += 1;
            kept_bytes += ip_len;
        }
        if kept == 0 {
            self.pool.give(pkt);
            return if overflowed > 0 {
                Verdict::DroppedQueueFull
            } else if lost > 0 {
                Verdict::DroppedLoss
            } else {
                Verdict::DroppedTooBig
            };
        }
        if kept < layout.segments {
            // Layout::of only reports more than one segment for splittable
            // packets, so the forwarder can always cut this one up.
            self.stats.gso_split += 1;
        }
        // The last bit is on the wire at the end of the last serialised segment.
        let finished = self.busy_ns + u64::from(self.busy_frac > 0);
        let mut due = finished + self.delay_ns;
        if self.jitter_ns > 0 {
            due += self.rng.up_to(self.jitter_ns);
        }
        let skip = !self.reorder.is_never() && self.rng.chance(self.reorder);
        let dup = !self.duplicate.is_never() && self.rng.chance(self.duplicate);
        let pkt = self.pool.compact(pkt);
        let copy = dup.then(|| self.pool.duplicate(&pkt));
        let mut due = Time(due);
        if skip {
            due = Time(due.0.saturating_sub(self.reorder_advance_ns).max(finished));
            self.stats.reordered += 1;
        } else {
            due = due.max(self.last_in_order);
            self.last_in_order = due;
        }
        let entries = std::iter::once(pkt).chain(copy);
        for (n, pkt) in entries.enumerate() {
            if n > 0 {
                self.stats.duplicated.add(u64::from(kept), kept_bytes);
            }
            let entry = Entry {
                due,
                segments: kept,
                bytes: kept_bytes,
                pkt,
            };
            if skip {
                self.seq += 1;
                self.ahead.push(Ahead {
                    seq: self.seq,
                    entry,
                });
            } else {
                self.fifo.push_back(entry);
            }
        }
        if kept < layout.segments {
            Verdict::Partial {
                lost,
                overflowed,
                too_big,
            }
        } else {
            Verdict::Queued
        }
    }

    /// When the next packet is due, if any is waiting.
    pub fn next_release(&self) -> Option<Time> {
        let a = self.fifo.front().map(|e| e.due);
        let b = self.ahead.peek().map(|e| e.entry.due);
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Hands every packet due at or before `now` to `out`, in due order, with
    /// its due time. Return the buffers with [`recycle`](Link::recycle).
    pub fn release_due(&mut self, now: Time, mut out: impl FnMut(Time, Packet)) {
        loop {
            let fifo_due = self.fifo.front().map(|e| e.due).filter(|&d| d <= now);
            let ahead_due = self.ahead.peek().map(|e| e.entry.due).filter(|&d| d <= now);
            let entry = match (fifo_due, ahead_due) {
                (None, None) => return,
                (Some(f), Some(a)) if a < f => self.ahead.pop().map(|a| a.entry),
                (Some(_), _) => self.fifo.pop_front(),
                (None, Some(_)) => self.ahead.pop().map(|a| a.entry),
            };
            let Some(e) = entry else { return };
            self.stats.packets_released += 1;
            self.stats.delivered.add(u64::from(e.segments), e.bytes);
            out(e.due, e.pkt);
        }
    }
}

#[cfg(test)]
mod tests;
