//! `--tool auto` on a client (`plumb -c HOST`, `plumb why HOST`): the
//! probes (`plumb_net::detect`) turn the flags into ones that name the tool
//! found and its port, with one line on stderr saying which.

use plumb_cli::measure::{family, MeasureArgs};

/// `--tool auto`: the flags with the tool found on `host` and its port, and
/// one line on stderr saying which (stdout stays `-J`'s document); `None`
/// after the one-line error when no server answers.
pub fn detect(a: &MeasureArgs, host: &str) -> Option<MeasureArgs> {
    use plumb_proto::tool::{Tool, ToolChoice};
    let target = plumb_net::detect::Target {
        host: host.to_owned(),
        family: family(a),
        bind: a.bind,
    };
    let Some((tool, port)) = plumb_net::detect::find(&target, a.port) else {
        let ports = match a.port {
            Some(p) => format!("port {p}"),
            None => "ports 5201, 5001 and 5000".into(),
        };
        eprintln!("plumb: error - no iperf3, iperf 2 or nuttcp server answered on {host} {ports}");
        return None;
    };
    let name = match tool {
        Tool::Iperf3 => "an iperf3",
        Tool::Iperf2 => "an iperf 2",
        Tool::Nuttcp => "a nuttcp",
    };
    eprintln!("plumb: found {name} server on {host} port {port}");
    Some(MeasureArgs {
        tool: Some(ToolChoice::One(tool)),
        port: Some(port),
        ..a.clone()
    })
}
