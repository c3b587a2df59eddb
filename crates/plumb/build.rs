//! Release builds only: ask the linker to place the functions a test runs
//! (`link/hot-symbols.txt`, written by `scripts/hot-symbols`) together at the
//! start of `.text`.
//!
//! Why: the kernel maps a binary's cached pages 64 KiB around every page
//! fault, so code a run touches, scattered over the whole 2.4 MB `.text`,
//! makes nearly all of it resident; packed together, about 0.7 MB is. Every
//! `-P 8` end's peak resident memory counts it (`bench/run`). The order
//! changes no code. A name the list has and the binary lacks (after a change,
//! until the list is written again) is skipped, so a stale list only costs
//! memory, never the build.

use std::path::Path;

fn main() {
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
