//! `plumb why` on what is running: samples the host's TCP connections that
//! match a filter (`--port`, `--peer`, `--pid`, `--conn`) for `--for`
//! seconds and explains each busy one with the same rules, text and `-J`
//! `diagnosis` object as a test. The evidence comes from `plumb-live`; this
//! module only picks connections, times the samples and prints.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use plumb_diagnose::evidence::LinkRate;
use plumb_diagnose::LinkSource;
use plumb_live::evidence::{explain_classed, Context};
use plumb_live::filter::{parse_conn, parse_peer};
use plumb_live::sys::{self, Dumper, Owner};
use plumb_live::{Filter, Role, Track, Tracker};
use plumb_model::Rate;
use plumb_net::cgroup::CgroupCpuReading;

use crate::usage::usage_error;

mod document;

use plumb_record::{LiveDocument, LiveSampling};

/// Connection filters shared by `plumb why` (live) and `plumb top`.
#[derive(Debug, Args, Clone, Default)]
pub struct LiveFilterArgs {
    /// Live: only connections with this peer, ADDR or ADDR:PORT ([V6]:PORT)
    #[arg(long, value_name = "ADDR[:PORT]")]
    pub peer: Option<String>,
    /// Live: only connections of this process
    #[arg(long, value_parser = crate::args::whole::<u32>)]
    pub pid: Option<u32>,
    /// Live: exactly this connection, SRC:SPORT,DST:DPORT (either way round)
    #[arg(long, value_name = "SRC:SPORT,DST:DPORT")]
    pub conn: Option<String>,
}

impl LiveFilterArgs {
    /// Any live filter given.
    pub fn any(&self) -> bool {
        self.peer.is_some() || self.pid.is_some() || self.conn.is_some()
    }

    /// The filter, with `port` (`-p`) matching either end.
    pub fn filter(&self, port: Option<u16>) -> Result<Filter, String> {
        Ok(Filter {
            port,
            peer: self.peer.as_deref().map(parse_peer).transpose()?,
            pid: self.pid,
            conn: self.conn.as_deref().map(parse_conn).transpose()?,
        })
    }
}

/// Sampling period between dumps.
const TICK: Duration = Duration::from_millis(100);

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

/// The link rate for a peer: given, else the route's interface speed.
pub fn link_for_peer(peer: std::net::IpAddr, given: Option<Rate>) -> Option<LinkRate> {
    if let Some(r) = given {
        return Some(LinkRate {
            bps: r.bps(),
            source: LinkSource::Given,
        });
    }
    let ifname = plumb_net::host::route_interface(peer)?;
    let mbps = plumb_net::host::link_speed_mbps(&ifname)?;
    Some(LinkRate {
        bps: mbps as f64 * 1e6,
        source: LinkSource::Interface(ifname),
    })
}

fn describe(tr: &Track, owner: Option<&Owner>) -> String {
    let c = &tr.last;
    let who = owner.map_or("process unknown".to_string(), |o| {
        format!("{} pid {}", o.command, o.pid)
    });
    let d = tr.delta();
    let end = match d.role {
        Role::Sender => "this host sends",
        Role::Receiver => "this host receives",
        Role::Idle => "idle",
    };
    format!(
        "{} -> {} ({who}; {end}; {}{})",
        c.local,
        c.remote,
        plumb_diagnose::rules::human_rate(tr.rate_bps()),
        if tr.closed {
            "; closed while sampled"
        } else {
            ""
        }
    )
}

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
    pub fn cpu(&self, pid: u32) -> Option<plumb_live::evidence::ProcCpu> {
        let a = self.cpu_start.get(&pid)?;
        a.again(pid, usize::MAX)?.since(a)
    }
}

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
    pub fn since(&self, earlier: &CpuMark) -> Option<plumb_live::evidence::ProcCpu> {
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

/// Samples `filter`'s connections for `secs` seconds.
fn sample(filter: &Filter, secs: f64, owners: &mut Owners) -> std::io::Result<Sampled> {
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

/// Runs `plumb why` on live connections.
pub fn run(
    f: &LiveFilterArgs,
    port: Option<u16>,
    secs: Option<f64>,
    link: Option<Rate>,
    json_out: bool,
    report: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    let filter = match f.filter(port) {
        Ok(x) => x,
        Err(m) => return Ok(usage_error(m)),
    };
    let secs = secs.unwrap_or(3.0);
    if !(0.2..=3600.0).contains(&secs) {
        return Ok(usage_error(format!(
            "--for {secs}: give 0.2 to 3600 seconds"
        )));
    }
    let mut owners = Owners::new();
    let sampled = match sample(&filter, secs, &mut owners) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("plumb: cannot read the host's TCP connections (sock_diag): {e}");
            return Ok(ExitCode::from(1));
        }
    };
    let (tracker, owner_of) = (&sampled.tracker, &sampled.owner_of);
    if tracker.tracks.is_empty() {
        eprintln!(
            "plumb: no TCP connection matches {} (sampled {secs} s)",
            describe_filter(&filter)
        );
        return Ok(ExitCode::from(1));
    }
    let mut tracks: Vec<&Track> = tracker.tracks.iter().collect();
    tracks.sort_by(|a, b| b.rate_bps().total_cmp(&a.rate_bps()));
    let mut out = std::io::stdout().lock();
    let mut conns = Vec::new();
    let mut text = String::new();
    // One end reading per process, however many of its connections match.
    let mut cpus: HashMap<u32, Option<plumb_live::evidence::ProcCpu>> = HashMap::new();
    // Which end opened each connection: read once, after the sampling.
    let mut listeners = plumb_live::sys::Listeners::default();
    // This host's settings, once: a fix for this end raises what it has.
    let sysctls = plumb_net::host::tcp_sysctls();
    for tr in &tracks {
        let owner = owner_of.get(&tr.first.cookie).cloned();
        let cpu = owner
            .as_ref()
            .and_then(|o| *cpus.entry(o.pid).or_insert_with(|| sampled.cpu(o.pid)));
        let ctx = Context {
            link: link_for_peer(tr.last.remote.ip(), link),
            cpu,
            pid: owner.as_ref().map(|o| o.pid),
            opened: listeners.opened(tr.last.local),
            sysctls: sysctls.clone(),
        };
        let mut id = document::identity(tr, owner.as_ref());
        if tr.samples < 2 {
            let msg = "closed before a second sample: nothing to measure";
            text += &format!("== {} ==\n{msg}\n\n", describe(tr, owner.as_ref()));
            id.closed = true;
            id.note = Some(msg.into());
            conns.push(id);
            continue;
        }
        let (mut d, ev, class) = explain_classed(tr, &ctx);
        if tr.closed {
            d.unknown.push(format!(
                "the rest of the transfer: the connection closed {:.1} s into sampling",
                tr.t_last
            ));
        }
        if owners.denied() > 0 && owner.is_none() {
            d.unknown.push(format!(
                "the owning process: {} processes' sockets could not be read (run as root)",
                owners.denied()
            ));
        }
        text += &format!(
            "== {} ==\n{}\n",
            describe(tr, owner.as_ref()),
            plumb_report::diagnosis::render(&d, &ev)
        );
        id.closed = tr.closed;
        id.rate_bps = Some(tr.rate_bps());
        id.samples = Some(tr.samples);
        id.class = Some(class.class);
        id.class_why = Some(class.why);
        // Nothing to explain: an idle connection, or one whose class is the
        // answer, has no limit, which is not the same as an unexplained one.
        d.nothing_to_explain |= id.this_host == Role::Idle.name();
        id.diagnosis = Some(d);
        conns.push(id);
    }
    let first = conns.iter().find_map(|c| c.diagnosis.clone());
    let desc = describe_filter(&filter);
    let doc = LiveDocument {
        live: LiveSampling {
            filter: desc.clone(),
            seconds: secs,
        },
        connections: conns,
        diagnosis: first,
    };
    if let Some(path) = report {
        // The page is drawn from the document -J prints.
        let input = plumb_report::html::Input {
            name: format!("running connections, {desc}"),
            doc: plumb_report::input::document_of(&doc).map_err(anyhow::Error::msg)?,
        };
        crate::report::write_for(path, vec![input])?;
    }
    if json_out {
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        write!(out, "{text}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The filter in words, for messages.
pub fn describe_filter(f: &Filter) -> String {
    let mut v = Vec::new();
    if let Some(p) = f.port {
        v.push(format!("--port {p}"));
    }
    if let Some((ip, p)) = f.peer {
        v.push(match p {
            Some(p) => format!("--peer {}", std::net::SocketAddr::new(ip, p)),
            None => format!("--peer {ip}"),
        });
    }
    if let Some(p) = f.pid {
        v.push(format!("--pid {p}"));
    }
    if let Some((a, b)) = f.conn {
        v.push(format!("--conn {a},{b}"));
    }
    if v.is_empty() {
        "any connection".into()
    } else {
        v.join(" ")
    }
}
