//! The answer for a flow that is not bulk: no rate limit is named (none
//! applies), so the diagnosis carries no limit and no tuning fix; its lead
//! sentence, evidence and fixes come from the class. A short flow gets the
//! slow-start arithmetic and what saves round trips; a request/response
//! flow the round trip and the server's time per exchange, and whichever
//! dominates; an interactive flow that it is not a throughput problem.

use plumb_model::slow_start::{slow_start_bytes, slow_start_rounds};

use super::rules::initial_window;
use crate::finding::line;
use crate::human::{human_count, ms, secs};
use plumb_record::class::{Classification, FlowClass, FlowShape, Rule, Run};
use plumb_record::diagnosis::Diagnosis;
use plumb_record::diagnosis::{EvidenceLine, Fix};

/// The diagnosis of a flow of class `c` (not bulk) measured at
/// `measured_bps`: no limit, the class's sentence, evidence and fixes.
pub fn class_diagnosis(shape: &FlowShape, c: &Classification, measured_bps: f64) -> Diagnosis {
    let (summary, evidence, fixes) = match c.class {
        FlowClass::Short if c.rule == Rule::FewRoundTrips => short(shape),
        FlowClass::Short => brief(shape, c.rule),
        FlowClass::RequestResponse => request_response(shape),
        FlowClass::Interactive | FlowClass::Bulk => interactive(shape),
    };
    Diagnosis {
        limit: None,
        secondary: Vec::new(),
        measured_bps,
        predicted_bps: None,
        tolerance: None,
        link_bps: None,
        link_source: None,
        summary,
        confidence: None,
        confidence_level: None,
        evidence,
        findings: Vec::new(),
        figures: plumb_record::diagnosis::Figures::default(),
        fixes,
        unknown: Vec::new(),
        latency: None,
        nothing_to_explain: true,
    }
}

/// The run a short flow's time is spent on.
fn main_run(s: &FlowShape) -> Run {
    s.longest_run.unwrap_or(Run {
        bytes: s.bytes,
        ..Run::default()
    })
}

type Answer = (String, Vec<EvidenceLine>, Vec<Fix>);

fn short(s: &FlowShape) -> Answer {
    let run = main_run(s);
    let mss = s.mss.unwrap_or(1460).max(1);
    let (iw, seen) = initial_window(&run, mss);
    let need = slow_start_rounds(run.bytes, iw);
    let data_rt = s.round_trips(&run);
    let before = u64::from(s.handshake_s.is_some()) + run.exchanges_before;
    let mut summary = format!("Short: {} B in {} s", human_count(s.bytes), secs(s.life_s));
    if let (Some(rtt), Some(n)) = (s.rtt_s, data_rt) {
        summary += &format!(
            ", {} round trips of {} ({} for its data, {before} before it)",
            n + before,
            ms(rtt),
            n
        );
    }
    summary += &format!(
        ": round trips set its time, not bandwidth. Slow start from an initial window of {} B ({}) needs {need} round trip(s) for its largest run of {} B ({}), so no buffer or window setting makes it faster; fewer round trips do.",
        human_count(iw),
        if seen { "its first flight" } else { "Linux's 10 segments" },
        human_count(run.bytes),
        rounds_sum(iw, need)
    );
    let mut ev = vec![line("largest run", run.bytes as f64, "B")];
    if let Some(n) = data_rt {
        ev.push(line("its data round trips", n as f64, "round trips"));
    }
    ev.push(line(
        "slow start's round trips for it",
        f64::from(need),
        "round trips",
    ));
    ev.push(line("initial window", iw as f64, "B"));
    if let Some(rtt) = s.rtt_s {
        ev.push(line("smallest RTT", rtt * 1e3, "ms"));
    }
    if let Some(h) = s.handshake_s {
        ev.push(line("handshake", h * 1e3, "ms"));
    }
    ev.push(line(
        "exchanges before the largest run (requests, TLS)",
        run.exchanges_before as f64,
        "exchanges",
    ));
    (summary, ev, short_fixes(s, &run, iw, need))
}

/// `14,600 + 29,200 + 58,400 B`: what each round carries (the first
/// three, then "…").
fn rounds_sum(iw: u64, rounds: u32) -> String {
    let parts: Vec<String> = (0..rounds.min(3))
        .map(|k| human_count(iw.saturating_mul(1 << k)))
        .collect();
    let more = if rounds > 3 { " + …" } else { "" };
    format!("{}{more} B", parts.join(" + "))
}

fn short_fixes(s: &FlowShape, run: &Run, iw: u64, need: u32) -> Vec<Fix> {
    let fix = |os: &str, note: String, commands: Vec<String>| Fix {
        os: os.into(),
        commands,
        expected_bps: None,
        note,
    };
    let mut f = vec![fix(
        "application",
        "reuse the connection: the handshake and slow start are paid once for many transfers".into(),
        vec!["HTTP keep-alive or a connection pool; HTTP/2 or HTTP/3 for many requests to one server".into()],
    )];
    let doubled = slow_start_rounds(run.bytes, iw * 2);
    if doubled < need {
        f.push(fix(
            "linux",
            format!(
                "a larger initial window on the sender: {need} data round trip(s) become {doubled} with twice the window ({} B in the first {need})",
                human_count(slow_start_bytes(iw, need))
            ),
            vec!["ip route change ROUTE initcwnd 20 initrwnd 20   (ROUTE as `ip route show` prints it)".into()],
        ));
    }
    if run.exchanges_before >= 2 {
        f.push(fix(
            "application",
            format!(
                "{} exchanges came before the data (a TLS 1.2 handshake takes two): TLS 1.3 or session resumption saves one or two round trips per connection",
                run.exchanges_before
            ),
            vec!["TLS 1.3 on the server; session tickets or resumption on the client".into()],
        ));
    }
    if s.handshake_s.is_some() {
        f.push(fix(
            "application",
            "fewer, larger requests: each new connection costs a handshake and a new slow start"
                .into(),
            Vec::new(),
        ));
    }
    f
}

/// A short flow that is not round-trip bound: too few bytes, or over too
/// soon, for any setting to matter; what stalled it, if anything.
fn brief(s: &FlowShape, rule: Rule) -> Answer {
    let run = main_run(s);
    let why = if rule == Rule::FewBytes {
        format!(
            "its largest run carried {} B, too little to reach a steady rate",
            human_count(run.bytes)
        )
    } else {
        format!(
            "its largest run lasted {} s: no setting can save more time than that",
            secs(run.seconds)
        )
    };
    let mut summary = format!(
        "Short: {} B in {} s; {why}: not a throughput problem",
        human_count(s.bytes),
        secs(s.life_s)
    );
    let mut ev = vec![
        line("largest run", run.bytes as f64, "B"),
        line("its time", run.seconds, "s"),
    ];
    summary += &stalls(s, &mut ev);
    (summary, ev, Vec::new())
}

/// What stalled a flow: its retransmission timeouts, said with the
/// sentence's end.
fn stalls(s: &FlowShape, ev: &mut Vec<EvidenceLine>) -> String {
    match s.timeouts.filter(|t| *t > 0) {
        Some(t) => {
            ev.push(line("retransmission timeouts", t as f64, "timeouts"));
            format!("; {t} retransmission timeout(s) stalled it (each a wait of at least 200 ms).")
        }
        None => ".".into(),
    }
}

fn request_response(s: &FlowShape) -> Answer {
    let n = s.exchanges.unwrap_or(0);
    let rtt = s.rtt_s;
    let mut summary = format!(
        "Request/response: {} exchanges in {} s",
        human_count(n),
        secs(s.life_s)
    );
    let mut ev = vec![line("exchanges", n as f64, "exchanges")];
    if let Some(r) = rtt {
        ev.push(line("network round trip (smallest RTT)", r * 1e3, "ms"));
    }
    let server = s.server_time;
    if let Some(t) = server {
        ev.push(line(
            "server's time per exchange (mean)",
            t.mean_s * 1e3,
            "ms",
        ));
        ev.push(line("server's time, largest", t.max_s * 1e3, "ms"));
    }
    let dominant = match (rtt, server) {
        (Some(r), Some(t)) => {
            let where_ = match t.path_s {
                Some(p) => format!(
                    "from the request's last byte to the response's first at the capture point, less the capture point's {} round trip to the server",
                    ms(p)
                ),
                None => "from the request's last byte to the response's first at the capture point, which includes the path from there to the server and back (no handshake was captured to take it off)".into(),
            };
            summary += &format!(
                "; per exchange the network round trip is {} and the server took {} on average ({where_})",
                ms(r),
                ms(t.mean_s)
            );
            Some(t.mean_s > r)
        }
        (Some(r), None) => {
            summary += &format!("; the network round trip is {}", ms(r));
            None
        }
        _ => None,
    };
    summary += match dominant {
        Some(true) => ": the server's time dominates, not the network.",
        Some(false) => ": the round trips dominate, not the server.",
        None => ".",
    };
    (summary, ev, rr_fixes(dominant))
}

fn rr_fixes(server_dominates: Option<bool>) -> Vec<Fix> {
    let fix = |note: &str, cmd: &str| Fix {
        os: "application".into(),
        commands: vec![cmd.into()],
        expected_bps: None,
        note: note.into(),
    };
    let server = fix(
        "the server's time per request: look at the application and what it waits on (a database, a disk, a lock)",
        "profile the server's handler; plumb why --port PORT on the server shows whether its socket ever waits on the network",
    );
    let trips = fix(
        "fewer round trips: batch or pipeline requests, or multiplex them (HTTP/2); a client nearer the server",
        "one request for many items; pipelining; a cache or replica nearer the client",
    );
    match server_dominates {
        Some(true) => vec![server],
        Some(false) => vec![trips],
        None => vec![trips, server],
    }
}

fn interactive(s: &FlowShape) -> Answer {
    let idle = s.idle_share().unwrap_or(0.0);
    let mut summary = format!(
        "Interactive: idle {:.0}% of its {} s",
        idle * 100.0,
        secs(s.life_s)
    );
    let mut ev = vec![line("idle share of its life", idle * 100.0, "%")];
    // A capture counts its runs; a live socket only its bytes.
    if let Some(runs) = s.runs.filter(|r| *r > 0) {
        let mean = (s.bytes + s.reverse_bytes) / runs;
        summary += &format!(
            ", in {} runs of data of {} B on average",
            human_count(runs),
            human_count(mean)
        );
        ev.push(line("runs of data", runs as f64, "runs"));
        ev.push(line("bytes per run (mean)", mean as f64, "B"));
    }
    summary += ": not a throughput problem";
    if let Some(r) = s.rtt_s {
        summary += &format!("; its round trip is {}", ms(r));
        ev.push(line("smallest RTT", r * 1e3, "ms"));
    }
    let stalled = stalls(s, &mut ev);
    summary += if stalled == "." {
        "; nothing stalled it."
    } else {
        &stalled
    };
    (summary, ev, Vec::new())
}
