//! `plumb calc`: the model's arithmetic for one path, explained.
//!
//! Flags become a [`PathInput`]; [`Prediction::of`] does every computation; this
//! module only words the answer (text, or `--json`'s typed object in `output`).
//! Flags not given stay unknown: the answer leaves out, or sets to null, what
//! depends on them.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use plumb_model::latency::{self, QueueSize};
use plumb_model::units::{sig, thousands};
use plumb_model::{distance, ethernet, tcp};
use plumb_model::{Bytes, Distance, Framing, Limit, LossRate, PathInput, Prediction, Rate, Rtt};

use crate::usage::usage_error;

mod output;

/// Flags of `plumb calc`.
#[derive(Debug, Args)]
#[command(
    after_help = "Example (the backup scenario, whose old hosts send no TCP timestamps):\n  plumb calc --rate 1Gbit --rtt 15ms --window 17520 --tcp-timestamps off"
)]
pub struct CalcArgs {
    /// Line rate of the bottleneck link: 1G, 1Gbit, 100Mbps, 125MB/s (decimal prefixes)
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::rate)]
    pub rate: Option<Rate>,
    /// Round-trip time: 15ms, 0.1s, 250us (a bare number is ms)
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::rtt, conflicts_with = "distance")]
    pub rtt: Option<Rtt>,
    /// One-way path length, for the RTT: 1000km, 600mi (a bare number is km)
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::distance)]
    pub distance: Option<Distance>,
    /// Largest window of one stream: 17520, 64K (=65536), 64KiB, 1.25MB (=1250000)
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::bytes)]
    pub window: Option<Bytes>,
    /// Packet loss rate, for the Mathis bound: 0.01%, 1e-4
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::loss)]
    pub loss: Option<LossRate>,
    /// TCP MSS (sets the MTU to MSS + IP + TCP headers)
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::bytes, conflicts_with = "mtu")]
    pub mss: Option<Bytes>,
    /// IP MTU [default: 1500]
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::bytes)]
    pub mtu: Option<Bytes>,
    /// IPv6 headers (40 B) instead of IPv4 (20 B)
    #[arg(long)]
    pub ipv6: bool,
    /// TCP timestamps on every segment (12 B of options): on, Linux's default (1448 B of payload at MTU 1500), or off (1460 B) [default: on]
    #[arg(long, value_name = "on|off", value_parser = crate::args::on_off)]
    pub tcp_timestamps: Option<bool>,
    /// The same as --tcp-timestamps on
    #[arg(long, hide = true, conflicts_with = "tcp_timestamps")]
    pub timestamps: bool,
    /// An 802.1Q VLAN tag on every frame (4 B)
    #[arg(long)]
    pub vlan: bool,
    /// Ethernet frame size for the frame rate at line rate: 64, 1518
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::bytes, requires = "rate")]
    pub frame: Option<Bytes>,
    /// Data to move, for the transfer time: 500GB, 1TB
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::bytes)]
    pub size: Option<Bytes>,
    /// Bottleneck queue, for the delay it adds when full: 2MB, 100ms, 1.5BDP (as plumb lab --queue)
    #[arg(long, allow_hyphen_values = true, requires = "rate", value_parser = crate::args::valid(QueueSize::parse))]
    pub queue: Option<String>,
    /// One JSON object instead of text
    #[arg(long)]
    pub json: bool,
}

/// The queue's delay when full and the loaded round trip, seconds.
struct QueuePrediction {
    delay: f64,
    loaded_rtt: Option<f64>,
}

/// Where the RTT came from.
enum RttSource {
    Given,
    Distance { d: Distance, floor: Rtt },
}

/// Runs `plumb calc`.
pub fn run(a: &CalcArgs) -> anyhow::Result<ExitCode> {
    if a.rate.is_none()
        && a.rtt.is_none()
        && a.distance.is_none()
        && a.window.is_none()
        && a.loss.is_none()
        && a.queue.is_none()
    {
        return Ok(usage_error(
            "calc needs something to compute: give at least --rate, --rtt or --distance, --window or --loss \
             (e.g. plumb calc --rate 1Gbit --rtt 15ms --window 17520)",
        ));
    }
    let framing = match framing(a) {
        Ok(f) => f,
        Err(msg) => return Ok(usage_error(msg)),
    };
    if let Some(f) = a.frame {
        if !(64..=65_535).contains(&f.get()) {
            return Ok(usage_error(format!(
                "invalid frame size '{}': an Ethernet frame is 64 to 65535 bytes (header to FCS)",
                f.get()
            )));
        }
    }
    let (rtt, source) = match (a.rtt, a.distance) {
        (Some(r), _) => (Some(r), Some(RttSource::Given)),
        (None, Some(d)) => (
            Some(distance::typical_rtt(d)),
            Some(RttSource::Distance {
                d,
                floor: distance::fibre_rtt(d),
            }),
        ),
        (None, None) => (None, None),
    };
    let input = PathInput {
        rate: a.rate,
        rtt,
        window: a.window,
        loss: a.loss,
        framing,
        size: a.size,
    };
    let p = Prediction::of(&input);
    let queue = match (&a.queue, a.rate) {
        (Some(q), Some(rate)) => {
            let size = match QueueSize::parse(q) {
                Ok(s) => s,
                Err(msg) => return Ok(usage_error(msg)),
            };
            let Some(delay) = latency::queue_delay_secs(size, rate, rtt) else {
                return Ok(usage_error(format!(
                    "invalid queue '{q}': a BDP multiple needs --rtt or --distance"
                )));
            };
            Some(QueuePrediction {
                delay,
                loaded_rtt: rtt.map(|r| latency::loaded_rtt_secs(r, delay)),
            })
        }
        _ => None,
    };
    let mut out = std::io::stdout().lock();
    if a.json {
        let v = output::CalcOutput::of(a, &input, &p, source.as_ref(), queue.as_ref());
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        write!(out, "{}", to_text(a, &input, &p, source.as_ref()))?;
        if let Some(q) = &queue {
            write!(out, "{}", queue_text(q))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn framing(a: &CalcArgs) -> Result<Framing, String> {
    // The header every command assumes unless told: Linux's (timestamps on).
    let timestamps = a.timestamps || a.tcp_timestamps.unwrap_or(Framing::default().timestamps);
    let f = match (a.mss, a.mtu) {
        (Some(mss), _) => Framing::with_mss(mss, a.ipv6, timestamps, a.vlan),
        (None, mtu) => Framing {
            mtu: mtu.map_or(1500, Bytes::get),
            ipv6: a.ipv6,
            timestamps,
            vlan: a.vlan,
        },
    };
    let min_mtu = if f.ipv6 { 1280 } else { 68 };
    let opts = if f.timestamps {
        ethernet::TCP_TIMESTAMPS
    } else {
        0
    };
    if f.mtu < min_mtu || f.mtu <= f.ip_tcp_headers() + opts {
        return Err(format!(
            "invalid MTU {} B: {} needs at least {min_mtu} B and room for TCP payload after {} B of headers",
            f.mtu,
            if f.ipv6 { "IPv6" } else { "IPv4" },
            f.ip_tcp_headers() + opts
        ));
    }
    if f.mtu > 65_535 {
        return Err(format!(
            "invalid MTU {} B: an IP packet is at most 65535 B",
            f.mtu
        ));
    }
    Ok(f)
}

fn to_text(a: &CalcArgs, i: &PathInput, p: &Prediction, source: Option<&RttSource>) -> String {
    let mut s = path_text(a, i, source);
    if let Some((rate, limit)) = p.predicted {
        s += &limits_text(a, i, p, rate, limit);
    }
    s += &bdp_text(a, i, p);
    s += &notes_text(a, i, p, source);
    s
}

/// The first line: the path as given, and its framing.
fn path_text(a: &CalcArgs, i: &PathInput, source: Option<&RttSource>) -> String {
    let mut s = String::new();
    let f = i.framing;
    let mut path = Vec::new();
    if let Some(r) = a.rate {
        path.push(format!("{} link", r.human()));
    }
    match (i.rtt, source) {
        (Some(rtt), Some(RttSource::Distance { d, floor })) => path.push(format!(
            "RTT {} (typical for {} km; light in fibre alone needs {})",
            rtt.human(),
            sig(d.km(), 6),
            floor.human()
        )),
        (Some(rtt), _) => path.push(format!("RTT {}", rtt.human())),
        _ => {}
    }
    if let Some(w) = a.window {
        path.push(format!("window {}", w.human()));
    }
    if let Some(l) = a.loss {
        path.push(format!("loss {}%", sig(l.probability() * 100.0, 3)));
    }
    s += &format!("Path: {} ({})\n\n", path.join(", "), f.describe());
    s
}

/// The predicted rate per stream and each limit beside it, the binding one
/// marked.
fn limits_text(a: &CalcArgs, i: &PathInput, p: &Prediction, rate: Rate, limit: Limit) -> String {
    let mut s = String::new();
    let f = i.framing;
    let why = match limit {
        Limit::Window => "limited by the window",
        Limit::Loss => "limited by packet loss",
        Limit::Link => "limited by the link",
    };
    s += &format!("Predicted: {} per stream, {why}.\n", rate.human());
    let mark = |l: Limit| if l == limit { "  <- binds" } else { "" };
    if let (Some(r), Some(w), Some(rtt)) = (p.window_limited, a.window, i.rtt) {
        s += &format!(
            "  window limit   {:<44}{:>14}{}\n",
            format!("{} per {} round trip", w.human(), rtt.human()),
            r.human(),
            mark(Limit::Window)
        );
    }
    if let (Some(r), Some(l), Some(rtt)) = (p.loss_limited, a.loss, i.rtt) {
        s += &format!(
            "  loss limit     {:<44}{:>14}{}\n",
            format!(
                "Mathis: {} B / {} x 1.22 / sqrt({})",
                f.payload().get(),
                rtt.human(),
                sig(l.probability(), 3)
            ),
            r.human(),
            mark(Limit::Loss)
        );
    }
    if let (Some(r), Some(rate)) = (p.link_goodput, a.rate) {
        s += &format!(
            "  link goodput   {:<44}{:>14}{}\n",
            format!(
                "{} x {}/{} B ({}%)",
                rate.human(),
                f.payload().get(),
                f.wire_bytes(),
                sig(f.efficiency() * 100.0, 3)
            ),
            r.human(),
            mark(Limit::Link)
        );
    }
    if a.loss.is_none() && i.rtt.is_some() {
        s += "  loss limit     not computed (no --loss given)\n";
    }
    if a.loss.is_some() {
        s += "  (The Mathis bound models loss-based congestion control such as Reno and CUBIC; BBR does not slow down for random loss.)\n";
    }
    s += "\n";
    s
}

/// The bandwidth-delay product and the window (or streams) that fill it.
fn bdp_text(a: &CalcArgs, i: &PathInput, p: &Prediction) -> String {
    let mut s = String::new();
    if let (Some(bdp), Some(rate), Some(rtt)) = (p.bdp, a.rate, i.rtt) {
        s += &format!(
            "Bandwidth-delay product: {} x {} = {}, i.e. {} in flight.\n",
            rate.human(),
            rtt.human(),
            sig_bits(bdp.bits),
            bdp.ceil_bytes().human()
        );
        if let Some(need) = p.window_needed {
            let scaling = if tcp::needs_scaling(need) {
                match tcp::window_shift(need) {
                    Some(sh) => format!(
                        ",\nabove 65,535 B, so it needs RFC 7323 window scaling (shift {sh} or more)"
                    ),
                    None => ",\nmore than TCP can advertise even with window scaling".to_string(),
                }
            } else {
                String::new()
            };
            s += &format!(
                "To fill the link one stream needs a window of at least {}{scaling}",
                need.human()
            );
            match (p.streams_needed, a.window, a.loss) {
                (Some(n), Some(w), None) if n > 1 => {
                    s += &format!(";\nor {} parallel streams of {} each.\n", thousands(n), w.human())
                }
                (Some(n), _, Some(_)) if n > 1 => s += &format!(
                    ";\nwith this loss rate one stream cannot fill it whatever the window: it takes {} parallel streams.\n",
                    thousands(n)
                ),
                _ => s += ".\n",
            }
        }
        if let (Some(w), Some(g)) = (p.window_limited, p.link_goodput) {
            if w < g {
                s += &format!(
                    "The window uses {}% of the link's goodput.\n",
                    sig(w.bps() / g.bps() * 100.0, 3)
                );
            }
        }
    }
    s
}

/// What else the flags ask about: a window's scaling, the RTT alone, the
/// frame rate, a transfer's time.
fn notes_text(a: &CalcArgs, i: &PathInput, p: &Prediction, source: Option<&RttSource>) -> String {
    let mut s = String::new();
    if let Some(w) = a.window {
        if w > tcp::MAX_SCALED_WINDOW {
            s += "Note: that window is larger than TCP can advertise (RFC 7323 caps it near 2^30 B).\n";
        } else if p.bdp.is_none() && tcp::needs_scaling(w) {
            s += &format!(
                "A window of {} needs RFC 7323 window scaling (shift {}).\n",
                w.human(),
                tcp::window_shift(w).unwrap_or(tcp::MAX_WINDOW_SHIFT)
            );
        }
    }
    if let (Some(rtt), None, None) = (i.rtt, a.rate, a.window) {
        if !matches!(source, Some(RttSource::Distance { .. })) {
            s += &format!("RTT {}.\n", rtt.human());
        }
    }
    if let (Some(frame), Some(rate)) = (a.frame, a.rate) {
        let (lo, hi) = ethernet::frame_rate_band(rate, frame);
        s += &format!(
            "{}-byte frames at {}: {} frames/s (±100 ppm clock tolerance: {} – {}).\n",
            frame.get(),
            rate.human(),
            thousands(ethernet::frame_rate(rate, frame).floor() as u64),
            thousands(lo.floor() as u64),
            thousands(hi.floor() as u64)
        );
    }
    if let (Some(size), Some(secs), Some((rate, _))) = (a.size, p.transfer_secs, p.predicted) {
        let t = Rtt::from_secs(secs).map_or_else(|| format!("{secs} s"), Rtt::human);
        s += &format!("Moving {} at {} takes {t}.\n", size.human(), rate.human());
    }
    s
}

fn queue_text(q: &QueuePrediction) -> String {
    let mut s = format!(
        "A full bottleneck queue adds {} ms to every round trip through it",
        sig(q.delay * 1e3, 4)
    );
    match q.loaded_rtt {
        Some(l) => {
            s += &format!(
                ";\na flow that keeps it full (loss-based TCP such as CUBIC) sees a loaded RTT of {} ms.\n",
                sig(l * 1e3, 4)
            )
        }
        None => s += ".\n",
    }
    s
}

fn sig_bits(bits: f64) -> String {
    let r = Rate::from_bps(bits).map(Rate::human).unwrap_or_default();
    r.trim_end_matches("/s").to_string()
}
