//! Flags and dispatch: parses the command line into typed configurations and
//! hands them to the command that runs them.
//!
//! Bad input of any kind ends with one line on stderr and exit code 2
//! ([`crate::usage`]).

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::usage::clap_exit;
use plumb_cli::calc::CalcArgs;
use plumb_cli::measure::MeasureArgs;
use plumb_cli::why::WhyArgs;

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
    /// The backup scenario on an emulated link: old window, then autotuned.
    Demo(plumb_cli::demo::DemoArgs),
    /// Model a path: BDP, window, loss and link limits, framing, RTT.
    Calc(CalcArgs),
    /// What limits a transfer: a test, a file, a capture, live connections.
    Why(WhyArgs),
    /// The host's TCP connections, busiest first, each with its limit.
    Top(plumb_cli::top::TopArgs),
    /// A long fat network on this machine, with plumb run across it.
    Lab(plumb_cli::lab_flags::LabArgs),
    /// Prometheus probes: a test per scrape, its metrics and its limit.
    Exporter(plumb_cli::exporter::ExporterArgs),
    /// A service's TCP handshake: scaling, SACK, ECN, MSS and their caps.
    Handshake(plumb_cli::handshake::HandshakeArgs),
    /// A self-contained HTML report of -J documents, captures or top logs.
    Report(plumb_cli::report::ReportArgs),
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
    use plumb_cli::measure::{CLIENT_ONLY, SERVER_ONLY};
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
            why_help(hide(
                hide(c, SERVER_ONLY),
                &[
                    "client",
                    "json_stream",
                    "json_stream_full_output",
                    "why",
                    "logfile",
                    "forceflush",
                ],
            ))
        })
        .mut_args(|a| {
            let first_test = SHORT_HELP.contains(&a.get_id().as_str());
            a.hide_short_help(!first_test)
        })
}

/// The flags `plumb -h` shows: what a first test and a first server need.
/// `plumb --help` shows every flag.
const SHORT_HELP: &[&str] = &[
    "server", "client", "port", "time", "parallel", "reverse", "udp", "bitrate", "window", "json",
    "rwin", "why", "link", "version", "help",
];

/// The iperf3 flags `plumb why` uses itself, whatever it explains: the
/// rest only shape the test it runs against HOST, and are listed apart.
const WHY_OWN: &[&str] = &["port", "json", "report", "verbose", "link"];

/// `plumb why --help`: why's own flags first, each said as why uses it;
/// the flags it forwards to the test it runs under their own heading,
/// shown by `--help`, not `-h`.
fn why_help(c: clap::Command) -> clap::Command {
    use clap::Args;
    let forwarded: Vec<String> = MeasureArgs::augment_args(clap::Command::new("m"))
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .filter(|id| !WHY_OWN.contains(&id.as_str()))
        .collect();
    let c = forwarded.iter().fold(c, |c, id| {
        c.mut_arg(id, |a| {
            a.help_heading("Test flags (with HOST)")
                .hide_short_help(true)
        })
    });
    c.mut_arg("verbose", |a| {
        a.help("Every flow, with everything known of it: the capture's notes, each end's operating system, every system's fixes, what could not be known")
    })
    .mut_arg("port", |a| {
        a.help("The server's port when testing HOST [default: 5201]; with live connections, a port at either end")
    })
    .mut_arg("link", |a| {
        a.help("The bottleneck link's rate (1g, 100M): what the verdict weighs the rate against")
    })
    .mut_arg("json", |a| a.help("Write the explanation as JSON"))
    .mut_arg("report", |a| a.help("Also write an HTML report of what was explained to this file"))
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
            .map(|s| s.render_long_help().to_string())
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

    /// `plumb -h` is the short summary, 40 lines on an 80-column terminal;
    /// `--help` has every flag.
    #[test]
    fn short_help_is_a_summary() {
        let mut c = command().term_width(80);
        c.build();
        let short = c.render_help().to_string();
        let long = c.render_long_help().to_string();
        assert!(
            short.lines().count() <= 40,
            "{} lines:\n{short}",
            short.lines().count()
        );
        for flag in ["--client", "--server", "--rwin", "--why"] {
            assert!(short.contains(flag), "-h lacks {flag}");
        }
        for flag in ["--fq-rate", "--mptcp", "--max-tests", "--timestamps"] {
            assert!(long.contains(flag) && !short.contains(flag), "{flag}");
        }
    }

    /// `plumb why --help`: the flags it uses itself first, said as it uses
    /// them; the test's flags under their own heading, which `-h` leaves out.
    #[test]
    fn why_help_sets_the_test_flags_apart() {
        let mut c = command();
        c.build();
        let why = c.find_subcommand_mut("why").expect("why");
        let long = why.render_long_help().to_string();
        let short = why.render_help().to_string();
        let (own, test) = long
            .split_once("Test flags (with HOST):")
            .expect("the heading");
        for flag in [
            "--from",
            "--capture",
            "--port",
            "--link",
            "--json",
            "--verbose",
        ] {
            assert!(own.contains(flag), "{flag} is why's own");
        }
        for flag in ["--time", "--parallel", "--rwin", "--bitrate"] {
            assert!(
                test.contains(flag) && !own.contains(flag),
                "{flag} shapes the test"
            );
            assert!(!short.contains(flag), "why -h shows {flag}");
        }
        assert!(
            !long.contains("listen on or connect to"),
            "-p said as the server's"
        );
        assert!(!long.contains("With --why"), "--link said as -c's");
        assert!(!long.contains("--logfile") && !long.contains("--forceflush"));
    }
}
