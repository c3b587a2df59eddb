//! The skip record as `scripts/test` reads it: each case re-runs this test
//! binary on one child test with the environment under test, so no test
//! changes its own process's environment.

use std::process::Command;

/// The child: skips when asked to, otherwise does nothing.
#[test]
fn child_that_skips() {
    match std::env::var("TESTKIT_CHILD").as_deref() {
        Ok("lab") => plumb_testkit::skip_lab!("no /dev/net/tun in {}", "this sandbox"),
        Ok("other") => plumb_testkit::skip!("no IPv6\nloopback"),
        _ => {}
    }
}

fn child(kind: &str, log: &std::path::Path, require: &str) -> std::process::Output {
    Command::new(std::env::current_exe().expect("own binary"))
        .args([
            "--exact",
            "child_that_skips",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TESTKIT_CHILD", kind)
        .env("PLUMB_SKIP_LOG", log)
        .env("PLUMB_REQUIRE_LAB", require)
        .output()
        .expect("child runs")
}

/// A scratch file removed on drop.
struct Scratch(std::path::PathBuf);
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn skips_are_logged_one_line_each_and_lab_skips_fail_when_required() {
    let log = Scratch(std::env::temp_dir().join(format!("testkit-skip-{}", std::process::id())));
    let _ = std::fs::remove_file(&log.0);

    let out = child("lab", &log.0, "0");
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let name = "plumb-testkit::skip::child_that_skips";
    assert!(
        err.contains(&format!("SKIPPED {name}: no /dev/net/tun in this sandbox")),
        "{err}"
    );
    let out = child("other", &log.0, "1");
    assert!(out.status.success(), "a non-lab skip never fails: {out:?}");
    assert_eq!(
        std::fs::read_to_string(&log.0).expect("log"),
        format!("{name}: no /dev/net/tun in this sandbox\n{name}: no IPv6 loopback\n")
    );

    // Required: the lab skip fails the test and is not logged as a skip.
    let out = child("lab", &log.0, "1");
    assert!(
        !out.status.success(),
        "PLUMB_REQUIRE_LAB=1 fails a lab skip"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot run: no /dev/net/tun"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&log.0)
            .expect("log")
            .lines()
            .count(),
        2
    );
}
