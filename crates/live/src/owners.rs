//! Which process owns a socket, found by scanning `/proc` (`sys`) as seldom
//! as a monitor (`plumb why` on running connections, `plumb top`) can afford.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::sys::{self, Owner};

/// The owners of sockets. A scan of /proc reads every descriptor of every
/// process (20,000 `readlink`s on a host with 10,000 loopback connections,
/// more than a dump costs), so it is not done per sample: an unknown inode
/// triggers a rescan at most once a second and at most 1 % of the time
/// (a scan that took 30 ms waits 3 s), and an inode a newer scan still did
/// not find (a socket of a process this user may not read, or of the
/// kernel) is remembered as ownerless instead of rescanning for it forever.
pub struct Owners {
    map: HashMap<u32, Owner>,
    missing: HashSet<u32>,
    denied: usize,
    scanned: Option<(Instant, Duration)>,
}

/// More inodes than this remembered as ownerless: forget them all (bounded
/// memory on a host that churns connections).
const MISSING_MAX: usize = 1 << 16;

impl Owners {
    /// Scans /proc now.
    pub fn new() -> Owners {
        let mut o = Owners {
            map: HashMap::new(),
            missing: HashSet::new(),
            denied: 0,
            scanned: None,
        };
        o.rescan();
        o
    }

    fn rescan(&mut self) {
        let t = Instant::now();
        let (m, d) = sys::socket_owners();
        self.map = m;
        self.denied = d;
        self.scanned = Some((t, t.elapsed()));
    }

    /// A rescan is due: a second and a hundred scans' time since the last.
    fn stale(&self) -> bool {
        self.scanned.is_none_or(|(at, cost)| {
            at.elapsed() >= Duration::from_secs(1).max(cost.saturating_mul(100))
        })
    }

    /// The owner of socket `inode`, rescanning when it is new and a rescan is due.
    pub fn get(&mut self, inode: u32) -> Option<&Owner> {
        if inode == 0 || self.missing.contains(&inode) {
            return None;
        }
        if !self.map.contains_key(&inode) && self.stale() {
            self.rescan();
            if !self.map.contains_key(&inode) {
                if self.missing.len() >= MISSING_MAX {
                    self.missing.clear();
                }
                self.missing.insert(inode);
            }
        }
        self.map.get(&inode)
    }

    /// Processes whose sockets could not be read.
    pub fn denied(&self) -> usize {
        self.denied
    }
}

impl Default for Owners {
    fn default() -> Self {
        Owners::new()
    }
}
