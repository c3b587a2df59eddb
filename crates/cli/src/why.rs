//! `plumb why`'s flags ([`WhyArgs`]): what to explain (a test against
//! HOST, a saved document or capture, live connections, the model alone)
//! and iperf3's flags for the test.

use clap::Args;
use plumb_model::{LossRate, Rate, Rtt};

use crate::measure::MeasureArgs;

/// Flags of `plumb why`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  plumb why 198.18.0.2 --link 1g          test for 5 s and explain\n  plumb why --port 873 --for 3            explain the running connections on port 873\n  plumb why --from result.json --link 1g  explain a saved plumb/iperf3 -J (or --json-stream) result\n  plumb why -r capture.pcap -p 873        explain the port-873 transfers in a tcpdump capture\n  plumb why --rate 1g --rtt 15ms -w 17520  explain from the model alone"
)]
pub struct WhyArgs {
    /// Server to test against (plumb or iperf3); leave out for --from or the model alone
    pub host: Option<String>,
    /// Read a saved -J document, or a packet capture (pcap/pcapng, maybe gzip: -r as in tcpdump), instead of testing
    #[arg(long, short = 'r', value_name = "FILE", conflicts_with = "host")]
    pub from: Option<std::path::PathBuf>,
    /// Model alone: the link rate
    #[arg(long, value_parser = crate::args::rate, conflicts_with_all = ["host", "from"])]
    pub rate: Option<Rate>,
    /// Model alone: the round-trip time
    #[arg(long, value_parser = crate::args::rtt, conflicts_with_all = ["host", "from"])]
    pub rtt: Option<Rtt>,
    /// Model alone: the loss rate
    #[arg(long, value_parser = crate::args::loss, conflicts_with_all = ["host", "from"])]
    pub loss: Option<LossRate>,
    /// Model alone: TCP timestamps on every segment: on, Linux's default (1448 B of payload at MTU 1500), or off (1460 B) [default: on]
    #[arg(long, value_name = "on|off", value_parser = crate::args::on_off, conflicts_with_all = ["host", "from", "capture"])]
    pub tcp_timestamps: Option<bool>,
    /// Live: sample the running connections for this many seconds [default: 3]
    #[arg(long = "for", value_name = "SECS", value_parser = crate::args::seconds, conflicts_with_all = ["host", "from"])]
    pub for_secs: Option<f64>,
    /// Read TCP headers from this interface (a packet socket, root) for --for seconds [default: 3] and explain each connection seen
    #[arg(long, value_name = "IFACE", conflicts_with_all = ["host", "from", "rate", "rtt", "loss"])]
    pub capture: Option<String>,
    /// With --capture: also save what was read as pcapng
    #[arg(long, value_name = "FILE", requires = "capture")]
    pub write: Option<std::path::PathBuf>,
    /// Live connection filters (with -p PORT, either end)
    #[command(flatten)]
    pub live: crate::live_flags::LiveFilterArgs,
    /// Client flags, as for plumb -c (the test defaults to 5 s)
    #[command(flatten)]
    pub measure: MeasureArgs,
}
