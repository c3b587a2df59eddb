//! The systemd units in `contrib/systemd/` (installed by the Debian package,
//! so ExecStart names /usr/bin/plumb): `systemd-analyze verify` accepts
//! them, `systemd-analyze security --offline=yes` scores them no worse than
//! the README says, and the command line each starts is one this plumb runs.
//! (This container has no systemd as PID 1, so the sandbox itself is not
//! exercised here.)

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn unit(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../contrib/systemd")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn have_analyze() -> bool {
    let ok = Command::new("systemd-analyze")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        plumb_testkit::skip_tool!(
            "systemd-analyze is not installed (scripts/test installs systemd)"
        );
    }
    ok
}

/// The unit with ExecStart pointing at the plumb under test (verify checks
/// that the program exists), written to a temp file named as the unit.
fn staged(name: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("plumb-units-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    let text = unit(name).replace("/usr/bin/plumb", plumb_bin());
    std::fs::write(&path, text).expect("write unit");
    (dir, path)
}

fn exposure(name: &str) -> f64 {
    let (dir, path) = staged(name);
    // --man=no: Documentation= names the package's man pages, which verify
    // would look up with man(1) on this machine, where they are not installed.
    let verify = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&path)
        .output()
        .expect("systemd-analyze verify");
    let security = Command::new("systemd-analyze")
        .args(["security", "--offline=yes"])
        .arg(&path)
        .output()
        .expect("systemd-analyze security");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        verify.status.success() && verify.stderr.is_empty(),
        "verify {name}: {}",
        String::from_utf8_lossy(&verify.stderr)
    );
    let text = String::from_utf8_lossy(&security.stdout).to_string();
    text.lines()
        .find_map(|l| {
            l.split_once("Overall exposure level for ")?
                .1
                .split_once(": ")?
                .1
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no exposure level in {text}"))
}

#[test]
fn units_verify_and_score_as_the_readme_says() {
    if !have_analyze() {
        return;
    }
    // README "systemd": 1.2 for the server, 1.0 for the exporter (systemd 252).
    let server = exposure("plumb-server.service");
    assert!(server <= 1.2, "plumb-server.service exposure {server}");
    let exporter = exposure("plumb-exporter.service");
    assert!(
        exporter <= 1.0,
        "plumb-exporter.service exposure {exporter}"
    );
}

/// The ExecStart line's arguments, with the port swapped for a free one.
fn exec_args(name: &str, from: &str, to: &str) -> Vec<String> {
    let text = unit(name);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart=/usr/bin/plumb "))
        .expect("ExecStart");
    let line = line.replace(from, to);
    line.split_whitespace().map(str::to_string).collect()
}

fn starts_and_listens(args: &[String], port: u16) {
    let mut child = Command::new(plumb_bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start plumb");
    let t0 = Instant::now();
    let mut ok = false;
    while t0.elapsed() < Duration::from_secs(10) {
        if listening(port) {
            ok = true;
            break;
        }
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("output");
    assert!(
        ok,
        "plumb {args:?} did not listen: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_units_command_lines_run() {
    let p = port();
    starts_and_listens(
        &exec_args("plumb-server.service", "-p 5201", &format!("-p {p}")),
        p,
    );
    let p = port();
    starts_and_listens(
        &exec_args(
            "plumb-exporter.service",
            "127.0.0.1:9579",
            &format!("127.0.0.1:{p}"),
        ),
        p,
    );
}

/// `plumb -s -D -I FILE`, as a `Type=forking` unit with `PIDFile=FILE`
/// runs it: the command returns 0 once the pid file is written, the pid in
/// it is a process that serves (a test against it completes), SIGTERM ends
/// it, and the pid file goes with it.
#[test]
fn daemon_writes_its_pid_file_and_ends_on_sigterm() {
    let dir = TempDir::new("daemon");
    let pidfile = dir.join("plumb.pid");
    let p = port();
    let pf = pidfile.display().to_string();
    let out = run(
        plumb_bin(),
        &["-s", "-D", "-I", &pf, "-p", &p.to_string()],
        Duration::from_secs(10),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .expect("the pid file is written before -D returns")
        .trim()
        .parse()
        .expect("a pid");
    // Ends the daemon whatever happens below.
    struct Kill(u32);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = Command::new("kill")
                .args(["-KILL", &self.0.to_string()])
                .status();
        }
    }
    let _guard = Kill(pid);
    let t0 = Instant::now();
    while !listening(p) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the daemon did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let test = run(
        plumb_bin(),
        &["-c", "127.0.0.1", "-p", &p.to_string(), "-t", "0.3", "-J"],
        Duration::from_secs(20),
    );
    assert!(test.status.success(), "a test against the daemon");
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).expect("the pid is alive");
    assert!(
        String::from_utf8_lossy(&cmdline).contains("-D"),
        "the pid is the daemon's"
    );
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let t0 = Instant::now();
    while std::path::Path::new(&format!("/proc/{pid}")).exists() && !is_zombie(pid) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the daemon did not end on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!pidfile.exists(), "the pid file outlived the daemon");
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'))
    })
}
