//! `plumb why`: runs a short test (or reads a saved `-J` document, or uses the
//! model alone) and says what limits the transfer, with evidence and fixes.
//! A packet capture given to `--from` (or read with `--capture`) is explained
//! per connection by `capture`; running connections by `live`.

pub mod capture;
mod live;

use std::io::Write;
use std::process::ExitCode;

use plumb_diagnose::evidence::LinkRate;
use plumb_diagnose::{diagnose, Evidence, LinkSource};
use plumb_model::units::thousands;
use plumb_model::units::Rate;
use plumb_model::{Bytes, Framing, LossRate, PathInput, Prediction};
use plumb_record::Document;

use crate::common::report_page;
use crate::common::test_explain::{explain, test_and_explain, NO_JSON_STREAM};
use crate::usage::usage_error;
use plumb_cli::measure::{server_flag_given, traffic_flag_given};
use plumb_cli::why::WhyArgs;

/// Runs `plumb why`.
pub fn run(a: &WhyArgs) -> anyhow::Result<ExitCode> {
    if a.measure.json_stream {
        return Ok(usage_error(NO_JSON_STREAM));
    }
    if let Some(flag) = server_flag_given(&a.measure) {
        return Ok(usage_error(format!(
            "{flag} is a server option; plumb why runs a client (see plumb why --help)"
        )));
    }
    if a.measure.client.is_some() {
        return Ok(usage_error(
            "plumb why takes the server as its argument: plumb why HOST, not -c HOST",
        ));
    }
    if let Some(why) = a.measure.refused.first() {
        return Ok(usage_error(why));
    }
    if a.host.is_none() && a.measure.affinity.is_some() {
        return Ok(usage_error(
            "-A places a test's ends on CPUs: give plumb why a HOST to test",
        ));
    }
    if let Some(flag) = traffic_flag_given(&a.measure).filter(|_| a.host.is_none()) {
        return Ok(usage_error(format!(
            "{flag} shapes a test: give plumb why a HOST to test (a file, a capture or live connections are explained as they are)"
        )));
    }
    if let Some(iface) = &a.capture {
        return capture::from_interface(&capture::Listen {
            iface,
            port: a.measure.port,
            live: &a.live,
            secs: a.for_secs.unwrap_or(3.0),
            write: a.write.as_deref(),
            report: a.measure.report.as_deref(),
            link: a.measure.link,
            out: capture::Output {
                json: a.measure.json,
                verbose: a.measure.verbose,
            },
        });
    }
    if let Some(path) = &a.from {
        return from_path(a, path);
    }
    match &a.host {
        Some(host) => {
            let mut m = a.measure.clone();
            m.client = Some(host.clone());
            if m.time.is_none() && m.bytes.is_none() && m.blocks.is_none() {
                m.time = Some(5.0);
            }
            test_and_explain(&m, a.measure.link)
        }
        // No HOST, no model inputs, a connection filter: explain what is running.
        None if a.rate.is_none()
            && a.rtt.is_none()
            && a.tcp_timestamps.is_none()
            && (a.live.any() || a.for_secs.is_some() || a.measure.port.is_some()) =>
        {
            live::run(
                &a.live,
                a.measure.port,
                a.for_secs,
                a.measure.link,
                a.measure.json,
                a.measure.report.as_deref(),
            )
        }
        None => model_only(a),
    }
}

/// `plumb why --from FILE`: a packet capture's connections, or a saved
/// `-J` document (or `--json-stream` log), explained.
fn from_path(a: &WhyArgs, path: &std::path::Path) -> anyhow::Result<ExitCode> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() == 0) {
        return Ok(usage_error(format!("{} is empty", path.display())));
    }
    if plumb_capture::file_is_capture(path) {
        let f = match capture::filters(a.measure.port, &a.live) {
            Ok(f) => f,
            Err(msg) => return Ok(usage_error(msg)),
        };
        let out = capture::Output {
            json: a.measure.json,
            verbose: a.measure.verbose,
        };
        return capture::from_file(path, &f, a.measure.link, out, a.measure.report.as_deref());
    }
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        // Binary, and not a capture this reader knows.
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Ok(usage_error(format!(
                "{} is neither a -J document nor a pcap/pcapng capture",
                path.display()
            )))
        }
        // A file that cannot be read is a run-time failure (exit 1), as
        // in `plumb report`; only a file of the wrong kind is usage.
        Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
    };
    // A -J document, or a saved --json-stream log of one test.
    let doc = match Document::parse(&text) {
        Ok(d) => d,
        Err(e) => match plumb_report::input::stream_document(&text) {
            Some(d) => d,
            None => {
                return Ok(usage_error(format!(
                    "{} is not a -J document or a --json-stream log: {e}",
                    path.display()
                )))
            }
        },
    };
    let link = a.measure.link.map(|r| LinkRate {
        bps: r.bps(),
        source: LinkSource::Given,
    });
    if let Some(out) = &a.measure.report {
        let name = path
            .file_name()
            .map_or("result".into(), |n| n.to_string_lossy().to_string());
        // The page shows the answer printed below, not one saved in the document.
        let mut fresh = doc.clone();
        fresh.diagnosis = None;
        let input = report_page::input(name, fresh, a.measure.link);
        report_page::write_for(out, vec![input])?;
    }
    explain(&doc, link, a.measure.json)
}

/// `plumb why --rate … --rtt … -w …`: the model's answer with no test.
///
/// The model's rate stands in for the measurement and goes through the same
/// rules as a test, so the summary, the windows and streams needed and the
/// fixes come from one set of figures, defined as `plumb calc` defines them
/// (`crates/plumb/tests/calc.rs` holds the two together). Segments are
/// framed at MTU 1500 with the header `--tcp-timestamps` names, by default
/// Linux's (timestamps on: 1448 B of payload); the first line says which.
fn model_only(a: &WhyArgs) -> anyhow::Result<ExitCode> {
    let (Some(rate), Some(rtt)) = (a.rate.or(a.measure.link), a.rtt) else {
        return Ok(usage_error(
            "give a HOST to test, --from FILE, a live filter (--port, --peer, --pid, --conn), or --rate and --rtt (with -w WINDOW and/or --loss) for the model alone",
        ));
    };
    let window = a.measure.window;
    if window.is_none() && a.loss.is_none() {
        return Ok(usage_error(
            "the model needs -w WINDOW and/or --loss besides --rate and --rtt",
        ));
    }
    let framing = Framing {
        timestamps: a.tcp_timestamps.unwrap_or(Framing::default().timestamps),
        ..Framing::default()
    };
    let input = PathInput {
        rate: Some(rate),
        rtt: Some(rtt),
        window,
        loss: a.loss,
        framing,
        ..PathInput::default()
    };
    let Some((predicted, _)) = Prediction::of(&input).predicted else {
        return Ok(usage_error("nothing to predict from these flags"));
    };
    let d = model_diagnosis(&input, predicted, framing);
    let doc = Document::default().with_diagnosis(d.clone());
    // The window and loss the model was given, as both outputs name them.
    let mut given = Vec::new();
    if let Some(w) = window {
        given.push(format!("window {}", w.human()));
    }
    if let Some(l) = a.loss {
        given.push(format!("loss {l}"));
    }
    if let Some(out) = &a.measure.report {
        // A verdict-only page, from the document -J prints.
        let mut name = vec![
            format!("the model alone: {}", rate.human()),
            format!("RTT {}", rtt.human()),
        ];
        name.extend(given.iter().cloned());
        let input = plumb_report::html::Input {
            name: name.join(", "),
            doc: doc.clone(),
        };
        report_page::write_for(out, vec![input])?;
    }
    if a.measure.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut path = vec![
        format!("{} link", rate.human()),
        format!("RTT {}", rtt.human()),
    ];
    path.extend(given);
    print_model(&path.join(", "), framing, &d)?;
    Ok(ExitCode::SUCCESS)
}

/// The rules' verdict on the model's rate standing in for a measurement
/// over the path `input` describes.
fn model_diagnosis(
    input: &PathInput,
    predicted: Rate,
    framing: Framing,
) -> plumb_record::diagnosis::Diagnosis {
    let rtt_us = input.rtt.map_or(0, |r| (r.secs() * 1e6).round() as u64);
    let ev = Evidence {
        tcp: true,
        duration_s: 0.0,
        measured_bps: predicted.bps(),
        link: input.rate.map(|r| LinkRate {
            bps: r.bps(),
            source: LinkSource::Given,
        }),
        streams: vec![plumb_diagnose::evidence::StreamTcp {
            mss: Some(framing.payload().get()),
            max_snd_wnd: input.window.map(Bytes::get),
            srtt_us: Some(rtt_us),
            min_rtt_us: Some(rtt_us),
            ..Default::default()
        }],
        loss_probability: input.loss.map(LossRate::probability),
        tcp_timestamps: Some(framing.timestamps),
        ..Evidence::default()
    };
    let mut d = diagnose(&ev);
    // There was no measurement: the model's rate is not evidence.
    d.evidence
        .retain(|e| e.kind != plumb_record::diagnosis::EvidenceKind::Goodput);
    d.unknown = vec![
        "everything a test measures: this is the model alone (run plumb why HOST to measure)"
            .into(),
        format!(
            "the segment size: {} assumed (--tcp-timestamps on|off picks the header)",
            framing.describe()
        ),
    ];
    d
}

/// The model's answer as text: the path, the summary, what filling the
/// link takes, then the diagnosis's sections.
fn print_model(
    path: &str,
    framing: Framing,
    d: &plumb_record::diagnosis::Diagnosis,
) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "Model: {path} ({})\n", framing.describe())?;
    writeln!(out, "{}\n", d.summary)?;
    let windowed = matches!(
        d.limit,
        Some(
            plumb_record::diagnosis::Limit::ReceiveWindow
                | plumb_record::diagnosis::Limit::SendBuffer
        )
    );
    match (d.figures.window_needed_bytes, d.figures.streams_needed) {
        (Some(w), Some(n)) if windowed => writeln!(
            out,
            "Filling the link takes a window of the bandwidth-delay product, {}, or {} parallel streams.\n",
            Bytes(w).human(),
            thousands(n)
        )?,
        // A larger window does not lift a loss limit; more streams do.
        (_, Some(n)) => writeln!(
            out,
            "Filling the link takes {} parallel streams.\n",
            thousands(n)
        )?,
        _ => {}
    }
    // The summary is printed above, and there was no measurement to
    // stand the answer against: the sections alone.
    let rest = plumb_report::diagnosis::sections(d);
    write!(out, "{}", rest.trim_start_matches('\n'))
}
