//! `tool=auto`: which tool's server answers at a probe's target, found on
//! the probe's own thread once the target is resolved, the way
//! `plumb -c --tool auto` finds it (`plumb_net::detect`: iperf3, iperf 2,
//! then nuttcp, each on its default port or all on `port=`). The probe's
//! client run is then built again for that tool and port through the same
//! checks as the first, and the seconds the search took come off a test
//! that the scrape timeout bounds.

use std::net::IpAddr;
use std::time::Instant;

use plumb_net::detect;
use plumb_proto::tool::ToolChoice;

use crate::query::{whole_ms, Asked, ClientBuilder, Probe, Refusal, MIN_TIME_S};

/// Whether a probe can run its test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// Its tool and port are known: run the test.
    Ready,
    /// `tool=auto` and no server answered: the target is down.
    NoServer,
    /// `tool=auto` found a server, but the search left the scrape timeout
    /// too little time for a test.
    NoTime,
}

/// Settles `p`'s tool: a named one is kept; `auto` looks for a server at
/// `ip` and rebuilds the client run with `build` for the tool found.
///
/// # Errors
/// The flags the query asks for are ones the tool found does not take (400).
pub fn settle(p: &mut Probe, ip: IpAddr, build: &ClientBuilder) -> Result<Settled, Refusal> {
    if p.asked.tool != ToolChoice::Auto {
        return Ok(Settled::Ready);
    }
    let t0 = Instant::now();
    let target = detect::Target {
        host: ip.to_string(),
        family: p.config.family,
        bind: p.config.bind,
    };
    let Some((tool, port)) = detect::find(&target, p.asked.port) else {
        return Ok(Settled::NoServer);
    };
    let left = p
        .budget
        .map_or(p.time, |b| p.time.min(b - t0.elapsed().as_secs_f64()));
    if left < MIN_TIME_S {
        return Ok(Settled::NoTime);
    }
    let asked = Asked {
        client: ip.to_string(),
        tool: ToolChoice::One(tool),
        port: Some(port),
        time: whole_ms(left),
        ..p.asked.clone()
    };
    p.config = build(&asked).map_err(Refusal::BadRequest)?;
    p.time = asked.time;
    p.asked = asked;
    Ok(Settled::Ready)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::tests::policy;
    use crate::query::{parse, Target};
    use plumb_net::config::ClientConfig;
    use plumb_proto::tool::Tool;

    /// A builder that records the tool and port it was asked for.
    fn build(a: &Asked) -> Result<ClientConfig, String> {
        let tool = match a.tool {
            ToolChoice::One(t) => t,
            ToolChoice::Auto => Tool::Iperf3,
        };
        Ok(ClientConfig {
            tool,
            host: a.client.clone(),
            port: a.port.unwrap_or(tool.default_port()),
            bind: None,
            cport: None,
            family: plumb_net::config::Family::Any,
            connect_timeout: None,
            rcv_timeout: std::time::Duration::from_millis(a.rcv_timeout_ms),
            spec: plumb_net::config::TestSpec::default(),
            auth: None,
            local: plumb_net::local::LocalOptions::default(),
            debug: false,
            flip: false,
        })
    }

    #[test]
    fn a_named_tool_is_kept_without_a_search() {
        let mut p = parse("target=127.0.0.1&tool=nuttcp", None, &policy(), &build).expect("valid");
        let before = p.config.clone();
        let ip = IpAddr::from([127, 0, 0, 1]);
        assert_eq!(settle(&mut p, ip, &build), Ok(Settled::Ready));
        assert_eq!(p.config, before);
        assert_eq!((p.config.tool, p.config.port), (Tool::Nuttcp, 5000));
        assert_eq!(p.target, Target::Addr(ip));
    }

    /// A listener that never accepts nor answers: silence, which is what an
    /// iperf 2 server says to the search (after a wait for a reply and one
    /// for the close, at least two seconds, whatever the machine's speed).
    #[test]
    fn auto_rebuilds_the_run_for_the_tool_found_and_pays_for_the_search() {
        let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = silent.local_addr().expect("addr").port();
        let ip = IpAddr::from([127, 0, 0, 1]);
        let q = format!("target=127.0.0.1&tool=auto&port={port}&time=5");
        let mut p = parse(&q, None, &policy(), &build).expect("valid");
        assert_eq!(settle(&mut p, ip, &build), Ok(Settled::Ready));
        assert_eq!((p.config.tool, p.config.port), (Tool::Iperf2, port));
        assert_eq!(p.asked.tool, ToolChoice::One(Tool::Iperf2));
        assert_eq!(p.time, 5.0, "no scrape timeout: the test keeps its time");
        // A scrape timeout that leaves 2.4 s: the search's two seconds or
        // more leave under the shortest test.
        let mut p = parse(&q, Some("3.9"), &policy(), &build).expect("valid");
        assert_eq!(p.budget, Some(3.9 - crate::query::OVERHEAD_S));
        assert_eq!(settle(&mut p, ip, &build), Ok(Settled::NoTime));
        drop(silent);
    }
}
