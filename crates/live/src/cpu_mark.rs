//! A process's CPU counters at one moment, and the CPU evidence between two
//! moments, for `plumb why` (live) and `plumb top`.

use std::time::Instant;

use crate::sys;
use plumb_net::cgroup::CgroupCpuReading;

/// A process's CPU counters at one moment: its threads', and its cgroup's
/// quota counters when a quota applies. Two marks make the CPU evidence of
/// the time between them.
#[derive(Debug, Clone)]
pub struct CpuMark {
    threads: Vec<sys::ThreadCpu>,
    at: Instant,
    cgroup: Option<CgroupCpuReading>,
    /// The process's start time: a pid reused by another process is not
    /// compared with the one before.
    started: Option<u64>,
}

impl CpuMark {
    /// Reads `pid`'s counters now, if it has at most `max_threads` threads;
    /// `None` when its `/proc` entry is gone or not readable.
    pub fn read(pid: u32, max_threads: usize) -> Option<CpuMark> {
        Some(CpuMark {
            started: sys::process_start(pid),
            threads: sys::thread_cpu(pid, max_threads)?,
            at: Instant::now(),
            cgroup: CgroupCpuReading::of_pid(pid),
        })
    }

    /// Reads `pid`'s counters again, in the cgroups found before (finding
    /// them walks mount tables; reading them again is a few small files).
    pub fn again(&self, pid: u32, max_threads: usize) -> Option<CpuMark> {
        let started = sys::process_start(pid);
        if started != self.started {
            // Another process now: start afresh.
            return CpuMark::read(pid, max_threads);
        }
        Some(CpuMark {
            started,
            threads: sys::thread_cpu(pid, max_threads)?,
            at: Instant::now(),
            cgroup: self.cgroup.as_ref().and_then(CgroupCpuReading::again),
        })
    }

    /// The CPU used between `earlier` and this mark (`None` when the pid
    /// belongs to another process now).
    pub fn since(&self, earlier: &CpuMark) -> Option<crate::evidence::ProcCpu> {
        if self.started != earlier.started {
            return None;
        }
        let secs = self.at.saturating_duration_since(earlier.at).as_secs_f64();
        let mut c = sys::cpu_between(&earlier.threads, &self.threads, secs)?;
        if let Some(d) = earlier
            .cgroup
            .as_ref()
            .zip(self.cgroup.as_ref())
            .and_then(|(a, b)| b.since(a))
        {
            c.quota_pct = Some(d.quota_pct);
            c.throttled_pct = d.throttled_pct();
        }
        Some(c)
    }
}
