//! The path-MTU rule: segments far below what Ethernet carries. The link
//! full of small segments is what it predicts.

use plumb_model::units::sig;

use super::context::Context;
use crate::evidence::LinkSource;
use crate::finding::{line, Limit};
use crate::human::mbps;
use crate::payload::efficiency;
use crate::seen::Seen;
use crate::tolerance::TOLERANCE;

/// An MSS under 1200 B on a link whose rate is stated or read from the
/// interface.
pub(crate) fn seen(cx: &Context) -> Option<Seen> {
    let (m, l) = cx.mss.zip(cx.stated_link())?;
    if m >= 1200 {
        return None;
    }
    let (ts, full) = (cx.ts, cx.full);
    let predicted = l.bps * efficiency(m, ts);
    let mut s = Seen::new(
        Limit::PathMtu,
        "a small MSS",
        format!(
            "{m}-byte segments put {}% of the wire into payload, against {}% at {full} B; the link carries at most {} this way",
            sig(efficiency(m, ts) * 100.0, 3),
            sig(efficiency(full, ts) * 100.0, 3),
            mbps(predicted)
        ),
    )
    .model(predicted, TOLERANCE);
    if matches!(l.source, LinkSource::Interface(_)) {
        s.missing
            .push("the link rate (the interface's speed was used)".into());
    }
    s.evidence = vec![line("segment payload (TCP_INFO snd_mss)", m as f64, "B")];
    Some(s)
}

#[cfg(test)]
mod tests {
    use crate::testing::*;

    #[test]
    fn small_mss_is_path_mtu() {
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.mss = Some(524);
        let d = diagnose(&ev(840e6, s.clone()));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::PathMtu), "{:?}", d.findings);
        // The same MSS with 9 Mbit/s measured: it does not explain it.
        let d = diagnose(&ev(9e6, s));
        consistent(&d);
        assert_ne!(d.limit, Some(Limit::PathMtu), "{:?}", d.findings);
        assert_eq!(status(&d, Limit::PathMtu), Some(Status::NotBinding));
    }
}
