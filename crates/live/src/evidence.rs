//! Diagnosis evidence from a live connection: a [`Track`]'s delta turned
//! into `plumb-diagnose`'s [`Evidence`], from whichever end this host is,
//! and the few live-only facts the test-document rules cannot see (a
//! receiving application that does not read, an idle connection, what the
//! receiving end cannot know about the sender).

use plumb_diagnose::evidence::{Cpu, LinkRate, StreamTcp};
use plumb_diagnose::rules::{Confidence, EvidenceLine, Finding};
use plumb_diagnose::{diagnose, Diagnosis, Evidence, Limit};

use crate::track::{Role, Track};

/// CPU of the process that owns the socket, over the sampling period.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcCpu {
    /// All its threads on a CPU, percent of one core.
    pub process_pct: f64,
    /// Its busiest thread on a CPU, percent of the period.
    pub thread_cpu_pct: f64,
    /// The same thread runnable but waiting for a CPU, percent of the period.
    pub thread_wait_pct: f64,
}

/// What goes beside the socket's own counters.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The link rate, when known.
    pub link: Option<LinkRate>,
    /// CPU of the owning process, when it is known.
    pub cpu: Option<ProcCpu>,
    /// Owning process known (pid).
    pub pid: Option<u32>,
}

/// The evidence a sampled connection gives, as the rules read it.
pub fn evidence(tr: &Track, ctx: &Context) -> Evidence {
    let d = tr.delta();
    let t = tr.last.tcp.unwrap_or_default();
    let mem = tr.last.mem;
    let sender = d.role != Role::Receiver;
    let measured = if sender { d.send_bps } else { d.recv_bps };
    let mut unknown = Vec::new();
    let min_rtt = t.min_rtt.filter(|r| *r > 0).map(u64::from);
    // CPU counts only where it could be what holds the transfer back. A
    // thread that sleeps more than half the time waits for the network or
    // its peer: on a loaded host each of its many wake-ups still queues for a
    // CPU, and that adds up to a large "wait" share (40-53 % for a reader
    // that ran 1 %, measured on a 2-core machine under build load). A
    // receiver whose queue stays drained keeps up, however long it queued for
    // a CPU; a sender held by the peer's window or its buffer is held by
    // them, not by its CPU.
    let share = |us: Option<u64>| us.map_or(0.0, |u| u as f64 / 1e6 / d.secs.max(1e-3));
    let cpu_can_bind = if sender {
        share(d.rwnd_limited_us) < 0.3 && share(d.sndbuf_limited_us) < 0.3
    } else {
        tr.rq_full * 2 >= tr.samples
    };
    let cpu = ctx
        .cpu
        .filter(|c| cpu_can_bind && c.thread_cpu_pct + c.thread_wait_pct >= 50.0)
        .map(|c| Cpu {
            process_pct: c.process_pct,
            thread_cpu_pct: Some(c.thread_cpu_pct),
            thread_wait_pct: Some(c.thread_wait_pct),
            system_busy_pct: None,
            softirq_pct: None,
        });
    let stream = if sender {
        // Autotuning grows the send buffer as the window grows; a buffer
        // that never moved while it stayed full was fixed by the application.
        let fixed = !tr.sndbuf_moved && tr.sq_full * 2 >= tr.samples;
        StreamTcp {
            mss: Some(u64::from(t.snd_mss)).filter(|m| *m > 0),
            min_rtt_us: min_rtt,
            srtt_us: tr.mean_rtt_us(),
            max_cwnd: Some(tr.max_cwnd_bytes),
            max_snd_wnd: Some(u64::from(tr.max_snd_wnd)).filter(|w| *w > 0),
            retransmits: Some(d.retrans),
            bytes_retrans: d.bytes_retrans,
            bytes_sent: d.acked,
            busy_us: d.busy_us,
            rwnd_limited_us: d.rwnd_limited_us,
            sndbuf_limited_us: d.sndbuf_limited_us,
            sndbuf_actual: mem.map(|m| u64::from(m.sndbuf)),
            sndbuf_set: fixed,
        }
    } else {
        // The receiver sees the window it advertises, not the sender's cwnd,
        // retransmits or send buffer.
        unknown.push(
            "the sender's congestion window, retransmits, send buffer and limit counters: only the sending host sees them (run plumb why there)".into(),
        );
        let rtt = if t.rtt > 0 {
            Some(u64::from(t.rtt))
        } else {
            None
        };
        StreamTcp {
            mss: Some(u64::from(t.rcv_mss)).filter(|m| *m > 0),
            min_rtt_us: min_rtt,
            srtt_us: tr.mean_rtt_us().or(rtt),
            max_snd_wnd: Some(u64::from(tr.max_rcv_wnd))
                .filter(|w| *w > 0)
                .or_else(|| Some(u64::from(t.rcv_ssthresh)).filter(|w| *w > 0)),
            bytes_sent: d.received,
            ..StreamTcp::default()
        }
    };
    if ctx.pid.is_none() {
        unknown.push("the owning process and its CPU: not found in /proc/*/fd (another namespace, or not permitted)".into());
    }
    if ctx.link.is_none() {
        unknown.push("the link rate: give --link (e.g. --link 1g)".into());
    }
    Evidence {
        tcp: true,
        reverse: false,
        bidir: false,
        duration_s: d.secs,
        measured_bps: measured,
        best_interval_bps: tr.best_bps,
        target_bps: None,
        link: ctx.link.clone(),
        streams: vec![stream],
        rcvbuf_actual: if sender {
            None
        } else {
            mem.map(|m| u64::from(m.rcvbuf))
        },
        congestion: if sender {
            tr.last.congestion.clone()
        } else {
            None
        },
        cpu_sender: if sender { cpu } else { None },
        cpu_receiver: if sender { None } else { cpu },
        sysctl_sender: Default::default(),
        sysctl_receiver: Default::default(),
        sender_is_local: sender,
        peer_is_plumb: false,
        unknown,
    }
}

fn line(what: &str, value: f64, unit: &str) -> EvidenceLine {
    EvidenceLine {
        what: what.into(),
        value,
        unit: unit.into(),
    }
}

/// Diagnoses a sampled connection: the rules over [`evidence`], plus what
/// only a live receiver shows.
pub fn explain(tr: &Track, ctx: &Context) -> (Diagnosis, Evidence) {
    let ev = evidence(tr, ctx);
    let d = tr.delta();
    let mut dg = diagnose(&ev);
    if d.role == Role::Idle {
        dg.limit = None;
        dg.secondary.clear();
        dg.findings.clear();
        dg.fixes.clear();
        dg.predicted_bps = None;
        dg.evidence
            .retain(|e| e.what.starts_with("measured") || e.what.starts_with("link rate"));
        dg.summary = format!(
            "Idle: {} moved over {:.1} s; nothing limits a connection that has nothing to send.",
            plumb_diagnose::rules::human_rate(ev.measured_bps),
            d.secs
        );
        return (dg, ev);
    }
    if d.role == Role::Receiver {
        // Without the sender's cwnd a "congestion" verdict would rest on nothing.
        dg.findings.retain(|f| f.limit != Limit::Congestion);
        // A full receive queue: the window is small because the application
        // does not read, not because the buffer is.
        let full = tr.rq_full * 2 >= tr.samples && tr.samples >= 3;
        if full {
            let m = tr.last.mem.unwrap_or_default();
            dg.findings.insert(
                0,
                Finding {
                    limit: Limit::Application,
                    predicted_bps: ev.measured_bps,
                    sentence: format!(
                        "Limited by the receiving application: it did not read fast enough; its receive queue held at least 3/4 of the {} B receive buffer in {} of {} samples, so the window this host advertises stayed shut.",
                        m.rcvbuf, tr.rq_full, tr.samples
                    ),
                    evidence: vec![
                        line("receive queue memory (SKMEMINFO rmem_alloc), last sample", f64::from(m.rmem_alloc), "B"),
                        line("receive buffer (SKMEMINFO rcvbuf)", f64::from(m.rcvbuf), "B"),
                        line("unread bytes (receive queue), last sample", f64::from(tr.last.recv_queue), "B"),
                    ],
                    confidence: Confidence::Medium,
                },
            );
        }
        // The receive-window finding gets the receiver's own numbers.
        let t = tr.last.tcp.unwrap_or_default();
        for f in dg
            .findings
            .iter_mut()
            .filter(|f| f.limit == Limit::ReceiveWindow)
        {
            f.evidence.push(line(
                "receive-buffer autotuning space (TCP_INFO rcv_space)",
                f64::from(t.rcv_space),
                "B",
            ));
            f.evidence.push(line(
                "window clamp in use (TCP_INFO rcv_ssthresh)",
                f64::from(t.rcv_ssthresh),
                "B",
            ));
            if tr.min_rcv_wnd != u32::MAX {
                f.evidence.push(line(
                    "smallest window advertised (TCP_INFO rcv_wnd)",
                    f64::from(tr.min_rcv_wnd),
                    "B",
                ));
            }
        }
        match dg.findings.first() {
            Some(f) => {
                dg.limit = Some(f.limit);
                dg.predicted_bps = Some(f.predicted_bps);
                dg.summary = f.sentence.clone();
                dg.evidence = f.evidence.clone();
                dg.evidence.push(line(
                    "measured goodput (receiver)",
                    ev.measured_bps / 1e6,
                    "Mbit/s",
                ));
                dg.secondary = dg.findings.iter().skip(1).map(|f| f.limit).collect();
                if full {
                    dg.fixes = vec![plumb_diagnose::rules::Fix {
                        os: "application".into(),
                        commands: vec!["read the socket sooner and in larger reads; move slow work (disk, decompression) off the reading thread".into()],
                        expected_bps: None,
                        note: "let the receiving application keep up".into(),
                    }];
                }
            }
            None => {
                dg.limit = None;
                dg.predicted_bps = None;
                dg.secondary.clear();
                dg.fixes.clear();
                dg.evidence
                    .retain(|e| e.what.starts_with("measured") || e.what.starts_with("link rate"));
                dg.summary = format!(
                    "No limit identified from the receiving end: {} received; the sender's limits are visible only on the sending host.",
                    plumb_diagnose::rules::human_rate(ev.measured_bps)
                );
            }
        }
    }
    if d.role == Role::Sender {
        // TCP's busy time counts a paced writer as busy whenever anything is
        // in flight, which on a long path is nearly always; what shows the
        // writer is the limit is a send queue with nothing unsent and a
        // congestion window left unfilled, sample after sample.
        let share = |us: Option<u64>| us.map_or(0.0, |u| u as f64 / 1e6 / d.secs.max(1e-3));
        // A writer blocked on a full send buffer is not waiting for itself.
        let waiting =
            tr.samples >= 3 && tr.app_waiting * 4 >= tr.samples * 3 && tr.sq_full * 2 < tr.samples;
        let tcp_limited = share(d.rwnd_limited_us) >= 0.3 || share(d.sndbuf_limited_us) >= 0.3;
        let cpu = dg.findings.iter().any(|f| f.limit == Limit::Cpu);
        let already = dg.limit == Some(Limit::Application);
        if waiting && !tcp_limited && !cpu && !already {
            let t = tr.last.tcp.unwrap_or_default();
            dg.findings.retain(|f| f.limit != Limit::Application);
            dg.findings.insert(
                0,
                Finding {
                    limit: Limit::Application,
                    predicted_bps: ev.measured_bps,
                    sentence: format!(
                        "Limited by the sending application: in {} of {} samples it had written nothing TCP had not yet sent, and the congestion window ({} segments) was not full; it sent {}{}.",
                        tr.app_waiting,
                        tr.samples,
                        t.snd_cwnd,
                        plumb_diagnose::rules::human_rate(ev.measured_bps),
                        ev.link.as_ref().map_or(String::new(), |l| format!(" on a {} link", plumb_diagnose::rules::human_rate(l.bps)))
                    ),
                    evidence: vec![
                        line("samples with nothing unsent and cwnd not full (TCP_INFO notsent_bytes, unacked < cwnd)", f64::from(tr.app_waiting), "samples"),
                        line("samples", f64::from(tr.samples), "samples"),
                    ],
                    confidence: Confidence::Medium,
                },
            );
            promote(&mut dg, &ev, "write sooner and in larger writes; lift any rate cap; keep more requests outstanding", "let the sending application offer more data");
        }
    }
    // A sender that "had nothing to send" while its thread waited for a CPU
    // had nothing because it could not run: the CPU is the cause. (A test's
    // application finding can rest on a rate cap; a live one never does.)
    if dg.limit == Some(Limit::Application) {
        if let Some(i) = dg
            .findings
            .iter()
            .position(|f| f.limit == Limit::Cpu && f.confidence == Confidence::High)
        {
            let f = dg.findings.remove(i);
            dg.findings.insert(0, f.clone());
            dg.limit = Some(Limit::Cpu);
            dg.predicted_bps = Some(f.predicted_bps);
            dg.summary = f.sentence;
            dg.secondary = dg.findings.iter().skip(1).map(|f| f.limit).collect();
            dg.evidence = f.evidence;
            dg.evidence
                .push(line("measured goodput", ev.measured_bps / 1e6, "Mbit/s"));
            dg.fixes = plumb_diagnose::fixes::for_limit(Limit::Cpu, &ev, &dg.findings);
        }
    }
    (dg, ev)
}

/// Makes the first finding (one of live's own) the answer, with an
/// application fix.
fn promote(dg: &mut Diagnosis, ev: &Evidence, command: &str, note: &str) {
    let Some(f) = dg.findings.first().cloned() else {
        return;
    };
    dg.limit = Some(f.limit);
    dg.predicted_bps = Some(f.predicted_bps);
    dg.summary = f.sentence;
    dg.secondary = dg.findings.iter().skip(1).map(|f| f.limit).collect();
    dg.evidence = f.evidence;
    dg.evidence.push(line(
        if ev.sender_is_local {
            "measured goodput (acknowledged)"
        } else {
            "measured goodput (receiver)"
        },
        ev.measured_bps / 1e6,
        "Mbit/s",
    ));
    dg.fixes = vec![plumb_diagnose::rules::Fix {
        os: "application".into(),
        commands: vec![command.into()],
        expected_bps: None,
        note: note.into(),
    }];
}
