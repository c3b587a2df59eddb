//! `plumb lab`: a long fat network on this machine — two namespaces joined by
//! the userspace link emulator — with plumb (or any program) run across it,
//! and the model's prediction printed beside what was measured.
//!
//! Owns the command's life cycle: client flags checked with the client's own
//! parser before any lab is built; with `-J`/`--json-stream` (before or
//! after `--`) only JSON on stdout, notes on stderr; the first SIGINT or
//! SIGTERM passed on to the program running in the lab, whose partial result
//! is still printed; and every process started ended with the lab (the lab
//! holds each side's processes in a cgroup).

use std::io::Write;
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use clap::Args;
use plumb_diagnose::evidence::LinkRate;
use plumb_diagnose::{diagnose, Evidence, LinkSource};
use plumb_lab::emu::{GilbertElliott, LossModel, QueueLimit, Reorder};
use plumb_lab::programs::{run_client, start_server, wait_listening, wait_passing_signals, Reaper};
use plumb_lab::{Direction, Lab, LabConfig, LabError, Side};
use plumb_model::latency::QueueSize;
use plumb_model::units::sig;
use plumb_model::{Bytes, LossRate, Rate, Rtt};
use plumb_record::{Document, Event, LabEvent, Real};

use crate::usage::usage_error;
use crate::measure::MeasureArgs;

mod record;

pub(crate) use record::{lab_record, measured_bps, model_record};

/// Flags of `plumb lab`.
#[derive(Debug, Args, Clone)]
#[command(
    after_help = "Examples:\n  plumb lab --rate 1gbit --rtt 15ms -- --rwin 17520 -t 5\n  plumb lab --rate 100m --rtt 40ms --loss 0.5% -- -C reno -t 10\n  plumb lab --rate 1g --rtt 15ms --far-exec 'python3 -m http.server 8000' \\\n      --exec 'curl -s --retry 10 --retry-connrefused -o /dev/null http://$PLUMB_FAR:8000/'\n  plumb lab --rate 1g --rtt 15ms --hold"
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

fn lab_error(e: &LabError) -> ExitCode {
    eprintln!("plumb: {e}");
    ExitCode::from(1)
}

/// The client flags after `--`, parsed by the client's own parser and
/// checked as the client checks them, before any lab is built.
fn check_client_flags(args: &[String]) -> Result<MeasureArgs, ExitCode> {
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
            return Err(usage_error(format!(
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
            return Err(usage_error(format!(
                "client flags after --: {msg} (see plumb --help)"
            )));
        }
        // --help after --: the client's flags.
        Err(e) => return Err(crate::usage::clap_exit(e)),
    };
    if m.server {
        return Err(usage_error(
            "client flags after --: -s is not one; the lab runs the server itself",
        ));
    }
    let checked = crate::measure::test_spec(&m)
        .and_then(|spec| crate::measure::client_config(&m, spec).map(|_| ()));
    if let Err(msg) = checked {
        return Err(usage_error(format!("client flags after --: {msg}")));
    }
    Ok(m)
}

/// What runs on the near side: the user's program, or the plumb client
/// with its checked flags.
enum Near<'a> {
    Exec(&'a str),
    Client(Box<MeasureArgs>),
}

/// The port of the far server.
const LAB_PORT: u16 = 5201;

/// Notes for a person: stdout, or stderr when stdout is for JSON.
fn note(json: bool, line: &str) {
    if json {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
}

/// Runs `plumb lab`. When a signal is ending the lab (a second Ctrl-C, or
/// one before the programs ran), the signal thread removes the labs and ends
/// the process by that signal: this thread waits for it (bounded) rather
/// than exit with the status of a program the teardown killed.
pub fn run(a: &LabArgs) -> anyhow::Result<ExitCode> {
    let r = run_lab(a);
    let t0 = std::time::Instant::now();
    while plumb_lab::Lab::ending_by_signal() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    r
}

fn run_lab(a: &LabArgs) -> anyhow::Result<ExitCode> {
    let cfg = match lab_config(a) {
        Ok(c) => c,
        Err(msg) => return Ok(usage_error(msg)),
    };
    if !a.client.is_empty() && a.exec.is_some() {
        return Ok(usage_error(
            "--exec runs your program instead of the plumb client: drop the client flags after --",
        ));
    }
    let client = match &a.exec {
        Some(cmd) => Near::Exec(cmd),
        None => match check_client_flags(&a.client) {
            Ok(m) => Near::Client(Box::new(m)),
            Err(code) => return Ok(code),
        },
    };
    let flags = match &client {
        Near::Client(m) => Some(m),
        Near::Exec(_) => None,
    };
    let stream = a.json_stream || flags.is_some_and(|m| m.json_stream);
    let json = a.json || stream || flags.is_some_and(|m| m.json);
    if let Err(e) = Lab::check_privileges() {
        return Ok(lab_error(&e));
    }
    if let Err(e) = Lab::install_signal_cleanup() {
        return Ok(lab_error(&e));
    }
    let lab = match Lab::start(cfg) {
        Ok(l) => l,
        Err(e) => return Ok(lab_error(&e)),
    };
    let probe = lab.probe().ok();
    let far = lab.far_addr().to_string();
    let near = lab.near_addr().to_string();
    note(json, &lab_line(a, probe.as_ref()));
    if a.hold {
        return hold(&lab, json);
    }

    // The far side: a plumb server, or the user's program.
    let exe = std::env::current_exe()?;
    let exe_s = exe.to_string_lossy().to_string();
    let port = LAB_PORT;
    let server = match &a.far_exec {
        Some(cmd) => {
            let mut c = lab.command(Side::Far, "sh");
            c.args(["-c", cmd])
                .env("PLUMB_NEAR", &near)
                .env("PLUMB_FAR", &far)
                .stdin(Stdio::null());
            if json {
                // Its output is not JSON: keep stdout for the document.
                c.stdout(std::io::stderr());
            }
            let r = Reaper(Some(c.spawn()?));
            if a.exec.is_none() {
                // The plumb client will connect: the far program is its server.
                wait_listening(&lab, port)?;
            }
            r
        }
        None => start_server(&lab, &exe_s, port)?,
    };

    // From here the first SIGINT/SIGTERM goes to the program in the lab,
    // which ends (the plumb client with its partial result); we report and
    // the lab ends the rest. A second signal ends everything at once.
    let _deferral = Lab::defer_signals();

    // The near side: the user's program, or the plumb client.
    let m = match client {
        Near::Client(m) => m,
        Near::Exec(cmd) => {
            let mut c = lab.command(Side::Near, "sh");
            c.args(["-c", cmd])
                .env("PLUMB_FAR", &far)
                .env("PLUMB_NEAR", &near);
            let status = wait_passing_signals(c.spawn()?)?;
            drop(server);
            report_emulator(&lab, json);
            return Ok(status
                .code()
                .map_or(ExitCode::from(1), |c| ExitCode::from(c.clamp(0, 255) as u8)));
        }
    };
    let mut client_args = a.client.clone();
    if stream && !m.json_stream {
        client_args.push("--json-stream".into());
    }
    if a.latency && !client_args.iter().any(|c| c == "--latency") {
        client_args.push("--latency".into());
    }
    // With --json-stream the client's events are the stream; with -J the
    // client is quiet and its document comes back to be extended.
    let (status, doc) = run_client(&lab, &exe_s, port, &client_args, json && !stream)?;
    drop(server);
    let Some(mut record) = doc.and_then(|t| Document::parse(&t).ok()) else {
        eprintln!("plumb: the client produced no result");
        return Ok(ExitCode::from(1));
    };
    let mut model = record::model_for(a, &m, measured_bps(&record));
    if let Some(line) = record::queue_model(a, &record, &mut model.0) {
        model.1 = format!("{}\n{line}", model.1);
    }
    let stats = lab.stats();
    let lab_obj = lab_record(a, probe.as_ref(), &stats);
    let diagnosis = a.why.then(|| {
        let link = Some(LinkRate {
            bps: a.rate.bps(),
            source: LinkSource::Given,
        });
        Evidence::from_document(&record, link).map(|mut ev| {
            if let Some(l) = ev.latency.as_mut() {
                l.predicted_queue_ms = model.0.queue_delay_ms.map(Real::get);
            }
            (diagnose(&ev), ev)
        })
    });
    if let (true, Some(Err(e))) = (json, &diagnosis) {
        eprintln!("plumb: cannot diagnose: {e}");
    }
    if let Some(out) = &a.report {
        let mut full = record.clone();
        full.lab = Some(lab_obj.clone());
        full.model = Some(model.0.clone());
        let name = format!(
            "lab link {}, RTT {}: plumb -c {}",
            a.rate.human(),
            a.rtt.human(),
            a.client.join(" ")
        );
        crate::report::write_for(out, vec![crate::report::input(name, full, Some(a.rate))])?;
    }
    if stream {
        // `--json-stream`'s last event: the lab, the model and the diagnosis.
        let event = Event::Lab(Box::new(LabEvent {
            lab: lab_obj,
            model: model.0.clone(),
            diagnosis: match &diagnosis {
                Some(Ok((d, _))) => Some(d.clone()),
                _ => None,
            },
        }));
        println!("{}", serde_json::to_string(&event)?);
    } else if json {
        record.lab = Some(lab_obj);
        record.model = Some(model.0.clone());
        let record = match &diagnosis {
            Some(Ok((d, _))) => plumb_diagnose::Explained::new(record, d.clone()),
            _ => plumb_diagnose::Explained {
                doc: record,
                diagnosis: None,
            },
        };
        println!("{}", serde_json::to_string_pretty(&record)?);
    } else {
        println!("\n{}", model.1);
        match &diagnosis {
            Some(Ok((d, ev))) => println!("\n{}", plumb_report::diagnosis::render(d, ev)),
            Some(Err(e)) => eprintln!("plumb: cannot diagnose: {e}"),
            None => {}
        }
        report_emulator(&lab, false);
    }
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

pub(crate) fn lab_line(a: &LabArgs, probe: Option<&plumb_lab::measure::Probe>) -> String {
    let mut s = format!(
        "Lab link: {} each way, RTT {}",
        a.rate.human(),
        a.rtt.human()
    );
    if let Some(l) = a.loss {
        s += &format!(", loss {}%", sig(l.probability() * 100.0, 3));
        if let Some(b) = a.loss_burst {
            s += &format!(" in bursts of {b}");
        }
    }
    if let Some(m) = a.drop_over {
        s += &format!(", packets over {m} B dropped without ICMP");
    }
    if let Some(p) = probe {
        s += &format!(
            "; measured before the test: RTT {} (min of {}), rate {}",
            Rtt::from_secs(p.rtt_min.as_secs_f64()).map_or_else(|| "?".into(), Rtt::human),
            p.rtt_samples,
            p.rate.map_or_else(
                || "unknown".into(),
                |r| format!("{} Mbit/s", sig(r.bps() as f64 / 1e6, 4))
            )
        );
    }
    s
}

/// The release error's p50, p99, p99.9 and maximum, µs; `None` for a link
/// that released nothing, which has no release error (not a 0 µs that
/// reads as a perfect emulator).
pub(crate) fn release_error_us(h: &plumb_lab::hist::Histogram) -> Option<[f64; 4]> {
    let us = |t: Duration| t.as_secs_f64() * 1e6;
    (h.count() > 0).then(|| {
        [
            us(h.quantile(0.5)),
            us(h.quantile(0.99)),
            us(h.quantile(0.999)),
            us(h.max()),
        ]
    })
}

fn report_emulator(lab: &Lab, json: bool) {
    let s = lab.stats();
    let d = &s.near_to_far;
    note(
        json,
        &format!(
            "Emulator near->far: {} segments delivered, {} dropped by the queue, {} by loss{}; {}",
            d.link.delivered.segments,
            d.link.dropped_queue.segments,
            d.link.dropped_loss.segments,
            too_big(lab),
            release_error_us(&d.release_error).map_or_else(
                || "nothing released, so no release error".to_string(),
                |e| format!("release error p99 {} us", sig(e[1], 3))
            )
        ),
    );
}

/// The black hole's drops, both directions, when `--drop-over` set one.
fn too_big(lab: &Lab) -> String {
    let s = lab.stats();
    let (n, f) = (&s.near_to_far.link, &s.far_to_near.link);
    match lab.config().near_to_far.max_packet {
        Some(m) => format!(
            ", {} over {m} B (no ICMP sent; far->near: {})",
            n.dropped_too_big.segments, f.dropped_too_big.segments
        ),
        None => String::new(),
    }
}

fn hold(lab: &Lab, json: bool) -> anyhow::Result<ExitCode> {
    let mut out: Box<dyn Write> = if json {
        Box::new(std::io::stderr().lock())
    } else {
        Box::new(std::io::stdout().lock())
    };
    writeln!(
        out,
        "The link is up until Ctrl-C. Near {} is in namespace {}, far {} in {}.",
        lab.near_addr(),
        lab.namespace_name(Side::Near),
        lab.far_addr(),
        lab.namespace_name(Side::Far)
    )?;
    writeln!(
        out,
        "  ip netns exec {} plumb -s",
        lab.namespace_name(Side::Far)
    )?;
    writeln!(
        out,
        "  ip netns exec {} plumb -c {} -t 10",
        lab.namespace_name(Side::Near),
        lab.far_addr()
    )?;
    writeln!(
        out,
        "  ip netns exec {} bash      # a shell on the near side",
        lab.namespace_name(Side::Near)
    )?;
    out.flush()?;
    drop(out);
    // The signal handler removes the lab and ends the process; bounded only by the user.
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

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
        let line = lab_line(&lab_args(&["--drop-over", "1400"]), None);
        assert!(
            line.ends_with(", packets over 1400 B dropped without ICMP"),
            "{line}"
        );
    }

    /// The `model` and `lab` objects and the lines, key for key and digit
    /// for digit as `plumb lab` prints them (tests/lab.rs reads these keys).
    #[test]
    fn model_and_lab_objects_as_printed() {
        let mut a = lab_args(&[
            "--rate", "100m", "--rtt", "40ms", "--loss", "0.5%", "--queue", "64k",
        ]);
        a.client = ["-P", "4", "--rwin", "64k"].map(String::from).to_vec();
        let m = check_client_flags(&a.client).expect("client flags");
        let doc = Document::parse(include_str!(
            "../../report/tests/fixtures/plumb-latency.json"
        ))
        .expect("document");
        let (mut model, line) = record::model_for(&a, &m, measured_bps(&doc));
        let queue = record::queue_model(&a, &doc, &mut model).expect("--latency probes");
        assert_eq!(
            serde_json::to_string(&model).expect("serializes"),
            r#"{"predicted_bps":20064076.554877874,"limit":"loss","measured_bps":99901184.0712153,"window_bytes":65536,"streams":4,"link_goodput_bps":94148244.473342,"queue_delay_ms":5.24288,"loaded_rtt_ms":45.24288,"measured_increase_p50_ms":-0.006400000000000003}"#
        );
        assert_eq!(line, "Model: 20.06 Mbit/s predicted (Mathis at 0.5% loss, RTT 40 ms, 4 streams); measured 99.9 Mbit/s (498% of the prediction).");
        assert_eq!(queue, "Queue: full, it adds 5.24 ms (loaded RTT 45.2 ms predicted); the load added -0.0064 ms at the median.");

        let probe = plumb_lab::measure::Probe {
            configured_rtt: Duration::from_millis(15),
            rtt_min: Duration::from_micros(15_123),
            rtt_median: Duration::from_micros(15_456),
            rtt_samples: 10,
            rtt_lost: 0,
            configured_rate: plumb_lab::emu::Rate::from_mbps(1000.0).expect("rate"),
            rate: plumb_lab::emu::Rate::from_mbps(990.0),
            burst_sent: 10,
            burst_received: 10,
        };
        let mut stats = plumb_lab::LabStats::default();
        stats
            .near_to_far
            .release_error
            .record(Duration::from_micros(17));
        assert_eq!(
            serde_json::to_string(&lab_record(&a, Some(&probe), &stats)).expect("serializes"),
            r#"{"configured":{"rate_bps":100000000.0,"rtt_ms":40.0,"loss":0.005,"loss_burst":null,"queue":"64k","jitter_ms":null,"seed":null},"measured":{"rtt_min_ms":15.123,"rtt_median_ms":15.456,"rate_bps":990000000},"emulator":{"segments_delivered":0,"segments_dropped_queue":0,"segments_dropped_loss":0,"max_queue_bytes":0,"release_error_p50_us":17.0,"release_error_p99_us":17.0,"release_error_p999_us":17.0,"release_error_max_us":17.0,"realtime":false,"idle_poll":false}}"#
        );
        // With a black hole: its size and both directions' drops.
        a.drop_over = Some(1400);
        stats.near_to_far.link.dropped_too_big.segments = 7;
        stats.far_to_near.link.dropped_too_big.segments = 2;
        let v = serde_json::to_value(lab_record(&a, Some(&probe), &stats)).expect("serializes");
        assert_eq!(v["configured"]["drop_over_bytes"], 1400);
        assert_eq!(v["emulator"]["segments_dropped_too_big"], 7);
        assert_eq!(v["emulator"]["segments_dropped_too_big_far_to_near"], 2);
    }

    /// The line names the bound that binds: window, application or link.
    #[test]
    fn model_lines_name_the_binding_limit() {
        let doc = Document::parse(include_str!("../../report/tests/fixtures/plumb-p2.json"))
            .expect("document");
        let mut a = lab_args(&["--rate", "1g", "--rtt", "15ms"]);
        for (client, line) in [
            (
                &["--rwin", "17520", "-t", "5"][..],
                "Model: 9.344 Mbit/s predicted (window 17,520 B / RTT 15 ms); measured 22.2 Gbit/s (237634% of the prediction).",
            ),
            (
                &["-b", "10M/32", "-P", "2"][..],
                "Model: 20 Mbit/s predicted (-b 10 Mbit/s per stream, 2 streams); measured 22.2 Gbit/s (111023% of the prediction).",
            ),
            (
                &["-P4"][..],
                "Model: 941.5 Mbit/s predicted (link goodput, 94.1% of 1 Gbit/s, 4 streams); measured 22.2 Gbit/s (2358% of the prediction).",
            ),
        ] {
            a.client = client.iter().map(|c| c.to_string()).collect();
            let m = check_client_flags(&a.client).expect("client flags");
            assert_eq!(record::model_for(&a, &m, measured_bps(&doc)).1, line);
        }
    }

    /// `-J` prints the client's document through [`Document`]: a lab
    /// document plumb wrote reads and prints back to the same text.
    #[test]
    fn a_lab_document_prints_back_as_written() {
        let text = include_str!("../../report/tests/fixtures/plumb-lab-rwin.json");
        let doc = Document::parse(text).expect("document");
        assert!(doc.lab.is_some() && doc.model.is_some());
        assert_eq!(
            serde_json::to_string_pretty(&doc).expect("serializes"),
            text.trim_end()
        );
    }

    #[test]
    fn a_link_that_released_nothing_has_no_release_error() {
        let a = lab_args(&["--rate", "1g", "--rtt", "15ms"]);
        let mut stats = plumb_lab::LabStats::default();
        let errors = |e: &plumb_record::LabEmulator| {
            [
                e.release_error_p50_us,
                e.release_error_p99_us,
                e.release_error_p999_us,
                e.release_error_max_us,
            ]
        };
        let none = errors(&lab_record(&a, None, &stats).emulator);
        assert!(none.iter().all(|e| *e == Some(None)), "{none:?}");
        for us in [3, 5, 40] {
            stats
                .near_to_far
                .release_error
                .record(Duration::from_micros(us));
        }
        let got: Vec<f64> = errors(&lab_record(&a, None, &stats).emulator)
            .iter()
            .map(|e| e.flatten().expect("a number").get())
            .collect();
        assert!(got.windows(2).all(|w| w[0] <= w[1]), "{got:?}");
        assert_eq!(got[3], 40.0);
    }
}
