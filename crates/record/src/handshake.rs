//! The `-J` document of `plumb handshake` ([`HandshakeDocument`]): one
//! [`Handshake`] per target that answered — how it was read, the RTTs,
//! what the peer offers ([`Offer`]), a guess at its operating system
//! ([`OsGuess`]) and what that means for a transfer, in words.
//! `plumb-handshake` fills these types; the command prints them.

use serde::{Deserialize, Serialize};

/// The whole document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandshakeDocument {
    /// One entry per target that answered, in the order given.
    pub handshakes: Vec<Handshake>,
}

/// How the handshake was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// A raw SYN and the peer's SYN-ACK: what the peer offers.
    Syn,
    /// `connect()` and `TCP_INFO`: what both ends negotiated.
    Connect,
}

/// One target's handshake.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Handshake {
    /// The target as given (`nas.example:445`).
    pub target: String,
    /// The address reached.
    pub address: String,
    /// How it was read.
    pub method: Method,
    /// `offered` (the peer's own options) or `negotiated` (both ends').
    pub shows: String,
    /// Handshakes completed.
    pub handshakes: usize,
    /// The handshake RTT: the fastest, in ms.
    pub rtt_min_ms: f64,
    /// The handshake RTT: the median, in ms.
    pub rtt_median_ms: f64,
    /// The SYN-ACK's IP TTL as it arrived (SYN path only).
    pub ttl: Option<u8>,
    /// What the peer offers (or what was negotiated).
    pub offer: Offer,
    /// A guess at the peer's operating system from its SYN-ACK (SYN path
    /// only: the connect path shows neither the TTL nor the option order).
    pub os_guess: Option<OsGuess>,
    /// What it means for a transfer, most important first.
    pub meaning: Vec<String>,
    /// Caveats: why the connect path ran, which options it cannot see.
    pub notes: Vec<String>,
}

/// What a handshake shows of the peer. `None` is unknown: the connect path
/// cannot see an option this host did not offer itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offer {
    /// It offers window scaling (RFC 7323 §2).
    pub window_scaling: Option<bool>,
    /// Its window scale shift: its receive window is the field × 2^shift.
    pub wscale: Option<u8>,
    /// It offers selective acknowledgements (RFC 2018).
    pub sack: Option<bool>,
    /// It offers timestamps (RFC 7323 §3).
    pub timestamps: Option<bool>,
    /// It accepts ECN (RFC 3168: ECE without CWR on its SYN-ACK).
    pub ecn: Option<bool>,
    /// Its MSS in bytes: the one it offers (SYN path) or the one in use
    /// (connect path: bounded by this host's path MTU too).
    pub mss: Option<u32>,
    /// The window of its SYN-ACK in bytes (never scaled, RFC 7323 §2.2).
    pub initial_window: Option<u32>,
}

/// The operating-system families a guess tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Windows Vista, 7, 8, 10, 11 and their servers.
    WindowsModern,
    /// Windows XP, Server 2003, 2000.
    WindowsLegacy,
    /// Linux (and Android).
    Linux,
    /// macOS, iOS, FreeBSD.
    MacosBsd,
    /// Initial TTL 255: routers, NAS and other embedded stacks.
    Appliance,
    /// Nothing in the table fits well enough.
    Unknown,
}

impl Family {
    /// The family's name in words.
    pub fn label(self) -> &'static str {
        match self {
            Family::WindowsModern => "Windows (Vista or later)",
            Family::WindowsLegacy => "Windows XP / Server 2003 or older",
            Family::Linux => "Linux",
            Family::MacosBsd => "macOS / iOS / FreeBSD",
            Family::Appliance => "network appliance / router (initial TTL 255)",
            Family::Unknown => "unknown",
        }
    }
}

/// How far an operating-system guess goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// One family fits a little better than the others, or the evidence is thin.
    Low,
    /// One family fits clearly better, with some signs missing.
    Medium,
    /// The TTL, the option layout and the defaults all fit one family.
    High,
}

impl Confidence {
    /// Its name as the document writes it (`low`, `medium`, `high`).
    pub fn name(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }
}

/// A guess at a host's operating system, with its reasons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OsGuess {
    /// The family guessed.
    pub family: Family,
    /// The family in words.
    pub label: String,
    /// How far the guess goes (`low` for `unknown`).
    pub confidence: Confidence,
    /// The table row that fitted best (`Linux`, `FreeBSD`, …), if any.
    pub closest: Option<String>,
    /// The initial TTL inferred: the observed TTL rounded up to 32, 64, 128 or 255.
    pub initial_ttl: u8,
    /// Routers passed: initial TTL less observed.
    pub hops: u8,
    /// Why, one sentence each: what fitted and what did not.
    pub reasons: Vec<String>,
    /// That it is a guess, and what misleads it.
    pub note: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_reads_back_equal() {
        let text = r#"{"handshakes":[{"target":"nas:445","address":"198.18.0.2:445","method":"syn","shows":"offered","handshakes":3,"rtt_min_ms":0.5,"rtt_median_ms":0.75,"ttl":63,"offer":{"window_scaling":true,"wscale":7,"sack":true,"timestamps":null,"ecn":false,"mss":1460,"initial_window":65160},"os_guess":{"family":"linux","label":"Linux","confidence":"high","closest":"Linux","initial_ttl":64,"hops":1,"reasons":["r"],"note":"a guess"},"meaning":["m"],"notes":[]}]}"#;
        let doc: HandshakeDocument = serde_json::from_str(text).expect("reads");
        assert_eq!(doc.handshakes[0].method, Method::Syn);
        assert_eq!(
            doc.handshakes[0]
                .os_guess
                .as_ref()
                .map(|g| g.confidence.name()),
            Some("high")
        );
        assert_eq!(serde_json::to_string(&doc).expect("writes"), text);
    }
}
