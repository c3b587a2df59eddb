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
use plumb_model::{Bytes, Framing, LossRate, PathInput, Prediction, Rate, Rtt};
use serde_json::{json, Value};

use crate::cli::usage_error;
use crate::measure::MeasureArgs;

/// Flags of `plumb lab`.
#[derive(Debug, Args, Clone)]
#[command(
    after_help = "Examples:\n  plumb lab --rate 1gbit --rtt 15ms -- --rwin 17520 -t 5\n  plumb lab --rate 100m --rtt 40ms --loss 0.5% -- -C reno -t 10\n  plumb lab --rate 1g --rtt 15ms --exec 'rsync -a big/ $PLUMB_FAR:/tmp/'\n  plumb lab --rate 1g --rtt 15ms --hold"
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
        Err(e) => return Err(crate::cli::clap_exit(e)),
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
        Some(_) => None,
        None => match check_client_flags(&a.client) {
            Ok(m) => Some(m),
            Err(code) => return Ok(code),
        },
    };
    let stream = a.json_stream || client.as_ref().is_some_and(|m| m.json_stream);
    let json = a.json || stream || client.as_ref().is_some_and(|m| m.json);
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
    if let Some(cmd) = &a.exec {
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
    let mut client_args = a.client.clone();
    if stream && !client.as_ref().is_some_and(|m| m.json_stream) {
        client_args.push("--json-stream".into());
    }
    if a.latency && !client_args.iter().any(|c| c == "--latency") {
        client_args.push("--latency".into());
    }
    // With --json-stream the client's events are the stream; with -J the
    // client is quiet and its document comes back to be extended.
    let (status, doc) = run_client(&lab, &exe_s, port, &client_args, json && !stream)?;
    drop(server);
    let Some(mut doc) = doc.and_then(|t| serde_json::from_str::<Value>(&t).ok()) else {
        eprintln!("plumb: the client produced no result");
        return Ok(ExitCode::from(1));
    };
    let mut model = model_for(a, &doc);
    if let Some((v, line)) = queue_model(a, &doc) {
        if let Some(m) = model.0.as_object_mut() {
            m.extend(v);
        }
        model.1 = format!("{}\n{line}", model.1);
    }
    let stats = lab.stats();
    let lab_json = lab_json(a, probe.as_ref(), &stats);
    let diagnosis = a.why.then(|| {
        let link = Some(LinkRate {
            bps: a.rate.bps(),
            source: LinkSource::Given,
        });
        plumb_record::Document::from_value(doc.clone())
            .map_err(|e| e.to_string())
            .and_then(|d| Evidence::from_document(&d, link))
            .map(|mut ev| {
                if let Some(l) = ev.latency.as_mut() {
                    l.predicted_queue_ms = model.0["queue_delay_ms"].as_f64();
                }
                (diagnose(&ev), ev)
            })
    });
    if let (true, Some(Err(e))) = (json, &diagnosis) {
        eprintln!("plumb: cannot diagnose: {e}");
    }
    if let Some(out) = &a.report {
        let mut full = doc.clone();
        if let Some(o) = full.as_object_mut() {
            o.insert("lab".into(), lab_json.clone());
            o.insert("model".into(), model.0.clone());
        }
        let name = format!(
            "lab link {}, RTT {}: plumb -c {}",
            a.rate.human(),
            a.rtt.human(),
            a.client.join(" ")
        );
        crate::report::write_for(out, vec![crate::report::input(name, full, Some(a.rate))])?;
    }
    if stream {
        let mut data = serde_json::Map::new();
        data.insert("lab".into(), lab_json);
        data.insert("model".into(), model.0.clone());
        if let Some(Ok((d, _))) = &diagnosis {
            data.insert("diagnosis".into(), serde_json::to_value(d)?);
        }
        println!(
            "{}",
            serde_json::to_string(&json!({"event": "lab", "data": data}))?
        );
    } else if json {
        if let Some(o) = doc.as_object_mut() {
            o.insert("lab".into(), lab_json);
            o.insert("model".into(), model.0.clone());
            if let Some(Ok((d, _))) = &diagnosis {
                o.insert("diagnosis".into(), serde_json::to_value(d)?);
            }
        }
        println!("{}", serde_json::to_string_pretty(&doc)?);
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

pub(crate) fn lab_json(
    a: &LabArgs,
    probe: Option<&plumb_lab::measure::Probe>,
    stats: &plumb_lab::LabStats,
) -> Value {
    let d = &stats.near_to_far;
    let err = release_error_us(&d.release_error);
    json!({
        "configured": {
            "rate_bps": a.rate.bps(),
            "rtt_ms": a.rtt.ms(),
            "loss": a.loss.map(LossRate::probability),
            "loss_burst": a.loss_burst,
            "queue": a.queue,
            "jitter_ms": a.jitter.map(Rtt::ms),
            "seed": a.seed,
        },
        "measured": probe.map(|p| json!({
            "rtt_min_ms": p.rtt_min.as_secs_f64() * 1e3,
            "rtt_median_ms": p.rtt_median.as_secs_f64() * 1e3,
            "rate_bps": p.rate.map(|r| r.bps()),
        })),
        "emulator": {
            "segments_delivered": d.link.delivered.segments,
            "segments_dropped_queue": d.link.dropped_queue.segments,
            "segments_dropped_loss": d.link.dropped_loss.segments,
            "max_queue_bytes": d.link.max_queue_bytes,
            "release_error_p50_us": err.map(|e| e[0]),
            "release_error_p99_us": err.map(|e| e[1]),
            // A stall shows here first: one of 10–40 ms once a second (RT
            // throttling) left the p99 at 0.15–2 ms but the p99.9 at 20–40 ms.
            "release_error_p999_us": err.map(|e| e[2]),
            "release_error_max_us": err.map(|e| e[3]),
            "realtime": d.realtime,
            "idle_poll": stats.idle_poll,
        },
    })
}

/// The release error's p50, p99, p99.9 and maximum, µs; `None` for a link
/// that released nothing, which has no release error (not a 0 µs that
/// reads as a perfect emulator).
fn release_error_us(h: &plumb_lab::hist::Histogram) -> Option<[f64; 4]> {
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
            "Emulator near->far: {} segments delivered, {} dropped by the queue, {} by loss; {}",
            d.link.delivered.segments,
            d.link.dropped_queue.segments,
            d.link.dropped_loss.segments,
            release_error_us(&d.release_error).map_or_else(
                || "nothing released, so no release error".to_string(),
                |e| format!("release error p99 {} us", sig(e[1], 3))
            )
        ),
    );
}

/// The model's prediction for this link and these client flags, as JSON and a line.
fn model_for(a: &LabArgs, doc: &Value) -> (Value, String) {
    let value = |names: &[&str]| {
        a.client
            .iter()
            .position(|x| names.contains(&x.as_str()))
            .and_then(|i| a.client.get(i + 1))
            .cloned()
    };
    let bytes = |names: &[&str]| value(names).and_then(|v| Bytes::parse(&v).ok());
    let streams = value(&["-P", "--parallel"])
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(1)
        .max(1);
    // The window one stream gets: the receiver's clamp, or what a fixed send
    // buffer holds in flight; autotuned otherwise (no window limit).
    let sndbuf = bytes(&["--sndbuf"])
        .map(|b| Bytes(plumb_diagnose::rules::sndbuf_payload(2 * b.get()) as u64));
    let window = bytes(&["--rwin"]).or(sndbuf);
    let mut framing = Framing {
        timestamps: true,
        ..Framing::default()
    };
    if let Some(m) = bytes(&["-M", "--set-mss"]) {
        framing = Framing::with_mss(m, false, true, false);
    }
    let input = PathInput {
        rate: Some(a.rate),
        rtt: Some(a.rtt),
        window,
        loss: a.loss,
        framing,
        size: None,
    };
    let p = Prediction::of(&input);
    // None when the test ended before its summary (interrupted).
    let measured = doc["end"]["sum_received"]["bits_per_second"].as_f64();
    let Some((per_stream, limit)) = p.predicted else {
        return (Value::Null, String::new());
    };
    let link = p.link_goodput.map_or(f64::INFINITY, Rate::bps);
    // n streams multiply the window and loss limits, never the link.
    let mut predicted = if limit.name() == "link" {
        per_stream.bps()
    } else {
        (per_stream.bps() * streams as f64).min(link)
    };
    let mut name = limit.name().to_string();
    let mut why = match (limit.name(), window) {
        ("window", Some(w)) => format!("window {} / RTT {}", w.human(), a.rtt.human()),
        ("loss", _) => format!(
            "Mathis at {}% loss, RTT {}",
            sig(a.loss.map_or(0.0, LossRate::probability) * 100.0, 3),
            a.rtt.human()
        ),
        _ => format!(
            "link goodput, {}% of {}",
            sig(framing.efficiency() * 100.0, 3),
            a.rate.human()
        ),
    };
    // An application rate cap (-b, per stream) binds when it is the smallest.
    if let Some(cap) = value(&["-b", "--bitrate"])
        .and_then(|v| Rate::parse(v.split('/').next().unwrap_or(&v)).ok())
    {
        let total = cap.bps() * streams as f64;
        if total < predicted {
            predicted = total;
            name = "application".into();
            why = format!("-b {} per stream", cap.human());
        }
    }
    let rate = |b: f64| Rate::from_bps(b).map_or_else(|| "0 bit/s".into(), Rate::human);
    let outcome = match measured {
        Some(m) => format!(
            "measured {} ({}% of the prediction)",
            rate(m),
            sig(m / predicted.max(1.0) * 100.0, 3)
        ),
        None => "no result to compare (the test ended before its summary)".into(),
    };
    let line = format!(
        "Model: {} predicted ({why}{}); {outcome}.",
        rate(predicted),
        if streams > 1 {
            format!(", {streams} streams")
        } else {
            String::new()
        },
    );
    (
        json!({"predicted_bps": predicted, "limit": name, "measured_bps": measured,
               "window_bytes": window.map(Bytes::get), "streams": streams,
               "link_goodput_bps": p.link_goodput.map(Rate::bps)}),
        line,
    )
}

/// The delay the link's full queue adds and the loaded RTT that follows,
/// beside what the client's latency probes measured (with --latency).
fn queue_model(a: &LabArgs, doc: &Value) -> Option<(serde_json::Map<String, Value>, String)> {
    let latency = &doc["end"]["plumb"]["latency"];
    latency.get("loaded")?;
    let size = match a.queue.as_deref().map(QueueSize::parse) {
        None => QueueSize::Bdp(1.0),
        Some(Ok(size)) => size,
        Some(Err(_)) => return None,
    };
    let delay = plumb_model::latency::queue_delay_secs(size, a.rate, Some(a.rtt))?;
    let loaded = plumb_model::latency::loaded_rtt_secs(a.rtt, delay);
    let measured = latency["increase_p50_ms"].as_f64();
    let mut m = serde_json::Map::new();
    m.insert("queue_delay_ms".into(), json!(delay * 1e3));
    m.insert("loaded_rtt_ms".into(), json!(loaded * 1e3));
    m.insert("measured_increase_p50_ms".into(), json!(measured));
    let line = format!(
        "Queue: full, it adds {} ms (loaded RTT {} ms predicted); the load added {} ms at the median.",
        sig(delay * 1e3, 3),
        sig(loaded * 1e3, 3),
        measured.map_or_else(|| "?".into(), |x| sig(x, 3))
    );
    Some((m, line))
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

    #[test]
    fn a_link_that_released_nothing_has_no_release_error() {
        let a = Cli::try_parse_from(["lab", "--rate", "1g", "--rtt", "15ms"])
            .expect("lab flags")
            .lab;
        let mut stats = plumb_lab::LabStats::default();
        let keys = [
            "release_error_p50_us",
            "release_error_p99_us",
            "release_error_p999_us",
            "release_error_max_us",
        ];
        let v = lab_json(&a, None, &stats);
        for k in keys {
            assert!(v["emulator"][k].is_null(), "{k}: {}", v["emulator"]);
        }
        for us in [3, 5, 40] {
            stats
                .near_to_far
                .release_error
                .record(Duration::from_micros(us));
        }
        let v = lab_json(&a, None, &stats);
        let got: Vec<f64> = keys
            .iter()
            .map(|k| v["emulator"][k].as_f64().expect("a number"))
            .collect();
        assert!(got.windows(2).all(|w| w[0] <= w[1]), "{got:?}");
        assert_eq!(got[3], 40.0);
    }
}
