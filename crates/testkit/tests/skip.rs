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
        Ok("tool") => plumb_testkit::skip_tool!("promtool is not installed"),
        _ => {}
    }
}

fn child(kind: &str, log: &std::path::Path, require: &str) -> std::process::Output {
    child_with(kind, log, require, "0")
}

/// `require` and `tools`: the values of PLUMB_REQUIRE_LAB and PLUMB_REQUIRE_TOOLS.
fn child_with(
    kind: &str,
    log: &std::path::Path,
    require: &str,
    tools: &str,
) -> std::process::Output {
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
        .env("PLUMB_REQUIRE_TOOLS", tools)
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

#[test]
fn tool_skips_are_logged_and_fail_only_when_tools_are_required() {
    let log = Scratch(std::env::temp_dir().join(format!("testkit-tool-{}", std::process::id())));
    let _ = std::fs::remove_file(&log.0);
    let name = "plumb-testkit::skip::child_that_skips";

    // The lab switch does not require tools.
    let out = child_with("tool", &log.0, "1", "0");
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("SKIPPED {name}: promtool is not installed")),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&log.0).expect("log"),
        format!("{name}: promtool is not installed\n")
    );

    // Required: the tool skip fails and is not logged; other skips still pass.
    let out = child_with("tool", &log.0, "0", "1");
    assert!(
        !out.status.success(),
        "PLUMB_REQUIRE_TOOLS=1 fails a tool skip"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot run: promtool is not installed"),
        "{err}"
    );
    assert!(err.contains("PLUMB_REQUIRE_TOOLS=1"), "{err}");
    let out = child_with("lab", &log.0, "0", "1");
    assert!(
        out.status.success(),
        "the tools switch does not require the lab: {out:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&log.0)
            .expect("log")
            .lines()
            .count(),
        2
    );
}
