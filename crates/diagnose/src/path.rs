//! The path's bottleneck, inferred from what the sender sees when no link
//! rate was given: a transfer that keeps a standing queue at the bottleneck
//! fills its path, whatever the host's own interface could carry.
//!
//! The evidence is the sender's own: its smoothed RTT against its minimum
//! (a standing queue exists only where a link is busy all the time), the
//! share of the test it was limited by the congestion window (busy, and
//! limited neither by the receive window nor by the send buffer), whether
//! an application cap or idle time held it, and the rate it delivered. A
//! rate near a common link's TCP goodput (10/100 Mbit/s, 1/2.5/10/25/40/100
//! Gbit/s, with the Ethernet framing of [`crate::payload::efficiency`]) says
//! which link that probably is; it is never evidence by itself: a lossy or
//! window-limited flow with no queue behind it is not a full link, whatever
//! its rate. `docs/diagnosis.md` gives the reasoning and the tests.

use crate::evidence::{Cpu, Evidence, LinkRate, LinkSource};
use crate::payload::efficiency;
use crate::tolerance::BINDING_SHARE;
use plumb_record::diagnosis::{Finding, Limit, Status};

/// Common link rates, bit/s on the wire.
pub const COMMON_LINKS: [f64; 8] = [10e6, 100e6, 1e9, 2.5e9, 10e9, 25e9, 40e9, 100e9];

/// How close a rate must be to a common link's TCP goodput to be said to be
/// that link: from 5 % below (a full link's goodput in the lab's 4 s tests
/// measured 0.96–1.00 of it, slow start included) to 2 % above.
pub const COMMON_BELOW: f64 = 0.95;
/// See [`COMMON_BELOW`].
pub const COMMON_ABOVE: f64 = 1.02;

/// The least standing queue that counts, as a share of the minimum RTT,
/// and never under [`QUEUE_MIN_S`]: a window- or loss-limited flow keeps
/// the smoothed RTT within a few percent of the minimum (the recorded lab
/// runs, `tests/fixtures/lab-*.json`: 0–3 %), a full path 8 % and more.
pub const QUEUE_SHARE: f64 = 0.05;
/// The least standing queue that counts, seconds: below it timer and
/// scheduling noise on a busy host is as large as the queue.
pub const QUEUE_MIN_S: f64 = 0.5e-3;
/// A standing queue this share of the minimum RTT or more counts fully.
pub const QUEUE_FULL_SHARE: f64 = 0.10;
/// A standing queue this share of the minimum RTT or more is the path's
/// even when the receive window or send buffer counted time binding: a
/// window that only fills the path builds no queue, and delayed or
/// CPU-starved ACKs inflate the RTT far less (the recorded lab runs: 14 %
/// for a 64 KiB send buffer under bbr and for a receiver starved of CPU).
pub const QUEUE_BIG_SHARE: f64 = 0.5;
/// An end whose data thread was on a CPU or waiting for one this share of
/// the test (percent) may be what holds the transfer: its slow ACKs
/// inflate the RTT as a queue does, so no path is inferred (the same bar
/// `plumb-live` uses for a runnable thread).
pub const CPU_RUNNABLE_PCT: f64 = 50.0;
/// How far BBR's bandwidth estimate may stray from the measured rate and
/// still corroborate it: BBR probes 25 % above its estimate one round trip
/// in eight, so its estimate runs a little above what it delivers.
pub const BBR_AGREES: f64 = 0.10;
/// The share of the test the sender must have had data in flight: below
/// it the application, not the path, left the sender idle.
pub const BUSY_SHARE: f64 = 0.8;
/// The share of the sender's samples with the receiver's window shrunk
/// (see [`crate::evidence::StreamTcp::window_shrank_share`]) at which a
/// binding receive window is the receiving application's, not a queue's:
/// a receiver that keeps up advertises its whole buffer, while one that
/// reads 4 KiB every 10 ms through 8 KiB showed under 3/4 of it in 8 of 15
/// samples (measured on loopback with `ss -ti`).
pub const SHRANK_SHARE: f64 = 0.25;

/// What the inference found.
#[derive(Debug, Clone, PartialEq)]
pub struct PathFull {
    /// The path's rate, bit/s on the wire: the common link's when the rate
    /// is near its goodput, else the measured rate's.
    pub link_bps: f64,
    /// The common link the rate matches, bit/s, when one does.
    pub common_bps: Option<f64>,
    /// The standing queue: smoothed RTT minus the minimum, seconds.
    pub queue_s: f64,
    /// The minimum RTT, seconds.
    pub min_rtt_s: f64,
    /// The share of the test the congestion window limited the sender.
    pub cwnd_share: Option<f64>,
    /// BBR's bottleneck bandwidth estimate, bit/s, when it agrees with the
    /// measured rate (within [`BBR_AGREES`]).
    pub bbr_bw_bps: Option<f64>,
    /// How sure the inference is, 0–1.
    pub confidence: f64,
}

impl PathFull {
    /// How the path's rate was inferred, in words.
    pub fn how(&self) -> String {
        let mut s = format!(
            "inferred from a standing queue (RTT {:.1} ms above its {:.1} ms minimum)",
            self.queue_s * 1e3,
            self.min_rtt_s * 1e3
        );
        if let Some(c) = self.cwnd_share {
            s += &format!(
                ", {:.0}% of the time limited only by the congestion window",
                c * 100.0
            );
        }
        if let Some(b) = self.bbr_bw_bps {
            s += &format!(", BBR's bandwidth estimate {:.1} Mbit/s agreeing", b / 1e6);
        }
        s
    }
}

/// The standing queue the sender's RTTs show, seconds, and the minimum RTT,
/// when both are known.
pub fn standing_queue(ev: &Evidence) -> Option<(f64, f64)> {
    let min = ev.min_rtt_s()?;
    let srtt = ev.rtt_s()?;
    let q = srtt - min;
    (q >= QUEUE_MIN_S.max(QUEUE_SHARE * min)).then_some((q, min))
}

/// The common link whose TCP goodput `measured` is near, bit/s.
pub fn common_link(measured: f64, eff: f64) -> Option<f64> {
    COMMON_LINKS.into_iter().find(|l| {
        let r = measured / (l * eff);
        (COMMON_BELOW..=COMMON_ABOVE).contains(&r)
    })
}

/// Whether the sender's evidence shows the transfer filling its path, and
/// at what rate. Needs the sender's RTTs; a sender held by an application
/// cap or idle most of the test is not filling anything.
pub fn infer(ev: &Evidence, ts: bool) -> Option<PathFull> {
    // The sender's view: a receiving end sees neither the congestion window
    // nor the sender's RTT.
    let sender = ev.streams.iter().any(|s| s.max_cwnd.is_some());
    if !ev.tcp || ev.udp.is_some() || ev.measured_bps <= 0.0 || !sender {
        return None;
    }
    if ev.target_bps.is_some_and(|t| t < ev.measured_bps * 1.1) {
        return None;
    }
    let busy = ev.fraction(|s| s.busy_us);
    if busy.is_some_and(|b| b < BUSY_SHARE) {
        return None;
    }
    let runnable = |c: &Option<Cpu>| {
        c.and_then(|c| c.thread_cpu_pct.zip(c.thread_wait_pct))
            .is_some_and(|(on, wait)| on + wait >= CPU_RUNNABLE_PCT)
    };
    if runnable(&ev.cpu_sender) || runnable(&ev.cpu_receiver) {
        return None;
    }
    let (queue_s, min_rtt_s) = standing_queue(ev)?;
    let held = ev.fraction(|s| s.rwnd_limited_us).unwrap_or(0.0)
        + ev.fraction(|s| s.sndbuf_limited_us).unwrap_or(0.0);
    if held >= BINDING_SHARE && queue_s < QUEUE_BIG_SHARE * min_rtt_s {
        return None;
    }
    // A window held shut by a receiver that does not read inflates the
    // RTT as a queue does (its delayed window updates), but the queue is in
    // the receiver's buffer, not at a bottleneck.
    let fell_behind = ev
        .streams
        .iter()
        .any(|s| s.window_shrank_share.is_some_and(|w| w >= SHRANK_SHARE));
    if held >= BINDING_SHARE && fell_behind {
        return None;
    }
    let cwnd_share = busy.map(|b| (b - held).clamp(0.0, 1.0));
    // The wire carries the segments the sender sends, small or not.
    let full = if ts { 1448 } else { 1460 };
    let eff = efficiency(ev.mss().unwrap_or(full), ts);
    let common_bps = common_link(ev.measured_bps, eff);
    // The queue is the evidence; the congestion window's share and a rate
    // that matches a common link corroborate it, each as independent
    // evidence (1 − (1 − a)(1 − b)).
    let queue = (queue_s / min_rtt_s / QUEUE_FULL_SHARE).min(1.0);
    let mut doubt = (1.0 - 0.6 * queue) * (1.0 - 0.5 * cwnd_share.unwrap_or(0.0));
    if common_bps.is_some() {
        doubt *= 0.6;
    }
    let bbr_bw_bps = ev
        .bbr_bw_bps
        .filter(|b| (b / ev.measured_bps - 1.0).abs() <= BBR_AGREES);
    if bbr_bw_bps.is_some() {
        doubt *= 0.7;
    }
    Some(PathFull {
        link_bps: common_bps.unwrap_or(ev.measured_bps / eff),
        common_bps,
        queue_s,
        min_rtt_s,
        cwnd_share,
        bbr_bw_bps,
        confidence: (1.0 - doubt).clamp(0.0, 1.0),
    })
}

/// The evidence with the inferred path as its link, when no link rate was
/// given and the path is slower than the link known so far (an interface's
/// speed, or none). A given link rate always stands.
pub fn with_path(ev: &Evidence, ts: bool) -> Option<(Evidence, PathFull)> {
    if ev
        .link
        .as_ref()
        .is_some_and(|l| l.source == LinkSource::Given)
    {
        return None;
    }
    let p = infer(ev, ts)?;
    let slower = ev
        .link
        .as_ref()
        .is_none_or(|l| matches!(l.source, LinkSource::BestInterval) || p.link_bps < l.bps * 0.95);
    if !slower {
        return None;
    }
    let mut e = ev.clone();
    e.link = Some(LinkRate {
        bps: p.link_bps,
        source: LinkSource::Inferred,
    });
    Some((e, p))
}

/// When the link explains the rate and a standing queue shows the path
/// full, a receive window or send buffer that also "explains" it only
/// feeds the bottleneck's queue: the window's rate is the queue's RTT
/// inflating until the window is used. It is kept as seen, not binding,
/// so that it is never the answer and its fix (a larger window, which
/// deepens the queue) is never offered.
pub(crate) fn only_feeds_the_queue(ev: &Evidence, findings: &mut [Finding]) {
    let full = findings
        .iter()
        .any(|f| f.limit == Limit::Link && f.explains);
    let Some((q, _)) = standing_queue(ev).filter(|_| full) else {
        return;
    };
    for f in findings
        .iter_mut()
        .filter(|f| matches!(f.limit, Limit::ReceiveWindow | Limit::SendBuffer))
    {
        f.explains = false;
        f.counters_bind = false;
        f.status = Status::NotBinding;
        f.sentence += &format!(
            "; the path is full, so it only feeds the bottleneck's queue ({:.1} ms of it): a larger one would add delay, not throughput",
            q * 1e3
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    /// A sender with no link rate but its interface's 10 Gbit/s.
    fn nic10g(mut e: Evidence) -> Evidence {
        e.link = Some(LinkRate {
            bps: 10e9,
            source: LinkSource::Interface("eth0".into()),
        });
        e
    }

    /// The download: 941 Mbit/s, the RTT 1.8 ms above its 15 ms
    /// minimum, no loss, no window or buffer limit, a 10 Gbit/s NIC.
    fn download(measured: f64) -> Evidence {
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.srtt_us = Some(16_800);
        nic10g(ev(measured, s))
    }

    #[test]
    fn a_full_1g_path_behind_a_10g_nic_is_the_link() {
        let d = diagnose(&download(941.3e6));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Link), "{}", d.summary);
        assert!(
            d.summary.contains("the path is full: about 941.3 Mbit/s")
                && d.summary.contains("what a 1 Gbit/s link carries"),
            "{}",
            d.summary
        );
        assert!(d.summary.contains("standing queue"), "{}", d.summary);
        assert_eq!(d.link_source.as_deref(), Some("inferred"));
        assert_eq!(d.findings[0].level, Confidence::High);
        assert!(d.fixes.iter().all(|f| f.os == "path"), "{:?}", d.fixes);
    }

    /// A receiver that does not read: the window binds most of the test and
    /// its delayed updates inflate the RTT far above a loopback minimum, as
    /// a queue would; the window it advertises shrinking says the queue is
    /// in its buffer, so no path is inferred and the window is the answer.
    #[test]
    fn a_receiver_that_falls_behind_is_not_a_full_path() {
        let mut s = stream(8_192, 33, 5.0);
        s.srtt_us = Some(15_200);
        s.rwnd_limited_us = Some(4_000_000);
        let shrunk = |share| {
            let mut s = s.clone();
            s.window_shrank_share = Some(share);
            diagnose(&nic10g(ev(3.2e6, s)))
        };
        // Without the shrinking window the standing queue still reads as a path.
        assert_eq!(shrunk(0.0).limit, Some(Limit::Link));
        let d = shrunk(0.5);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::ReceiveWindow), "{}", d.summary);
        assert_ne!(d.link_source.as_deref(), Some("inferred"));
    }

    /// A path that is no common link (200 Mbit/s): full at what it
    /// carries, with no link named.
    #[test]
    fn a_full_200m_path_is_the_link_at_its_rate() {
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.srtt_us = Some(17_500);
        let d = diagnose(&nic10g(ev(188e6, s)));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Link), "{}", d.summary);
        assert!(!d.summary.contains("link carries"), "{}", d.summary);
        let g = d.link_bps.expect("the path's goodput");
        assert!((g - 188e6).abs() < 1e6, "{g}");
    }

    /// A given link rate beats an inferred one.
    #[test]
    fn a_given_link_stands() {
        let mut e = download(941.3e6);
        e.link = Some(LinkRate {
            bps: 10e9,
            source: LinkSource::Given,
        });
        let d = diagnose(&e);
        assert_ne!(d.limit, Some(Limit::Link), "{}", d.summary);
        assert!(with_path(&e, true).is_none());
    }

    /// 94 Mbit/s is what a full 100 Mbit/s link carries, but a lossy or
    /// window-limited flow with no queue behind it is not a full link.
    #[test]
    fn a_common_rate_alone_is_not_a_full_link() {
        // Lossy: 1 % of segments retransmitted, RTT at its minimum.
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.bytes_sent = 94_000_000 / 8 * 5;
        s.retransmits = Some(s.bytes_sent / 1448 / 100);
        let e = nic10g(ev(94e6, s));
        assert!(infer(&e, true).is_none());
        assert_ne!(diagnose(&e).limit, Some(Limit::Link));
        // Window-limited: 176 kB per 15 ms, TCP counted 40 % rwnd-limited.
        let mut s = stream(176_000, 15_000, 5.0);
        s.rwnd_limited_us = Some(2_000_000);
        s.srtt_us = Some(15_200);
        let e = nic10g(ev(94e6, s));
        assert!(infer(&e, true).is_none());
        assert_eq!(diagnose(&e).limit, Some(Limit::ReceiveWindow));
        // An application that sent a third of the time.
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.busy_us = Some(1_500_000);
        s.srtt_us = Some(17_000);
        assert!(infer(&nic10g(ev(94e6, s)), true).is_none());
    }

    /// A receiver starved of CPU delays its ACKs: the RTT swells as under
    /// a queue, but the path is not what is full.
    #[test]
    fn a_cpu_starved_end_infers_no_path() {
        let mut e = download(600e6);
        e.cpu_receiver = Some(Cpu {
            thread_cpu_pct: Some(1.0),
            thread_wait_pct: Some(73.0),
            ..Cpu::default()
        });
        assert!(infer(&e, true).is_none());
    }

    /// The lab's 100 ms queue under cubic with a 16 MB window: the window
    /// "explains" the rate only through the queue's RTT. The path is named,
    /// the window is not binding, and no window fix is offered.
    #[test]
    fn a_window_feeding_a_deep_queue_is_not_the_limit() {
        let mut s = stream(11 << 20, 15_000, 5.0);
        s.srtt_us = Some(90_000);
        s.rwnd_limited_us = Some(3_000_000);
        let e = ev(929e6, s);
        for e in [e.clone(), nic10g(e)] {
            let d = diagnose(&e);
            consistent(&d);
            assert_eq!(d.limit, Some(Limit::Link), "{}", d.summary);
            assert_eq!(status(&d, Limit::ReceiveWindow), Some(Status::NotBinding));
            assert!(d.fixes.iter().all(|f| f.os == "path"), "{:?}", d.fixes);
        }
    }

    /// The recorded full-path lab runs, diagnosed without their link rate;
    /// every other recorded cause keeps its answer.
    #[test]
    fn recorded_runs_without_a_link() {
        for (name, limit) in [
            ("auto1g", Some(Limit::Link)),
            ("full200", Some(Limit::Link)),
            ("backup", Some(Limit::ReceiveWindow)),
            ("mss536-rwin", Some(Limit::ReceiveWindow)),
            ("sndbuf-cubic", Some(Limit::SendBuffer)),
            ("sndbuf-bbr", Some(Limit::SendBuffer)),
            ("sndbuf-loss", Some(Limit::Loss)),
            ("reno-loss", Some(Limit::Loss)),
            ("farcpu", Some(Limit::Cpu)),
            ("farcpu-sleeps", Some(Limit::Cpu)),
            ("rwin-appcap", Some(Limit::Application)),
            ("mss536", Some(Limit::PathMtu)),
            ("bbr-loss", None),
        ] {
            let d = diagnose(&fixture(&format!("lab-{name}.json"), None));
            consistent(&d);
            assert_eq!(d.limit, limit, "{name}: {}", d.summary);
            // A path inferred but not agreed by the answer is not kept: it
            // would only say the link "could carry" what was measured.
            if !matches!(d.limit, Some(Limit::Link | Limit::PathMtu)) {
                assert_ne!(d.link_source.as_deref(), Some("inferred"), "{name}");
            }
        }
        let d = diagnose(&fixture("lab-auto1g.json", None));
        assert!(
            d.summary.contains("what a 1 Gbit/s link carries"),
            "{}",
            d.summary
        );
    }
}
