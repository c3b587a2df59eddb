//! `plumb calc`'s flags ([`CalcArgs`]) and the framing they describe
//! ([`framing`]): flags not given stay unknown.

use clap::Args;
use plumb_model::latency::QueueSize;
use plumb_model::{Bytes, Distance, Framing, LossRate, Rate, Rtt};

/// Flags of `plumb calc`.
#[derive(Debug, Args)]
#[command(
    after_help = "Example (the backup scenario, whose old hosts send no TCP timestamps):\n  plumb calc --rate 1Gbit --rtt 15ms --window 17520 --tcp-timestamps off"
)]
pub struct CalcArgs {
    /// Line rate of the bottleneck link: 1G, 1Gbit, 100Mbps, 125MB/s (decimal prefixes)
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::rate)]
    pub rate: Option<Rate>,
    /// Round-trip time: 15ms, 0.1s, 250us (a bare number is ms)
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::rtt, conflicts_with = "distance")]
    pub rtt: Option<Rtt>,
    /// One-way path length, for the RTT: 1000km, 600mi (a bare number is km)
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::distance)]
    pub distance: Option<Distance>,
    /// Largest window of one stream: 17520, 64K (=65536), 64KiB, 1.25MB (=1250000)
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::bytes)]
    pub window: Option<Bytes>,
    /// Packet loss rate, for the Mathis bound: 0.01%, 1e-4
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::loss)]
    pub loss: Option<LossRate>,
    /// TCP MSS (sets the MTU to MSS + IP + TCP headers)
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::bytes, conflicts_with = "mtu")]
    pub mss: Option<Bytes>,
    /// IP MTU [default: 1500]
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::bytes)]
    pub mtu: Option<Bytes>,
    /// IPv6 headers (40 B) instead of IPv4 (20 B)
    #[arg(long)]
    pub ipv6: bool,
    /// TCP timestamps on every segment (12 B of options): on, Linux's default (1448 B of payload at MTU 1500), or off (1460 B) [default: on]
    #[arg(long, value_name = "on|off", value_parser = crate::args::on_off)]
    pub tcp_timestamps: Option<bool>,
    /// The same as --tcp-timestamps on
    #[arg(long, hide = true, conflicts_with = "tcp_timestamps")]
    pub timestamps: bool,
    /// An 802.1Q VLAN tag on every frame (4 B)
    #[arg(long)]
    pub vlan: bool,
    /// Ethernet frame size for the frame rate at line rate: 64, 1518
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::bytes, requires = "rate")]
    pub frame: Option<Bytes>,
    /// Data to move, for the transfer time: 500GB, 1TB
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::bytes)]
    pub size: Option<Bytes>,
    /// Bottleneck queue, for the delay it adds when full: 2MB, 100ms, 1.5BDP (as plumb lab --queue)
    #[arg(long, allow_hyphen_values = true, requires = "rate", value_parser = crate::args::valid(QueueSize::parse))]
    pub queue: Option<String>,
    /// One JSON object instead of text
    #[arg(long)]
    pub json: bool,
}

/// The framing the flags describe, checked: MSS or MTU, IPv6, TCP
/// timestamps (Linux's default: on) and a VLAN tag.
pub fn framing(a: &CalcArgs) -> Result<Framing, String> {
    // The header every command assumes unless told: Linux's (timestamps on).
    let timestamps = a.timestamps || a.tcp_timestamps.unwrap_or(Framing::default().timestamps);
    let f = match (a.mss, a.mtu) {
        (Some(mss), _) => Framing::with_mss(mss, a.ipv6, timestamps, a.vlan),
        (None, mtu) => Framing {
            mtu: mtu.map_or(1500, Bytes::get),
            ipv6: a.ipv6,
            timestamps,
            vlan: a.vlan,
        },
    };
    f.checked()
}
