//! Programs run across a lab: a plumb server on the far side, a plumb client
//! on the near side that hands its `-J` document back, and the waiting that
//! passes a deferred Ctrl-C on to them. `plumb lab` and `plumb demo` both
//! drive a lab through these; nothing they start outlives the lab.

use std::io::{self, Read, Seek};
use std::os::fd::AsRawFd;
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::lab::{Lab, Side};

/// Kills a child when dropped: nothing the lab starts outlives it.
#[derive(Debug)]
pub struct Reaper(pub Option<Child>);

impl Drop for Reaper {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// How long a program in the lab has, after the signal was passed on, to end
/// by itself before it is killed.
const GRACE: Duration = Duration::from_secs(10);

/// How long a far server has to start listening.
const LISTEN_WAIT: Duration = Duration::from_secs(10);

/// How long it has under a far CPU quota under 10 % of a core: starting a
/// program takes CPU the quota hands out a little a period (0.1 % in 1 s
/// periods is 1 ms a second, and a debug build of plumb needs tens of ms
/// to start), so the wait grows with the quota's scarcity.
const LISTEN_WAIT_QUOTA: Duration = Duration::from_secs(90);

/// The wait for `lab`'s far side to listen, by its CPU quota.
fn listen_wait(lab: &Lab) -> Duration {
    match lab.config().far_cpu {
        Some(share) if share < 0.1 => LISTEN_WAIT_QUOTA,
        _ => LISTEN_WAIT,
    }
}

/// Starts `exe -s -p port` (a plumb server) in the far namespace and waits
/// until it listens.
pub fn start_server(lab: &Lab, exe: &str, port: u16) -> io::Result<Reaper> {
    let mut c = lab.command(Side::Far, exe);
    c.args(["-s", "-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let r = Reaper(Some(c.spawn()?));
    wait_listening(lab, port)?;
    Ok(r)
}

/// Waits for `child`; a SIGINT/SIGTERM the lab defers ([`Lab::defer_signals`])
/// is passed on to it, and after [`GRACE`] it is killed.
pub fn wait_passing_signals(child: Child) -> io::Result<ExitStatus> {
    let mut reaper = Reaper(Some(child));
    let mut passed: Option<Instant> = None;
    loop {
        let Some(child) = reaper.0.as_mut() else {
            return Err(io::Error::other("lost the child process"));
        };
        if let Some(status) = child.try_wait()? {
            reaper.0 = None;
            return Ok(status);
        }
        match (Lab::pending_signal(), passed) {
            (Some(sig), None) => {
                // Already gone is fine: try_wait sees it next time.
                let _ = crate::sys::send_signal(child.id(), sig);
                passed = Some(Instant::now());
            }
            (Some(_), Some(t)) if t.elapsed() > GRACE => {
                let _ = child.kill();
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `exe -c FAR -p port args…` (the plumb client) in the near namespace;
/// its text report goes to stdout unless `quiet`. Returns its exit status and
/// the text of its `-J` document (also the partial one of an interrupted
/// run; `None` when it wrote none).
pub fn run_client(
    lab: &Lab,
    exe: &str,
    port: u16,
    args: &[String],
    quiet: bool,
) -> io::Result<(ExitStatus, Option<String>)> {
    // The document comes back through a file with no name, which the
    // client opens through our descriptor: nothing is left in /tmp however
    // either process ends.
    let mut file = crate::sys::unnamed_file(&std::env::temp_dir())?;
    let json_path = format!("/proc/{}/fd/{}", std::process::id(), file.as_raw_fd());
    let mut c = lab.command(Side::Near, exe);
    c.args(["-c", &lab.far_addr().to_string(), "-p", &port.to_string()])
        .args(args);
    c.arg("--json-file").arg(&json_path);
    if quiet {
        c.stdout(Stdio::null());
    }
    let status = wait_passing_signals(c.spawn()?)?;
    let mut text = String::new();
    file.rewind()?;
    file.read_to_string(&mut text)?;
    Ok((status, (!text.trim().is_empty()).then_some(text)))
}

/// Waits (bounded: [`LISTEN_WAIT`], or [`LISTEN_WAIT_QUOTA`] under a small
/// far CPU quota) until something listens on TCP `port` in the far namespace.
pub fn wait_listening(lab: &Lab, port: u16) -> io::Result<()> {
    let t0 = Instant::now();
    let wait = listen_wait(lab);
    while t0.elapsed() < wait {
        let seen = lab
            .spawn_in(Side::Far, move || Ok(listening(port)))
            .ok()
            .and_then(|h| h.join().ok())
            .and_then(Result::ok)
            .unwrap_or(false);
        if seen {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(io::Error::other(
        "the plumb server in the far namespace did not start listening",
    ))
}

/// Whether a socket of the calling thread's namespace listens on `port`
/// (`/proc/thread-self/net/*` shows the reading thread's namespace).
fn listening(port: u16) -> bool {
    let want = format!(":{port:04X}");
    ["/proc/thread-self/net/tcp6", "/proc/thread-self/net/tcp"]
        .iter()
        .any(|f| {
            std::fs::read_to_string(f).is_ok_and(|t| {
                t.lines().skip(1).any(|l| {
                    let c: Vec<&str> = l.split_whitespace().collect();
                    // Column 1 is local address:port, column 3 the state (0A = LISTEN).
                    c.len() > 3 && c[1].ends_with(&want) && c[3] == "0A"
                })
            })
        })
}

/// `sh -c cmd` on `side`, with both ends' addresses in `PLUMB_NEAR` and
/// `PLUMB_FAR`.
fn shell(lab: &Lab, side: Side, cmd: &str) -> std::process::Command {
    let mut c = lab.command(side, "sh");
    c.args(["-c", cmd])
        .env("PLUMB_NEAR", lab.near_addr().to_string())
        .env("PLUMB_FAR", lab.far_addr().to_string());
    c
}

/// Starts the user's far-side program (`--far-exec`), its stdout on stderr
/// when `quiet_stdout` (stdout carries a JSON document then), and waits
/// until something listens on `port` when a client will connect to it.
pub fn start_far_program(
    lab: &Lab,
    cmd: &str,
    quiet_stdout: bool,
    port: Option<u16>,
) -> io::Result<Reaper> {
    let mut c = shell(lab, Side::Far, cmd);
    c.stdin(Stdio::null());
    if quiet_stdout {
        c.stdout(std::io::stderr());
    }
    let r = Reaper(Some(c.spawn()?));
    if let Some(port) = port {
        wait_listening(lab, port)?;
    }
    Ok(r)
}

/// Runs the user's near-side program (`--exec`) to its end, passing a
/// deferred Ctrl-C on to it.
pub fn run_near_program(lab: &Lab, cmd: &str) -> io::Result<ExitStatus> {
    wait_passing_signals(shell(lab, Side::Near, cmd).spawn()?)
}

/// Waits (at most `limit`) while a signal is ending the lab: the signal
/// thread removes the labs and ends the process by that signal, which is
/// the status to leave with, not that of a program the teardown killed.
pub fn wait_for_signal_teardown(limit: Duration) {
    let t0 = Instant::now();
    while Lab::ending_by_signal() && t0.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(20));
    }
}
