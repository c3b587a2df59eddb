//! The class rules' order and numbers ([`PRECEDENCE`], [`THRESHOLDS`],
//! [`RULES`]); the types are the record's (`plumb_record::class`).

use plumb_record::class::{ClassRules, FlowClass, Thresholds};

/// The order in which the classes are tried: the first that fits is the
/// flow's.
pub const PRECEDENCE: [FlowClass; 4] = [
    FlowClass::Bulk,
    FlowClass::Interactive,
    FlowClass::RequestResponse,
    FlowClass::Short,
];

/// The thresholds plumb uses.
pub const THRESHOLDS: Thresholds = Thresholds {
    bulk_min_bytes: 64 * 1024,
    bulk_min_seconds: 0.2,
    short_max_round_trips: 6,
    bulk_stall_seconds: 1.0,
    interactive_idle_share: 0.5,
    request_response_min_exchanges: 4,
    idle_pause_round_trips: 2.0,
    idle_pause_min_seconds: 0.01,
};

/// [`PRECEDENCE`] and [`THRESHOLDS`] together.
pub const RULES: ClassRules = ClassRules {
    precedence: PRECEDENCE,
    thresholds: THRESHOLDS,
};
