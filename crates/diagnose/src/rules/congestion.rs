//! The congestion rule: when nothing else accounts for the rate, no loss,
//! below the link: the congestion window never grew (slow start in a short
//! test). It runs after the other rules are weighed.

use super::context::Context;
use crate::finding::line;
use crate::human::{bytes, mbps, ms};
use crate::seen::Seen;
use crate::tolerance::TOLERANCE;
use plumb_record::diagnosis::Limit;

/// The largest congestion window per round trip, when the loss is quiet
/// (under 0.01 %) and the rate is below the link's goodput. The caller
/// asks only when no other finding explains the rate or binds.
pub(crate) fn seen(cx: &Context) -> Option<Seen> {
    let measured = cx.measured;
    let quiet_loss = cx.loss.is_none_or(|p| p < 1e-4);
    let below_link = cx
        .link_goodput()
        .is_some_and(|g| measured < g / (1.0 + TOLERANCE));
    if !(quiet_loss && below_link) {
        return None;
    }
    let cwnd: u64 = cx.ev.streams.iter().filter_map(|s| s.max_cwnd).sum();
    let r = cx.rtt.filter(|_| cwnd > 0)?;
    let predicted = cwnd as f64 * 8.0 / r;
    let mut e = vec![line("largest congestion window", cwnd as f64, "B")];
    cx.rtt_lines(&mut e);
    let mut s = Seen::new(
        Limit::Congestion,
        "congestion control",
        format!(
            "the congestion window stayed at {} without loss, {} per {} round trip; a longer test lets slow start finish",
            bytes(cwnd),
            mbps(predicted),
            ms(r)
        ),
    )
    .model(predicted, TOLERANCE);
    cx.rtt_missing(&mut s.missing);
    s.evidence = e;
    Some(s)
}

#[cfg(test)]
mod tests {
    use crate::testing::*;

    #[test]
    fn short_test_in_slow_start_is_congestion() {
        let mut s = stream(8 << 20, 15_000, 1.0);
        s.max_cwnd = Some(300_000);
        let mut e = ev(150e6, s);
        e.duration_s = 1.0;
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Congestion), "{:?}", d.findings);
    }
}
