//! `plumb lab` from start to end as a script sees it: only JSON on stdout
//! when asked, a bad client flag refused before any lab is built, an
//! interrupted run still reporting what it has, and — however it ends — no
//! process, cgroup, namespace or /tmp file of the lab left behind.
//!
//! Every process a lab starts inherits the environment of `plumb lab`, so
//! each run carries a tag of its own (`PLUMB_TEST_TAG`), and "left behind"
//! means: a live process with that tag (whatever namespace it is in), a
//! cgroup or namespace named after the lab's pid, a /tmp entry naming it.
//! Needs root and /dev/net/tun (the flag check does not).

mod common;

use std::io::Read;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn new_tag() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "lifecycle-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// `plumb lab ARGS…` with its output piped and the run's tag set.
fn spawn_lab(args: &[&str], tag: &str) -> Child {
    Command::new(plumb_bin())
        .args(args)
        .env("PLUMB_TEST_TAG", tag)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("plumb lab starts")
}

/// Reads a pipe on a thread of its own; the bytes come back through the
/// receiver once the pipe closes. A process the lab failed to end keeps the
/// pipe open: callers wait for the bytes with a bound, not forever.
fn drain(mut pipe: impl Read + Send + 'static) -> std::sync::mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = pipe.read_to_end(&mut v);
        let _ = tx.send(v);
    });
    rx
}

/// Waits for `child` (killing it after `limit`, which fails the test), then
/// at most 3 s more for its pipes to close.
fn finish(mut child: Child, limit: Duration) -> Output {
    let out = child.stdout.take().map(drain);
    let err = child.stderr.take().map(drain);
    let t0 = Instant::now();
    let status = loop {
        if let Ok(Some(st)) = child.try_wait() {
            break st;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("plumb lab ran past {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let collect = |rx: Option<std::sync::mpsc::Receiver<Vec<u8>>>| {
        rx.and_then(|rx| rx.recv_timeout(Duration::from_secs(3)).ok())
            .unwrap_or_else(|| b"(pipe still open: something the lab started holds it)".to_vec())
    };
    Output {
        status,
        stdout: collect(out),
        stderr: collect(err),
    }
}

/// Live processes carrying `tag`, with their command lines.
fn tagged(tag: &str) -> Vec<String> {
    let want = format!("PLUMB_TEST_TAG={tag}");
    let me = std::process::id();
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == want.as_bytes()))
        })
        .map(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let ns = std::fs::read_link(format!("/proc/{pid}/ns/net")).unwrap_or_default();
            format!(
                "{pid} in {}: {}",
                ns.display(),
                String::from_utf8_lossy(&cmd).replace('\0', " ")
            )
        })
        .collect()
}

/// Kills what a failing lab left running, so the failure leaves nothing
/// either (namespaces and cgroups of a dead lab go at the next lab's start).
fn kill_tagged(tag: &str) {
    for line in tagged(tag) {
        if let Some(pid) = line.split_whitespace().next() {
            let _ = Command::new("kill").args(["-KILL", pid]).status();
        }
    }
}

/// Everything of the lab run by process `lab_pid` (tag `tag`) that still
/// exists: processes, cgroups, namespaces, TUN devices, /tmp files.
fn remains(lab_pid: u32, tag: &str) -> Vec<String> {
    let mut left = tagged(tag);
    let prefix = format!("plumb-{lab_pid}-");
    for root in [
        "/sys/fs/cgroup",
        "/sys/fs/cgroup/unified",
        "/sys/fs/cgroup/cpu",
        "/run/netns",
    ] {
        for e in std::fs::read_dir(root).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(&prefix) {
                left.push(format!("{root}/{name}"));
            }
        }
    }
    let pid_s = lab_pid.to_string();
    for e in std::fs::read_dir(std::env::temp_dir())
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.contains("plumb") && name.contains(&pid_s) {
            left.push(format!("/tmp/{name}"));
        }
    }
    left.extend(leftovers());
    left
}

/// Runs `plumb lab ARGS…` to the end and checks that nothing is left.
fn lab_run(args: &[&str], limit: Duration) -> Output {
    let tag = new_tag();
    let child = spawn_lab(args, &tag);
    let pid = child.id();
    let out = finish(child, limit);
    let left = remains(pid, &tag);
    kill_tagged(&tag);
    assert!(
        left.is_empty(),
        "plumb {args:?} left {left:?}; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn a_bad_client_flag_is_refused_before_the_lab_is_built() {
    // No root needed: nothing is built.
    for args in [
        &["lab", "--", "--rwinn", "1"][..],
        &["lab", "--rate", "1gbit", "--", "-t", "3x"],
        &["lab", "--", "-P", "0"],
        &["lab", "--", "-p", "6000"],
        &["lab", "--", "-s"],
    ] {
        let t0 = Instant::now();
        let out = run(plumb_bin(), args, Duration::from_secs(10));
        let took = t0.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("client flags after --"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        // Building and probing a lab takes over a second; the check, a few ms.
        assert!(took < Duration::from_secs(1), "{args:?} took {took:?}");
    }
}

#[test]
fn json_after_the_dashes_means_only_json_on_stdout() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = lab_run(
        &[
            "lab", "--rate", "1gbit", "--rtt", "15ms", "--", "-t", "2", "-J",
        ],
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out, "plumb lab -- -J");
    assert_clean(&v, "plumb lab -- -J");
    assert!(v["lab"].is_object() && v["model"].is_object(), "{v}");
    assert!(num(&v, "end.sum_received.bits_per_second") > 0.0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Lab link:"), "the note goes to stderr: {err}");
    // The same bytes through the parser a script would use.
    if Command::new("python3").arg("--version").output().is_ok() {
        let mut py = Command::new("python3")
            .args(["-m", "json.tool"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("python3");
        std::io::Write::write_all(&mut py.stdin.take().expect("stdin"), &out.stdout)
            .expect("feed python3");
        assert!(
            py.wait().expect("python3").success(),
            "json.tool refused it"
        );
    }
}

#[test]
fn json_stream_before_the_dashes_is_one_event_per_line() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = lab_run(
        &[
            "lab",
            "--rate",
            "100mbit",
            "--rtt",
            "5ms",
            "--json-stream",
            "--",
            "-t",
            "2",
        ],
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(names.first(), Some(&"start"), "{names:?}");
    assert!(names.contains(&"interval"), "{names:?}");
    assert_eq!(names.last(), Some(&"lab"), "{names:?}");
    let last = events.last().expect("events");
    assert!(last["data"]["model"]["predicted_bps"].as_f64().is_some());
}

/// Waits (bounded) until the lab's stderr has said its link is up, then a
/// moment more so the client is running; returns the stderr read so far.
fn wait_for_client(child: &mut Child, after: Duration) {
    let mut err = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 512];
        let mut told = false;
        while let Ok(n) = err.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            if !told && String::from_utf8_lossy(&seen).contains("Lab link:") {
                told = true;
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the lab came up");
    std::thread::sleep(after);
}

/// The marker file an `--exec` program touches once it runs (see
/// [`wait_for_exec`]).
fn mark_of(tag: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("plumb-{tag}.ran"))
}

/// Waits (bounded) until the lab's `--exec` program has touched its
/// marker: the lab spawns it only after it began deferring signals, so a
/// signal sent now meets the lab's handling of a running program, not its
/// start-up (a fixed wait after "Lab link:" lost that race once on a loaded
/// machine). The marker is removed.
fn wait_for_exec(child: &mut Child, tag: &str) {
    wait_for_client(child, Duration::ZERO);
    let mark = mark_of(tag);
    let t0 = Instant::now();
    while !mark.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the --exec program did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = std::fs::remove_file(&mark);
    std::thread::sleep(Duration::from_millis(100));
}

#[test]
fn an_interrupted_lab_prints_its_partial_result_and_leaves_nothing() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for signal in ["INT", "TERM"] {
        let tag = new_tag();
        let mut child = spawn_lab(
            &[
                "lab", "--rate", "100mbit", "--rtt", "10ms", "-J", "--", "-t", "30",
            ],
            &tag,
        );
        let pid = child.id();
        wait_for_client(&mut child, Duration::from_millis(2500));
        let t0 = Instant::now();
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &pid.to_string()])
            .status()
            .expect("kill");
        assert!(sent.success());
        let out = finish(child, Duration::from_secs(20)).stdout;
        let took = t0.elapsed();
        let left = remains(pid, &tag);
        kill_tagged(&tag);
        assert!(left.is_empty(), "SIG{signal}: left {left:?}");
        assert!(took < Duration::from_secs(10), "SIG{signal}: took {took:?}");
        let v: Value = serde_json::from_slice(&out).unwrap_or_else(|e| {
            panic!(
                "SIG{signal}: stdout is not JSON ({e}): {}",
                String::from_utf8_lossy(&out)
            )
        });
        let intervals = v["intervals"].as_array().map_or(0, Vec::len);
        assert!(
            intervals >= 1,
            "SIG{signal}: the partial result has {intervals} intervals"
        );
        assert!(v["error"].is_string(), "SIG{signal}: no error said: {v}");
        assert!(v["lab"].is_object(), "SIG{signal}: no lab section");
    }
}

#[test]
fn a_far_program_that_outlives_the_near_one_is_ended() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // A far program with a child of its own (forked into the background),
    // both running long after the near program is done; the near one says
    // which cgroup holds it.
    let out = lab_run(
        &[
            "lab",
            "--rate",
            "100m",
            "--rtt",
            "10ms",
            "--far-exec",
            "sleep 60 & sleep 60",
            "--exec",
            "cat /proc/self/cgroup",
        ],
        Duration::from_secs(30),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    if std::fs::read_to_string("/proc/self/mountinfo").is_ok_and(|m| m.contains(" cgroup2 ")) {
        assert!(
            text.lines()
                .any(|l| l.starts_with("0::") && l.contains("plumb-") && l.ends_with("-near")),
            "the near program runs in the lab's cgroup: {text}"
        );
    }
}

#[test]
fn a_receiver_with_data_in_flight_is_ended() {
    if !can_lab() {
        return;
    }
    let Some(python) = ["/usr/bin/python3", "python3"]
        .into_iter()
        .find(|p| Command::new(p).arg("--version").output().is_ok())
    else {
        plumb_testkit::skip_tool!("no python3 for the receiver");
        return;
    };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // The case: a plain receiver behind a 17,520-byte window, and a
    // sender that hands 3 MB to its socket and exits at once; at 17,520 B
    // per 15 ms the data needs about 2.6 s to arrive, the receiver keeps
    // reading after the near side is done.
    let receiver = "import socket\n\
        s = socket.socket()\n\
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n\
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP, 17520)\n\
        s.bind(('0.0.0.0', 6000)); s.listen(1)\n\
        c, _ = s.accept()\n\
        while c.recv(65536): pass\n";
    let sender = "import socket, os, time\n\
        for i in range(100):\n    \
            try:\n        \
                s = socket.create_connection((os.environ['PLUMB_FAR'], 6000)); break\n    \
            except OSError: time.sleep(0.05)\n\
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)\n\
        s.sendall(b'x' * (3 << 20))\n\
        print('sent', flush=True)\n\
        os._exit(0)\n";
    let far = format!("{python} -c \"{receiver}\"");
    let near = format!("{python} -c \"{sender}\"");
    let t0 = Instant::now();
    let out = lab_run(
        &[
            "lab",
            "--rate",
            "1gbit",
            "--rtt",
            "15ms",
            "--far-exec",
            &far,
            "--exec",
            &near,
        ],
        Duration::from_secs(60),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("sent"),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The lab did not wait for the far program: it ended it.
    assert!(t0.elapsed() < Duration::from_secs(30));
}

#[test]
fn a_lab_that_fails_ends_what_it_started() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // The plumb client needs a server in "far"; this far program never
    // listens, so the lab gives up (after 10 s) with an error — and still
    // ends the program and the child it forked.
    let out = lab_run(
        &[
            "lab",
            "--rate",
            "100m",
            "--rtt",
            "10ms",
            "--far-exec",
            "sleep 60 & sleep 60",
            "--",
            "-t",
            "2",
        ],
        Duration::from_secs(40),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did not start listening"), "{err}");
}

#[test]
fn sigterm_during_exec_ends_both_sides() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tag = new_tag();
    let exec = format!("sleep 60 & touch {}; sleep 60", mark_of(&tag).display());
    let mut child = spawn_lab(
        &[
            "lab",
            "-J",
            "--rate",
            "100m",
            "--rtt",
            "10ms",
            "--far-exec",
            "sleep 60 & sleep 60",
            "--exec",
            &exec,
        ],
        &tag,
    );
    let pid = child.id();
    wait_for_exec(&mut child, &tag);
    // Both sides are running: sh and two sleeps each.
    let running = tagged(&tag).len();
    let t0 = Instant::now();
    let sent = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
    let out = finish(child, Duration::from_secs(20));
    let took = t0.elapsed();
    let left = remains(pid, &tag);
    kill_tagged(&tag);
    assert!(running >= 6, "{running} programs were running");
    assert!(left.is_empty(), "left {left:?}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert_ne!(out.status.code(), Some(0));
}

#[test]
fn a_second_signal_ends_the_lab_at_once_and_still_leaves_nothing() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tag = new_tag();
    let exec = format!(
        "trap '' INT TERM; touch {}; sleep 60",
        mark_of(&tag).display()
    );
    // A far program that ignores the first signal's consequences: the lab
    // must not wait for it after the second.
    let mut child = spawn_lab(
        &[
            "lab",
            "-J",
            "--rate",
            "100m",
            "--rtt",
            "10ms",
            "--far-exec",
            "sleep 60 & sleep 60",
            "--exec",
            &exec,
        ],
        &tag,
    );
    let pid = child.id();
    wait_for_exec(&mut child, &tag);
    let t0 = Instant::now();
    for _ in 0..2 {
        let sent = Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .expect("kill");
        assert!(sent.success());
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = finish(child, Duration::from_secs(20));
    let took = t0.elapsed();
    let left = remains(pid, &tag);
    kill_tagged(&tag);
    assert!(left.is_empty(), "left {left:?}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    // Ended by the signal itself, as without a handler.
    assert_eq!(out.status.code(), None, "{:?}", out.status);
}

#[test]
fn what_a_killed_lab_left_running_is_ended_by_the_next_lab() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tag = new_tag();
    let exec = format!("sleep 60 & touch {}; sleep 60", mark_of(&tag).display());
    let mut child = spawn_lab(
        &[
            "lab",
            "-J",
            "--rate",
            "100m",
            "--rtt",
            "10ms",
            "--far-exec",
            "sleep 60 & sleep 60",
            "--exec",
            &exec,
        ],
        &tag,
    );
    let pid = child.id();
    wait_for_exec(&mut child, &tag);
    // SIGKILL: no handler runs. The direct children die with the lab; what
    // they started lives on, in the lab's cgroups and namespaces.
    let _ = child.kill();
    let _ = child.wait();
    let t0 = Instant::now();
    while tagged(&tag).len() > 4 && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let orphans = tagged(&tag);
    // The next lab's start removes a dead lab's cgroups (with their
    // processes) and namespaces.
    let out = lab_run(
        &["lab", "--rate", "100m", "--rtt", "10ms", "--exec", "true"],
        Duration::from_secs(30),
    );
    let left = remains(pid, &tag);
    kill_tagged(&tag);
    assert!(out.status.success());
    assert!(!orphans.is_empty(), "the killed lab left nothing to clean");
    assert!(left.is_empty(), "left {left:?}");
}
