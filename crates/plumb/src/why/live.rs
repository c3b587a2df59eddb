//! `plumb why` on what is running: samples the host's TCP connections that
//! match a filter (`--port`, `--peer`, `--pid`, `--conn`) for `--for`
//! seconds and explains each busy one with the same rules, text and `-J`
//! `diagnosis` object as a test. The sampling and the explanation come from
//! `plumb-live`; this module checks the flags, words and prints.

use std::io::Write;
use std::process::ExitCode;

use plumb_live::sample::sample;
use plumb_live::sampled::{explain, CLOSED_EARLY};
use plumb_live::sys::Owner;
use plumb_live::{Role, Track};
use plumb_model::Rate;

use crate::common::report_page;
use crate::usage::usage_error;
use plumb_cli::live_flags::LiveFilterArgs;
use plumb_live::owners::Owners;

use plumb_record::{Document, LiveSampling};

fn describe(tr: &Track, owner: Option<&Owner>) -> String {
    let c = &tr.last;
    let who = owner.map_or("process unknown".to_string(), |o| {
        format!("{} pid {}", o.command, o.pid)
    });
    let d = tr.delta();
    let end = match d.role {
        Role::Sender => "this host sends",
        Role::Receiver => "this host receives",
        Role::Idle => "idle",
    };
    format!(
        "{} -> {} ({who}; {end}; {}{})",
        c.local,
        c.remote,
        plumb_diagnose::rules::human_rate(tr.rate_bps()),
        if tr.closed {
            "; closed while sampled"
        } else {
            ""
        }
    )
}

/// Runs `plumb why` on live connections.
pub fn run(
    f: &LiveFilterArgs,
    port: Option<u16>,
    secs: Option<f64>,
    link: Option<Rate>,
    json_out: bool,
    report: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    let filter = match f.filter(port) {
        Ok(x) => x,
        Err(m) => return Ok(usage_error(m)),
    };
    let secs = secs.unwrap_or(3.0);
    if !(0.2..=3600.0).contains(&secs) {
        return Ok(usage_error(format!(
            "--for {secs}: give 0.2 to 3600 seconds"
        )));
    }
    let mut owners = Owners::new();
    let sampled = match sample(&filter, secs, &mut owners) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("plumb: cannot read the host's TCP connections (sock_diag): {e}");
            return Ok(ExitCode::from(1));
        }
    };
    if sampled.tracker.tracks.is_empty() {
        eprintln!(
            "plumb: no TCP connection matches {} (sampled {secs} s)",
            filter.describe()
        );
        return Ok(ExitCode::from(1));
    }
    let mut out = std::io::stdout().lock();
    let mut conns = Vec::new();
    let mut text = String::new();
    for e in explain(&sampled, link, owners.denied()) {
        let head = describe(e.track, e.owner.as_ref());
        let mut row = e.row;
        let Some((mut d, ev)) = e.diagnosis else {
            text += &format!("== {head} ==\n{CLOSED_EARLY}\n\n");
            conns.push(row);
            continue;
        };
        text += &format!(
            "== {head} ==\n{}\n",
            plumb_report::diagnosis::render(&d, &ev)
        );
        // Nothing to explain: an idle connection, or one whose class is the
        // answer, has no limit, which is not the same as an unexplained one.
        d.nothing_to_explain |= row.this_host == Role::Idle.name();
        row.diagnosis = Some(d);
        conns.push(row);
    }
    let first = conns.iter().find_map(|c| c.diagnosis.clone());
    let desc = filter.describe();
    let doc = Document {
        live: Some(LiveSampling {
            filter: desc.clone(),
            seconds: secs,
        }),
        connections: Some(conns),
        diagnosis: Some(first),
        ..Document::default()
    };
    if let Some(path) = report {
        // The page is drawn from the document -J prints.
        let input = plumb_report::html::Input {
            name: format!("running connections, {desc}"),
            doc: doc.clone(),
        };
        report_page::write_for(path, vec![input])?;
    }
    if json_out {
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        write!(out, "{text}")?;
    }
    Ok(ExitCode::SUCCESS)
}
