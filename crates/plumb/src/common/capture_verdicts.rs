//! What `plumb why -r FILE` and the capture page share: each end's
//! operating system guessed from its SYN, and the one line that says where
//! a capture was cut short.

use std::path::Path;

use plumb_capture::{Analysis, OsGuess};
use plumb_diagnose::rules::human_count;
use plumb_record::capture::Truncation;

/// The one line on stderr for a capture cut short (nothing for a whole
/// one): where it was cut; what follows covers the packets before it.
pub fn say_where_cut(path: &Path, a: &Analysis) {
    if let Some(t) = a.read.truncated {
        eprintln!("plumb: {}: {}", path.display(), cut_text(&t));
    }
}

/// Where a capture was cut short, for the one line on stderr.
fn cut_text(t: &Truncation) -> String {
    format!(
        "cut short after packet {} at byte {}; the verdicts cover the packets before the cut",
        human_count(t.after_packet),
        human_count(t.at_byte)
    )
}

/// Each end's operating system, guessed from its SYN with
/// `plumb_handshake`'s table.
pub fn guesser() -> OsGuess<'static> {
    &super::os_guess::read_syn
}

#[cfg(test)]
mod tests {
    use super::{cut_text, Truncation};

    #[test]
    fn a_cut_names_its_packet_and_byte() {
        let t = Truncation {
            after_packet: 1234,
            at_byte: 567_890,
        };
        assert!(
            cut_text(&t).starts_with("cut short after packet 1,234 at byte 567,890;"),
            "{}",
            cut_text(&t)
        );
    }
}
