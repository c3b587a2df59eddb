//! Test-only helpers shared by the workspace's test binaries (a dev-dependency,
//! never linked into plumb itself).
//!
//! It owns one thing: *counted skips*. Rust's test harness has no run-time
//! skip, so a test that cannot run here (no root, no `/dev/net/tun`, no IPv6
//! loopback) returns early and the harness counts it as passed. Before
//! returning, such a test calls [`skip_lab!`] or [`skip!`], which
//!
//! - prints `SKIPPED <name>: <reason>` to stderr, and
//! - when `PLUMB_SKIP_LOG` names a file, appends the line `<name>: <reason>`
//!   to it (one `write` on an `O_APPEND` file, so concurrent test binaries do
//!   not interleave lines), where `<name>` is
//!   `<package>::<test binary>::<test path>`, e.g.
//!   `plumb::lab::backup_scenario_with_the_old_window`.
//!
//! `scripts/test` sets `PLUMB_SKIP_LOG`, names the skipped tests and counts
//! them apart from the passed ones. With `PLUMB_REQUIRE_LAB=1` (set by
//! `scripts/test` when `CI=true`) a *lab* skip panics instead: where the lab
//! must run, a lab that cannot be built fails the test. A scenario test
//! that built its lab but finds its premise false (a quota that did not
//! bind, a queue that did not fill) calls [`skip_premise!`] before asserting
//! any verdict: skipped and counted, a failure where the lab must run.
//! Likewise `PLUMB_REQUIRE_TOOLS=1` (set by `scripts/test` once it has installed every
//! program the tests run, and in CI) makes a [`skip_tool!`] a failure: a test
//! that cannot find a program installed for it must not pass quietly.

use std::io::Write;

/// Why a test could not run, which decides whether `PLUMB_REQUIRE_LAB` makes
/// the skip a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// The lab: root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and `/dev/net/tun`.
    Lab,
    /// A program `scripts/test` installs (prometheus, promtool, curl,
    /// python3, systemd-analyze, chromium).
    Tool,
    /// The test's scenario: it built its lab, but what the scenario needs
    /// (a quota that binds, a queue that fills) did not hold, so a verdict
    /// would say nothing. Fails like [`Need::Lab`] under `PLUMB_REQUIRE_LAB=1`.
    Premise,
    /// Anything else the machine may lack (an IPv6 loopback, a peer program).
    Other,
}

/// Environment variable naming the file skips are appended to.
pub const SKIP_LOG: &str = "PLUMB_SKIP_LOG";
/// Environment variable that turns lab skips into failures when it is `1`.
pub const REQUIRE_LAB: &str = "PLUMB_REQUIRE_LAB";
/// Environment variable that turns tool skips into failures when it is `1`.
pub const REQUIRE_TOOLS: &str = "PLUMB_REQUIRE_TOOLS";

/// Records that the calling test did not run. Use [`skip!`] or
/// [`skip_lab!`], which fill in `package` and `binary`.
///
/// # Panics
/// When `need` is [`Need::Lab`] and `PLUMB_REQUIRE_LAB=1`, or [`Need::Tool`]
/// and `PLUMB_REQUIRE_TOOLS=1`: the test fails with the reason instead of
/// being skipped.
pub fn record(need: Need, package: &str, module: &str, reason: &str) {
    let name = test_name(package, module);
    // One line per skip, whatever the reason's text holds.
    let reason = reason.replace(['\n', '\r'], " ");
    let required = |var: &str| std::env::var(var).is_ok_and(|v| v == "1");
    match need {
        Need::Lab if required(REQUIRE_LAB) => {
            panic!("{name} cannot run: {reason} ({REQUIRE_LAB}=1: the lab must run here)")
        }
        Need::Premise if required(REQUIRE_LAB) => {
            panic!("{name}: its scenario does not hold: {reason} ({REQUIRE_LAB}=1)")
        }
        Need::Tool if required(REQUIRE_TOOLS) => panic!(
            "{name} cannot run: {reason} ({REQUIRE_TOOLS}=1: scripts/test installed the tools)"
        ),
        _ => {}
    }
    eprintln!("SKIPPED {name}: {reason}");
    if let Some(path) = std::env::var_os(SKIP_LOG).filter(|p| !p.is_empty()) {
        let line = format!("{name}: {reason}\n");
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        // A skip that is not counted would pass silently: fail instead.
        if let Err(e) = written {
            panic!(
                "{name}: cannot append to {SKIP_LOG}={}: {e}",
                path.to_string_lossy()
            );
        }
    }
}

/// `package::binary::test`: the harness names each test's thread after the
/// test's path inside its binary; `module` is the caller's `module_path!()`,
/// whose first segment is the binary.
fn test_name(package: &str, module: &str) -> String {
    let binary = module.split("::").next().unwrap_or(module);
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    format!("{package}::{binary}::{test}")
}

/// What [`skip!`], [`skip_tool!`] and [`skip_lab!`] expand to: [`record`]
/// with the calling crate's name and module, which only a macro expanded
/// there can name.
#[doc(hidden)]
#[macro_export]
macro_rules! __skip {
    ($need:ident, $($reason:tt)+) => {
        $crate::record(
            $crate::Need::$need,
            env!("CARGO_PKG_NAME"),
            module_path!(),
            &format!($($reason)+),
        )
    };
}

/// Records a skip for a reason other than the lab; the test then returns.
/// `skip!("no IPv6 loopback")` or with `format!` arguments.
#[macro_export]
macro_rules! skip {
    ($($reason:tt)+) => { $crate::__skip!(Other, $($reason)+) };
}

/// Records that a program the test runs (one `scripts/test` installs) is
/// missing or unusable; panics under `PLUMB_REQUIRE_TOOLS=1`.
/// `skip_tool!("promtool is not installed")`.
#[macro_export]
macro_rules! skip_tool {
    ($($reason:tt)+) => { $crate::__skip!(Tool, $($reason)+) };
}

/// Records that the lab cannot run here; panics under `PLUMB_REQUIRE_LAB=1`.
#[macro_export]
macro_rules! skip_lab {
    ($($reason:tt)+) => { $crate::__skip!(Lab, $($reason)+) };
}

/// Records that the test's scenario did not hold (checked before any
/// verdict is asserted); panics under `PLUMB_REQUIRE_LAB=1`.
/// `skip_premise!("the quota ran out in {t} of {p} periods")`.
#[macro_export]
macro_rules! skip_premise {
    ($($reason:tt)+) => { $crate::__skip!(Premise, $($reason)+) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_package_binary_and_test() {
        let n = test_name("plumb", "lab");
        assert_eq!(n, "plumb::lab::tests::names_carry_package_binary_and_test");
        assert_eq!(test_name("p", "b::inner"), n.replace("plumb::lab", "p::b"));
    }
}
