//! The host's live TCP flows on `/metrics` (`--live-flows`): a sampler
//! thread dumps every TCP socket once a second through sock_diag, follows
//! each by its cookie for one interval, names its limit as `plumb top` does
//! (`plumb_live::evidence::explain_classed`), and adds the interval's
//! seconds and bytes to counters labelled by its class and that limit
//! only. The label set is fixed (a bulk flow's every limit plus `none`, and
//! `none` for each other class, times each `--live-port` plus `other` when
//! ports are given), so a host with 100 000 connections still has 12
//! series per metric without ports: never one per connection.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use plumb_live::evidence::{explain_classed, Context};
use plumb_live::sys::Dumper;
use plumb_live::{Conn, Role, Track};
use plumb_record::class::FlowClass;
use plumb_record::diagnosis::Limit;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use plumb_live::link;

type Labels = Vec<(String, String)>;

/// Every label value `limit` can take: the limits, and `none` for a busy
/// connection the rules found nothing against.
pub const LIMITS: [&str; 9] = [
    "receive_window",
    "send_buffer",
    "congestion",
    "loss",
    "link",
    "cpu",
    "application",
    "path_mtu",
    "none",
];

/// How often the sampler dumps the sockets.
pub const INTERVAL: Duration = Duration::from_secs(1);

/// The counters the sampler adds to and `/metrics` reads.
#[derive(Debug, Clone, Default)]
pub struct LiveCounters {
    /// `--live-port`s: a connection with one of them at either end is
    /// counted under `port="N"`, any other under `port="other"`.
    pub ports: Vec<u16>,
    /// Seconds of transfer (summed over connections) by limit.
    pub seconds: Family<Labels, Counter<f64, AtomicU64>>,
    /// Bytes moved (acknowledged plus received) by limit.
    pub bytes: Family<Labels, Counter>,
    /// Sampling intervals done.
    pub samples: Counter,
}

/// Every `(class, limit)` pair a connection can be counted under: a bulk
/// flow's limits, and `none` for a flow whose class is its answer.
fn pairs() -> impl Iterator<Item = (&'static str, &'static str)> {
    let others = [
        FlowClass::Interactive,
        FlowClass::RequestResponse,
        FlowClass::Short,
    ];
    LIMITS
        .iter()
        .map(|l| (FlowClass::Bulk.name(), *l))
        .chain(others.into_iter().map(|c| (c.name(), "none")))
}

fn label(class: &str, limit: &str, port: Option<&str>) -> Labels {
    let mut l = vec![
        ("class".to_string(), class.to_string()),
        ("limit".to_string(), limit.to_string()),
    ];
    if let Some(p) = port {
        l.push(("port".to_string(), p.to_string()));
    }
    l
}

impl LiveCounters {
    /// Counters with every limit present at zero, so `rate()` sees the first
    /// increase of each.
    pub fn new(ports: &[u16]) -> LiveCounters {
        let mut ports = ports.to_vec();
        ports.sort_unstable();
        ports.dedup();
        let c = LiveCounters {
            ports,
            ..LiveCounters::default()
        };
        let mut names: Vec<Option<String>> = c.ports.iter().map(|p| Some(p.to_string())).collect();
        names.push((!c.ports.is_empty()).then(|| "other".to_string()));
        for (class, l) in pairs() {
            for p in &names {
                let _ = c.seconds.get_or_create(&label(class, l, p.as_deref()));
                let _ = c.bytes.get_or_create(&label(class, l, p.as_deref()));
            }
        }
        c
    }

    /// The `port` label for `c`, when ports are configured.
    fn port_of(&self, c: &Conn) -> Option<String> {
        if self.ports.is_empty() {
            return None;
        }
        Some(
            [c.local.port(), c.remote.port()]
                .into_iter()
                .find(|p| self.ports.contains(p))
                .map_or_else(|| "other".to_string(), |p| p.to_string()),
        )
    }

    /// Adds one connection's interval under its class and `limit`.
    fn add(&self, c: &Conn, class: FlowClass, limit: Option<Limit>, secs: f64, bytes: u64) {
        let l = label(
            class.name(),
            limit.map_or("none", |l| l.name()),
            self.port_of(c).as_deref(),
        );
        self.seconds.get_or_create(&l).inc_by(secs);
        self.bytes.get_or_create(&l).inc_by(bytes);
    }
}

/// The running sampler; stops and is joined when dropped.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Opens sock_diag (an error here is the caller's to report) and starts
    /// the thread.
    pub fn start(counters: LiveCounters) -> std::io::Result<Sampler> {
        let dumper = Dumper::open()?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("plumb-live".into())
            .spawn(move || sample(dumper, &counters, &s))?;
        Ok(Sampler {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn sample(mut dumper: Dumper, counters: &LiveCounters, stop: &AtomicBool) {
    let start = Instant::now();
    let mut prev: HashMap<u64, (Conn, f64)> = HashMap::new();
    // One route lookup per peer; bounded by clearing it when it grows large.
    let mut links = HashMap::new();
    let mut i: u32 = 0;
    while !stop.load(Ordering::Relaxed) && !plumb_net::signals::interrupted() {
        let t = start.elapsed().as_secs_f64();
        // A failed dump skips one interval; the next one tries again.
        let conns = dumper.dump().unwrap_or_default();
        // The listeners, read when a transfer first needs them this interval.
        let mut listeners = plumb_live::sys::Listeners::default();
        let mut next = HashMap::with_capacity(conns.len());
        for c in conns {
            if let Some((p, tp)) = prev.remove(&c.cookie) {
                let mut tr = Track::new(p, tp);
                tr.update(c, t);
                let d = tr.delta();
                // Idle connections (keepalives, shells) are no transfer.
                if d.role != Role::Idle {
                    if links.len() > 4096 {
                        links.clear();
                    }
                    let ctx = Context {
                        link: links
                            .entry(c.remote.ip())
                            .or_insert_with(|| link::for_peer(c.remote.ip(), None))
                            .clone(),
                        cpu: None,
                        pid: None,
                        opened: listeners.opened(c.local),
                        // The metrics carry the limit, not its fixes.
                        sysctls: Default::default(),
                    };
                    let (dg, _, class) = explain_classed(&tr, &ctx);
                    counters.add(&c, class.class, dg.limit, d.secs, d.acked + d.received);
                }
            }
            next.insert(c.cookie, (c, t));
        }
        prev = next;
        if i > 0 {
            counters.samples.inc();
        }
        i = i.saturating_add(1);
        // Sleep to the next tick in short steps, so a stop is seen quickly.
        let until = start + INTERVAL * i;
        while !stop.load(Ordering::Relaxed) && !plumb_net::signals::interrupted() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(100)));
        }
    }
}
