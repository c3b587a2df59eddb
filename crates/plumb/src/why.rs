//! `plumb why`: runs a short test (or reads a saved `-J` document, or uses the
//! model alone) and says what limits the transfer, with evidence and fixes.

use std::io::Write;
use std::net::ToSocketAddrs;
use std::process::ExitCode;

use clap::Args;
use plumb_diagnose::evidence::LinkRate;
use plumb_diagnose::{diagnose, Diagnosis, Evidence, LinkSource};
use plumb_model::units::{sig, thousands};
use plumb_model::{Bytes, Limit as ModelLimit, LossRate, PathInput, Prediction, Rate, Rtt};
use plumb_report::json::JsonSink;
use plumb_report::text::TextSink;
use plumb_report::Tee;
use serde_json::{json, Value};

use crate::cli::usage_error;
use crate::measure::{test_spec, MeasureArgs};

/// Flags of `plumb why`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  plumb why 198.18.0.2 --link 1g          test for 5 s and explain\n  plumb why --from result.json --link 1g  explain a saved plumb/iperf3 -J (or --json-stream) result\n  plumb why --rate 1g --rtt 15ms -w 17520  explain from the model alone"
)]
pub struct WhyArgs {
    /// Server to test against (plumb or iperf3); leave out for --from or the model alone
    pub host: Option<String>,
    /// Read a saved -J document instead of testing
    #[arg(long, conflicts_with = "host")]
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
    /// Client flags, as for plumb -c (the test defaults to 5 s)
    #[command(flatten)]
    pub measure: MeasureArgs,
}

/// An explanation is one document, written once the test is over: there is
/// no event stream to give.
const NO_JSON_STREAM: &str = "--json-stream cannot be used with why; use -J";

/// Runs `plumb why`.
pub fn run(a: &WhyArgs) -> anyhow::Result<ExitCode> {
    if a.measure.json_stream {
        return Ok(usage_error(NO_JSON_STREAM));
    }
    if let Some(path) = &a.from {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        // A -J document, or a saved --json-stream log of one test.
        let doc: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => match plumb_report::json::document_from_events(&text) {
                Some(v) => v,
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
        return explain(&doc, link, a.measure.json);
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
        None => model_only(a),
    }
}

/// The link rate: given, else the interface the route to `host` uses.
fn link_for(host: &str, given: Option<Rate>) -> Option<LinkRate> {
    if let Some(r) = given {
        return Some(LinkRate {
            bps: r.bps(),
            source: LinkSource::Given,
        });
    }
    let ip = (host, 0).to_socket_addrs().ok()?.next()?.ip();
    let ifname = plumb_net::host::route_interface(ip)?;
    let mbps = plumb_net::host::link_speed_mbps(&ifname)?;
    Some(LinkRate {
        bps: mbps as f64 * 1e6,
        source: LinkSource::Interface(ifname),
    })
}

/// Runs a client test with `m`, then explains it (`plumb why HOST`, `plumb -c … --why`).
pub fn test_and_explain(m: &MeasureArgs, link: Option<Rate>) -> anyhow::Result<ExitCode> {
    if m.json_stream {
        return Ok(usage_error(NO_JSON_STREAM));
    }
    let spec = match test_spec(m) {
        Ok(s) => s,
        Err(msg) => return Ok(usage_error(msg)),
    };
    let host = m.client.clone().unwrap_or_default();
    let cfg = match crate::measure::client_config(m, spec) {
        Ok(c) => c,
        Err(msg) => return Ok(usage_error(msg)),
    };
    let mut capture = JsonSink::new(Vec::new());
    let outcome = if m.json {
        plumb_net::client::run(&cfg, &mut capture)
    } else {
        // Show the test as plumb -c would, and keep its JSON for the evidence.
        let mut text = TextSink::new(std::io::stdout(), true);
        let mut tee = Tee {
            first: &mut text,
            second: &mut capture,
        };
        let r = plumb_net::client::run(&cfg, &mut tee);
        println!();
        r
    };
    let doc = capture.document();
    if let Err(e) = outcome {
        if m.json {
            println!("{}", serde_json::to_string_pretty(&doc)?);
        } else {
            eprintln!("plumb: {e}");
        }
        return Ok(ExitCode::from(1));
    }
    let link = link_for(&host, link);
    explain(&doc, link, m.json)
}

/// Explains a `-J` document: prints the diagnosis (or the document with a
/// `diagnosis` key).
pub fn explain(doc: &Value, link: Option<LinkRate>, json: bool) -> anyhow::Result<ExitCode> {
    let mut link = link;
    let ev0 = match Evidence::from_json(doc, link.clone()) {
        Ok(e) => e,
        Err(msg) => {
            eprintln!("plumb: {msg}");
            return Ok(ExitCode::from(1));
        }
    };
    if link.is_none() && ev0.best_interval_bps > 0.0 {
        // Without a link rate, the best interval is the only (lower) bound on it.
        link = Some(LinkRate {
            bps: ev0.best_interval_bps,
            source: LinkSource::BestInterval,
        });
    }
    let ev = Evidence { link, ..ev0 };
    let d = diagnose(&ev);
    let mut out = std::io::stdout().lock();
    if json {
        let mut full = doc.clone();
        if let Some(o) = full.as_object_mut() {
            o.insert("diagnosis".into(), diagnosis_json(&d));
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&full)?)?;
    } else {
        write!(out, "{}", render(&d, &ev))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The `diagnosis` object of `-J` output.
pub fn diagnosis_json(d: &Diagnosis) -> Value {
    json!({
        "limit": d.limit.map(|l| l.name()),
        "secondary": d.secondary.iter().map(|l| l.name()).collect::<Vec<_>>(),
        "measured_bps": d.measured_bps,
        "predicted_bps": d.predicted_bps,
        "link_bps": d.link_bps,
        "link_source": d.link_source,
        "summary": d.summary,
        "confidence": d.findings.first().map(|f| f.confidence),
        "evidence": d.evidence,
        "findings": d.findings,
        "fixes": d.fixes,
        "unknown": d.unknown,
        "latency": d.latency,
    })
}

/// The diagnosis as a network engineer would write it.
pub fn render(d: &Diagnosis, ev: &Evidence) -> String {
    let mut s = String::new();
    s += &d.summary;
    s += "\n\n";
    let rate = |b: f64| Rate::from_bps(b).map_or_else(|| "0 bit/s".into(), Rate::human);
    s += &format!(
        "Measured {} over {} s",
        rate(d.measured_bps),
        sig(ev.duration_s, 3)
    );
    if let (Some(p), Some(f)) = (d.predicted_bps, d.findings.first()) {
        let conf = format!("{:?}", f.confidence).to_lowercase();
        s += &format!(
            "; the model predicts {} from this evidence (confidence: {conf}).",
            rate(p)
        );
    } else {
        s += ".";
    }
    s += "\n";
    if !d.evidence.is_empty() {
        s += "\nEvidence:\n";
        for e in &d.evidence {
            let v = if e.unit == "B" {
                format!("{} B", thousands(e.value as u64))
            } else if e.unit.is_empty() {
                String::new()
            } else {
                format!("{} {}", sig(e.value, 4), e.unit)
            };
            s += &format!("  {:<60} {v}\n", e.what);
        }
    }
    if d.findings.len() > 1 {
        s += "\nAlso seen:\n";
        for f in &d.findings[1..] {
            s += &format!("  - {} ({:?} confidence)\n", f.sentence, f.confidence);
        }
    }
    if !d.fixes.is_empty() {
        s += "\nWhat to change:\n";
        for f in &d.fixes {
            let expect = f
                .expected_bps
                .map_or(String::new(), |e| format!(" -> expect about {}", rate(e)));
            s += &format!("  {}: {}{expect}\n", os_name(&f.os), f.note);
            for c in &f.commands {
                s += &format!("      {c}\n");
            }
        }
    }
    if !d.unknown.is_empty() {
        s += "\nNot known from this test:\n";
        for u in &d.unknown {
            s += &format!("  - {u}\n");
        }
    }
    if let Some(l) = &d.latency {
        s += &plumb_diagnose::latency::render(l);
    }
    s
}

fn os_name(os: &str) -> &str {
    match os {
        "linux" => "Linux",
        "windows" => "Windows (Vista and later)",
        "windows-legacy" => "Windows 2000/2003/XP",
        "macos" => "macOS",
        "freebsd" => "FreeBSD",
        "application" => "Application",
        "path" => "Path",
        other => other,
    }
}

/// `plumb why --rate … --rtt … -w …`: the model's answer with no test.
fn model_only(a: &WhyArgs) -> anyhow::Result<ExitCode> {
    let (Some(rate), Some(rtt)) = (a.rate.or(a.measure.link), a.rtt) else {
        return Ok(usage_error(
            "give a HOST to test, --from FILE, or --rate and --rtt (with -w WINDOW and/or --loss) for the model alone",
        ));
    };
    let window = a.measure.window;
    if window.is_none() && a.loss.is_none() {
        return Ok(usage_error(
            "the model needs -w WINDOW and/or --loss besides --rate and --rtt",
        ));
    }
    let input = PathInput {
        rate: Some(rate),
        rtt: Some(rtt),
        window,
        loss: a.loss,
        ..PathInput::default()
    };
    let p = Prediction::of(&input);
    let Some((predicted, limit)) = p.predicted else {
        return Ok(usage_error("nothing to predict from these flags"));
    };
    let goodput = p.link_goodput.map_or(0.0, Rate::bps);
    let summary = match limit {
        ModelLimit::Window => format!(
            "Limited by the receive window: {} per {} round trip allows {}; the link could carry {}.",
            window.map_or(String::new(), Bytes::human),
            rtt.human(),
            predicted.human(),
            rate_h(goodput)
        ),
        ModelLimit::Loss => format!(
            "Limited by packet loss: {}% loss at {} RTT caps a Reno/CUBIC stream at {} (Mathis); the link could carry {}.",
            sig(a.loss.map_or(0.0, LossRate::probability) * 100.0, 3),
            rtt.human(),
            predicted.human(),
            rate_h(goodput)
        ),
        ModelLimit::Link => format!("Limited by the link: {} of TCP payload fits; nothing to fix.", predicted.human()),
    };
    // Reuse the rules' fixes by handing them model-made evidence.
    let ev = Evidence {
        tcp: true,
        duration_s: 0.0,
        measured_bps: predicted.bps(),
        link: Some(LinkRate {
            bps: rate.bps(),
            source: LinkSource::Given,
        }),
        streams: vec![plumb_diagnose::evidence::StreamTcp {
            max_snd_wnd: window.map(Bytes::get),
            srtt_us: Some((rtt.secs() * 1e6) as u64),
            min_rtt_us: Some((rtt.secs() * 1e6) as u64),
            ..Default::default()
        }],
        ..Evidence::default()
    };
    let mut d = diagnose(&ev);
    d.summary = summary;
    d.unknown = vec![
        "everything a test measures: this is the model alone (run plumb why HOST to measure)"
            .into(),
    ];
    if a.measure.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "diagnosis": diagnosis_json(&d) }))?
        );
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}\n", d.summary)?;
        if let Some(n) = p.streams_needed.filter(|n| *n > 1) {
            writeln!(
                out,
                "Filling the link takes a window of {} or {} parallel streams.\n",
                p.window_needed.map_or(String::new(), Bytes::human),
                thousands(n)
            )?;
        }
        let text = render(&d, &ev);
        // The rendered text starts with the rules' own summary and a measured line; skip them.
        let rest = text.split_once("\n\n").map_or("", |(_, r)| r);
        let rest = rest.split_once('\n').map_or("", |(_, r)| r);
        write!(out, "{}", rest.trim_start_matches('\n'))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn rate_h(bps: f64) -> String {
    Rate::from_bps(bps).map_or_else(|| "0 bit/s".into(), Rate::human)
}
