//! `plumb -s` / `plumb -c HOST` (and `plumb server` / `plumb client HOST`):
//! iperf3's flags ([`MeasureArgs`], `plumb_cli::measure`) run as a server or a
//! client.

use std::process::ExitCode;
use std::time::Duration;

use plumb_net::config::{ServerConfig, DEFAULT_PORT};
use plumb_record::{Sink, Tee};
use plumb_report::json::JsonSink;

use crate::common::output::{pin, sink, ErrorsToStderr};
use crate::common::report_page;
use crate::common::test_explain::test_and_explain;
use crate::usage::usage_error;
use plumb_cli::measure::tools::{refused_by_tool, server_listens, unspoken_tool};
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
    let detected;
    let a = if a.tool == Some(plumb_proto::tool::ToolChoice::Auto) {
        match crate::common::auto_tool::detect(a, &host) {
            Some(found) => {
                detected = found;
                &detected
            }
            None => return Ok(ExitCode::from(1)),
        }
    } else {
        a
    };
    if a.why {
        // It pins this end itself (so does `plumb why HOST`).
        return test_and_explain(a, a.link);
    }
    if let Err(code) = pin(a) {
        return Ok(code);
    }
    let cfg = match checked_config(a) {
        Ok(c) => c,
        Err(msg) => return Ok(usage_error(msg)),
    };
    run_client(a, &cfg)
}

/// The client run the flags ask for, or the one-line reason it cannot be.
fn checked_config(a: &MeasureArgs) -> Result<plumb_net::config::ClientConfig, String> {
    let cfg = client_config(a, test_spec(a)?)?;
    match refused_by_tool(&cfg) {
        Some(why) => Err(format!("--tool {} does not take {why}", cfg.tool)),
        None => Ok(cfg),
    }
}

/// Runs the client into the sinks the flags ask for (text or JSON, a
/// `--json-file` beside it, the `--report` page after it).
fn run_client(a: &MeasureArgs, cfg: &plumb_net::config::ClientConfig) -> anyhow::Result<ExitCode> {
    let mut sink = sink(a)?;
    let text_on_terminal = !a.json && !a.json_stream && a.logfile.is_none();
    let mut errors = ErrorsToStderr {
        inner: sink.as_mut(),
        printed: false,
    };
    // --report keeps the test's -J document for the page.
    let mut capture = a.report.as_ref().map(|_| JsonSink::new(Vec::new()));
    let first: &mut dyn Sink = if text_on_terminal {
        &mut errors
    } else {
        &mut *errors.inner
    };
    let outcome = match (&a.json_file, capture.as_mut()) {
        (None, None) => plumb_net::client::run(cfg, first),
        (None, Some(json)) => plumb_net::client::run(
            cfg,
            &mut Tee {
                first,
                second: json,
            },
        ),
        (Some(path), _) => {
            let file = std::fs::File::create(path)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
            let mut json = JsonSink::new(file);
            let r = plumb_net::client::run(
                cfg,
                &mut Tee {
                    first,
                    second: &mut json,
                },
            );
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
    if a.flip {
        return Ok(usage_error(
            "--flip is a client flag (nuttcp's -F, with --tool nuttcp); a server follows its client's request",
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
    let listens = match server_listens(a) {
        Ok(l) => l,
        Err(why) => return Ok(usage_error(why)),
    };
    let (tool, port) = listens
        .first()
        .copied()
        .unwrap_or((plumb_proto::tool::Tool::Iperf3, DEFAULT_PORT));
    let mut cfg = ServerConfig {
        port,
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
    let served = match tool {
        _ if listens.len() > 1 => plumb_net::multi::run(&cfg, &listens, &printer),
        plumb_proto::tool::Tool::Iperf2 => plumb_net::iperf2::server::run(&cfg, &printer),
        plumb_proto::tool::Tool::Nuttcp => plumb_net::nuttcp::server::run(&cfg, &printer),
        plumb_proto::tool::Tool::Iperf3 => plumb_net::server::run(&cfg, &printer),
    };
    Ok(match served {
        Ok(()) | Err(plumb_net::errors::TestError::Interrupted) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("plumb: {e}");
            ExitCode::from(1)
        }
    })
}
