//! The link and target figures of one answer ([`Figures`], a type of the
//! record): computed once, from the evidence and then from the primary
//! finding, so that the summary, the windows and streams needed and every
//! "expect about" agree.
//!
//! They are defined as `plumb calc` defines them (`plumb_model::Prediction`):
//! the window needed is the bandwidth-delay product, line rate × RTT, and
//! the streams needed are the line rate over one stream's rate, so the
//! model, a test and `calc` give one answer for one path.

use plumb_model::tcp;
use plumb_model::{Rate, Rtt};
use plumb_record::diagnosis::{Figures, Finding, Limit};

use crate::evidence::{Evidence, LinkSource};
use crate::payload::{efficiency, udp_efficiency, UDP_PAYLOAD};

/// The figures that do not depend on which limit wins.
pub(crate) fn base(ev: &Evidence, ts: bool) -> Figures {
    let full = if ts { 1448 } else { 1460 };
    let payload = ev.mss().unwrap_or(full).max(full);
    let rtt_s = ev.rtt_s();
    let goodput = ev.link.as_ref().map(|l| match (&l.source, ev.udp) {
        // The best interval is already goodput (and only a lower bound).
        (LinkSource::BestInterval, _) => l.bps,
        (_, Some(u)) => l.bps * udp_efficiency(u.payload.unwrap_or(UDP_PAYLOAD)),
        _ => l.bps * efficiency(payload, ts),
    });
    let lower_bound = ev
        .link
        .as_ref()
        .is_some_and(|l| matches!(l.source, LinkSource::BestInterval));
    let in_flight = |bps: Option<f64>| {
        bps.filter(|_| !lower_bound).zip(rtt_s).and_then(|(b, r)| {
            Some(tcp::window_needed(Rate::from_bps(b)?, Rtt::from_secs(r)?).get())
        })
    };
    let link_bps = ev.link.as_ref().map(|l| l.bps);
    let window_needed = in_flight(link_bps);
    Figures {
        link_bps,
        goodput_bps: goodput,
        goodput_is_lower_bound: lower_bound,
        segment_payload: payload,
        rtt_s,
        window_needed_bytes: window_needed,
        window_goodput_bytes: in_flight(goodput),
        buffer_bytes: window_needed.map(|w| (2 * w).max(4 << 20)),
        ..Figures::default()
    }
}

/// The figures that depend on the answer: what one stream gets under
/// the binding limits, and what to expect once the primary is gone.
/// `findings` are ranked, the primary first; `n` is the number of
/// streams.
pub(crate) fn settle(fig: &mut Figures, findings: &[Finding], measured: f64, n: f64) {
    let Some(p) = findings.first() else { return };
    let binding_rates: Vec<f64> = findings
        .iter()
        .filter(|f| f.explains)
        .filter_map(|f| f.predicted_bps)
        .collect();
    let today = binding_rates
        .iter()
        .copied()
        .fold(if p.explains { f64::INFINITY } else { measured }, f64::min);
    let today = if today.is_finite() { today } else { measured };
    fig.per_stream_bps = Some(today / n).filter(|x| *x > 0.0);
    let next = findings[1..]
        .iter()
        .filter(|f| f.explains && f.limit != Limit::Link)
        .filter_map(|f| f.predicted_bps)
        .fold(f64::INFINITY, f64::min);
    let known_link = fig.goodput_bps.filter(|_| !fig.goodput_is_lower_bound);
    fig.expect_bps = match (known_link, next.is_finite()) {
        _ if fig.goodput_is_lower_bound => None,
        (Some(g), true) => Some(g.min(next)),
        (Some(g), false) => Some(g),
        (None, true) => Some(next),
        (None, false) => None,
    };
    fig.streams_needed = fig.streams(n);
}

#[cfg(test)]
mod tests {
    use plumb_model::units::thousands;

    use crate::human::mbps;
    use crate::testing::*;

    /// The figures of one answer agree with each other and with `plumb
    /// calc`: the window needed is the line rate over one round trip (the
    /// goodput's share of it beside), the streams needed reach the line
    /// rate at today's rate and one fewer would not, and the linux fix
    /// quotes the same windows.
    #[test]
    fn one_set_of_figures() {
        let d = diagnose(&ev(9.2e6, stream(17_520, 15_000, 5.0)));
        let f = &d.figures;
        let g = f.goodput_bps.expect("goodput");
        let line = f.link_bps.expect("line rate");
        assert_eq!(d.link_bps, Some(g));
        let w = f.window_needed_bytes.expect("window needed") as f64;
        assert!((w * 8.0 / 0.015 - line).abs() <= 8.0 / 0.015, "{w}");
        let wg = f.window_goodput_bytes.expect("goodput in flight") as f64;
        assert!((wg * 8.0 / 0.015 - g).abs() <= 8.0 / 0.015, "{wg}");
        let (n, p) = (
            f.streams_needed.expect("n") as f64,
            f.per_stream_bps.expect("p"),
        );
        assert!(
            n * p >= line && (n - 1.0) * p < line,
            "{n} x {p} against {line}"
        );
        assert_eq!(f.expect_bps, Some(g));
        let linux = d.fixes.iter().find(|x| x.os == "linux").expect("linux");
        assert!(linux.note.contains(&thousands(w as u64)), "{}", linux.note);
        assert!(linux.note.contains(&thousands(wg as u64)), "{}", linux.note);
        assert!(d.summary.contains(&mbps(g)), "{}", d.summary);
    }
}
