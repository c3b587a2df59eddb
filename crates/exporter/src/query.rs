//! A `/probe` query turned into a checked client run: which address to test,
//! with which tool and which of `plumb -c`'s flags, for how long. Everything a stranger can
//! put in a URL is checked here, and every refusal is one line; the flags a
//! query asks for ([`Asked`]) become a client run through the command line's
//! own checks, which the caller hands in ([`ClientBuilder`]).

use std::net::{IpAddr, ToSocketAddrs};

use plumb_model::Rate;
use plumb_net::config::{ClientConfig, IpPrefix};
use plumb_proto::tool::ToolChoice;

/// Test seconds when the query gives none (iperf3 exporters use 5 too).
pub const DEFAULT_TIME_S: f64 = 5.0;
/// Seconds a probe needs besides the test: connect, parameter and result
/// exchanges, the diagnosis and the answer (about 0.3 s on loopback; the rest
/// is for a long round trip).
pub const OVERHEAD_S: f64 = 1.5;
/// The shortest test worth running: under half a second TCP is still in slow start.
pub const MIN_TIME_S: f64 = 0.5;
/// A probe gives up connecting after this long.
const CONNECT_TIMEOUT_MS: u64 = 2_000;
/// A probe gives up when no data has arrived for this long.
const RCV_TIMEOUT_MS: u64 = 3_000;

/// What the operator allows (`--target-allow`, `--max-time`).
#[derive(Debug, Clone)]
pub struct Policy {
    /// Targets a probe may test.
    pub allow: Vec<IpPrefix>,
    /// Longest test, seconds.
    pub max_time: f64,
}

/// Why a probe is refused before it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A malformed or out-of-range parameter (HTTP 400).
    BadRequest(String),
    /// A target outside `--target-allow` (HTTP 403).
    Forbidden(String),
}

/// What `target=` names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// An address, already checked against the allow list.
    Addr(IpAddr),
    /// A host name, not yet resolved.
    Name(String),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Addr(ip) => write!(f, "{ip}"),
            Target::Name(n) => write!(f, "{n}"),
        }
    }
}

/// The `plumb -c` flags a probe asks for, checked for form here and for
/// sense by the [`ClientBuilder`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Asked {
    /// `-c`: the target as given.
    pub client: String,
    /// `--tool`: the peer's tool (iperf3 unless the query names one), or auto.
    pub tool: ToolChoice,
    /// `-p`.
    pub port: Option<u16>,
    /// `-t`, seconds, after the caps.
    pub time: f64,
    /// `-P`.
    pub parallel: Option<i64>,
    /// `-R`.
    pub reverse: bool,
    /// `-u`.
    pub udp: bool,
    /// `-b`, as given.
    pub bitrate: Option<String>,
    /// `--connect-timeout`, ms.
    pub connect_timeout_ms: u64,
    /// `--rcv-timeout`, ms.
    pub rcv_timeout_ms: u64,
}

/// Turns the flags a probe asks for into a client run, through the same
/// checks as the command line; `Err` is the one-line refusal.
pub type ClientBuilder = dyn Fn(&Asked) -> Result<ClientConfig, String> + Send + Sync;

/// A checked probe.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The target; one probe of it runs at a time.
    pub target: Target,
    /// The client run.
    pub config: ClientConfig,
    /// `link=`: the bottleneck rate, for the diagnosis.
    pub link: Option<Rate>,
    /// Test seconds after the caps.
    pub time: f64,
    /// The flags the client run was built from (`tool=auto` builds it
    /// again for the tool it finds).
    pub asked: Asked,
    /// The most test seconds the scrape timeout leaves, when Prometheus
    /// sent one.
    pub budget: Option<f64>,
}

/// A query read and checked for form, before the client run is built.
#[derive(Debug)]
struct Query {
    target: Target,
    asked: Asked,
    link: Option<Rate>,
    budget: Option<f64>,
}

fn bad(msg: impl Into<String>) -> Refusal {
    Refusal::BadRequest(msg.into())
}

/// Decodes `%XX` and `+` of a query component.
pub fn percent_decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = b
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| format!("bad percent escape in '{s}'"))?;
                out.push(hex);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| format!("'{s}' is not UTF-8"))
}

fn flag(name: &str, v: &str) -> Result<bool, Refusal> {
    match v {
        "" | "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(bad(format!(
            "invalid {name} '{v}': expected 1/0 or true/false"
        ))),
    }
}

fn seconds(name: &str, v: &str) -> Result<f64, Refusal> {
    match v.parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 => Ok(t),
        _ => Err(bad(format!(
            "invalid {name} '{v}': expected seconds above 0"
        ))),
    }
}

/// Whether `ip` may be probed.
fn permitted(ip: IpAddr, allow: &[IpPrefix]) -> Result<IpAddr, Refusal> {
    let ip = plumb_net::config::canonical(ip);
    if allow.iter().any(|p| p.contains(ip)) {
        Ok(ip)
    } else {
        Err(Refusal::Forbidden(format!(
            "target {ip} is not in --target-allow"
        )))
    }
}

/// The target as given: an address (checked against the allow list here) or
/// a host name (checked for its characters; resolved by [`resolve`] on the
/// probe's own thread, so a slow DNS server never holds up the accept loop).
fn check_target(host: &str, allow: &[IpPrefix]) -> Result<Target, Refusal> {
    if host.is_empty() || host.len() > 253 {
        return Err(bad("target must be a host name or address"));
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return permitted(ip, allow).map(Target::Addr);
    }
    if !host
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || c == b'.' || c == b'-')
    {
        return Err(bad(format!("invalid target '{host}'")));
    }
    Ok(Target::Name(host.to_ascii_lowercase()))
}

/// Resolves a probe's host name (once: the address checked is the address
/// tested, which goes into its client run) and checks it against the allow
/// list; addresses pass through.
pub fn resolve(p: &mut Probe, allow: &[IpPrefix]) -> Result<IpAddr, Refusal> {
    let ip = resolved(&p.target, allow)?;
    if matches!(p.target, Target::Name(_)) {
        p.config.host = ip.to_string();
    }
    Ok(ip)
}

fn resolved(target: &Target, allow: &[IpPrefix]) -> Result<IpAddr, Refusal> {
    let ip = match target {
        Target::Addr(ip) => return Ok(*ip),
        Target::Name(name) => (name.as_str(), 0)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .map(|a| a.ip())
            .ok_or_else(|| bad(format!("cannot resolve target '{name}'")))?,
    };
    permitted(ip, allow)
}

/// Checks `query` (the part after `?`) and the scrape timeout Prometheus
/// sent, and builds the client run with `build`.
pub fn parse(
    query: &str,
    scrape_timeout: Option<&str>,
    policy: &Policy,
    build: &ClientBuilder,
) -> Result<Probe, Refusal> {
    let q = ask(query, scrape_timeout, policy)?;
    let config = build(&q.asked).map_err(bad)?;
    Ok(Probe {
        target: q.target,
        config,
        link: q.link,
        time: q.asked.time,
        asked: q.asked,
        budget: q.budget,
    })
}

/// Rounds test seconds down to whole milliseconds: a clean value in the
/// metrics and in the server's log.
pub fn whole_ms(t: f64) -> f64 {
    (t * 1000.0).floor() / 1000.0
}

/// The query's target, the flags it asks for, its `link=` and the test
/// time the scrape timeout leaves.
fn ask(query: &str, scrape_timeout: Option<&str>, policy: &Policy) -> Result<Query, Refusal> {
    let mut m = Asked::default();
    let mut target = None;
    let mut time = None;
    let mut link = None;
    let mut seen: Vec<String> = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let k = percent_decode(k).map_err(bad)?;
        let v = percent_decode(v).map_err(bad)?;
        if seen.contains(&k) {
            return Err(bad(format!("parameter '{k}' given twice")));
        }
        match k.as_str() {
            "target" => target = Some(v.clone()),
            "tool" => {
                m.tool = ToolChoice::parse(&v).map_err(|_| {
                    bad(format!(
                        "invalid tool '{v}': expected iperf3, iperf2, nuttcp or auto"
                    ))
                })?;
            }
            "port" => match v.parse::<u16>() {
                Ok(p) if p > 0 => m.port = Some(p),
                _ => return Err(bad(format!("invalid port '{v}': expected 1 to 65535"))),
            },
            "time" => time = Some(seconds("time", &v)?),
            "parallel" => {
                m.parallel = Some(v.parse::<i64>().map_err(|_| {
                    bad(format!("invalid parallel '{v}': expected a number of streams"))
                })?);
            }
            "reverse" => m.reverse = flag("reverse", &v)?,
            "udp" => m.udp = flag("udp", &v)?,
            "bitrate" => m.bitrate = Some(v.clone()),
            "link" => link = Some(Rate::parse(&v).map_err(|e| bad(e.to_string()))?),
            _ => {
                return Err(bad(format!(
                    "unknown parameter '{k}' (target, tool, port, time, parallel, reverse, udp, bitrate, link)"
                )))
            }
        }
        seen.push(k);
    }
    let host = target.ok_or_else(|| bad("missing parameter 'target'"))?;
    let target = check_target(&host, &policy.allow)?;
    let mut t = time.unwrap_or(DEFAULT_TIME_S).min(policy.max_time);
    let mut budget = None;
    if let Some(h) = scrape_timeout {
        let limit = seconds("X-Prometheus-Scrape-Timeout-Seconds", h.trim())?;
        budget = Some(limit - OVERHEAD_S);
        t = t.min(limit - OVERHEAD_S);
        if t < MIN_TIME_S {
            return Err(bad(format!(
                "scrape timeout {limit} s leaves no time for a test (give at least {} s)",
                MIN_TIME_S + OVERHEAD_S
            )));
        }
    }
    m.time = whole_ms(t);
    m.client = target.to_string();
    m.connect_timeout_ms = CONNECT_TIMEOUT_MS;
    m.rcv_timeout_ms = RCV_TIMEOUT_MS;
    Ok(Query {
        target,
        asked: m,
        link,
        budget,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Probes allowed to 127.0.0.1 only, at most 10 s each.
    pub(crate) fn policy() -> Policy {
        Policy {
            allow: vec![IpPrefix::parse("127.0.0.1/32").expect("prefix")],
            max_time: 10.0,
        }
    }

    #[test]
    fn decodes_escapes() {
        assert_eq!(percent_decode("%3A%3A1"), Ok("::1".into()));
        assert_eq!(percent_decode("a+b"), Ok("a b".into()));
        assert!(percent_decode("%4").is_err());
        assert!(percent_decode("%zz").is_err());
        assert!(percent_decode("%ff").is_err(), "not UTF-8");
    }

    #[test]
    fn a_full_query() {
        let Query {
            target,
            asked: m,
            link,
            budget,
        } = ask(
            "target=127.0.0.1&port=15201&time=3&parallel=2&reverse=1&bitrate=100M&link=1g",
            None,
            &policy(),
        )
        .expect("valid");
        assert_eq!(budget, None, "no scrape timeout, no budget");
        assert_eq!(m.tool, ToolChoice::default(), "iperf3 unless named");
        assert_eq!(target, Target::Addr(IpAddr::from([127, 0, 0, 1])));
        assert_eq!(m.client, "127.0.0.1");
        assert_eq!(m.port, Some(15201));
        assert_eq!(m.time, 3.0);
        assert_eq!(m.parallel, Some(2));
        assert!(m.reverse && !m.udp);
        assert_eq!(m.bitrate.as_deref(), Some("100M"));
        assert_eq!(link.map(Rate::bps), Some(1e9));
        assert_eq!(
            (m.connect_timeout_ms, m.rcv_timeout_ms),
            (CONNECT_TIMEOUT_MS, RCV_TIMEOUT_MS)
        );
    }

    #[test]
    fn the_builder_refuses_for_the_command_line() {
        let refuse: &ClientBuilder = &|m: &Asked| Err(format!("invalid -P {:?}", m.parallel));
        match parse("target=127.0.0.1&parallel=0", None, &policy(), refuse) {
            Err(Refusal::BadRequest(msg)) => assert_eq!(msg, "invalid -P Some(0)"),
            other => panic!("expected 400, got {other:?}"),
        }
    }

    #[test]
    fn the_tool_by_name_and_the_budget_from_the_scrape_timeout() {
        use plumb_proto::tool::Tool;
        let tool = |q: &str| ask(q, None, &policy()).map(|q| q.asked.tool);
        assert_eq!(
            tool("target=127.0.0.1&tool=nuttcp"),
            Ok(ToolChoice::One(Tool::Nuttcp))
        );
        assert_eq!(
            tool("target=127.0.0.1&tool=iperf2"),
            Ok(ToolChoice::One(Tool::Iperf2))
        );
        assert_eq!(tool("target=127.0.0.1&tool=auto"), Ok(ToolChoice::Auto));
        let q = ask("target=127.0.0.1&time=2", Some("9"), &policy()).expect("valid");
        assert_eq!(q.budget, Some(9.0 - OVERHEAD_S));
        assert_eq!(q.asked.time, 2.0);
    }

    fn time(q: &str, scrape: Option<&str>) -> Result<f64, Refusal> {
        ask(q, scrape, &policy()).map(|q| q.asked.time)
    }

    #[test]
    fn time_is_capped_by_max_time_and_scrape_timeout() {
        assert_eq!(
            time("target=127.0.0.1&time=60", None),
            Ok(10.0),
            "--max-time caps"
        );
        assert_eq!(
            time("target=127.0.0.1&time=60", Some("4")),
            Ok(4.0 - OVERHEAD_S),
            "the scrape timeout caps"
        );
        assert_eq!(time("target=127.0.0.1", None), Ok(DEFAULT_TIME_S));
        assert!(matches!(
            time("target=127.0.0.1", Some("1")),
            Err(Refusal::BadRequest(_))
        ));
        assert!(matches!(
            time("target=127.0.0.1", Some("soon")),
            Err(Refusal::BadRequest(_))
        ));
    }

    #[test]
    fn refusals() {
        let bad = |q: &str| match ask(q, None, &policy()) {
            Err(Refusal::BadRequest(m)) => m,
            other => panic!("{q}: expected 400, got {other:?}"),
        };
        assert!(bad("").contains("missing parameter 'target'"));
        assert!(bad("target=127.0.0.1&port=0").contains("port"));
        assert!(bad("target=127.0.0.1&port=70000").contains("port"));
        assert!(bad("target=127.0.0.1&time=-1").contains("time"));
        assert!(bad("target=127.0.0.1&time=nan").contains("time"));
        assert!(bad("target=127.0.0.1&parallel=x").contains("parallel"));
        assert!(bad("target=127.0.0.1&reverse=maybe").contains("reverse"));
        assert!(bad("target=127.0.0.1&link=wide").contains("wide"));
        assert!(bad("target=127.0.0.1&module=x").contains("unknown parameter"));
        assert!(bad("target=127.0.0.1&tool=iperf").contains("invalid tool 'iperf'"));
        assert!(bad("target=127.0.0.1&tool=").contains("invalid tool ''"));
        assert!(bad("target=127.0.0.1&target=127.0.0.1").contains("twice"));
        assert!(bad("target=a%20b").contains("invalid target"));
        // Names are checked once resolved, on the probe's thread.
        let target = ask("target=LocalHost", None, &policy())
            .expect("a name")
            .target;
        assert_eq!(target, Target::Name("localhost".into()));
        match resolved(&target, &policy().allow) {
            Ok(ip) => assert!(ip.is_loopback(), "{ip}"),
            // localhost may resolve to ::1 first, outside this policy's 127.0.0.1/32.
            Err(r) => assert!(matches!(r, Refusal::Forbidden(_)), "{r:?}"),
        }
        for q in ["target=127.0.0.2", "target=198.18.0.1", "target=%3A%3A1"] {
            assert!(
                matches!(ask(q, None, &policy()), Err(Refusal::Forbidden(_))),
                "{q} must be refused"
            );
        }
    }
}
