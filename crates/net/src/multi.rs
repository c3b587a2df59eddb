//! One server answering several tools' clients at once
//! (`plumb -s --tools iperf3,iperf2,nuttcp`): each tool's own server on its
//! own port, each on a thread of its own, all with the one configuration
//! (admission, limits, `--allow/--deny`, timeouts). When any of them ends —
//! a signal, `-1`'s one test, a port that cannot be listened on — the
//! others are stopped through the signal flag they all watch.
//!
//! With both iperf 2 and nuttcp, a nuttcp client's data connection can come
//! to iperf 2's port (nuttcp's default data port, 5001, is iperf 2's port):
//! the iperf 2 listener hands it to the nuttcp session that expects it
//! ([`crate::handoff`]).

use std::sync::atomic::Ordering;
use std::sync::Mutex;

use plumb_proto::tool::Tool;

use crate::config::ServerConfig;
use crate::errors::TestError;
use crate::handoff::Handoff;
use crate::server::Printer;
use crate::signals;

/// Runs each tool's server on its port until a signal, the end of `-1`'s
/// first test (on any of them), or one server's failure.
///
/// # Errors
/// The first server that failed (a port that cannot be listened on), named
/// with its tool and port; the others have been stopped.
pub fn run(
    base: &ServerConfig,
    tools: &[(Tool, u16)],
    printer: &dyn Printer,
) -> Result<(), TestError> {
    signals::install();
    let stop = signals::flag();
    let cfgs = configs(base, tools);
    let failed: Mutex<Option<TestError>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for (tool, cfg) in &cfgs {
            let (stop, failed) = (&stop, &failed);
            scope.spawn(move || {
                let r = match tool {
                    Tool::Iperf3 => crate::server::run(cfg, printer),
                    Tool::Iperf2 => crate::iperf2::server::run(cfg, printer),
                    Tool::Nuttcp => crate::nuttcp::server::run(cfg, printer),
                };
                let first_to_end = !stop.swap(true, Ordering::AcqRel);
                match r {
                    Ok(()) | Err(TestError::Interrupted) => {}
                    Err(e) if first_to_end => {
                        let mut f = failed.lock().unwrap_or_else(|p| p.into_inner());
                        *f = Some(named(*tool, cfg.port, e));
                    }
                    Err(_) => {}
                }
            });
        }
    });
    let f = failed.into_inner().unwrap_or_else(|p| p.into_inner());
    f.map_or(Ok(()), Err)
}

/// Each tool's configuration: the base one on the tool's port, and with
/// both iperf 2 and nuttcp the registry that lets nuttcp's data
/// connections arrive on iperf 2's port.
fn configs(base: &ServerConfig, tools: &[(Tool, u16)]) -> Vec<(Tool, ServerConfig)> {
    let port_of = |want: Tool| tools.iter().find(|(t, _)| *t == want).map(|(_, p)| *p);
    let handoff = match (port_of(Tool::Iperf2), port_of(Tool::Nuttcp)) {
        (Some(p2), Some(_)) => Some(Handoff::new(vec![p2])),
        _ => None,
    };
    tools
        .iter()
        .map(|(tool, port)| {
            let cfg = ServerConfig {
                port: *port,
                handoff: handoff.clone(),
                ..base.clone()
            };
            (*tool, cfg)
        })
        .collect()
}

/// A server's failure, named with its tool and port.
fn named(tool: Tool, port: u16, e: TestError) -> TestError {
    match e {
        TestError::Connect(io) => TestError::Ended(format!(
            "the {tool} server cannot listen on port {port}: {io}"
        )),
        other => TestError::Ended(format!("the {tool} server (port {port}): {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iperf2_and_nuttcp_share_a_registry_for_iperf2s_port() {
        let base = ServerConfig::default();
        let c = configs(
            &base,
            &[
                (Tool::Iperf3, 5201),
                (Tool::Iperf2, 15001),
                (Tool::Nuttcp, 5000),
            ],
        );
        let ports: Vec<u16> = c.iter().map(|(_, c)| c.port).collect();
        assert_eq!(ports, [5201, 15001, 5000]);
        let h = c[1].1.handoff.as_ref().map(|h| h.shares(15001));
        assert_eq!(h, Some(true));
        assert!(c[2].1.handoff.as_ref().is_some_and(|h| !h.shares(5001)));
        let alone = configs(&base, &[(Tool::Iperf3, 5201), (Tool::Nuttcp, 5000)]);
        assert!(alone.iter().all(|(_, c)| c.handoff.is_none()));
    }
}
