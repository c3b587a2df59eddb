//! A flow's class, named before any cause: most flows an admin captures are
//! not bulk transfers, and a rate limit means nothing for a flow that ended
//! in a few round trips, waited on its server or sat idle.
//!
//! Four classes, after T-RAT's (Zhang, Breslau, Paxson, Shenker, SIGCOMM
//! 2002) grouping of every flow of a trace:
//!
//! - [`FlowClass::Bulk`]: one run of data long enough for a steady rate;
//!   only these get a rate cause (window, buffer, loss, link, …).
//! - [`FlowClass::Interactive`]: idle most of its life (keystrokes, chat,
//!   keep-alives, a control connection): not a throughput problem.
//! - [`FlowClass::RequestResponse`]: many exchanges, each answered quickly
//!   enough that none is bulk: the round trips and the server's time per
//!   exchange set its pace.
//! - [`FlowClass::Short`]: everything else, over in a few round trips or
//!   too little data or time to reach a steady rate: round trips set its
//!   time, not bandwidth.
//!
//! [`classify`] tries them in that order ([`PRECEDENCE`]) over a
//! [`FlowShape`], which any source fills as far as it can (a capture
//! fully, a live socket in part); [`Thresholds`] holds every number the
//! rules use, and `-J` carries it. The answer for a flow that is not bulk
//! is in `verdict`, the order and numbers in `numbers`, the rules in
//! `rules`; the types are the record's ([`plumb_record::class`]); the
//! slow-start arithmetic is `plumb_model::slow_start`.

mod numbers;
mod rules;
mod verdict;

pub use numbers::{PRECEDENCE, RULES, THRESHOLDS};
pub use rules::classify;
pub use verdict::class_diagnosis;

#[cfg(test)]
mod tests;
