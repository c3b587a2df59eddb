//! `plumb demo`'s flags ([`DemoArgs`]).

use clap::Args;

/// Flags of `plumb demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Seconds each transfer runs
    #[arg(short = 't', long = "time", default_value_t = 5, value_parser = crate::args::whole_seconds)]
    pub time: u64,
    /// Also write the before/after as an HTML report (charts, verdicts, the fix) to this file
    #[arg(long, value_name = "FILE")]
    pub report: Option<std::path::PathBuf>,
}
