//! The Debian package `scripts/package` builds (target/debian/plumb_*.deb),
//! unpacked into a temporary directory, never installed: each man page, as
//! `man -l` shows it, lists the same long flags as the packaged binary's
//! `--help` for that command (`plumb-why.1` and `plumb why --help`), so the
//! pages cannot drift from the command line they document.
//!
//! `cargo test` alone does not build the package (cargo's lock is held);
//! without it the test is a counted skip, which `scripts/test` (that builds
//! it, PLUMB_REQUIRE_TOOLS=1) makes a failure. Every test here is named
//! `built_deb_…`: `scripts/test` builds the package beside the other tests
//! and leaves these out of that run by the prefix (`--skip built_deb_`),
//! then runs them once the package is there.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// The newest .deb in the target directory this test was built into.
fn deb() -> Option<PathBuf> {
    let target = Path::new(plumb_bin()).parent()?.parent()?;
    std::fs::read_dir(target.join("debian"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("plumb_") && n.ends_with(".deb"))
        })
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
}

fn runs(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The long flags a help text defines: its option lines (the lines that
/// start with a flag, not their descriptions), up to the two spaces before
/// the description.
fn help_flags(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| {
            let t = l.trim_start();
            t.starts_with('-') && l.len() - t.len() <= 6
        })
        .flat_map(|l| long_flags(l.trim_start().split("  ").next().unwrap_or("")))
        .collect()
}

/// The long flags a rendered man page defines: its OPTIONS (and other flag
/// sections') tag
/// lines (indented 7, as man sets `.TP`), up to the first word that is not
/// a flag or a value (a short tag has its description on the same line).
fn man_flags(text: &str) -> BTreeSet<String> {
    let mut in_options = false;
    let mut flags = BTreeSet::new();
    for line in text.lines() {
        if !line.starts_with(' ') && !line.is_empty() {
            // OPTIONS, and a section of its own for each help heading
            // (`plumb why`'s "TEST FLAGS (WITH HOST)").
            let head = line.trim();
            in_options = head == "OPTIONS" || head.contains("FLAGS");
            continue;
        }
        let t = line.trim_start();
        if !in_options || line.len() - t.len() != 7 || !t.starts_with('-') {
            continue;
        }
        let tag: Vec<&str> = t
            .split_whitespace()
            .take_while(|w| w.starts_with('-') || w.starts_with('<') || w.starts_with('['))
            .collect();
        flags.extend(long_flags(&tag.join(" ")));
    }
    flags
}

fn long_flags(s: &str) -> Vec<String> {
    s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(str::to_string)
        .collect()
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn built_deb_each_man_page_lists_the_flags_its_help_does() {
    let Some(deb) = deb() else {
        plumb_testkit::skip_tool!("no target/debian/plumb_*.deb: scripts/package builds it");
        return;
    };
    if !runs("dpkg-deb", "--version") || !runs("man", "--version") {
        plumb_testkit::skip_tool!(
            "dpkg-deb or man is not installed (scripts/test installs man-db)"
        );
        return;
    }
    let dir = TempDir(std::env::temp_dir().join(format!("plumb-deb-{}", std::process::id())));
    run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&dir.0));
    let bin = dir.0.join("usr/bin/plumb");
    // A package left from older sources documents another command line:
    // the packaged binary's help must be this build's.
    let help = |b: &Path| run(Command::new(b).args(["why", "--help"]));
    if help(&bin) != help(Path::new(plumb_bin())) {
        plumb_testkit::skip_tool!(
            "{} is older than this build's sources: scripts/package builds it again",
            deb.display()
        );
        return;
    }
    let pages = dir.0.join("usr/share/man/man1");
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(&pages)
        .expect("man1 in the package")
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".1.gz") else {
            continue;
        };
        // plumb.1 is `plumb --help`; plumb-why.1 is `plumb why --help`.
        let sub: Vec<&str> = stem.strip_prefix("plumb-").into_iter().collect();
        // Wide enough that no tag line wraps; C: plain ASCII hyphens.
        let man = run(Command::new("man")
            .arg("-l")
            .arg(entry.path())
            .env("MANWIDTH", "200")
            .env("LC_ALL", "C"));
        let help = run(Command::new(&bin).args(&sub).arg("--help"));
        let (in_man, in_help) = (man_flags(&man), help_flags(&help));
        assert!(
            in_help.len() > 1,
            "{stem}: no flags read from --help:\n{help}"
        );
        assert_eq!(
            in_man,
            in_help,
            "{name} and plumb {} --help list different long flags",
            sub.join(" ")
        );
        checked.push(stem.to_string());
    }
    for want in ["plumb", "plumb-why", "plumb-lab", "plumb-calc"] {
        assert!(
            checked.iter().any(|c| c == want),
            "no {want}.1 in {checked:?}"
        );
    }
}

/// The readers take flags from the lines that define them, not from the
/// descriptions that mention other flags.
#[test]
fn built_deb_flag_readers_read_definitions_not_descriptions() {
    let help = "Options:
      --from <FROM>   Read a saved -J document, not --host
                      (continued: --not-a-flag)
  -w, --window <W>    Socket buffer
";
    let flags = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(help_flags(help), flags(&["--from", "--window"]));
    let man = "NAME
       plumb-why - see --from
OPTIONS
       --from <FROM>
              Read a saved -J document, not --host
       --ipv6 IPv6 headers, unlike --vlan
       -w, --window <W>
              Socket buffer
EXAMPLES
       --not-an-option
";
    assert_eq!(man_flags(man), flags(&["--from", "--ipv6", "--window"]));
}
