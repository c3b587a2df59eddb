//! The flags of `plumb lab` ([`LabArgs`]), which `plumb demo` fills in for
//! its own link, as the lab takes them ([`LinkAsked`], whose checks make the
//! emulator's configuration), and the client flags after `--`: checked as
//! the client checks them, and what the lab's model reads of them.

use clap::Args;
use plumb_lab::asked::LinkAsked;
use plumb_lab::LabConfig;
use plumb_model::latency::QueueSize;
use plumb_model::{Bytes, LabClient, LossRate, Rate, Rtt};

use crate::measure::{client_config, test_spec, MeasureArgs};

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

/// The port of the far server.
pub const LAB_PORT: u16 = 5201;

/// Why the client flags after `--` cannot be run.
#[derive(Debug)]
pub enum ClientFlagsError {
    /// A flag the lab sets itself, or one the client refuses: one line.
    Usage(String),
    /// clap's own answer, printed as clap prints it (`--help` after `--`
    /// is the client's help).
    Clap(clap::Error),
}

/// The client flags after `--`, parsed by the client's own parser and
/// checked as the client checks them, before any lab is built.
pub fn client_flags(args: &[String]) -> Result<MeasureArgs, ClientFlagsError> {
    #[derive(clap::Parser)]
    #[command(name = "plumb lab ... --", no_binary_name = true)]
    struct ClientLine {
        #[command(flatten)]
        measure: MeasureArgs,
    }
    for (flags, why) in [
        (
            &["-c", "--client"][..],
            "the lab connects the client to the far end",
        ),
        (
            &["-p", "--port"][..],
            "the lab's far server listens on 5201",
        ),
        (
            &["--json-file"][..],
            "the lab collects the client's document itself",
        ),
    ] {
        if let Some(f) = args.iter().find(|a| {
            flags
                .iter()
                .any(|f| *a == f || a.starts_with(&format!("{f}=")))
        }) {
            return Err(ClientFlagsError::Usage(format!(
                "client flags after --: {f} is not yours to set here: {why}"
            )));
        }
    }
    // Exactly the command line run_client gives the client (but the result file).
    let far = plumb_lab::FAR_ADDR.to_string();
    let mut argv = vec!["-c".to_string(), far, "-p".into(), LAB_PORT.to_string()];
    argv.extend(args.iter().cloned());
    let m = match <ClientLine as clap::Parser>::try_parse_from(&argv) {
        Ok(line) => line.measure,
        Err(e) if e.use_stderr() => {
            // One line, saying whose flag it is.
            let rendered = e.render().to_string();
            let first = rendered
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("invalid arguments");
            let msg = first.strip_prefix("error: ").unwrap_or(first);
            return Err(ClientFlagsError::Usage(format!(
                "client flags after --: {msg} (see plumb --help)"
            )));
        }
        // --help after --: the client's flags.
        Err(e) => return Err(ClientFlagsError::Clap(e)),
    };
    if m.server {
        return Err(ClientFlagsError::Usage(
            "client flags after --: -s is not one; the lab runs the server itself".into(),
        ));
    }
    let checked = test_spec(&m).and_then(|spec| client_config(&m, spec).map(|_| ()));
    if let Err(msg) = checked {
        return Err(ClientFlagsError::Usage(format!(
            "client flags after --: {msg}"
        )));
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use plumb_lab::document::lab_line;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        lab: LabArgs,
    }

    fn lab_args(flags: &[&str]) -> LabArgs {
        let mut argv = vec!["lab"];
        argv.extend_from_slice(flags);
        Cli::try_parse_from(argv).expect("lab flags").lab
    }

    /// `--drop-over` sets the black hole in both directions, from 68 B to
    /// one byte under the MTU; outside that, one line saying the range.
    #[test]
    fn drop_over_is_both_directions_and_below_the_mtu() {
        let c = lab_config(&lab_args(&["--drop-over", "1400"])).expect("config");
        assert_eq!(c.near_to_far.max_packet, Some(1400));
        assert_eq!(c.far_to_near.max_packet, Some(1400));
        assert_eq!(
            lab_config(&lab_args(&[]))
                .expect("config")
                .near_to_far
                .max_packet,
            None
        );
        for bad in ["1500", "67", "0"] {
            let e = lab_config(&lab_args(&["--drop-over", bad])).expect_err(bad);
            assert_eq!(
                e,
                format!("invalid --drop-over {bad}: expected 68 to 1499 bytes (below the lab's MTU of 1500 B, or nothing is dropped)")
            );
        }
        let line = lab_line(&lab_args(&["--drop-over", "1400"]).link(), None);
        assert!(
            line.ends_with(", packets over 1400 B dropped without ICMP"),
            "{line}"
        );
    }

    /// The client flags after `--` as the lab's model reads them.
    #[test]
    fn client_flags_as_the_model_reads_them() {
        let args = ["-P", "4", "--rwin", "64k", "-b", "10M/32"].map(String::from);
        let m = client_flags(&args).expect("client flags");
        let c = lab_client(&m);
        assert_eq!(
            (c.streams, c.rwin, c.sndbuf, c.mss),
            (4, Some(plumb_model::Bytes(65_536)), None, None)
        );
        assert_eq!(c.bitrate.map(plumb_model::Rate::bps), Some(10e6));
        let one = lab_client(&client_flags(&[]).expect("no flags"));
        assert_eq!((one.streams, one.bitrate), (1, None));
    }
}
