//! `plumb why` and `plumb top` on live connections of applications that are
//! not plumb (`tests/live/peer.py`, a small Python socket program), across
//! `plumb lab` links whose truth is known, diagnosed while the transfer
//! runs — from the sending host (near or far) and from the receiving one.
//! Lab tests need root and /dev/net/tun; elsewhere they say they were
//! skipped. Loopback tests need neither.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use common::*;
use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn can_lab() -> bool {
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
    });
    let tun = Path::new("/dev/net/tun").exists();
    let py = std::process::Command::new("python3")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !(root && tun && py) {
        eprintln!("skipped: live lab tests need root, /dev/net/tun and python3");
    }
    root && tun && py
}

fn peer_py() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live/peer.py")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("plumb-live-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

struct Ends {
    near: Value,
    far: Value,
}

/// Runs `peer.py NEAR_ARGS` in near (it connects to far) and `peer.py
/// FAR_ARGS` in far (it listens), and beside each, after 1.5 s, `plumb why
/// -p 5201 --for 3 -J --link RATE`.
fn live_lab(name: &str, lab_args: &[&str], near: &str, far: &str, rate: &str) -> Ends {
    let dir = scratch(name);
    let py = peer_py();
    let py = py.display();
    let why = format!("{} why -p 5201 --for 3 -J --link {rate}", plumb_bin());
    let d = dir.display();
    let near_cmd = format!(
        "python3 {py} role=connect host=$PLUMB_FAR {near} & sleep 1.5; {why} >{d}/near.json 2>{d}/near.err; wait"
    );
    let far_cmd = format!(
        "python3 {py} role=listen {far} & sleep 1.5; {why} >{d}/far.json 2>{d}/far.err; wait"
    );
    let mut a = vec!["lab"];
    a.extend_from_slice(lab_args);
    a.extend_from_slice(&["--exec", &near_cmd, "--far-exec", &far_cmd]);
    let out = run(plumb_bin(), &a, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "plumb {a:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |side: &str| -> Value {
        let p = dir.join(format!("{side}.json"));
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        let err = std::fs::read_to_string(dir.join(format!("{side}.err"))).unwrap_or_default();
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{side}: plumb why -J gave no JSON ({e}): {text} {err}"))
    };
    let ends = Ends {
        near: read("near"),
        far: read("far"),
    };
    let _ = std::fs::remove_dir_all(&dir);
    ends
}

/// The data connection's entry (the busiest), checked for identity.
fn busiest<'a>(v: &'a Value, role: &str) -> &'a Value {
    let c = &v["connections"][0];
    assert_eq!(c["this_host"], role, "{c:#}");
    assert!(c["local_port"] == 5201 || c["remote_port"] == 5201, "{c:#}");
    assert_eq!(c["command"], "python3", "{c:#}");
    assert!(c["pid"].as_u64().is_some_and(|p| p > 1), "{c:#}");
    assert_eq!(v["diagnosis"], c["diagnosis"]);
    c
}

fn limit(c: &Value) -> &str {
    c["diagnosis"]["limit"].as_str().unwrap_or("none")
}

fn summary(c: &Value) -> String {
    format!(
        "{} | {}",
        c["diagnosis"]["summary"], c["diagnosis"]["evidence"]
    )
}

#[test]
fn receive_window_17520_named_from_both_ends() {
    if !can_lab() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let e = live_lab(
        "rwnd",
        &["--rate", "1gbit", "--rtt", "15ms"],
        "dir=send secs=8",
        "dir=recv clamp=17520",
        "1g",
    );
    for (end, v, role) in [
        ("sender", &e.near, "sender"),
        ("receiver", &e.far, "receiver"),
    ] {
        let c = busiest(v, role);
        assert_eq!(limit(c), "receive_window", "{end}: {}", summary(c));
        let p = c["diagnosis"]["predicted_bps"].as_f64().unwrap_or(0.0);
        assert!(
            (p / 9.344e6 - 1.0).abs() <= 0.10,
            "{end}: predicted {p} not within 10 % of 9.34 Mb/s: {}",
            summary(c)
        );
        let m = c["diagnosis"]["measured_bps"].as_f64().unwrap_or(0.0);
        assert!((m / 9.344e6 - 1.0).abs() <= 0.25, "{end}: measured {m}");
    }
}
