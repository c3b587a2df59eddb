//! `plumb demo`: the backup scenario, shown rather than told.
//!
//! Builds the long fat network of the running example (1 Gb/s, 15 ms) in a
//! lab, moves data across it first with the old 17,520-byte window and then
//! with an autotuned one, and puts the model's prediction beside each
//! measurement. Where no lab can be built (not root, no TUN), it measures on
//! loopback instead and says why.

use std::process::{ExitCode, Stdio};
use std::time::Duration;

use plumb_diagnose::{diagnose, Evidence};
use plumb_lab::{Lab, LabConfig};
use plumb_model::units::sig;
use plumb_model::{lab_prediction, Bytes, LabClient, LabLink, LabPrediction, Rate, Rtt};
use plumb_record::Document;

use crate::common::report_page;
use plumb_cli::demo::DemoArgs;
use plumb_lab::document::{lab_line, lab_record, measured_bps, model_record, LinkAsked};
use plumb_lab::programs::{run_client, start_server, Reaper};
use plumb_live::link::given_rate;

fn rate(bps: f64) -> String {
    Rate::from_bps(bps).map_or_else(|| "0 bit/s".into(), Rate::human)
}

fn measured(doc: &Option<Document>) -> Option<f64> {
    measured_bps(doc.as_ref()?)
}

/// Runs the demonstration.
pub fn run(a: &DemoArgs) -> anyhow::Result<ExitCode> {
    let link = Rate::from_bps(1e9).ok_or_else(|| anyhow::anyhow!("1 Gbit/s is a rate"))?;
    let rtt = Rtt::from_ms(15.0).ok_or_else(|| anyhow::anyhow!("15 ms is a duration"))?;
    println!(
        "The backup scenario: two datacentres 1,000 km apart, a 1 Gbit/s link, a 15 ms round trip."
    );
    println!("An old stack advertises a 17,520-byte window and never scales it.\n");
    // The prediction `plumb lab` prints for the same link and window.
    let model = |rwin: Option<Bytes>| {
        lab_prediction(
            LabLink {
                rate: link,
                rtt,
                loss: None,
            },
            LabClient {
                rwin,
                ..LabClient::default()
            },
        )
    };
    let small = model(Some(Bytes(17_520)));
    let big = model(None);
    let t = a.time.clamp(1, 60).to_string();
    // The lab's ends are Linux, whatever the scenario's old hosts sent.
    println!(
        "The model frames segments as both ends here send them: {}.\n",
        small.framing.describe()
    );

    let lab = match start_lab(a, &t, &small)? {
        Ok(lab) => lab,
        Err(code) => return Ok(code),
    };
    let probe = lab.probe().ok();
    let asked = LinkAsked::plain(link, rtt);
    println!("{}\n", lab_line(&asked, probe.as_ref()));
    let exe = std::env::current_exe()?.to_string_lossy().to_string();
    let port = 5201;
    let server = start_server(&lab, &exe, port)?;

    println!("1) With the 17,520-byte receive window (plumb -c … --rwin 17520 -t {t}):");
    let (_, doc1) = run_client(
        &lab,
        &exe,
        port,
        &["--rwin".into(), "17520".into(), "-t".into(), t.clone()],
        false,
    )?;
    let doc1 = doc1.and_then(|t| Document::parse(&t).ok());
    let m1 = measured(&doc1);
    let p1 = small.predicted_bps;
    println!(
        "\n   model: {} (17,520 B / 15 ms)   measured: {}",
        rate(p1),
        m1.map_or("no result".into(), rate)
    );
    if let Some(doc) = &doc1 {
        let link_ev = Some(given_rate(link));
        if let Ok(ev) = Evidence::from_document(doc, link_ev) {
            println!("   plumb why: {}", diagnose(&ev).summary);
        }
    }

    println!("\n2) The same link with window scaling and autotuning (plumb -c … -t {t}):");
    let (_, doc2) = run_client(&lab, &exe, port, &["-t".into(), t.clone()], false)?;
    let doc2 = doc2.and_then(|t| Document::parse(&t).ok());
    let m2 = measured(&doc2);
    let p2 = big.predicted_bps;
    println!(
        "\n   model: {} (the link's TCP goodput)   measured: {}",
        rate(p2),
        m2.map_or("no result".into(), rate)
    );
    drop(server);
    if let Some(out) = &a.report {
        let runs = [
            ("before: 17,520-byte window", &doc1, &small, m1),
            ("after: autotuned window", &doc2, &big, m2),
        ];
        write_report(out, &lab, &asked, probe.as_ref(), &runs, link)?;
    }

    summary((p1, m1), (p2, m2), &small);
    Ok(ExitCode::SUCCESS)
}

/// The demo's lab (1 Gbit/s, 15 ms), or the exit code of the loopback
/// measurement made instead where no lab can be built.
fn start_lab(
    a: &DemoArgs,
    t: &str,
    small: &LabPrediction,
) -> anyhow::Result<Result<Lab, ExitCode>> {
    if let Err(e) = Lab::check_privileges().and_then(|()| Lab::install_signal_cleanup()) {
        if a.report.is_some() {
            eprintln!("plumb: no report: the demo's before/after needs the lab ({e})");
        }
        println!("No lab here ({e}); measuring on loopback instead, where there is no 15 ms to wait for.\n");
        return loopback(t, small).map(Err);
    }
    let lab = match Lab::start(LabConfig::new(
        plumb_lab::emu::Rate::from_mbps(1000.0).ok_or_else(|| anyhow::anyhow!("rate"))?,
        Duration::from_millis(15),
    )) {
        Ok(l) => l,
        Err(e) => {
            println!("Cannot build the lab ({e}); measuring on loopback instead.\n");
            return loopback(t, small).map(Err);
        }
    };
    Ok(Ok(lab))
}

/// One run of the demo: its name, document, the model's prediction and what
/// was measured.
type Run<'a> = (
    &'a str,
    &'a Option<Document>,
    &'a LabPrediction,
    Option<f64>,
);

/// The before/after page: each run's document with the lab and the model.
fn write_report(
    out: &std::path::Path,
    lab: &Lab,
    asked: &LinkAsked,
    probe: Option<&plumb_lab::measure::Probe>,
    runs: &[Run],
    link: Rate,
) -> anyhow::Result<()> {
    let stats = lab.stats();
    let lab = lab_record(asked, probe, &stats);
    let mut inputs = Vec::new();
    for &(name, doc, p, m) in runs {
        let Some(doc) = doc else { continue };
        let mut doc = doc.clone();
        doc.lab = Some(lab.clone());
        doc.model = Some(model_record(p, m));
        inputs.push(report_page::input(name.into(), doc, Some(link)));
    }
    report_page::write_for(out, inputs)
}

/// The closing table: each run's model and measurement, and what the
/// window cost.
fn summary((p1, m1): (f64, Option<f64>), (p2, m2): (f64, Option<f64>), small: &LabPrediction) {
    println!("\n               window        model          measured");
    println!(
        "  before       17,520 B      {:<14} {}",
        rate(p1),
        m1.map_or("-".into(), rate)
    );
    println!(
        "  after        autotuned     {:<14} {}",
        rate(p2),
        m2.map_or("-".into(), rate)
    );
    if let (Some(a1), Some(a2)) = (m1, m2) {
        println!(
            "\nThe window was the limit: the same link carried {}x more once it could scale.",
            sig(a2 / a1.max(1.0), 3)
        );
    }
    println!(
        "To fill it one stream needs {} in flight (the bandwidth-delay product); `plumb why` prints the exact settings per OS.",
        small.path.window_needed.map_or(String::new(), Bytes::human)
    );
}

/// The fallback: a real measurement on loopback, and the model for the backup link.
fn loopback(t: &str, small: &LabPrediction) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe()?.to_string_lossy().to_string();
    let port = 5201 + (std::process::id() % 1000) as u16;
    let server = Reaper(Some(
        std::process::Command::new(&exe)
            .args(["-s", "-1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?,
    ));
    std::thread::sleep(Duration::from_millis(300));
    let status = std::process::Command::new(&exe)
        .args(["-c", "127.0.0.1", "-p", &port.to_string(), "-t", t])
        .status()?;
    drop(server);
    println!(
        "\nOn the backup link the model predicts {} with the 17,520-byte window, and {} with a window of {}.",
        Rate::from_bps(small.predicted_bps).map_or("?".into(), Rate::human),
        small.path.link_goodput.map_or("?".into(), Rate::human),
        small.path.window_needed.map_or(String::new(), Bytes::human)
    );
    println!("Run as root (with /dev/net/tun) to see it on an emulated 1 Gbit/s, 15 ms link.");
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
