//! What a handshake reading cannot show, and why: the notes under it.

/// A limit of one reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caveat {
    /// No `CAP_NET_RAW`: connect() and `TCP_INFO` show what was negotiated.
    NoRawSocket,
    /// `--connect` was asked for.
    ConnectAsked,
    /// This host does not offer `option` (`sysctl` = 0), so the connection
    /// cannot show whether the peer would.
    NotOffered {
        /// The option, as the text names it.
        option: &'static str,
        /// The sysctl that turns it off.
        sysctl: &'static str,
    },
    /// This host does not ask for ECN (`net.ipv4.tcp_ecn` is not 1).
    EcnNotAsked {
        /// The sysctl's value, if it could be read.
        value: Option<String>,
    },
    /// The connect path makes no OS guess: it sees neither the SYN-ACK's
    /// TTL nor its option order.
    NoOsGuess,
    /// The MSS in use is half the peer's initial window: Linux's bound, not
    /// necessarily the peer's MSS.
    MssHalfWindow {
        /// The MSS in use, in bytes.
        mss: u32,
    },
}

const NEGOTIATED: &str =
    "this shows what was negotiated (both ends' settings combined), not what the peer offers";

impl Caveat {
    /// The note's sentence.
    pub fn text(&self) -> String {
        match self {
            Caveat::NoRawSocket => format!(
                "without CAP_NET_RAW (root) it connects and reads TCP_INFO: {NEGOTIATED}"
            ),
            Caveat::ConnectAsked => format!("--connect: it connects and reads TCP_INFO: {NEGOTIATED}"),
            Caveat::NotOffered { option, sysctl } => format!(
                "{option}: unknown — this host does not offer it ({sysctl} = 0), so the connection cannot show whether the peer would"
            ),
            Caveat::EcnNotAsked { value } => format!(
                "ECN: unknown — this host does not ask for it (net.ipv4.tcp_ecn = {}; 1 asks)",
                value.as_deref().unwrap_or("unreadable")
            ),
            Caveat::NoOsGuess => "operating system: no guess — TCP_INFO shows neither the SYN-ACK's TTL nor the order of its options, which the guess rests on; the raw SYN path (root) reads both".to_string(),
            Caveat::MssHalfWindow { mss } => format!(
                "MSS: {} B is half the peer's initial window, the most Linux sends in one segment to it; the peer's own MSS may be larger",
                plumb_model::units::thousands((*mss).into())
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_caveat_names_its_cause() {
        assert!(Caveat::NoRawSocket.text().contains("CAP_NET_RAW"));
        assert!(Caveat::NoOsGuess
            .text()
            .starts_with("operating system: no guess"));
        let n = Caveat::NotOffered {
            option: "SACK",
            sysctl: "net.ipv4.tcp_sack",
        };
        assert!(n.text().starts_with("SACK: unknown") && n.text().contains("tcp_sack = 0"));
        let e = Caveat::EcnNotAsked {
            value: Some("2".into()),
        };
        assert!(e.text().contains("tcp_ecn = 2"));
        assert!(Caveat::MssHalfWindow { mss: 32_753 }
            .text()
            .contains("32,753 B"));
    }
}
