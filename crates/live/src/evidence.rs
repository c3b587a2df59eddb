//! Diagnosis evidence from a live connection: a [`Track`]'s delta turned
//! into `plumb-diagnose`'s [`Evidence`], from whichever end this host is,
//! and the few live-only facts the test-document rules cannot see (a
//! receiving application that does not read, an idle connection, what the
//! receiving end cannot know about the sender).
//!
//! Live-only findings follow the engine's rule (issue 14): none has a rate
//! model, so each predicts no rate; what shows it binding is the share of
//! samples that saw it, weighed as the engine weighs a TCP limit counter.

use std::collections::BTreeMap;

use plumb_diagnose::class::class_diagnosis;
use plumb_diagnose::evidence::{Cpu, LinkRate, StreamTcp};
use plumb_diagnose::rules::{lead, quota_binds, BINDING_SHARE, MISSING_FACTOR};
use plumb_diagnose::{diagnose, Evidence};
use plumb_record::class::{Classification, FlowClass};
use plumb_record::diagnosis::{Confidence, EvidenceKind, EvidenceLine, Finding, Status};
use plumb_record::diagnosis::{Diagnosis, Limit};

use crate::track::{Delta, Role, Track};

/// CPU of the process that owns the socket, over the sampling period.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcCpu {
    /// All its threads on a CPU, percent of one core.
    pub process_pct: f64,
    /// Its busiest thread on a CPU, percent of the period.
    pub thread_cpu_pct: f64,
    /// The same thread runnable but waiting for a CPU, percent of the period.
    pub thread_wait_pct: f64,
    /// The CPU quota of its cgroup, percent of one core, when one applies.
    pub quota_pct: Option<f64>,
    /// The share of the quota's periods with work in which it ran out, percent.
    pub throttled_pct: Option<f64>,
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
    /// This end opened the connection (`false`: it was accepted on a
    /// listening port, [`crate::diag::opened_here`]); `None` when the
    /// listeners could not be read. TCP_INFO counts the SYN in
    /// `bytes_acked` only on the end that opened.
    pub opened: Option<bool>,
    /// This host's TCP sysctls (`net.ipv4.tcp_rmem` and the rest), read
    /// once by the caller: they are this end's, so a fix for this end
    /// raises what it has rather than asking for a floor. Empty when not
    /// read; the far end's are never known here.
    pub sysctls: BTreeMap<String, String>,
}

/// The evidence a sampled connection gives, as the rules read it.
pub fn evidence(tr: &Track, ctx: &Context) -> Evidence {
    let d = tr.delta();
    let sender = d.role != Role::Receiver;
    let measured = if sender { d.send_bps } else { d.recv_bps };
    let mut unknown = Vec::new();
    let cpu = cpu_evidence(tr, ctx, &d, sender);
    let stream = if sender {
        sender_stream(tr, ctx, &d)
    } else {
        // The receiver sees the window it advertises, not the sender's cwnd,
        // retransmits or send buffer.
        unknown.push(
            "the sender's congestion window, retransmits, send buffer and limit counters: only the sending host sees them (run plumb why there)".into(),
        );
        receiver_stream(tr, &d)
    };
    if ctx.pid.is_none() {
        unknown.push("the owning process and its CPU: not found in /proc/*/fd (another namespace, or not permitted)".into());
    }
    if ctx.link.is_none() {
        unknown.push("the link rate: give --link (e.g. --link 1g)".into());
    }
    let mine = |on: bool| {
        if on {
            ctx.sysctls.clone()
        } else {
            BTreeMap::new()
        }
    };
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
        rcvbuf_actual: tr.last.mem.filter(|_| !sender).map(|m| u64::from(m.rcvbuf)),
        congestion: tr.last.congestion.filter(|_| sender).map(|c| c.to_string()),
        // BBR's estimate of the bottleneck, bytes/s of payload: evidence
        // for the path's rate when no link rate is given.
        bbr_bw_bps: tr
            .last
            .bbr
            .filter(|_| sender)
            .map(|b| b.bw as f64 * 8.0)
            .filter(|b| *b > 0.0),
        cpu_sender: cpu.filter(|_| sender),
        cpu_receiver: cpu.filter(|_| !sender),
        sysctl_sender: mine(sender),
        sysctl_receiver: mine(!sender),
        sender_is_local: sender,
        peer_is_plumb: false,
        loss_probability: None,
        // The header the connection negotiated, which TCP_INFO says.
        tcp_timestamps: tr
            .last
            .tcp
            .map(|t| t.options & plumb_tcpinfo::OPT_TIMESTAMPS != 0),
        latency: None,
        udp: None,
        unknown,
    }
}

/// The process's CPU, where it could be what holds the transfer back.
///
/// A thread that sleeps more than half the time waits for the network or
/// its peer: on a loaded host each of its many wake-ups still queues for a
/// CPU, and that adds up to a large "wait" share (40-53 % for a reader
/// that ran 1 %, measured on a 2-core machine under build load). A
/// receiver whose queue stays drained keeps up, however long it queued for
/// a CPU; a sender held by the peer's window or its buffer is held by
/// them, not by its CPU. So: a thread runnable half the period, or a
/// cgroup quota that held the process by the rules' own test
/// (`quota_binds`), and neither of those holds.
fn cpu_evidence(tr: &Track, ctx: &Context, d: &Delta, sender: bool) -> Option<Cpu> {
    let share = |us: Option<u64>| us.map_or(0.0, |u| u as f64 / 1e6 / d.secs.max(1e-3));
    let cpu_can_bind = if sender {
        share(d.rwnd_limited_us) < 0.3 && share(d.sndbuf_limited_us) < 0.3
    } else {
        tr.rq_full * 2 >= tr.samples
    };
    ctx.cpu.and_then(|c| {
        let cpu = Cpu {
            process_pct: c.process_pct,
            thread_cpu_pct: Some(c.thread_cpu_pct),
            thread_wait_pct: Some(c.thread_wait_pct),
            system_busy_pct: None,
            softirq_pct: None,
            quota_pct: c.quota_pct,
            throttled_pct: c.throttled_pct,
        };
        let runnable = c.thread_cpu_pct + c.thread_wait_pct >= 50.0;
        (cpu_can_bind && (runnable || quota_binds(&cpu).is_some())).then_some(cpu)
    })
}

/// A sending connection's stream: its own TCP_INFO and what the samples
/// saw of its windows, buffer and stalls.
fn sender_stream(tr: &Track, ctx: &Context, d: &Delta) -> StreamTcp {
    let t = tr.last.tcp.unwrap_or_default();
    // Autotuning grows the send buffer as the window grows; a buffer
    // that never moved while it stayed full was fixed by the application.
    let fixed = !tr.sndbuf_moved && tr.sq_full * 2 >= tr.samples;
    StreamTcp {
        mss: Some(u64::from(t.snd_mss)).filter(|m| *m > 0),
        pmtu: Some(u64::from(t.pmtu)).filter(|m| *m > 0),
        min_rtt_us: t.min_rtt.filter(|r| *r > 0).map(u64::from),
        srtt_us: tr.mean_rtt_us(),
        max_cwnd: Some(tr.max_cwnd_bytes),
        window_is_clamp: false,
        max_snd_wnd: Some(u64::from(tr.max_snd_wnd)).filter(|w| *w > 0),
        retransmits: Some(d.retrans),
        bytes_retrans: d.bytes_retrans,
        bytes_sent: d.acked,
        busy_us: d.busy_us,
        rwnd_limited_us: d.rwnd_limited_us,
        sndbuf_limited_us: d.sndbuf_limited_us,
        sndbuf_actual: tr.last.mem.map(|m| u64::from(m.sndbuf)),
        sndbuf_set: fixed,
        window_shrank_share: (tr.samples >= 2)
            .then(|| f64::from(tr.snd_wnd_shrank) / f64::from(tr.samples)),
        // Gaps between samples stand for the intervals a test reports.
        stalled_us: Some(d.stalled_us),
        payload_acked: ctx
            .opened
            .zip(t.bytes_acked)
            .map(|(o, b)| b.saturating_sub(u64::from(o))),
        timeouts: Some(u64::from(t.retransmits)),
    }
}

/// A receiving connection's stream: the window it advertises (its largest,
/// else its slow-start threshold), its round trip and what it received.
fn receiver_stream(tr: &Track, d: &Delta) -> StreamTcp {
    let t = tr.last.tcp.unwrap_or_default();
    let rtt = Some(u64::from(t.rtt)).filter(|r| *r > 0);
    StreamTcp {
        mss: Some(u64::from(t.rcv_mss)).filter(|m| *m > 0),
        min_rtt_us: t.min_rtt.filter(|r| *r > 0).map(u64::from),
        srtt_us: tr.mean_rtt_us().or(rtt),
        max_snd_wnd: Some(u64::from(tr.max_rcv_wnd))
            .filter(|w| *w > 0)
            .or_else(|| Some(u64::from(t.rcv_ssthresh)).filter(|w| *w > 0)),
        bytes_sent: d.received,
        ..StreamTcp::default()
    }
}

fn line(what: &str, value: f64, unit: &str) -> EvidenceLine {
    EvidenceLine::new(what, value, unit)
}

/// The share of samples a live reading must cover before it can be the
/// answer ahead of what the rules found: most of the period. A receive queue
/// full in half the samples is what keeps the advertised window shut (the
/// window finding is then its consequence); a writer with nothing unsent in
/// three quarters of them set the pace. Both bars were set against the lab
/// tests in `crates/plumb/tests/live.rs` and sit above [`BINDING_SHARE`].
const APP_FULL_SHARE: f64 = 0.5;
const APP_WAITING_SHARE: f64 = 0.75;

/// A live-only finding: no rate model, so no prediction; its binding
/// evidence is the share of samples that showed it. Its confidence is
/// weighed the way the engine weighs a TCP counter with no model behind it:
/// the share (halved below [`BINDING_SHARE`]), times [`MISSING_FACTOR`] for
/// each piece of evidence it would have used and could not see.
fn live_finding(
    limit: Limit,
    what: &str,
    sentence: String,
    share: f64,
    missing: Vec<String>,
    evidence: Vec<EvidenceLine>,
) -> Finding {
    let share = share.clamp(0.0, 1.0);
    let binds = share >= BINDING_SHARE;
    let confidence = weigh(share, binds, missing.len());
    Finding {
        limit,
        what: what.into(),
        sentence,
        predicted_bps: None,
        tolerance: None,
        explains: false,
        binding_share: Some(share),
        counters_bind: binds,
        status: if binds {
            Status::Binding
        } else {
            Status::NotBinding
        },
        confidence,
        level: Confidence::of(confidence),
        missing,
        evidence,
    }
}

/// The engine's weight for binding evidence with no model behind it: the
/// share, halved when it does not bind, times [`MISSING_FACTOR`] for each
/// piece of evidence missing.
fn weigh(share: f64, binds: bool, missing: usize) -> f64 {
    let support = share * if binds { 1.0 } else { 0.5 };
    (support * MISSING_FACTOR.powi(missing as i32)).clamp(0.0, 1.0)
}

fn ratio(n: u32, of: u32) -> f64 {
    f64::from(n) / f64::from(of.max(1))
}

/// Diagnoses a sampled connection: the rules over [`evidence`], plus what
/// only a live connection shows.
pub fn explain(tr: &Track, ctx: &Context) -> (Diagnosis, Evidence) {
    let (dg, ev, _) = explain_classed(tr, ctx);
    (dg, ev)
}

/// [`explain`], with the connection's class: a connection that is not
/// bulk gets its class's answer, with no rate limit and no tuning fix.
pub fn explain_classed(tr: &Track, ctx: &Context) -> (Diagnosis, Evidence, Classification) {
    let ev = evidence(tr, ctx);
    let (class, shape) = crate::class::class_of(tr, ctx.opened);
    if class.class != FlowClass::Bulk {
        let dg = class_diagnosis(&shape, &class, ev.measured_bps);
        return (dg, ev, class);
    }
    let (dg, ev) = explain_bulk(tr, ctx, ev);
    (dg, ev, class)
}

/// A bulk connection's rate weighed by the rules, with what only a live
/// connection shows.
fn explain_bulk(tr: &Track, ctx: &Context, ev: Evidence) -> (Diagnosis, Evidence) {
    let d = tr.delta();
    let mut dg = diagnose(&ev);
    if d.role == Role::Idle {
        idle(&mut dg, &ev, d.secs);
        return (dg, ev);
    }
    if d.role == Role::Receiver {
        receiving_end(&mut dg, tr, ctx, &ev);
    }
    if d.role == Role::Sender {
        sending_application(&mut dg, tr, &d, ctx, &ev);
    }
    cpu_behind_the_application(&mut dg, &ev);
    (dg, ev)
}

/// An idle connection: what it moved, and no limit.
fn idle(dg: &mut Diagnosis, ev: &Evidence, secs: f64) {
    dg.limit = None;
    dg.secondary.clear();
    dg.findings.clear();
    dg.fixes.clear();
    dg.predicted_bps = None;
    dg.tolerance = None;
    dg.confidence = None;
    dg.confidence_level = None;
    dg.evidence
        .retain(|e| matches!(e.kind, EvidenceKind::Goodput | EvidenceKind::LinkRate));
    dg.summary = format!(
        "Idle: {} moved over {:.1} s; nothing limits a connection that has nothing to send.",
        plumb_diagnose::rules::human_rate(ev.measured_bps),
        secs
    );
}

/// What a live finding about the application lacks when the owning
/// process's CPU is unknown.
fn cpu_missing(ctx: &Context) -> Option<String> {
    ctx.cpu
        .is_none()
        .then(|| "the owning process's CPU (a thread starved of CPU looks the same)".to_string())
}

/// The receiving end: no congestion verdict without the sender's cwnd, the
/// receiver's own window numbers, and a receiving application that does
/// not read.
fn receiving_end(dg: &mut Diagnosis, tr: &Track, ctx: &Context, ev: &Evidence) {
    // Without the sender's cwnd a "congestion" verdict would rest on
    // nothing: drop it, and if it was the answer, the answer goes too.
    if dg.limit == Some(Limit::Congestion) {
        demote(dg);
    }
    dg.findings.retain(|f| f.limit != Limit::Congestion);
    receive_window_numbers(dg, tr);
    // A full receive queue: the window is small because the application
    // does not read, not because the buffer is.
    let share = ratio(tr.rq_full, tr.samples);
    if tr.samples >= 3 && share >= APP_FULL_SHARE {
        receiving_application(dg, tr, ctx, ev, share);
    } else if dg.limit.is_none() {
        dg.summary = format!(
            "Unexplained from the receiving end: {} received; the sender's limits are visible only on the sending host (run plumb why there).",
            plumb_diagnose::rules::human_rate(ev.measured_bps)
        );
    }
}

/// The receive-window finding gets the receiver's own numbers.
fn receive_window_numbers(dg: &mut Diagnosis, tr: &Track) {
    let t = tr.last.tcp.unwrap_or_default();
    let mut extra = vec![
        line(
            "receive-buffer autotuning space (TCP_INFO rcv_space)",
            f64::from(t.rcv_space),
            "B",
        ),
        line(
            "window clamp in use (TCP_INFO rcv_ssthresh)",
            f64::from(t.rcv_ssthresh),
            "B",
        ),
    ];
    if tr.min_rcv_wnd != u32::MAX {
        extra.push(line(
            "smallest window advertised (TCP_INFO rcv_wnd)",
            f64::from(tr.min_rcv_wnd),
            "B",
        ));
    }
    if dg.limit == Some(Limit::ReceiveWindow) {
        // The answer's evidence is its finding's, then the path's.
        let at = dg.findings[0].evidence.len().min(dg.evidence.len());
        dg.evidence.splice(at..at, extra.iter().cloned());
    }
    for f in dg
        .findings
        .iter_mut()
        .filter(|f| f.limit == Limit::ReceiveWindow)
    {
        f.evidence.extend(extra.iter().cloned());
    }
}

/// The receiving application as the answer: its receive queue held at
/// least 3/4 of the buffer in `share` of the samples.
fn receiving_application(dg: &mut Diagnosis, tr: &Track, ctx: &Context, ev: &Evidence, share: f64) {
    let m = tr.last.mem.unwrap_or_default();
    let f = live_finding(
        Limit::Application,
        "the receiving application",
        format!(
            "it did not read fast enough; its receive queue held at least 3/4 of the {} B receive buffer in {} of {} samples, so the window this host advertises stayed shut (no rate model: plumb predicts no rate for it)",
            m.rcvbuf, tr.rq_full, tr.samples
        ),
        share,
        cpu_missing(ctx).into_iter().collect(),
        vec![
            line("samples with the receive queue at least 3/4 full", f64::from(tr.rq_full), "samples"),
            line("samples", f64::from(tr.samples), "samples"),
            line("receive queue memory (SKMEMINFO rmem_alloc), last sample", f64::from(m.rmem_alloc), "B"),
            line("receive buffer (SKMEMINFO rcvbuf)", f64::from(m.rcvbuf), "B"),
            line("unread bytes (receive queue), last sample", f64::from(tr.last.recv_queue), "B"),
        ],
    );
    dg.findings.insert(0, f);
    promote(
        dg,
        ev,
        Some(("read the socket sooner and in larger reads; move slow work (disk, decompression) off the reading thread", "let the receiving application keep up")),
    );
}

/// The sending application as the answer, when sample after sample it had
/// nothing unsent and TCP's own limits did not bind.
fn sending_application(dg: &mut Diagnosis, tr: &Track, d: &Delta, ctx: &Context, ev: &Evidence) {
    // TCP's busy time counts a paced writer as busy whenever anything is
    // in flight, which on a long path is nearly always; what shows the
    // writer is the limit is a send queue with nothing unsent and a
    // congestion window left unfilled, sample after sample.
    let share = |us: Option<u64>| us.map_or(0.0, |u| u as f64 / 1e6 / d.secs.max(1e-3));
    let waiting_share = ratio(tr.app_waiting, tr.samples);
    // A writer blocked on a full send buffer is not waiting for itself.
    let waiting =
        tr.samples >= 3 && waiting_share >= APP_WAITING_SHARE && tr.sq_full * 2 < tr.samples;
    let tcp_limited =
        share(d.rwnd_limited_us) >= BINDING_SHARE || share(d.sndbuf_limited_us) >= BINDING_SHARE;
    let cpu = dg.findings.iter().any(|f| f.limit == Limit::Cpu);
    let already = dg.limit == Some(Limit::Application);
    if !waiting || tcp_limited || cpu || already {
        return;
    }
    let t = tr.last.tcp.unwrap_or_default();
    let mut missing: Vec<String> = cpu_missing(ctx).into_iter().collect();
    if d.rwnd_limited_us.is_none() || d.sndbuf_limited_us.is_none() {
        missing.push("the sender's TCP limit counters".into());
    }
    dg.findings.retain(|f| f.limit != Limit::Application);
    let f = live_finding(
        Limit::Application,
        "the sending application",
        format!(
            "in {} of {} samples it had written nothing TCP had not yet sent, and the congestion window ({} segments) was not full; it sent {}{} (no rate model: plumb predicts no rate for it)",
            tr.app_waiting,
            tr.samples,
            t.snd_cwnd,
            plumb_diagnose::rules::human_rate(ev.measured_bps),
            ev.link.as_ref().map_or(String::new(), |l| format!(" on a {} link", plumb_diagnose::rules::human_rate(l.bps)))
        ),
        waiting_share,
        missing,
        vec![
            line("samples with nothing unsent and cwnd not full (TCP_INFO notsent_bytes, unacked < cwnd)", f64::from(tr.app_waiting), "samples"),
            line("samples", f64::from(tr.samples), "samples"),
        ],
    );
    dg.findings.insert(0, f);
    promote(
        dg,
        ev,
        Some((
            "write sooner and in larger writes; lift any rate cap; keep more requests outstanding",
            "let the sending application offer more data",
        )),
    );
}

/// A sender that "had nothing to send" while its thread waited for a CPU
/// had nothing because it could not run: the CPU is the cause when its
/// counters bind, or when its thread was runnable for at least as much of
/// the period as the application sat idle (the idle time is then time it
/// waited to run: under a 5 % quota the thread ran 1 % and waited 75 %
/// while the sender was idle 52 %, in the lab). (A test's application
/// finding can rest on a rate cap; a live one never does.)
fn cpu_behind_the_application(dg: &mut Diagnosis, ev: &Evidence) {
    if dg.limit != Some(Limit::Application) {
        return;
    }
    let idle = dg.findings[0].binding_share;
    let Some(i) = dg.findings.iter().position(|f| {
        f.limit == Limit::Cpu
            && (f.counters_bind
                || f.binding_share
                    .zip(idle)
                    .is_some_and(|(run, idle)| idle >= BINDING_SHARE && run >= idle))
    }) else {
        return;
    };
    let mut f = dg.findings.remove(i);
    if !f.counters_bind {
        let share = f.binding_share.unwrap_or(0.0);
        f.counters_bind = true;
        f.confidence = weigh(share, true, f.missing.len());
        f.level = Confidence::of(f.confidence);
    }
    dg.findings.insert(0, f);
    promote(dg, ev, None);
}

/// The answer stops being the answer: its finding is only binding now (or
/// seen), and the diagnosis is unexplained until something is promoted.
fn demote(dg: &mut Diagnosis) {
    if dg.limit.take().is_some() {
        if let Some(f) = dg.findings.first_mut() {
            f.status = if f.candidate() {
                Status::Binding
            } else {
                Status::NotBinding
            };
        }
    }
    dg.predicted_bps = None;
    dg.tolerance = None;
    dg.confidence = None;
    dg.confidence_level = None;
    dg.fixes.clear();
    dg.figures.per_stream_bps = None;
    dg.figures.streams_needed = None;
    dg.figures.expect_bps = None;
    dg.secondary = dg.findings.iter().map(|f| f.limit).collect();
    // What stays is the measurement and the path, not the old answer's numbers.
    dg.evidence.retain(|e| {
        matches!(
            e.kind,
            EvidenceKind::Goodput | EvidenceKind::LinkRate | EvidenceKind::Rtt
        )
    });
}

/// Makes the first finding the answer, as the engine would have made it:
/// the others' statuses, the figures that follow from it, the summary the
/// engine words ([`lead`]), its evidence beside the measurement, and its
/// fixes — an application's own (`app`: command and note), or the engine's.
fn promote(dg: &mut Diagnosis, ev: &Evidence, app: Option<(&str, &str)>) {
    // The old answer, if any, is somewhere after the new first finding.
    let mut old_len = 0;
    if let Some(f) = dg
        .findings
        .iter_mut()
        .skip(1)
        .find(|f| f.status == Status::Primary)
    {
        old_len = f.evidence.len();
        f.status = if f.candidate() {
            Status::Binding
        } else {
            Status::NotBinding
        };
    }
    let Some(f) = dg.findings.first_mut() else {
        return;
    };
    f.status = Status::Primary;
    let f = f.clone();
    // What the old answer's evidence was followed by: the measurement, the
    // path and the link.
    let tail: Vec<EvidenceLine> = if dg.limit.is_some() {
        dg.evidence.iter().skip(old_len).cloned().collect()
    } else {
        dg.evidence
            .iter()
            .filter(|e| e.kind != EvidenceKind::Rtt)
            .cloned()
            .collect()
    };
    dg.limit = Some(f.limit);
    dg.predicted_bps = f.predicted_bps.filter(|_| f.explains);
    dg.tolerance = f.tolerance.filter(|_| f.explains);
    dg.confidence = Some(f.confidence);
    dg.confidence_level = Some(f.level);
    dg.secondary = dg.findings.iter().skip(1).map(|f| f.limit).collect();
    refigure(dg, ev);
    dg.summary = lead(&f, &dg.figures);
    dg.evidence = f.evidence.clone();
    dg.evidence.extend(tail);
    dg.fixes = match app {
        Some((command, note)) => vec![plumb_record::diagnosis::Fix {
            os: "application".into(),
            commands: vec![command.into()],
            expected_bps: dg.figures.expect_bps,
            note: note.into(),
        }],
        None => plumb_diagnose::fixes::for_limit(f.limit, ev, &dg.figures, &dg.findings),
    };
}

/// The figures that depend on the answer, for a live connection's one
/// stream: what it gets today (the lowest prediction that explains the
/// rate, else the measurement), the streams that would fill the link, and
/// what to expect with the answer gone (the link's goodput, or the next
/// explaining prediction when lower).
fn refigure(dg: &mut Diagnosis, ev: &Evidence) {
    let measured = ev.measured_bps;
    let fig = &mut dg.figures;
    let explaining = |skip: usize, link: bool| {
        dg.findings
            .iter()
            .skip(skip)
            .filter(|f| f.explains && (link || f.limit != Limit::Link))
            .filter_map(|f| f.predicted_bps)
            .fold(f64::INFINITY, f64::min)
    };
    let today = explaining(0, true).min(measured);
    fig.per_stream_bps = Some(today).filter(|x| *x > 0.0);
    let known_link = fig.goodput_bps.filter(|_| !fig.goodput_is_lower_bound);
    let next = Some(explaining(1, false)).filter(|x| x.is_finite());
    fig.expect_bps = if fig.goodput_is_lower_bound {
        None
    } else {
        match (known_link, next) {
            (Some(g), Some(n)) => Some(g.min(n)),
            (g, n) => g.or(n),
        }
    };
    fig.streams_needed = fig.streams(1.0);
}

#[cfg(test)]
mod tests {
    use plumb_diagnose::evidence::LinkSource;

    use super::*;
    use crate::diag::{BbrInfo, Conn};
    use plumb_tcpinfo::TcpInfo;

    /// A sending socket sampled at `t` seconds into a transfer at `bps`,
    /// its smoothed RTT `rtt` µs against a 15 ms minimum, TCP counting
    /// `rwnd` of each second limited by the receive window.
    fn sample(t: u64, bps: f64, rtt: u32, rwnd: f64, bbr: Option<f64>) -> Conn {
        let us = t * 1_000_000;
        Conn {
            local: "198.18.0.1:8000".parse().expect("addr"),
            remote: "198.19.0.1:40000".parse().expect("addr"),
            state: 1,
            inode: 1,
            uid: 0,
            ifindex: 0,
            cookie: 7,
            recv_queue: 0,
            send_queue: 4 << 20,
            tcp: Some(TcpInfo {
                bytes_acked: Some((bps / 8.0) as u64 * t),
                bytes_received: Some(0),
                busy_time: Some(us),
                rwnd_limited: Some((us as f64 * rwnd) as u64),
                sndbuf_limited: Some(0),
                snd_mss: 1448,
                snd_cwnd: 2_000,
                rtt,
                min_rtt: Some(15_000),
                snd_wnd: Some(8 << 20),
                ..TcpInfo::default()
            }),
            congestion: None,
            mem: None,
            bbr: bbr.map(|b| BbrInfo {
                bw: (b / 8.0) as u64,
                min_rtt_us: 15_000,
                pacing_gain: 256,
                cwnd_gain: 512,
            }),
        }
    }

    fn tracked(bps: f64, rtt: u32, rwnd: f64, bbr: Option<f64>) -> Track {
        let mut tr = Track::new(sample(0, bps, rtt, rwnd, bbr), 0.0);
        for t in 1..=3 {
            tr.update(sample(t, bps, rtt, rwnd, bbr), t as f64);
        }
        tr
    }

    /// The host's 10 Gbit/s interface is all `plumb why -p` knows.
    fn nic() -> Context {
        Context {
            link: Some(LinkRate {
                bps: 10e9,
                source: LinkSource::Interface("eth0".into()),
            }),
            cpu: None,
            pid: Some(1),
            opened: Some(false),
            sysctls: BTreeMap::new(),
        }
    }

    /// The download from the sending host: 941 Mbit/s, the RTT
    /// 1.8 ms above its minimum, BBR's estimate beside it.
    #[test]
    fn a_sender_filling_its_path_names_the_path() {
        let unknown = Context {
            link: None,
            cpu: None,
            pid: Some(1),
            opened: Some(false),
            sysctls: BTreeMap::new(),
        };
        for (bbr, ctx) in [(None, nic()), (Some(950e6), nic()), (None, unknown)] {
            let (d, _) = explain(&tracked(941.3e6, 16_800, 0.0, bbr), &ctx);
            assert_eq!(d.limit, Some(Limit::Link), "{}", d.summary);
            assert!(
                d.summary.contains("what a 1 Gbit/s link carries"),
                "{}",
                d.summary
            );
            assert_eq!(d.link_source.as_deref(), Some("inferred"));
            assert!(!d.unknown.iter().any(|u| u.contains("give --link")));
            assert_eq!(
                d.findings[0]
                    .evidence
                    .iter()
                    .any(|e| e.what.starts_with("BBR's")),
                bbr.is_some()
            );
        }
    }

    /// A server's socket behind a path-MTU black hole, sampled every
    /// 100 ms for 8 s from `t0` s into the stall: the HTTP headers' first
    /// write (176 B; an accepted socket's bytes_acked has no SYN in it)
    /// acknowledged, ten 1448-byte
    /// segments outstanding, a window of one, in Loss, the head segment
    /// resent at each timeout of a 0.2 s RTO doubling from the stall's start.
    fn black_holed(t0: f64) -> Track {
        let at = |t: f64| {
            let mut c = sample(0, 0.0, 15_000, 0.0, None);
            let tcp = c.tcp.as_mut().expect("tcp");
            // Timeouts fire at 0.2, 0.6, 1.4, 3.0, 6.2 … s.
            let resends = (0..10)
                .filter(|k| 0.2 * (2f64.powi(k + 1) - 1.0) <= t)
                .count();
            tcp.bytes_acked = Some(176);
            tcp.busy_time = Some((t * 1e6) as u64);
            (tcp.unacked, tcp.snd_cwnd, tcp.ca_state) = (10, 1, 4);
            tcp.retransmits = resends as u8;
            tcp.total_retrans = resends as u32;
            tcp.pmtu = 1500;
            c
        };
        let mut tr = Track::new(at(t0), 0.0);
        for i in 1..=80 {
            let t = f64::from(i) / 10.0;
            tr.update(at(t0 + t), t);
        }
        tr
    }

    #[test]
    fn a_sender_stalled_behind_a_black_hole_names_the_path_mtu() {
        let tr = black_holed(0.5);
        let d = tr.delta();
        // The premise: nothing moved, the period stalled, four resends in it.
        assert_eq!((d.acked, d.role, d.retrans), (0, Role::Sender, 4));
        assert!(d.stalled_us > 7_900_000, "{d:?}");
        let (dg, ev) = explain(&tr, &nic());
        assert_eq!(ev.streams[0].payload_acked, Some(176));
        assert_eq!(dg.limit, Some(Limit::PathMtu), "{}", dg.summary);
        assert!(
            dg.summary
                .contains("stalled in retransmission timeouts for 8")
                && dg.summary.contains("first 176 bytes were"),
            "{}",
            dg.summary
        );
        // Had this end opened the connection, its bytes_acked would hold
        // the SYN too, and the same figure come out.
        let mut opener = tr.clone();
        for c in [&mut opener.first, &mut opener.last] {
            c.tcp.as_mut().expect("tcp").bytes_acked = Some(177);
        }
        let ctx = Context {
            opened: Some(true),
            ..nic()
        };
        let (_, ev) = explain(&opener, &ctx);
        assert_eq!(ev.streams[0].payload_acked, Some(176));
        // Not knowing which end opened it, no figure is claimed.
        let ctx = Context {
            opened: None,
            ..nic()
        };
        let (dg, ev) = explain(&tr, &ctx);
        assert_eq!(ev.streams[0].payload_acked, None);
        assert_ne!(dg.limit, Some(Limit::PathMtu), "{}", dg.summary);
    }

    #[test]
    fn a_stall_sampled_late_is_named_from_its_timeouts_in_a_row() {
        // Three seconds in, the RTO has backed off to 3.2 s: the 8 s period
        // holds one resend, but TCP_INFO's count of timeouts in a row holds
        // all five since the stall began.
        let tr = black_holed(3.1);
        let d = tr.delta();
        assert_eq!((d.role, d.retrans), (Role::Sender, 1));
        let (dg, ev) = explain(&tr, &nic());
        assert_eq!(ev.streams[0].timeouts, Some(5));
        assert_eq!(dg.limit, Some(Limit::PathMtu), "{}", dg.summary);
        let line = dg
            .evidence
            .iter()
            .find(|e| e.what.starts_with("timeouts in a row"));
        assert_eq!(line.map(|e| e.value), Some(5.0), "{:?}", dg.evidence);
        // Two timeouts in a row and one resend: too few for a black hole.
        let early = black_holed(0.0);
        let mut two = early.clone();
        for c in [&mut two.first, &mut two.last] {
            let t = c.tcp.as_mut().expect("tcp");
            (t.retransmits, t.total_retrans) = (2, 2);
        }
        let (dg, _) = explain(&two, &nic());
        assert_ne!(dg.limit, Some(Limit::PathMtu), "{}", dg.summary);
    }

    /// 94 Mbit/s held by the receive window, the RTT at its minimum: not a
    /// full 100 Mbit/s link.
    #[test]
    fn a_window_limited_sender_at_a_common_rate_is_not_the_path() {
        let (d, _) = explain(&tracked(94e6, 15_100, 0.4, None), &nic());
        assert_ne!(d.limit, Some(Limit::Link), "{}", d.summary);
    }

    /// This host's settings go to this end's side of the evidence only, and
    /// the header is the one TCP_INFO says the connection negotiated.
    #[test]
    fn this_hosts_sysctls_are_this_ends() {
        let mut sysctls = BTreeMap::new();
        sysctls.insert(
            "net.ipv4.tcp_wmem".to_string(),
            "4096 16384 4194304".to_string(),
        );
        let ctx = Context {
            sysctls: sysctls.clone(),
            ..nic()
        };
        let tr = tracked(94e6, 15_100, 0.4, None);
        let ev = evidence(&tr, &ctx);
        assert!(ev.sender_is_local);
        assert_eq!(ev.sysctl_sender, sysctls);
        assert!(ev.sysctl_receiver.is_empty());
        let ts = tr.last.tcp.expect("tcp").options & plumb_tcpinfo::OPT_TIMESTAMPS != 0;
        assert_eq!(ev.tcp_timestamps, Some(ts));
    }
}
