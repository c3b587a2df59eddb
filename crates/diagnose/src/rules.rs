//! The rules: which limits the evidence shows, what each predicts, and which
//! of them explains the measured rate.
//!
//! Each rule looks at its own evidence (TCP's limit counters, windows,
//! buffers, retransmissions, CPU, the MSS, the link) and, when that evidence
//! is there, records a [`Finding`] with the rate its `plumb-model` formula
//! predicts (or none, for a cause with no rate model). Nothing is ranked by
//! a fixed order: a finding can be primary only if its prediction explains
//! the measured rate within its tolerance, or its TCP counters show it
//! binding for a share of the test; among those the highest confidence wins.
//! When none qualifies the answer is "unexplained", with what was measured.
//! A rule never fires on evidence that is missing. `docs/diagnosis.md` gives
//! the reasoning.

use plumb_model::tcp;
use plumb_model::units::{sig, thousands};
use plumb_model::{Bytes, LossRate, Rtt};

use crate::evidence::{Cpu, Evidence, LinkSource};
use crate::finding::line;
use crate::fixes;
use crate::human::{bytes, mbps, ms, pct};
use crate::latency;

pub use crate::diagnosis::Diagnosis;
pub use crate::figures::Figures;
pub use crate::finding::{Confidence, EvidenceLine, Finding, Fix, Limit, Status};
pub use crate::human::{human_count, human_rate};
pub use crate::payload::{efficiency, sndbuf_payload, udp_efficiency, UDP_PAYLOAD};
pub use crate::tolerance::{
    explains, BINDING_SHARE, CONTRADICTED_SHARE, MISSING_FACTOR, TOLERANCE,
};

/// The tolerance of the send-buffer model, wider because the payload share
/// of a buffer ([`sndbuf_payload`]) is itself an estimate: in the lab the
/// rate was 0.9–1.24 of the prediction (cubic 1.19, bbr 0.997 in the
/// recorded 64 KiB runs).
pub const SNDBUF_TOLERANCE: f64 = 0.35;

/// The tolerance of the Mathis loss bound. Its constant depends on the ACK
/// strategy and loss pattern (√(3/2) = 1.22, used here, for periodic loss
/// without delayed ACKs; √(3/4) = 0.87 with them; random loss moves it
/// again), retransmissions only approximate losses, and
/// CUBIC gains on Reno as the BDP grows: a factor of 1.5 either way. The
/// recorded Reno and CUBIC runs at 0.8–0.9 % retransmitted measured 1.02 and
/// 1.07 of it.
pub const MATHIS_TOLERANCE: f64 = 0.5;

/// The share of the test a data thread must spend running or waiting to run
/// for the CPU to bind: a thread that is runnable most of the time never
/// caught up. Waiting alone is common on a busy machine without binding
/// anything (a receiver thread was runnable 51 % of a 64 KiB send-buffer run
/// while the buffer held the rate, `lab-sndbuf-bbr.json`); under the lab's
/// 1 % CPU quota at 15 ms the receiver was runnable 94–95 % in four early
/// runs but 73–75 % in later ones (`lab-farcpu-sleeps.json`): each time the
/// quota lets it drain its buffer, it sleeps about a round trip until the
/// window it opened brings data back, so a quota over a long path shows
/// less than full runnable time. The bar sits between 51 % and 73 %.
pub const CPU_THREAD_BINDING_SHARE: f64 = 0.65;

/// A data thread that waited for a CPU at least this share of the test,
/// and ten times as long as it ran, was starved: when no other cause
/// explains the rate or binds, that names the CPU. Under the lab's 1 % quota
/// the receiver's runnable share moved with the machine's load from run to
/// run (94-95 %, 73-75 %, then 48-61 % with a test build beside it), and a
/// reader on a loaded machine waited 40-53 % while a send buffer held the
/// rate (`lab-sndbuf-bbr.json`: 50 %): waiting alone cannot tell them
/// apart, what else explains the rate can.
pub const CPU_STARVED_SHARE: f64 = 0.4;

/// The share of a cgroup's CPU-quota periods in which the quota must run
/// out for it to bind. A quota that ran out in most periods stopped the
/// end's threads for the rest of each of them; that is what a CPU limit on
/// a container does, and the kernel's own counters say it, where a thread's
/// wait also moves with whatever else the machine runs. Under the lab's 1 %
/// and 5 % quotas the far end's ran out in every period of the test.
pub const CGROUP_THROTTLED_SHARE: f64 = 0.5;

/// The quota and the share of periods it ran out in, when a cgroup's CPU
/// quota held this end: it ran out in at least [`CGROUP_THROTTLED_SHARE`]
/// of its periods, and this end's own process used at least half of it (a
/// quota that other processes in the group spent is theirs to explain).
pub fn quota_binds(c: &Cpu) -> Option<(f64, f64)> {
    c.quota_pct
        .zip(c.throttled_pct)
        .filter(|(q, t)| *t >= CGROUP_THROTTLED_SHARE * 100.0 && c.process_pct >= 0.5 * q)
}

/// The quota behind a CPU finding, as [`quota_binds`] gives it for the
/// finding's end; `None` for any other finding.
pub fn quota_of(f: &Finding, ev: &Evidence) -> Option<(f64, f64)> {
    if f.limit != Limit::Cpu {
        return None;
    }
    [("receiver", ev.cpu_receiver), ("sender", ev.cpu_sender)]
        .into_iter()
        .find(|(who, _)| f.what == format!("CPU on the {who}"))
        .and_then(|(_, c)| quota_binds(&c?))
}

/// Without thread figures (a stock iperf3 peer), the process's CPU per
/// stream, as a share of one core, stands in, and must cover this much: a
/// process that is not busy most of the time has no CPU limit to show.
pub const CPU_BINDING_SHARE: f64 = 0.8;

/// The third field of `net.ipv4.tcp_rmem` ("min default max"), the most
/// receive-buffer autotuning grows to.
fn rmem_max(sysctls: &std::collections::BTreeMap<String, String>) -> Option<u64> {
    mem_max(sysctls, "net.ipv4.tcp_rmem")
}

/// The maximum (third field) of a `tcp_rmem`/`tcp_wmem` triple, if it parses.
fn mem_max(sysctls: &std::collections::BTreeMap<String, String>, key: &str) -> Option<u64> {
    sysctls.get(key)?.split_whitespace().nth(2)?.parse().ok()
}

/// A UDP receiver that lost at least this share of the datagrams sent is
/// shown with the loss; below it, loss is noise for a rate question.
pub const UDP_LOSS_SEEN: f64 = 0.01;

/// A rule's raw observation, before it is weighed.
struct Seen {
    limit: Limit,
    what: String,
    sentence: String,
    predicted: Option<f64>,
    tolerance: Option<f64>,
    share: Option<f64>,
    share_needed: f64,
    /// The prediction is a bound only: it can rule the cause out (when it
    /// allows far more than was measured) but not explain the rate alone.
    bound_only: bool,
    missing: Vec<String>,
    evidence: Vec<EvidenceLine>,
}

impl Seen {
    fn new(limit: Limit, what: &str, sentence: String) -> Seen {
        Seen {
            limit,
            what: what.into(),
            sentence,
            predicted: None,
            tolerance: None,
            share: None,
            share_needed: BINDING_SHARE,
            bound_only: false,
            missing: Vec::new(),
            evidence: Vec::new(),
        }
    }

    fn model(mut self, predicted: f64, tolerance: f64) -> Seen {
        self.predicted = Some(predicted);
        self.tolerance = Some(tolerance);
        self
    }

    fn counters(mut self, share: Option<f64>) -> Seen {
        self.share = share.map(|s| s.clamp(0.0, 1.0));
        self
    }

    /// Weighs the observation against the measured rate.
    ///
    /// Support from the model is 0.5–1 when the prediction explains the
    /// rate (1 when they agree exactly, 0.5 at the edge of the tolerance),
    /// else 0; support from the counters is the share of the test they
    /// cover, halved when they do not reach their bar and halved again when
    /// the limit's own prediction contradicts the measurement. The two combine as independent pieces
    /// of evidence, 1 − (1 − a)(1 − b), and each missing piece of evidence
    /// takes [`MISSING_FACTOR`] of what is left.
    fn weigh(self, measured: f64) -> Finding {
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
        let binds = self.share.is_some_and(|s| s >= need);
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
        let confidence = (support * MISSING_FACTOR.powi(self.missing.len() as i32)).clamp(0.0, 1.0);
        Finding {
            limit: self.limit,
            what: self.what,
            sentence: self.sentence,
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

/// Weighs the evidence. The one entry point: every evidence source (a `-J`
/// document, the model alone, a live connection) builds an [`Evidence`].
pub fn diagnose(ev: &Evidence) -> Diagnosis {
    let rtt = ev.rtt_s();
    let mss = ev.mss();
    // Linux sends timestamps unless told not to; a full-size segment then carries 1448 B.
    let ts = ev
        .sysctl_sender
        .get("net.ipv4.tcp_timestamps")
        .is_none_or(|v| v.trim() != "0");
    let full = if ts { 1448 } else { 1460 };
    let mut figures = Figures::base(ev, ts);
    let link_goodput = figures.goodput_bps;
    let measured = ev.measured_bps;
    let mut unknown = ev.unknown.clone();
    if !ev.tcp {
        unknown.push(
            "TCP's window, buffer and congestion evidence: UDP has none, so this UDP test is weighed by its rate cap, its loss, the link and CPU".into(),
        );
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
    let counters_known = ev.streams.iter().any(|s| s.busy_us.is_some());
    let no_counters = || "the sender's TCP limit counters".to_string();
    let rtt_missing = |m: &mut Vec<String>| {
        if !ev.streams.iter().any(|s| s.srtt_us.is_some_and(|r| r > 0)) {
            m.push("the smoothed RTT (the minimum was used)".into());
        }
    };
    let busy = ev.fraction(|s| s.busy_us);
    let rwnd = ev.fraction(|s| s.rwnd_limited_us);
    let sndbuf = ev.fraction(|s| s.sndbuf_limited_us);
    let n = ev.streams.len().max(1) as f64;
    let mut seen: Vec<Seen> = Vec::new();

    // Receive window: window / RTT, and TCP's rwnd_limited time.
    if let (Some(w), Some(r)) = (ev.window(), rtt) {
        let predicted = w as f64 * 8.0 / r;
        let near = (0.5..=2.0).contains(&(measured / predicted.max(1.0)));
        if rwnd.is_some_and(|f| f >= 0.05) || near {
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
            // The receiver's own ceiling for autotuning: with a plumb peer
            // it came across in the results, so it is the far host's when
            // the client sends.
            if let Some(m) = rmem_max(&ev.sysctl_receiver) {
                e.push(line("receiver's net.ipv4.tcp_rmem maximum", m as f64, "B"));
            }
            rtt_line(&mut e);
            let mut s = Seen::new(
                Limit::ReceiveWindow,
                "the receive window",
                format!(
                    "{} per {} round trip allows {}{}",
                    bytes(w),
                    ms(r),
                    mbps(predicted),
                    rwnd.filter(|f| *f >= 0.05)
                        .map_or(String::new(), |f| format!(
                            "; TCP counted {}% of the test limited by it",
                            pct(f)
                        ))
                ),
            )
            .model(predicted, TOLERANCE)
            .counters(rwnd);
            if !counters_known {
                s.missing.push(no_counters());
            }
            rtt_missing(&mut s.missing);
            s.evidence = e;
            seen.push(s);
        }
    }

    // Send buffer: its payload per RTT, and TCP's sndbuf_limited time. Both
    // count: under cubic, Linux 6.18 left sndbuf_limited at 0 while a
    // 128 KiB buffer held a 1 Gb/s, 15 ms path to 66 Mbit/s (the lab,
    // --sndbuf 64K). An autotuned buffer follows the congestion window, and
    // the RTT it is divided by grows with the queue, so its size cannot
    // explain a rate alone (under a 1 % CPU quota at the receiver a 4 MiB
    // buffer over a 63 ms RTT "allowed" the measured 425 Mbit/s); it is shown
    // when the counters point at it, and a size that allows far more than
    // was measured raises the counters' bar.
    if let Some(r) = rtt {
        let buf: Option<u64> = {
            let b: Vec<u64> = ev.streams.iter().filter_map(|s| s.sndbuf_actual).collect();
            (!b.is_empty()).then(|| b.iter().sum())
        };
        let allows = buf.map(|b| sndbuf_payload(b) * 8.0 / r);
        let fixed = !ev.streams.is_empty() && ev.streams.iter().all(|s| s.sndbuf_set);
        if sndbuf.is_some_and(|f| f >= 0.05) || (fixed && allows.is_some()) {
            let mut e = Vec::new();
            if let Some(f) = sndbuf {
                e.push(line(
                    "time limited by the send buffer (TCP_INFO sndbuf_limited)",
                    f * 100.0,
                    "% of the test",
                ));
            }
            if let Some(b) = buf {
                e.push(line(
                    &format!(
                        "sender SO_SNDBUF granted ({})",
                        if fixed { "set by hand" } else { "autotuned" }
                    ),
                    b as f64,
                    "B",
                ));
            }
            // The sender's ceiling for autotuning its buffer: the far host's
            // with a plumb peer when the server sends (-R).
            if let Some(m) = mem_max(&ev.sysctl_sender, "net.ipv4.tcp_wmem") {
                e.push(line("sender's net.ipv4.tcp_wmem maximum", m as f64, "B"));
            }
            rtt_line(&mut e);
            let mut s = Seen::new(
                Limit::SendBuffer,
                "the sender's socket buffer",
                format!(
                    "{} of send buffer per {} round trip allows about {}{}",
                    buf.map_or("its".to_string(), bytes),
                    ms(r),
                    allows.map_or_else(|| "an unknown rate".into(), mbps),
                    sndbuf
                        .filter(|f| *f >= 0.05)
                        .map_or(String::new(), |f| format!(
                            "; TCP counted {}% of the test limited by it",
                            pct(f)
                        ))
                ),
            )
            .counters(sndbuf);
            if let Some(p) = allows {
                s = s.model(p, SNDBUF_TOLERANCE);
                s.bound_only = !fixed;
            } else {
                s.missing.push("the sender's granted SO_SNDBUF".into());
            }
            rtt_missing(&mut s.missing);
            s.evidence = e;
            seen.push(s);
        }
    }

    // Application: a rate cap, or a sender that had nothing to send.
    let idle = busy.map(|b| 1.0 - b);
    if let Some(target) = ev.target_bps {
        let e = vec![
            line(
                "application rate cap (-b × streams)",
                target / 1e6,
                "Mbit/s",
            ),
            line("measured", measured / 1e6, "Mbit/s"),
        ];
        let sentence = match ev.udp.and_then(|u| u.sent_bps) {
            Some(sent) => format!(
                "the sender was asked for {}, sent {} and the receiver got {}",
                mbps(target),
                mbps(sent),
                mbps(measured)
            ),
            None => format!(
                "the sender was asked for {} and sent {}",
                mbps(target),
                mbps(measured)
            ),
        };
        let mut s = Seen::new(Limit::Application, "the application", sentence)
            .model(target, TOLERANCE)
            .counters(idle);
        s.evidence = e;
        seen.push(s);
    } else if let Some(i) = idle.filter(|i| *i >= 0.05) {
        let mut s = Seen::new(
            Limit::Application,
            "the application",
            format!(
                "the sender had nothing to send {}% of the test; the application, not TCP, set the pace (no rate model: plumb predicts no rate for it)",
                pct(i)
            ),
        )
        .counters(idle);
        s.evidence = vec![line(
            "sender busy (TCP_INFO busy_time)",
            (1.0 - i) * 100.0,
            "% of the test",
        )];
        seen.push(s);
    }

    // UDP loss: datagrams that never arrived. Nothing predicts a rate from
    // it; the share lost is how much of what was sent it took. Drops in the
    // receiving socket (its buffer full: the reader fell behind) are the
    // receiver's. The rest were lost on the path; when the link explains
    // what arrived, the sender offered more than the link carries and the
    // loss is the link's doing, shown but not binding on its own.
    if let Some(u) = ev.udp.filter(|u| u.lost_fraction() >= UDP_LOSS_SEEN) {
        let lost = u.lost_fraction();
        let in_socket = u.socket_drops.filter(|d| *d * 2 >= u.lost && *d > 0);
        let link_explains = link_goodput
            .filter(|_| {
                ev.link
                    .as_ref()
                    .is_some_and(|l| !matches!(l.source, LinkSource::BestInterval))
            })
            .is_some_and(|g| explains(measured, g, TOLERANCE));
        let mut e = vec![
            line("datagrams sent", u.datagrams as f64, "datagrams"),
            line("datagrams lost", lost * 100.0, "% of those sent"),
        ];
        if let Some(d) = u.socket_drops {
            e.push(line(
                "dropped by the receiving socket (buffer full)",
                d as f64,
                "datagrams",
            ));
        }
        if let Some(b) = u.rcvbuf_granted {
            e.push(line("receiver SO_RCVBUF granted", b as f64, "B"));
        }
        if let Some(sent) = u.sent_bps {
            e.push(line("sent", sent / 1e6, "Mbit/s"));
        }
        let (what, sentence) = match in_socket {
            Some(d) => (
                "datagrams dropped by the receiving socket",
                format!(
                    "{}% of the datagrams sent were lost, {} of {} of them in the receiving socket, whose buffer was full: the reader did not keep up",
                    pct(lost),
                    thousands(d),
                    thousands(u.lost)
                ),
            ),
            None => (
                "datagram loss",
                format!(
                    "{}% of the datagrams sent were lost on the way; UDP does not slow down for loss",
                    pct(lost)
                ),
            ),
        };
        let mut s = Seen::new(Limit::Loss, what, sentence);
        if in_socket.is_some() || !link_explains {
            s = s.counters(Some(lost));
        }
        if u.socket_drops.is_none() {
            s.missing
                .push("where the datagrams were lost: the receiver is not plumb".into());
        }
        s.evidence = e;
        seen.push(s);
    }

    // CPU: a core saturated at either end, or a data thread held back (a
    // CPU quota, other processes). There is no rate model for a CPU: the
    // share of the test the thread was runnable is what shows it binding.
    // The CPU findings of threads starved past CPU_STARVED_SHARE, by `what`.
    let mut starved_hard: Vec<String> = Vec::new();
    for (who, cpu) in [("receiver", ev.cpu_receiver), ("sender", ev.cpu_sender)] {
        let Some(c) = cpu else { continue };
        let per_stream = c.process_pct / n;
        let machine = c.system_busy_pct.unwrap_or(0.0);
        let thread = c.thread_cpu_pct.zip(c.thread_wait_pct);
        // Starved: the thread spent a good part of the test runnable but not
        // running, and more of it waiting than working. A thread that
        // sleeps because it has caught up does not wait on the run queue.
        let starved = thread.is_some_and(|(used, wait)| {
            wait >= 20.0 && (wait >= 2.0 * used || used + wait >= 85.0)
        });
        if thread
            .is_some_and(|(used, wait)| wait >= CPU_STARVED_SHARE * 100.0 && wait >= 10.0 * used)
        {
            starved_hard.push(format!("CPU on the {who}"));
        }
        let busy_thread = thread.is_some_and(|(used, _)| used >= 90.0);
        // The machine-wide figure includes everything else running (a lab's
        // emulator, other tests), so it counts only with the process busy too.
        let loaded = machine >= 98.0 && per_stream >= 50.0;
        // A cgroup quota that ran out in most of its periods.
        let quota = quota_binds(&c);
        if !(per_stream >= 90.0 || busy_thread || starved || loaded || quota.is_some()) {
            continue;
        }
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
        if let Some(q) = c.quota_pct {
            e.push(line(&format!("{who} cgroup CPU quota"), q, "% of one core"));
        }
        if let Some(t) = c.throttled_pct {
            e.push(line(
                &format!("{who} cgroup quota ran out"),
                t,
                "% of its periods",
            ));
        }
        let runnable = match thread {
            Some((used, wait)) => (used + wait) / 100.0,
            None => per_stream / 100.0,
        };
        // The kernel's own count binds where the thread's wait, which moves
        // with the rest of the machine's load, might not.
        let runnable = match quota {
            Some((_, t)) => runnable.max(t / 100.0),
            None => runnable,
        };
        let sentence = match (quota, thread) {
            (Some((q, t)), _) => format!(
                "its cgroup's CPU quota ({}% of one core) ran out in {}% of the scheduler's periods during the test and stopped its threads until the next; plumb has no rate model for a CPU, so it predicts no rate",
                sig(q, 3),
                sig(t, 3),
            ),
            (None, Some((used, wait))) if !busy_thread => format!(
                "its data thread ran {}% of the test and waited {}% of it for a CPU (a CPU quota or other processes); plumb has no rate model for a CPU, so it predicts no rate",
                sig(used, 3),
                sig(wait, 3),
            ),
            (None, _) => format!(
                "it used {}% of a core{} to move {}; plumb has no rate model for a CPU, so it predicts no rate",
                sig(c.process_pct, 3),
                if machine >= 98.0 { format!(" and the machine was {}% busy", sig(machine, 3)) } else { String::new() },
                mbps(measured)
            ),
        };
        // UDP has no flow control, so a CPU binds what arrives only where
        // the datagrams stop: a receiver whose socket dropped none kept up
        // with everything that arrived, and a sender that sent well over
        // what arrived was held by the loss, not by its CPU.
        let udp_excuse = ev.udp.and_then(|u| match who {
            "receiver" => (u.socket_drops == Some(0))
                .then(|| "; but its socket dropped no datagram, so it kept up with all that arrived".to_string()),
            _ => u.sent_bps.filter(|s| *s > measured * (1.0 + TOLERANCE)).map(|s| {
                format!(
                    "; but it sent {}, far more than arrived, so the loss, not its CPU, set the rate received",
                    mbps(s)
                )
            }),
        });
        let (sentence, share) = match udp_excuse {
            Some(x) => (sentence + &x, None),
            None => (sentence, Some(runnable)),
        };
        let mut s = Seen::new(Limit::Cpu, &format!("CPU on the {who}"), sentence).counters(share);
        s.share_needed = if quota.is_some() {
            CGROUP_THROTTLED_SHARE
        } else if thread.is_some() {
            CPU_THREAD_BINDING_SHARE
        } else {
            CPU_BINDING_SHARE
        };
        if thread.is_none() {
            s.missing
                .push(format!("the {who}'s data-thread CPU and run-queue wait"));
        }
        s.evidence = e;
        seen.push(s);
    }

    // Path MTU: segments far below what Ethernet carries. The link full of
    // small segments is what it predicts.
    if let (Some(m), Some(l)) = (mss, &ev.link) {
        if m < 1200 && !matches!(l.source, LinkSource::BestInterval) {
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
            seen.push(s);
        }
    }

    // Loss: retransmissions against Mathis, for loss-based congestion control.
    let loss = ev.loss_rate();
    if let (Some(p), Some(r)) = (loss.filter(|p| *p > 0.0), rtt) {
        let m = mss.unwrap_or(full);
        let bbr = ev.congestion.as_deref() == Some("bbr");
        let mathis = LossRate::from_probability(p.min(1.0))
            .zip(Rtt::from_secs(r))
            .map(|(l, t)| tcp::mathis_rate(Bytes(m), t, l).bps() * n);
        let fits = mathis.is_some_and(|x| explains(measured, x, MATHIS_TOLERANCE));
        if p >= 1e-3 || (fits && !bbr) {
            let retr: u64 = ev.streams.iter().filter_map(|s| s.retransmits).sum();
            let given = ev.loss_probability.is_some();
            let mut e = if given {
                vec![line("loss (given)", p * 100.0, "%")]
            } else {
                vec![
                    line("retransmitted segments", retr as f64, "segments"),
                    line("retransmission rate", p * 100.0, "%"),
                ]
            };
            rtt_line(&mut e);
            if let Some(cc) = &ev.congestion {
                e.push(line(&format!("congestion control {cc}"), 0.0, ""));
            }
            let what = if given {
                format!("{}% loss", sig(p * 100.0, 2))
            } else {
                format!("{}% of segments retransmitted", sig(p * 100.0, 2))
            };
            let mut s = if bbr {
                Seen::new(
                    Limit::Loss,
                    "packet loss",
                    format!("{what}; BBR does not back off on random loss, and plumb has no loss model for it, so it predicts no rate"),
                )
            } else {
                let x = mathis.unwrap_or(0.0);
                Seen::new(
                    Limit::Loss,
                    "packet loss",
                    format!(
                        "{what} at {} RTT caps {} at {} (Mathis)",
                        ms(r),
                        if n > 1.0 {
                            format!("{n} Reno/CUBIC streams")
                        } else {
                            "a Reno/CUBIC stream".into()
                        },
                        mbps(x)
                    ),
                )
                .model(x, MATHIS_TOLERANCE)
            };
            if ev.congestion.is_none() {
                s.missing
                    .push("the sender's congestion control (Mathis models Reno/CUBIC)".into());
            }
            if mss.is_none() {
                s.missing.push(format!("the MSS ({full} B assumed)"));
            }
            rtt_missing(&mut s.missing);
            s.evidence = e;
            seen.push(s);
        }
    }

    // The link: its goodput. More than it can carry means the stated link
    // rate is wrong, not that the link limits; a rate known only from the
    // best interval predicts nothing (it is the measurement itself).
    if let (Some(g), Some(l)) = (link_goodput, &ev.link) {
        if matches!(l.source, LinkSource::BestInterval) {
            // Nothing to weigh.
        } else if measured > 1.1 * g {
            unknown.push(format!(
                "the link rate: {} measured is more than a {} link carries, so the link is faster than stated",
                mbps(measured),
                mbps(l.bps)
            ));
        } else if explains(measured, g, TOLERANCE) {
            let mut s = Seen::new(
                Limit::Link,
                "the link itself",
                format!(
                    "{} is {}% of the {} a {} link carries as {} payload. Nothing to fix",
                    mbps(measured),
                    sig(measured / g * 100.0, 3),
                    mbps(g),
                    mbps(l.bps),
                    if ev.tcp { "TCP" } else { "UDP" }
                ),
            )
            .model(g, TOLERANCE);
            if matches!(l.source, LinkSource::Interface(_)) {
                s.missing
                    .push("the link rate (the interface's speed was used)".into());
            }
            if mss.is_none() && ev.tcp {
                s.missing.push(format!("the MSS ({full} B assumed)"));
            }
            s.evidence = vec![
                line("link rate", l.bps / 1e6, "Mbit/s"),
                line(
                    if ev.tcp {
                        "link TCP goodput"
                    } else {
                        "link UDP goodput"
                    },
                    g / 1e6,
                    "Mbit/s",
                ),
            ];
            seen.push(s);
        }
    }

    let mut findings: Vec<Finding> = seen.into_iter().map(|s| s.weigh(measured)).collect();

    // Congestion: when nothing else accounts for the rate, no loss, below
    // the link: the congestion window never grew (slow start in a short test).
    let quiet_loss = loss.is_none_or(|p| p < 1e-4);
    let below_link = link_goodput.is_some_and(|g| measured < g / (1.0 + TOLERANCE));
    if !findings.iter().any(Finding::candidate) && quiet_loss && below_link {
        let cwnd: u64 = ev.streams.iter().filter_map(|s| s.max_cwnd).sum();
        if let (Some(r), true) = (rtt, cwnd > 0) {
            let predicted = cwnd as f64 * 8.0 / r;
            let mut e = vec![line("largest congestion window", cwnd as f64, "B")];
            rtt_line(&mut e);
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
            rtt_missing(&mut s.missing);
            s.evidence = e;
            findings.push(s.weigh(measured));
        }
    }

    // A starved data thread: when nothing else accounts for the rate, its
    // wait binds at CPU_STARVED_SHARE (a UDP excuse left it no share).
    if !findings.iter().any(Finding::candidate) {
        if let Some(f) = findings.iter_mut().find(|f| {
            f.limit == Limit::Cpu
                && starved_hard.contains(&f.what)
                && f.binding_share.is_some_and(|x| x >= CPU_STARVED_SHARE)
        }) {
            f.counters_bind = true;
            f.status = Status::Binding;
            let share = f.binding_share.unwrap_or(0.0);
            f.confidence = (share * MISSING_FACTOR.powi(f.missing.len() as i32)).clamp(0.0, 1.0);
            f.level = Confidence::of(f.confidence);
        }
    }

    // The primary: the most confident finding that explains the rate or
    // binds by its counters. Ties keep the rules' order above.
    findings.sort_by(|a, b| {
        b.candidate()
            .cmp(&a.candidate())
            .then(b.confidence.total_cmp(&a.confidence))
    });
    let primary = findings.first().filter(|f| f.candidate()).map(|f| f.limit);
    if primary.is_some() {
        findings[0].status = Status::Primary;
    }

    if primary.is_some() {
        figures.settle(&findings, measured, n);
    }

    let summary = match findings.first().filter(|_| primary.is_some()) {
        Some(f) => lead(f, &figures),
        None => unexplained(ev, &figures, &findings),
    };
    let mut evidence = findings
        .first()
        .filter(|_| primary.is_some())
        .map(|f| f.evidence.clone())
        .unwrap_or_default();
    evidence.push(line(
        "measured goodput (receiver)",
        measured / 1e6,
        "Mbit/s",
    ));
    if primary.is_none() {
        let mut path = Vec::new();
        rtt_line(&mut path);
        evidence.extend(path);
    }
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
        .map(|p| fixes::for_limit(p, ev, &figures, &findings))
        .unwrap_or_default();
    let first = findings.first().filter(|_| primary.is_some());
    Diagnosis {
        limit: primary,
        secondary: findings
            .iter()
            .skip(usize::from(primary.is_some()))
            .map(|f| f.limit)
            .collect(),
        measured_bps: measured,
        predicted_bps: first.filter(|f| f.explains).and_then(|f| f.predicted_bps),
        tolerance: first.filter(|f| f.explains).and_then(|f| f.tolerance),
        confidence: first.map(|f| f.confidence),
        link_bps: link_goodput,
        link_source: ev.link.as_ref().map(|l| match &l.source {
            LinkSource::Given => "given".to_string(),
            LinkSource::Interface(i) => format!("interface {i}"),
            LinkSource::BestInterval => "best interval".to_string(),
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

/// The lead sentence when `f` is the primary finding: "Limited by" its
/// cause, its clause, and what the link could carry. Public so that other
/// evidence sources (a live connection) that add findings of their own word
/// the answer the same way.
pub fn lead(f: &Finding, figures: &Figures) -> String {
    format!(
        "Limited by {}: {}{}.",
        f.what,
        f.sentence,
        match figures.goodput_bps {
            Some(g) if figures.goodput_is_lower_bound => format!(
                "; the best interval reached {} (the link rate is not known)",
                mbps(g)
            ),
            Some(g) if f.limit != Limit::Link => format!("; the link could carry {}", mbps(g)),
            _ => String::new(),
        }
    )
}

/// The lead sentence when nothing explains the rate: what was measured, and
/// what would have told more.
fn unexplained(ev: &Evidence, figures: &Figures, findings: &[Finding]) -> String {
    let mut s = format!("Unexplained: {} measured", mbps(ev.measured_bps));
    if ev.duration_s > 0.0 {
        s += &format!(" over {} s", sig(ev.duration_s, 3));
    }
    if let Some(r) = figures.rtt_s {
        s += &format!(" at {} RTT", ms(r));
    }
    match (figures.goodput_bps, &ev.link) {
        (Some(g), Some(l)) if !matches!(l.source, LinkSource::BestInterval) => {
            s += &format!(
                ", {}% of the {} a {} link carries",
                sig(ev.measured_bps / g * 100.0, 3),
                mbps(g),
                mbps(l.bps)
            );
        }
        _ => {}
    }
    s += "; no cause plumb models predicts this rate";
    if !findings.is_empty() {
        s += " (what was seen is listed below, with what each allows)";
    }
    if ev.link.is_none()
        || ev
            .link
            .as_ref()
            .is_some_and(|l| matches!(l.source, LinkSource::BestInterval))
    {
        s += "; give --link with the link rate so plumb can tell a full link from a limited one";
    }
    s + "."
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{Cpu, LinkRate, StreamTcp};
    use proptest::prelude::*;

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

    /// A lab run recorded with `plumb lab --rate 1gbit … -J` (see the
    /// fixture's `lab` and `start` keys for its configuration).
    fn recorded(name: &str, link_bps: f64) -> Evidence {
        let path = format!(
            "{}/tests/fixtures/lab-{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).expect("fixture");
        let doc: serde_json::Value = serde_json::from_str(&text).expect("fixture JSON");
        Evidence::from_json(
            &doc,
            Some(LinkRate {
                bps: link_bps,
                source: LinkSource::Given,
            }),
        )
        .expect("evidence")
    }

    fn status(d: &Diagnosis, l: Limit) -> Option<Status> {
        d.findings.iter().find(|f| f.limit == l).map(|f| f.status)
    }

    /// The property every answer keeps: a primary explains the rate or
    /// binds by its counters; a predicted rate in the answer is within its
    /// tolerance of the measurement; no primary means "unexplained".
    fn consistent(d: &Diagnosis) {
        match d.primary() {
            Some(f) => {
                assert_eq!(f.status, Status::Primary);
                assert!(f.explains || f.counters_bind, "{f:?}");
            }
            None => {
                assert_eq!(d.limit_name(), "unexplained");
                assert!(d.summary.starts_with("Unexplained: "), "{}", d.summary);
                assert!(d.fixes.is_empty());
            }
        }
        if let Some(p) = d.predicted_bps {
            let t = d.tolerance.expect("a prediction comes with its tolerance");
            assert!(explains(d.measured_bps, p, t), "{} vs {p}", d.measured_bps);
        }
        for f in &d.findings {
            assert!((0.0..=1.0).contains(&f.confidence), "{f:?}");
            assert_eq!(f.level, Confidence::of(f.confidence));
        }
    }

    #[test]
    fn the_senders_wmem_ceiling_is_evidence_for_the_send_buffer() {
        let e = {
            let mut e = recorded("sndbuf-cubic", 1e9);
            e.sysctl_sender
                .insert("net.ipv4.tcp_wmem".into(), "4096 16384 4194304".into());
            e.sysctl_receiver
                .insert("net.ipv4.tcp_wmem".into(), "4096 16384 777".into());
            e
        };
        let d = diagnose(&e);
        let f = d
            .findings
            .iter()
            .find(|f| f.limit == Limit::SendBuffer)
            .expect("the send buffer is seen");
        let l = f
            .evidence
            .iter()
            .find(|l| l.what == "sender's net.ipv4.tcp_wmem maximum")
            .expect("the sender's ceiling is cited");
        assert_eq!(l.value, 4_194_304.0);
    }

    #[test]
    fn the_receivers_rmem_ceiling_is_evidence_for_the_receive_window() {
        let mut s = stream(17_520, 15_000, 5.0);
        s.rwnd_limited_us = Some(4_900_000);
        let mut e = ev(9.2e6, s);
        e.sysctl_receiver
            .insert("net.ipv4.tcp_rmem".into(), "4096 131072 6291456".into());
        // The sender's own value must not be the one shown.
        e.sysctl_sender
            .insert("net.ipv4.tcp_rmem".into(), "4096 131072 999".into());
        let d = diagnose(&e);
        assert_eq!(d.limit, Some(Limit::ReceiveWindow));
        let lines = &d.findings[0].evidence;
        let l = lines
            .iter()
            .find(|l| l.what == "receiver's net.ipv4.tcp_rmem maximum")
            .expect("the receiver's ceiling is cited");
        assert_eq!((l.value, l.unit.as_str()), (6_291_456.0, "B"));
        // A value that does not parse is left out, not guessed.
        e.sysctl_receiver
            .insert("net.ipv4.tcp_rmem".into(), "4096 lots".into());
        assert!(!diagnose(&e).findings[0]
            .evidence
            .iter()
            .any(|l| l.what.contains("tcp_rmem")));
    }

    #[test]
    fn backup_scenario_is_the_receive_window() {
        let mut s = stream(17_520, 15_000, 5.0);
        s.rwnd_limited_us = Some(4_900_000);
        s.bytes_sent = 5_800_000;
        let d = diagnose(&ev(9.2e6, s));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::ReceiveWindow));
        assert!((d.predicted_bps.unwrap_or(0.0) - 9_344_000.0).abs() < 1.0);
        assert_eq!(d.findings[0].level, Confidence::High);
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
        // No receiver sysctls in this evidence: no line claims one.
        assert!(!d.findings[0]
            .evidence
            .iter()
            .any(|l| l.what.contains("tcp_rmem")));
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
        // One set of figures: the streams that carry the goodput at 9.344
        // Mbit/s each, the same number the figures give.
        let goodput = 1e9 * efficiency(1448, true);
        let n = (goodput / 9_344_000.0).ceil() as u64;
        assert_eq!(d.figures.streams_needed, Some(n));
        assert!(
            par.commands[0].starts_with(&format!("{n} parallel streams (plumb -c HOST -P {n};")),
            "{:?}",
            par.commands
        );
        assert!(d
            .fixes
            .iter()
            .all(|f| f.expected_bps.is_none_or(|e| (e - goodput).abs() < 1.0)));
    }

    /// The figures of one answer agree with each other: the window needed
    /// carries the goodput in one round trip, the streams needed carry it
    /// at today's rate and one fewer would not, and the linux fix quotes
    /// the same window.
    #[test]
    fn one_set_of_figures() {
        let d = diagnose(&ev(9.2e6, stream(17_520, 15_000, 5.0)));
        let f = &d.figures;
        let g = f.goodput_bps.expect("goodput");
        assert_eq!(d.link_bps, Some(g));
        let w = f.window_needed_bytes.expect("window needed") as f64;
        assert!((w * 8.0 / 0.015 - g).abs() <= 8.0 / 0.015, "{w}");
        let (n, p) = (
            f.streams_needed.expect("n") as f64,
            f.per_stream_bps.expect("p"),
        );
        assert!(n * p >= g && (n - 1.0) * p < g, "{n} x {p} against {g}");
        assert_eq!(f.expect_bps, Some(g));
        let linux = d.fixes.iter().find(|x| x.os == "linux").expect("linux");
        assert!(linux.note.contains(&thousands(w as u64)), "{}", linux.note);
        assert!(d.summary.contains(&mbps(g)), "{}", d.summary);
    }

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

    /// BBR under 1 % loss carried 532 Mbit/s of 941.5: Mathis does not
    /// apply, the autotuned send buffer's 31 % sndbuf_limited comes with a
    /// size that allows 2.4 times the rate. Nothing explains it.
    #[test]
    fn loss_under_bbr_recorded() {
        let d = diagnose(&recorded("bbr-loss", 1e9));
        consistent(&d);
        assert_eq!(d.limit, None, "{}", d.summary);
        assert_eq!(d.limit_name(), "unexplained");
        let loss = d
            .findings
            .iter()
            .find(|f| f.limit == Limit::Loss)
            .expect("loss seen");
        assert_eq!(loss.status, Status::NotBinding);
        assert_eq!(loss.predicted_bps, None, "no loss model for BBR");
        assert!(d.summary.contains("531.9 Mbit/s measured"), "{}", d.summary);
        // The same loss under Reno: Mathis explains it.
        let d = diagnose(&recorded("reno-loss", 1e9));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Loss), "{}", d.summary);
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
    fn send_buffer() {
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.sndbuf_limited_us = Some(4_500_000);
        s.sndbuf_actual = Some(131_072);
        s.sndbuf_set = true;
        let d = diagnose(&ev(53e6, s.clone()));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::SendBuffer));
        let p = d.predicted_bps.unwrap_or(0.0);
        assert!((p - 0.8 * 131_072.0 * 8.0 / 0.015).abs() < 1.0, "{p}");
        assert!(d
            .fixes
            .iter()
            .any(|f| f.commands.iter().any(|c| c.contains("wmem_max"))));
        // Autotuned, the same size is only a bound: the counters name it,
        // and the answer quotes no predicted rate.
        s.sndbuf_set = false;
        let d = diagnose(&ev(53e6, s));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::SendBuffer));
        assert_eq!(d.predicted_bps, None);
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
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::SendBuffer), "{:?}", d.findings);
        // Only the model speaks (ratio 1.24 of a 35 % band): not high.
        assert!(
            d.findings[0].level < Confidence::High,
            "{:?}",
            d.findings[0]
        );
        // The same size, autotuned, says nothing about the limit.
        s.sndbuf_set = false;
        let d = diagnose(&ev(66.5e6, s.clone()));
        assert_ne!(d.limit, Some(Limit::SendBuffer), "{:?}", d.findings);
        // A fixed buffer far larger than the rate needs is seen, not binding.
        s.sndbuf_set = true;
        s.sndbuf_actual = Some(4 << 20);
        let d = diagnose(&ev(66.5e6, s));
        assert_eq!(status(&d, Limit::SendBuffer), Some(Status::NotBinding));
    }

    #[test]
    fn full_link_needs_no_fix() {
        let d = diagnose(&ev(935e6, stream(8 << 20, 15_000, 5.0)));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Link));
        assert!(d.summary.contains("Nothing to fix"), "{}", d.summary);
    }

    /// Without a stated link the best interval stands in for it, but it is
    /// the measurement itself: it predicts nothing and names no full link.
    #[test]
    fn a_link_from_the_best_interval_names_nothing() {
        let mut e = ev(935e6, stream(8 << 20, 15_000, 5.0));
        e.link = Some(LinkRate {
            bps: 950e6,
            source: LinkSource::BestInterval,
        });
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, None, "{}", d.summary);
        assert!(d.summary.contains("give --link"), "{}", d.summary);
    }

    #[test]
    fn a_link_slower_than_measured_is_not_believed() {
        let d = diagnose(&ev(3e9, stream(8 << 20, 100, 5.0)));
        consistent(&d);
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
        let d = diagnose(&ev(mathis * 0.9, s.clone()));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Loss));
        assert!((d.predicted_bps.unwrap_or(0.0) / mathis - 1.0).abs() < 0.01);
        // Three times Mathis: the loss does not explain it.
        let d = diagnose(&ev(mathis * 3.0, s));
        consistent(&d);
        assert_eq!(status(&d, Limit::Loss), Some(Status::NotBinding));
    }

    /// Loss under BBR: no Mathis, so loss never binds by prediction; the
    /// link, if full, is the answer.
    #[test]
    fn loss_under_bbr() {
        let mut s = stream(8 << 20, 20_000, 5.0);
        s.bytes_sent = 1448 * 100_000;
        s.retransmits = Some(2000);
        let mut e = ev(300e6, s);
        e.congestion = Some("bbr".into());
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, None, "{}", d.summary);
        assert_eq!(status(&d, Limit::Loss), Some(Status::NotBinding));
        e.measured_bps = 900e6;
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Link), "{}", d.summary);
        assert_eq!(status(&d, Limit::Loss), Some(Status::NotBinding));
    }

    #[test]
    fn rate_cap_is_the_application() {
        let mut e = ev(49.8e6, stream(8 << 20, 15_000, 5.0));
        e.target_bps = Some(50e6);
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Application));
        assert_eq!(d.predicted_bps, Some(50e6));
        // A window that allows 60 Mbit/s competes: the cap is closer.
        let mut e = ev(49.8e6, stream(112_500, 15_000, 5.0));
        e.target_bps = Some(50e6);
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Application), "{:?}", d.findings);
        assert_eq!(status(&d, Limit::ReceiveWindow), Some(Status::Binding));
        // The window's 9.3 Mbit/s against a 50 Mbit/s cap: the window.
        let mut e = ev(9.2e6, stream(17_520, 15_000, 5.0));
        e.target_bps = Some(50e6);
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::ReceiveWindow));
        assert_eq!(status(&d, Limit::Application), Some(Status::NotBinding));
    }

    #[test]
    fn idle_sender_is_the_application() {
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.busy_us = Some(1_000_000);
        let d = diagnose(&ev(100e6, s));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Application));
        assert_eq!(d.predicted_bps, None, "no rate model for an idle sender");
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
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Cpu), "{:?}", d.findings);
        assert!(d.secondary.contains(&Limit::ReceiveWindow));
        // No rate model: no prediction that echoes the measurement.
        assert_eq!(d.findings[0].predicted_bps, None);
        assert_eq!(d.predicted_bps, None);
        assert!(d.summary.contains("no rate model"), "{}", d.summary);
        // Without the thread figures the confidence is lower than with them.
        assert!(d.findings[0].confidence < 0.99 * MISSING_FACTOR + 1e-9);
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
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Cpu), "{:?}", d.findings);
        assert!(
            d.summary.contains("waited 88% of it for a CPU"),
            "{}",
            d.summary
        );
        // Waiting 60 % of the test is seen, but a thread runnable only 61 %
        // of it caught up the rest of the time: not binding, and TCP's
        // rwnd_limited (90 %) names the window.
        e.cpu_receiver = Some(Cpu {
            process_pct: 1.0,
            thread_cpu_pct: Some(1.0),
            thread_wait_pct: Some(60.0),
            ..Cpu::default()
        });
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(status(&d, Limit::Cpu), Some(Status::NotBinding));
        assert_eq!(d.limit, Some(Limit::ReceiveWindow));
        // An idle receiver thread is not a CPU limit at all.
        e.cpu_receiver = Some(Cpu {
            process_pct: 5.0,
            thread_cpu_pct: Some(5.0),
            thread_wait_pct: Some(1.0),
            ..Cpu::default()
        });
        assert_eq!(status(&diagnose(&e), Limit::Cpu), None);
    }

    #[test]
    fn a_cgroup_quota_that_ran_out_names_the_cpu() {
        // The lab's 1 % quota on a loaded machine: the thread ran 1 % and
        // waited 30 %, which alone binds nothing, but the cgroup's quota ran
        // out in 39 of its 40 periods; the window counted 90 % limited, as a
        // receiver that cannot drain closes it.
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.rwnd_limited_us = Some(4_500_000);
        let mut e = ev(120e6, s);
        let quota = Cpu {
            process_pct: 1.0,
            thread_cpu_pct: Some(1.0),
            thread_wait_pct: Some(30.0),
            quota_pct: Some(1.0),
            throttled_pct: Some(97.5),
            ..Cpu::default()
        };
        e.cpu_receiver = Some(quota);
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Cpu), "{:?}", d.findings);
        assert!(
            d.summary
                .contains("CPU quota (1% of one core) ran out in 97.5% of the scheduler's periods"),
            "{}",
            d.summary
        );
        assert!(
            d.fixes.iter().any(|f| f
                .note
                .contains("CPU quota of the cgroup that ran out (receiver: 1% of one core)")),
            "{:?}",
            d.fixes
        );
        let primary = d.primary().expect("a primary");
        assert_eq!(quota_of(primary, &e), Some((1.0, 97.5)));
        // The quota's own share, not the finding's binding share, which a
        // thread runnable longer than the quota ran out sets higher.
        e.cpu_receiver = Some(Cpu {
            thread_wait_pct: Some(98.0),
            throttled_pct: Some(60.0),
            ..quota
        });
        let d = diagnose(&e);
        let primary = d.primary().expect("a primary");
        assert_eq!(primary.binding_share, Some(0.99));
        assert_eq!(quota_of(primary, &e), Some((1.0, 60.0)));
        // Without the quota's counters the same thread figures name the window.
        e.cpu_receiver = Some(Cpu {
            quota_pct: None,
            throttled_pct: None,
            ..quota
        });
        assert_eq!(diagnose(&e).limit, Some(Limit::ReceiveWindow));
        // A quota that ran out, but mostly spent by other processes in the
        // group (this end used a tenth of it), is not this end's limit.
        e.cpu_receiver = Some(Cpu {
            quota_pct: Some(10.0),
            ..quota
        });
        assert_eq!(diagnose(&e).limit, Some(Limit::ReceiveWindow));
        // A quota that ran out in a tenth of its periods binds nothing either.
        e.cpu_receiver = Some(Cpu {
            throttled_pct: Some(10.0),
            ..quota
        });
        let d = diagnose(&e);
        assert_eq!(d.limit, Some(Limit::ReceiveWindow), "{:?}", d.findings);
        assert!(!d.fixes.iter().any(|f| f.note.contains("CPU quota")));
    }

    #[test]
    fn a_starved_thread_names_the_cpu_only_when_nothing_else_does() {
        // The lab's 1 % quota with a test build beside it: ran 1 %, waited
        // 48 %, runnable under the 65 % bar; nothing else explains 680 Mbit/s.
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.rwnd_limited_us = Some(0);
        let mut e = ev(680e6, s);
        let starved = Cpu {
            process_pct: 1.0,
            thread_cpu_pct: Some(1.0),
            thread_wait_pct: Some(48.0),
            ..Cpu::default()
        };
        e.cpu_receiver = Some(starved);
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Cpu), "{:?}", d.findings);
        assert!((d.confidence.unwrap_or(0.0) - 0.49).abs() < 1e-9);
        // Waiting that long is no starvation for a thread that also ran a
        // fifth of the test (not ten times as long waiting as running).
        e.cpu_receiver = Some(Cpu {
            process_pct: 20.0,
            thread_cpu_pct: Some(20.0),
            thread_wait_pct: Some(40.0),
            ..Cpu::default()
        });
        assert_eq!(diagnose(&e).limit, None);
        // And with a cause that binds (TCP counted 90 % rwnd-limited), the
        // starved thread is only seen.
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.rwnd_limited_us = Some(4_500_000);
        let mut e = ev(120e6, s);
        e.cpu_receiver = Some(starved);
        let d = diagnose(&e);
        assert_eq!(d.limit, Some(Limit::ReceiveWindow));
        assert_eq!(status(&d, Limit::Cpu), Some(Status::NotBinding));
    }

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

    #[test]
    fn contradictory_counters_lower_confidence() {
        // TCP says rwnd-limited 60 % of the test, but the largest advertised
        // window would allow far more than was measured: still the window,
        // named by its counters, with less confidence than when it agrees.
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.rwnd_limited_us = Some(3_000_000);
        let d = diagnose(&ev(100e6, s.clone()));
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::ReceiveWindow));
        assert_eq!(
            d.predicted_bps, None,
            "its prediction does not explain the rate"
        );
        s.max_snd_wnd = Some(190_000);
        let agreeing = diagnose(&ev(100e6, s));
        assert!(agreeing.findings[0].confidence > d.findings[0].confidence + 0.3);
        // 31 % with a contradicting window is not enough to name it.
        let mut s = stream(8 << 20, 15_000, 5.0);
        s.rwnd_limited_us = Some(1_550_000);
        let d = diagnose(&ev(100e6, s));
        assert_eq!(status(&d, Limit::ReceiveWindow), Some(Status::NotBinding));
    }

    #[test]
    fn missing_evidence_lowers_confidence() {
        let full = diagnose(&ev(9.2e6, stream(17_520, 15_000, 5.0)));
        let mut s = stream(17_520, 15_000, 5.0);
        s.busy_us = None;
        s.rwnd_limited_us = None;
        s.sndbuf_limited_us = None;
        let thin = diagnose(&ev(9.2e6, s));
        assert_eq!(thin.limit, Some(Limit::ReceiveWindow));
        assert!(thin.findings[0].confidence < full.findings[0].confidence);
        assert!(!thin.findings[0].missing.is_empty());
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
        consistent(&d);
        // Loopback at 40 Gbit/s: iperf3 3.12 used a whole core sending.
        assert_eq!(d.limit, Some(Limit::Cpu), "{:?}", d.findings);
        assert!(d.summary.contains("CPU on the sender"), "{}", d.summary);
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
                        min_rtt_us: Some(rtt),
                        srtt_us: Some((rtt as f64 * (1.0 + f)) as u64),
                        max_cwnd: Some(cwnd),
                        max_snd_wnd: Some(wnd),
                        retransmits: Some(retr),
                        bytes_retrans: None,
                        bytes_sent: sent,
                        busy_us: us(busy),
                        rwnd_limited_us: us(rw * busy),
                        sndbuf_limited_us: us(sb * busy * (1.0 - rw)),
                        sndbuf_actual: buf,
                        sndbuf_set: set,
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
            if let (Some(n), Some(p), Some(g)) = (f.streams_needed, f.per_stream_bps, f.goodput_bps) {
                prop_assert!(n as f64 * p >= g * (1.0 - 1e-9));
                prop_assert!((n as f64 - 1.0) * p < g);
            }
            if let (Some(w), Some(r), Some(g)) = (f.window_needed_bytes, f.rtt_s, f.goodput_bps) {
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

    fn fixture(file: &str, link_bps: Option<f64>) -> Evidence {
        let path = format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect("fixture");
        let doc: serde_json::Value = serde_json::from_str(&text).expect("fixture JSON");
        let link = link_bps.map(|bps| LinkRate {
            bps,
            source: LinkSource::Given,
        });
        Evidence::from_json(&doc, link).expect("evidence")
    }

    /// No UDP answer claims TCP evidence, missing or present.
    fn no_tcp_claims(d: &Diagnosis) {
        for u in &d.unknown {
            assert!(!u.contains("limit counters"), "{u}");
        }
        assert!(d.unknown.iter().any(|u| u.starts_with("TCP's window")));
        for f in &d.findings {
            assert!(!f.sentence.contains("window"), "{}", f.sentence);
        }
    }

    #[test]
    fn udp_documents_read_their_datagram_counts() {
        // iperf3 3.12 as client and server: sum_received carries the loss.
        let e = fixture("iperf3-3.12-udp-cap.json", None);
        let u = e.udp.expect("UDP evidence");
        assert!(!e.tcp);
        assert_eq!((u.datagrams, u.lost), (382, 2));
        assert_eq!(u.socket_drops, None, "a stock iperf3 receiver counts none");
        assert!((u.sent_bps.unwrap_or(0.0) - 50_067_701.56).abs() < 1.0);
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Application), "{}", d.summary);
        assert!(status(&d, Limit::Loss).is_none(), "0.5 % is below the bar");
        no_tcp_claims(&d);
    }

    #[test]
    fn udp_over_a_200_mbit_lab_link_is_the_link_with_its_loss_shown() {
        // plumb lab --rate 200mbit --rtt 15ms -- -u -b 1G -t 3
        let e = fixture("lab-udp-over-link.json", Some(200e6));
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Link), "{}", d.summary);
        // UDP goodput of 1448-byte datagrams: 1448 / (1448 + 8 + 20 + 38).
        let g = 200e6 * 1448.0 / 1514.0;
        assert!((d.link_bps.unwrap_or(0.0) - g).abs() < 1.0);
        assert!(d.summary.contains("as UDP payload"), "{}", d.summary);
        assert_eq!(status(&d, Limit::Loss), Some(Status::NotBinding));
        // The receiver's socket dropped nothing: its CPU is not the limit.
        let cpu = d.findings.iter().filter(|f| f.limit == Limit::Cpu);
        assert!(cpu.clone().all(|f| f.status == Status::NotBinding));
        let offer = d
            .fixes
            .iter()
            .find(|f| f.os == "application")
            .expect("offer less");
        assert_eq!(offer.commands, vec!["plumb -c HOST -u -b 191M".to_string()]);
        no_tcp_claims(&d);
    }

    #[test]
    fn udp_cap_on_a_1_gbit_lab_link_is_the_application() {
        let e = fixture("lab-udp-cap.json", Some(1e9));
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Application), "{}", d.summary);
        assert!(
            d.summary.contains("asked for 100 Mbit/s, sent"),
            "{}",
            d.summary
        );
        no_tcp_claims(&d);
    }

    #[test]
    fn udp_socket_drops_name_the_receiving_socket_not_the_sender_cpu() {
        // Loopback, -u -b 0 -w 8K: 2.1 Gbit/s sent, 73 % dropped by a
        // 16 KiB receive buffer.
        let e = fixture("loopback-udp-socket-drops.json", None);
        let u = e.udp.expect("UDP evidence");
        assert_eq!(u.socket_drops, Some(274_031));
        assert_eq!(u.rcvbuf_granted, Some(16_384));
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::Loss), "{}", d.summary);
        let p = d.primary().expect("primary");
        assert_eq!(p.what, "datagrams dropped by the receiving socket");
        assert!(p.counters_bind && !p.explains);
        assert_eq!(status(&d, Limit::Cpu), Some(Status::NotBinding));
        let fix = d
            .fixes
            .iter()
            .find(|f| f.os == "receiver")
            .expect("buffer fix");
        assert!(
            fix.commands[0].starts_with("plumb -c HOST -u -w 8M"),
            "{:?}",
            fix.commands
        );
        no_tcp_claims(&d);
    }
}
