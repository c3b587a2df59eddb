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
    let spec = match test_spec(a) {
        Ok(s) => s,
        Err(msg) => return Ok(usage_error(msg)),
    };
    let cfg = match client_config(a, spec) {
        Ok(c) => c,
        Err(msg) => return Ok(usage_error(msg)),
    };
    if cfg.tool == plumb_proto::tool::Tool::Nuttcp {
        if let Some(why) = plumb_net::nuttcp::client::refused(&cfg) {
            return Ok(usage_error(format!("--tool nuttcp does not take {why}")));
        }
    }
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

/// A `--tool` or `--tools` naming a wire protocol this build does not
/// speak, with the one-line reason; `--tool` on a server and `--tools` on a
/// client are refused too. All three tools are spoken, `auto` on a client
/// and several tools at once on a server.
fn unspoken_tool(a: &MeasureArgs) -> Option<String> {
    use plumb_proto::tool::{Tool, ToolChoice};
    if a.server && a.tool.is_some() {
        return Some("--tool chooses a client's peer; a server takes --tools LIST".into());
    }
    if !a.server && a.tools.is_some() {
        return Some("--tools is a server flag; a client takes --tool TOOL".into());
    }
    if a.tool == Some(ToolChoice::Auto) && a.flip {
        return Some("--flip is nuttcp's -F: give it with --tool nuttcp, not auto".into());
    }
    let spoken = |t: &Tool| matches!(t, Tool::Iperf3 | Tool::Iperf2 | Tool::Nuttcp);
    match (&a.tool, server_tools(a)) {
        (Some(ToolChoice::One(t)), _) if !spoken(t) => Some(format!(
            "--tool {t}: this build speaks iperf3's, iperf 2's and nuttcp's wire protocols only"
        )),
        (None, list) => list.iter().find(|l| !spoken(&l.tool)).map(|l| {
            format!(
                "--tools {}: this build speaks iperf3's, iperf 2's and nuttcp's wire protocols only",
                l.tool
            )
        }),
        _ => None,
    }
}

/// Each tool a server answers and its port. One tool: its `=PORT`, else
/// `-p`, else its default. Several: each its `=PORT` or default, with `-p`
/// iperf3's port.
///
/// # Errors
/// `-p` with several tools and no iperf3 among them, or two tools on one port.
fn server_listens(a: &MeasureArgs) -> Result<Vec<(plumb_proto::tool::Tool, u16)>, String> {
    use plumb_proto::tool::Tool;
    let list = server_tools(a);
    if list.len() <= 1 {
        return Ok(vec![server_port(a)]);
    }
    if a.port.is_some()
        && !list
            .iter()
            .any(|l| l.tool == Tool::Iperf3 && l.port.is_none())
    {
        return Err(
            "-p with several --tools is iperf3's port; give each other tool its port as TOOL=PORT"
                .into(),
        );
    }
    let out: Vec<(Tool, u16)> = list
        .iter()
        .map(|l| match (l.tool, l.port) {
            (Tool::Iperf3, None) => (Tool::Iperf3, a.port.unwrap_or(DEFAULT_PORT)),
            _ => (l.tool, l.port()),
        })
        .collect();
    for (i, (t, p)) in out.iter().enumerate() {
        if let Some((u, _)) = out.iter().skip(i + 1).find(|(_, q)| q == p) {
            return Err(format!(
                "--tools: {t} and {u} both on port {p}; give one of them another port as TOOL=PORT"
            ));
        }
    }
    Ok(out)
}

/// The tool a server answers and its port: the one `--tools` lists (iperf3
/// without it) on its `=PORT`, else where `-p` says, else on its default.
fn server_port(a: &MeasureArgs) -> (plumb_proto::tool::Tool, u16) {
    use plumb_proto::tool::Tool;
    match server_tools(a).first().copied() {
        Some(l) if l.port.is_some() => (l.tool, l.port()),
        Some(l) if l.tool != Tool::Iperf3 => (l.tool, a.port.unwrap_or(l.port())),
        _ => (Tool::Iperf3, a.port.unwrap_or(DEFAULT_PORT)),
    }
}

/// The tools `--tools` lists (none without it).
fn server_tools(a: &MeasureArgs) -> Vec<plumb_proto::tool::Listen> {
    a.tools
        .as_deref()
        .map(|l| plumb_proto::tool::Tool::parse_list(l).unwrap_or_default())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use plumb_proto::tool::Tool;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        m: MeasureArgs,
    }

    fn args(flags: &[&str]) -> MeasureArgs {
        let mut argv = vec!["plumb"];
        argv.extend_from_slice(flags);
        Cli::try_parse_from(argv)
            .map(|c| c.m)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_servers_tool_and_port() {
        assert_eq!(server_port(&args(&["-s"])), (Tool::Iperf3, 5201));
        assert_eq!(
            server_port(&args(&["-s", "--tools", "iperf2"])),
            (Tool::Iperf2, 5001)
        );
        let p = args(&["-s", "-p", "6000", "--tools", "iperf2"]);
        assert_eq!(server_port(&p), (Tool::Iperf2, 6000));
        let eq = args(&["-s", "-p", "6000", "--tools", "iperf2=15001"]);
        assert_eq!(server_port(&eq), (Tool::Iperf2, 15001));
        assert_eq!(
            server_port(&args(&["-s", "--tools", "iperf3"])),
            (Tool::Iperf3, 5201)
        );
    }

    #[test]
    fn several_tools_each_on_its_port() {
        let on = |flags: &[&str]| server_listens(&args(flags));
        let all = on(&["-s", "--tools", "iperf3,iperf2,nuttcp"]);
        assert_eq!(
            all,
            Ok(vec![
                (Tool::Iperf3, 5201),
                (Tool::Iperf2, 5001),
                (Tool::Nuttcp, 5000)
            ])
        );
        let p = on(&["-s", "-p", "7000", "--tools", "nuttcp=7001,iperf3"]);
        assert_eq!(p, Ok(vec![(Tool::Nuttcp, 7001), (Tool::Iperf3, 7000)]));
        let no3 = on(&["-s", "-p", "7000", "--tools", "nuttcp,iperf2"]);
        assert!(no3.is_err_and(|e| e.contains("TOOL=PORT")));
        let same = on(&["-s", "--tools", "iperf3=5001,iperf2"]);
        assert!(same.is_err_and(|e| e.contains("both on port 5001")));
    }

    #[test]
    fn an_iperf2_client_connects_to_5001_unless_told() {
        let spec = plumb_net::config::TestSpec::default;
        let c = client_config(&args(&["-c", "h", "--tool", "iperf2"]), spec());
        assert_eq!(c.map(|c| (c.tool, c.port)), Ok((Tool::Iperf2, 5001)));
        let c = client_config(&args(&["-c", "h", "--tool", "iperf2", "-p", "7"]), spec());
        assert_eq!(c.map(|c| c.port), Ok(7));
        let c = client_config(&args(&["-c", "h"]), spec());
        assert_eq!(c.map(|c| (c.tool, c.port)), Ok((Tool::Iperf3, 5201)));
    }

    #[test]
    fn tools_not_built_are_refused_in_one_line() {
        let said = |flags: &[&str]| unspoken_tool(&args(flags)).unwrap_or_default();
        assert_eq!(said(&["-c", "h", "--tool", "iperf2"]), "");
        assert_eq!(said(&["-s", "--tools", "iperf2"]), "");
        assert_eq!(said(&["-c", "h", "--tool", "nuttcp"]), "");
        assert_eq!(said(&["-c", "h", "--tool", "auto"]), "");
        assert_eq!(said(&["-s", "--tools", "iperf3,iperf2,nuttcp"]), "");
        assert!(said(&["-c", "h", "--tool", "auto", "--flip"]).contains("nuttcp"));
        assert_eq!(said(&["-s", "--tools", "nuttcp"]), "");
        assert!(said(&["-s", "--tool", "iperf2"]).contains("--tools LIST"));
    }
}
