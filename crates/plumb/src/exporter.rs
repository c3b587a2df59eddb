//! `plumb exporter`: a Prometheus exporter on the blackbox pattern. Each
//! `GET /probe?target=HOST…` runs one `plumb -c` test against HOST (a plumb
//! or iperf3 server), diagnoses it as `plumb why` does, and answers with the
//! result and the limit as OpenMetrics text; `/metrics` has the exporter's own
//! counters.
//!
//! This module owns the HTTP side and the safety rules (who may be probed,
//! how many at once, for how long); the test itself is `plumb_net::client`,
//! the explanation `plumb_diagnose`, both through their public API. It sits in
//! the binary crate because a probe's query is a second spelling of `plumb -c`'s
//! flags and goes through the same checks (`measure::test_spec`).

mod gate;
mod live;
mod metrics;
mod query;

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use plumb_diagnose::evidence::LinkRate;
use plumb_diagnose::{diagnose, Evidence, LinkSource};
use plumb_net::config::IpPrefix;
use plumb_report::json::JsonSink;
use tiny_http::{Header, Method, Request, Response, Server};

use crate::common::link;
use crate::usage::usage_error;
use gate::{Busy, Gate};
use metrics::{Outcome, Own, ProbeResult};
use query::{Policy, Probe, Refusal};

/// The port iperf3 exporters listen on (edgard/iperf3_exporter and its
/// forks), so scrape configs written for them fit.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9579";

/// Flags of `plumb exporter`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  plumb exporter                                  probe loopback servers only, on 127.0.0.1:9579\n  plumb exporter --listen 0.0.0.0:9579 --target-allow 10.1.0.0/16\n  curl 'localhost:9579/probe?target=127.0.0.1&time=3'"
)]
pub struct ExporterArgs {
    /// Address and port to serve HTTP on (loopback by default: a prober
    /// should not be reachable from elsewhere unless asked)
    #[arg(long, default_value = DEFAULT_LISTEN)]
    pub listen: String,
    /// Targets a probe may test (repeatable, comma-separated; ADDR[/LEN]);
    /// without it, loopback only
    #[arg(long = "target-allow", value_name = "PREFIX", value_delimiter = ',')]
    pub target_allow: Vec<String>,
    /// Probes that may run at once (one per target in any case)
    #[arg(long = "max-probes", default_value_t = 2, value_parser = crate::args::whole::<usize>)]
    pub max_probes: usize,
    /// Longest test a probe may run, seconds
    #[arg(long = "max-time", default_value_t = 10.0, value_parser = crate::args::seconds)]
    pub max_time: f64,
    /// Also summarise the host's live TCP flows on /metrics: seconds and
    /// bytes of transfer by limit, sampled every second (off by default:
    /// it dumps every socket of the host each second)
    #[arg(long = "live-flows")]
    pub live_flows: bool,
    /// With --live-flows: also label by this port at either end (repeatable,
    /// comma-separated, at most 16; other connections are port="other")
    #[arg(
        long = "live-port",
        value_name = "PORT",
        value_delimiter = ',',
        value_parser = crate::args::whole::<u16>,
        requires = "live_flows"
    )]
    pub live_port: Vec<u16>,
}

/// Loopback: what may be probed when `--target-allow` is not given. Enough for
/// a local check and a sidecar; anything else must be allowed by name, since
/// an open prober sends traffic wherever a URL says.
const LOOPBACK: [&str; 2] = ["127.0.0.0/8", "::1/128"];

/// The longest `--max-time`: a probe is one scrape, not a soak test.
const MAX_TIME_CAP_S: f64 = 600.0;

/// The most `--live-port`s: each adds nine series per metric.
const MAX_LIVE_PORTS: usize = 16;

/// How long the exporter waits for running probes when asked to stop (they
/// see the same signal and end their tests within a second or so).
const DRAIN: Duration = Duration::from_secs(5);

struct State {
    policy: Policy,
    gate: Arc<Gate>,
    own: Own,
}

fn config(a: &ExporterArgs) -> Result<(SocketAddr, Policy), String> {
    let listen = a
        .listen
        .to_socket_addrs()
        .ok()
        .and_then(|mut it| it.next())
        .ok_or_else(|| format!("invalid --listen '{}': expected ADDR:PORT", a.listen))?;
    let allow = if a.target_allow.is_empty() {
        LOOPBACK.iter().map(|p| IpPrefix::parse(p)).collect()
    } else {
        a.target_allow
            .iter()
            .map(|p| IpPrefix::parse(p).map_err(|e| format!("--target-allow: {e}")))
            .collect::<Result<Vec<_>, _>>()
    }?;
    if a.max_probes == 0 || a.max_probes > 64 {
        return Err(format!(
            "invalid --max-probes {}: expected 1 to 64",
            a.max_probes
        ));
    }
    if !(a.max_time.is_finite() && a.max_time >= query::MIN_TIME_S && a.max_time <= MAX_TIME_CAP_S)
    {
        return Err(format!(
            "invalid --max-time {}: expected {} to {MAX_TIME_CAP_S} seconds",
            a.max_time,
            query::MIN_TIME_S
        ));
    }
    Ok((
        listen,
        Policy {
            allow,
            max_time: a.max_time,
        },
    ))
}

/// Runs `plumb exporter` until SIGINT or SIGTERM.
pub fn run(a: &ExporterArgs) -> anyhow::Result<ExitCode> {
    if a.live_port.len() > MAX_LIVE_PORTS {
        return Ok(usage_error(format!(
            "--live-port gives {} ports: at most {MAX_LIVE_PORTS} (each multiplies the series)",
            a.live_port.len()
        )));
    }
    let (listen, policy) = match config(a) {
        Ok(c) => c,
        Err(msg) => return Ok(usage_error(msg)),
    };
    let server = match Server::http(listen) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("plumb: cannot listen on {listen}: {e}");
            return Ok(ExitCode::from(1));
        }
    };
    // The probes' client runs end on the same flag; the accept loop checks it too.
    plumb_net::signals::install();
    let allowed: Vec<String> = policy.allow.iter().map(ToString::to_string).collect();
    eprintln!(
        "plumb exporter: serving http://{listen}/probe?target=HOST (targets allowed: {})",
        allowed.join(", ")
    );
    let counters = a.live_flows.then(|| live::LiveCounters::new(&a.live_port));
    // Dropped (stopped and joined) when run returns, however it returns.
    let _sampler = match &counters {
        Some(c) => {
            match live::Sampler::start(c.clone()) {
                Ok(s) => Some(s),
                Err(e) => {
                    eprintln!("plumb: --live-flows: cannot read the host's TCP connections (sock_diag): {e}");
                    return Ok(ExitCode::from(1));
                }
            }
        }
        None => None,
    };
    let st = Arc::new(State {
        gate: Gate::new(a.max_probes),
        own: Own::new(a.max_probes, counters.as_ref()),
        policy,
    });
    while !plumb_net::signals::interrupted() {
        match server.recv_timeout(Duration::from_millis(200)) {
            Ok(Some(req)) => handle(&st, req),
            Ok(None) => {}
            Err(e) => {
                eprintln!("plumb: exporter: {e}");
                return Ok(ExitCode::from(1));
            }
        }
    }
    let t0 = Instant::now();
    while st.gate.running() > 0 && t0.elapsed() < DRAIN {
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(ExitCode::SUCCESS)
}

fn header(name: &str, value: &str) -> Option<Header> {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).ok()
}

/// Answers with one line of text.
fn reply(req: Request, status: u16, line: &str) {
    let mut r = Response::from_string(format!("{line}\n")).with_status_code(status);
    if let Some(h) = header("Content-Type", "text/plain; charset=utf-8") {
        r.add_header(h);
    }
    if status == 429 || status == 503 {
        if let Some(h) = header("Retry-After", "1") {
            r.add_header(h);
        }
    }
    // The client may have gone; nothing to do about it.
    let _ = req.respond(r);
}

/// Answers with metrics, in the format the client's `Accept` header asks for.
fn reply_metrics(req: Request, text: String) {
    let accept = req
        .headers()
        .iter()
        .find(|h| h.field.equiv("Accept"))
        .map(|h| h.value.as_str().to_string());
    let (body, ctype) = if metrics::wants_text(accept.as_deref()) {
        (
            metrics::to_prometheus_text(&text),
            metrics::CONTENT_TYPE_TEXT,
        )
    } else {
        (text, metrics::CONTENT_TYPE)
    };
    let mut r = Response::from_string(body);
    if let Some(h) = header("Content-Type", ctype) {
        r.add_header(h);
    }
    let _ = req.respond(r);
}

fn handle(st: &Arc<State>, req: Request) {
    if !matches!(req.method(), Method::Get | Method::Head) {
        return reply(req, 405, "only GET is served");
    }
    let url = req.url().to_string();
    let (path, query) = url.split_once('?').unwrap_or((&url, ""));
    match path {
        // A HEAD would run a whole test for nothing.
        "/probe" if *req.method() == Method::Head => reply(req, 405, "/probe needs GET"),
        "/probe" => probe(st, req, query),
        "/metrics" => {
            let text = st.own.text(st.gate.running());
            reply_metrics(req, text);
        }
        "/" => reply(
            req,
            200,
            "plumb exporter: /probe?target=HOST[&port=&time=&parallel=&reverse=&udp=&bitrate=&link=], /metrics",
        ),
        _ => reply(req, 404, "not found: try /probe?target=HOST or /metrics"),
    }
}

/// Checks a probe, takes its place, and runs it on a thread of its own (at
/// most `--max-probes` such threads exist), so the accept loop stays free to
/// refuse the next ones quickly.
fn probe(st: &Arc<State>, req: Request, query: &str) {
    let timeout = req
        .headers()
        .iter()
        .find(|h| h.field.equiv("X-Prometheus-Scrape-Timeout-Seconds"))
        .map(|h| h.value.as_str().to_string());
    let p = match query::parse(query, timeout.as_deref(), &st.policy) {
        Ok(p) => p,
        Err(Refusal::BadRequest(msg)) => {
            st.own.count(Outcome::BadRequest, 0.0);
            return reply(req, 400, &msg);
        }
        Err(Refusal::Forbidden(msg)) => {
            st.own.count(Outcome::Forbidden, 0.0);
            return reply(req, 403, &msg);
        }
    };
    let permit = match st.gate.try_enter(&p.target) {
        Ok(permit) => permit,
        Err(Busy::Target) => {
            st.own.count(Outcome::BusyTarget, 0.0);
            return reply(req, 429, &format!("a probe of {} is running", p.target));
        }
        Err(Busy::Full) => {
            st.own.count(Outcome::BusyFull, 0.0);
            return reply(req, 503, "--max-probes probes are running");
        }
    };
    let st2 = Arc::clone(st);
    let spawned = std::thread::Builder::new()
        .name("plumb-probe".into())
        .spawn(move || {
            let _permit = permit;
            let mut p = p;
            let target = match query::resolve(&mut p, &st2.policy.allow) {
                Ok(ip) => ip,
                Err(Refusal::Forbidden(msg)) => {
                    st2.own.count(Outcome::Forbidden, 0.0);
                    return reply(req, 403, &msg);
                }
                Err(Refusal::BadRequest(msg)) => {
                    st2.own.count(Outcome::BadRequest, 0.0);
                    return reply(req, 400, &msg);
                }
            };
            let r = run_probe(&p, target);
            st2.own.count(
                if r.up {
                    Outcome::Success
                } else {
                    Outcome::Failure
                },
                r.probe_seconds,
            );
            reply_metrics(req, metrics::probe_text(&r));
        });
    if spawned.is_err() {
        // The request went down with the closure; tiny_http answers 500 for it.
        st.own.count(Outcome::Failure, 0.0);
    }
}

fn run_probe(p: &Probe, target: IpAddr) -> ProbeResult {
    let t0 = Instant::now();
    let mut capture = JsonSink::new(Vec::new());
    let outcome = plumb_net::client::run(&p.config, &mut capture);
    let record = capture.record();
    let mut r = ProbeResult {
        up: outcome.is_ok(),
        test_time: p.time,
        ..ProbeResult::default()
    };
    if r.up {
        if let Ok(ev) = Evidence::from_document(&record, link::for_peer(target, p.link)) {
            let mut ev = ev;
            if ev.link.is_none() && ev.best_interval_bps > 0.0 {
                // Without a link rate the best interval is the only bound on it (as plumb why).
                ev.link = Some(LinkRate {
                    bps: ev.best_interval_bps,
                    source: LinkSource::BestInterval,
                });
            }
            r.rtt = ev.rtt_s();
            r.min_rtt = ev.min_rtt_s();
            r.diagnosis = Some(diagnose(&ev));
        }
    }
    r.doc = record;
    r.probe_seconds = t0.elapsed().as_secs_f64();
    r
}
