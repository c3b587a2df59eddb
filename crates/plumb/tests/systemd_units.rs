//! The systemd units in `contrib/systemd/` (installed by the Debian package,
//! so ExecStart names /usr/bin/plumb): `systemd-analyze verify` accepts
//! them, `systemd-analyze security --offline=yes` scores them no worse than
//! the README says, the command line each starts is one this plumb runs,
//! and the package installs each. `plumb-server-all.service` is
//! `plumb-server.service` with `--tools iperf3,iperf2,nuttcp` in place of
//! `-p 5201`, its sandbox and limits the same, and serves each tool.
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
    // README "systemd": 1.2 for the servers, 1.0 for the exporter (systemd 252).
    for name in ["plumb-server.service", "plumb-server-all.service"] {
        let server = exposure(name);
        assert!(server <= 1.2, "{name} exposure {server}");
    }
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

/// Starts `plumb ARGS`, waits (bounded) until it listens on every one of
/// `ports`, runs `then` while it serves, and ends it.
fn serving(args: &[String], ports: &[u16], then: impl FnOnce()) {
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
        if ports.iter().all(|p| listening(*p)) {
            ok = true;
            break;
        }
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Kills the server also when `then` fails.
    struct Kill(Option<std::process::Child>);
    impl Drop for Kill {
        fn drop(&mut self) {
            if let Some(mut c) = self.0.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
    let mut guard = Kill(Some(child));
    if ok {
        then();
    }
    let mut child = guard.0.take().expect("the server");
    let _ = child.kill();
    let out = child.wait_with_output().expect("output");
    assert!(
        ok,
        "plumb {args:?} did not listen on {ports:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn starts_and_listens(args: &[String], port: u16) {
    serving(args, &[port], || {});
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

/// The all-tools unit's command line, each tool moved to a free port: it
/// listens on the three, and a test of each tool against it completes.
#[test]
fn the_all_tools_units_command_line_serves_each_tool() {
    let (p3, p2, ctl) = (port(), port(), port());
    // A nuttcp client asks for its data on the control port + 1.
    assert_eq!(port(), ctl + 1, "consecutive test ports");
    let args = exec_args(
        "plumb-server-all.service",
        "--tools iperf3,iperf2,nuttcp",
        &format!("--tools iperf3={p3},iperf2={p2},nuttcp={ctl}"),
    );
    serving(&args, &[p3, p2, ctl], || {
        for (tool, p) in [("iperf3", p3), ("iperf2", p2), ("nuttcp", ctl)] {
            let ps = p.to_string();
            let out = run(
                plumb_bin(),
                &[
                    "-c",
                    "127.0.0.1",
                    "--tool",
                    tool,
                    "-p",
                    &ps,
                    "-t",
                    "0.5",
                    "-J",
                ],
                Duration::from_secs(20),
            );
            assert!(
                out.status.success(),
                "--tool {tool} against the unit's server: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    });
}

/// The `[Service]` lines of a unit, comments and blank lines left out.
fn service_lines(name: &str) -> Vec<String> {
    unit(name)
        .lines()
        .skip_while(|l| *l != "[Service]")
        .take_while(|l| *l != "[Install]")
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_all_tools_unit_is_the_server_unit_with_three_tools() {
    let one = service_lines("plumb-server.service");
    let all = service_lines("plumb-server-all.service");
    let exec = |lines: &[String]| -> String {
        lines
            .iter()
            .find_map(|l| l.strip_prefix("ExecStart="))
            .expect("ExecStart")
            .to_string()
    };
    // plumb -s alone stays iperf3's server; the other swaps -p for --tools.
    assert!(!exec(&one).contains("--tools"), "{}", exec(&one));
    assert_eq!(
        exec(&all),
        exec(&one).replace("-p 5201", "--tools iperf3,iperf2,nuttcp")
    );
    // The same sandbox and limits; only the task cap is higher (an iperf 2
    // connection is a thread of its own).
    let differs = |l: &String| l.starts_with("ExecStart=") || l.starts_with("TasksMax=");
    let rest =
        |v: &[String]| -> Vec<String> { v.iter().filter(|l| !differs(l)).cloned().collect() };
    assert_eq!(rest(&all), rest(&one));
    assert!(all.contains(&"TasksMax=512".to_string()), "{all:?}");
    assert!(
        unit("plumb-server-all.service").contains("\nConflicts=plumb-server.service\n"),
        "both take 5201"
    );
}

/// Every unit in contrib/systemd is one of the Debian package's assets.
#[test]
fn the_package_installs_every_unit() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let mut names: Vec<String> = std::fs::read_dir(root.join("../../contrib/systemd"))
        .expect("contrib/systemd")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".service"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "plumb-exporter.service",
            "plumb-server-all.service",
            "plumb-server.service"
        ]
    );
    for n in &names {
        let asset =
            format!("[\"../../contrib/systemd/{n}\", \"usr/lib/systemd/system/\", \"644\"]");
        assert!(manifest.contains(&asset), "{n} is not in the deb's assets");
    }
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
    wait_listening(p);
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
