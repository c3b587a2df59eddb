//! `plumb top`: the host's TCP connections, busiest first, refreshed every
//! interval, each with the limit named now (`plumb_live::watch`). A
//! full-screen view when stdout is a terminal (q or Ctrl-C quits and the
//! terminal is always restored), a plain table per interval otherwise
//! (`plumb_report::top::table`), or NDJSON with `--json`.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use plumb_live::sys::Dumper;
use plumb_live::watch::{Interval, RowView, Top, TopSink};
use plumb_report::top::table::{self, TableRow};

use crate::usage::usage_error;
use plumb_cli::top::{checked, TopArgs};

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

/// Runs `plumb top`.
pub fn run(a: &TopArgs) -> anyhow::Result<ExitCode> {
    let (filter, schedule) = match checked(a) {
        Ok(x) => x,
        Err(msg) => return Ok(usage_error(msg)),
    };
    let mut dumper = match Dumper::open() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("plumb: cannot read the host's TCP connections (sock_diag): {e}");
            return Ok(ExitCode::from(1));
        }
    };
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
    let top = Top {
        filter,
        schedule,
        link: a.link,
        interval: Duration::from_secs_f64(a.interval),
        count: a.count,
        table: !a.json,
    };
    let mut sink = Printer {
        // Buffered: stdout's line buffering would make one write(2) per row, and
        // a busy host has tens of thousands of rows a second. Flushed per interval.
        out: std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock()),
        json: a.json,
        screen: screen.is_some(),
        interval: a.interval,
    };
    plumb_live::watch::run(&top, &mut dumper, &mut sink)?;
    sink.out.flush()?;
    drop(sink);
    drop(screen);
    Ok(ExitCode::SUCCESS)
}

/// Prints each interval: NDJSON lines, or the table (on the full screen
/// when there is one).
struct Printer<W: Write> {
    out: W,
    json: bool,
    screen: bool,
    /// `--interval`, for the header.
    interval: f64,
}

impl<W: Write> TopSink for Printer<W> {
    fn interval(&mut self, i: &mut Interval<'_>) -> std::io::Result<()> {
        if self.json {
            let (n, full) = (i.index, i.full_scan);
            let out = &mut self.out;
            i.read_now(|r| {
                serde_json::to_writer(&mut *out, &r.line(n, full))?;
                writeln!(out)
            })?;
        } else {
            self.write_table(i)?;
        }
        self.out.flush()
    }

    fn wait(&mut self, until: Instant) -> std::io::Result<bool> {
        wait(until, self.screen)
    }
}

impl<W: Write> Printer<W> {
    /// The table: a header, the rows read now, then the rest as the last
    /// scan saw them, cut to the screen (or every row when not one).
    fn write_table(&mut self, i: &mut Interval<'_>) -> std::io::Result<()> {
        let (w, h) = if self.screen {
            crossterm::terminal::size()
                .ok()
                // A pty nobody sized (script, tmux detached) says 0 x 0.
                .filter(|(w, h)| *w > 0 && *h > 0)
                .map_or((120, 40), |(w, h)| (usize::from(w), usize::from(h)))
        } else {
            (200, i.connections() + 2)
        };
        let mut lines = vec![
            table::header(
                i.connections(),
                i.busy(),
                self.interval,
                i.schedule.period_secs(),
                self.screen,
            ),
            table::headings(),
        ];
        i.shown(h.saturating_sub(2), |r| {
            lines.push(table::line(&table_row(&r), w));
            Ok::<(), std::convert::Infallible>(())
        })
        .ok();
        let out = &mut self.out;
        if self.screen {
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

/// A watched row as the table's numbers.
fn table_row<'a>(r: &RowView<'a>) -> TableRow<'a> {
    let tcp = r.conn.tcp;
    TableRow {
        owner: r.owner.map(|o| (o.command.as_str(), o.pid)),
        peer: r.conn.remote,
        direction: r.row.role.name(),
        rate_bps: r.row.rate,
        rtt_ms: tcp.map(|t| f64::from(t.rtt) / 1e3),
        cwnd_bytes: tcp.map(|t| f64::from(t.snd_cwnd) * f64::from(t.snd_mss)),
        window_bytes: r.window(),
        retransmits: r.row.retrans,
        class: r.row.class,
        limit: r.row.limit,
    }
}
