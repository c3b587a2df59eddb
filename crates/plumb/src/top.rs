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
use plumb_live::{Conn, Role, Track};
use plumb_model::Rate;
use serde_json::{json, Value};

use crate::cli::usage_error;
use crate::live::{link_for_peer, LiveFilterArgs, Owners};

/// Flags of `plumb top`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  plumb top                      full screen; q or Ctrl-C quits\n  plumb top -n 2 --json -p 873   two intervals of NDJSON for port 873"
)]
pub struct TopArgs {
    /// Only connections with this port at either end
    #[arg(short = 'p', long)]
    pub port: Option<u16>,
    /// Connection filters
    #[command(flatten)]
    pub live: LiveFilterArgs,
    /// Stop after N intervals
    #[arg(short = 'n', long = "count")]
    pub count: Option<u64>,
    /// Seconds between refreshes
    #[arg(short = 'i', long, default_value_t = 1.0)]
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

/// One connection's row for one interval.
struct Row {
    json: Value,
    rate: f64,
}

fn row(prev: &Conn, tp: f64, now: &Conn, t: f64, look: &mut Lookups, interval: u64) -> Row {
    let (owners, links, link) = (&mut look.owners, &mut look.links, look.link);
    let mut tr = Track::new(prev.clone(), tp);
    tr.update(now.clone(), t);
    let d = tr.delta();
    let owner = owners.get(now.inode);
    let ctx = Context {
        // One route lookup per peer, not per connection and interval.
        link: links
            .entry(now.remote.ip())
            .or_insert_with(|| link_for_peer(now.remote.ip(), link))
            .clone(),
        cpu: None,
        pid: owner.as_ref().map(|o| o.pid),
    };
    // Most of a busy host's connections are idle: name nothing for them
    // without running the rules (a full diagnosis each costs more than the
    // dump that found them).
    let limit = if d.role == Role::Idle {
        None
    } else {
        explain(&tr, &ctx).0.limit
    };
    let tcp = now.tcp.unwrap_or_default();
    let window = match d.role {
        Role::Receiver => tcp.rcv_wnd,
        _ => tcp.snd_wnd,
    };
    let rate = tr.rate_bps();
    Row {
        rate,
        json: json!({
            "interval": interval,
            "local": now.local.to_string(),
            "remote": now.remote.to_string(),
            "pid": owner.as_ref().map(|o| o.pid),
            "command": owner.as_ref().map(|o| o.command.clone()),
            "direction": d.role.name(),
            "rate_bps": rate,
            "rtt_ms": f64::from(tcp.rtt) / 1e3,
            "cwnd_bytes": u64::from(tcp.snd_cwnd) * u64::from(tcp.snd_mss),
            "window_bytes": window,
            "retransmits": d.retrans,
            "limit": limit.map(|l| l.name()),
            "congestion": now.congestion,
        }),
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

fn table(rows: &[Row], header: &str, width: usize, height: usize) -> Vec<String> {
    let mut v = vec![header.to_string()];
    v.push(format!(
        "{:<16} {:<24} {:<9} {:>12} {:>8} {:>10} {:>10} {:>5}  {}",
        "PROCESS", "PEER", "DIR", "RATE", "RTT ms", "CWND", "WINDOW", "RETR", "LIMIT"
    ));
    for r in rows.iter().take(height.saturating_sub(2)) {
        let j = &r.json;
        let proc_ = match (j["command"].as_str(), j["pid"].as_u64()) {
            (Some(c), Some(p)) => format!("{c}/{p}"),
            _ => "?".into(),
        };
        let human = |b: f64| Rate::from_bps(b).map_or_else(|| "0".into(), Rate::human);
        let bytes = |v: &Value| v.as_u64().map_or("-".into(), compact);
        let mut line = format!(
            "{:<16} {:<24} {:<9} {:>12} {:>8.2} {:>10} {:>10} {:>5}  {}",
            proc_.chars().take(16).collect::<String>(),
            j["remote"].as_str().unwrap_or(""),
            j["direction"].as_str().unwrap_or(""),
            human(r.rate),
            j["rtt_ms"].as_f64().unwrap_or(0.0),
            bytes(&j["cwnd_bytes"]),
            bytes(&j["window_bytes"]),
            j["retransmits"].as_u64().unwrap_or(0),
            j["limit"].as_str().unwrap_or("-"),
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
    let mut prev: HashMap<u64, (Conn, f64)> = HashMap::new();
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
        let conns = dumper.dump()?;
        let mut rows = Vec::new();
        let mut next = HashMap::new();
        for c in conns {
            let pid = if filter.pid.is_some() {
                look.owners.get(c.inode).map(|o| o.pid)
            } else {
                None
            };
            if !filter.matches(&c, pid) {
                continue;
            }
            if let Some((p, tp)) = prev.get(&c.cookie) {
                rows.push(row(p, *tp, &c, t, &mut look, i));
            }
            next.insert(c.cookie, (c, t));
        }
        prev = next;
        if i > 0 {
            rows.sort_by(|x, y| y.rate.total_cmp(&x.rate));
            if a.json {
                for r in &rows {
                    writeln!(out, "{}", r.json)?;
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
                let lines = table(&rows, &header, w, h);
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
