//! What every rule reads besides its own evidence: the RTT, the MSS, the
//! share of the test each TCP limit counter covers, the link's goodput,
//! worked out once per diagnosis from the [`Evidence`].

use crate::evidence::{Evidence, LinkRate, LinkSource};
use crate::finding::line;
use crate::path::PathFull;
use plumb_record::diagnosis::Figures;
use plumb_record::diagnosis::{EvidenceKind, EvidenceLine};

/// One test's evidence with the figures the rules share.
pub(crate) struct Context<'a> {
    pub(crate) ev: &'a Evidence,
    /// The RTT to reason with, seconds.
    pub(crate) rtt: Option<f64>,
    /// Payload bytes per segment, when TCP said.
    pub(crate) mss: Option<u64>,
    /// The sender sends TCP timestamps (Linux does unless told not to).
    pub(crate) ts: bool,
    /// Payload bytes of a full-size segment: 1448 with timestamps, else 1460.
    pub(crate) full: u64,
    /// The figures that do not depend on which limit wins.
    pub(crate) figures: Figures,
    /// Receiver-measured goodput, bit/s.
    pub(crate) measured: f64,
    /// The sender's TCP limit counters were recorded.
    pub(crate) counters_known: bool,
    /// Share of the test the sender had data outstanding.
    pub(crate) busy: Option<f64>,
    /// Share of the test limited by the receive window.
    pub(crate) rwnd: Option<f64>,
    /// Share of the test limited by the send buffer.
    pub(crate) sndbuf: Option<f64>,
    /// The loss probability, given or from the retransmissions.
    pub(crate) loss: Option<f64>,
    /// Sending streams, at least one.
    pub(crate) n: f64,
    /// The path's bottleneck, when it was inferred (no link rate given).
    pub(crate) path: Option<PathFull>,
}

impl<'a> Context<'a> {
    pub(crate) fn new(ev: &'a Evidence) -> Context<'a> {
        let ts = timestamps(ev);
        Context {
            ev,
            rtt: ev.rtt_s(),
            mss: ev.mss(),
            ts,
            full: if ts { 1448 } else { 1460 },
            figures: crate::figures::base(ev, ts),
            measured: ev.measured_bps,
            counters_known: ev.streams.iter().any(|s| s.busy_us.is_some()),
            busy: ev.fraction(|s| s.busy_us),
            rwnd: ev.fraction(|s| s.rwnd_limited_us),
            sndbuf: ev.fraction(|s| s.sndbuf_limited_us),
            loss: ev.loss_rate(),
            n: ev.streams.len().max(1) as f64,
            path: None,
        }
    }

    /// The link's goodput, bit/s, when the link rate is known.
    pub(crate) fn link_goodput(&self) -> Option<f64> {
        self.figures.goodput_bps
    }

    /// The link, unless its rate is only the test's best interval (which is
    /// the measurement itself and predicts nothing).
    pub(crate) fn stated_link(&self) -> Option<&'a LinkRate> {
        self.ev
            .link
            .as_ref()
            .filter(|l| !matches!(l.source, LinkSource::BestInterval))
    }

    /// The RTT lines a finding that reasons with the RTT shows.
    pub(crate) fn rtt_lines(&self, v: &mut Vec<EvidenceLine>) {
        rtt_lines(self.ev, v);
    }

    /// Notes that the minimum RTT stood in for the smoothed one.
    pub(crate) fn rtt_missing(&self, m: &mut Vec<String>) {
        if !self
            .ev
            .streams
            .iter()
            .any(|s| s.srtt_us.is_some_and(|r| r > 0))
        {
            m.push("the smoothed RTT (the minimum was used)".into());
        }
    }

    /// Notes that the sender's TCP limit counters were not recorded.
    pub(crate) fn counters_missing(&self, m: &mut Vec<String>) {
        if !self.counters_known {
            m.push("the sender's TCP limit counters".to_string());
        }
    }
}

/// Whether the sender sends TCP timestamps: as given, else as its sysctl
/// says, else on (Linux's default, the model's default header), and a
/// full-size segment then carries 1448 B.
pub(crate) fn timestamps(ev: &Evidence) -> bool {
    ev.tcp_timestamps.unwrap_or_else(|| {
        ev.sysctl_sender
            .get("net.ipv4.tcp_timestamps")
            .is_none_or(|v| v.trim() != "0")
    })
}

/// The smoothed and minimum RTT as evidence lines, those known.
pub(crate) fn rtt_lines(ev: &Evidence, v: &mut Vec<EvidenceLine>) {
    if let Some(r) = ev.rtt_s() {
        v.push(line("smoothed RTT (TCP)", r * 1e3, "ms").stating(EvidenceKind::Rtt));
    }
    if let Some(m) = ev.min_rtt_s() {
        v.push(line("minimum RTT (TCP)", m * 1e3, "ms").stating(EvidenceKind::Rtt));
    }
}
