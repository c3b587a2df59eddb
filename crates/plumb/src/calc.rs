//! `plumb calc`: the model's arithmetic for one path, explained.
//!
//! Flags become a [`PathInput`]; [`Prediction::of`] does every computation;
//! `plumb_report::calc` words the answer (text, or `--json`'s typed object).
//! Flags not given stay unknown: the answer leaves out, or sets to null, what
//! depends on them.

use std::io::Write;
use std::process::ExitCode;

use plumb_model::{PathInput, Prediction};
use plumb_report::calc::json::CalcOutput;
use plumb_report::calc::query::{QueuePrediction, RttSource};
use plumb_report::calc::text::{queue_text, text};

use crate::usage::usage_error;
use plumb_cli::calc::{framing, CalcArgs};

/// Runs `plumb calc`.
pub fn run(a: &CalcArgs) -> anyhow::Result<ExitCode> {
    if a.rate.is_none()
        && a.rtt.is_none()
        && a.distance.is_none()
        && a.window.is_none()
        && a.loss.is_none()
        && a.queue.is_none()
    {
        return Ok(usage_error(
            "calc needs something to compute: give at least --rate, --rtt or --distance, --window or --loss \
             (e.g. plumb calc --rate 1Gbit --rtt 15ms --window 17520)",
        ));
    }
    let framing = match framing(a) {
        Ok(f) => f,
        Err(msg) => return Ok(usage_error(msg)),
    };
    if let Some(f) = a.frame {
        if !(64..=65_535).contains(&f.get()) {
            return Ok(usage_error(format!(
                "invalid frame size '{}': an Ethernet frame is 64 to 65535 bytes (header to FCS)",
                f.get()
            )));
        }
    }
    let (rtt, source) = RttSource::of(a.rtt, a.distance);
    let input = PathInput {
        rate: a.rate,
        rtt,
        window: a.window,
        loss: a.loss,
        framing,
        size: a.size,
    };
    let p = Prediction::of(&input);
    let queue = match (&a.queue, a.rate) {
        (Some(q), Some(rate)) => match QueuePrediction::of(q, rate, rtt) {
            Ok(q) => Some(q),
            Err(msg) => return Ok(usage_error(msg)),
        },
        _ => None,
    };
    let mut out = std::io::stdout().lock();
    if a.json {
        let v = CalcOutput::of(&input, &p, source.as_ref(), a.frame, queue.as_ref());
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        write!(out, "{}", text(&input, &p, source.as_ref(), a.frame))?;
        if let Some(q) = &queue {
            write!(out, "{}", queue_text(q))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
