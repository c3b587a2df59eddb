//! The operating-system guesser a capture's verdicts use: a captured SYN
//! (`plumb_capture::Syn`) read as `plumb_handshake::os`'s plain
//! [`SynFacts`], guessed with its table, and handed back in
//! `plumb_capture`'s terms. Glue only, here because the CLI is what
//! depends on both: the capture reader needs no table of stacks, and the
//! handshake crate no capture reader.

use plumb_capture::{OsReading, Syn};
use plumb_handshake::os::{fix_os, guess, Confidence, SynFacts};

/// The option kinds of a capture's option list (tcpdump's names, comma
/// separated, up to an end-of-list), as RFC 793/7323/2018 number them.
fn kinds(order: &str) -> Vec<u8> {
    order
        .split(',')
        .filter(|k| !k.is_empty())
        .filter_map(|k| match k {
            "eol" => Some(0),
            "nop" => Some(1),
            "mss" => Some(2),
            "wscale" => Some(3),
            "sackOK" => Some(4),
            "sack" => Some(5),
            "TS" => Some(8),
            n => n.parse().ok(),
        })
        .collect()
}

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
        option_kinds: kinds(&o.order),
        // The capture does not keep the DF bit: not held against a stack.
        df: None,
        syn_ack,
    }
}

/// The guess for one captured SYN: the guesser `plumb_capture::explain`
/// takes.
pub fn read_syn(s: &Syn, syn_ack: bool) -> Option<OsReading> {
    let g = guess(&facts(s, syn_ack));
    let confidence = match g.confidence {
        Confidence::Low => "low",
        Confidence::Medium => "medium",
        Confidence::High => "high",
    };
    Some(OsReading {
        os: g.label.to_string(),
        confidence: confidence.to_string(),
        fix_os: fix_os(&g).map(str::to_string),
        reasons: g.reasons,
        note: g.note.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_names_become_kinds_up_to_the_end_of_list() {
        assert_eq!(kinds("mss,sackOK,TS,nop,wscale"), [2, 4, 8, 1, 3]);
        assert_eq!(kinds("mss,nop,nop,sackOK,eol"), [2, 1, 1, 4, 0]);
        assert_eq!(kinds("mss,30"), [2, 30]);
        assert!(kinds("").is_empty());
    }
}
