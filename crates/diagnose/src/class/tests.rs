use plumb_record::class::{FlowClass, FlowShape, Rule, Run, ServerTime};

use super::*;

/// A flow of one run of `bytes` over `seconds` at `rtt_s`.
fn one_run(bytes: u64, seconds: f64, rtt_s: f64) -> FlowShape {
    FlowShape {
        bytes,
        reverse_bytes: 300,
        life_s: seconds + 2.0 * rtt_s,
        rtt_s: Some(rtt_s),
        mss: Some(1448),
        handshake_s: Some(rtt_s),
        runs: Some(2),
        longest_run: Some(Run {
            from_client: false,
            bytes,
            seconds,
            stalled_s: 0.0,
            first_round_bytes: Some(14_480),
            exchanges_before: 0,
            starts_at: 2.0 * rtt_s,
        }),
        exchanges: Some(1),
        idle_s: Some(0.0),
        server_time: None,
        timeouts: Some(0),
    }
}

/// The example: 58,923 B over a 52 ms round trip in 0.20 s is
/// short, with its round trips counted.
#[test]
fn an_http_response_in_four_round_trips_is_short() {
    let s = one_run(58_923, 0.105, 0.052);
    let c = classify(&s);
    assert_eq!(c.class, FlowClass::Short, "{}", c.why);
    assert_eq!(c.round_trips, Some(3));
    assert!(c.why.contains("3 data round trip"), "{}", c.why);
    let d = class_diagnosis(&s, &c, 4e6);
    assert_eq!(d.limit, None);
    assert!(d.nothing_to_explain);
    assert!(d.summary.starts_with("Short: 58,923 B"), "{}", d.summary);
    // 3 for the data and the handshake before it.
    assert!(
        d.summary.contains("4 round trips of 52 ms"),
        "{}",
        d.summary
    );
    assert!(d.summary.contains("needs 3 round trip(s)"), "{}", d.summary);
    assert!(
        d.summary.contains("14,480 + 28,960 + 57,920 B"),
        "{}",
        d.summary
    );
    for f in &d.fixes {
        for c in &f.commands {
            assert!(!c.contains("sysctl") && !c.contains("SO_"), "{c}");
        }
    }
    assert!(d.fixes.iter().any(|f| f.note.contains("initial window")));
}

#[test]
fn a_long_transfer_is_bulk_and_each_bar_alone_keeps_it_short() {
    let bulk = one_run(50_000_000, 5.0, 0.015);
    assert_eq!(classify(&bulk).class, FlowClass::Bulk);
    // Under 64 KiB.
    let small = one_run(60_000, 5.0, 0.015);
    let c = classify(&small);
    assert_eq!(c.class, FlowClass::Short);
    assert!(c.why.contains("under 65,536 B"), "{}", c.why);
    // Under 0.2 s, on a path of many round trips.
    let brief = one_run(50_000_000, 0.1, 0.000_05);
    let c = classify(&brief);
    assert_eq!(c.class, FlowClass::Short);
    assert!(c.why.contains("under 0.2 s"), "{}", c.why);
    // Within six round trips, however long they are.
    let few = one_run(200_000, 1.1, 0.2);
    let c = classify(&few);
    assert_eq!(c.round_trips, Some(6));
    assert_eq!(c.class, FlowClass::Short, "{}", c.why);
    let seven = one_run(200_000, 1.25, 0.2);
    assert_eq!(classify(&seven).class, FlowClass::Bulk);
}

/// A transfer still doubling when it ends never left slow start: 1 MB
/// from 14,480 B needs 7 round trips, so 7 or 8 are short and 9 are not.
#[test]
fn a_run_within_slow_start_is_short_however_large() {
    let iw = 14_480;
    assert_eq!(plumb_model::slow_start::slow_start_rounds(1_000_000, iw), 7);
    let c = classify(&one_run(1_000_000, 0.051 * 7.5, 0.051));
    assert_eq!(
        (c.class, c.round_trips),
        (FlowClass::Short, Some(8)),
        "{}",
        c.why
    );
    assert!(c.why.contains("it never left slow start"), "{}", c.why);
    let c = classify(&one_run(1_000_000, 0.051 * 8.5, 0.051));
    assert_eq!(
        (c.class, c.round_trips),
        (FlowClass::Bulk, Some(9)),
        "{}",
        c.why
    );
}

#[test]
fn a_run_that_stalls_a_second_resending_is_bulk_whatever_its_bytes() {
    let mut s = one_run(17_413, 14.2, 0.015);
    if let Some(r) = s.longest_run.as_mut() {
        r.stalled_s = 13.9;
    }
    let c = classify(&s);
    assert_eq!(
        (c.class, c.rule),
        (FlowClass::Bulk, Rule::StalledRun),
        "{}",
        c.why
    );
    if let Some(r) = s.longest_run.as_mut() {
        r.stalled_s = 0.9;
    }
    assert_eq!(classify(&s).rule, Rule::FewBytes);
}

#[test]
fn without_an_rtt_the_bytes_and_time_decide() {
    let mut s = one_run(50_000_000, 5.0, 0.015);
    s.rtt_s = None;
    let c = classify(&s);
    assert_eq!(c.class, FlowClass::Bulk);
    assert_eq!(c.round_trips, None);
}

#[test]
fn mostly_idle_is_interactive_and_says_no_throughput_problem() {
    let mut s = one_run(4_000, 0.01, 0.0002);
    s.life_s = 10.0;
    s.idle_s = Some(9.0);
    s.runs = Some(100);
    s.exchanges = Some(50);
    let c = classify(&s);
    assert_eq!(c.class, FlowClass::Interactive, "{}", c.why);
    let d = class_diagnosis(&s, &c, 3200.0);
    assert!(
        d.summary.contains("not a throughput problem"),
        "{}",
        d.summary
    );
    assert!(d.fixes.is_empty());
    s.timeouts = Some(2);
    let d = class_diagnosis(&s, &c, 3200.0);
    assert!(
        d.summary.contains("2 retransmission timeout(s)"),
        "{}",
        d.summary
    );
}

#[test]
fn idle_just_under_half_is_not_interactive() {
    let mut s = one_run(4_000, 0.01, 0.0002);
    s.life_s = 10.0;
    s.idle_s = Some(4.99);
    assert_ne!(classify(&s).class, FlowClass::Interactive);
    s.idle_s = Some(5.0);
    assert_eq!(classify(&s).class, FlowClass::Interactive);
}

#[test]
fn many_quick_exchanges_are_request_response_and_name_the_server() {
    let mut s = one_run(20_000, 0.001, 0.001);
    s.life_s = 11.0;
    s.exchanges = Some(500);
    s.idle_s = Some(0.1);
    s.server_time = Some(ServerTime {
        exchanges: 500,
        mean_s: 0.0203,
        min_s: 0.0200,
        max_s: 0.025,
        path_s: Some(0.001),
    });
    let c = classify(&s);
    assert_eq!(c.class, FlowClass::RequestResponse, "{}", c.why);
    let d = class_diagnosis(&s, &c, 1e5);
    assert!(
        d.summary.contains("the server took 20.3 ms"),
        "{}",
        d.summary
    );
    assert!(d.summary.contains("the server's time dominates"));
    assert!(d.fixes[0].note.starts_with("the server's time"));
    // Three exchanges are not enough.
    s.exchanges = Some(3);
    assert_eq!(classify(&s).class, FlowClass::Short);
}

#[test]
fn a_bulk_run_outranks_idle_and_exchanges() {
    let mut s = one_run(50_000_000, 5.0, 0.015);
    s.life_s = 100.0;
    s.idle_s = Some(90.0);
    s.exchanges = Some(40);
    assert_eq!(classify(&s).class, FlowClass::Bulk);
}

#[test]
fn the_rules_serialize_with_their_order_and_numbers() {
    let v = serde_json::to_value(RULES).expect("json");
    assert_eq!(
        v["precedence"],
        serde_json::json!(["bulk", "interactive", "request_response", "short"])
    );
    assert_eq!(v["thresholds"]["bulk_min_bytes"], 65_536);
    assert_eq!(v["thresholds"]["request_response_min_exchanges"], 4);
}
