//! Telling which tool's server listens on a port (`plumb -c HOST --tool
//! auto`) from what it does with one probe: 37 bytes that are an iperf3
//! cookie, a line a nuttcp server reads as its client's greeting, and for
//! an iperf 2 server a test header with no flag set.
//!
//! - An iperf3 server reads any 37 bytes as the cookie and answers with the
//!   state byte PARAM_EXCHANGE (9), or ACCESS_DENIED (-1) when busy.
//! - A nuttcp server reads a line (the probe's newline is its 36th byte)
//!   and answers a greeting it cannot read with its refusal, `KO` and a
//!   line naming nuttcp; it would answer a true greeting with its own.
//! - An iperf 2 server reads the first four bytes as its header's flags;
//!   all zero means plain data to count, so it says nothing. A stock iperf
//!   2.1.8 server is not sent nuttcp's true greeting, whose first bytes it
//!   reads as flags and has been seen to crash on.
//!
//! So a port that takes the probe and answers nothing (within the caller's
//! wait) is taken for iperf 2 — only where iperf 2 is looked for (its
//! port, or the one port `-p` names), never on iperf3's or nuttcp's own
//! port, where silence means no server of that tool.

use crate::cookie::COOKIE_LEN;
use crate::state::State;
use crate::tool::Tool;

/// What a server said to the probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// iperf3's PARAM_EXCHANGE or ACCESS_DENIED state byte.
    Iperf3,
    /// nuttcp's refusal or greeting.
    Nuttcp,
    /// Nothing either tool says (silence, a close, or other bytes).
    Neither,
}

/// Bytes of a server's reply read at most.
pub const REPLY_CAP: usize = 64;

/// The probe from 37 random cookie bytes: the first four zero (iperf 2's
/// flags), a newline (the end of nuttcp's line) and a NUL at the end.
pub fn probe(random_cookie: [u8; COOKIE_LEN]) -> [u8; COOKIE_LEN] {
    let mut p = random_cookie;
    for (i, b) in p.iter_mut().enumerate() {
        match i {
            0..=3 | 36 => *b = 0,
            35 => *b = b'\n',
            _ if *b == b'\n' || *b == 0 => *b = b'a',
            _ => {}
        }
    }
    p
}

/// Reads a server's first reply bytes (at most [`REPLY_CAP`]); `Neither`
/// until enough has arrived to tell.
pub fn classify(reply: &[u8]) -> Answer {
    match reply {
        // iperf3 sends its state byte alone and waits for the parameters.
        [b] if is_iperf3_state(*b) => Answer::Iperf3,
        r if r.starts_with(b"KO\nnuttcp") || r.starts_with(b"HELO nuttcp v") => Answer::Nuttcp,
        _ => Answer::Neither,
    }
}

fn is_iperf3_state(b: u8) -> bool {
    matches!(
        State::from_byte(b),
        Ok(State::ParamExchange | State::AccessDenied)
    )
}

/// The tool found on a port from its answer, when the port is where
/// `looking_for` was looked for: a tool that identified itself is that
/// tool, whatever the port; silence is iperf 2 only where iperf 2 is
/// looked for.
pub fn decide(looking_for: Tool, answer: Answer) -> Option<Tool> {
    match answer {
        Answer::Iperf3 => Some(Tool::Iperf3),
        Answer::Nuttcp => Some(Tool::Nuttcp),
        Answer::Neither => (looking_for == Tool::Iperf2).then_some(Tool::Iperf2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe() {
        let p = probe([b'\n'; COOKIE_LEN]);
        assert_eq!(&p[..4], &[0; 4]);
        assert_eq!(p[35], b'\n');
        assert_eq!(p[36], 0);
        assert_eq!(p.iter().filter(|b| **b == b'\n').count(), 1, "one line");
    }

    #[test]
    fn replies() {
        assert_eq!(classify(&[9]), Answer::Iperf3);
        assert_eq!(classify(&[0xFF]), Answer::Iperf3);
        assert_eq!(classify(&[9, 1]), Answer::Neither);
        assert_eq!(classify(&[]), Answer::Neither);
        assert_eq!(classify(b"HELO nuttcp v6.1.2\n"), Answer::Nuttcp);
        assert_eq!(
            classify(b"KO\nnuttcp-t: v6.1.2: error scanning parameters\n"),
            Answer::Nuttcp
        );
        assert_eq!(classify(b"KO\nnu"), Answer::Neither);
        assert_eq!(classify(b"HELO iperf"), Answer::Neither);
        assert_eq!(classify(&[1]), Answer::Neither);
    }

    #[test]
    fn decisions() {
        assert_eq!(decide(Tool::Iperf2, Answer::Iperf3), Some(Tool::Iperf3));
        assert_eq!(decide(Tool::Iperf3, Answer::Nuttcp), Some(Tool::Nuttcp));
        assert_eq!(decide(Tool::Iperf2, Answer::Neither), Some(Tool::Iperf2));
        assert_eq!(decide(Tool::Iperf3, Answer::Neither), None);
        assert_eq!(decide(Tool::Nuttcp, Answer::Neither), None);
    }
}
