//! Which tools a command line speaks to: a client's `--tool` and a
//! server's `--tools`, checked against what this build speaks, and the
//! port each tool a server answers listens on.

use plumb_net::config::{ClientConfig, DEFAULT_PORT};
use plumb_proto::tool::Tool;

use super::MeasureArgs;

/// The first flag of a client run that its peer tool's protocol has no
/// room for, with the reason (`-n` for nuttcp, `--bidir` for iperf 2, …);
/// `None` against iperf3, whose protocol is plumb's own.
pub fn refused_by_tool(cfg: &ClientConfig) -> Option<&'static str> {
    match cfg.tool {
        Tool::Iperf3 => None,
        Tool::Iperf2 => plumb_net::iperf2::client::refused(&cfg.spec),
        Tool::Nuttcp => plumb_net::nuttcp::client::refused(cfg),
    }
}

/// A `--tool` or `--tools` naming a wire protocol this build does not
/// speak, with the one-line reason; `--tool` on a server and `--tools` on a
/// client are refused too. All three tools are spoken, `auto` on a client
/// and several tools at once on a server.
pub fn unspoken_tool(a: &MeasureArgs) -> Option<String> {
    use plumb_proto::tool::ToolChoice;
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
pub fn server_listens(a: &MeasureArgs) -> Result<Vec<(Tool, u16)>, String> {
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
pub fn server_port(a: &MeasureArgs) -> (Tool, u16) {
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
        .map(|l| Tool::parse_list(l).unwrap_or_default())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::client_config;
    use clap::Parser;

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

    #[test]
    fn each_tools_refusals_come_from_its_client() {
        let cfg = |flags: &[&str]| {
            let a = args(flags);
            let spec = crate::measure::test_spec(&a).unwrap_or_else(|e| panic!("{e}"));
            client_config(&a, spec).unwrap_or_else(|e| panic!("{e}"))
        };
        assert_eq!(refused_by_tool(&cfg(&["-c", "h", "--bidir"])), None);
        let i2 = refused_by_tool(&cfg(&["-c", "h", "--tool", "iperf2", "--bidir"]));
        assert!(i2.is_some_and(|w| w.starts_with("--bidir")), "{i2:?}");
        let n = refused_by_tool(&cfg(&["-c", "h", "--tool", "nuttcp", "-n", "1M"]));
        assert!(n.is_some_and(|w| w.starts_with("-n/-k")), "{n:?}");
        assert_eq!(
            refused_by_tool(&cfg(&["-c", "h", "--tool", "nuttcp", "-u", "-P", "2"])),
            None
        );
    }
}
