//! iperf3's `-d`: a trace of the control connection on stderr (the state
//! messages each way, the bytes written), one line each, so that stdout —
//! a `-J` document included — stays what it is without it.

use std::fmt::Arguments;

/// Writes one trace line when `on`.
pub fn line(on: bool, what: Arguments<'_>) {
    if on {
        eprintln!("plumb debug: {what}");
    }
}
