//! `plumb top`'s flags ([`TopArgs`]) and what they become: the
//! connection filter and the scan schedule ([`checked`]).

use clap::Args;
use plumb_live::scan::{Schedule, DEFAULT_BUDGET};
use plumb_live::Filter;
use plumb_model::Rate;

use crate::live_flags::LiveFilterArgs;

/// Flags of `plumb top`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  plumb top                      full screen; q or Ctrl-C quits\n  plumb top -n 2 --json -p 873   two intervals of NDJSON for port 873"
)]
pub struct TopArgs {
    /// Only connections with this port at either end
    #[arg(short = 'p', long, value_parser = crate::args::whole::<u16>)]
    pub port: Option<u16>,
    /// Connection filters
    #[command(flatten)]
    pub live: LiveFilterArgs,
    /// Stop after N intervals
    #[arg(short = 'n', long = "count", value_parser = crate::args::whole::<u64>)]
    pub count: Option<u64>,
    /// Seconds between refreshes
    #[arg(short = 'i', long, default_value_t = 1.0, value_parser = crate::args::seconds)]
    pub interval: f64,
    /// One JSON object per connection read in the interval (newline-delimited):
    /// every connection on a full scan, the busy ones between
    #[arg(long, short = 'J')]
    pub json: bool,
    /// CPU for full scans of the socket table, % of one core: busy
    /// connections are read every interval, the full scan that finds the
    /// others runs as often as its cost allows (100: every interval)
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_BUDGET * 100.0, value_parser = crate::args::number)]
    pub scan_budget: f64,
    /// A full scan every SECS seconds whatever it costs (tests)
    #[arg(long, value_name = "SECS", hide = true, value_parser = crate::args::seconds)]
    pub scan_every: Option<f64>,
    /// The bottleneck link's rate (1g, 100M); else the route's interface speed
    #[arg(long, value_parser = crate::args::rate)]
    pub link: Option<Rate>,
}

/// The connection filter and the scan schedule the flags ask for, or why
/// they cannot be had.
pub fn checked(a: &TopArgs) -> Result<(Filter, Schedule), String> {
    let filter = a.live.filter(a.port)?;
    if !(0.1..=3600.0).contains(&a.interval) {
        return Err(format!(
            "--interval {}: give 0.1 to 3600 seconds",
            a.interval
        ));
    }
    if a.count == Some(0) {
        return Err("-n 0: give at least one interval".into());
    }
    if !(a.scan_budget > 0.0 && a.scan_budget <= 100.0) {
        return Err(format!(
            "--scan-budget {}: give a share of one core above 0 and at most 100 (%)",
            a.scan_budget
        ));
    }
    let sched = match a.scan_every {
        Some(s) if s.is_finite() && s > 0.0 => {
            Schedule::every(a.interval, (s / a.interval - 1e-9).ceil().max(1.0) as u64)
        }
        Some(s) => return Err(format!("--scan-every {s}: give seconds above 0")),
        None => Schedule::new(a.interval, a.scan_budget / 100.0),
    };
    Ok((filter, sched))
}
