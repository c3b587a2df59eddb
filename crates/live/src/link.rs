//! The link rate a diagnosis weighs a transfer against: the one given
//! (`--link`), else the speed of the interface the route to the peer uses.
//! One lookup for tests, live connections and the exporter's probes.

use std::net::{IpAddr, ToSocketAddrs};

use plumb_diagnose::evidence::LinkRate;
use plumb_diagnose::LinkSource;
use plumb_model::Rate;

/// The link rate for a peer: given, else the route's interface speed.
pub fn for_peer(peer: IpAddr, given: Option<Rate>) -> Option<LinkRate> {
    if let Some(r) = given {
        return Some(given_rate(r));
    }
    let ifname = plumb_net::host::route_interface(peer)?;
    let mbps = plumb_net::host::link_speed_mbps(&ifname)?;
    Some(LinkRate {
        bps: mbps as f64 * 1e6,
        source: LinkSource::Interface(ifname),
    })
}

/// The link rate for a host by name: given, else the interface the route to
/// its first address uses.
pub fn for_host(host: &str, given: Option<Rate>) -> Option<LinkRate> {
    if let Some(r) = given {
        return Some(given_rate(r));
    }
    let ip = (host, 0).to_socket_addrs().ok()?.next()?.ip();
    for_peer(ip, None)
}

/// A rate given on the command line, as the diagnosis takes it.
pub fn given_rate(r: Rate) -> LinkRate {
    LinkRate {
        bps: r.bps(),
        source: LinkSource::Given,
    }
}
