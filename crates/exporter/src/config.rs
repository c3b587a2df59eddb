//! What `plumb exporter` is asked to do, checked: where it listens, whom a
//! probe may test and for how long, how many probes run at once, whether it
//! samples the host's live flows, and how a probe's flags become a client
//! run. Every refusal is one line naming the flag.

use std::net::{SocketAddr, ToSocketAddrs};

use plumb_net::config::IpPrefix;

use crate::query::{self, ClientBuilder, Policy};

/// The port iperf3 exporters listen on (edgard/iperf3_exporter and its
/// forks), so scrape configs written for them fit.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9579";

/// Loopback: what may be probed when `--target-allow` is not given. Enough for
/// a local check and a sidecar; anything else must be allowed by name, since
/// an open prober sends traffic wherever a URL says.
const LOOPBACK: [&str; 2] = ["127.0.0.0/8", "::1/128"];

/// The longest `--max-time`: a probe is one scrape, not a soak test.
const MAX_TIME_CAP_S: f64 = 600.0;

/// The most `--live-port`s: each adds nine series per metric.
const MAX_LIVE_PORTS: usize = 16;

/// The exporter's settings as given (the command line's flags).
#[derive(Debug, Clone)]
pub struct Settings {
    /// `--listen`: ADDR:PORT.
    pub listen: String,
    /// `--target-allow`: ADDR[/LEN] each; empty means loopback only.
    pub target_allow: Vec<String>,
    /// `--max-probes`.
    pub max_probes: usize,
    /// `--max-time`, seconds.
    pub max_time: f64,
    /// `--live-flows`.
    pub live_flows: bool,
    /// `--live-port`.
    pub live_ports: Vec<u16>,
}

/// A checked exporter configuration, for [`crate::serve`].
pub struct Config {
    /// Where to serve HTTP.
    pub listen: SocketAddr,
    /// Whom a probe may test, and for how long.
    pub policy: Policy,
    /// Probes that may run at once.
    pub max_probes: usize,
    /// With `--live-flows`: the ports to label by (possibly none).
    pub live_ports: Option<Vec<u16>>,
    /// How a probe's flags become a client run.
    pub client: Box<ClientBuilder>,
}

impl Config {
    /// Checks `s`; `client` turns each probe's flags into its client run.
    pub fn new(s: &Settings, client: Box<ClientBuilder>) -> Result<Config, String> {
        if s.live_ports.len() > MAX_LIVE_PORTS {
            return Err(format!(
                "--live-port gives {} ports: at most {MAX_LIVE_PORTS} (each multiplies the series)",
                s.live_ports.len()
            ));
        }
        let listen = s
            .listen
            .to_socket_addrs()
            .ok()
            .and_then(|mut it| it.next())
            .ok_or_else(|| format!("invalid --listen '{}': expected ADDR:PORT", s.listen))?;
        let allow = if s.target_allow.is_empty() {
            LOOPBACK.iter().map(|p| IpPrefix::parse(p)).collect()
        } else {
            s.target_allow
                .iter()
                .map(|p| IpPrefix::parse(p).map_err(|e| format!("--target-allow: {e}")))
                .collect::<Result<Vec<_>, _>>()
        }?;
        if s.max_probes == 0 || s.max_probes > 64 {
            return Err(format!(
                "invalid --max-probes {}: expected 1 to 64",
                s.max_probes
            ));
        }
        if !(s.max_time.is_finite()
            && s.max_time >= query::MIN_TIME_S
            && s.max_time <= MAX_TIME_CAP_S)
        {
            return Err(format!(
                "invalid --max-time {}: expected {} to {MAX_TIME_CAP_S} seconds",
                s.max_time,
                query::MIN_TIME_S
            ));
        }
        Ok(Config {
            listen,
            policy: Policy {
                allow,
                max_time: s.max_time,
            },
            max_probes: s.max_probes,
            live_ports: s.live_flows.then(|| s.live_ports.clone()),
            client,
        })
    }
}
