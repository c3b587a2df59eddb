//! Facts about the host a test runs on: CPU time (process and system-wide),
//! TCP sysctls, `uname`, CPU affinity, link speed and the route to a peer.
//!
//! This module owns reading `/proc` and `/sys` and turning the text into
//! types; the system calls (`getrusage`, `uname`, `sched_setaffinity`,
//! `sysconf`) are in [`crate::sys`]. Nothing here reads a clock: CPU usage
//! is computed from two snapshots and a wall-clock interval the caller
//! measured. Parsers are separate functions over `&str` so they are tested
//! on fixed text, not only on this machine's files.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::sys;

/// Why a host fact could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// A file under `/proc` or `/sys` could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A file's contents were not in the expected format.
    #[error("{path}: unexpected contents {line:?}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The offending line (or a prefix of it).
        line: String,
    },
    /// `getrusage` failed.
    #[error("getrusage: {0}")]
    Rusage(#[source] io::Error),
}

fn read(path: &Path) -> Result<String, HostError> {
    std::fs::read_to_string(path).map_err(|source| HostError::Read {
        path: path.to_owned(),
        source,
    })
}

// --- CPU -------------------------------------------------------------------

/// System-wide CPU time from the aggregate `cpu` line of `/proc/stat`,
/// in clock ticks (`USER_HZ`, normally 100 per second). Guest time is
/// already included in `user`/`nice` by the kernel, so it is not listed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SystemCpuTimes {
    /// Normal processes in user mode.
    pub user: u64,
    /// Niced processes in user mode.
    pub nice: u64,
    /// Kernel mode.
    pub system: u64,
    /// Idle.
    pub idle: u64,
    /// Idle while I/O was outstanding.
    pub iowait: u64,
    /// Servicing hard interrupts.
    pub irq: u64,
    /// Servicing softirqs (where most network receive work is accounted).
    pub softirq: u64,
    /// Stolen by the hypervisor.
    pub steal: u64,
}

impl SystemCpuTimes {
    /// Sum of all listed states.
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }

    /// Ticks not idle and not waiting for I/O.
    pub fn busy(&self) -> u64 {
        self.total() - self.idle - self.iowait
    }
}

/// Parses the aggregate `cpu ` line of `/proc/stat` text. Kernels before
/// 2.6.11 lack `steal` (and older ones more); missing columns read as 0.
pub fn parse_proc_stat(text: &str) -> Option<SystemCpuTimes> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let mut cols = line.split_whitespace().skip(1).map(|c| c.parse::<u64>());
    let mut next = || cols.next().unwrap_or(Ok(0)).ok();
    Some(SystemCpuTimes {
        user: next()?,
        nice: next()?,
        system: next()?,
        idle: next()?,
        iowait: next()?,
        irq: next()?,
        softirq: next()?,
        steal: next()?,
    })
}

/// A point-in-time reading of process and system CPU time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuSnapshot {
    /// This process's user time, µs (`getrusage`, all threads).
    pub process_user_us: u64,
    /// This process's system time, µs.
    pub process_system_us: u64,
    /// System-wide times, or `None` if `/proc/stat` was unreadable.
    pub system: Option<SystemCpuTimes>,
}

/// CPU usage over an interval, in percent, as iperf3 reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuUsage {
    /// (Δuser + Δsystem) / wall × 100 for this process; can exceed 100
    /// with several busy threads (iperf3's `host_total`).
    pub process_total: f64,
    /// Δuser / wall × 100 (`host_user`).
    pub process_user: f64,
    /// Δsystem / wall × 100 (`host_system`).
    pub process_system: f64,
    /// Share of all CPUs' time that was busy (not idle or iowait), 0–100.
    pub system_busy: Option<f64>,
    /// Share of all CPUs' time spent in softirq, 0–100.
    pub system_softirq: Option<f64>,
}

impl CpuSnapshot {
    /// Reads `getrusage(RUSAGE_SELF)` and `/proc/stat` now.
    /// Fails only if `getrusage` does; an unreadable `/proc/stat` leaves
    /// [`system`](Self::system) `None`.
    pub fn take() -> Result<Self, HostError> {
        let ru = sys::getrusage_self().map_err(HostError::Rusage)?;
        let system = crate::procfs::read_text("/proc/stat")
            .ok()
            .and_then(|t| parse_proc_stat(&t));
        Ok(Self {
            process_user_us: ru.user_us,
            process_system_us: ru.system_us,
            system,
        })
    }

    /// Usage between `earlier` and `self`, given the wall-clock time that
    /// passed between the two snapshots (the caller owns the clock).
    /// A zero `wall` or an empty system interval yields zeros, not NaN.
    pub fn usage_since(&self, earlier: &CpuSnapshot, wall: Duration) -> CpuUsage {
        let wall_us = wall.as_secs_f64() * 1e6;
        let pct = |num: u64, den: f64| {
            if den > 0.0 {
                num as f64 / den * 100.0
            } else {
                0.0
            }
        };
        let du = self.process_user_us.saturating_sub(earlier.process_user_us);
        let ds = self
            .process_system_us
            .saturating_sub(earlier.process_system_us);
        let (system_busy, system_softirq) = match (self.system, earlier.system) {
            (Some(now), Some(then)) => {
                let total = now.total().saturating_sub(then.total()) as f64;
                (
                    Some(pct(now.busy().saturating_sub(then.busy()), total)),
                    Some(pct(now.softirq.saturating_sub(then.softirq), total)),
                )
            }
            _ => (None, None),
        };
        CpuUsage {
            process_total: pct(du + ds, wall_us),
            process_user: pct(du, wall_us),
            process_system: pct(ds, wall_us),
            system_busy,
            system_softirq,
        }
    }
}

// --- sysctls ---------------------------------------------------------------

/// The TCP-relevant sysctls [`tcp_sysctls`] reads, as paths under `/proc/sys`.
pub const TCP_SYSCTLS: &[&str] = &[
    "net/ipv4/tcp_rmem",
    "net/ipv4/tcp_wmem",
    "net/ipv4/tcp_window_scaling",
    "net/ipv4/tcp_sack",
    "net/ipv4/tcp_timestamps",
    "net/ipv4/tcp_congestion_control",
    "net/ipv4/tcp_available_congestion_control",
    "net/ipv4/tcp_mtu_probing",
    "net/ipv4/tcp_ecn",
    "net/core/rmem_max",
    "net/core/wmem_max",
];

/// Reads [`TCP_SYSCTLS`] under `root` (normally `/proc/sys`) into a map keyed
/// by dotted name (`net.ipv4.tcp_rmem`), values with whitespace runs
/// collapsed to one space (`"4096 131072 6291456"`). Missing or unreadable
/// files are skipped: containers often hide some.
pub fn tcp_sysctls_under(root: &Path) -> BTreeMap<String, String> {
    TCP_SYSCTLS
        .iter()
        .filter_map(|rel| Some((rel.replace('/', "."), sysctl_under(root, rel)?)))
        .collect()
}

/// One sysctl, `rel` under `root` (`net/ipv4/tcp_congestion_control`), as
/// [`tcp_sysctls_under`] gives it; `None` where it is missing or unreadable.
fn sysctl_under(root: &Path, rel: &str) -> Option<String> {
    let text = crate::procfs::read_text(root.join(rel)).ok()?;
    Some(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// The host's default congestion control (`net.ipv4.tcp_congestion_control`),
/// one file read rather than all of [`TCP_SYSCTLS`].
pub fn default_congestion_control() -> Option<String> {
    sysctl_under(Path::new("/proc/sys"), "net/ipv4/tcp_congestion_control")
}

/// [`tcp_sysctls_under`] for `/proc/sys`.
pub fn tcp_sysctls() -> BTreeMap<String, String> {
    tcp_sysctls_under(Path::new("/proc/sys"))
}

// --- uname -----------------------------------------------------------------

/// `uname(2)` fields; `Display` gives iperf3's `system_info` string,
/// e.g. `Linux host 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian ... x86_64`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SystemInfo {
    /// `sysname`, e.g. `Linux`.
    pub sysname: String,
    /// `nodename`: the host name.
    pub nodename: String,
    /// Kernel release.
    pub release: String,
    /// Kernel build version string.
    pub version: String,
    /// Hardware name, e.g. `x86_64`.
    pub machine: String,
}

impl fmt::Display for SystemInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {} {}",
            self.sysname, self.nodename, self.release, self.version, self.machine
        )
    }
}

/// Reads `uname(2)`. It cannot fail on Linux; should it, the fields are
/// empty rather than the run failing over a cosmetic string.
pub fn uname() -> SystemInfo {
    let u = sys::uname().unwrap_or_default();
    SystemInfo {
        sysname: u.sysname,
        nodename: u.nodename,
        release: u.release,
        version: u.version,
        machine: u.machine,
    }
}

// --- CPUs --------------------------------------------------------------------

/// Pins the calling thread to CPU `cpu` (`sched_setaffinity`), like
/// `iperf3 -A`. Fails with `InvalidInput` for an index past the kernel's
/// CPU set and `EINVAL` for an offline or disallowed CPU.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    sys::sched_setaffinity_self(cpu)
}

/// Puts the calling thread in the batch scheduling class (`SCHED_BATCH`):
/// when it wakes it does not preempt the thread running on its CPU.
///
/// A TCP data thread is woken by its peer's softirq for every burst of data
/// or acknowledgements, and bbr's pacing timer wakes it more often still.
/// With wake-up preemption, each wake-up switched the CPU away from another
/// data thread that had useful work: on 2 CPUs a receiver slept and woke
/// 29,000 times in 2.5 s while its sender was preempted 26,000 times.
/// Batch data threads ran `-P 2` under bbr at 67–68 Gb/s instead of 36, and
/// `--bidir` at 35.6 instead of 18.5 (cubic: +5 % and +15 %); a single
/// stream, whose two threads have a CPU each, ran the same either way.
pub fn batch_current_thread() -> io::Result<()> {
    sys::sched_batch_self()
}

/// Whether the calling thread is in the batch scheduling class.
pub fn current_thread_is_batch() -> io::Result<bool> {
    Ok(sys::sched_policy_self()? == libc::SCHED_BATCH)
}

/// CPUs the calling thread may run on.
pub fn current_thread_affinity() -> io::Result<Vec<usize>> {
    sys::sched_getaffinity_self()
}

/// CPUs written as Linux writes `Cpus_allowed_list`: ascending, each run
/// of consecutive CPUs as `first-last` (`0-3,6`); empty for none.
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        out.push(if j == i {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// Number of CPUs online (`sysconf(_SC_NPROCESSORS_ONLN)`), at least 1.
pub fn online_cpus() -> usize {
    sys::online_cpus()
}

// --- interfaces and routes --------------------------------------------------

/// An interface name that is safe to join under `/sys/class/net`: 1–15
/// bytes (`IFNAMSIZ - 1`), no `/`, not `.` or `..`, no whitespace or NUL.
fn valid_ifname(name: &str) -> bool {
    (1..16).contains(&name.len())
        && name != "."
        && name != ".."
        && !name
            .bytes()
            .any(|b| b == b'/' || b == 0 || b.is_ascii_whitespace())
}

/// Link speed in Mb/s from `/sys/class/net/<ifname>/speed`; `None` for
/// unknown names, virtual links (loopback and others report an error or
/// -1) and names that are not valid interface names.
pub fn link_speed_mbps(ifname: &str) -> Option<u64> {
    if !valid_ifname(ifname) {
        return None;
    }
    let text =
        std::fs::read_to_string(Path::new("/sys/class/net").join(ifname).join("speed")).ok()?;
    let speed: i64 = text.trim().parse().ok()?;
    u64::try_from(speed).ok().filter(|&s| s > 0)
}

/// `RTF_UP` and `RTF_REJECT` from `include/uapi/linux/route.h`.
const RTF_UP: u32 = 0x0001;
const RTF_REJECT: u32 = 0x0200;

/// Whether a route of `plen`/`metric` beats the best so far.
fn better(best: Option<(u32, u32, &str)>, plen: u32, metric: u32) -> bool {
    match best {
        None => true,
        Some((bp, bm, _)) => plen > bp || (plen == bp && metric < bm),
    }
}

/// Chooses the interface for `dst` from `/proc/net/route` text: longest
/// prefix, then lowest metric, among routes that are up and not reject.
pub fn parse_route_v4(text: &str, dst: Ipv4Addr) -> Option<String> {
    // Addresses in this file are the in-memory (network-order) u32 printed
    // as hex on the host, i.e. little-endian on x86: convert back through
    // native-endian bytes so the comparison is right on any host.
    let dst = u32::from_ne_bytes(dst.octets());
    let mut best: Option<(u32, u32, &str)> = None; // (prefix len, metric, iface)
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 {
            continue;
        }
        let hex = |s: &str| u32::from_str_radix(s, 16).ok();
        let (Some(net), Some(flags), Some(metric), Some(mask)) =
            (hex(f[1]), hex(f[3]), f[6].parse::<u32>().ok(), hex(f[7]))
        else {
            continue;
        };
        if flags & RTF_UP == 0 || flags & RTF_REJECT != 0 || dst & mask != net & mask {
            continue;
        }
        let plen = mask.count_ones();
        if better(best, plen, metric) {
            best = Some((plen, metric, f[0]));
        }
    }
    best.map(|(_, _, iface)| iface.to_owned())
}

/// Chooses the interface for `dst` from `/proc/net/ipv6_route` text, by the
/// same rule as [`parse_route_v4`].
pub fn parse_route_v6(text: &str, dst: Ipv6Addr) -> Option<String> {
    let dst = u128::from(dst);
    let mut best: Option<(u32, u32, &str)> = None;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 10 {
            continue;
        }
        let (Ok(net), Ok(plen), Ok(metric), Ok(flags)) = (
            u128::from_str_radix(f[0], 16),
            u32::from_str_radix(f[1], 16),
            u32::from_str_radix(f[5], 16),
            u32::from_str_radix(f[8], 16),
        ) else {
            continue;
        };
        if plen > 128 || flags & RTF_UP == 0 || flags & RTF_REJECT != 0 {
            continue;
        }
        let mask = if plen == 0 {
            0
        } else {
            u128::MAX << (128 - plen)
        };
        if dst & mask != net & mask {
            continue;
        }
        if better(best, plen, metric) {
            best = Some((plen, metric, f[9]));
        }
    }
    best.map(|(_, _, iface)| iface.to_owned())
}

/// The interface traffic to `dst` leaves through, from the main routing
/// table in `/proc/net/route` / `/proc/net/ipv6_route`. Loopback addresses
/// answer `lo` (they live in the local table, which those files omit).
/// Policy routing is not considered; `None` if nothing matches.
pub fn route_interface(dst: IpAddr) -> Option<String> {
    if dst.is_loopback() {
        return Some("lo".to_owned());
    }
    match dst {
        IpAddr::V4(v4) => parse_route_v4(&read(Path::new("/proc/net/route")).ok()?, v4),
        IpAddr::V6(v6) => parse_route_v6(&read(Path::new("/proc/net/ipv6_route")).ok()?, v6),
    }
}

/// The calling thread's CPU time and run-queue wait so far, nanoseconds,
/// from `/proc/thread-self/schedstat`. The wait includes time a CPU quota
/// (cgroup bandwidth control) held the thread back, so CPU + wait close to
/// the wall time means the thread wanted a whole core. The kernel brings a
/// running thread's figures up to date only at a scheduler tick (4 ms at
/// HZ=250) or a switch, so this yields first: read without it, a 0.7 ms
/// stretch of work after a sleep measured 0 (`plumb top` times its scans
/// with it).
pub fn thread_schedstat() -> Option<(u64, u64)> {
    std::thread::yield_now();
    new_thread_schedstat()
}

/// [`thread_schedstat`] for a thread that has only just started, without
/// the yield: the figures the kernel has not yet brought up to date are the
/// few microseconds the thread has run since it was first switched in, and
/// a yield of a batch-class thread on a busy CPU waits out another task's
/// whole slice (milliseconds) before a data thread's first block.
pub fn new_thread_schedstat() -> Option<(u64, u64)> {
    let text = crate::procfs::read_text("/proc/thread-self/schedstat").ok()?;
    let mut f = text.split_whitespace().map(|x| x.parse::<u64>().ok());
    Some((f.next()??, f.next()??))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROC_STAT: &str = "cpu  4505 10 1804 127218 292 3 69 12 0 0\n\
cpu0 1808 0 684 64377 28 0 23 6 0 0\n\
intr 12345\n";

    #[test]
    fn cpu_lists_are_written_as_linux_writes_them() {
        assert_eq!(cpu_list(&[]), "");
        assert_eq!(cpu_list(&[1]), "1");
        assert_eq!(cpu_list(&[0, 1]), "0-1");
        assert_eq!(cpu_list(&[6, 0, 2, 1, 3, 3]), "0-3,6");
        assert_eq!(cpu_list(&[0, 2, 4, 5]), "0,2,4-5");
    }

    #[test]
    fn proc_stat_aggregate_line_parses() {
        let t = parse_proc_stat(PROC_STAT).expect("parse");
        assert_eq!(
            t,
            SystemCpuTimes {
                user: 4505,
                nice: 10,
                system: 1804,
                idle: 127_218,
                iowait: 292,
                irq: 3,
                softirq: 69,
                steal: 12,
            }
        );
        assert_eq!(t.total(), 4505 + 10 + 1804 + 127_218 + 292 + 3 + 69 + 12);
        // An old kernel without steal: missing column is 0, not an error.
        let old = parse_proc_stat("cpu 1 2 3 4 5 6 7\n").expect("parse old");
        assert_eq!(old.steal, 0);
        assert_eq!(parse_proc_stat("cpu 1 x 3\n"), None);
        assert_eq!(parse_proc_stat("intr 1\n"), None);
    }

    #[test]
    fn usage_is_computed_like_iperf3() {
        let then = CpuSnapshot {
            process_user_us: 1_000_000,
            process_system_us: 500_000,
            system: Some(SystemCpuTimes {
                user: 100,
                idle: 1000,
                ..SystemCpuTimes::default()
            }),
        };
        let now = CpuSnapshot {
            process_user_us: 1_600_000,
            process_system_us: 1_400_000,
            system: Some(SystemCpuTimes {
                user: 150,
                system: 30,
                softirq: 20,
                idle: 1100,
                ..SystemCpuTimes::default()
            }),
        };
        let u = now.usage_since(&then, Duration::from_secs(2));
        assert!((u.process_user - 30.0).abs() < 1e-9, "{u:?}");
        assert!((u.process_system - 45.0).abs() < 1e-9, "{u:?}");
        assert!((u.process_total - 75.0).abs() < 1e-9, "{u:?}");
        // Δtotal = 50 + 30 + 20 + 100 = 200; busy 100 → 50 %, softirq 10 %.
        assert_eq!(u.system_busy, Some(50.0));
        assert_eq!(u.system_softirq, Some(10.0));
        let zero = now.usage_since(&then, Duration::ZERO);
        assert_eq!(zero.process_total, 0.0);
    }

    #[test]
    fn real_snapshot_sees_our_own_cpu_time() {
        let before = CpuSnapshot::take().expect("snapshot");
        // Burn CPU for a bounded number of iterations, opaque to the optimizer.
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
        std::hint::black_box(x);
        let after = CpuSnapshot::take().expect("snapshot");
        assert!(
            after.process_user_us + after.process_system_us
                > before.process_user_us + before.process_system_us
        );
        assert!(after.system.is_some(), "/proc/stat readable on Linux");
        let u = after.usage_since(&before, Duration::from_millis(100));
        assert!(u.process_total > 0.0, "{u:?}");
        let busy = u.system_busy.expect("system usage");
        assert!((0.0..=100.0).contains(&busy), "{u:?}");
    }

    #[test]
    fn sysctls_are_read_and_missing_ones_skipped() {
        let map = tcp_sysctls();
        let rmem = map
            .get("net.ipv4.tcp_rmem")
            .expect("tcp_rmem exists on Linux");
        assert_eq!(rmem.split(' ').count(), 3, "{rmem:?}");
        assert!(map.contains_key("net.ipv4.tcp_congestion_control"));
        let none = tcp_sysctls_under(Path::new("/nonexistent-plumb-test"));
        assert!(none.is_empty());
        // The one-file read gives what the whole map has.
        assert_eq!(
            default_congestion_control().as_ref(),
            map.get("net.ipv4.tcp_congestion_control")
        );
    }

    #[test]
    fn uname_looks_like_iperf3_system_info() {
        let info = uname();
        assert_eq!(info.sysname, "Linux");
        assert!(!info.release.is_empty());
        let s = info.to_string();
        assert!(s.starts_with("Linux "), "{s}");
        assert!(s.ends_with(&info.machine), "{s}");
        assert!(s.contains(&info.release), "{s}");
    }

    #[test]
    fn pinning_restricts_affinity_to_one_cpu() {
        assert!(online_cpus() >= 1);
        // A fresh thread, so the test harness's threads keep their affinity.
        let allowed = std::thread::spawn(|| {
            let cpu = current_thread_affinity().expect("affinity")[0];
            pin_current_thread(cpu).expect("pin");
            (cpu, current_thread_affinity().expect("affinity"))
        })
        .join()
        .expect("thread");
        assert_eq!(allowed.1, vec![allowed.0]);
        let err = pin_current_thread(1 << 20).expect_err("absurd cpu");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn a_thread_can_be_put_in_the_batch_class() {
        // A fresh thread, so the test harness's threads keep their policy.
        let (before, after) = std::thread::spawn(|| {
            let before = current_thread_is_batch().expect("policy");
            batch_current_thread().expect("batch");
            (before, current_thread_is_batch().expect("policy"))
        })
        .join()
        .expect("thread");
        assert!(!before);
        assert!(after);
    }

    #[test]
    fn link_speed_rejects_bad_names_and_virtual_links() {
        assert_eq!(link_speed_mbps("../../etc"), None);
        assert_eq!(link_speed_mbps(""), None);
        assert_eq!(link_speed_mbps("no-such-if0"), None);
        // Loopback has no speed (the read fails with EINVAL).
        assert_eq!(link_speed_mbps("lo"), None);
    }

    #[test]
    fn routes_pick_longest_prefix_then_metric() {
        let table =
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n\
wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\n\
eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
tun0\t000A000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
dead0\t000B000A\t00000000\t0200\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
        if cfg!(target_endian = "little") {
            let r = |a: [u8; 4]| parse_route_v4(table, Ipv4Addr::from(a));
            assert_eq!(r([192, 0, 2, 7]).as_deref(), Some("eth0"));
            assert_eq!(r([10, 0, 10, 9]).as_deref(), Some("tun0"));
            assert_eq!(
                r([8, 8, 8, 8]).as_deref(),
                Some("eth0"),
                "lower metric default"
            );
            assert_eq!(
                r([10, 0, 11, 1]).as_deref(),
                Some("eth0"),
                "reject route skipped"
            );
        }
        assert_eq!(parse_route_v4("Iface\n", Ipv4Addr::new(1, 2, 3, 4)), None);
    }

    #[test]
    fn v6_routes_pick_longest_prefix() {
        let table = "\
fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0
00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000002 00000000 00000003     eth1
00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
";
        let fd: Ipv6Addr = "fd00::42".parse().expect("addr");
        let other: Ipv6Addr = "2001:db8::1".parse().expect("addr");
        assert_eq!(parse_route_v6(table, fd).as_deref(), Some("eth0"));
        assert_eq!(parse_route_v6(table, other).as_deref(), Some("eth1"));
    }

    #[test]
    fn loopback_routes_to_lo() {
        assert_eq!(
            route_interface(IpAddr::V4(Ipv4Addr::LOCALHOST)).as_deref(),
            Some("lo")
        );
        assert_eq!(
            route_interface(IpAddr::V6(Ipv6Addr::LOCALHOST)).as_deref(),
            Some("lo")
        );
    }
}
