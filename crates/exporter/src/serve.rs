//! The exporter's HTTP side: the accept loop, `/probe` (checked, gated, run
//! on a thread of its own, diagnosed, answered as metrics), `/metrics` and
//! the one-line answers; it ends on SIGINT or SIGTERM and waits briefly for
//! running probes. The test itself is `plumb_net::client` (whichever tool's
//! protocol the probe speaks), the explanation
//! `plumb_diagnose`, both through their public API.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use plumb_diagnose::{diagnose, Evidence};
use plumb_live::link;
use plumb_report::json::JsonSink;
use tiny_http::{Header, Method, Request, Response, Server};

use crate::auto::{self, Settled};
use crate::config::Config;
use crate::gate::{Busy, Gate};
use crate::live;
use crate::metrics::{self, Outcome, Own, ProbeResult};
use crate::query::{self, ClientBuilder, Policy, Probe, Refusal};

/// How long the exporter waits for running probes when asked to stop (they
/// see the same signal and end their tests within a second or so).
const DRAIN: Duration = Duration::from_secs(5);

/// Why the exporter could not serve; each is one line.
#[derive(Debug)]
pub enum ServeError {
    /// The listening socket could not be opened.
    Listen(std::net::SocketAddr, String),
    /// `--live-flows` could not read the host's connections.
    LiveFlows(std::io::Error),
    /// The HTTP server failed while serving.
    Http(std::io::Error),
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::Listen(at, e) => write!(f, "cannot listen on {at}: {e}"),
            ServeError::LiveFlows(e) => write!(
                f,
                "--live-flows: cannot read the host's TCP connections (sock_diag): {e}"
            ),
            ServeError::Http(e) => write!(f, "exporter: {e}"),
        }
    }
}

impl std::error::Error for ServeError {}

struct State {
    policy: Policy,
    gate: Arc<Gate>,
    own: Own,
    client: Box<ClientBuilder>,
}

/// Serves `config` until SIGINT or SIGTERM, saying where on stderr.
pub fn serve(config: Config) -> Result<(), ServeError> {
    let listen = config.listen;
    let server = Server::http(listen).map_err(|e| ServeError::Listen(listen, e.to_string()))?;
    // The probes' client runs end on the same flag; the accept loop checks it too.
    plumb_net::signals::install();
    let allowed: Vec<String> = config
        .policy
        .allow
        .iter()
        .map(ToString::to_string)
        .collect();
    eprintln!(
        "plumb exporter: serving http://{listen}/probe?target=HOST (targets allowed: {})",
        allowed.join(", ")
    );
    let counters = config.live_ports.as_deref().map(live::LiveCounters::new);
    // Dropped (stopped and joined) when serve returns, however it returns.
    let _sampler = match &counters {
        Some(c) => Some(live::Sampler::start(c.clone()).map_err(ServeError::LiveFlows)?),
        None => None,
    };
    let st = Arc::new(State {
        gate: Gate::new(config.max_probes),
        own: Own::new(config.max_probes, counters.as_ref()),
        policy: config.policy,
        client: config.client,
    });
    while !plumb_net::signals::interrupted() {
        match server.recv_timeout(Duration::from_millis(200)) {
            Ok(Some(req)) => handle(&st, req),
            Ok(None) => {}
            Err(e) => return Err(ServeError::Http(e)),
        }
    }
    let t0 = Instant::now();
    while st.gate.running() > 0 && t0.elapsed() < DRAIN {
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
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
            "plumb exporter: /probe?target=HOST[&tool=&port=&time=&parallel=&reverse=&udp=&bitrate=&link=], /metrics",
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
    let p = match query::parse(query, timeout.as_deref(), &st.policy, st.client.as_ref()) {
        Ok(p) => p,
        Err(r) => return refuse(st, req, r),
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
            let r = answer(&st2, p);
            // The target is free before the scraper hears back, so its
            // next probe is not turned away as running.
            drop(permit);
            match r {
                Ok(r) => {
                    let o = if r.up {
                        Outcome::Success
                    } else {
                        Outcome::Failure
                    };
                    st2.own.count(o, r.probe_seconds);
                    reply_metrics(req, metrics::probe_text(&r));
                }
                Err(r) => refuse(&st2, req, r),
            }
        });
    if spawned.is_err() {
        // The request went down with the closure; tiny_http answers 500 for it.
        st.own.count(Outcome::Failure, 0.0);
    }
}

/// Counts a refused probe and answers it with its one line.
fn refuse(st: &State, req: Request, r: Refusal) {
    match r {
        Refusal::BadRequest(msg) => {
            st.own.count(Outcome::BadRequest, 0.0);
            reply(req, 400, &msg);
        }
        Refusal::Forbidden(msg) => {
            st.own.count(Outcome::Forbidden, 0.0);
            reply(req, 403, &msg);
        }
    }
}

/// On the probe's own thread: resolves its target, settles its tool and
/// runs the test.
fn answer(st: &State, mut p: Probe) -> Result<ProbeResult, Refusal> {
    let t0 = Instant::now();
    let target = query::resolve(&mut p, &st.policy.allow)?;
    Ok(match auto::settle(&mut p, target, st.client.as_ref())? {
        Settled::Ready => run_probe(&p, target, t0),
        // No server, or no time left for a test: the probe fails as a
        // test against a server that is down does.
        Settled::NoServer | Settled::NoTime => ProbeResult {
            test_time: p.time,
            probe_seconds: t0.elapsed().as_secs_f64(),
            ..ProbeResult::default()
        },
    })
}

/// Runs `p`'s test against `target`; `t0` is when the probe began.
fn run_probe(p: &Probe, target: IpAddr, t0: Instant) -> ProbeResult {
    let mut capture = JsonSink::new(Vec::new());
    let outcome = plumb_net::client::run(&p.config, &mut capture);
    let record = capture.record();
    let mut r = ProbeResult {
        up: outcome.is_ok(),
        tool: Some(p.config.tool.name()),
        test_time: p.time,
        ..ProbeResult::default()
    };
    if r.up {
        if let Ok(ev) = Evidence::from_document_or_best(&record, link::for_peer(target, p.link)) {
            r.rtt = ev.rtt_s();
            r.min_rtt = ev.min_rtt_s();
            r.diagnosis = Some(diagnose(&ev));
        }
    }
    r.doc = record;
    r.probe_seconds = t0.elapsed().as_secs_f64();
    r
}
