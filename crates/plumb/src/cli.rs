//! Flags and dispatch: parses the command line into typed configurations and
//! hands them to the command that runs them.
//!
//! Bad input of any kind ends with one line on stderr and exit code 2
//! ([`crate::usage`]).

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::calc::CalcArgs;
use crate::measure::MeasureArgs;
use crate::usage::clap_exit;
use crate::why::WhyArgs;

/// Why does my application use only 10 Mb/s when the link is 1 Gb/s?
///
/// Measure with iperf3's flags (`plumb -s`, `plumb -c HOST`), or use a subcommand.
#[derive(Debug, Parser)]
#[command(
    name = "plumb",
    about,
    long_about = None,
    disable_version_flag = true,
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  plumb -s                                  run a server (iperf3-compatible)\n  plumb -c 127.0.0.1 -t 5                   measure against a plumb or iperf3 server\n  plumb calc --rate 1G --rtt 15ms --window 17520"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    measure: MeasureArgs,
    /// Print the version
    #[arg(short = 'v', long = "version")]
    version: bool,
    /// Write the man pages (`man`) or shell completions (`completions`) for
    /// this command line into DIR (scripts/package; docs/packaging.md)
    #[arg(long, hide = true, num_args = 2, value_names = ["WHAT", "DIR"])]
    generate: Option<Vec<String>>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The backup scenario on an emulated 1 Gbit/s, 15 ms link: the old window, then autotuned.
    Demo(crate::demo::DemoArgs),
    /// Model a path: BDP, window, loss and link limits, framing, frame rate, RTT from distance.
    Calc(CalcArgs),
    /// Say what limits a transfer: test HOST (or read --from, or use the model) and explain.
    Why(WhyArgs),
    /// The host's TCP connections, busiest first, with the limit of each (q quits).
    Top(crate::top::TopArgs),
    /// A long fat network on this machine (namespaces + link emulator), with plumb run across it.
    Lab(crate::common::lab_flags::LabArgs),
    /// Prometheus probes: HTTP /probe?target=HOST runs a test and answers with its metrics and limit.
    Exporter(crate::exporter::ExporterArgs),
    /// A TCP service's handshake: window scaling, SACK, timestamps, ECN, MSS, RTT, and what they mean.
    Handshake(crate::handshake::HandshakeArgs),
    /// Write a self-contained HTML report (charts, verdict) from -J documents; several are compared.
    Report(crate::report::ReportArgs),
    /// Run a server (the same as plumb -s).
    Server(MeasureArgs),
    /// Run a client against HOST (the same as plumb -c HOST).
    Client {
        /// Server to measure against
        host: String,
        #[command(flatten)]
        measure: MeasureArgs,
    },
}

/// The command line, with each subcommand's help showing only the flags that
/// apply to it: `plumb server` no client flags, `plumb client` and `plumb why`
/// no server flags (`plumb --help` shows both modes, as iperf3's does).
pub fn command() -> clap::Command {
    use crate::measure::{CLIENT_ONLY, SERVER_ONLY};
    fn hide(mut c: clap::Command, ids: &[&str]) -> clap::Command {
        for id in ids {
            c = c.mut_arg(id, |a| a.hide(true));
        }
        c
    }
    Cli::command()
        .mut_subcommand("server", |c| hide(hide(c, CLIENT_ONLY), &["server"]))
        .mut_subcommand("client", |c| hide(hide(c, SERVER_ONLY), &["client"]))
        .mut_subcommand("why", |c| {
            hide(
                hide(c, SERVER_ONLY),
                &["client", "json_stream", "json_stream_full_output", "why"],
            ).mut_arg("verbose", |a| {
                a.help("Every flow, with everything known of it: the capture's notes, each end's operating system, every system's fixes, what could not be known")
            })
        })
}

/// `plumb --version`: the version first, as iperf3's `iperf 3.12 (…)`, so
/// tools that read the first two words still can; then the commit it was
/// built from (build.rs).
fn version_line() -> String {
    format!(
        "plumb {} ({}; speaks iperf 3 protocol)",
        env!("CARGO_PKG_VERSION"),
        env!("PLUMB_BUILD_COMMIT")
    )
}

/// Parses the command line and runs the command.
pub fn run() -> anyhow::Result<ExitCode> {
    let cli = match parse() {
        Ok(cli) => cli,
        Err(code) => return Ok(code),
    };
    // clap's freed command tree goes back before any test.
    plumb_net::sys::release_free_heap();
    if cli.version {
        println!("{}", version_line());
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(what) = cli.generate {
        return crate::generate::run(&what, command());
    }
    match cli.command {
        Some(Command::Calc(args)) => crate::calc::run(&args),
        Some(Command::Demo(args)) => crate::demo::run(&args),
        Some(Command::Why(args)) => crate::why::run(&args),
        Some(Command::Lab(args)) => crate::lab::run(&args),
        Some(Command::Exporter(args)) => crate::exporter::run(&args),
        Some(Command::Top(args)) => crate::top::run(&args),
        Some(Command::Report(args)) => crate::report::run(&args),
        Some(Command::Handshake(args)) => crate::handshake::run(&args),
        Some(Command::Server(mut m)) => {
            m.server = true;
            crate::client_server::run(&m)
        }
        Some(Command::Client { host, mut measure }) => {
            measure.client = Some(host);
            crate::client_server::run(&measure)
        }
        None => crate::client_server::run(&cli.measure),
    }
}

/// The parsed command line, or the exit code of help, version or a usage
/// error (already printed).
///
/// Building clap's command tree for every subcommand takes about 100 KiB
/// of stack, which would stay resident for the whole test: it goes back
/// once parsing is done (`release_stack_below`), as the tree's heap does
/// (`release_free_heap`, in [`run`]). That is part of what every `-P 8`
/// end's peak resident memory counts (`bench/run`).
fn parse() -> Result<Cli, ExitCode> {
    let parsed = parse_deep();
    plumb_net::sys::release_stack_below();
    parsed
}

/// The parsing itself, in a frame of its own so that its stack lies below
/// [`parse`]'s. iperf3's form (the first argument a flag) is tried first
/// without the subcommands ([`Plain`]); anything it does not take (help, a
/// subcommand, a usage error) goes to the whole command line, so what is
/// printed is the same.
#[inline(never)]
fn parse_deep() -> Result<Cli, ExitCode> {
    let flag_first = std::env::args_os()
        .nth(1)
        .is_some_and(|a| a.as_encoded_bytes().starts_with(b"-"));
    if flag_first {
        if let Ok(p) = Plain::command()
            .try_get_matches()
            .and_then(|mut m| Plain::from_arg_matches_mut(&mut m))
        {
            return Ok(Cli {
                command: None,
                measure: p.measure,
                version: p.version,
                generate: p.generate,
            });
        }
    }
    command()
        .try_get_matches()
        .and_then(|mut m| Cli::from_arg_matches_mut(&mut m))
        .map_err(clap_exit)
}

/// [`Cli`] without its subcommands: clap builds the arguments of every
/// subcommand when it builds a command, and for `plumb -c HOST` that code and
/// its memory are all a test would run of them (every `-P 8` end's peak
/// resident memory counts it, `bench/run`). No help flag: help goes to
/// [`Cli`].
#[derive(Debug, Parser)]
#[command(name = "plumb", disable_version_flag = true, disable_help_flag = true)]
struct Plain {
    #[command(flatten)]
    measure: MeasureArgs,
    #[arg(short = 'v', long = "version")]
    version: bool,
    #[arg(long, hide = true, num_args = 2, value_names = ["WHAT", "DIR"])]
    generate: Option<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn flag_definitions_are_consistent() {
        // Duplicate names, bad defaults and conflicting groups panic here, not in front of a user.
        Cli::command().debug_assert();
        // mut_arg panics on an id that no longer exists: the lists stay true.
        command().debug_assert();
        Plain::command().debug_assert();
    }

    /// The option lines of a subcommand's help (not its examples).
    fn help(sub: &str) -> String {
        let mut c = command();
        c.build();
        let text = c
            .find_subcommand_mut(sub)
            .map(|s| s.render_help().to_string())
            .unwrap_or_default();
        text.lines()
            .filter(|l| l.trim_start().starts_with('-'))
            .map(|l| format!("{l}\n"))
            .collect()
    }

    #[test]
    fn each_subcommand_shows_the_flags_that_apply() {
        let why = help("why");
        for absent in [
            "--max-tests",
            "--one-off",
            "--server",
            "--rsa-private-key-path",
            "--json-stream",
        ] {
            assert!(!why.contains(absent), "why --help shows {absent}");
        }
        for present in ["--rwin", "--link", "--time", "--from"] {
            assert!(why.contains(present), "why --help lacks {present}");
        }
        let server = help("server");
        assert!(server.contains("--max-tests") && server.contains("--port"));
        assert!(!server.contains("--bitrate") && !server.contains("--username"));
        let client = help("client");
        assert!(client.contains("--bitrate") && client.contains("--username"));
        assert!(!client.contains("--max-tests") && !client.contains("--authorized-users-path"));
    }
}
