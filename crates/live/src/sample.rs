//! `plumb why` on what is running: the host's TCP connections that match a
//! filter, dumped every [`TICK`] for a given time and tracked across the
//! dumps, with their owners and each owner's CPU counters from first sight
//! ([`Sampled`]); bounded by the tick count the time gives.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::cpu_mark::CpuMark;
use crate::owners::Owners;
use crate::sys::{Dumper, Owner};
use crate::{Filter, Tracker};

/// Sampling period between dumps.
pub const TICK: Duration = Duration::from_millis(100);

/// What sampling saw: the connections, their owners, and each owner's CPU
/// counters from when it was first seen.
pub struct Sampled {
    /// The connections.
    pub tracker: Tracker,
    /// Owner by socket cookie.
    pub owner_of: HashMap<u64, Owner>,
    /// Each owning process's CPU counters at first sight.
    pub cpu_start: HashMap<u32, CpuMark>,
}

impl Sampled {
    /// The process's CPU from first sight until now.
    pub fn cpu(&self, pid: u32) -> Option<crate::evidence::ProcCpu> {
        let a = self.cpu_start.get(&pid)?;
        a.again(pid, usize::MAX)?.since(a)
    }
}

/// Samples `filter`'s connections for `secs` seconds.
pub fn sample(filter: &Filter, secs: f64, owners: &mut Owners) -> std::io::Result<Sampled> {
    let mut d = Dumper::open()?;
    // The kernel skips sockets on other ports before it fills a message.
    d.port = filter.kernel_port();
    let mut conns = Vec::new();
    let start = Instant::now();
    let mut tracker = Tracker::default();
    let mut owner_of: HashMap<u64, Owner> = HashMap::new();
    let mut cpu_start = HashMap::new();
    let ticks = ((secs / TICK.as_secs_f64()).round() as u64).max(1);
    for i in 0..=ticks {
        let t = start.elapsed().as_secs_f64();
        let mut now = Vec::new();
        d.dump_into(&mut conns)?;
        for &c in &conns {
            let owner = match owner_of.get(&c.cookie) {
                Some(o) => Some(o.clone()),
                None => {
                    // An owner not found yet is asked for again next tick:
                    // a socket opened since the last /proc scan is found by
                    // the next one (Owners rescans at most once a second).
                    let o = owners.get(c.inode).cloned();
                    if let Some(o) = &o {
                        owner_of.insert(c.cookie, o.clone());
                    }
                    o
                }
            };
            if filter.matches(&c, owner.as_ref().map(|o| o.pid)) {
                if let Some(o) = &owner {
                    if let std::collections::hash_map::Entry::Vacant(e) = cpu_start.entry(o.pid) {
                        if let Some(m) = CpuMark::read(o.pid, usize::MAX) {
                            e.insert(m);
                        }
                    }
                }
                now.push(c);
            }
        }
        tracker.add(now, t);
        if i < ticks {
            let next = TICK * (i as u32 + 1);
            if let Some(wait) = next.checked_sub(start.elapsed()) {
                std::thread::sleep(wait);
            }
        }
    }
    Ok(Sampled {
        tracker,
        owner_of,
        cpu_start,
    })
}
