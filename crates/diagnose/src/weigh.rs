//! Weighing: each rule's observation against the measured rate (how well
//! its prediction explains it, how much of the test its counters cover,
//! what evidence is missing) into a [`Finding`]; then the ranking that
//! picks the primary limit, and the [`Diagnosis`] built around it.
//!
//! Nothing is ranked by a fixed order: a finding can be primary only if its
//! prediction explains the measured rate within its tolerance, or its TCP
//! counters show it binding for a share of the test; among those the
//! highest confidence wins. When none qualifies the answer is
//! "unexplained", with what was measured.

use crate::evidence::{Evidence, LinkSource};
use crate::finding::line;
use crate::fixes;
use crate::latency;
use crate::rules::context::{rtt_lines, timestamps};
use crate::seen::Seen;
use crate::summary::{lead, unexplained};
use crate::tolerance::{explains, CONTRADICTED_SHARE, MISSING_FACTOR};
use plumb_record::diagnosis::Diagnosis;
use plumb_record::diagnosis::Figures;
use plumb_record::diagnosis::{Confidence, EvidenceKind, EvidenceLine, Finding, Limit, Status};

impl Seen {
    /// Weighs the observation against the measured rate.
    ///
    /// Support from the model is 0.5–1 when the prediction explains the
    /// rate (1 when they agree exactly, 0.5 at the edge of the tolerance),
    /// else 0; support from the counters is the share of the test they
    /// cover, halved when they do not reach their bar and halved again when
    /// the limit's own prediction contradicts the measurement. The two combine as independent pieces
    /// of evidence, 1 − (1 − a)(1 − b), and each missing piece of evidence
    /// takes [`MISSING_FACTOR`] of what is left.
    pub(crate) fn weigh(self, measured: f64) -> Finding {
        let agrees = self
            .predicted
            .zip(self.tolerance)
            .is_some_and(|(p, t)| explains(measured, p, t));
        let fits = agrees && !self.bound_only;
        let contradicted = self.predicted.is_some() && !agrees;
        let need = if contradicted {
            self.share_needed.max(CONTRADICTED_SHARE)
        } else {
            self.share_needed
        };
        // A cap the measurement beats cannot be what bound it.
        let beaten = beaten(self.predicted, self.tolerance, measured);
        let binds = !beaten && self.share.is_some_and(|s| s >= need);
        let sentence = if beaten {
            format!("{}{}", self.sentence, does_not_hold(self.limit, measured))
        } else {
            self.sentence
        };
        let model = match (fits, self.predicted, self.tolerance) {
            (true, Some(p), Some(t)) => {
                let closeness = 1.0 - (measured / p).ln().abs() / (1.0 + t).ln();
                0.5 + 0.5 * closeness.clamp(0.0, 1.0)
            }
            _ => 0.0,
        };
        // A counter below its bar still says something, at half weight.
        let counter = self.share.map_or(0.0, |s| {
            s * if binds { 1.0 } else { 0.5 } * if contradicted { 0.5 } else { 1.0 }
        });
        let support = 1.0 - (1.0 - model) * (1.0 - counter);
        let confidence = (support * MISSING_FACTOR.powi(self.missing.len() as i32))
            .min(self.ceiling.unwrap_or(1.0))
            .clamp(0.0, 1.0);
        Finding {
            limit: self.limit,
            what: self.what,
            sentence,
            predicted_bps: self.predicted,
            tolerance: self.tolerance,
            explains: fits,
            binding_share: self.share,
            counters_bind: binds,
            status: if fits || binds {
                Status::Binding
            } else {
                Status::NotBinding
            },
            confidence,
            level: Confidence::of(confidence),
            missing: self.missing,
            evidence: self.evidence,
        }
    }
}

/// The measurement beats the prediction by more than its tolerance: the
/// model, as a cap, does not hold.
pub(crate) fn beaten(predicted: Option<f64>, tolerance: Option<f64>, measured: f64) -> bool {
    predicted
        .zip(tolerance)
        .is_some_and(|(p, t)| p > 0.0 && measured > p * (1.0 + t))
}

/// What a sentence whose cap the measurement beats goes on to say: the
/// rate carried, and why the model does not hold here.
fn does_not_hold(limit: Limit, measured: f64) -> String {
    let why = match limit {
        Limit::Loss => "the losses came in bursts, or were not all losses, so the model of independent losses does not hold here",
        Limit::ReceiveWindow => "the window or the round trip differed from what was seen, so this cap does not hold here",
        Limit::Link => "the link is faster than the rate used, so this cap does not hold here",
        _ => "so this model does not hold here",
    };
    format!(
        "; but the flow carried {}, more than that: {why}",
        crate::human::mbps(measured)
    )
}

/// Weighs each observation, keeping the rules' order.
pub(crate) fn each(seen: Vec<Seen>, measured: f64) -> Vec<Finding> {
    seen.into_iter().map(|s| s.weigh(measured)).collect()
}

/// Ranks the findings and marks the primary: the most confident finding
/// that explains the rate or binds by its counters. Ties keep the rules'
/// order.
fn rank(findings: &mut [Finding]) -> Option<Limit> {
    findings.sort_by(|a, b| {
        b.candidate()
            .cmp(&a.candidate())
            .then(b.confidence.total_cmp(&a.confidence))
    });
    let primary = findings.first().filter(|f| f.candidate()).map(|f| f.limit);
    if primary.is_some() {
        findings[0].status = Status::Primary;
    }
    primary
}

/// The answer from every weighed finding: the primary, the figures that
/// depend on it, the lead sentence, the evidence, the fixes and the
/// latency verdict. `figures` are those that do not depend on the answer;
/// `unknown` is what could not be known.
pub(crate) fn answer(
    ev: &Evidence,
    mut figures: Figures,
    mut findings: Vec<Finding>,
    unknown: Vec<String>,
) -> Diagnosis {
    let measured = ev.measured_bps;
    let primary = rank(&mut findings);
    if primary.is_some() {
        crate::figures::settle(
            &mut figures,
            &findings,
            measured,
            ev.streams.len().max(1) as f64,
        );
    }
    let first = findings.first().filter(|_| primary.is_some());
    let summary = match first {
        Some(f) => lead(f, &figures),
        None => unexplained(ev, &figures, &findings),
    };
    let evidence = answer_evidence(ev, first, &figures);
    let predicted_bps = first.filter(|f| f.explains).and_then(|f| f.predicted_bps);
    let tolerance = first.filter(|f| f.explains).and_then(|f| f.tolerance);
    let confidence = first.map(|f| f.confidence);
    let fixes = primary
        .map(|p| fixes::for_limit(p, ev, &figures, &findings))
        .unwrap_or_default();
    Diagnosis {
        nothing_to_explain: false,
        limit: primary,
        secondary: findings
            .iter()
            .skip(usize::from(primary.is_some()))
            .map(|f| f.limit)
            .collect(),
        measured_bps: measured,
        predicted_bps,
        tolerance,
        confidence,
        confidence_level: first.map(|f| f.level),
        link_bps: figures.goodput_bps,
        link_source: ev.link.as_ref().map(|l| match &l.source {
            LinkSource::Given => "given".to_string(),
            LinkSource::Interface(i) => format!("interface {i}"),
            LinkSource::BestInterval => "best interval".to_string(),
            LinkSource::Inferred => "inferred".to_string(),
        }),
        summary,
        findings,
        evidence,
        figures,
        fixes,
        unknown,
        latency: ev
            .latency
            .map(|l| latency::verdict(&l, ev.link.as_ref().map(|k| k.bps))),
    }
}

/// The numbers behind the answer: the primary finding's (or, without one,
/// the path's RTT), the measured goodput, the link rate and, where the
/// link's goodput comes from it, the header a full segment was taken to have.
fn answer_evidence(
    ev: &Evidence,
    primary: Option<&Finding>,
    figures: &Figures,
) -> Vec<EvidenceLine> {
    let mut evidence = primary.map(|f| f.evidence.clone()).unwrap_or_default();
    evidence.push(
        line(
            "measured goodput (receiver)",
            ev.measured_bps / 1e6,
            "Mbit/s",
        )
        .stating(EvidenceKind::Goodput),
    );
    if primary.is_none() {
        rtt_lines(ev, &mut evidence);
    }
    if let Some(l) = ev
        .link
        .as_ref()
        .filter(|_| !evidence.iter().any(|e| e.kind == EvidenceKind::LinkRate))
    {
        evidence.push(
            line(
                &format!(
                    "link rate ({})",
                    match &l.source {
                        LinkSource::Given => "given".to_string(),
                        LinkSource::Interface(i) => format!("speed of interface {i}"),
                        LinkSource::BestInterval => "estimated from the best interval".to_string(),
                        LinkSource::Inferred => "inferred from the path".to_string(),
                    }
                ),
                l.bps / 1e6,
                "Mbit/s",
            )
            .stating(EvidenceKind::LinkRate),
        );
    }
    if ev.tcp && figures.goodput_bps.is_some() && !figures.goodput_is_lower_bound {
        evidence.push(line(&header_line(ev), figures.segment_payload as f64, "B"));
    }
    evidence
}

/// What the link's goodput assumed of each segment's header: TCP
/// timestamps on or off, and where that came from.
fn header_line(ev: &Evidence) -> String {
    let on = if timestamps(ev) { "on" } else { "off" };
    // Given (the model's flag, a live connection's negotiated options), or
    // read from the sender's settings, or Linux's default.
    let whence = if ev.tcp_timestamps.is_some() {
        ""
    } else if ev.sysctl_sender.contains_key("net.ipv4.tcp_timestamps") {
        ", the sender's net.ipv4.tcp_timestamps"
    } else {
        ", assumed: Linux's default"
    };
    format!("payload per full segment (TCP timestamps {on}{whence})")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::testing::*;

    /// Issue 14: MSS 536 with a 17,520 B window at 15 ms measured 9 Mbit/s
    /// on a 1 Gb/s link. The small MSS predicts 853 Mbit/s, which does not
    /// explain 9: it is seen, not binding; the window explains the rate.
    #[test]
    fn small_mss_and_small_window_recorded() {
        let d = diagnose(&recorded("mss536-rwin", 1e9));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::ReceiveWindow), "{}", d.summary);
        assert_eq!(status(&d, Limit::PathMtu), Some(Status::NotBinding));
        assert_eq!(d.findings[0].level, Confidence::High);
        // The MSS alone, with an autotuned window: the small MSS explains it.
        let d = diagnose(&recorded("mss536", 1e9));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::PathMtu), "{}", d.summary);
    }

    /// A 64 KiB send buffer and 1 % loss: Mathis explains the rate, the
    /// buffer (set by hand) would allow five times more.
    #[test]
    fn send_buffer_and_loss_recorded() {
        let d = diagnose(&recorded("sndbuf-loss", 1e9));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Loss), "{}", d.summary);
        assert_eq!(status(&d, Limit::SendBuffer), Some(Status::NotBinding));
        // Without the loss the same buffer binds (cubic: by its size alone;
        // bbr: its size and sndbuf_limited).
        for name in ["sndbuf-cubic", "sndbuf-bbr"] {
            let d = diagnose(&recorded(name, 1e9));
            consistent(&d);
            assert_eq!(d.limit, Some(Limit::SendBuffer), "{name}: {}", d.summary);
        }
    }

    /// A window that allows 135 Mbit/s and a 50 Mbit/s cap: the cap; a
    /// window that allows 9 Mbit/s and the same cap: the window.
    #[test]
    fn window_and_application_cap_recorded() {
        let d = diagnose(&recorded("rwin-appcap", 1e9));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Application), "{}", d.summary);
        let d = diagnose(&recorded("rwin-small-appcap", 1e9));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::ReceiveWindow), "{}", d.summary);
        assert_eq!(status(&d, Limit::Application), Some(Status::NotBinding));
    }

    /// Every other recorded lab scenario names the cause it was built with.
    #[test]
    fn recorded_scenarios_name_their_cause() {
        for (name, link, limit) in [
            ("backup", 1e9, Limit::ReceiveWindow),
            ("auto1g", 1e9, Limit::Link),
            ("full200", 200e6, Limit::Link),
            ("farcpu", 1e9, Limit::Cpu),
            ("farcpu-sleeps", 1e9, Limit::Cpu),
        ] {
            let d = diagnose(&recorded(name, link));
            consistent(&d);
            assert_eq!(d.limit, Some(limit), "{name}: {}", d.summary);
        }
    }

    #[test]
    fn missing_evidence_claims_nothing() {
        // A stock iperf3 document in reverse: no TCP_INFO counters, no window, no link.
        let e = Evidence {
            tcp: true,
            duration_s: 5.0,
            measured_bps: 500e6,
            streams: vec![StreamTcp::default()],
            ..Evidence::default()
        };
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, None);
        assert!(d.summary.contains("500 Mbit/s measured"), "{}", d.summary);
        assert!(d.summary.contains("give --link"), "{}", d.summary);
        assert!(d.fixes.is_empty());
    }

    fn any_stream() -> impl Strategy<Value = StreamTcp> {
        (
            (
                prop_oneof![Just(524u64), Just(1448), Just(8948)],
                100u64..300_000,
            ),
            (1_000u64..64 << 20, 1_000u64..64 << 20),
            (0u64..100_000, 0u64..1 << 30),
            (0.0f64..=1.0, 0.0f64..=1.0, 0.0f64..=1.0, 0.0f64..=1.0),
            (
                prop::option::of(4_096u64..16 << 20),
                any::<bool>(),
                any::<bool>(),
            ),
        )
            .prop_map(
                |((mss, rtt), (wnd, cwnd), (retr, sent), (busy, rw, sb, f), (buf, set, known))| {
                    let us = |x: f64| Some((x * 5e6) as u64).filter(|_| known);
                    StreamTcp {
                        mss: Some(mss),
                        pmtu: None,
                        min_rtt_us: Some(rtt),
                        srtt_us: Some((rtt as f64 * (1.0 + f)) as u64),
                        max_cwnd: Some(cwnd),
                        window_is_clamp: false,
                        max_snd_wnd: Some(wnd),
                        retransmits: Some(retr),
                        bytes_retrans: None,
                        bytes_sent: sent,
                        busy_us: us(busy),
                        rwnd_limited_us: us(rw * busy),
                        sndbuf_limited_us: us(sb * busy * (1.0 - rw)),
                        sndbuf_actual: buf,
                        sndbuf_set: set,
                        window_shrank_share: None,
                        stalled_us: None,
                        payload_acked: None,
                        timeouts: None,
                    }
                },
            )
    }

    fn any_cpu() -> impl Strategy<Value = Option<Cpu>> {
        prop::option::of(
            (
                0.0f64..200.0,
                prop::option::of((0.0f64..100.0, 0.0f64..100.0)),
                prop::option::of((0.5f64..400.0, 0.0f64..100.0)),
            )
                .prop_map(|(p, t, q)| Cpu {
                    process_pct: p,
                    thread_cpu_pct: t.map(|x| x.0),
                    thread_wait_pct: t.map(|x| x.1.min(100.0 - x.0)),
                    system_busy_pct: Some(50.0),
                    softirq_pct: None,
                    quota_pct: q.map(|x| x.0),
                    throttled_pct: q.map(|x| x.1),
                }),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Whatever the evidence: the primary explains the measured rate
        /// within its tolerance or binds by its counters, a predicted rate in
        /// the answer is within tolerance of the measurement, and otherwise
        /// the answer is "unexplained". The figures agree with each other.
        #[test]
        fn the_answer_is_consistent_with_the_measurement(
            streams in prop::collection::vec(any_stream(), 1..4),
            measured in 1e5f64..2e10,
            link in prop::option::of((1e7f64..1e11, any::<bool>())),
            target in prop::option::of(1e5f64..2e10),
            cc in prop_oneof![Just(None), Just(Some("cubic")), Just(Some("bbr")), Just(Some("reno"))],
            cpu_s in any_cpu(),
            cpu_r in any_cpu(),
        ) {
            let e = Evidence {
                tcp: true,
                duration_s: 5.0,
                measured_bps: measured,
                best_interval_bps: measured,
                target_bps: target,
                link: link.map(|(bps, given)| LinkRate {
                    bps,
                    source: if given { LinkSource::Given } else { LinkSource::BestInterval },
                }),
                streams,
                congestion: cc.map(str::to_string),
                cpu_sender: cpu_s,
                cpu_receiver: cpu_r,
                ..Evidence::default()
            };
            let d = diagnose(&e);
            consistent(&d);
            let f = &d.figures;
            // As plumb calc defines them: the streams that reach the line
            // rate, and the line rate's bandwidth-delay product.
            if let (Some(n), Some(p), Some(line)) = (f.streams_needed, f.per_stream_bps, f.link_bps) {
                prop_assert!(n as f64 * p >= line * (1.0 - 1e-9));
                prop_assert!((n as f64 - 1.0) * p < line * (1.0 + 1e-9));
            }
            if let (Some(w), Some(r), Some(line)) = (f.window_needed_bytes, f.rtt_s, f.link_bps) {
                prop_assert!(w as f64 * 8.0 / r >= line * (1.0 - 1e-9));
                prop_assert!((w as f64 - 1.0) * 8.0 / r < line * (1.0 + 1e-9), "{f:?}");
            }
            if let (Some(w), Some(r), Some(g)) = (f.window_goodput_bytes, f.rtt_s, f.goodput_bps) {
                prop_assert!(w as f64 * 8.0 / r >= g * (1.0 - 1e-9));
                prop_assert!((w as f64 - 1.0) * 8.0 / r < g);
            }
            if let (Some(x), Some(g)) = (f.expect_bps, f.goodput_bps) {
                prop_assert!(x <= g);
            }
            if f.goodput_is_lower_bound {
                prop_assert!(f.expect_bps.is_none() && f.streams_needed.is_none());
                prop_assert!(f.window_needed_bytes.is_none());
            }
        }
    }
}
