//! The class rules: which class a [`FlowShape`] fits, tried in
//! [`PRECEDENCE`] order, with the rule that fits said in words.
//!
//! [`PRECEDENCE`]: super::numbers::PRECEDENCE

use plumb_record::class::{Classification, FlowClass, FlowShape, Rule, Run};

use super::numbers::THRESHOLDS;

/// The flow's class: the first of [`PRECEDENCE`] whose rule fits.
pub fn classify(s: &FlowShape) -> Classification {
    let t = THRESHOLDS;
    let run = s.longest_run.unwrap_or(Run {
        bytes: s.bytes,
        ..Run::default()
    });
    let round_trips = s.round_trips(&run);
    let idle_share = s.idle_share();
    let c = |class, rule, why: String| Classification {
        class,
        rule,
        why,
        round_trips,
        idle_share,
        exchanges: s.exchanges,
    };
    if let Some((rule, why)) = bulk_run(s, &run, round_trips) {
        return c(FlowClass::Bulk, rule, why);
    }
    if let Some(idle) = idle_share.filter(|i| *i >= t.interactive_idle_share) {
        return c(
            FlowClass::Interactive,
            Rule::MostlyIdle,
            format!(
                "idle {:.0}% of its {} s (at least {:.0}% makes a flow interactive)",
                idle * 100.0,
                crate::human::secs(s.life_s),
                t.interactive_idle_share * 100.0
            ),
        );
    }
    if let Some(n) = s
        .exchanges
        .filter(|n| *n >= t.request_response_min_exchanges)
    {
        return c(
            FlowClass::RequestResponse,
            Rule::ManyExchanges,
            format!(
                "{n} exchanges on one connection (at least {} make a flow request/response), none long enough for a steady rate",
                t.request_response_min_exchanges
            ),
        );
    }
    let (rule, why) = short_why(s, &run, round_trips);
    c(FlowClass::Short, rule, why)
}

/// The round trips slow start needs for `run`, from its initial window
/// ([`initial_window`]).
fn slow_start_need(s: &FlowShape, run: &Run) -> u64 {
    let mss = s.mss.unwrap_or(1460).max(1);
    let (iw, _) = initial_window(run, mss);
    u64::from(plumb_model::slow_start::slow_start_rounds(run.bytes, iw))
}

/// The initial window in bytes: the run's first flight when it looks like
/// one (2 to 100 segments), else Linux's 10 segments; `true` when seen.
pub(crate) fn initial_window(run: &Run, mss: u64) -> (u64, bool) {
    match run
        .first_round_bytes
        .filter(|b| (2 * mss..=100 * mss).contains(b))
    {
        Some(b) => (b, true),
        None => (plumb_model::slow_start::LINUX_INITIAL_WINDOW * mss, false),
    }
}

/// The bulk rules: a run long in bytes, time and round trips (more than
/// slow start alone would have taken), or one that stalled resending.
fn bulk_run(s: &FlowShape, run: &Run, round_trips: Option<u64>) -> Option<(Rule, String)> {
    let t = THRESHOLDS;
    let need = slow_start_need(s, run);
    let long = run.bytes >= t.bulk_min_bytes
        && run.seconds >= t.bulk_min_seconds
        && round_trips.is_none_or(|n| n > t.short_max_round_trips && n > need + 1);
    let bytes = crate::human::human_count(run.bytes);
    if long {
        let rt = round_trips.map_or(String::new(), |n| format!(", {n} round trips"));
        return Some((
            Rule::LongRun,
            format!(
                "a run of {bytes} B over {} s{rt}: long enough for a steady rate",
                crate::human::secs(run.seconds)
            ),
        ));
    }
    (run.stalled_s >= t.bulk_stall_seconds).then(|| {
        (
            Rule::StalledRun,
            format!(
                "a run of {bytes} B that then stalled {} s resending: it had more to send (a stall of at least {} s makes a run bulk)",
                crate::human::secs(run.stalled_s),
                t.bulk_stall_seconds
            ),
        )
    })
}

/// Why a flow that is none of the others is short: the first of the bulk
/// rule's bars it stays under.
fn short_why(s: &FlowShape, run: &Run, round_trips: Option<u64>) -> (Rule, String) {
    let t = THRESHOLDS;
    let bytes = crate::human::human_count(run.bytes);
    let need = slow_start_need(s, run);
    if let Some(n) = round_trips.filter(|n| *n <= t.short_max_round_trips) {
        (
            Rule::FewRoundTrips,
            format!(
                "its largest run, {bytes} B, took {n} data round trip(s) (at most {} is short: slow start was still under way)",
                t.short_max_round_trips
            ),
        )
    } else if let Some(n) = round_trips.filter(|n| *n <= need + 1) {
        (
            Rule::FewRoundTrips,
            format!(
                "its largest run, {bytes} B, took {n} data round trips, no more than slow start needs for it ({need}, and one more): it never left slow start"
            ),
        )
    } else if run.bytes < t.bulk_min_bytes {
        (
            Rule::FewBytes,
            format!(
                "its largest run carried {bytes} B (under {} B: too little to reach a steady rate)",
                crate::human::human_count(t.bulk_min_bytes)
            ),
        )
    } else {
        (
            Rule::Brief,
            format!(
                "its largest run, {bytes} B, lasted {} s (under {} s: no setting can save more time than that)",
                crate::human::secs(run.seconds),
                t.bulk_min_seconds
            ),
        )
    }
}
