//! The flags of `plumb lab` ([`LabArgs`]), which `plumb demo` fills in for
//! its own link, and the emulator configuration they describe.

use std::time::Duration;

use clap::Args;
use plumb_lab::emu::{GilbertElliott, LossModel, QueueLimit, Reorder};
use plumb_lab::{Direction, LabConfig};
use plumb_model::latency::QueueSize;
use plumb_model::{Bytes, LossRate, Rate, Rtt};

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

/// `--queue` as the emulator takes it.
fn queue_limit(s: &str) -> Result<QueueLimit, String> {
    Ok(match QueueSize::parse(s)? {
        QueueSize::Bytes(b) => QueueLimit::Bytes(b),
        QueueSize::Delay(d) => QueueLimit::Delay(Duration::from_secs_f64(d)),
        QueueSize::Bdp(m) => QueueLimit::Bdp(m),
    })
}

/// The emulator configuration the flags describe.
pub fn lab_config(a: &LabArgs) -> Result<LabConfig, String> {
    let rate = plumb_lab::emu::Rate::from_mbps(a.rate.bps() / 1e6).ok_or_else(|| {
        format!(
            "invalid rate '{}': the lab needs at least 1 kbit/s",
            a.rate.human()
        )
    })?;
    if a.rtt.secs() > 10.0 {
        return Err(format!(
            "invalid RTT {}: the lab emulates at most 10 s",
            a.rtt.human()
        ));
    }
    let mut cfg = LabConfig::new(rate, Duration::from_secs_f64(a.rtt.secs()));
    if let Some(q) = &a.queue {
        cfg = cfg.with_queue(queue_limit(q)?);
    }
    if let Some(l) = a.loss {
        let model = match a.loss_burst {
            Some(b) => LossModel::GilbertElliott(
                GilbertElliott::from_loss_and_burst(l.probability(), b)
                    .map_err(|e| format!("invalid --loss-burst: {e}"))?,
            ),
            None => LossModel::Bernoulli(l.probability()),
        };
        cfg = cfg.with_loss(Direction::NearToFar, model);
    }
    if let Some(seed) = a.seed {
        cfg = cfg.with_seed(seed);
    }
    if let Some(m) = a.drop_over {
        if !(plumb_lab::emu::MIN_IP_PACKET..cfg.mtu).contains(&m) {
            return Err(format!(
                "invalid --drop-over {m}: expected {} to {} bytes (below the lab's MTU of {} B, or nothing is dropped)",
                plumb_lab::emu::MIN_IP_PACKET,
                cfg.mtu - 1,
                cfg.mtu
            ));
        }
        cfg = cfg.with_max_packet(m);
    }
    cfg.far_cpu = a.far_cpu.map(LossRate::probability);
    cfg.far_cpu_period = Duration::from_secs_f64(a.far_cpu_period.secs());
    if let Some(b) = a.tcp_buffer_max {
        if !(4096..=1 << 30).contains(&b.get()) {
            return Err(format!(
                "invalid --tcp-buffer-max {}: expected 4K to 1G",
                b.human()
            ));
        }
        cfg.tcp_buffer_max = u32::try_from(b.get()).ok();
    }
    for dir in [Direction::NearToFar, Direction::FarToNear] {
        let link = cfg.link_mut(dir);
        if let Some(j) = a.jitter {
            link.jitter = Duration::from_secs_f64(j.secs());
        }
        if let Some(r) = a.reorder {
            link.reorder = Some(Reorder {
                probability: r.probability(),
                advance: Duration::from_millis(1),
            });
        }
        if let Some(d) = a.duplicate {
            link.duplicate = d.probability();
        }
    }
    Ok(cfg)
}
