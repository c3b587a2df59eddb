//! `plumb top`: the host's TCP connections, busiest first, refreshed every
//! interval, each with the limit named now (from the same evidence as
//! `plumb why`, the owning process's CPU over the interval included). A full-screen view when stdout
//! is a terminal (q or Ctrl-C quits and the terminal is always restored), a
//! plain table per interval otherwise, or NDJSON with `--json`. The rates
//! are deltas between two readings of a connection. The connections busy
//! now or lately are read every interval by a lookup of each; the full
//! sock_diag dump that finds the others (and new ones) runs as often as its
//! measured CPU cost fits `--scan-budget` ([`plumb_live::scan`]).

use std::collections::hash_map::Entry as Slot;
use std::collections::{HashMap, HashSet};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use plumb_diagnose::evidence::LinkRate;
use plumb_live::evidence::{explain_classed, Context, ProcCpu};
use plumb_live::scan::{Schedule, DEFAULT_BUDGET};
use plumb_live::sys::Dumper;
use plumb_live::sys::Owner;
use plumb_live::{Conn, Filter, Role, Track};
use plumb_model::Rate;
use plumb_record::class::FlowClass;
use plumb_record::TopLine;
use plumb_report::format::size_compact;

use crate::common::live_flags::LiveFilterArgs;
use crate::usage::usage_error;
use plumb_live::cpu_mark::CpuMark;
use plumb_live::link;
use plumb_live::owners::Owners;

/// Flags of `plumb top`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  plumb top                      full screen; q or Ctrl-C quits\n  plumb top -n 2 --json -p 873   two intervals of NDJSON for port 873"
)]
pub struct TopArgs {
    /// Only connections with this port at either end
    #[arg(short = 'p', long, value_parser = crate::args::whole::<u16>)]
    pub port: Option<u16>,
    /// Connection filters
    #[command(flatten)]
    pub live: LiveFilterArgs,
    /// Stop after N intervals
    #[arg(short = 'n', long = "count", value_parser = crate::args::whole::<u64>)]
    pub count: Option<u64>,
    /// Seconds between refreshes
    #[arg(short = 'i', long, default_value_t = 1.0, value_parser = crate::args::seconds)]
    pub interval: f64,
    /// One JSON object per connection read in the interval (newline-delimited):
    /// every connection on a full scan, the busy ones between
    #[arg(long, short = 'J')]
    pub json: bool,
    /// CPU for full scans of the socket table, % of one core: busy
    /// connections are read every interval, the full scan that finds the
    /// others runs as often as its cost allows (100: every interval)
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_BUDGET * 100.0, value_parser = crate::args::number)]
    pub scan_budget: f64,
    /// A full scan every SECS seconds whatever it costs (tests)
    #[arg(long, value_name = "SECS", hide = true, value_parser = crate::args::seconds)]
    pub scan_every: Option<f64>,
    /// The bottleneck link's rate (1g, 100M); else the route's interface speed
    #[arg(long, value_parser = crate::args::rate)]
    pub link: Option<Rate>,
}

/// What rows look up beyond the socket: owners, link rates by peer, and
/// the CPU counters of the processes that own busy connections.
struct Lookups {
    owners: Owners,
    links: HashMap<std::net::IpAddr, Option<LinkRate>>,
    link: Option<Rate>,
    /// CPU marks taken last interval, by pid: only of processes that owned a
    /// busy connection then, so an idle host's thousands of owners cost
    /// nothing, and a process busy two intervals running has CPU evidence
    /// from its second on.
    cpu_before: HashMap<u32, CpuMark>,
    /// This interval's marks (one per process, however many connections it
    /// has; `None` where its `/proc` entry could not be read).
    cpu_now: HashMap<u32, Option<CpuMark>>,
    /// Time spent marking this interval, s.
    marking_secs: f64,
    /// The host's listeners this interval, read when a row first needs them.
    listeners: plumb_live::sys::Listeners,
}

/// Processes with more threads than this get no CPU evidence in `top`:
/// marking one reads a file per thread every interval.
const MAX_MARKED_THREADS: usize = 512;

impl Lookups {
    /// `pid`'s CPU since last interval, marking it for the next; `fresh`
    /// when the connection asking was read last interval too, so that its
    /// rate and this CPU cover the same second (one found busy by a scan
    /// after seconds unread would pair a long rate with one second of CPU).
    fn cpu(&mut self, pid: u32, fresh: bool) -> Option<ProcCpu> {
        // Wall time: the thread's own CPU figure moves only at a tick or a
        // switch, coarser than a few /proc reads; they spend it on the CPU.
        let t0 = Instant::now();
        let before = self.cpu_before.get(&pid);
        let now = self
            .cpu_now
            .entry(pid)
            .or_insert_with(|| match before {
                Some(b) => b.again(pid, MAX_MARKED_THREADS),
                None => CpuMark::read(pid, MAX_MARKED_THREADS),
            })
            .as_ref();
        let cpu = now
            .zip(before.filter(|_| fresh))
            .and_then(|(n, b)| n.since(b));
        // Kept apart from the interval's cost, which paces the scans: it is
        // neither a scan's nor a lookup's.
        self.marking_secs += t0.elapsed().as_secs_f64();
        cpu
    }

    /// Ends an interval: its marks are the next one's starting points.
    fn next_interval(&mut self) {
        self.listeners.forget();
        self.cpu_before.clear();
        self.cpu_before
            .extend(self.cpu_now.drain().filter_map(|(pid, m)| Some((pid, m?))));
    }
}

/// One connection's row for one interval: the numbers, not yet text, so a
/// row nobody prints (past the screen's height) costs no formatting.
#[derive(Clone, Copy)]
struct Row {
    rate: f64,
    role: Role,
    retrans: u64,
    limit: Option<plumb_record::diagnosis::Limit>,
    /// The class over the interval (`None` for an idle row, which is not
    /// weighed).
    class: Option<FlowClass>,
}

/// A row for `now`, seen `prev` at `tp`. An idle connection (most of a busy
/// host's) is a subtraction and a look at its TCP state: no track, no rules,
/// no link lookup. A busy one, or a sender stuck in retransmission timeouts,
/// gets the same diagnosis as `plumb why`.
fn row(prev: &Conn, tp: f64, now: &Conn, t: f64, fresh: bool, look: &mut Lookups) -> Row {
    let (sent, received) = plumb_live::track::moved(prev, now);
    let secs = t - tp;
    let bps = |n: u64| {
        if secs > 0.0 {
            n as f64 * 8.0 / secs
        } else {
            0.0
        }
    };
    let role = plumb_live::track::role_of(bps(sent), bps(received));
    let retrans = {
        let r = |c: &Conn| c.tcp.map_or(0, |t| t.total_retrans);
        u64::from(r(now).saturating_sub(r(prev)))
    };
    let mut out = Row {
        rate: bps(sent).max(bps(received)),
        role,
        retrans,
        limit: None,
        class: None,
    };
    // A sender stuck in retransmission timeouts moves nothing either, but
    // it is not idle: its track says so.
    if role == Role::Idle && !plumb_live::track::timed_out(prev, now) {
        return out;
    }
    let mut tr = Track::new(*prev, tp);
    tr.update(*now, t);
    out.role = tr.delta().role;
    if out.role == Role::Idle {
        return out;
    }
    if look.links.len() > 4096 {
        look.links.clear();
    }
    let link = look.link;
    let pid = look.owners.get(now.inode).map(|o| o.pid);
    let cpu = pid.and_then(|p| look.cpu(p, fresh));
    let ctx = Context {
        // One route lookup per peer, not per connection and interval.
        link: look
            .links
            .entry(now.remote.ip())
            .or_insert_with(|| link::for_peer(now.remote.ip(), link))
            .clone(),
        cpu,
        pid,
        opened: look.listeners.opened(now.local),
        // top shows each row's limit, not its fixes.
        sysctls: Default::default(),
    };
    let (d, _, class) = explain_classed(&tr, &ctx);
    out.limit = d.limit;
    out.class = Some(class.class);
    out
}

/// The window a row shows: the one this host advertises when it receives,
/// else the peer's.
fn window(c: &Conn, role: Role) -> Option<u32> {
    let t = c.tcp?;
    match role {
        Role::Receiver => t.rcv_wnd,
        _ => t.snd_wnd,
    }
}

/// Writes a row as one NDJSON line (the keys `plumb top --json` documents).
fn write_json(
    out: &mut impl Write,
    r: &Row,
    c: &Conn,
    owner: Option<&Owner>,
    interval: u64,
    full_scan: bool,
) -> std::io::Result<()> {
    let tcp = c.tcp;
    // Without TCP_INFO (a dump that carried none) the RTT, congestion
    // window and window are unknown (`null`), not zero.
    let line = TopLine {
        interval,
        local: c.local.to_string(),
        remote: c.remote.to_string(),
        pid: owner.map(|o| u64::from(o.pid)),
        command: owner.map(|o| o.command.clone()),
        direction: r.role.name().to_string(),
        rate_bps: r.rate,
        rtt_ms: tcp.map(|t| f64::from(t.rtt) / 1e3),
        cwnd_bytes: tcp.map(|t| u64::from(t.snd_cwnd) * u64::from(t.snd_mss)),
        window_bytes: window(c, r.role).map(u64::from),
        retransmits: Some(r.retrans),
        limit: r.limit.map(|l| l.name().to_string()),
        class: r.class.map(|k| k.name().to_string()),
        congestion: c.congestion.as_ref().map(|cc| cc.as_str().to_string()),
        full_scan,
    };
    serde_json::to_writer(&mut *out, &line)?;
    writeln!(out)
}

/// Restores the terminal however `top` ends (return, error, panic).
struct Screen;

impl Screen {
    fn enter() -> std::io::Result<Screen> {
        crossterm::terminal::enable_raw_mode()?;
        let s = Screen;
        crossterm::execute!(
            std::io::stdout(),
            crossterm::terminal::EnterAlternateScreen,
            crossterm::cursor::Hide
        )?;
        Ok(s)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = crossterm::execute!(
            std::io::stdout(),
            crossterm::cursor::Show,
            crossterm::terminal::LeaveAlternateScreen
        );
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

/// How often the full screen looks for SIGTERM while it waits: crossterm's
/// poll resumes after a signal, so the wait is cut into slices.
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

/// Waits until `until`, or a quit key or SIGTERM (or SIGINT from `kill`:
/// raw mode makes Ctrl-C a key) on the full screen. True means quit.
fn wait(until: Instant, screen: bool) -> std::io::Result<bool> {
    use crossterm::event::{poll, read, Event, KeyCode, KeyEventKind, KeyModifiers};
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if screen && plumb_net::signals::interrupted() {
            return Ok(true);
        }
        if left.is_zero() {
            return Ok(false);
        }
        if !screen {
            std::thread::sleep(left);
            return Ok(false);
        }
        if poll(left.min(SIGNAL_CHECK))? {
            if let Event::Key(k) = read()? {
                if k.kind != KeyEventKind::Release
                    && (matches!(
                        k.code,
                        KeyCode::Char('q') | KeyCode::Char('Q') | KeyCode::Esc
                    ) || (k.code == KeyCode::Char('c')
                        && k.modifiers.contains(KeyModifiers::CONTROL)))
                {
                    return Ok(true);
                }
            }
        }
    }
}

fn table<'a>(
    order: impl Iterator<Item = &'a u64>,
    known: &HashMap<u64, Box<Seen>>,
    owners: &mut Owners,
    header: &str,
    width: usize,
    height: usize,
) -> Vec<String> {
    let mut v = vec![header.to_string()];
    v.push(format!(
        "{:<16} {:<24} {:<9} {:>12} {:>8} {:>10} {:>10} {:>5}  {:<16} {}",
        "PROCESS", "PEER", "DIR", "RATE", "RTT ms", "CWND", "WINDOW", "RETR", "CLASS", "LIMIT"
    ));
    for cookie in order.take(height.saturating_sub(2)) {
        let Some((c, r)) = known
            .get(cookie)
            .and_then(|e| Some((&e.conn, e.row.as_ref()?)))
        else {
            continue;
        };
        let tcp = c.tcp;
        let proc_ = owners
            .get(c.inode)
            .map_or_else(|| "?".into(), |o| format!("{}/{}", o.command, o.pid));
        let human = |b: f64| Rate::from_bps(b).map_or_else(|| "0".into(), Rate::human);
        let mut line = format!(
            "{:<16} {:<24} {:<9} {:>12} {:>8} {:>10} {:>10} {:>5}  {:<16} {}",
            proc_.chars().take(16).collect::<String>(),
            c.remote.to_string(),
            r.role.name(),
            human(r.rate),
            tcp.map_or("-".into(), |t| format!("{:.2}", f64::from(t.rtt) / 1e3)),
            tcp.map_or("-".into(), |t| size_compact(
                f64::from(t.snd_cwnd) * f64::from(t.snd_mss)
            )),
            window(c, r.role).map_or("-".into(), |w| size_compact(f64::from(w))),
            r.retrans,
            r.class.map_or("-", FlowClass::words),
            r.limit.map_or("-", |l| l.name()),
        );
        line.truncate(width);
        v.push(line);
    }
    v
}

/// A connection as last read, and its latest row. Boxed in the map: a
/// hash table's slots are spread over all its buckets, so 20,000 entries of
/// 700 bytes held in place kept 23 MB resident; boxed, 14 MB and 0.5 MB.
struct Seen {
    conn: Conn,
    /// When it was read, s since start.
    t: f64,
    /// The interval that last read it.
    read: u64,
    /// Its row at that reading; none until it has been read twice.
    row: Option<Row>,
    /// When a reading last found it busy, s since start.
    busy_at: f64,
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

/// CPU this thread has used, s (the kernel's work for a sock_diag dump runs
/// in the reading thread and counts here); wall time where the kernel keeps
/// no figure.
fn cpu_now(start: Instant) -> f64 {
    plumb_net::host::thread_schedstat().map_or_else(
        || start.elapsed().as_secs_f64(),
        |(run, _)| run as f64 / 1e9,
    )
}

/// Runs `plumb top`.
pub fn run(a: &TopArgs) -> anyhow::Result<ExitCode> {
    let (filter, mut sched) = match checked(a) {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    let mut dumper = match Dumper::open() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("plumb: cannot read the host's TCP connections (sock_diag): {e}");
            return Ok(ExitCode::from(1));
        }
    };
    let owners = Owners::new();
    let screen_mode = !a.json && std::io::stdout().is_terminal();
    let screen = if screen_mode {
        // SIGTERM (and a SIGINT sent by kill) become a flag `wait` checks,
        // so the terminal is restored as on q; without them the default
        // action would end plumb with the terminal raw.
        plumb_net::signals::install();
        Some(Screen::enter()?)
    } else {
        None
    };
    let start = Instant::now();
    let step = Duration::from_secs_f64(a.interval);
    // The kernel skips sockets on other ports before it fills a message.
    dumper.port = filter.kernel_port();
    let mut w = Watch::default();
    // Buffered: stdout's line buffering would make one write(2) per row, and
    // a busy host has tens of thousands of rows a second. Flushed per interval.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut look = Lookups {
        owners,
        links: HashMap::new(),
        link: a.link,
        cpu_before: HashMap::new(),
        cpu_now: HashMap::new(),
        marking_secs: 0.0,
        listeners: Default::default(),
    };
    let mut i = 0u64;
    loop {
        let t = start.elapsed().as_secs_f64();
        let cpu0 = cpu_now(start);
        let (asked, full) = w.read(&mut dumper, &filter, &sched, &mut look, t, i)?;
        look.next_interval();
        if i > 0 {
            w.rank(i, full, a.json);
            if a.json {
                w.write_json(&mut out, &mut look.owners, i, full)?;
            } else {
                let view = View {
                    a,
                    sched: &sched,
                    screen: screen.is_some(),
                };
                w.write_table(&mut out, &view, &mut look.owners, i)?;
            }
            out.flush()?;
        }
        // What this interval cost, output included, sets the pace of scans;
        // reading busy processes' CPU is neither scan nor lookup.
        let cost = (cpu_now(start) - cpu0 - std::mem::take(&mut look.marking_secs)).max(0.0);
        if full {
            sched.scanned(i, cost);
        } else {
            sched.looked_up(asked, cost);
        }
        if i > 0 && a.count.is_some_and(|n| i >= n) {
            break;
        }
        i += 1;
        if wait(start + step.mul_f64(i as f64), screen.is_some())? {
            break;
        }
    }
    out.flush()?;
    drop(out);
    drop(screen);
    Ok(ExitCode::SUCCESS)
}

/// The flags checked: the connection filter and the scan schedule, or the
/// usage error.
fn checked(a: &TopArgs) -> Result<(Filter, Schedule), ExitCode> {
    let filter = a.live.filter(a.port).map_err(usage_error)?;
    if !(0.1..=3600.0).contains(&a.interval) {
        return Err(usage_error(format!(
            "--interval {}: give 0.1 to 3600 seconds",
            a.interval
        )));
    }
    if a.count == Some(0) {
        return Err(usage_error("-n 0: give at least one interval"));
    }
    if !(a.scan_budget > 0.0 && a.scan_budget <= 100.0) {
        return Err(usage_error(format!(
            "--scan-budget {}: give a share of one core above 0 and at most 100 (%)",
            a.scan_budget
        )));
    }
    let sched = match a.scan_every {
        Some(s) if s.is_finite() && s > 0.0 => {
            Schedule::every(a.interval, (s / a.interval - 1e-9).ceil().max(1.0) as u64)
        }
        Some(s) => {
            return Err(usage_error(format!(
                "--scan-every {s}: give seconds above 0"
            )))
        }
        None => Schedule::new(a.interval, a.scan_budget / 100.0),
    };
    Ok((filter, sched))
}

/// What the table view needs besides the connections: the flags, the
/// scan schedule and whether it draws a full screen.
struct View<'a> {
    a: &'a TopArgs,
    sched: &'a Schedule,
    screen: bool,
}

/// The connections `top` watches, in buffers kept across intervals so
/// memory stays flat: every connection as last read (by cookie), the ones
/// followed between scans, their readings this interval, the ones gone, the
/// rows read now in order and the last scan's. Nothing per interval walks
/// every connection but a scan: on a host of idle connections that walk
/// alone (their entries are 8 MB at 20,000) cost a millisecond.
struct Watch {
    known: HashMap<u64, Box<Seen>>,
    followed: HashSet<u64>,
    scan_order: Vec<(f64, u64)>,
    conns: Vec<Conn>,
    gone: Vec<u64>,
    order: Vec<(f64, u64)>,
    /// Cleared if this kernel cannot look one socket up: then every interval scans.
    lookups: bool,
}

impl Default for Watch {
    fn default() -> Self {
        Watch {
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

impl Watch {
    /// Reads interval `i` at `t` seconds: the followed connections by a
    /// lookup of each, or every connection by a scan when the schedule (or
    /// a kernel without lookups) says so. Gives how many were asked for and
    /// whether it scanned.
    fn read(
        &mut self,
        dumper: &mut Dumper,
        filter: &Filter,
        sched: &Schedule,
        look: &mut Lookups,
        t: f64,
        i: u64,
    ) -> anyhow::Result<(usize, bool)> {
        let Watch {
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
    /// them (idle, or they would be followed).
    fn rank(&mut self, i: u64, full: bool, json: bool) {
        let Watch {
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
        if full && !json {
            scan_order.clone_from(order);
        }
    }

    /// `--json`: the rows read now, one NDJSON line each.
    fn write_json(
        &self,
        out: &mut impl Write,
        owners: &mut Owners,
        i: u64,
        full: bool,
    ) -> std::io::Result<()> {
        for (_, cookie) in &self.order {
            let Some(e) = self.known.get(cookie) else {
                continue;
            };
            let Some(r) = &e.row else { continue };
            let owner = owners.get(e.conn.inode);
            write_json(out, r, &e.conn, owner, i, full)?;
        }
        Ok(())
    }

    /// The table: a header, the rows read now, then the rest as the last
    /// scan saw them, cut to the screen (or every row when not one).
    fn write_table(
        &self,
        out: &mut impl Write,
        view: &View,
        owners: &mut Owners,
        i: u64,
    ) -> std::io::Result<()> {
        let known = &self.known;
        let (w, h) = if view.screen {
            crossterm::terminal::size()
                .ok()
                // A pty nobody sized (script, tmux detached) says 0 x 0.
                .filter(|(w, h)| *w > 0 && *h > 0)
                .map_or((120, 40), |(w, h)| (usize::from(w), usize::from(h)))
        } else {
            (200, known.len() + 2)
        };
        let busy = self
            .order
            .iter()
            .take_while(|(r, _)| *r >= plumb_live::track::IDLE_BPS)
            .count();
        let header = format!(
            "plumb top — {} connections, {busy} busy; interval {} s, full scan every {} s{}",
            known.len(),
            view.a.interval,
            secs(view.sched.period_secs()),
            if view.screen { "; q quits" } else { "" }
        );
        let rest = self
            .scan_order
            .iter()
            .filter(|(_, k)| known.get(k).is_some_and(|e| e.read != i));
        let rows = self.order.iter().chain(rest).map(|(_, k)| k);
        let lines = table(rows, known, owners, &header, w, h);
        if view.screen {
            crossterm::queue!(
                out,
                crossterm::terminal::Clear(crossterm::terminal::ClearType::All),
                crossterm::cursor::MoveTo(0, 0)
            )?;
            for l in &lines {
                write!(out, "{l}\r\n")?;
            }
        } else {
            for l in &lines {
                writeln!(out, "{l}")?;
            }
            writeln!(out)?;
        }
        Ok(())
    }
}

fn secs(s: f64) -> String {
    let r = (s * 100.0).round() / 100.0;
    format!("{r}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(tcp: Option<plumb_tcpinfo::TcpInfo>) -> Conn {
        Conn {
            local: "127.0.0.1:5201".parse().expect("addr"),
            remote: "127.0.0.1:40000".parse().expect("addr"),
            state: 1,
            inode: 0,
            uid: 0,
            ifindex: 0,
            cookie: 7,
            recv_queue: 0,
            send_queue: 0,
            tcp,
            congestion: None,
            mem: None,
            bbr: None,
        }
    }

    /// A server socket behind a path-MTU black hole at `resends` total
    /// retransmissions: its HTTP headers (176 B and the SYN's byte)
    /// acknowledged, ten 1448-byte segments outstanding, a window of one,
    /// in Loss.
    fn stuck(resends: u32) -> Conn {
        conn(Some(plumb_tcpinfo::TcpInfo {
            bytes_acked: Some(177),
            bytes_received: Some(80),
            unacked: 10,
            snd_cwnd: 1,
            ca_state: 4,
            retransmits: 1,
            total_retrans: resends,
            snd_mss: 1448,
            pmtu: 1500,
            rtt: 15_000,
            ..plumb_tcpinfo::TcpInfo::default()
        }))
    }

    fn lookups() -> Lookups {
        Lookups {
            owners: Owners::default(),
            links: HashMap::new(),
            link: Rate::from_bps(100e6),
            cpu_before: HashMap::new(),
            cpu_now: HashMap::new(),
            marking_secs: 0.0,
            listeners: Default::default(),
        }
    }

    /// A sender stuck in timeouts is a row with a role, not hidden as idle;
    /// its first second (a tail-loss probe and timeouts at 0.2 and 0.6 s:
    /// three resends) names the black hole, and so does a later second with
    /// one resend, from the five timeouts in a row behind it; one resend
    /// after a single timeout is a stalled sender with no limit named.
    #[test]
    fn a_sender_stuck_in_timeouts_is_a_sending_row() {
        let mut look = lookups();
        let first = row(&stuck(0), 0.0, &stuck(3), 1.0, true, &mut look);
        assert_eq!((first.rate, first.role), (0.0, Role::Sender));
        assert_eq!(first.limit, Some(plumb_record::diagnosis::Limit::PathMtu));
        let in_a_row = |c: Conn| {
            let mut c = c;
            c.tcp.as_mut().expect("tcp").retransmits = 5;
            c
        };
        let later = row(
            &in_a_row(stuck(5)),
            3.0,
            &in_a_row(stuck(6)),
            4.0,
            true,
            &mut look,
        );
        assert_eq!(later.role, Role::Sender);
        assert_eq!(later.limit, Some(plumb_record::diagnosis::Limit::PathMtu));
        let once = row(&stuck(5), 3.0, &stuck(6), 4.0, true, &mut look);
        assert_eq!(once.role, Role::Sender);
        assert_ne!(once.limit, Some(plumb_record::diagnosis::Limit::PathMtu));
        // A keep-alive connection with nothing outstanding stays idle.
        let mut quiet = stuck(0);
        let t = quiet.tcp.as_mut().expect("tcp");
        (t.unacked, t.snd_cwnd, t.ca_state, t.retransmits) = (0, 10, 0, 0);
        let idle = row(&quiet, 0.0, &quiet, 1.0, true, &mut look);
        assert_eq!((idle.role, idle.limit), (Role::Idle, None));
    }

    /// A connection the kernel sent no TCP_INFO for has an unknown RTT and
    /// window, not zero ones, in both the NDJSON and the table.
    #[test]
    fn no_tcp_info_is_unknown_not_zero() {
        let r = Row {
            rate: 0.0,
            role: Role::Sender,
            retrans: 0,
            limit: None,
            class: None,
        };
        let mut out = Vec::new();
        write_json(&mut out, &r, &conn(None), None, 1, true).expect("json");
        let v = String::from_utf8(out).expect("one JSON line");
        assert!(v.contains(r#""rtt_ms":null"#), "{v}");
        assert!(v.contains(r#""cwnd_bytes":null"#), "{v}");
        let t = plumb_tcpinfo::TcpInfo {
            rtt: 15_000,
            snd_cwnd: 10,
            snd_mss: 1448,
            ..plumb_tcpinfo::TcpInfo::default()
        };
        let mut out = Vec::new();
        write_json(&mut out, &r, &conn(Some(t)), None, 1, true).expect("json");
        let v = String::from_utf8(out).expect("one JSON line");
        assert!(v.contains(r#""rtt_ms":15.0"#), "{v}");
        assert!(v.contains(r#""cwnd_bytes":14480"#), "{v}");

        let mut known = HashMap::new();
        for (cookie, tcp) in [(1u64, None), (2, Some(t))] {
            known.insert(
                cookie,
                Box::new(Seen {
                    conn: Conn {
                        cookie,
                        ..conn(tcp)
                    },
                    t: 0.0,
                    read: 0,
                    row: Some(r),
                    busy_at: 0.0,
                }),
            );
        }
        let lines = table(
            [1u64, 2].iter(),
            &known,
            &mut Owners::default(),
            "h",
            200,
            10,
        );
        assert_eq!(lines.len(), 4, "{lines:?}");
        let cols = |l: &str| l.split_whitespace().map(String::from).collect::<Vec<_>>();
        // PROCESS PEER DIR RATE RTT CWND WINDOW RETR CLASS LIMIT (an idle rate is "0")
        assert_eq!(cols(&lines[2])[4..7], ["-", "-", "-"], "{}", lines[2]);
        // Windows in one form for every row (`14.5K`, `2.32M`).
        assert_eq!(cols(&lines[3])[4..6], ["15.00", "14.5K"], "{}", lines[3]);
    }
}
