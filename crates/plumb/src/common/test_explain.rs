//! A test with its diagnosis: `plumb why HOST` and `plumb -c HOST --why`
//! run the client as `plumb -c` does, keep its document, and explain it as
//! `plumb why --from` explains a saved one ([`explain`]).

use std::io::Write;
use std::process::ExitCode;

use plumb_diagnose::evidence::LinkRate;
use plumb_diagnose::{diagnose, Evidence};
use plumb_model::Rate;
use plumb_net::errors::TestError;
use plumb_record::{Document, Tee};
use plumb_report::json::JsonSink;

use super::report_page;
use crate::common::output::{pin, text_printer, ErrorsToStderr};
use crate::usage::usage_error;
use plumb_cli::measure::{client_config, test_spec, MeasureArgs};
use plumb_live::link;

/// An explanation is one document, written once the test is over: there is
/// no event stream to give.
pub const NO_JSON_STREAM: &str = "--json-stream cannot be used with why; use -J";

/// Runs a client test with `m`, then explains it (`plumb why HOST`, `plumb -c … --why`).
pub fn test_and_explain(m: &MeasureArgs, link: Option<Rate>) -> anyhow::Result<ExitCode> {
    if m.json_stream {
        return Ok(usage_error(NO_JSON_STREAM));
    }
    let detected;
    let m = if m.tool == Some(plumb_proto::tool::ToolChoice::Auto) {
        let host = m.client.clone().unwrap_or_default();
        match super::auto_tool::detect(m, &host) {
            Some(found) => {
                detected = found;
                &detected
            }
            None => return Ok(ExitCode::from(1)),
        }
    } else {
        m
    };
    if let Err(code) = pin(m) {
        return Ok(code);
    }
    let spec = match test_spec(m) {
        Ok(s) => s,
        Err(msg) => return Ok(usage_error(msg)),
    };
    let host = m.client.clone().unwrap_or_default();
    let cfg = match client_config(m, spec) {
        Ok(c) => c,
        Err(msg) => return Ok(usage_error(msg)),
    };
    let mut capture = JsonSink::new(Vec::new());
    let outcome = if m.json {
        plumb_net::client::run(&cfg, &mut capture)
    } else {
        // Show the test as plumb -c would, and keep its JSON for the evidence.
        // -V is why's own (every flow in full), not iperf3's verbose lines.
        let mut text = text_printer(Box::new(std::io::stdout()), m, true);
        let mut errors = ErrorsToStderr {
            inner: &mut text,
            printed: false,
        };
        let mut tee = Tee {
            first: &mut errors,
            second: &mut capture,
        };
        let r = plumb_net::client::run(&cfg, &mut tee);
        if r.is_ok() {
            println!();
        } else if !errors.printed {
            // Printed once: by the sink, or here.
            if let Err(e) = &r {
                eprintln!("plumb: error - {e}");
            }
        }
        r
    };
    let doc = capture.record();
    // A test that ran but ended without the server's results (interrupted,
    // or they never came) still has this end's evidence: it is explained,
    // and the exit status says the test failed.
    let alone =
        matches!(outcome, Err(TestError::Interrupted | TestError::Timeout)) && doc.end.is_some();
    if outcome.is_err() && !alone {
        if m.json {
            println!("{}", serde_json::to_string_pretty(&doc)?);
        }
        return Ok(ExitCode::from(1));
    }
    let link = link::for_host(&host, link);
    if let Some(out) = &m.report {
        let input = report_page::input(
            format!("test against {host}"),
            doc.clone(),
            link.as_ref().map(|l| l.bps).and_then(Rate::from_bps),
        );
        report_page::write_for(out, vec![input])?;
    }
    let code = explain(&doc, link, m.json)?;
    Ok(if alone { ExitCode::from(1) } else { code })
}

/// Explains a `-J` document: prints the diagnosis (or the document with a
/// `diagnosis` key).
pub fn explain(doc: &Document, link: Option<LinkRate>, json: bool) -> anyhow::Result<ExitCode> {
    let ev = match Evidence::from_document_or_best(doc, link) {
        Ok(e) => e,
        Err(msg) => {
            eprintln!("plumb: {msg}");
            return Ok(ExitCode::from(1));
        }
    };
    let d = diagnose(&ev);
    let mut out = std::io::stdout().lock();
    if json {
        let full = doc.clone().with_diagnosis(d);
        writeln!(out, "{}", serde_json::to_string_pretty(&full)?)?;
    } else {
        write!(out, "{}", plumb_report::diagnosis::render(&d, &ev))?;
    }
    Ok(ExitCode::SUCCESS)
}
