//! The CPU rule: a core saturated at either end, or a data thread held
//! back (a cgroup's CPU quota, other processes). There is no rate model for
//! a CPU: the share of the test the thread was runnable, or the share of
//! its quota's periods that ran out, is what shows it binding. A thread
//! starved of CPU names it too, but only when nothing else accounts for the
//! rate ([`promote_starved`], after weighing).

use plumb_model::units::sig;

use super::context::Context;
use crate::evidence::{Cpu, Evidence};
use crate::finding::line;
use crate::human::mbps;
use crate::seen::Seen;
use crate::tolerance::{MISSING_FACTOR, TOLERANCE};
use plumb_record::diagnosis::{Confidence, EvidenceLine, Finding, Limit, Status};

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

/// Without thread figures (a stock iperf3 peer), the process's CPU per
/// stream, as a share of one core, stands in, and must cover this much: a
/// process that is not busy most of the time has no CPU limit to show.
pub const CPU_BINDING_SHARE: f64 = 0.8;

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
    ends(ev)
        .into_iter()
        .find(|(who, _)| f.what == format!("CPU on the {who}"))
        .and_then(|(_, c)| quota_binds(&c?))
}

/// The ends whose CPU the rule weighs, receiver first.
fn ends(ev: &Evidence) -> [(&'static str, Option<Cpu>); 2] {
    [("receiver", ev.cpu_receiver), ("sender", ev.cpu_sender)]
}

/// The data thread's CPU and run-queue wait, percent of the test, when
/// the end reported them.
fn thread(c: &Cpu) -> Option<(f64, f64)> {
    c.thread_cpu_pct.zip(c.thread_wait_pct)
}

/// One finding for each end whose CPU shows a limit.
pub(crate) fn seen(cx: &Context) -> Vec<Seen> {
    ends(cx.ev)
        .into_iter()
        .filter_map(|(who, c)| end_seen(cx, who, &c?))
        .collect()
}

/// One end's CPU, when its process, its data thread, its machine or its
/// cgroup quota shows a limit.
fn end_seen(cx: &Context, who: &str, c: &Cpu) -> Option<Seen> {
    let per_stream = c.process_pct / cx.n;
    let machine = c.system_busy_pct.unwrap_or(0.0);
    let thread = thread(c);
    // Starved: the thread spent a good part of the test runnable but not
    // running, and more of it waiting than working. A thread that
    // sleeps because it has caught up does not wait on the run queue.
    let starved = thread
        .is_some_and(|(used, wait)| wait >= 20.0 && (wait >= 2.0 * used || used + wait >= 85.0));
    let busy_thread = thread.is_some_and(|(used, _)| used >= 90.0);
    // The machine-wide figure includes everything else running (a lab's
    // emulator, other tests), so it counts only with the process busy too.
    let loaded = machine >= 98.0 && per_stream >= 50.0;
    // A cgroup quota that ran out in most of its periods.
    let quota = quota_binds(c);
    if !(per_stream >= 90.0 || busy_thread || starved || loaded || quota.is_some()) {
        return None;
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
    let sentence = sentence(cx, c, quota, busy_thread);
    let (sentence, share) = match udp_excuse(cx, who) {
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
    s.evidence = evidence(who, c);
    Some(s)
}

/// The end's process, thread, machine and quota figures.
fn evidence(who: &str, c: &Cpu) -> Vec<EvidenceLine> {
    let mut e = vec![line(
        &format!("{who} process CPU"),
        c.process_pct,
        "% of one core",
    )];
    if let Some((used, wait)) = thread(c) {
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
    e
}

/// What the end's CPU did: its quota ran out, its thread waited, or its
/// process (and machine) was busy.
fn sentence(cx: &Context, c: &Cpu, quota: Option<(f64, f64)>, busy_thread: bool) -> String {
    let machine = c.system_busy_pct.unwrap_or(0.0);
    match (quota, thread(c)) {
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
            mbps(cx.measured)
        ),
    }
}

/// UDP has no flow control, so a CPU binds what arrives only where the
/// datagrams stop: a receiver whose socket dropped none kept up with
/// everything that arrived, and a sender that sent well over what arrived
/// was held by the loss, not by its CPU. The clause that says so, which
/// leaves the finding no binding share.
fn udp_excuse(cx: &Context, who: &str) -> Option<String> {
    cx.ev.udp.and_then(|u| match who {
        "receiver" => (u.socket_drops == Some(0)).then(|| {
            "; but its socket dropped no datagram, so it kept up with all that arrived".to_string()
        }),
        _ => u
            .sent_bps
            .filter(|s| *s > cx.measured * (1.0 + TOLERANCE))
            .map(|s| {
                format!(
                    "; but it sent {}, far more than arrived, so the loss, not its CPU, set the rate received",
                    mbps(s)
                )
            }),
    })
}

/// A starved data thread: when nothing else accounts for the rate, its
/// wait binds at [`CPU_STARVED_SHARE`] (a UDP excuse left it no share).
/// The caller asks only when no finding explains the rate or binds.
pub(crate) fn promote_starved(ev: &Evidence, findings: &mut [Finding]) {
    // The CPU findings of threads that waited past CPU_STARVED_SHARE and
    // ten times as long as they ran, by `what`.
    let starved_hard: Vec<String> = ends(ev)
        .into_iter()
        .filter(|(_, c)| {
            c.as_ref().and_then(thread).is_some_and(|(used, wait)| {
                wait >= CPU_STARVED_SHARE * 100.0 && wait >= 10.0 * used
            })
        })
        .map(|(who, _)| format!("CPU on the {who}"))
        .collect();
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

#[cfg(test)]
mod tests {
    use super::quota_of;
    use crate::testing::*;
    use crate::tolerance::MISSING_FACTOR;

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
}
