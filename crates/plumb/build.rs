//! Two things the binary learns at build time:
//!
//! - **The commit it was built from** (`plumb --version`): `PLUMB_BUILD_COMMIT`
//!   is `commit 1a2b3c4d5e6f`, with `, dirty` when tracked files differ from
//!   that commit, or `commit unknown` in a source tree without git; and
//!   `PLUMB_COMMIT_DATE`, that commit's date (empty without git).
//! - **Link order**, release builds only: ask the linker to place the
//!   functions a test runs (`link/hot-symbols.txt`, written by
//!   `scripts/hot-symbols`) together at the start of `.text`.
//!
//! Why the order: the kernel maps a binary's cached pages 64 KiB around every
//! page fault, so code a run touches, scattered over the whole 2.4 MB `.text`,
//! makes nearly all of it resident; packed together, about 0.7 MB is. Every
//! `-P 8` end's peak resident memory counts it (`bench/run`). The order
//! changes no code. A name the list has and the binary lacks (after a change,
//! until the list is written again) is skipped, so a stale list only costs
//! memory, never the build.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    commit();
    symbol_order();
}

/// Sets `PLUMB_BUILD_COMMIT` from `git`, when the workspace is a git checkout.
fn commit() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join("../..");
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(&root)
            // No index refresh (and no index.lock) while the user may be committing.
            .arg("--no-optional-locks")
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    // Only this workspace's own repository counts: a source tree unpacked
    // inside another one (a home directory kept in git) is not that commit.
    let ours = git(&["rev-parse", "--show-toplevel"])
        .and_then(|top| Path::new(&top).canonicalize().ok())
        .is_some_and(|top| root.canonicalize().is_ok_and(|r| r == top));
    let hash = ours
        .then(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .flatten();
    let (text, date) = match hash {
        Some(hash) => {
            watch_git(&git);
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            let date = git(&["show", "-s", "--format=%cs", "HEAD"]).unwrap_or_default();
            (
                format!("commit {hash}{}", if dirty { ", dirty" } else { "" }),
                date,
            )
        }
        None => ("commit unknown".to_string(), String::new()),
    };
    println!("cargo::rustc-env=PLUMB_BUILD_COMMIT={text}");
    // The man pages' date (`plumb --generate man`): the commit's, so the same
    // commit makes the same pages.
    println!("cargo::rustc-env=PLUMB_COMMIT_DATE={date}");
    // The sources the binary is built from: an edit there is what makes the
    // tree dirty (or clean again) for the binary. Edits elsewhere (tests,
    // docs) show on the next build that runs this script.
    println!(
        "cargo::rerun-if-changed={}",
        root.join("Cargo.toml").display()
    );
    println!(
        "cargo::rerun-if-changed={}",
        root.join("Cargo.lock").display()
    );
    if let Ok(crates) = std::fs::read_dir(root.join("crates")) {
        for c in crates.flatten() {
            for part in ["src", "Cargo.toml", "build.rs"] {
                let p = c.path().join(part);
                // A path that does not exist would rerun this script on every build.
                if p.exists() {
                    println!("cargo::rerun-if-changed={}", p.display());
                }
            }
        }
    }
}

/// Reruns this script when HEAD moves: HEAD itself (a checkout), the branch
/// it names (a commit), the packed refs, and HEAD's log, which every move of
/// HEAD appends to (a commit to a branch kept only in packed-refs too).
/// Files only, never a directory: cargo watches a directory's whole tree, and
/// the refs directories hold every worktree's branches, so any commit
/// anywhere would rebuild plumb.
fn watch_git(git: &dyn Fn(&[&str]) -> Option<String>) {
    let mut paths = vec!["HEAD".to_string(), "packed-refs".into(), "logs/HEAD".into()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        paths.push(branch);
    }
    for p in paths {
        let Some(path) = git(&["rev-parse", "--path-format=absolute", "--git-path", &p]) else {
            continue;
        };
        // A path that does not exist would rerun this script on every build.
        if Path::new(&path).is_file() {
            println!("cargo::rerun-if-changed={path}");
        }
    }
}

/// Release builds only: the symbol ordering file, for rust-lld.
fn symbol_order() {
    let list = Path::new("link/hot-symbols.txt");
    println!("cargo::rerun-if-changed={}", list.display());
    println!("cargo::rerun-if-env-changed=PLUMB_NO_SYMBOL_ORDER");
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    // rust-lld is the default linker of this target since Rust 1.90; another
    // linker (chosen through RUSTFLAGS) may not know the option, so only the
    // default set-up gets it.
    let flags = env("CARGO_ENCODED_RUSTFLAGS");
    let default_linker = !flags.contains("linker");
    if env("PROFILE") != "release"
        || env("TARGET") != "x86_64-unknown-linux-gnu"
        || !default_linker
        || std::env::var_os("PLUMB_NO_SYMBOL_ORDER").is_some()
        || !list.exists()
    {
        return;
    }
    let path = match list.canonicalize() {
        Ok(p) => p,
        Err(_) => return,
    };
    println!(
        "cargo::rustc-link-arg-bin=plumb=-Wl,--symbol-ordering-file={}",
        path.display()
    );
    println!("cargo::rustc-link-arg-bin=plumb=-Wl,--no-warn-symbol-ordering");
    // Not packed relative relocations (`-z pack-relative-relocs`, DT_RELR):
    // about 250 KiB less resident at each end, but the binary would need
    // glibc 2.36, and one copied to an older server (RHEL 8/9, Ubuntu 22.04)
    // would not start. plumb is copied to the far end of a path more often
    // than it is built there.
}
