//! The CPU quota of the cgroup this process runs in, and how often the
//! kernel held the process back to keep it (CFS bandwidth control).
//!
//! Why: a process in a container with a CPU limit (a cgroup's `cpu.max`, a
//! Kubernetes CPU limit) is stopped for the rest of every 100 ms period once
//! its share is spent. Its threads then wait to run, which the thread
//! figures show too, but the wait also moves with everything else the
//! machine runs; the cgroup's own counters (`nr_periods`, `nr_throttled`,
//! `throttled_usec` in `cpu.stat`) say directly that the quota held it, so
//! `plumb why` can name the quota rather than guess from a wait.
//!
//! This module owns finding the cgroup (`/proc/self/cgroup` and
//! `/proc/self/mountinfo`, cgroup v2 or v1's `cpu` controller), reading its
//! quota and counters, and the parsers of those files, which are separate
//! functions over `&str` so that they are tested on fixed text.

use std::path::{Path, PathBuf};

use crate::procfs::read_text;

pub use plumb_proto::results::CgroupCpu;

/// How far up the hierarchy a quota is looked for: a container's limit is
/// often set on a parent (a pod's slice), not on the process's own group.
const MAX_DEPTH: usize = 32;

/// One reading of the CPU bandwidth counters of every cgroup with a quota
/// that this process runs under: its own and its parents' (a pod's slice may
/// hold a stricter quota than the container's own group, and a parent's
/// throttling is counted in the parent's `cpu.stat`).
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupCpuReading {
    /// The groups with a quota, nearest first.
    pub levels: Vec<CgroupLevel>,
}

/// One cgroup's quota and counters.
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupLevel {
    /// The cgroup's directory.
    pub dir: PathBuf,
    /// The quota, percent of one core (`cpu.max` 1000 100000 is 1 %).
    pub quota_pct: f64,
    /// Enforcement periods in which the cgroup had work (`nr_periods`).
    pub periods: u64,
    /// Of those, periods in which the quota ran out (`nr_throttled`).
    pub throttled_periods: u64,
    /// Time the cgroup's threads were held back, µs (`throttled_usec`, or
    /// v1's `throttled_time` in ns).
    pub throttled_us: u64,
}

impl CgroupCpuReading {
    /// The cgroups with a CPU quota that this process runs under, read now;
    /// `None` where there is none (no quota on its group or any parent, or
    /// no cgroup file system to read).
    pub fn take() -> Option<CgroupCpuReading> {
        Self::of("self")
    }

    /// The same for another process (`plumb why` on a running program's
    /// connections); `None` also when its `/proc` entry is not readable.
    pub fn of_pid(pid: u32) -> Option<CgroupCpuReading> {
        Self::of(&pid.to_string())
    }

    fn of(proc_entry: &str) -> Option<CgroupCpuReading> {
        let cgroup = read_text(format!("/proc/{proc_entry}/cgroup")).ok()?;
        let mountinfo = read_text("/proc/self/mountinfo").ok()?;
        // `ip netns exec` (and so `plumb lab`'s far side) mounts a sysfs of
        // the namespace's own over /sys, which hides /sys/fs/cgroup; the
        // cgroup file systems are still reachable through the mounts an
        // ancestor (the shell or lab that ran `ip netns exec`) or init sees,
        // where this process may look into them (`/proc/PID/root`). The
        // ancestors are looked up only when this process's own view has no
        // cgroup mount: most runs never need them.
        let views = std::iter::once((mountinfo, PathBuf::from("/"))).chain(
            std::iter::once_with(ancestors)
                .flatten()
                .chain([1])
                .filter_map(|pid| {
                    let theirs = read_text(format!("/proc/{pid}/mountinfo")).ok()?;
                    Some((theirs, PathBuf::from(format!("/proc/{pid}/root"))))
                }),
        );
        for (mounts, root) in views {
            let Some((point, dir)) = own_cpu_dir(&cgroup, &mounts) else {
                continue;
            };
            let under = |p: &Path| root.join(p.strip_prefix("/").unwrap_or(p));
            let (point, dir) = (under(&point), under(&dir));
            if !dir.is_dir() {
                continue;
            }
            let mut levels = Vec::new();
            let mut d = dir.as_path();
            // From the process's own group up to the mount's root, bounded.
            for _ in 0..MAX_DEPTH {
                levels.extend(read_dir(d));
                if d == point {
                    break;
                }
                match d.parent() {
                    Some(p) if p.starts_with(&point) => d = p,
                    _ => break,
                }
            }
            return (!levels.is_empty()).then_some(CgroupCpuReading { levels });
        }
        None
    }

    /// The same cgroups read again (a group removed since reads as gone).
    pub fn again(&self) -> Option<CgroupCpuReading> {
        let levels: Vec<CgroupLevel> = self
            .levels
            .iter()
            .filter_map(|l| read_dir(&l.dir))
            .collect();
        (!levels.is_empty()).then_some(CgroupCpuReading { levels })
    }

    /// What the quota did between `earlier` and this reading of the same
    /// cgroups, as a plumb end reports it: the group whose quota ran out in
    /// the most periods, the tighter quota on a tie; `None` when no group
    /// was read both times.
    pub fn since(&self, earlier: &CgroupCpuReading) -> Option<CgroupCpu> {
        self.levels
            .iter()
            .filter_map(|now| {
                let then = earlier.levels.iter().find(|l| l.dir == now.dir)?;
                Some(CgroupCpu {
                    quota_pct: now.quota_pct,
                    periods: now.periods.saturating_sub(then.periods),
                    throttled_periods: now.throttled_periods.saturating_sub(then.throttled_periods),
                    throttled_us: now.throttled_us.saturating_sub(then.throttled_us),
                })
            })
            .max_by(|a, b| {
                a.throttled_periods
                    .cmp(&b.throttled_periods)
                    .then(b.quota_pct.total_cmp(&a.quota_pct))
            })
    }
}

/// This process's parent, its parent, and so on (at most [`MAX_DEPTH`]),
/// up to but not including init.
fn ancestors() -> Vec<u32> {
    let mut out = Vec::new();
    let mut pid = std::os::unix::process::parent_id();
    while pid > 1 && out.len() < MAX_DEPTH {
        out.push(pid);
        pid = match read_text(format!("/proc/{pid}/stat")) {
            Ok(t) => match parse_ppid(&t) {
                Some(p) => p,
                None => break,
            },
            Err(_) => break,
        };
    }
    out
}

/// The parent's pid from `/proc/PID/stat` ("pid (comm) state ppid …"; the
/// command name may hold spaces and parentheses, so fields count from the
/// last ')').
pub fn parse_ppid(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The quota and counters of one directory, if it has a quota.
fn read_dir(dir: &Path) -> Option<CgroupLevel> {
    let read = |f: &str| read_text(dir.join(f)).ok();
    // v2: cpu.max; v1: cfs_quota_us and cfs_period_us.
    let quota_pct = match read("cpu.max") {
        Some(t) => parse_cpu_max(&t)?,
        None => parse_cfs_quota(&read("cpu.cfs_quota_us")?, &read("cpu.cfs_period_us")?)?,
    };
    let stat = parse_cpu_stat(&read("cpu.stat")?)?;
    Some(CgroupLevel {
        dir: dir.to_owned(),
        quota_pct,
        periods: stat.0,
        throttled_periods: stat.1,
        throttled_us: stat.2,
    })
}

/// The mount point and directory of this process's cgroup for the CPU
/// controller: v1's `cpu` hierarchy where one is mounted, else the v2
/// (unified) one. `cgroup` is `/proc/PID/cgroup`, `mountinfo`
/// `/proc/self/mountinfo` (or another process's).
pub fn own_cpu_dir(cgroup: &str, mountinfo: &str) -> Option<(PathBuf, PathBuf)> {
    let mut v1 = None;
    let mut v2 = None;
    for line in cgroup.lines() {
        // hierarchy-ID:controller-list:path
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(ctrl), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if id == "0" && ctrl.is_empty() {
            v2 = Some(path);
        } else if ctrl.split(',').any(|c| c == "cpu") {
            v1 = Some(path);
        }
    }
    let mounts = cgroup_mounts(mountinfo);
    // The first mount of the hierarchy (v2, or v1 with `cpu`) that shows `path`.
    let place = |v2: bool, path: &str| {
        mounts
            .iter()
            .filter(|m| if v2 { m.v2 } else { m.cpu })
            .find_map(|m| Some((m.point.clone(), join_under(&m.point, &m.root, path)?)))
    };
    v1.and_then(|p| place(false, p))
        .or_else(|| place(true, v2?))
}

/// A cgroup file system mounted here.
#[derive(Debug, PartialEq)]
struct CgroupMount {
    /// Where it is mounted.
    point: PathBuf,
    /// The cgroup path that the mount point shows (`/` unless a namespace
    /// or a bind mount shows a subtree).
    root: String,
    /// cgroup2 (else v1).
    v2: bool,
    /// A v1 hierarchy with the `cpu` controller.
    cpu: bool,
}

fn cgroup_mounts(mountinfo: &str) -> Vec<CgroupMount> {
    let mut out = Vec::new();
    for line in mountinfo.lines() {
        // id parent major:minor root mount-point options [optional…] - fstype source super-options
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let l: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        let (Some(root), Some(point), Some(fstype)) = (l.get(3), l.get(4), r.first()) else {
            continue;
        };
        let supers = r.get(2).copied().unwrap_or("");
        let v2 = *fstype == "cgroup2";
        let cpu = *fstype == "cgroup" && supers.split(',').any(|o| o == "cpu");
        if v2 || cpu {
            out.push(CgroupMount {
                point: PathBuf::from(unescape(point)),
                root: unescape(root),
                v2,
                cpu,
            });
        }
    }
    out
}

/// mountinfo writes space, tab, newline and backslash as octal escapes.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        let value = octal.map(|d| d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0')));
        if let (b'\\', Some(v @ 0..=255)) = (b[i], value) {
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The directory of cgroup `path` under a mount showing `root` at `point`;
/// `None` when the path is outside what the mount shows, or climbs out.
fn join_under(point: &Path, root: &str, path: &str) -> Option<PathBuf> {
    let rel = if root == "/" {
        path
    } else {
        let r = path.strip_prefix(root.trim_end_matches('/'))?;
        // `/ab/x` is not under `/a`.
        if !(r.is_empty() || r.starts_with('/')) {
            return None;
        }
        r
    };
    let mut out = point.to_path_buf();
    for part in rel.split('/').filter(|p| !p.is_empty()) {
        if part == ".." || part == "." {
            return None;
        }
        out.push(part);
    }
    Some(out)
}

/// `cpu.max` ("QUOTA PERIOD", or "max PERIOD" for none): the quota in
/// percent of one core; `None` when there is no quota.
pub fn parse_cpu_max(text: &str) -> Option<f64> {
    let mut f = text.split_whitespace();
    let quota = f.next()?;
    let period: f64 = f.next().map_or(Some(100_000.0), |p| p.parse().ok())?;
    if quota == "max" || period <= 0.0 {
        return None;
    }
    let q: f64 = quota.parse().ok()?;
    (q > 0.0).then(|| q / period * 100.0)
}

/// v1's `cpu.cfs_quota_us` (-1 for none) and `cpu.cfs_period_us`.
pub fn parse_cfs_quota(quota: &str, period: &str) -> Option<f64> {
    let q: i64 = quota.trim().parse().ok()?;
    let p: f64 = period.trim().parse().ok()?;
    (q > 0 && p > 0.0).then(|| q as f64 / p * 100.0)
}

/// `cpu.stat`: (`nr_periods`, `nr_throttled`, throttled µs). v2 says
/// `throttled_usec`, v1 `throttled_time` in ns; `None` without the
/// bandwidth counters (a cgroup without the controller).
pub fn parse_cpu_stat(text: &str) -> Option<(u64, u64, u64)> {
    let (mut periods, mut throttled, mut us) = (None, None, None);
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let (Some(k), Some(v)) = (f.next(), f.next().and_then(|v| v.parse::<u64>().ok())) else {
            continue;
        };
        match k {
            "nr_periods" => periods = Some(v),
            "nr_throttled" => throttled = Some(v),
            "throttled_usec" => us = Some(v),
            "throttled_time" if us.is_none() => us = Some(v / 1000),
            _ => {}
        }
    }
    Some((periods?, throttled?, us.unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
30 25 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
35 30 0:31 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup rw,cpu,cpuacct
36 30 0:32 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:17 - cgroup cgroup rw,memory
";

    #[test]
    fn v1_cpu_hierarchy_is_preferred_where_it_is_mounted() {
        let cg = "12:memory:/lab\n4:cpu,cpuacct:/plumb-lab-1/far\n0::/user.slice\n";
        assert_eq!(
            own_cpu_dir(cg, MOUNTINFO).map(|d| d.1),
            Some(PathBuf::from("/sys/fs/cgroup/cpu,cpuacct/plumb-lab-1/far"))
        );
        // Without a v1 cpu mount, the unified hierarchy.
        let v2_only = MOUNTINFO.replace("rw,cpu,cpuacct", "rw,cpuacct");
        assert_eq!(
            own_cpu_dir(cg, &v2_only),
            Some((
                PathBuf::from("/sys/fs/cgroup/unified"),
                PathBuf::from("/sys/fs/cgroup/unified/user.slice")
            ))
        );
    }

    #[test]
    fn v2_alone_uses_the_unified_mount_and_its_root() {
        let mi = "40 1 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n";
        let cg = "0::/kubepods.slice/pod1/c1\n";
        assert_eq!(
            own_cpu_dir(cg, mi).map(|d| d.1),
            Some(PathBuf::from("/sys/fs/cgroup/kubepods.slice/pod1/c1"))
        );
        // A mount that shows a subtree (a cgroup namespace's bind mount).
        let mi = "40 1 0:30 /kubepods.slice /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            own_cpu_dir(cg, mi).map(|d| d.1),
            Some(PathBuf::from("/sys/fs/cgroup/pod1/c1"))
        );
        // Outside what the mount shows, or climbing out: nothing.
        assert_eq!(own_cpu_dir("0::/other\n", mi), None);
        assert_eq!(own_cpu_dir("0::/kubepods.slice2/c\n", mi), None);
        assert_eq!(own_cpu_dir("0::/kubepods.slice/../x\n", mi), None);
        // No cgroup file system at all.
        assert_eq!(
            own_cpu_dir(cg, "22 1 0:21 / /proc rw - proc proc rw\n"),
            None
        );
    }

    #[test]
    fn mount_points_with_escapes_are_read_back() {
        let mi = "40 1 0:30 / /mnt/my\\040cgroups rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            own_cpu_dir("0::/a\n", mi).map(|d| d.1),
            Some(PathBuf::from("/mnt/my cgroups/a"))
        );
        // An escape past a byte's range is left as written.
        let mi = "40 1 0:30 / /mnt/x\\777y rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            own_cpu_dir("0::/a\n", mi).map(|d| d.1),
            Some(PathBuf::from("/mnt/x\\777y/a"))
        );
    }

    #[test]
    fn the_parent_pid_counts_from_the_last_parenthesis() {
        assert_eq!(parse_ppid("123 (sh) S 45 123 123 0 -1"), Some(45));
        assert_eq!(parse_ppid("9 (a) b (c) R 7 9 9"), Some(7));
        assert_eq!(parse_ppid("9 (x"), None);
        assert_eq!(parse_ppid(""), None);
    }

    #[test]
    fn quotas_in_both_versions() {
        assert_eq!(parse_cpu_max("1000 100000\n"), Some(1.0));
        assert_eq!(parse_cpu_max("250000 100000\n"), Some(250.0));
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_cpu_max("junk 100000\n"), None);
        assert_eq!(parse_cpu_max(""), None);
        assert_eq!(parse_cfs_quota("5000\n", "100000\n"), Some(5.0));
        assert_eq!(parse_cfs_quota("-1\n", "100000\n"), None);
        assert_eq!(parse_cfs_quota("5000\n", "0\n"), None);
    }

    #[test]
    fn counters_in_both_versions() {
        let v2 = "usage_usec 123\nuser_usec 100\nsystem_usec 23\nnr_periods 40\nnr_throttled 38\nthrottled_usec 3700000\nnr_bursts 0\nburst_usec 0\n";
        assert_eq!(parse_cpu_stat(v2), Some((40, 38, 3_700_000)));
        let v1 = "nr_periods 12\nnr_throttled 11\nthrottled_time 987654321\n";
        assert_eq!(parse_cpu_stat(v1), Some((12, 11, 987_654)));
        // usage only (no bandwidth controller): nothing to report.
        assert_eq!(parse_cpu_stat("usage_usec 5\nuser_usec 5\n"), None);
    }

    #[test]
    fn a_change_is_the_most_throttled_groups_difference() {
        let level = |dir: &str, quota_pct, periods, throttled_periods, throttled_us| CgroupLevel {
            dir: PathBuf::from(dir),
            quota_pct,
            periods,
            throttled_periods,
            throttled_us,
        };
        let a = CgroupCpuReading {
            levels: vec![
                level("/pod/c", 200.0, 100, 0, 0),
                level("/pod", 1.0, 100, 90, 9_000_000),
            ],
        };
        let b = CgroupCpuReading {
            levels: vec![
                level("/pod/c", 200.0, 140, 0, 0),
                level("/pod", 1.0, 140, 129, 12_800_000),
            ],
        };
        // The parent's stricter quota ran out; the container's own did not.
        let d = b.since(&a).expect("both read twice");
        assert_eq!(
            (d.quota_pct, d.periods, d.throttled_periods, d.throttled_us),
            (1.0, 40, 39, 3_800_000)
        );
        // Counters never run backwards into a huge number.
        assert_eq!(a.since(&b).map(|d| d.periods), Some(0));
        // A group not read the first time has no change to give.
        let c = CgroupCpuReading {
            levels: vec![level("/other", 5.0, 10, 10, 1)],
        };
        assert_eq!(c.since(&a), None);
    }
}
