//! The `-J` document of `plumb why` on a packet capture
//! ([`CaptureDocument`]): what was read (the container, the decoders'
//! skips, the ceiling on tracked connections and what it dropped, capture
//! duplicates, a live capture's kernel counts), the class rules, and each
//! connection that carried data explained ([`Explanation`]): its class, the
//! numbers the evidence rests on ([`FlowSummary`]), each end's operating
//! system guessed ([`HostGuess`]) and the verdict. `plumb-capture` fills
//! these types; the printers read them. Written only: the class rules and
//! shapes it holds are written, not read back.

use serde::Serialize;

use crate::class::{ClassRules, FlowClass, FlowShape};
use crate::diagnosis::Diagnosis;

/// The document: what was read, and each connection explained.
#[derive(Debug, Clone, Serialize)]
pub struct CaptureDocument {
    /// The file (or source) read.
    pub source: String,
    /// The container: format, records, skipped records, and where the
    /// capture was cut short (`read.truncated`: `after_packet`, `at_byte`;
    /// null when whole).
    pub read: ReadStats,
    /// Packets the decoders skipped, by reason.
    pub decode: DecodeStats,
    /// The ceiling on tracked connections.
    pub limits: Limits,
    /// Connections the ceiling dropped.
    pub dropped: Dropped,
    /// TCP segments recorded more than once, counted once: `packets`, and
    /// of them `other_interface` (recorded on another pcapng interface).
    pub duplicates: Duplicates,
    /// From an interface: the packet socket's counts (absent for a file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelCounts>,
    /// TCP connections tracked.
    pub connections: usize,
    /// The order in which flow classes are tried and their thresholds.
    pub classes: ClassRules,
    /// Those that matched the filters and carried data, explained, busiest
    /// first.
    pub explained: Vec<Explanation>,
}

/// What the kernel passed to a live capture, and what it dropped for want
/// of room in the ring: every figure of the analysis misses the dropped
/// packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct KernelCounts {
    /// Packets the socket's filter passed (those dropped included).
    pub received: u64,
    /// Packets read and analysed.
    pub read: u64,
    /// Packets dropped before they were read.
    pub dropped: u64,
}

/// What the container held besides packets, and the records skipped.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct ReadStats {
    /// `pcap` or `pcapng`.
    pub format: String,
    /// The file was gzip-compressed.
    pub gzip: bool,
    /// Packet records handed on.
    pub records: u64,
    /// Records longer than their snaplen or than their wire length: skipped.
    pub oversize_records: u64,
    /// pcapng packets naming an interface the section did not describe.
    pub unknown_interface: u64,
    /// pcapng sections (1 for pcap).
    pub sections: u64,
    /// pcapng interfaces described, all sections together.
    pub interfaces: u64,
    /// Where the capture was cut short, if it was: it ends inside a record
    /// or block, or its gzip stream ends before its end. Everything before
    /// the cut was read.
    pub truncated: Option<Truncation>,
}

/// Where a capture cut short ends.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Truncation {
    /// Packet records read whole before the cut, skipped ones included:
    /// the number of the last packet read (tshark's frame count on the
    /// file).
    pub after_packet: u64,
    /// The byte of the (decompressed) capture where the record cut short
    /// starts: every byte before it was read.
    pub at_byte: u64,
}

/// Packets skipped, by reason.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct DecodeStats {
    /// TCP segments decoded (capture duplicates included: see
    /// `duplicates`).
    pub tcp: u64,
    /// IP packets of other protocols (UDP, ICMP of other kinds, ...).
    pub other_ip: u64,
    /// Frames that are not IP (ARP, ...).
    pub not_ip: u64,
    /// Frames of a link type this reader does not decode.
    pub unknown_link: u64,
    /// Headers cut short (by the snaplen or the sender).
    pub truncated: u64,
    /// Malformed headers: SYN options that overrun, a TCP header longer
    /// than its IP packet, a data offset under five words.
    pub malformed: u64,
    /// Non-first IP fragments.
    pub fragments: u64,
    /// ICMP too-big messages quoting no tracked connection.
    pub icmp_unmatched: u64,
}

/// Bounds on what the analysis keeps.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Limits {
    /// Connections tracked at once (at least 10).
    pub max_connections: usize,
}

/// The default ceiling of tracked connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 100_000;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// What was dropped to stay under the ceiling.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Dropped {
    /// Connections dropped (a dropped connection seen again counts anew).
    pub connections: u64,
    /// Segments they had counted.
    pub packets: u64,
}

/// Copies of packets already seen, counted once.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Duplicates {
    /// Packets that were copies of one seen just before.
    pub packets: u64,
    /// Of them, those recorded on another pcapng interface than the first
    /// copy.
    pub other_interface: u64,
}

/// One connection explained.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// Its class, named before any cause: only a bulk flow gets a rate
    /// limit.
    pub class: FlowClass,
    /// The class rule that fits, in words.
    pub class_why: String,
    /// What the class rests on.
    pub shape: FlowShape,
    /// The numbers the evidence rests on.
    pub flow: FlowSummary,
    /// What only the capture shows, in sentences.
    pub notes: Vec<String>,
    /// Each end's operating system guessed from its SYN, sender first
    /// (empty without a guesser or a captured SYN): always a guess.
    pub os_guesses: Vec<HostGuess>,
    /// The system whose fixes a confident guess put first, if any.
    pub fixes_first_for: Option<String>,
    /// The verdict, as for a test.
    pub diagnosis: Diagnosis,
}

/// The numbers a capture's evidence rests on, for `-J` and the text.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct FlowSummary {
    /// The side that sent the SYN (or was seen first).
    pub client: String,
    /// The other side.
    pub server: String,
    /// The data's sender.
    pub sender: String,
    /// The data's receiver.
    pub receiver: String,
    /// Segments, both directions, each counted once.
    pub packets: u64,
    /// Capture duplicates, both directions: segments recorded again (two
    /// interfaces, a mirror port), not counted in `packets` nor analysed.
    pub duplicates: u64,
    /// Payload bytes the sender sent for the first time.
    pub data_bytes: u64,
    /// Payload bytes the sender's segments carried at the capture point,
    /// retransmissions included (what tshark's `tcp.len` adds up to).
    pub payload_bytes: u64,
    /// Payload bytes the receiver sent back.
    pub reverse_bytes: u64,
    /// First to last segment of new data, seconds; to the last resend when
    /// the flow stalled resending (`explain`).
    pub duration_s: f64,
    /// `data_bytes` over `duration_s`, bit/s.
    pub measured_bps: f64,
    /// SYN, SYN-ACK and ACK were all captured.
    pub handshake: bool,
    /// SYN → ACK at the capture point, ms.
    pub handshake_rtt_ms: Option<f64>,
    /// Where the capture was taken.
    pub position: Position,
    /// Payload bytes per segment on the wire.
    pub mss: Option<u64>,
    /// The RTT used as the minimum, ms.
    pub min_rtt_ms: Option<f64>,
    /// The RTT under load, ms.
    pub srtt_ms: Option<f64>,
    /// Data→ACK samples behind it.
    pub rtt_samples: u64,
    /// The receiver's advertised window averaged over the time with data in
    /// flight, bytes (scale known): the window weighed by the rules.
    pub window_bytes: Option<u64>,
    /// The receiver's largest advertised window, bytes (scale known).
    pub max_window_bytes: Option<u64>,
    /// The window's bounds when the scale is unknown, bytes.
    pub window_bounds: Option<(u64, u64)>,
    /// The largest flight seen at the capture point, bytes.
    pub max_flight_bytes: u64,
    /// The sender's data segments that reached exactly the edge of the
    /// receiver's advertised window (Wireshark's
    /// `tcp.analysis.window_full`).
    pub window_full: u64,
    /// Retransmitted data segments.
    pub retransmits: u64,
    /// Their payload bytes.
    pub retransmitted_bytes: u64,
    /// Data segments that filled a gap within an RTT of its opening without
    /// duplicate ACKs: seen late, or resent when the first copy was lost
    /// before the capture point (which one capture point cannot tell).
    pub out_of_order: u64,
    /// Zero-window episodes the receiver advertised.
    pub zero_window_episodes: u64,
    /// Their total time, seconds.
    pub zero_window_s: f64,
    /// Share of the data time with data in flight (near the sender only).
    pub busy_share: Option<f64>,
    /// Share of the data time the flight stood at the window (near the
    /// sender only).
    pub window_limited_share: Option<f64>,
    /// Share of the time with data in flight that the receiver's window
    /// stood under 3/4 of the largest it had advertised (scale known).
    pub window_shrank_share: Option<f64>,
    /// The share of eighth-RTT slots, first data segment to last, in which
    /// data passed the capture point (see `timing`).
    pub continuity: Option<f64>,
    /// Segments larger than the receiver's MSS (TSO/GSO super-segments).
    pub super_segments: u64,
    /// ICMP too-big messages quoting the connection.
    pub icmp_too_big: u64,
    /// The smallest MTU they reported.
    pub icmp_mtu: Option<u32>,
}

/// Where the capture point sits on the path of the data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Position {
    /// Beside the data's sender.
    NearSender,
    /// Beside the data's receiver.
    NearReceiver,
    /// Between them.
    Between,
    /// The handshake was not captured whole.
    #[default]
    Unknown,
}

/// One end's guess, as `-J` carries it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HostGuess {
    /// The end, address:port.
    pub host: String,
    /// Its part in the transfer.
    pub role: Role,
    /// Read from its SYN-ACK (`true`) or its SYN.
    pub from_syn_ack: bool,
    /// What the guesser read.
    #[serde(flatten)]
    pub guess: OsReading,
}

/// What a guesser read of one end from its SYN.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct OsReading {
    /// The operating system (family) in words, `unknown` when nothing fits.
    pub os: String,
    /// How far the guess goes: `low`, `medium` or `high`.
    pub confidence: String,
    /// The `os` of the diagnosis' fix to put first for this end (`linux`,
    /// `windows`, `windows-legacy`, `macos`, `freebsd`): only for a guess
    /// confident enough to act on.
    pub fix_os: Option<String>,
    /// Why, one sentence each: what fitted and what did not.
    pub reasons: Vec<String>,
    /// That it is a guess, and what misleads it.
    pub note: String,
}

impl Position {
    /// In words: "near the sender", …
    pub fn words(self) -> &'static str {
        match self {
            Position::NearSender => "near the sender",
            Position::NearReceiver => "near the receiver",
            Position::Between => "between sender and receiver",
            Position::Unknown => "at an unknown point (no whole handshake)",
        }
    }
}

/// Which end of the data transfer a host is.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// It sent the data.
    Sender,
    /// It received the data (and advertised the window).
    Receiver,
}

impl Role {
    /// `sender` or `receiver`.
    pub fn word(self) -> &'static str {
        match self {
            Role::Sender => "sender",
            Role::Receiver => "receiver",
        }
    }
}
