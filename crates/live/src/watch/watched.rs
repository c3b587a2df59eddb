//! The connections a watch follows, in buffers kept across intervals:
//! each as last read with its latest row ([`Seen`]), and the reading of an
//! interval ([`Watched::read`]) and its order ([`Watched::rank`]).

use std::collections::hash_map::Entry as Slot;
use std::collections::{HashMap, HashSet};

use super::lookups::Lookups;
use super::row::{row, Row};
use crate::scan::Schedule;
use crate::sys::Dumper;
use crate::{Conn, Filter, Role};

/// A connection as last read, and its latest row. Boxed in the map: a
/// hash table's slots are spread over all its buckets, so 20,000 entries of
/// 700 bytes held in place kept 23 MB resident; boxed, 14 MB and 0.5 MB.
pub struct Seen {
    pub(super) conn: Conn,
    /// When it was read, s since start.
    pub(super) t: f64,
    /// The interval that last read it.
    pub(super) read: u64,
    /// Its row at that reading; none until it has been read twice.
    pub(super) row: Option<Row>,
    /// When a reading last found it busy, s since start.
    pub(super) busy_at: f64,
}

/// Whether `e` is looked up every interval at time `t`: new (no rate yet),
/// or busy within the last `hold` seconds.
fn hot(e: &Seen, t: f64, hold: f64) -> bool {
    e.row.is_none() || t - e.busy_at <= hold
}

/// Records a reading of `c` at `t` in interval `i`: its row against the
/// reading before, if any. A new connection, or one found busy, joins
/// `followed`.
fn record(
    known: &mut HashMap<u64, Box<Seen>>,
    followed: &mut HashSet<u64>,
    c: &Conn,
    t: f64,
    i: u64,
    look: &mut Lookups,
) {
    match known.entry(c.cookie) {
        Slot::Occupied(mut o) => {
            let e = o.get_mut();
            let r = row(&e.conn, e.t, c, t, e.read + 1 == i, look);
            if r.role != Role::Idle {
                e.busy_at = t;
                followed.insert(c.cookie);
            }
            e.row = Some(r);
            e.conn = *c;
            e.t = t;
            e.read = i;
        }
        Slot::Vacant(v) => {
            followed.insert(c.cookie);
            v.insert(Box::new(Seen {
                conn: *c,
                t,
                read: i,
                row: None,
                busy_at: f64::NEG_INFINITY,
            }));
        }
    }
}

/// The connections `top` watches, in buffers kept across intervals so
/// memory stays flat: every connection as last read (by cookie), the ones
/// followed between scans, their readings this interval, the ones gone, the
/// rows read now in order and the last scan's. Nothing per interval walks
/// every connection but a scan: on a host of idle connections that walk
/// alone (their entries are 8 MB at 20,000) cost a millisecond.
pub struct Watched {
    pub(super) known: HashMap<u64, Box<Seen>>,
    pub(super) followed: HashSet<u64>,
    pub(super) scan_order: Vec<(f64, u64)>,
    conns: Vec<Conn>,
    gone: Vec<u64>,
    pub(super) order: Vec<(f64, u64)>,
    /// Cleared if this kernel cannot look one socket up: then every interval scans.
    lookups: bool,
}

impl Default for Watched {
    fn default() -> Self {
        Watched {
            known: HashMap::new(),
            followed: HashSet::new(),
            scan_order: Vec::new(),
            conns: Vec::new(),
            gone: Vec::new(),
            order: Vec::new(),
            lookups: true,
        }
    }
}

impl Watched {
    /// Reads interval `i` at `t` seconds: the followed connections by a
    /// lookup of each, or every connection by a scan when the schedule (or
    /// a kernel without lookups) says so. Gives how many were asked for and
    /// whether it scanned.
    pub fn read(
        &mut self,
        dumper: &mut Dumper,
        filter: &Filter,
        sched: &Schedule,
        look: &mut Lookups,
        t: f64,
        i: u64,
    ) -> std::io::Result<(usize, bool)> {
        let Watched {
            known,
            followed,
            conns,
            gone,
            lookups,
            ..
        } = self;
        let hold = sched.hold_secs();
        followed.retain(|k| known.get(k).is_some_and(|e| hot(e, t, hold)));
        let asked = followed.len();
        let mut full = !*lookups || sched.full(i, asked);
        conns.clear();
        if !full {
            let ask = followed
                .iter()
                .filter_map(|k| known.get(k))
                .map(|e| &e.conn);
            match dumper.lookup(ask, conns, gone) {
                Ok(()) => {
                    for g in gone.iter() {
                        known.remove(g);
                    }
                }
                Err(_) => {
                    *lookups = false;
                    full = true;
                    conns.clear();
                }
            }
        }
        let mut take = |c: &Conn| {
            let pid = if filter.pid.is_some() {
                look.owners.get(c.inode).map(|o| o.pid)
            } else {
                None
            };
            if filter.matches(c, pid) {
                record(known, followed, c, t, i, look);
            }
        };
        if full {
            // Each socket is taken as its buffer is parsed: no vector holds
            // the whole table. What the scan did not list has closed.
            dumper.dump_each(&mut take)?;
            known.retain(|_, e| e.read == i);
        } else {
            conns.iter().for_each(&mut take);
        }
        Ok((asked, full))
    }

    /// The rows read now, busiest first: every connection's on a scan, the
    /// followed ones' between. The table adds the rest as the last scan saw
    /// them (idle, or they would be followed); `table` keeps a scan's order
    /// for that.
    pub fn rank(&mut self, i: u64, full: bool, table: bool) {
        let Watched {
            known,
            followed,
            scan_order,
            order,
            ..
        } = self;
        order.clear();
        let read_now = |k: &u64| {
            known
                .get(k)
                .filter(|e| e.read == i)?
                .row
                .map(|r| (r.rate, *k))
        };
        if full {
            order.extend(known.keys().filter_map(read_now));
        } else {
            order.extend(followed.iter().filter_map(read_now));
        }
        order.sort_unstable_by(|x, y| y.0.total_cmp(&x.0));
        if full && table {
            scan_order.clone_from(order);
        }
    }
}
