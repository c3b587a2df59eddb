//! Control groups that hold the processes a lab starts, so that ending the
//! lab ends every one of them — grandchildren and programs that daemonised
//! included — before its namespaces go.
//!
//! Owns: finding the hierarchies (cgroup v2 wherever it is mounted: at
//! `/sys/fs/cgroup`, or at `/sys/fs/cgroup/unified` in the hybrid layout; a
//! v1 `cpu` hierarchy for a CPU quota where v2 has no cpu controller),
//! creating a group, killing everything in it (`cgroup.kill`, or SIGKILL to
//! each listed process where that file is missing), removing it, and, where
//! no v2 hierarchy can be used, killing the processes inside a network
//! namespace instead.
//!
//! Processes join a group between fork and exec
//! ([`sys::join_cgroups_on_exec`]), so a child cannot fork before it is in.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::sys;

/// How long killing and removing one group may take. Killed processes
/// leave their group when the kernel has torn them down, which takes
/// milliseconds; this bound only stops a hang.
const REMOVE_LIMIT: Duration = Duration::from_secs(3);

/// The hierarchies this machine mounts, from `/proc/self/mountinfo`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hierarchies {
    /// Mount point of cgroup v2, if mounted read-write.
    pub v2: Option<PathBuf>,
    /// Mount point of a v1 hierarchy carrying the `cpu` controller.
    pub v1_cpu: Option<PathBuf>,
}

impl Hierarchies {
    /// Reads this process's mount table.
    pub fn find() -> Hierarchies {
        fs::read_to_string("/proc/self/mountinfo")
            .map(|t| Hierarchies::parse(&t))
            .unwrap_or_default()
    }

    /// Parses mountinfo text (proc(5)): field 5 is the mount point, then
    /// optional fields up to `-`, then the file system type, the source and
    /// the super-block options.
    pub fn parse(mountinfo: &str) -> Hierarchies {
        let mut h = Hierarchies::default();
        for line in mountinfo.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            let Some(dash) = fields.iter().position(|f| *f == "-") else {
                continue;
            };
            let (Some(point), Some(opts), Some(fstype), Some(super_opts)) = (
                fields.get(4),
                fields.get(5),
                fields.get(dash + 1),
                fields.get(dash + 3),
            ) else {
                continue;
            };
            let rw = opts.split(',').any(|o| o == "rw");
            let point = PathBuf::from(point.replace("\\040", " "));
            match *fstype {
                "cgroup2" if rw && h.v2.is_none() => h.v2 = Some(point),
                "cgroup"
                    if rw && h.v1_cpu.is_none() && super_opts.split(',').any(|o| o == "cpu") =>
                {
                    h.v1_cpu = Some(point);
                }
                _ => {}
            }
        }
        h
    }
}

/// A group this process made, by its directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cgroup {
    dir: PathBuf,
}

impl Cgroup {
    /// Creates the group `dir` (its parent must exist; an existing group is
    /// an error, so two labs never share one).
    pub fn create(dir: PathBuf) -> io::Result<Cgroup> {
        fs::create_dir(&dir)?;
        Ok(Cgroup { dir })
    }

    /// The group's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file a process writes to join (see [`sys::join_cgroups_on_exec`]).
    pub fn procs_file(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// Processes in the group now.
    pub fn pids(&self) -> Vec<u32> {
        pids_in(&self.dir)
    }
}

fn pids_in(dir: &Path) -> Vec<u32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Kills every process in the group at `dir` and removes it, waiting (at
/// most 3 s) until the kernel lets it go. A group that does not
/// exist is already done.
pub fn kill_and_remove(dir: &Path) -> io::Result<()> {
    let t0 = Instant::now();
    let kill_file = dir.join("cgroup.kill");
    loop {
        if !dir.exists() {
            return Ok(());
        }
        // cgroup.kill (Linux 5.14) kills atomically, forks in flight
        // included; elsewhere each listed process gets SIGKILL, and the loop
        // catches what was forked meanwhile.
        if fs::write(&kill_file, "1").is_err() {
            for pid in pids_in(dir) {
                let _ = sys::send_signal(pid, libc::SIGKILL);
            }
        }
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && t0.elapsed() < REMOVE_LIMIT => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("removing cgroup {}: {e}", dir.display()),
                ))
            }
        }
    }
}

/// Kills every process (but this one) whose network namespace is the one
/// bound at `ns_path` (e.g. `/run/netns/NAME`), until none is left or 3 s
/// have passed; returns how many were signalled. The
/// fallback where no cgroup v2 hierarchy can hold a lab's processes.
pub fn kill_in_netns(ns_path: &Path) -> io::Result<usize> {
    let ino = fs::metadata(ns_path)?.ino();
    let want = format!("net:[{ino}]");
    let me = std::process::id();
    let t0 = Instant::now();
    let mut signalled = 0;
    loop {
        let pids: Vec<u32> = fs::read_dir("/proc")?
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| pid != me)
            .filter(|pid| {
                fs::read_link(format!("/proc/{pid}/ns/net"))
                    .is_ok_and(|l| l.as_os_str() == want.as_str())
            })
            .collect();
        if pids.is_empty() || t0.elapsed() > REMOVE_LIMIT {
            return Ok(signalled);
        }
        for pid in pids {
            if sys::send_signal(pid, libc::SIGKILL).is_ok() {
                signalled += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hybrid_and_unified_layouts() {
        let hybrid = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
            32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
            33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n\
            41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        let h = Hierarchies::parse(hybrid);
        assert_eq!(h.v2.as_deref(), Some(Path::new("/sys/fs/cgroup/unified")));
        assert_eq!(h.v1_cpu.as_deref(), Some(Path::new("/sys/fs/cgroup/cpu")));

        let unified =
            "29 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
        let h = Hierarchies::parse(unified);
        assert_eq!(h.v2.as_deref(), Some(Path::new("/sys/fs/cgroup")));
        assert_eq!(h.v1_cpu, None);

        let read_only = "29 23 0:26 / /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n\
            32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";
        let h = Hierarchies::parse(read_only);
        assert_eq!(h.v2, None, "a read-only mount cannot hold a group");
        assert_eq!(
            h.v1_cpu.as_deref(),
            Some(Path::new("/sys/fs/cgroup/cpu,cpuacct"))
        );
        assert_eq!(Hierarchies::parse("garbage\n\n- -"), Hierarchies::default());
    }

    #[test]
    fn removing_a_missing_group_is_done() {
        assert!(kill_and_remove(Path::new("/nonexistent/plumb-cgroup-test")).is_ok());
    }
}
