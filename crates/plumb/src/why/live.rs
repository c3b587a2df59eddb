//! `plumb why` on what is running: samples the host's TCP connections that
//! match a filter (`--port`, `--peer`, `--pid`, `--conn`) for `--for`
//! seconds and explains each busy one with the same rules, text and `-J`
//! `diagnosis` object as a test. The evidence comes from `plumb-live`; this
//! module only picks connections, times the samples and prints.

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use plumb_live::evidence::{explain_classed, Context};
use plumb_live::sys::{Dumper, Owner};
use plumb_live::{Filter, Role, Track, Tracker};
use plumb_model::Rate;

use crate::common::cpu_mark::CpuMark;
use crate::common::link;
use crate::common::live_flags::LiveFilterArgs;
use crate::common::report_page;
use crate::usage::usage_error;
use plumb_live::owners::Owners;

mod document;

use plumb_record::{Document, LiveSampling};

/// Sampling period between dumps.
const TICK: Duration = Duration::from_millis(100);

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
            link: link::for_peer(tr.last.remote.ip(), link),
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
    let doc = Document {
        live: Some(LiveSampling {
            filter: desc.clone(),
            seconds: secs,
        }),
        connections: Some(conns),
        diagnosis: Some(first),
        ..Document::default()
    };
    if let Some(path) = report {
        // The page is drawn from the document -J prints.
        let input = plumb_report::html::Input {
            name: format!("running connections, {desc}"),
            doc: doc.clone(),
        };
        report_page::write_for(path, vec![input])?;
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
