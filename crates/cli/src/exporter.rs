//! `plumb exporter`'s flags ([`ExporterArgs`]), and a probe's query
//! checked as `plumb -c`'s flags are ([`probe_client`]).

use clap::Args;
use plumb_exporter::{Asked, Settings};
use plumb_net::config::ClientConfig;

use crate::measure::{client_config, test_spec, MeasureArgs};

/// Flags of `plumb exporter`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  plumb exporter                                  probe loopback servers only, on 127.0.0.1:9579\n  plumb exporter --listen 0.0.0.0:9579 --target-allow 10.1.0.0/16\n  curl 'localhost:9579/probe?target=127.0.0.1&time=3'"
)]
pub struct ExporterArgs {
    /// Address and port to serve HTTP on (loopback by default: a prober
    /// should not be reachable from elsewhere unless asked)
    #[arg(long, default_value = plumb_exporter::DEFAULT_LISTEN)]
    pub listen: String,
    /// Targets a probe may test (repeatable, comma-separated; ADDR[/LEN]);
    /// without it, loopback only
    #[arg(long = "target-allow", value_name = "PREFIX", value_delimiter = ',')]
    pub target_allow: Vec<String>,
    /// Probes that may run at once (one per target in any case)
    #[arg(long = "max-probes", default_value_t = 2, value_parser = crate::args::whole::<usize>)]
    pub max_probes: usize,
    /// Longest test a probe may run, seconds
    #[arg(long = "max-time", default_value_t = 10.0, value_parser = crate::args::seconds)]
    pub max_time: f64,
    /// Also summarise the host's live TCP flows on /metrics: seconds and
    /// bytes of transfer by limit, sampled every second (off by default:
    /// it dumps every socket of the host each second)
    #[arg(long = "live-flows")]
    pub live_flows: bool,
    /// With --live-flows: also label by this port at either end (repeatable,
    /// comma-separated, at most 16; other connections are port="other")
    #[arg(
        long = "live-port",
        value_name = "PORT",
        value_delimiter = ',',
        value_parser = crate::args::whole::<u16>,
        requires = "live_flows"
    )]
    pub live_port: Vec<u16>,
}

/// The exporter's settings the flags give.
pub fn settings(a: &ExporterArgs) -> Settings {
    Settings {
        listen: a.listen.clone(),
        target_allow: a.target_allow.clone(),
        max_probes: a.max_probes,
        max_time: a.max_time,
        live_flows: a.live_flows,
        live_ports: a.live_port.clone(),
    }
}

/// A probe's flags as `plumb -c` would take them, and as the tool's own
/// client would (`tool=nuttcp` refuses what `plumb -c --tool nuttcp`
/// refuses, in one line).
pub fn probe_client(p: &Asked) -> Result<ClientConfig, String> {
    let m = MeasureArgs {
        client: Some(p.client.clone()),
        tool: Some(p.tool),
        port: p.port,
        time: Some(p.time),
        parallel: p.parallel,
        reverse: p.reverse,
        udp: p.udp,
        bitrate: p.bitrate.clone(),
        connect_timeout: Some(p.connect_timeout_ms),
        rcv_timeout: Some(p.rcv_timeout_ms),
        ..MeasureArgs::default()
    };
    let spec = test_spec(&m)?;
    let cfg = client_config(&m, spec)?;
    match crate::measure::tools::refused_by_tool(&cfg) {
        Some(why) => Err(format!("tool={} does not take {why}", cfg.tool)),
        None => Ok(cfg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_proto::tool::{Tool, ToolChoice};

    #[test]
    fn a_probe_is_checked_as_plumb_c() {
        let p = Asked {
            client: "127.0.0.1".into(),
            port: Some(15201),
            time: 3.0,
            parallel: Some(2),
            reverse: true,
            bitrate: Some("100M".into()),
            connect_timeout_ms: 2_000,
            rcv_timeout_ms: 3_000,
            ..Asked::default()
        };
        let c = probe_client(&p).expect("valid");
        assert_eq!((c.host.as_str(), c.port), ("127.0.0.1", 15201));
        assert_eq!(c.spec.parallel, 2);
        assert!(c.spec.reverse);
        assert_eq!(c.spec.bandwidth, Some(100_000_000));
        let zero = Asked {
            parallel: Some(0),
            ..p.clone()
        };
        assert!(probe_client(&zero).expect_err("-P 0").contains("streams"));
        let fast = Asked {
            bitrate: Some("fast".into()),
            ..p
        };
        assert!(probe_client(&fast).expect_err("-b fast").contains("fast"));
    }

    #[test]
    fn a_probe_takes_the_tools_port_and_its_refusals() {
        let p = Asked {
            client: "127.0.0.1".into(),
            time: 3.0,
            connect_timeout_ms: 2_000,
            rcv_timeout_ms: 3_000,
            ..Asked::default()
        };
        for (tool, port) in [
            (Tool::Iperf3, 5201),
            (Tool::Iperf2, 5001),
            (Tool::Nuttcp, 5000),
        ] {
            let c = probe_client(&Asked {
                tool: ToolChoice::One(tool),
                ..p.clone()
            })
            .expect("valid");
            assert_eq!((c.tool, c.port), (tool, port));
            let given = probe_client(&Asked {
                tool: ToolChoice::One(tool),
                port: Some(15000),
                ..p.clone()
            })
            .expect("valid");
            assert_eq!(given.port, 15000, "port= wins over {tool}'s default");
        }
        let top_port = Asked {
            tool: ToolChoice::One(Tool::Nuttcp),
            port: Some(65_535),
            ..p
        };
        let e = probe_client(&top_port).expect_err("nuttcp's data port past 65535");
        assert!(e.starts_with("tool=nuttcp does not take -p 65535"), "{e}");
    }
}
