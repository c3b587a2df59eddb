//! `plumb -s` / `plumb -c HOST` (and `plumb server` / `plumb client HOST`):
//! iperf3's flags ([`MeasureArgs`], `plumb_cli::measure`) run as a server or a
//! client.

use std::process::ExitCode;
use std::time::Duration;

use plumb_net::config::{ServerConfig, DEFAULT_PORT};
use plumb_record::{Sink, Tee};
use plumb_report::json::JsonSink;

use crate::common::report_page;
use crate::common::test_explain::test_and_explain;
use crate::measure::{pin, sink, ErrorsToStderr};
use crate::usage::usage_error;
use plumb_cli::measure::{client_config, family, test_spec, MeasureArgs};

mod daemon;
mod server_printer;

/// A report's name for a test against the host in the flags.
fn host_name(a: &MeasureArgs) -> String {
    format!("test against {}", a.client.as_deref().unwrap_or("?"))
}

/// Runs the client or the server the flags ask for.
pub fn run(a: &MeasureArgs) -> anyhow::Result<ExitCode> {
    if let Some(why) = a.refused.first() {
        return Ok(usage_error(why));
    }
    if let Some(why) = unspoken_tool(a) {
        return Ok(usage_error(why));
    }
    if a.server {
        return run_server(a);
    }
    let Some(host) = a.client.clone() else {
        return Ok(usage_error(
            "give -s to run a server or -c HOST to run a client (see plumb --help)",
        ));
    };
    let _ = host;
    if a.why {
        // It pins this end itself (so does `plumb why HOST`).
        return test_and_explain(a, a.link);
    }
    if let Err(code) = pin(a) {
        return Ok(code);
    }
    let spec = match test_spec(a) {
        Ok(s) => s,
        Err(msg) => return Ok(usage_error(msg)),
    };
    let cfg = match client_config(a, spec) {
        Ok(c) => c,
        Err(msg) => return Ok(usage_error(msg)),
    };
    let mut sink = sink(a)?;
    let text_on_terminal = !a.json && !a.json_stream && a.logfile.is_none();
    let mut errors = ErrorsToStderr {
        inner: sink.as_mut(),
        printed: false,
    };
    // --report keeps the test's -J document for the page.
    let mut capture = a.report.as_ref().map(|_| JsonSink::new(Vec::new()));
    let outcome = match &a.json_file {
        None => {
            let first: &mut dyn Sink = if text_on_terminal {
                &mut errors
            } else {
                &mut *errors.inner
            };
            match capture.as_mut() {
                None => plumb_net::client::run(&cfg, first),
                Some(json) => plumb_net::client::run(
                    &cfg,
                    &mut Tee {
                        first,
                        second: json,
                    },
                ),
            }
        }
        Some(path) => {
            let file = std::fs::File::create(path)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
            let mut json = JsonSink::new(file);
            let first: &mut dyn Sink = if text_on_terminal {
                &mut errors
            } else {
                errors.inner
            };
            let mut tee = Tee {
                first,
                second: &mut json,
            };
            let r = plumb_net::client::run(&cfg, &mut tee);
            json.finish()?;
            r
        }
    };
    let printed = errors.printed;
    sink.finish()?;
    if let (Ok(()), Some(path), Some(json)) = (&outcome, &a.report, &capture) {
        let input = report_page::input(host_name(a), json.record(), a.link);
        report_page::write_for(path, vec![input])?;
    }
    match outcome {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            // The error is in the output already (JSON "error" key, the log
            // file's text, or stderr); stderr gets the one line unless it
            // has it or JSON went to stdout.
            if !printed && !a.json && !a.json_stream {
                eprintln!("plumb: error - {e}");
            }
            Ok(ExitCode::from(1))
        }
    }
}

/// `plumb -s`: the server's own checks, then the server (daemonized with
/// `-D`) until it is interrupted or `-1`'s one test is over.
fn run_server(a: &MeasureArgs) -> anyhow::Result<ExitCode> {
    if a.client.is_some() {
        return Ok(usage_error("-s and -c cannot be used together"));
    }
    if a.gsro || a.no_gsro {
        // As iperf3: the client asks, the server follows it.
        return Ok(usage_error(
            "--gsro and --no-gsro are client options (the server follows the client)",
        ));
    }
    if a.report.is_some() {
        return Ok(usage_error(
            "--report is a client flag: the client writes the report",
        ));
    }
    if a.file.is_some() {
        return Ok(usage_error(
            "-F is a client flag: the client sends or receives the file",
        ));
    }
    if let Some(flag) = a.local.client_only_given() {
        return Ok(usage_error(format!(
            "{flag} is a client option, as in iperf3"
        )));
    }
    if a.affinity.is_some_and(|x| x.server.is_some()) {
        return Ok(usage_error(
            "-A n,m: the ,m (the server's CPU for a test) is a client's request; a server takes -A n",
        ));
    }
    if let Err(code) = pin(a) {
        return Ok(code);
    }
    let mut cfg = ServerConfig {
        port: a.port.unwrap_or(DEFAULT_PORT),
        bind: a.bind,
        family: family(a),
        one_off: a.one_off,
        rcv_timeout: Duration::from_millis(a.rcv_timeout.unwrap_or(120_000)),
        interval: a.interval.unwrap_or(1.0),
        local: a.local.options(),
        debug: plumb_cli::measure::debug_on(a),
        ..ServerConfig::default()
    };
    if let Err(msg) = a.harden.apply_server(&mut cfg) {
        return Ok(usage_error(msg));
    }
    let _pid = match daemon::start(a.daemon, a.pidfile.as_deref()) {
        Ok(daemon::Next::Serve(pid)) => pid,
        Ok(daemon::Next::Exit(code)) => return Ok(ExitCode::from(code)),
        Err(why) => {
            eprintln!("plumb: {why}");
            return Ok(ExitCode::from(1));
        }
    };
    let printer = server_printer::ServerPrinter(a);
    Ok(match plumb_net::server::run(&cfg, &printer) {
        Ok(()) | Err(plumb_net::errors::TestError::Interrupted) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("plumb: {e}");
            ExitCode::from(1)
        }
    })
}

/// A `--tool` or `--tools` naming a wire protocol this build does not
/// speak, with the one-line reason; `--tool` on a server and `--tools` on a
/// client are refused too.
fn unspoken_tool(a: &MeasureArgs) -> Option<String> {
    use plumb_proto::tool::{Tool, ToolChoice};
    if a.server && a.tool.is_some() {
        return Some("--tool chooses a client's peer; a server takes --tools LIST".into());
    }
    if !a.server && a.tools.is_some() {
        return Some("--tools is a server flag; a client takes --tool TOOL".into());
    }
    let tools = match (&a.tool, &a.tools) {
        (Some(ToolChoice::Auto), _) => vec![Tool::Iperf2],
        (Some(ToolChoice::One(t)), _) => vec![*t],
        (None, Some(list)) => Tool::parse_list(list)
            .unwrap_or_default()
            .into_iter()
            .map(|l| l.tool)
            .collect(),
        (None, None) => Vec::new(),
    };
    tools.into_iter().find(|t| *t != Tool::Iperf3).map(|t| {
        let flag = if a.server { "--tools" } else { "--tool" };
        format!("{flag} {t}: this build speaks iperf3's wire protocol only")
    })
}
