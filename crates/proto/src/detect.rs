//! Telling which tool's server listens on a port (`plumb -c HOST --tool
//! auto`) from what it answers to two probes, each on a connection of its
//! own: iperf3's 37-byte cookie, which an iperf3 server answers with the
//! state byte PARAM_EXCHANGE (9), or ACCESS_DENIED (-1) when it is busy;
//! and nuttcp's greeting line, which a nuttcp server answers with its own.
//! An iperf 2 server answers neither: it reads a test header and says
//! nothing until a test ends. So a port that takes connections and answers
//! neither probe is taken for iperf 2 — only where iperf 2 is looked for
//! (its port, or the one port `-p` names), never on iperf3's or nuttcp's
//! own port, where silence means no server of that tool.

use crate::state::State;
use crate::tool::Tool;

/// What a server said to a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// iperf3's PARAM_EXCHANGE or ACCESS_DENIED state byte.
    Iperf3,
    /// nuttcp's greeting line.
    Nuttcp,
    /// Nothing either tool says (silence, a close, or other bytes).
    Neither,
}

/// Bytes a server's reply needs at most to be told.
pub const REPLY_CAP: usize = 64;

/// Reads a server's first reply bytes (at most [`REPLY_CAP`]).
pub fn classify(reply: &[u8]) -> Answer {
    match reply {
        // iperf3 sends its state byte alone and waits for the parameters.
        [b] if is_iperf3_state(*b) => Answer::Iperf3,
        r if r.starts_with(b"HELO nuttcp v") => Answer::Nuttcp,
        _ => Answer::Neither,
    }
}

fn is_iperf3_state(b: u8) -> bool {
    matches!(
        State::from_byte(b),
        Ok(State::ParamExchange | State::AccessDenied)
    )
}

/// The tool found on a port from the two probes' answers, when the port is
/// where `looking_for` was looked for: a tool that identified itself is
/// that tool, whatever the port; silence to both is iperf 2 only where
/// iperf 2 is looked for.
pub fn decide(looking_for: Tool, cookie: Answer, greeting: Answer) -> Option<Tool> {
    match (cookie, greeting) {
        (Answer::Iperf3, _) | (_, Answer::Iperf3) => Some(Tool::Iperf3),
        (Answer::Nuttcp, _) | (_, Answer::Nuttcp) => Some(Tool::Nuttcp),
        (Answer::Neither, Answer::Neither) => (looking_for == Tool::Iperf2).then_some(Tool::Iperf2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies() {
        assert_eq!(classify(&[9]), Answer::Iperf3);
        assert_eq!(classify(&[0xFF]), Answer::Iperf3);
        assert_eq!(classify(&[9, 1]), Answer::Neither);
        assert_eq!(classify(&[]), Answer::Neither);
        assert_eq!(classify(b"HELO nuttcp v6.1.2\n"), Answer::Nuttcp);
        assert_eq!(classify(b"HELO iperf"), Answer::Neither);
        assert_eq!(classify(&[1]), Answer::Neither);
    }

    #[test]
    fn decisions() {
        use Answer::{Iperf3, Neither, Nuttcp};
        assert_eq!(decide(Tool::Iperf2, Iperf3, Neither), Some(Tool::Iperf3));
        assert_eq!(decide(Tool::Iperf3, Neither, Nuttcp), Some(Tool::Nuttcp));
        assert_eq!(decide(Tool::Iperf2, Neither, Neither), Some(Tool::Iperf2));
        assert_eq!(decide(Tool::Iperf3, Neither, Neither), None);
        assert_eq!(decide(Tool::Nuttcp, Neither, Neither), None);
    }
}
