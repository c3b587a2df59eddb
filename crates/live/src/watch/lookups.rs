//! What a watched connection's row looks up beyond its socket: the owning
//! process, the link rate to its peer, the owner's CPU over the interval
//! (marked only for processes that owned a busy connection) and the host's
//! listeners. Each is read once per interval or per peer, not per row.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Instant;

use plumb_diagnose::evidence::LinkRate;
use plumb_model::Rate;

use crate::cpu_mark::CpuMark;
use crate::evidence::ProcCpu;
use crate::link;
use crate::owners::Owners;

/// What rows look up beyond the socket: owners, link rates by peer, and
/// the CPU counters of the processes that own busy connections.
pub struct Lookups {
    /// Socket owners, scanned as seldom as the watch can afford.
    pub owners: Owners,
    /// One link-rate lookup per peer.
    links: HashMap<std::net::IpAddr, Option<LinkRate>>,
    /// The link rate given (`--link`), else each peer's route.
    link: Option<Rate>,
    /// CPU marks taken last interval, by pid: only of processes that owned a
    /// busy connection then, so an idle host's thousands of owners cost
    /// nothing, and a process busy two intervals running has CPU evidence
    /// from its second on.
    cpu_before: HashMap<u32, CpuMark>,
    /// This interval's marks (one per process, however many connections it
    /// has; `None` where its `/proc` entry could not be read).
    cpu_now: HashMap<u32, Option<CpuMark>>,
    /// Time spent marking this interval, s.
    marking_secs: f64,
    /// The host's listeners this interval, read when a row first needs them.
    listeners: crate::sys::Listeners,
}

/// Processes with more threads than this get no CPU evidence in `top`:
/// marking one reads a file per thread every interval.
const MAX_MARKED_THREADS: usize = 512;

impl Lookups {
    /// Lookups with nothing read yet; `link` is the rate given, if any.
    pub fn new(owners: Owners, link: Option<Rate>) -> Lookups {
        Lookups {
            owners,
            links: HashMap::new(),
            link,
            cpu_before: HashMap::new(),
            cpu_now: HashMap::new(),
            marking_secs: 0.0,
            listeners: Default::default(),
        }
    }

    /// The link rate a diagnosis of a connection to `peer` weighs against:
    /// one route lookup per peer, not per connection and interval.
    pub fn link_for(&mut self, peer: IpAddr) -> Option<LinkRate> {
        if self.links.len() > 4096 {
            self.links.clear();
        }
        let link = self.link;
        self.links
            .entry(peer)
            .or_insert_with(|| link::for_peer(peer, link))
            .clone()
    }

    /// The host's listeners this interval, read when a row first needs them.
    pub fn listeners(&mut self) -> &mut crate::sys::Listeners {
        &mut self.listeners
    }

    /// Time spent marking processes' CPU since last asked, s.
    pub fn take_marking_secs(&mut self) -> f64 {
        std::mem::take(&mut self.marking_secs)
    }

    /// `pid`'s CPU since last interval, marking it for the next; `fresh`
    /// when the connection asking was read last interval too, so that its
    /// rate and this CPU cover the same second (one found busy by a scan
    /// after seconds unread would pair a long rate with one second of CPU).
    pub fn cpu(&mut self, pid: u32, fresh: bool) -> Option<ProcCpu> {
        // Wall time: the thread's own CPU figure moves only at a tick or a
        // switch, coarser than a few /proc reads; they spend it on the CPU.
        let t0 = Instant::now();
        let before = self.cpu_before.get(&pid);
        let now = self
            .cpu_now
            .entry(pid)
            .or_insert_with(|| match before {
                Some(b) => b.again(pid, MAX_MARKED_THREADS),
                None => CpuMark::read(pid, MAX_MARKED_THREADS),
            })
            .as_ref();
        let cpu = now
            .zip(before.filter(|_| fresh))
            .and_then(|(n, b)| n.since(b));
        // Kept apart from the interval's cost, which paces the scans: it is
        // neither a scan's nor a lookup's.
        self.marking_secs += t0.elapsed().as_secs_f64();
        cpu
    }

    /// Ends an interval: its marks are the next one's starting points.
    pub fn next_interval(&mut self) {
        self.listeners.forget();
        self.cpu_before.clear();
        self.cpu_before
            .extend(self.cpu_now.drain().filter_map(|(pid, m)| Some((pid, m?))));
    }
}
