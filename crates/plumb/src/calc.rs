//! `plumb calc`: the model's arithmetic for one path, explained.
//!
//! Flags become a [`PathInput`]; [`Prediction::of`] does every computation;
//! `plumb_report::calc` words the answer (text, or `--json`'s typed object).
//! Flags not given stay unknown: the answer leaves out, or sets to null, what
//! depends on them.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use plumb_model::latency::QueueSize;
use plumb_model::{Bytes, Distance, Framing, LossRate, PathInput, Prediction, Rate, Rtt};
use plumb_report::calc::json::CalcOutput;
use plumb_report::calc::query::{QueuePrediction, RttSource};
use plumb_report::calc::text::{queue_text, text};

use crate::usage::usage_error;

/// Flags of `plumb calc`.
#[derive(Debug, Args)]
#[command(
    after_help = "Example (the backup scenario, whose old hosts send no TCP timestamps):\n  plumb calc --rate 1Gbit --rtt 15ms --window 17520 --tcp-timestamps off"
)]
pub struct CalcArgs {
    /// Line rate of the bottleneck link: 1G, 1Gbit, 100Mbps, 125MB/s (decimal prefixes)
    #[arg(long, allow_hyphen_values = true, value_parser = plumb_cli::args::rate)]
    pub rate: Option<Rate>,
    /// Round-trip time: 15ms, 0.1s, 250us (a bare number is ms)
    #[arg(long, allow_hyphen_values = true, value_parser = plumb_cli::args::rtt, conflicts_with = "distance")]
    pub rtt: Option<Rtt>,
    /// One-way path length, for the RTT: 1000km, 600mi (a bare number is km)
    #[arg(long, allow_hyphen_values = true, value_parser = plumb_cli::args::distance)]
    pub distance: Option<Distance>,
    /// Largest window of one stream: 17520, 64K (=65536), 64KiB, 1.25MB (=1250000)
    #[arg(long, allow_hyphen_values = true, value_parser = plumb_cli::args::bytes)]
    pub window: Option<Bytes>,
    /// Packet loss rate, for the Mathis bound: 0.01%, 1e-4
    #[arg(long, allow_hyphen_values = true, value_parser = plumb_cli::args::loss)]
    pub loss: Option<LossRate>,
    /// TCP MSS (sets the MTU to MSS + IP + TCP headers)
    #[arg(long, allow_hyphen_values = true, value_parser = plumb_cli::args::bytes, conflicts_with = "mtu")]
    pub mss: Option<Bytes>,
    /// IP MTU [default: 1500]
    #[arg(long, allow_hyphen_values = true, value_parser = plumb_cli::args::bytes)]
    pub mtu: Option<Bytes>,
    /// IPv6 headers (40 B) instead of IPv4 (20 B)
    #[arg(long)]
    pub ipv6: bool,
    /// TCP timestamps on every segment (12 B of options): on, Linux's default (1448 B of payload at MTU 1500), or off (1460 B) [default: on]
    #[arg(long, value_name = "on|off", value_parser = plumb_cli::args::on_off)]
    pub tcp_timestamps: Option<bool>,
    /// The same as --tcp-timestamps on
    #[arg(long, hide = true, conflicts_with = "tcp_timestamps")]
    pub timestamps: bool,
    /// An 802.1Q VLAN tag on every frame (4 B)
    #[arg(long)]
    pub vlan: bool,
    /// Ethernet frame size for the frame rate at line rate: 64, 1518
    #[arg(long, allow_hyphen_values = true, value_parser = plumb_cli::args::bytes, requires = "rate")]
    pub frame: Option<Bytes>,
    /// Data to move, for the transfer time: 500GB, 1TB
    #[arg(long, allow_hyphen_values = true, value_parser = plumb_cli::args::bytes)]
    pub size: Option<Bytes>,
    /// Bottleneck queue, for the delay it adds when full: 2MB, 100ms, 1.5BDP (as plumb lab --queue)
    #[arg(long, allow_hyphen_values = true, requires = "rate", value_parser = plumb_cli::args::valid(QueueSize::parse))]
    pub queue: Option<String>,
    /// One JSON object instead of text
    #[arg(long)]
    pub json: bool,
}

/// Runs `plumb calc`.
pub fn run(a: &CalcArgs) -> anyhow::Result<ExitCode> {
    if a.rate.is_none()
        && a.rtt.is_none()
        && a.distance.is_none()
        && a.window.is_none()
        && a.loss.is_none()
        && a.queue.is_none()
    {
        return Ok(usage_error(
            "calc needs something to compute: give at least --rate, --rtt or --distance, --window or --loss \
             (e.g. plumb calc --rate 1Gbit --rtt 15ms --window 17520)",
        ));
    }
    let framing = match framing(a) {
        Ok(f) => f,
        Err(msg) => return Ok(usage_error(msg)),
    };
    if let Some(f) = a.frame {
        if !(64..=65_535).contains(&f.get()) {
            return Ok(usage_error(format!(
                "invalid frame size '{}': an Ethernet frame is 64 to 65535 bytes (header to FCS)",
                f.get()
            )));
        }
    }
    let (rtt, source) = RttSource::of(a.rtt, a.distance);
    let input = PathInput {
        rate: a.rate,
        rtt,
        window: a.window,
        loss: a.loss,
        framing,
        size: a.size,
    };
    let p = Prediction::of(&input);
    let queue = match (&a.queue, a.rate) {
        (Some(q), Some(rate)) => match QueuePrediction::of(q, rate, rtt) {
            Ok(q) => Some(q),
            Err(msg) => return Ok(usage_error(msg)),
        },
        _ => None,
    };
    let mut out = std::io::stdout().lock();
    if a.json {
        let v = CalcOutput::of(&input, &p, source.as_ref(), a.frame, queue.as_ref());
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        write!(out, "{}", text(&input, &p, source.as_ref(), a.frame))?;
        if let Some(q) = &queue {
            write!(out, "{}", queue_text(q))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn framing(a: &CalcArgs) -> Result<Framing, String> {
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
