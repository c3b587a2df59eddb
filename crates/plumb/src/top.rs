//! `plumb top`: the host's TCP connections, busiest first, refreshed every
//! interval, each with the limit named now. A full-screen view when stdout
//! is a terminal (q or Ctrl-C quits and the terminal is always restored), a
//! plain table per interval otherwise, or NDJSON with `--json`. One
//! sock_diag dump per interval: the rates are the deltas between two dumps.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use plumb_diagnose::evidence::LinkRate;
use plumb_live::evidence::{explain, Context};
use plumb_live::sys::Dumper;
use plumb_live::sys::Owner;
use plumb_live::{Conn, Role, Track};
use plumb_model::Rate;

use crate::cli::usage_error;
use crate::live::{link_for_peer, LiveFilterArgs, Owners};

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
    /// One JSON object per connection per interval (newline-delimited)
    #[arg(long, short = 'J')]
    pub json: bool,
    /// The bottleneck link's rate (1g, 100M); else the route's interface speed
    #[arg(long, value_parser = crate::args::rate)]
    pub link: Option<Rate>,
}

/// What rows look up beyond the socket: owners, and link rates by peer.
struct Lookups {
    owners: Owners,
    links: HashMap<std::net::IpAddr, Option<LinkRate>>,
    link: Option<Rate>,
}

/// One connection's row for one interval: the numbers, not yet text, so a
/// row nobody prints (past the screen's height) costs no formatting.
struct Row {
    /// Index of the connection in this interval's dump.
    at: usize,
    rate: f64,
    role: Role,
    retrans: u64,
    limit: Option<plumb_diagnose::Limit>,
}

/// A row for `now`, seen `prev` at `tp`. An idle connection (most of a busy
/// host's) is a subtraction: no track, no rules, no link lookup. A busy one
/// gets the same diagnosis as `plumb why`.
fn row(prev: &Conn, tp: f64, now: &Conn, at: usize, t: f64, look: &mut Lookups) -> Row {
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
        at,
        rate: bps(sent).max(bps(received)),
        role,
        retrans,
        limit: None,
    };
    if role == Role::Idle {
        return out;
    }
    let mut tr = Track::new(*prev, tp);
    tr.update(*now, t);
    if look.links.len() > 4096 {
        look.links.clear();
    }
    let link = look.link;
    let ctx = Context {
        // One route lookup per peer, not per connection and interval.
        link: look
            .links
            .entry(now.remote.ip())
            .or_insert_with(|| link_for_peer(now.remote.ip(), link))
            .clone(),
        cpu: None,
        pid: look.owners.get(now.inode).map(|o| o.pid),
    };
    out.limit = explain(&tr, &ctx).0.limit;
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
) -> std::io::Result<()> {
    let tcp = c.tcp.unwrap_or_default();
    write!(
        out,
        "{{\"interval\":{interval},\"local\":\"{}\",\"remote\":\"{}\",\"pid\":",
        c.local, c.remote
    )?;
    match owner {
        Some(o) => {
            write!(out, "{},\"command\":", o.pid)?;
            serde_json::to_writer(&mut *out, &o.command)?;
        }
        None => write!(out, "null,\"command\":null")?,
    }
    write!(out, ",\"direction\":\"{}\",\"rate_bps\":", r.role.name())?;
    serde_json::to_writer(&mut *out, &r.rate)?;
    write!(out, ",\"rtt_ms\":")?;
    serde_json::to_writer(&mut *out, &(f64::from(tcp.rtt) / 1e3))?;
    write!(
        out,
        ",\"cwnd_bytes\":{},\"window_bytes\":",
        u64::from(tcp.snd_cwnd) * u64::from(tcp.snd_mss)
    )?;
    match window(c, r.role) {
        Some(w) => write!(out, "{w}")?,
        None => write!(out, "null")?,
    }
    write!(out, ",\"retransmits\":{},\"limit\":", r.retrans)?;
    match r.limit {
        Some(l) => write!(out, "\"{}\"", l.name())?,
        None => write!(out, "null")?,
    }
    match c.congestion {
        Some(cc) => writeln!(out, ",\"congestion\":\"{cc}\"}}"),
        None => writeln!(out, ",\"congestion\":null}}"),
    }
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

/// Waits until `until`, or a quit key on the full screen. True means quit.
fn wait(until: Instant, screen: bool) -> std::io::Result<bool> {
    use crossterm::event::{poll, read, Event, KeyCode, KeyEventKind, KeyModifiers};
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        if !screen {
            std::thread::sleep(left);
            return Ok(false);
        }
        if poll(left)? {
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

fn table(
    rows: &[Row],
    conns: &[Conn],
    owners: &mut Owners,
    header: &str,
    width: usize,
    height: usize,
) -> Vec<String> {
    let mut v = vec![header.to_string()];
    v.push(format!(
        "{:<16} {:<24} {:<9} {:>12} {:>8} {:>10} {:>10} {:>5}  {}",
        "PROCESS", "PEER", "DIR", "RATE", "RTT ms", "CWND", "WINDOW", "RETR", "LIMIT"
    ));
    for r in rows.iter().take(height.saturating_sub(2)) {
        let c = &conns[r.at];
        let tcp = c.tcp.unwrap_or_default();
        let proc_ = owners
            .get(c.inode)
            .map_or_else(|| "?".into(), |o| format!("{}/{}", o.command, o.pid));
        let human = |b: f64| Rate::from_bps(b).map_or_else(|| "0".into(), Rate::human);
        let mut line = format!(
            "{:<16} {:<24} {:<9} {:>12} {:>8.2} {:>10} {:>10} {:>5}  {}",
            proc_.chars().take(16).collect::<String>(),
            c.remote.to_string(),
            r.role.name(),
            human(r.rate),
            f64::from(tcp.rtt) / 1e3,
            compact(u64::from(tcp.snd_cwnd) * u64::from(tcp.snd_mss)),
            window(c, r.role).map_or("-".into(), |w| compact(u64::from(w))),
            r.retrans,
            r.limit.map_or("-", |l| l.name()),
        );
        line.truncate(width);
        v.push(line);
    }
    v
}

/// `17520`, `916.8K`, `19.3M`: bytes in a table column.
fn compact(b: u64) -> String {
    match b {
        0..=99_999 => b.to_string(),
        100_000..=99_999_999 => format!("{:.1}K", b as f64 / 1e3),
        _ => format!("{:.1}M", b as f64 / 1e6),
    }
}

/// Runs `plumb top`.
pub fn run(a: &TopArgs) -> anyhow::Result<ExitCode> {
    let filter = match a.live.filter(a.port) {
        Ok(f) => f,
        Err(m) => return Ok(usage_error(m)),
    };
    if !(0.1..=3600.0).contains(&a.interval) {
        return Ok(usage_error(format!(
            "--interval {}: give 0.1 to 3600 seconds",
            a.interval
        )));
    }
    if a.count == Some(0) {
        return Ok(usage_error("-n 0: give at least one interval"));
    }
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
        Some(Screen::enter()?)
    } else {
        None
    };
    let start = Instant::now();
    let step = Duration::from_secs_f64(a.interval);
    // The kernel skips sockets on other ports before it fills a message.
    dumper.port = filter.kernel_port();
    // Buffers kept across intervals, so memory stays flat: this dump, the
    // last one (cookie -> index into it, and its time), and the rows.
    let mut conns: Vec<Conn> = Vec::new();
    let mut prev_conns: Vec<Conn> = Vec::new();
    let mut prev: HashMap<u64, usize> = HashMap::new();
    let mut next: HashMap<u64, usize> = HashMap::new();
    let mut prev_t = 0.0;
    let mut rows: Vec<Row> = Vec::new();
    // Buffered: stdout's line buffering would make one write(2) per row, and
    // a busy host has tens of thousands of rows a second. Flushed per interval.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut look = Lookups {
        owners,
        links: HashMap::new(),
        link: a.link,
    };
    let mut i = 0u64;
    loop {
        let t = start.elapsed().as_secs_f64();
        dumper.dump_into(&mut conns)?;
        rows.clear();
        next.clear();
        for (at, c) in conns.iter().enumerate() {
            let pid = if filter.pid.is_some() {
                look.owners.get(c.inode).map(|o| o.pid)
            } else {
                None
            };
            if !filter.matches(c, pid) {
                continue;
            }
            if let Some(&p) = prev.get(&c.cookie) {
                rows.push(row(&prev_conns[p], prev_t, c, at, t, &mut look));
            }
            next.insert(c.cookie, at);
        }
        std::mem::swap(&mut prev, &mut next);
        std::mem::swap(&mut prev_conns, &mut conns);
        prev_t = t;
        // The rows index into this interval's dump, now `prev_conns`.
        let shown = &prev_conns;
        if i > 0 {
            rows.sort_unstable_by(|x, y| y.rate.total_cmp(&x.rate));
            if a.json {
                for r in &rows {
                    let c = &shown[r.at];
                    let owner = look.owners.get(c.inode);
                    write_json(&mut out, r, c, owner, i)?;
                }
                out.flush()?;
            } else {
                let (w, h) = if screen.is_some() {
                    crossterm::terminal::size()
                        .ok()
                        // A pty nobody sized (script, tmux detached) says 0 x 0.
                        .filter(|(w, h)| *w > 0 && *h > 0)
                        .map_or((120, 40), |(w, h)| (usize::from(w), usize::from(h)))
                } else {
                    (200, rows.len() + 2)
                };
                let header = format!(
                    "plumb top — {} connections, interval {} s{}",
                    rows.len(),
                    a.interval,
                    if screen.is_some() { "; q quits" } else { "" }
                );
                let lines = table(&rows, shown, &mut look.owners, &header, w, h);
                if screen.is_some() {
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
                out.flush()?;
            }
            if a.count.is_some_and(|n| i >= n) {
                break;
            }
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
