//! The operating-system guesser a capture's verdicts use: a captured SYN
//! (`plumb_capture::Syn`) read as `plumb_handshake::os`'s plain
//! [`SynFacts`], guessed with its table, and handed back in
//! `plumb_capture`'s terms. Glue only, here because the CLI is what
//! depends on both: the capture reader needs no table of stacks, and the
//! handshake crate no capture reader.

use plumb_capture::Syn;
use plumb_handshake::os::{fix_os, guess, SynFacts};
use plumb_record::capture::OsReading;

/// What a captured SYN (`syn_ack`: a SYN-ACK) shows of its sender.
pub fn facts(s: &Syn, syn_ack: bool) -> SynFacts {
    let o = &s.options;
    SynFacts {
        ttl: s.ttl,
        window: s.window,
        mss: o.mss,
        wscale: o.window_scale,
        sack_permitted: o.sack_permitted,
        timestamps: o.timestamps,
        option_kinds: o.kinds.clone(),
        // The capture does not keep the DF bit: not held against a stack.
        df: None,
        syn_ack,
    }
}

/// The guess for one captured SYN: the guesser `plumb_capture::explain`
/// takes.
pub fn read_syn(s: &Syn, syn_ack: bool) -> Option<OsReading> {
    let g = guess(&facts(s, syn_ack));
    let fix = fix_os(&g).map(str::to_string);
    Some(OsReading {
        os: g.label,
        confidence: g.confidence.name().to_string(),
        fix_os: fix,
        reasons: g.reasons,
        note: g.note,
    })
}
