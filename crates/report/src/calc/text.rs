//! `plumb calc`'s text: the path as given, the predicted rate and each
//! limit beside it, the bandwidth-delay product and the window that fills
//! it, and what else the flags asked about.

use plumb_model::units::{sig, thousands};
use plumb_model::{ethernet, tcp, Bytes, Limit, PathInput, Prediction, Rate, Rtt};

use super::query::{QueuePrediction, RttSource};

/// The text `plumb calc` prints for a path and its prediction (the RTT
/// from `source`; `frame` for the frame rate at line rate).
pub fn text(
    i: &PathInput,
    p: &Prediction,
    source: Option<&RttSource>,
    frame: Option<Bytes>,
) -> String {
    let mut s = path_text(i, source);
    if let Some((rate, limit)) = p.predicted {
        s += &limits_text(i, p, rate, limit);
    }
    s += &bdp_text(i, p);
    s += &notes_text(i, p, source, frame);
    s
}

/// The first line: the path as given, and its framing.
fn path_text(i: &PathInput, source: Option<&RttSource>) -> String {
    let mut s = String::new();
    let f = i.framing;
    let mut path = Vec::new();
    if let Some(r) = i.rate {
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
    if let Some(w) = i.window {
        path.push(format!("window {}", w.human()));
    }
    if let Some(l) = i.loss {
        path.push(format!("loss {}%", sig(l.probability() * 100.0, 3)));
    }
    s += &format!("Path: {} ({})\n\n", path.join(", "), f.describe());
    s
}

/// The predicted rate per stream and each limit beside it, the binding one
/// marked.
fn limits_text(i: &PathInput, p: &Prediction, rate: Rate, limit: Limit) -> String {
    let mut s = String::new();
    let f = i.framing;
    let why = match limit {
        Limit::Window => "limited by the window",
        Limit::Loss => "limited by packet loss",
        Limit::Link => "limited by the link",
    };
    s += &format!("Predicted: {} per stream, {why}.\n", rate.human());
    let mark = |l: Limit| if l == limit { "  <- binds" } else { "" };
    if let (Some(r), Some(w), Some(rtt)) = (p.window_limited, i.window, i.rtt) {
        s += &format!(
            "  window limit   {:<44}{:>14}{}\n",
            format!("{} per {} round trip", w.human(), rtt.human()),
            r.human(),
            mark(Limit::Window)
        );
    }
    if let (Some(r), Some(l), Some(rtt)) = (p.loss_limited, i.loss, i.rtt) {
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
    if let (Some(r), Some(rate)) = (p.link_goodput, i.rate) {
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
    if i.loss.is_none() && i.rtt.is_some() {
        s += "  loss limit     not computed (no --loss given)\n";
    }
    if i.loss.is_some() {
        s += "  (The Mathis bound models loss-based congestion control such as Reno and CUBIC; BBR does not slow down for random loss.)\n";
    }
    s += "\n";
    s
}

/// The bandwidth-delay product and the window (or streams) that fill it.
fn bdp_text(i: &PathInput, p: &Prediction) -> String {
    let mut s = String::new();
    if let (Some(bdp), Some(rate), Some(rtt)) = (p.bdp, i.rate, i.rtt) {
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
            match (p.streams_needed, i.window, i.loss) {
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
fn notes_text(
    i: &PathInput,
    p: &Prediction,
    source: Option<&RttSource>,
    frame: Option<Bytes>,
) -> String {
    let mut s = String::new();
    if let Some(w) = i.window {
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
    if let (Some(rtt), None, None) = (i.rtt, i.rate, i.window) {
        if !matches!(source, Some(RttSource::Distance { .. })) {
            s += &format!("RTT {}.\n", rtt.human());
        }
    }
    if let (Some(frame), Some(rate)) = (frame, i.rate) {
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
    if let (Some(size), Some(secs), Some((rate, _))) = (i.size, p.transfer_secs, p.predicted) {
        let t = Rtt::from_secs(secs).map_or_else(|| format!("{secs} s"), Rtt::human);
        s += &format!("Moving {} at {} takes {t}.\n", size.human(), rate.human());
    }
    s
}

/// The delay a full queue adds, and the loaded round trip.
pub fn queue_text(q: &QueuePrediction) -> String {
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
