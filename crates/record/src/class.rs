//! The types of a flow's class: the classes, the thresholds and their
//! order as `-J` states them, the shape a source measures, and the
//! classification. `plumb_diagnose::class` holds the rules and their
//! numbers, and classifies.

use serde::{Deserialize, Serialize};

/// The class of a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowClass {
    /// Over within a few round trips, or too little to reach a steady rate.
    Short,
    /// Many exchanges on one connection.
    RequestResponse,
    /// Idle most of its life.
    Interactive,
    /// Long enough for a steady rate.
    Bulk,
}

impl FlowClass {
    /// The `-J` name.
    pub fn name(self) -> &'static str {
        match self {
            FlowClass::Short => "short",
            FlowClass::RequestResponse => "request_response",
            FlowClass::Interactive => "interactive",
            FlowClass::Bulk => "bulk",
        }
    }

    /// The name in a sentence.
    pub fn words(self) -> &'static str {
        match self {
            FlowClass::Short => "short",
            FlowClass::RequestResponse => "request/response",
            FlowClass::Interactive => "interactive",
            FlowClass::Bulk => "bulk",
        }
    }
}

/// Every number the class rules use (serialized into `-J` as they are).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Thresholds {
    /// A bulk run carries at least this many bytes.
    pub bulk_min_bytes: u64,
    /// A bulk run lasts at least this long, seconds: a fix can save a flow
    /// no more time than it took.
    pub bulk_min_seconds: f64,
    /// A bulk run takes more data round trips than this (when the RTT is
    /// known): within them slow start is still under way.
    pub short_max_round_trips: u64,
    /// A run that ends resending with no new data for at least this long,
    /// seconds, had more to send: it is bulk whatever its bytes.
    pub bulk_stall_seconds: f64,
    /// A flow idle at least this share of its life is interactive.
    pub interactive_idle_share: f64,
    /// A flow with at least this many exchanges is request/response.
    pub request_response_min_exchanges: u64,
    /// A pause of the same side with nothing in flight counts as idle when
    /// it lasts at least this many round trips …
    pub idle_pause_round_trips: f64,
    /// … and at least this long, seconds.
    pub idle_pause_min_seconds: f64,
}

/// The rules as `-J` states them once per document: the order and the
/// numbers.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ClassRules {
    /// The order in which the classes are tried: the first that fits is
    /// the flow's.
    pub precedence: [FlowClass; 4],
    /// The numbers the rules use.
    pub thresholds: Thresholds,
}

/// One run of data: new bytes one side sent with no turn and no idle pause
/// in between.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Run {
    /// The side sent it is the flow's client (the side that opened it).
    pub from_client: bool,
    /// New payload bytes.
    pub bytes: u64,
    /// First to last data segment (a resend included), seconds.
    pub seconds: f64,
    /// At its end, the time it resent with no new data, seconds: a stall.
    pub stalled_s: f64,
    /// Bytes sent within half a round trip of the run's first segment
    /// (its first flight: the next leaves a round trip after it), when the
    /// RTT was known as it began.
    pub first_round_bytes: Option<u64>,
    /// Exchanges (turns into the server) completed before it began; a
    /// response does not count the request it answers, whose round trip is
    /// the run's first.
    pub exchanges_before: u64,
    /// From the flow's first packet to the run's first segment, seconds.
    pub starts_at: f64,
}

/// The server's time per exchange: from the last data segment of a request
/// to the first of its response, less the round trip between the capture
/// point and the server (taken from the handshake) when it is known.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ServerTime {
    /// Exchanges timed.
    pub exchanges: u64,
    /// Mean, seconds.
    pub mean_s: f64,
    /// Smallest, seconds.
    pub min_s: f64,
    /// Largest, seconds.
    pub max_s: f64,
    /// The round trip from the capture point to the server and back taken
    /// off each gap, seconds; `None` when it is not known (no handshake):
    /// the times then include it.
    pub path_s: Option<f64>,
}

/// What a source measured of a flow's shape; `None` where it cannot tell.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FlowShape {
    /// New payload bytes the side that sent more sent.
    pub bytes: u64,
    /// New payload bytes the other side sent.
    pub reverse_bytes: u64,
    /// First to last packet seen, seconds.
    pub life_s: f64,
    /// The smallest round trip, seconds.
    pub rtt_s: Option<f64>,
    /// Payload bytes per full segment.
    pub mss: Option<u64>,
    /// The handshake was seen, and its round trip, seconds.
    pub handshake_s: Option<f64>,
    /// Runs of data, both sides.
    pub runs: Option<u64>,
    /// The run that carried the most bytes.
    pub longest_run: Option<Run>,
    /// Exchanges: a run of the server's that answered one of the client's.
    pub exchanges: Option<u64>,
    /// Time idle: the client's pauses before a new request, and either
    /// side's pauses with nothing in flight (see [`Thresholds`]), seconds.
    pub idle_s: Option<f64>,
    /// The server's time per exchange.
    pub server_time: Option<ServerTime>,
    /// Retransmission timeouts (a stall each).
    pub timeouts: Option<u64>,
}

impl FlowShape {
    /// Idle share of the flow's life.
    pub fn idle_share(&self) -> Option<f64> {
        let idle = self.idle_s?;
        (self.life_s > 0.0).then(|| (idle / self.life_s).clamp(0.0, 1.0))
    }

    /// Data round trips a run took: its span in round trips, counting the
    /// one it began in.
    pub fn round_trips(&self, r: &Run) -> Option<u64> {
        let rtt = self.rtt_s.filter(|t| *t > 0.0)?;
        Some((r.seconds / rtt).floor() as u64 + 1)
    }
}

/// Which rule gave a flow its class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// Bulk: a run long in bytes, time and round trips.
    LongRun,
    /// Bulk: a run that stalled resending, with more to send.
    StalledRun,
    /// Interactive: idle most of its life.
    MostlyIdle,
    /// Request/response: many exchanges.
    ManyExchanges,
    /// Short: over within a few round trips.
    FewRoundTrips,
    /// Short: too few bytes for a steady rate.
    FewBytes,
    /// Short: over too soon for any setting to matter.
    Brief,
}

/// A flow's class, the rule that made it so, in words, and the figures
/// the rule read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Classification {
    /// The class.
    pub class: FlowClass,
    /// The rule that fits.
    pub rule: Rule,
    /// Which rule fits, with its figures, in a sentence.
    pub why: String,
    /// Data round trips of the longest run, when the RTT is known.
    pub round_trips: Option<u64>,
    /// Idle share of the flow's life, when known.
    pub idle_share: Option<f64>,
    /// Exchanges, when known.
    pub exchanges: Option<u64>,
}
