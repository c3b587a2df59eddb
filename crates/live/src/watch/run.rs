//! The watch loop: read the connections every interval (the followed ones by
//! a lookup of each, all of them by a scan as often as its measured CPU cost
//! fits the schedule), rank them, hand the interval to a sink, and pace the
//! next. Bounded by the sink's answer and the interval count.

use std::time::{Duration, Instant};

use plumb_model::Rate;

use super::interval::Interval;
use super::lookups::Lookups;
use super::watched::Watched;
use crate::owners::Owners;
use crate::scan::Schedule;
use crate::sys::Dumper;
use crate::Filter;

/// What `plumb top` watches and how.
#[derive(Debug, Clone)]
pub struct Top {
    /// Which connections.
    pub filter: Filter,
    /// When a full scan runs.
    pub schedule: Schedule,
    /// The bottleneck link's rate, if given; else each peer's route.
    pub link: Option<Rate>,
    /// Time between readings.
    pub interval: Duration,
    /// Stop after this many intervals with rates.
    pub count: Option<u64>,
    /// Whether the sink shows rows not read this interval too, as the last
    /// scan saw them (a table does; a stream of lines does not).
    pub table: bool,
}

/// Where a watch's intervals go.
pub trait TopSink {
    /// Interval `i`'s rows, from the second reading on (the first has no
    /// rates).
    fn interval(&mut self, i: &mut Interval<'_>) -> std::io::Result<()>;

    /// Waits until `until`; `true` ends the watch (a key, a signal).
    fn wait(&mut self, until: Instant) -> std::io::Result<bool>;
}

/// CPU this thread has used, s (the kernel's work for a sock_diag dump runs
/// in the reading thread and counts here); wall time where the kernel keeps
/// no figure.
fn cpu_now(start: Instant) -> f64 {
    plumb_net::host::thread_schedstat().map_or_else(
        || start.elapsed().as_secs_f64(),
        |(run, _)| run as f64 / 1e9,
    )
}

/// Watches the connections `top` asks for through `dumper` until the count
/// is reached or the sink says stop.
pub fn run(top: &Top, dumper: &mut Dumper, sink: &mut impl TopSink) -> std::io::Result<()> {
    let mut sched = top.schedule.clone();
    let start = Instant::now();
    // The kernel skips sockets on other ports before it fills a message.
    dumper.port = top.filter.kernel_port();
    let mut w = Watched::default();
    let mut look = Lookups::new(Owners::new(), top.link);
    let mut i = 0u64;
    loop {
        let t = start.elapsed().as_secs_f64();
        let cpu0 = cpu_now(start);
        let (asked, full) = w.read(dumper, &top.filter, &sched, &mut look, t, i)?;
        look.next_interval();
        if i > 0 {
            w.rank(i, full, top.table);
            sink.interval(&mut Interval {
                index: i,
                full_scan: full,
                schedule: &sched,
                watched: &w,
                owners: &mut look.owners,
            })?;
        }
        // What this interval cost, output included, sets the pace of scans;
        // reading busy processes' CPU is neither scan nor lookup.
        let cost = (cpu_now(start) - cpu0 - look.take_marking_secs()).max(0.0);
        if full {
            sched.scanned(i, cost);
        } else {
            sched.looked_up(asked, cost);
        }
        if i > 0 && top.count.is_some_and(|n| i >= n) {
            return Ok(());
        }
        i += 1;
        if sink.wait(start + top.interval.mul_f64(i as f64))? {
            return Ok(());
        }
    }
}
