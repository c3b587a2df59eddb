//! The rules: which limit the evidence points to, and what the model predicts
//! from that evidence.
//!
//! Each rule looks at independent evidence (TCP's own limit counters first,
//! then windows, loss, CPU and the link) and, when it fires, predicts the rate
//! the limit allows with a `plumb-model` formula. The primary limit is the
//! first firing rule in order of how directly its evidence speaks; the others
//! are secondary. A rule never fires on evidence that is missing.

use plumb_model::tcp;
use plumb_model::units::{sig, thousands};
use plumb_model::{Bytes, LossRate, Rate, Rtt};
use serde::Serialize;

use crate::evidence::{Evidence, LinkSource};
use crate::fixes;

/// What limits a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// The receiver's advertised window.
    ReceiveWindow,
    /// The sender's socket buffer.
    SendBuffer,
    /// The congestion window, held down without loss.
    Congestion,
    /// Packet loss, as Mathis predicts for loss-based congestion control.
    Loss,
    /// The link itself: nothing to fix.
    Link,
    /// A CPU at either end.
    Cpu,
    /// The sending application (a rate cap, or it did not write fast enough).
    Application,
    /// Segments far smaller than the path allows.
    PathMtu,
}

impl Limit {
    /// The JSON name (`receive_window`, …).
    pub fn name(self) -> &'static str {
        match self {
            Limit::ReceiveWindow => "receive_window",
            Limit::SendBuffer => "send_buffer",
            Limit::Congestion => "congestion",
            Limit::Loss => "loss",
            Limit::Link => "link",
            Limit::Cpu => "cpu",
            Limit::Application => "application",
            Limit::PathMtu => "path_mtu",
        }
    }
}

/// How sure a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// Indirect evidence only.
    Low,
    /// One strong indicator, or a prediction that agrees.
    Medium,
    /// TCP's own counters and the model agree.
    High,
}

/// One number behind a finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceLine {
    /// What was measured.
    pub what: String,
    /// The value.
    pub value: f64,
    /// Its unit.
    pub unit: String,
}

/// One limit the evidence supports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Which limit.
    pub limit: Limit,
    /// The rate the model predicts from the evidence, bit/s.
    pub predicted_bps: f64,
    /// One sentence, as an engineer would say it.
    pub sentence: String,
    /// The numbers.
    pub evidence: Vec<EvidenceLine>,
    /// How sure.
    pub confidence: Confidence,
}

/// A change to make, and what the model expects from it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fix {
    /// `linux`, `windows`, `windows-legacy`, `macos`, `freebsd`, `application`, `path`.
    pub os: String,
    /// What to run or change, one item per line.
    pub commands: Vec<String>,
    /// What the model expects afterwards, bit/s.
    pub expected_bps: Option<f64>,
    /// Why, in a few words.
    pub note: String,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnosis {
    /// The primary limit.
    pub limit: Option<Limit>,
    /// Other limits the evidence supports.
    pub secondary: Vec<Limit>,
    /// Receiver-measured goodput, bit/s.
    pub measured_bps: f64,
    /// What the model predicts for the primary limit, bit/s.
    pub predicted_bps: Option<f64>,
    /// The link's TCP goodput, bit/s, when the link rate is known.
    pub link_bps: Option<f64>,
    /// How the link rate is known.
    pub link_source: Option<String>,
    /// The lead sentence.
    pub summary: String,
    /// Every finding, primary first.
    pub findings: Vec<Finding>,
    /// The numbers behind the primary finding and the path.
    pub evidence: Vec<EvidenceLine>,
    /// What to change.
    pub fixes: Vec<Fix>,
    /// What could not be known.
    pub unknown: Vec<String>,
    /// Latency under load, when the test measured it.
    pub latency: Option<crate::latency::LatencyVerdict>,
}

fn line(what: &str, value: f64, unit: &str) -> EvidenceLine {
    EvidenceLine {
        what: what.into(),
        value,
        unit: unit.into(),
    }
}

fn mbps(bps: f64) -> String {
    Rate::from_bps(bps).map_or_else(|| "0 bit/s".into(), Rate::human)
}

fn ms(s: f64) -> String {
    Rtt::from_secs(s).map_or_else(|| "? ms".into(), Rtt::human)
}

fn bytes(b: u64) -> String {
    Bytes(b).human()
}

/// Payload bytes a send buffer of `granted` bytes (SO_SNDBUF as read back)
/// keeps in flight. Linux charges each buffer's own overhead (its truesize)
/// against SO_SNDBUF; with full-size GSO buffers about four fifths of the
/// granted size is payload. Measured on Linux 6.18 in the lab (1 Gb/s,
/// 15 ms, 3 s tests): rate × RTT / granted was 0.72–0.83 under bbr and
/// 0.75–0.99 under cubic, for 131,072 B and 524,288 B granted.
pub fn sndbuf_payload(granted: u64) -> f64 {
    granted as f64 * 0.8
}

/// TCP payload share of the wire for `payload` bytes per segment (IPv4, with
/// or without the 12 B of timestamps), as `plumb-model` frames it.
pub fn efficiency(payload: u64, timestamps: bool) -> f64 {
    let f = plumb_model::Framing {
        mtu: payload + 40 + if timestamps { 12 } else { 0 },
        ipv6: false,
        timestamps,
        vlan: false,
    };
    f.efficiency()
}

/// Weighs the evidence.
pub fn diagnose(ev: &Evidence) -> Diagnosis {
    let rtt = ev.rtt_s();
    let mss = ev.mss();
    // Linux sends timestamps unless told not to; a full-size segment then carries 1448 B.
    let ts = ev
        .sysctl_sender
        .get("net.ipv4.tcp_timestamps")
        .is_none_or(|v| v.trim() != "0");
    let full = if ts { 1448 } else { 1460 };
    let link_goodput = ev
        .link
        .as_ref()
        .map(|l| l.bps * efficiency(mss.unwrap_or(full).max(full), ts));
    let mut findings: Vec<Finding> = Vec::new();
    let measured = ev.measured_bps;
    let mut unknown = ev.unknown.clone();
    if !ev.tcp {
        unknown
            .push("UDP tests are not diagnosed: UDP has no window; look at loss and jitter".into());
    }
    if ev.bidir {
        unknown.push("bidirectional test: only the client-to-server direction is diagnosed".into());
    }
    let rtt_line = |v: &mut Vec<EvidenceLine>| {
        if let Some(r) = rtt {
            v.push(line("smoothed RTT (TCP)", r * 1e3, "ms"));
        }
        if let Some(m) = ev.min_rtt_s() {
            v.push(line("minimum RTT (TCP)", m * 1e3, "ms"));
        }
    };
    let busy = ev.fraction(|s| s.busy_us);
    let rwnd = ev.fraction(|s| s.rwnd_limited_us);
    let sndbuf = ev.fraction(|s| s.sndbuf_limited_us);
    let n = ev.streams.len().max(1) as f64;

    // Application: a rate cap that the sender met, or a sender that sat idle.
    if let Some(target) = ev.target_bps {
        let below_link = link_goodput.is_none_or(|g| target < 0.9 * g);
        if measured >= 0.85 * target && below_link {
            let mut e = vec![line(
                "application rate cap (-b × streams)",
                target / 1e6,
                "Mbit/s",
            )];
            e.push(line("measured", measured / 1e6, "Mbit/s"));
            findings.push(Finding {
                limit: Limit::Application,
                predicted_bps: target,
                sentence: format!(
                    "Limited by the application: the sender was asked for {} and sent {}{}.",
                    mbps(target),
                    mbps(measured),
                    link_goodput.map_or(String::new(), |g| format!(
                        "; the link could carry {}",
                        mbps(g)
                    ))
                ),
                evidence: e,
                confidence: Confidence::High,
            });
        }
    }
    if let Some(b) = busy.filter(|b| *b < 0.7) {
        if !findings.iter().any(|f| f.limit == Limit::Application) {
            findings.push(Finding {
                limit: Limit::Application,
                predicted_bps: measured / b.max(0.01),
                sentence: format!(
                    "Limited by the application: the sender had nothing to send {}% of the time; TCP was never the bottleneck.",
                    sig((1.0 - b) * 100.0, 2)
                ),
                evidence: vec![line("sender busy (TCP_INFO busy_time)", b * 100.0, "% of the test")],
                confidence: Confidence::Medium,
            });
        }
    }

    // CPU: a core saturated at either end, or a data thread that wanted a
    // whole core and was held back (a CPU quota, other processes).
    for (who, cpu) in [("receiver", ev.cpu_receiver), ("sender", ev.cpu_sender)] {
        let Some(c) = cpu else { continue };
        let per_stream = c.process_pct / n;
        let machine = c.system_busy_pct.unwrap_or(0.0);
        let thread = c.thread_cpu_pct.zip(c.thread_wait_pct);
        // Starved: the thread spent a good part of the test runnable but not
        // running, and more of it waiting than working (a CPU quota, or other
        // processes on its core). A thread that sleeps because it has caught
        // up does not wait on the run queue.
        let starved = thread.is_some_and(|(used, wait)| {
            wait >= 20.0 && (wait >= 2.0 * used || used + wait >= 85.0)
        });
        let busy_thread = thread.is_some_and(|(used, _)| used >= 90.0);
        // The machine-wide figure includes everything else running (a lab's
        // emulator, other tests), so it counts only with the process busy too.
        if per_stream >= 90.0 || busy_thread || starved || (machine >= 98.0 && per_stream >= 50.0) {
            let mut e = vec![line(
                &format!("{who} process CPU"),
                c.process_pct,
                "% of one core",
            )];
            if let Some((used, wait)) = thread {
                e.push(line(
                    &format!("{who} data thread on a CPU"),
                    used,
                    "% of the test",
                ));
                e.push(line(
                    &format!("{who} data thread waiting for a CPU"),
                    wait,
                    "% of the test",
                ));
            }
            if let Some(m) = c.system_busy_pct {
                e.push(line(&format!("{who} machine busy"), m, "% of all cores"));
            }
            if let Some(s) = c.softirq_pct {
                e.push(line(&format!("{who} softirq"), s, "% of all cores"));
            }
            let sentence = match thread {
                Some((used, wait)) if starved && !busy_thread => format!(
                    "Limited by CPU on the {who}: its data thread ran only {}% of the test and waited {}% of it for a CPU (a CPU quota or other processes), so it moved only {}.",
                    sig(used, 3),
                    sig(wait, 3),
                    mbps(measured)
                ),
                _ => format!(
                    "Limited by CPU on the {who}: it used {}% of a core{} to move {}.",
                    sig(c.process_pct, 3),
                    if machine >= 98.0 { format!(" and the machine was {}% busy", sig(machine, 3)) } else { String::new() },
                    mbps(measured)
                ),
            };
            findings.push(Finding {
                limit: Limit::Cpu,
                predicted_bps: measured,
                sentence,
                evidence: e,
                confidence: if per_stream >= 95.0 || starved || busy_thread {
                    Confidence::High
                } else {
                    Confidence::Medium
                },
            });
        }
    }

    // Receive window: TCP says so, or the advertised window explains the rate.
    if let (Some(w), Some(r)) = (ev.window(), rtt) {
        let predicted = w as f64 * 8.0 / r;
        let counters = rwnd.filter(|f| *f >= 0.3);
        let explains = predicted <= 1.3 * measured;
        if counters.is_some() || explains {
            let mut e = vec![line("receiver's largest advertised window", w as f64, "B")];
            if let Some(f) = rwnd {
                e.push(line(
                    "time limited by the receive window (TCP_INFO rwnd_limited)",
                    f * 100.0,
                    "% of the test",
                ));
            }
            if let Some(b) = ev.rcvbuf_actual {
                e.push(line("receiver SO_RCVBUF granted", b as f64, "B"));
            }
            rtt_line(&mut e);
            let agree = (0.5..=1.3).contains(&(measured / predicted.max(1.0)));
            findings.push(Finding {
                limit: Limit::ReceiveWindow,
                predicted_bps: predicted,
                sentence: format!(
                    "Limited by the receive window: {} per {} round trip allows {}{}.",
                    bytes(w),
                    ms(r),
                    mbps(predicted),
                    link_goodput.map_or(String::new(), |g| format!(
                        "; the link could carry {}",
                        mbps(g)
                    ))
                ),
                evidence: e,
                confidence: match (counters.is_some(), agree) {
                    (true, true) => Confidence::High,
                    (true, false) | (false, true) => Confidence::Medium,
                    _ => Confidence::Low,
                },
            });
        }
    }

    // Send buffer: TCP says the socket buffer held it back, or a buffer set
    // by hand explains the rate. Both are needed: under cubic, Linux 6.18
    // left sndbuf_limited at 0 while a 128 KiB buffer held a 1 Gb/s, 15 ms
    // path to 66 Mbit/s (the lab, --sndbuf 64K). An autotuned buffer follows
    // the congestion window, so its size explains nothing by itself.
    if let Some(r) = rtt {
        let buf: Option<u64> = {
            let b: Vec<u64> = ev.streams.iter().filter_map(|s| s.sndbuf_actual).collect();
            (!b.is_empty()).then(|| b.iter().sum())
        };
        let allows = buf.map(|b| sndbuf_payload(b) * 8.0 / r);
        let counters = sndbuf.filter(|f| *f >= 0.3);
        let fixed = ev.streams.iter().all(|s| s.sndbuf_set);
        let explains =
            fixed && allows.is_some_and(|p| (0.6..=1.5).contains(&(measured / p.max(1.0))));
        if counters.is_some() || explains {
            let predicted = allows.unwrap_or(measured);
            let mut e = Vec::new();
            if let Some(f) = sndbuf {
                e.push(line(
                    "time limited by the send buffer (TCP_INFO sndbuf_limited)",
                    f * 100.0,
                    "% of the test",
                ));
            }
            if let Some(b) = buf {
                e.push(line("sender SO_SNDBUF granted", b as f64, "B"));
            }
            rtt_line(&mut e);
            findings.push(Finding {
                limit: Limit::SendBuffer,
                predicted_bps: predicted,
                sentence: format!(
                    "Limited by the sender's socket buffer: {} of send buffer per {} round trip allows about {}{}.",
                    buf.map_or("its".to_string(), bytes),
                    ms(r),
                    mbps(predicted),
                    link_goodput.map_or(String::new(), |g| format!("; the link could carry {}", mbps(g)))
                ),
                evidence: e,
                confidence: if counters.is_some_and(|f| f >= 0.5) {
                    Confidence::High
                } else {
                    Confidence::Medium
                },
            });
        }
    }

    // Path MTU: segments far below what Ethernet carries.
    if let (Some(m), Some(l)) = (mss, &ev.link) {
        if m < 1200 {
            let predicted = l.bps * efficiency(m, ts);
            findings.push(Finding {
                limit: Limit::PathMtu,
                predicted_bps: predicted,
                sentence: format!(
                    "Limited by a small MSS: {m}-byte segments put {}% of the wire into payload, against {}% at 1448 B; the link carries at most {} this way.",
                    sig(efficiency(m, ts) * 100.0, 3),
                    sig(efficiency(full, ts) * 100.0, 3),
                    mbps(predicted)
                ),
                evidence: vec![line("segment payload (TCP_INFO snd_mss)", m as f64, "B")],
                confidence: Confidence::High,
            });
        }
    }

    // Loss: retransmissions and Mathis.
    if let (Some(p), Some(r)) = (ev.loss_rate().filter(|p| *p > 0.0), rtt) {
        let m = mss.unwrap_or(1448);
        let loss = LossRate::from_probability(p.min(1.0));
        let mathis = loss
            .zip(Rtt::from_secs(r))
            .map(|(l, t)| tcp::mathis_rate(Bytes(m), t, l).bps() * n)
            .unwrap_or(measured);
        let loss_based = ev.congestion.as_deref().is_none_or(|c| c != "bbr");
        let binding = measured <= 2.0 * mathis;
        if (loss_based && binding) || p >= 0.01 {
            let retr: u64 = ev.streams.iter().filter_map(|s| s.retransmits).sum();
            let mut e = vec![
                line("retransmitted segments", retr as f64, "segments"),
                line("retransmission rate", p * 100.0, "%"),
            ];
            rtt_line(&mut e);
            if let Some(cc) = &ev.congestion {
                e.push(line(&format!("congestion control {cc}"), 0.0, ""));
            }
            findings.push(Finding {
                limit: Limit::Loss,
                predicted_bps: mathis,
                sentence: format!(
                    "Limited by packet loss: {}% of segments retransmitted at {} RTT caps {} at {} (Mathis){}.",
                    sig(p * 100.0, 2),
                    ms(r),
                    if n > 1.0 { format!("{n} Reno/CUBIC streams") } else { "a Reno/CUBIC stream".into() },
                    mbps(mathis),
                    if loss_based { String::new() } else { "; BBR does not back off on random loss, so the bound is loose".into() }
                ),
                evidence: e,
                confidence: if loss_based && (0.5..=2.0).contains(&(measured / mathis.max(1.0))) {
                    Confidence::High
                } else {
                    Confidence::Medium
                },
            });
        }
    }

    // The link: nearly all of its goodput. More than it can carry means the
    // stated link rate is wrong, not that the link limits.
    if let (Some(g), Some(l)) = (link_goodput, &ev.link) {
        if measured > 1.1 * g && !matches!(l.source, LinkSource::BestInterval) {
            unknown.push(format!(
                "the link rate: {} measured is more than a {} link carries, so the link is faster than stated",
                mbps(measured),
                mbps(l.bps)
            ));
        } else if measured >= 0.9 * g {
            findings.push(Finding {
                limit: Limit::Link,
                predicted_bps: g,
                sentence: format!(
                    "Limited by the link itself: {} is {}% of the {} a {} link carries as TCP payload. Nothing to fix.",
                    mbps(measured),
                    sig(measured / g * 100.0, 3),
                    mbps(g),
                    mbps(l.bps)
                ),
                evidence: vec![
                    line("link rate", l.bps / 1e6, "Mbit/s"),
                    line("link TCP goodput", g / 1e6, "Mbit/s"),
                ],
                confidence: if matches!(l.source, LinkSource::BestInterval) { Confidence::Low } else { Confidence::High },
            });
        }
    }

    // Congestion: busy, not window- or buffer-limited, no loss, below the link.
    let quiet_loss = ev.loss_rate().is_none_or(|p| p < 1e-4);
    let below_link = link_goodput.is_some_and(|g| measured < 0.9 * g);
    if findings.is_empty() && quiet_loss && below_link {
        if let Some(r) = rtt {
            let cwnd: u64 = ev.streams.iter().filter_map(|s| s.max_cwnd).sum();
            let predicted = cwnd as f64 * 8.0 / r;
            let mut e = vec![line("largest congestion window", cwnd as f64, "B")];
            rtt_line(&mut e);
            findings.push(Finding {
                limit: Limit::Congestion,
                predicted_bps: predicted,
                sentence: format!(
                    "Limited by congestion control: the congestion window stayed at {} without loss, {} per {} round trip; a longer test lets slow start finish.",
                    bytes(cwnd),
                    mbps(predicted),
                    ms(r)
                ),
                evidence: e,
                confidence: Confidence::Medium,
            });
        }
    }

    let primary = pick_primary(&mut findings, measured);
    let summary = match (&primary, findings.first()) {
        (Some(_), Some(f)) => f.sentence.clone(),
        _ => {
            if ev.link.is_none() {
                format!(
                    "No limit identified from this evidence: {} measured; give --link with the link rate so plumb can tell a full link from a limited one.",
                    mbps(measured)
                )
            } else {
                format!(
                    "No limit identified from this evidence: {} measured.",
                    mbps(measured)
                )
            }
        }
    };
    let mut evidence = findings
        .first()
        .map(|f| f.evidence.clone())
        .unwrap_or_default();
    evidence.push(line(
        "measured goodput (receiver)",
        measured / 1e6,
        "Mbit/s",
    ));
    if let Some(l) = ev
        .link
        .as_ref()
        .filter(|_| !evidence.iter().any(|e| e.what == "link rate"))
    {
        evidence.push(line(
            &format!(
                "link rate ({})",
                match &l.source {
                    LinkSource::Given => "given".to_string(),
                    LinkSource::Interface(i) => format!("speed of interface {i}"),
                    LinkSource::BestInterval => "estimated from the best interval".to_string(),
                }
            ),
            l.bps / 1e6,
            "Mbit/s",
        ));
    }
    let fixes = primary
        .map(|p| fixes::for_limit(p, ev, &findings))
        .unwrap_or_default();
    Diagnosis {
        limit: primary,
        secondary: findings.iter().skip(1).map(|f| f.limit).collect(),
        measured_bps: measured,
        predicted_bps: findings.first().map(|f| f.predicted_bps),
        link_bps: link_goodput,
        link_source: ev.link.as_ref().map(|l| match &l.source {
            LinkSource::Given => "given".to_string(),
            LinkSource::Interface(i) => format!("interface {i}"),
            LinkSource::BestInterval => "best interval".to_string(),
        }),
        summary,
        findings,
        evidence,
        fixes,
        unknown,
        latency: ev
            .latency
            .map(|l| crate::latency::verdict(&l, ev.link.as_ref().map(|k| k.bps))),
    }
}

/// Orders the findings so the primary one comes first.
///
/// What TCP itself recorded outranks inference: a window or buffer limit
/// with its counters set, then the application and CPU (which *cause*
/// window limits when the receiver cannot keep up), then path MTU, loss,
/// congestion and — when nothing else holds the rate down — the link.
fn pick_primary(findings: &mut [Finding], measured: f64) -> Option<Limit> {
    if findings.is_empty() {
        return None;
    }
    let rank = |f: &Finding| -> (u8, u8) {
        let agrees = (0.5..=1.5).contains(&(measured / f.predicted_bps.max(1.0)));
        let base = match f.limit {
            Limit::Application => 0,
            // Small segments are why a "full" link carries less than it could.
            Limit::PathMtu => 1,
            // A link known only from the best interval is a guess: direct
            // evidence of anything else outranks it.
            Limit::Link if f.confidence == Confidence::Low => 8,
            Limit::Link => 2,
            Limit::Cpu => 3,
            Limit::ReceiveWindow | Limit::SendBuffer if f.confidence == Confidence::High => 4,
            Limit::Loss if f.confidence == Confidence::High => 5,
            Limit::ReceiveWindow | Limit::SendBuffer => 6,
            Limit::Loss => 7,
            Limit::Congestion => 9,
        };
        (base, u8::from(!agrees))
    };
    findings.sort_by_key(|f| rank(f));
    Some(findings[0].limit)
}

/// `9.344 Mbit/s` etc., for callers that print findings.
pub fn human_rate(bps: f64) -> String {
    mbps(bps)
}

/// `1,875,000` etc.
pub fn human_count(n: u64) -> String {
    thousands(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{Cpu, LinkRate, StreamTcp};

    fn gig() -> Option<LinkRate> {
        Some(LinkRate {
            bps: 1e9,
            source: LinkSource::Given,
        })
    }

    fn stream(wnd: u64, rtt_us: u64, secs: f64) -> StreamTcp {
        StreamTcp {
            mss: Some(1448),
            min_rtt_us: Some(rtt_us),
            srtt_us: Some(rtt_us),
            max_cwnd: Some(4 << 20),
            max_snd_wnd: Some(wnd),
            retransmits: Some(0),
            bytes_retrans: Some(0),
            bytes_sent: 0,
            busy_us: Some((secs * 1e6) as u64),
            rwnd_limited_us: Some(0),
            sndbuf_limited_us: Some(0),
            sndbuf_actual: Some(4 << 20),
            sndbuf_set: false,
        }
    }

    fn ev(measured: f64, s: StreamTcp) -> Evidence {
        Evidence {
            tcp: true,
            duration_s: 5.0,
            measured_bps: measured,
            best_interval_bps: measured,
            link: gig(),
            streams: vec![s],
            congestion: Some("cubic".into()),
            ..Evidence::default()
        }
    }

    #[test]
    fn backup_scenario_is_the_receive_window() {
        let mut s = stream(17_520, 15_000, 5.0);
        s.rwnd_limited_us = Some(4_900_000);
        s.bytes_sent = 5_800_000;
        let d = diagnose(&ev(9.2e6, s));
        assert_eq!(d.limit, Some(Limit::ReceiveWindow));
        assert!((d.predicted_bps.unwrap_or(0.0) - 9_344_000.0).abs() < 1.0);
        assert_eq!(d.findings[0].confidence, Confidence::High);
        assert!(
            d.summary.starts_with(
                "Limited by the receive window: 17,520 B per 15 ms round trip allows 9.344 Mbit/s"
            ),
            "{}",
            d.summary
        );
        assert!(
            d.summary.contains("the link could carry 941.5 Mbit/s"),
            "{}",
            d.summary
        );
        let linux = d.fixes.iter().find(|f| f.os == "linux").expect("linux fix");
        assert!(linux
            .commands
            .iter()
            .any(|c| c.starts_with("sysctl -w net.core.rmem_max=")));
        assert!(d
            .fixes
            .iter()
            .any(|f| f.os == "windows-legacy"
                && f.commands.iter().any(|c| c.contains("Tcp1323Opts"))));
        let par = d
            .fixes
            .iter()
            .find(|f| f.os == "application")
            .expect("streams alternative");
        assert!(
            par.commands[0].starts_with("102 parallel streams"),
            "{:?}",
            par.commands
        );
    }

    #[test]
    fn send_buffer() {
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.sndbuf_limited_us = Some(4_500_000);
        s.sndbuf_actual = Some(131_072);
        let d = diagnose(&ev(33e6, s));
        assert_eq!(d.limit, Some(Limit::SendBuffer));
        let p = d.predicted_bps.unwrap_or(0.0);
        assert!((p - 0.8 * 131_072.0 * 8.0 / 0.015).abs() < 1.0, "{p}");
        assert!(d
            .fixes
            .iter()
            .any(|f| f.commands.iter().any(|c| c.contains("wmem_max"))));
    }

    /// Cubic on Linux 6.18 leaves `sndbuf_limited` at 0 while a fixed send
    /// buffer holds the rate (lab: --sndbuf 64K, 1 Gb/s, 15 ms: 66 Mbit/s,
    /// cwnd 990 kB): the buffer's size must name it, not the congestion window.
    #[test]
    fn fixed_send_buffer_without_counters() {
        let mut s = stream(8 << 20, 15_700, 5.0);
        s.sndbuf_actual = Some(131_072);
        s.sndbuf_set = true;
        s.max_cwnd = Some(990_432);
        let d = diagnose(&ev(66.5e6, s.clone()));
        assert_eq!(d.limit, Some(Limit::SendBuffer), "{:?}", d.findings);
        assert_eq!(d.findings[0].confidence, Confidence::Medium);
        // The same size, autotuned, says nothing about the limit.
        s.sndbuf_set = false;
        let d = diagnose(&ev(66.5e6, s.clone()));
        assert_ne!(d.limit, Some(Limit::SendBuffer), "{:?}", d.findings);
        // A fixed buffer far larger than the rate needs is not the limit.
        s.sndbuf_set = true;
        s.sndbuf_actual = Some(4 << 20);
        let d = diagnose(&ev(66.5e6, s));
        assert_ne!(d.limit, Some(Limit::SendBuffer), "{:?}", d.findings);
    }

    #[test]
    fn full_link_needs_no_fix() {
        let d = diagnose(&ev(935e6, stream(8 << 20, 15_000, 5.0)));
        assert_eq!(d.limit, Some(Limit::Link));
        assert!(d.summary.contains("Nothing to fix"), "{}", d.summary);
    }

    #[test]
    fn a_link_slower_than_measured_is_not_believed() {
        let d = diagnose(&ev(3e9, stream(8 << 20, 100, 5.0)));
        assert_ne!(d.limit, Some(Limit::Link));
        assert!(
            d.unknown.iter().any(|u| u.contains("faster than stated")),
            "{:?}",
            d.unknown
        );
    }

    #[test]
    fn loss_matches_mathis() {
        let mut s = stream(8 << 20, 20_000, 5.0);
        // 1 % of segments retransmitted.
        s.bytes_sent = 1448 * 100_000;
        s.retransmits = Some(1000);
        let mathis = 1448.0 * 8.0 / 0.020 * 1.2247 / 0.1;
        let d = diagnose(&ev(mathis * 0.9, s));
        assert_eq!(d.limit, Some(Limit::Loss));
        assert!((d.predicted_bps.unwrap_or(0.0) / mathis - 1.0).abs() < 0.01);
    }

    #[test]
    fn rate_cap_is_the_application() {
        let mut e = ev(49.8e6, stream(8 << 20, 15_000, 5.0));
        e.target_bps = Some(50e6);
        let d = diagnose(&e);
        assert_eq!(d.limit, Some(Limit::Application));
        assert_eq!(d.predicted_bps, Some(50e6));
    }

    #[test]
    fn idle_sender_is_the_application() {
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.busy_us = Some(1_000_000);
        let d = diagnose(&ev(100e6, s));
        assert_eq!(d.limit, Some(Limit::Application));
    }

    #[test]
    fn saturated_receiver_is_cpu() {
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.rwnd_limited_us = Some(4_000_000);
        let mut e = ev(300e6, s);
        e.cpu_receiver = Some(Cpu {
            process_pct: 99.0,
            system_busy_pct: Some(60.0),
            softirq_pct: Some(10.0),
            ..Cpu::default()
        });
        let d = diagnose(&e);
        assert_eq!(d.limit, Some(Limit::Cpu), "{:?}", d.findings);
        assert!(d.secondary.contains(&Limit::ReceiveWindow));
    }

    #[test]
    fn throttled_receiver_is_cpu() {
        // A CPU quota: the receiving thread ran 10 % of the time and waited 88 %.
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.rwnd_limited_us = Some(4_500_000);
        let mut e = ev(120e6, s);
        e.cpu_receiver = Some(Cpu {
            process_pct: 10.0,
            thread_cpu_pct: Some(10.0),
            thread_wait_pct: Some(88.0),
            ..Cpu::default()
        });
        let d = diagnose(&e);
        assert_eq!(d.limit, Some(Limit::Cpu), "{:?}", d.findings);
        assert!(
            d.summary.contains("waited 88% of it for a CPU"),
            "{}",
            d.summary
        );
        // Waiting far more than running is starvation even below a whole core.
        e.cpu_receiver = Some(Cpu {
            process_pct: 1.0,
            thread_cpu_pct: Some(1.0),
            thread_wait_pct: Some(60.0),
            ..Cpu::default()
        });
        assert_eq!(diagnose(&e).limit, Some(Limit::Cpu));
        // An idle receiver thread is not a CPU limit.
        e.cpu_receiver = Some(Cpu {
            process_pct: 5.0,
            thread_cpu_pct: Some(5.0),
            thread_wait_pct: Some(1.0),
            ..Cpu::default()
        });
        assert_ne!(diagnose(&e).limit, Some(Limit::Cpu));
    }

    #[test]
    fn small_mss_is_path_mtu() {
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.mss = Some(524);
        let d = diagnose(&ev(860e6, s));
        assert_eq!(d.limit, Some(Limit::PathMtu), "{:?}", d.findings);
    }

    #[test]
    fn short_test_in_slow_start_is_congestion() {
        let mut s = stream(8 << 20, 15_000, 1.0);
        s.max_cwnd = Some(300_000);
        let mut e = ev(150e6, s);
        e.duration_s = 1.0;
        let d = diagnose(&e);
        assert_eq!(d.limit, Some(Limit::Congestion), "{:?}", d.findings);
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
        assert_eq!(d.limit, None);
        assert!(d.summary.contains("give --link"), "{}", d.summary);
        assert!(d.fixes.is_empty());
    }

    #[test]
    fn contradictory_counters_lower_confidence() {
        // TCP says rwnd-limited, but the advertised window would allow far more
        // than was measured: still the window, but not with high confidence.
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.rwnd_limited_us = Some(3_000_000);
        let d = diagnose(&ev(100e6, s));
        assert_eq!(d.limit, Some(Limit::ReceiveWindow));
        assert_eq!(d.findings[0].confidence, Confidence::Medium);
    }

    #[test]
    fn reads_a_stock_iperf3_document() {
        let doc: serde_json::Value =
            serde_json::from_str(include_str!("../tests/fixtures/iperf3-3.12-forward.json"))
                .expect("fixture");
        let e = Evidence::from_json(&doc, None).expect("evidence");
        assert!(e.tcp && !e.reverse && !e.peer_is_plumb);
        assert_eq!(e.streams.len(), 1);
        assert_eq!(e.streams[0].max_snd_wnd, Some(6_930_432));
        assert!(e.unknown.iter().any(|u| u.contains("not plumb")));
        assert!(e.unknown.iter().any(|u| u.contains("--link")));
        let d = diagnose(&e);
        // Loopback at 40 Gbit/s: iperf3 3.12 used a whole core sending.
        assert_eq!(d.limit, Some(Limit::Cpu), "{:?}", d.findings);
        assert!(d.summary.contains("CPU on the sender"), "{}", d.summary);
    }
}
