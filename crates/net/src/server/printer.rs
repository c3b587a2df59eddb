//! What the server prints with, handed in by its caller: the operator's
//! sink, the capture a client's `--get-server-output` reads, and the words
//! of the outcome line. `net` formats nothing itself.

use plumb_record::{Capture, Sink};

/// The server's printers, made by the caller (the binary) from its flags.
pub trait Printer: Sync {
    /// A sink for what the operator sees: the banner, or one test's report.
    fn sink(&self) -> Box<dyn Sink>;
    /// A sink that keeps one test's report for a client that asks for it
    /// with `--get-server-output`: the text report, or with `-J` the JSON
    /// document, as an iperf3 server returns whichever it prints.
    fn capture(&self) -> Box<dyn Capture>;
    /// What a test received, in the words of the outcome line on stderr
    /// (`1.43 GBytes received, 12.3 Gbits/sec`).
    fn received(&self, bytes: u64, bits_per_second: f64) -> String;
}
