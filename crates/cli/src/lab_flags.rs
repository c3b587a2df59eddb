//! The flags of `plumb lab` ([`LabArgs`]), which `plumb demo` fills in for
//! its own link, as the lab takes them ([`LinkAsked`], whose checks make the
//! emulator's configuration), and the client flags the lab's model reads.

use clap::Args;
use plumb_lab::asked::LinkAsked;
use plumb_lab::LabConfig;
use plumb_model::latency::QueueSize;
use plumb_model::{Bytes, LabClient, LossRate, Rate, Rtt};

use crate::measure::MeasureArgs;

/// Flags of `plumb lab`.
#[derive(Debug, Args, Clone)]
#[command(
    after_help = "Examples:\n  plumb lab --rate 1gbit --rtt 15ms -- --rwin 17520 -t 5\n  plumb lab --rate 100m --rtt 40ms --loss 0.5% -- -C reno -t 10\n  plumb lab --rate 1g --rtt 15ms --far-exec 'python3 -m http.server 8000' \\\n          --exec 'curl -s --retry 10 --retry-connrefused -o /dev/null http://$PLUMB_FAR:8000/'\n  plumb lab --rate 1g --rtt 15ms --hold"
)]
pub struct LabArgs {
    /// Link rate, each direction: 1gbit, 100M
    #[arg(long, value_parser = crate::args::rate, default_value = "1gbit")]
    pub rate: Rate,
    /// Round-trip propagation delay, split evenly between the directions
    #[arg(long, value_parser = crate::args::rtt, default_value = "15ms")]
    pub rtt: Rtt,
    /// Random loss on the near-to-far (data) direction: 0.1%, 1e-3
    #[arg(long, value_parser = crate::args::loss)]
    pub loss: Option<LossRate>,
    /// Make --loss bursty (Gilbert-Elliott) with this mean burst length in packets
    #[arg(long, requires = "loss", value_parser = crate::args::number)]
    pub loss_burst: Option<f64>,
    /// Drop-tail queue: 1.5BDP, 2MB, 20ms [default: 1BDP]
    #[arg(long, value_parser = crate::args::valid(QueueSize::parse))]
    pub queue: Option<String>,
    /// Extra delay per packet, up to this much, without reordering
    #[arg(long, value_parser = crate::args::rtt)]
    pub jitter: Option<Rtt>,
    /// Reorder this share of packets (they skip ahead by 1 ms)
    #[arg(long, value_parser = crate::args::packet_share)]
    pub reorder: Option<LossRate>,
    /// Duplicate this share of packets
    #[arg(long, value_parser = crate::args::packet_share)]
    pub duplicate: Option<LossRate>,
    /// Drop every packet over this many IP bytes, both directions, with no
    /// ICMP "fragmentation needed" sent back: a path-MTU black hole (68 to
    /// the MTU 1500 less one)
    #[arg(long, value_name = "BYTES", value_parser = crate::args::whole::<u32>)]
    pub drop_over: Option<u32>,
    /// Seed of the loss and jitter random numbers, to repeat a run
    #[arg(long, value_parser = crate::args::whole::<u64>)]
    pub seed: Option<u64>,
    /// Run this shell command in "near" instead of plumb (PLUMB_FAR holds the far address)
    #[arg(long)]
    pub exec: Option<String>,
    /// Run this shell command in "far" instead of a plumb server (PLUMB_NEAR holds the near address)
    #[arg(long)]
    pub far_exec: Option<String>,
    /// Limit the far side (its server or --far-exec program) to this share of one CPU: 5%, 0.5
    #[arg(long, value_parser = crate::args::cpu_share)]
    pub far_cpu: Option<LossRate>,
    /// The --far-cpu quota's period, 1ms to 1s: the far side runs its share of each period, then waits
    #[arg(long, value_parser = crate::args::rtt, default_value = "100ms", requires = "far_cpu")]
    pub far_cpu_period: Rtt,
    /// Keep the link up until Ctrl-C and print how to enter each side
    #[arg(long, conflicts_with = "exec")]
    pub hold: bool,
    /// Also say what limited the transfer (plumb why)
    #[arg(long)]
    pub why: bool,
    /// Also write an HTML report of the run (charts, verdict, the lab link) to this file
    #[arg(long, value_name = "FILE", conflicts_with_all = ["exec", "hold"])]
    pub report: Option<std::path::PathBuf>,
    /// One JSON document: the client's, plus "lab" and "model" (and "diagnosis"); notes go to stderr
    #[arg(short = 'J', long)]
    pub json: bool,
    /// The client's line-delimited JSON events, then one "lab" event; notes go to stderr
    #[arg(long)]
    pub json_stream: bool,
    /// Also measure idle and loaded latency (the client's --latency) and predict the queue's delay
    #[arg(long)]
    pub latency: bool,
    /// Raise the TCP buffer maximum (tcp_rmem/tcp_wmem) in both namespaces, so one
    /// loss-based flow can fill a queue deeper than the default 4 MiB allows: 64M
    #[arg(long, value_parser = crate::args::bytes)]
    pub tcp_buffer_max: Option<Bytes>,
    /// plumb client flags, after --
    #[arg(last = true, allow_hyphen_values = true)]
    pub client: Vec<String>,
}

impl LabArgs {
    /// The link the flags ask for.
    pub fn link(&self) -> LinkAsked {
        LinkAsked {
            rate: self.rate,
            rtt: self.rtt,
            loss: self.loss,
            loss_burst: self.loss_burst,
            queue: self.queue.clone(),
            jitter: self.jitter,
            reorder: self.reorder,
            duplicate: self.duplicate,
            drop_over: self.drop_over,
            seed: self.seed,
            far_cpu: self.far_cpu,
            far_cpu_period: self.far_cpu_period,
            tcp_buffer_max: self.tcp_buffer_max,
        }
    }
}

/// The emulator configuration the flags describe.
pub fn lab_config(a: &LabArgs) -> Result<LabConfig, String> {
    plumb_lab::asked::lab_config(&a.link())
}

/// The client flags the lab's prediction depends on.
pub fn lab_client(m: &MeasureArgs) -> LabClient {
    LabClient {
        // A count the client refuses never reaches here; 0 counts as 1.
        streams: m.parallel.and_then(|p| u64::try_from(p).ok()).unwrap_or(1),
        rwin: m.rwin,
        sndbuf: m.sndbuf,
        mss: m.mss,
        // `-b RATE[/BURST]`; 0 (unlimited) is no rate.
        bitrate: m
            .bitrate
            .as_deref()
            .and_then(|v| Rate::parse(v.split('/').next().unwrap_or(v)).ok()),
    }
}
