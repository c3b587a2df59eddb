//! The host side: the NETLINK_SOCK_DIAG socket (through `netlink-sys`, so
//! no `unsafe` here either), the socket-inode → process map from
//! `/proc/*/fd` (as `ss -p` builds it), and per-thread CPU from
//! `/proc/PID/task/*/schedstat`.

use std::collections::HashMap;
use std::io;

use netlink_sys::{protocols::NETLINK_SOCK_DIAG, Socket, SocketAddr};

use crate::diag::{
    dump_request, dump_request_both, dumped_state, ext, listeners_request, lookup_request, walk,
    Answer, Conn, Query, FAMILIES,
};

/// An open sock_diag socket, reused across samples.
pub struct Dumper {
    sock: Socket,
    buf: Vec<u8>,
    seq: u32,
    /// Malformed messages skipped so far.
    pub bad: usize,
    /// The attributes each dump asks for ([`ext`] bits; all by default).
    pub ext: u8,
    /// Only sockets with this port at either end, filtered by the kernel.
    pub port: Option<u16>,
    /// Both families in one request ([`dump_request_both`]): the kernel
    /// walks its socket table once, not once per family. Cleared if the
    /// kernel refuses it.
    both: bool,
    /// Lookup requests being built ([`Dumper::lookup`]).
    req: Vec<u8>,
}

/// Lookups per `send`: the kernel queues every answer before the first
/// `recv`, and a reply's buffer costs the socket's receive budget about
/// 1.5 KiB of its 208 KiB default, so a batch stays well inside it.
const LOOKUP_BATCH: usize = 32;

/// The receive buffer. The kernel fills one batch per `recv`, sized to the
/// largest `recv` seen but capped near 32 KiB, so a larger buffer saves no
/// system calls; twice the cap leaves room should a kernel send more.
const RECV_BUF: usize = 1 << 16;

impl Dumper {
    /// Opens the socket.
    pub fn open() -> io::Result<Dumper> {
        let mut sock = Socket::new(NETLINK_SOCK_DIAG)?;
        sock.bind_auto()?;
        sock.connect(&SocketAddr::new(0, 0))?;
        Ok(Dumper {
            sock,
            buf: vec![0u8; RECV_BUF],
            seq: 0,
            bad: 0,
            ext: ext::ALL,
            port: None,
            both: true,
            req: Vec::with_capacity(LOOKUP_BATCH * 72),
        })
    }

    /// Every TCP connection on the host (this network namespace), IPv4 and
    /// IPv6, that the port filter lets through.
    pub fn dump(&mut self) -> io::Result<Vec<Conn>> {
        let mut all = Vec::new();
        self.dump_into(&mut all)?;
        Ok(all)
    }

    /// [`Dumper::dump`] into `out` (cleared first), so a sampler can reuse
    /// one vector across samples.
    pub fn dump_into(&mut self, out: &mut Vec<Conn>) -> io::Result<()> {
        out.clear();
        self.dump_each(|c| out.push(*c))
    }

    /// [`Dumper::dump`] handing each socket to `each` as its receive buffer
    /// is parsed: nothing holds the whole dump (at 20,000 sockets a vector
    /// of them is 13 MB).
    pub fn dump_each(&mut self, mut each: impl FnMut(&Conn)) -> io::Result<()> {
        if self.both {
            self.seq = self.seq.wrapping_add(1);
            let q = Query {
                family: 0,
                ext: self.ext,
                port: self.port,
            };
            let mut got = 0usize;
            let req = dump_request_both(&q, self.seq);
            match self.run(&req, &mut |_| {}, &mut |c| {
                got += 1;
                each(c);
            }) {
                Ok(()) => return Ok(()),
                // A kernel without the original request (or one that
                // refuses it) is asked family by family from now on.
                Err(e) if e.raw_os_error().is_some() && got == 0 => self.both = false,
                Err(e) => return Err(e),
            }
        }
        for fam in FAMILIES {
            self.seq = self.seq.wrapping_add(1);
            let q = Query {
                family: fam,
                ext: self.ext,
                port: self.port,
            };
            self.run(&dump_request(&q, self.seq), &mut |_| {}, &mut each)?;
        }
        Ok(())
    }

    /// The local addresses of every listening TCP socket, both families: a
    /// connection whose local port one of them holds was accepted here
    /// ([`accepted_here`]).
    pub fn listeners(&mut self) -> io::Result<Vec<std::net::SocketAddr>> {
        self.seq = self.seq.wrapping_add(1);
        let mut out = Vec::new();
        let req = listeners_request(self.seq);
        self.run(&req, &mut |_| {}, &mut |c| out.push(c.local))?;
        Ok(out)
    }

    /// One family's dump; `raw` sees every receive buffer (for fixtures).
    pub fn dump_family(
        &mut self,
        family: u8,
        mut raw: impl FnMut(&[u8]),
        out: &mut Vec<Conn>,
    ) -> io::Result<()> {
        self.seq = self.seq.wrapping_add(1);
        let q = Query {
            family,
            ext: self.ext,
            port: self.port,
        };
        self.run(&dump_request(&q, self.seq), &mut raw, &mut |c| out.push(*c))
    }

    /// Reads again each socket of `conns` (as an earlier dump saw them) by
    /// its 4-tuple and cookie, without walking the socket table: each one
    /// still open is appended to `out`, the cookie of each one gone (closed,
    /// in TIME_WAIT, or its 4-tuple reused by another socket) to `gone`. Both are cleared
    /// first. An error other than "no such socket" (a kernel that cannot
    /// look one socket up) is returned.
    pub fn lookup<'a>(
        &mut self,
        conns: impl IntoIterator<Item = &'a Conn>,
        out: &mut Vec<Conn>,
        gone: &mut Vec<u64>,
    ) -> io::Result<()> {
        out.clear();
        gone.clear();
        let mut batch: Vec<u64> = Vec::with_capacity(LOOKUP_BATCH);
        let mut it = conns.into_iter().peekable();
        while it.peek().is_some() {
            self.req.clear();
            batch.clear();
            let first = self.seq.wrapping_add(1);
            while batch.len() < LOOKUP_BATCH {
                let Some(c) = it.next() else { break };
                self.seq = self.seq.wrapping_add(1);
                let last = batch.len() + 1 == LOOKUP_BATCH || it.peek().is_none();
                lookup_request(c, self.ext, self.seq, last, &mut self.req);
                batch.push(c.cookie);
            }
            self.sock.send(&self.req, 0)?;
            let last = self.seq;
            // Answers come in order; the last request's acknowledgement
            // (or its error) ends them. Bounded in case the kernel misbehaves.
            let mut done = false;
            let mut failed = None;
            for _ in 0..4 * LOOKUP_BATCH + 4 {
                let n = self.sock.recv(&mut &mut self.buf[..], 0)?;
                if n == 0 {
                    break;
                }
                self.bad += walk(&self.buf[..n], |seq, a| {
                    let k = seq.wrapping_sub(first) as usize;
                    match a {
                        Answer::Conn(c) if dumped_state(c.state) => out.push(c),
                        Answer::Conn(c) => gone.push(c.cookie),
                        Answer::Error(e) if GONE.contains(&e) => {
                            if let Some(&cookie) = batch.get(k) {
                                gone.push(cookie);
                            }
                        }
                        Answer::Error(e) => failed = Some(e),
                        Answer::Ack | Answer::Done => {}
                    }
                    if seq == last && matches!(a, Answer::Ack | Answer::Error(_)) {
                        done = true;
                    }
                });
                if done {
                    break;
                }
            }
            if let Some(e) = failed {
                return Err(io::Error::from_raw_os_error(-e));
            }
        }
        Ok(())
    }

    /// Sends one dump request and hands each socket of its answer to `each`.
    fn run(
        &mut self,
        req: &[u8],
        raw: &mut dyn FnMut(&[u8]),
        each: &mut dyn FnMut(&Conn),
    ) -> io::Result<()> {
        self.sock.send(req, 0)?;
        // A dump ends with NLMSG_DONE; bounded in case the kernel misbehaves.
        for _ in 0..1_000_000 {
            let n = self.sock.recv(&mut &mut self.buf[..], 0)?;
            if n == 0 {
                break;
            }
            let chunk = &self.buf[..n];
            raw(chunk);
            let (mut done, mut error) = (false, None);
            self.bad += walk(chunk, |_, a| match a {
                Answer::Conn(c) => each(&c),
                Answer::Done => done = true,
                Answer::Error(e) => error = Some(e),
                Answer::Ack => {}
            });
            if let Some(e) = error {
                return Err(io::Error::from_raw_os_error(-e));
            }
            if done {
                return Ok(());
            }
        }
        Ok(())
    }
}

/// The host's listening TCP sockets, read on a socket of their own when
/// first asked about ([`Dumper::listeners`]) and kept until
/// [`Listeners::forget`]: which end opened a connection.
#[derive(Debug, Default)]
pub struct Listeners {
    /// `Some(None)`: they could not be read.
    read: Option<Option<Vec<std::net::SocketAddr>>>,
}

impl Listeners {
    /// Whether this end opened the connection at `local`
    /// ([`crate::diag::opened_here`]); `None` when the listeners cannot be
    /// read.
    pub fn opened(&mut self, local: std::net::SocketAddr) -> Option<bool> {
        let l = self
            .read
            .get_or_insert_with(|| Dumper::open().ok()?.listeners().ok())
            .as_deref()?;
        Some(crate::diag::opened_here(local, l))
    }

    /// Reads them again when next asked (a new interval).
    pub fn forget(&mut self) {
        self.read = None;
    }
}

/// The kernel's answers to a lookup of a socket that is gone: `ENOENT`,
/// or `ESTALE` (kernels before 4.18 for a cookie of an earlier socket).
const GONE: [i32; 2] = [-2, -116];

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

/// Per-thread CPU counters of a process of at most `cap` threads; `None`
/// for a larger one (listing its threads is cheap, reading a file per
/// thread every second is not).
pub fn thread_cpu(pid: u32, cap: usize) -> Option<Vec<ThreadCpu>> {
    let tasks: Vec<std::fs::DirEntry> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
        .take(cap.saturating_add(1))
        .collect();
    if tasks.len() > cap {
        return None;
    }
    let mut v = Vec::new();
    for t in tasks {
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

/// When process `pid` started, in clock ticks since boot (`/proc/PID/stat`
/// field 22): a pid reused by a new process has another.
pub fn process_start(pid: u32) -> Option<u64> {
    parse_start(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Field 22 of a `/proc/PID/stat` line. The command (field 2) is in
/// parentheses and may hold spaces and parentheses itself, so the fields
/// are counted from the last `)`.
pub fn parse_start(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After the command: state is field 3, so start time is the 20th here.
    rest.split_whitespace().nth(19)?.parse().ok()
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
        quota_pct: None,
        throttled_pct: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_is_field_22_whatever_the_command() {
        let line =
            "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 98765 1234 56\n";
        assert_eq!(parse_start(line), Some(98_765));
        assert_eq!(parse_start("4242 (x) S 1 2"), None);
        assert_eq!(parse_start("no parenthesis"), None);
        // This process's own.
        assert!(process_start(std::process::id()).is_some_and(|t| t > 0));
    }
}
