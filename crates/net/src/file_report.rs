//! iperf3's `-F` lines under a client's summary: what each stream sent or
//! received of the file, against the file's size.

use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

use crate::session::Session;

/// iperf3's line under the summary, one per TCP stream: what the stream
/// sent or received against the file's size, as
/// `Sent 1.00 MByte / 1.00 MByte (100%) of NAME`.
pub fn report(path: &Path, session: &Session, sink: &mut dyn plumb_record::Sink) {
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    for s in &session.streams {
        let moved = s.counters.bytes.load(Relaxed);
        // A zero-sized file counts as all of it, as iperf3's does.
        let pct = (moved * 100).checked_div(size).unwrap_or(100);
        sink.note(&format!(
            "        Sent {} / {} ({pct}%) of {}",
            sized(moved),
            sized(size),
            path.display()
        ));
    }
}

/// A byte count in iperf3's adaptive binary units.
fn sized(b: u64) -> String {
    const UNITS: [&str; 5] = ["Byte", "KByte", "MByte", "GByte", "TByte"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if v < 9.995 {
        format!("{v:.2} {}", UNITS[u])
    } else if v < 99.95 {
        format!("{v:.1} {}", UNITS[u])
    } else {
        format!("{v:.0} {}", UNITS[u])
    }
}
