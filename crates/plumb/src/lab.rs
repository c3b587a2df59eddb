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

use plumb_diagnose::{diagnose, Evidence};
use plumb_lab::programs::{run_client, start_server, wait_listening, wait_passing_signals, Reaper};
use plumb_lab::{Lab, LabConfig, LabError, Side};
use plumb_model::units::sig;
use plumb_record::{Document, Event, LabEvent, Real};

use crate::common::lab_flags::{lab_config, LabArgs};
use crate::common::lab_record::{
    self as record, lab_line, lab_record, measured_bps, release_error_us,
};
use crate::common::link::given_rate;
use crate::common::report_page;
use crate::measure::{client_config, test_spec, MeasureArgs};
use crate::usage::{clap_exit, usage_error};

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
        Err(e) => return Err(clap_exit(e)),
    };
    if m.server {
        return Err(usage_error(
            "client flags after --: -s is not one; the lab runs the server itself",
        ));
    }
    let checked = test_spec(&m).and_then(|spec| client_config(&m, spec).map(|_| ()));
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
    let (cfg, client) = match checked(a) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let flags = match &client {
        Near::Client(m) => Some(m),
        Near::Exec(_) => None,
    };
    let stream = a.json_stream || flags.is_some_and(|m| m.json_stream);
    let json = a.json || stream || flags.is_some_and(|m| m.json);
    let lab = match build(cfg) {
        Ok(l) => l,
        Err(e) => return Ok(lab_error(&e)),
    };
    let probe = lab.probe().ok();
    note(json, &lab_line(a, probe.as_ref()));
    if a.hold {
        return hold(&lab, json);
    }
    let exe = std::env::current_exe()?.to_string_lossy().to_string();
    let server = start_far(&lab, a, json, &exe)?;

    // From here the first SIGINT/SIGTERM goes to the program in the lab,
    // which ends (the plumb client with its partial result); we report and
    // the lab ends the rest. A second signal ends everything at once.
    let _deferral = Lab::defer_signals();

    // The near side: the user's program, or the plumb client.
    let m = match client {
        Near::Client(m) => m,
        Near::Exec(cmd) => return run_near_exec(&lab, cmd, server, json),
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
    let (status, doc) = run_client(&lab, &exe, LAB_PORT, &client_args, json && !stream)?;
    drop(server);
    let Some(record) = doc.and_then(|t| Document::parse(&t).ok()) else {
        eprintln!("plumb: the client produced no result");
        return Ok(ExitCode::from(1));
    };
    let out = Output { json, stream };
    finish(a, &lab, probe.as_ref(), &m, record, out)?;
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The flags checked before any lab is built: the emulator's configuration
/// and what runs on the near side.
fn checked(a: &LabArgs) -> Result<(LabConfig, Near<'_>), ExitCode> {
    let cfg = lab_config(a).map_err(usage_error)?;
    if !a.client.is_empty() && a.exec.is_some() {
        return Err(usage_error(
            "--exec runs your program instead of the plumb client: drop the client flags after --",
        ));
    }
    let client = match &a.exec {
        Some(cmd) => Near::Exec(cmd),
        None => Near::Client(Box::new(check_client_flags(&a.client)?)),
    };
    Ok((cfg, client))
}

/// The lab itself, once this process may build one and its teardown on a
/// signal is in place.
fn build(cfg: LabConfig) -> Result<Lab, LabError> {
    Lab::check_privileges()?;
    Lab::install_signal_cleanup()?;
    Lab::start(cfg)
}

/// The far side: a plumb server, or the user's program.
fn start_far(lab: &Lab, a: &LabArgs, json: bool, exe: &str) -> anyhow::Result<Reaper> {
    let Some(cmd) = &a.far_exec else {
        return Ok(start_server(lab, exe, LAB_PORT)?);
    };
    let mut c = lab.command(Side::Far, "sh");
    c.args(["-c", cmd])
        .env("PLUMB_NEAR", lab.near_addr().to_string())
        .env("PLUMB_FAR", lab.far_addr().to_string())
        .stdin(Stdio::null());
    if json {
        // Its output is not JSON: keep stdout for the document.
        c.stdout(std::io::stderr());
    }
    let r = Reaper(Some(c.spawn()?));
    if a.exec.is_none() {
        // The plumb client will connect: the far program is its server.
        wait_listening(lab, LAB_PORT)?;
    }
    Ok(r)
}

/// `--exec`: the user's program on the near side; its exit status is the
/// lab's.
fn run_near_exec(lab: &Lab, cmd: &str, server: Reaper, json: bool) -> anyhow::Result<ExitCode> {
    let mut c = lab.command(Side::Near, "sh");
    c.args(["-c", cmd])
        .env("PLUMB_FAR", lab.far_addr().to_string())
        .env("PLUMB_NEAR", lab.near_addr().to_string());
    let status = wait_passing_signals(c.spawn()?)?;
    drop(server);
    report_emulator(lab, json);
    Ok(status
        .code()
        .map_or(ExitCode::from(1), |c| ExitCode::from(c.clamp(0, 255) as u8)))
}

/// How the run's result is written: `-J` (one document), `--json-stream`
/// (the client's events, then the lab's), or text.
#[derive(Clone, Copy)]
struct Output {
    json: bool,
    stream: bool,
}

/// The client's document with what the lab adds to it: the link, the
/// model's prediction and (with `--why`) the diagnosis; the report, then
/// the output.
fn finish(
    a: &LabArgs,
    lab: &Lab,
    probe: Option<&plumb_lab::measure::Probe>,
    m: &MeasureArgs,
    mut record: Document,
    out: Output,
) -> anyhow::Result<()> {
    let mut model = record::model_for(a, m, measured_bps(&record));
    if let Some(line) = record::queue_model(a, &record, &mut model.0) {
        model.1 = format!("{}\n{line}", model.1);
    }
    let stats = lab.stats();
    let lab_obj = lab_record(a, probe, &stats);
    let diagnosis = a.why.then(|| {
        let link = Some(given_rate(a.rate));
        Evidence::from_document(&record, link).map(|mut ev| {
            if let Some(l) = ev.latency.as_mut() {
                l.predicted_queue_ms = model.0.queue_delay_ms.map(Real::get);
            }
            (diagnose(&ev), ev)
        })
    });
    if let (true, Some(Err(e))) = (out.json, &diagnosis) {
        eprintln!("plumb: cannot diagnose: {e}");
    }
    if let Some(path) = &a.report {
        let mut full = record.clone();
        full.lab = Some(lab_obj.clone());
        full.model = Some(model.0.clone());
        let name = format!(
            "lab link {}, RTT {}: plumb -c {}",
            a.rate.human(),
            a.rtt.human(),
            a.client.join(" ")
        );
        report_page::write_for(path, vec![report_page::input(name, full, Some(a.rate))])?;
    }
    if out.stream {
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
    } else if out.json {
        record.lab = Some(lab_obj);
        record.model = Some(model.0.clone());
        let record = match &diagnosis {
            Some(Ok((d, _))) => record.with_diagnosis(d.clone()),
            _ => record,
        };
        println!("{}", serde_json::to_string_pretty(&record)?);
    } else {
        println!("\n{}", model.1);
        match &diagnosis {
            Some(Ok((d, ev))) => println!("\n{}", plumb_report::diagnosis::render(d, ev)),
            Some(Err(e)) => eprintln!("plumb: cannot diagnose: {e}"),
            None => {}
        }
        report_emulator(lab, false);
    }
    Ok(())
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
    /// document plumb wrote reads and prints back to the same text, its
    /// `diagnosis` (an older plumb's) aside, which reads into today's keys
    /// and prints back to the same diagnosis.
    #[test]
    fn a_lab_document_prints_back_as_written() {
        let text = include_str!("../../report/tests/fixtures/plumb-lab-rwin.json");
        let doc = Document::parse(text).expect("document");
        assert!(doc.lab.is_some() && doc.model.is_some());
        let printed = serde_json::to_string_pretty(&doc).expect("serializes");
        let mut want: serde_json::Value = serde_json::from_str(text).expect("JSON");
        want.as_object_mut().map(|o| o.shift_remove("diagnosis"));
        let bare = Document {
            diagnosis: None,
            ..doc.clone()
        };
        assert_eq!(
            serde_json::to_string_pretty(&bare).expect("serializes"),
            serde_json::to_string_pretty(&want).expect("serializes")
        );
        let again = Document::parse(&printed).expect("document");
        assert!(again.diagnosis.is_some());
        assert_eq!(again.diagnosis, doc.diagnosis);
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
