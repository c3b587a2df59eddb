//! iperf3's `-D/--daemon` and `-I/--pidfile` for `plumb -s`: the server
//! goes into the background (a session of its own, standard descriptors on
//! `/dev/null`; its output goes where `--logfile` says), and the pid file
//! names the process that serves. The command returns once the pid file is
//! written, so a systemd unit with `Type=forking` and `PIDFile=` finds it.
//! The pid file is removed when the server ends (SIGTERM, SIGINT, `-1`).
//!
//! Unlike daemon(3), the working directory stays: a relative `--logfile`
//! or `--rsa-private-key-path` still names the file the user meant.

mod sys;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

/// Removes the pid file when the server ends.
pub struct PidFile(Option<PathBuf>);

impl Drop for PidFile {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// What the caller does next: go on serving (as the daemon, or in the
/// foreground), or end with this exit status (the parent of a daemon).
pub enum Next {
    Serve(PidFile),
    Exit(u8),
}

/// Detaches when `daemon`, then writes `pidfile`. An error is one line.
pub fn start(daemon: bool, pidfile: Option<&Path>) -> Result<Next, String> {
    if !daemon {
        return write_pid(pidfile).map(Next::Serve);
    }
    // The child says "started" (or why not) over this pair; the parent
    // returns only then, with the child's answer as its exit status.
    let (mut parent_end, mut child_end) =
        UnixStream::pair().map_err(|e| format!("-D: cannot make a socket pair: {e}"))?;
    match sys::fork().map_err(|e| format!("-D: cannot fork: {e}"))? {
        sys::Forked::Parent => {
            drop(child_end);
            let mut answer = String::new();
            let _ = parent_end.read_to_string(&mut answer);
            if answer == "ok" {
                return Ok(Next::Exit(0));
            }
            let why = if answer.is_empty() {
                "the daemon ended before it started".into()
            } else {
                answer
            };
            Err(why)
        }
        sys::Forked::Child => {
            drop(parent_end);
            let started = detach().and_then(|()| write_pid(pidfile));
            let reply = match &started {
                Ok(_) => "ok".to_string(),
                Err(e) => e.clone(),
            };
            let _ = child_end.write_all(reply.as_bytes());
            drop(child_end);
            started.map(Next::Serve).or(Ok(Next::Exit(1)))
        }
    }
}

fn detach() -> Result<(), String> {
    sys::setsid().map_err(|e| format!("-D: setsid: {e}"))?;
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .map_err(|e| format!("-D: /dev/null: {e}"))?;
    sys::redirect_std(&null.into()).map_err(|e| format!("-D: /dev/null: {e}"))
}

/// Writes this process's pid, as iperf3 does (the number, no newline).
fn write_pid(pidfile: Option<&Path>) -> Result<PidFile, String> {
    let Some(p) = pidfile else {
        return Ok(PidFile(None));
    };
    std::fs::write(p, std::process::id().to_string())
        .map_err(|e| format!("-I {}: cannot write the pid file: {e}", p.display()))?;
    Ok(PidFile(Some(p.to_path_buf())))
}
