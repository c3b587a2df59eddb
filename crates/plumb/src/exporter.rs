//! `plumb exporter`: its flags, turned into a checked
//! `plumb_exporter::Config` and served. A probe's query is a second spelling
//! of `plumb -c`'s flags, so each probe's client run is built through the
//! same checks as the command line (`plumb_cli::exporter::probe_client`).

use std::process::ExitCode;

use plumb_exporter::Config;

use crate::usage::usage_error;
use plumb_cli::exporter::{probe_client, settings, ExporterArgs};

/// Runs `plumb exporter` until SIGINT or SIGTERM.
pub fn run(a: &ExporterArgs) -> anyhow::Result<ExitCode> {
    let settings = settings(a);
    let config = match Config::new(&settings, Box::new(probe_client)) {
        Ok(c) => c,
        Err(msg) => return Ok(usage_error(msg)),
    };
    match plumb_exporter::serve(config) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("plumb: {e}");
            Ok(ExitCode::from(1))
        }
    }
}
