//! `plumb`: why does my application use only 10 Mb/s when the link is 1 Gb/s?
//!
//! The binary is glue: it builds the command line from `plumb_cli`'s flags,
//! hands the typed configurations they become to the library crates and maps
//! their outcomes to exit codes. No formula, protocol decision or socket
//! lives here.

mod calc;
mod cli;
mod client_server;
mod common;
mod demo;
mod exporter;
mod generate;
mod handshake;
mod lab;
mod report;
mod sys;
mod top;
mod usage;
mod why;

use std::process::ExitCode;

fn main() -> ExitCode {
    // Before any thread starts: one heap for all of them.
    plumb_net::sys::one_heap_arena();
    match cli::run() {
        Ok(code) => code,
        Err(e) => {
            // A closed stdout (`plumb calc … | head -1`) is not a failure.
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("plumb: {e:#}");
            ExitCode::from(1)
        }
    }
}
