//! Usage errors: one line on stderr and exit code 2, the convention of clap
//! and of iperf3's usage errors. A leaf: every command reports bad input
//! through it, and it imports none of them.

use std::process::ExitCode;

/// Exit code for bad flags or values.
pub const EXIT_USAGE: u8 = 2;

/// Prints help and version as clap does, but a usage error as one line.
pub fn clap_exit(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            // Nothing useful to do if stdout is gone.
            let _ = e.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(EXIT_USAGE)
        }
        _ => {
            let rendered = e.render().to_string();
            let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
            let first = lines.next().unwrap_or("invalid arguments");
            let mut msg = first.strip_prefix("error: ").unwrap_or(first).to_string();
            // "the following required arguments were not provided:" names them on the next line.
            if msg.ends_with(':') {
                if let Some(next) = lines.next() {
                    msg = format!("{msg} {next}");
                }
            }
            eprintln!("plumb: {msg} (see plumb --help)");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// Prints a usage error found after clap's own checks, as one line, and gives
/// the usage exit code.
pub fn usage_error(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("plumb: {msg}");
    ExitCode::from(EXIT_USAGE)
}
