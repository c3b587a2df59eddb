//! The host side: the NETLINK_SOCK_DIAG socket (through `netlink-sys`, so
//! no `unsafe` here either), the socket-inode → process map from
//! `/proc/*/fd` (as `ss -p` builds it), and per-thread CPU from
//! `/proc/PID/task/*/schedstat`.

use std::collections::HashMap;
use std::io;

use netlink_sys::{protocols::NETLINK_SOCK_DIAG, Socket, SocketAddr};

use crate::diag::{dump_request, parse, Conn, FAMILIES};

/// An open sock_diag socket, reused across samples.
pub struct Dumper {
    sock: Socket,
    buf: Vec<u8>,
    seq: u32,
    /// Malformed messages skipped so far.
    pub bad: usize,
}

impl Dumper {
    /// Opens the socket.
    pub fn open() -> io::Result<Dumper> {
        let mut sock = Socket::new(NETLINK_SOCK_DIAG)?;
        sock.bind_auto()?;
        sock.connect(&SocketAddr::new(0, 0))?;
        Ok(Dumper {
            sock,
            buf: vec![0u8; 1 << 16],
            seq: 0,
            bad: 0,
        })
    }

    /// Every TCP connection on the host (this network namespace), IPv4 and IPv6.
    pub fn dump(&mut self) -> io::Result<Vec<Conn>> {
        let mut all = Vec::new();
        for fam in FAMILIES {
            self.dump_family(fam, |_raw| {}, &mut all)?;
        }
        Ok(all)
    }

    /// One family's dump; `raw` sees every receive buffer (for fixtures).
    pub fn dump_family(
        &mut self,
        family: u8,
        mut raw: impl FnMut(&[u8]),
        out: &mut Vec<Conn>,
    ) -> io::Result<()> {
        self.seq = self.seq.wrapping_add(1);
        let req = dump_request(family, self.seq);
        self.sock.send(&req, 0)?;
        // A dump ends with NLMSG_DONE; bounded in case the kernel misbehaves.
        for _ in 0..1_000_000 {
            let n = self.sock.recv(&mut &mut self.buf[..], 0)?;
            if n == 0 {
                break;
            }
            let chunk = &self.buf[..n];
            raw(chunk);
            let p = parse(chunk);
            self.bad += p.bad;
            out.extend(p.conns);
            if let Some(e) = p.error {
                return Err(io::Error::from_raw_os_error(-e));
            }
            if p.done {
                return Ok(());
            }
        }
        Ok(())
    }
}

/// A process that holds a socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// Process id.
    pub pid: u32,
    /// Its command name (`/proc/PID/comm`).
    pub command: String,
}

/// Socket inode → owning process, from every `/proc/PID/fd` this process may
/// read. Processes it may not read are counted in the second value.
pub fn socket_owners() -> (HashMap<u32, Owner>, usize) {
    let mut map = HashMap::new();
    let mut denied = 0;
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return (map, 0);
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let fds = match std::fs::read_dir(p.path().join("fd")) {
            Ok(f) => f,
            Err(e) => {
                if e.kind() == io::ErrorKind::PermissionDenied {
                    denied += 1;
                }
                continue;
            }
        };
        let mut command: Option<String> = None;
        for fd in fds.flatten() {
            let Ok(target) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let Some(ino) = target
                .to_str()
                .and_then(|t| t.strip_prefix("socket:["))
                .and_then(|t| t.strip_suffix(']'))
                .and_then(|t| t.parse::<u32>().ok())
            else {
                continue;
            };
            let cmd = command.get_or_insert_with(|| {
                std::fs::read_to_string(p.path().join("comm"))
                    .map(|s| s.trim().to_string())
                    .unwrap_or_default()
            });
            map.entry(ino).or_insert(Owner {
                pid,
                command: cmd.clone(),
            });
        }
    }
    (map, denied)
}

/// One thread's CPU counters: (tid, ns on a CPU, ns runnable waiting for one).
pub type ThreadCpu = (u32, u64, u64);

/// Per-thread CPU counters of a process.
pub fn thread_cpu(pid: u32) -> Option<Vec<ThreadCpu>> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut v = Vec::new();
    for t in dir.flatten() {
        let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(s) = std::fs::read_to_string(t.path().join("schedstat")) else {
            continue;
        };
        let mut it = s.split_whitespace().map(|x| x.parse::<u64>().ok());
        if let (Some(Some(run)), Some(Some(wait))) = (it.next(), it.next()) {
            v.push((tid, run, wait));
        }
    }
    Some(v)
}

/// CPU used between two [`thread_cpu`] readings `secs` apart.
pub fn cpu_between(
    a: &[ThreadCpu],
    b: &[ThreadCpu],
    secs: f64,
) -> Option<crate::evidence::ProcCpu> {
    if secs <= 0.0 {
        return None;
    }
    let before: HashMap<u32, (u64, u64)> = a.iter().map(|(t, r, w)| (*t, (*r, *w))).collect();
    let mut total = 0u64;
    let mut best = (0u64, 0u64);
    for (t, r, w) in b {
        let (r0, w0) = before.get(t).copied().unwrap_or((*r, *w));
        let (dr, dw) = (r.saturating_sub(r0), w.saturating_sub(w0));
        total += dr;
        if dr + dw > best.0 + best.1 {
            best = (dr, dw);
        }
    }
    let pct = |ns: u64| ns as f64 / 1e9 / secs * 100.0;
    Some(crate::evidence::ProcCpu {
        process_pct: pct(total),
        thread_cpu_pct: pct(best.0),
        thread_wait_pct: pct(best.1),
    })
}
