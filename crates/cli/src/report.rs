//! `plumb report`'s flags ([`ReportArgs`]).

use std::path::PathBuf;

use clap::Args;
use plumb_model::Rate;

/// Flags of `plumb report`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  plumb report result.json                       one run\n  plumb report before.json after.json -o fix.html  compared on one page\n  plumb report top.ndjson -o top.html              plumb top --json over time\n  plumb report transfer.pcap -o flows.html         each TCP flow's time-sequence graph\n\nReads plumb's and iperf3's -J documents and --json-stream logs, plumb top --json logs, and packet captures (pcap, pcapng, gzip), told apart by their first bytes. Captures and documents are reported on separate pages."
)]
pub struct ReportArgs {
    /// -J documents or --json-stream logs (plumb's or iperf3's), plumb top --json logs, or packet captures (pcap, pcapng, gzip); several are compared
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The HTML file to write
    #[arg(short = 'o', long = "output", default_value = "report.html")]
    pub output: PathBuf,
    /// The bottleneck link's rate, for a diagnosis the document does not hold (1g, 100M)
    #[arg(long = "link", value_parser = crate::args::rate)]
    pub link: Option<Rate>,
}
