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
use std::process::ExitCode;
use std::time::Duration;

use plumb_diagnose::{diagnose, Evidence};
use plumb_lab::programs::{
    run_client, run_near_program, start_far_program, start_server, wait_for_signal_teardown, Reaper,
};
use plumb_lab::{Lab, LabConfig, LabError};
use plumb_record::{Document, Event, LabEvent, Real};

use plumb_lab::document::{
    self as record, emulator_line, hold_text, lab_line, lab_record, measured_bps,
};

use crate::common::report_page;
use crate::usage::{clap_exit, usage_error};
use plumb_cli::lab_flags::{
    client_flags, lab_client, lab_config, ClientFlagsError, LabArgs, LAB_PORT,
};
use plumb_cli::measure::MeasureArgs;
use plumb_live::link::given_rate;

fn lab_error(e: &LabError) -> ExitCode {
    eprintln!("plumb: {e}");
    ExitCode::from(1)
}

/// The client flags after `--`, checked as the client checks them
/// (`plumb_cli::lab_flags::client_flags`); `--help` there prints the
/// client's help.
fn check_client_flags(args: &[String]) -> Result<MeasureArgs, ExitCode> {
    client_flags(args).map_err(|e| match e {
        ClientFlagsError::Usage(msg) => usage_error(msg),
        ClientFlagsError::Clap(e) => clap_exit(e),
    })
}

/// What runs on the near side: the user's program, or the plumb client
/// with its checked flags.
enum Near<'a> {
    Exec(&'a str),
    Client(Box<MeasureArgs>),
}

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
    wait_for_signal_teardown(Duration::from_secs(30));
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
    note(json, &lab_line(&a.link(), probe.as_ref()));
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

/// The far side: a plumb server, or the user's program (a server the
/// plumb client will connect to, unless `--exec` runs instead).
fn start_far(lab: &Lab, a: &LabArgs, json: bool, exe: &str) -> anyhow::Result<Reaper> {
    Ok(match &a.far_exec {
        None => start_server(lab, exe, LAB_PORT)?,
        Some(cmd) => start_far_program(lab, cmd, json, a.exec.is_none().then_some(LAB_PORT))?,
    })
}

/// `--exec`: the user's program on the near side; its exit status is the
/// lab's.
fn run_near_exec(lab: &Lab, cmd: &str, server: Reaper, json: bool) -> anyhow::Result<ExitCode> {
    let status = run_near_program(lab, cmd)?;
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
    let link = a.link();
    let mut model = record::model_for(&link, lab_client(m), measured_bps(&record));
    if let Some(line) = record::queue_model(&link, &record, &mut model.0) {
        model.1 = format!("{}\n{line}", model.1);
    }
    let stats = lab.stats();
    let lab_obj = lab_record(&link, probe, &stats);
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
    let max_packet = lab.config().near_to_far.max_packet;
    note(json, &emulator_line(&lab.stats(), max_packet));
}

fn hold(lab: &Lab, json: bool) -> anyhow::Result<ExitCode> {
    let text = hold_text(lab);
    if json {
        let mut err = std::io::stderr().lock();
        err.write_all(text.as_bytes())?;
        err.flush()?;
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        out.flush()?;
    }
    // The signal handler removes the lab and ends the process; bounded only by the user.
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}
