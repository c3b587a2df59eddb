//! Reading a test's `-J` document ([`plumb_record::Document`]) into
//! [`Evidence`] and its latency probes into [`LatencyEvidence`]: the one
//! module that knows the document's schema.
//!
//! plumb's document carries the sender's and receiver's `TCP_INFO`
//! summaries, socket buffers, CPU and TCP sysctls under `end.plumb`; a stock
//! iperf3 document carries only the sender's RTT, windows and retransmits.
//! Whatever a document lacks stays `None` here and is listed in
//! [`Evidence::unknown`], never guessed.

use plumb_record::{
    CgroupCpu, Document, End, EndStream, Interval, PlumbSide, PlumbStream, Real, TcpEndSide,
    TestStart,
};

use crate::evidence::{Cpu, Evidence, LinkRate, StreamTcp, UdpEvidence};
use plumb_record::diagnosis::LatencyEvidence;

/// A figure's value; `None` for a `null` (read as NaN).
fn real(r: Real) -> Option<f64> {
    Some(r.get()).filter(|v| !v.is_nan())
}

/// A count written as a signed integer: `None` when negative (iperf3's
/// "not counted").
fn count(n: i64) -> Option<u64> {
    u64::try_from(n).ok()
}

/// The receiver's datagram counts from `end`: `sum_received` where the
/// document has them (plumb, iperf3 3.1x and later), else `sum`; its socket
/// buffer from `rcv`, the receiving end's `end.plumb` side.
fn udp_evidence(ts: Option<&TestStart>, end: &End, rcv: Option<&PlumbSide>) -> UdpEvidence {
    let counts = |s: &Option<plumb_record::EndSum>| match s {
        Some(plumb_record::EndSum::Udp(u)) => count(u.packets).map(|p| (p, count(u.lost_packets))),
        _ => None,
    };
    let (datagrams, lost) = counts(&end.sum_received)
        .or_else(|| counts(&end.sum))
        .unwrap_or((0, None));
    UdpEvidence {
        sent_bps: end
            .sum_sent
            .as_ref()
            .and_then(|s| real(s.bits_per_second())),
        datagrams,
        lost: lost.unwrap_or(0),
        socket_drops: end
            .plumb
            .as_ref()
            .and_then(|p| p.udp.as_ref())
            .and_then(|u| u.socket_drops.flatten()),
        rcvbuf_granted: rcv
            .and_then(|s| s.udp.as_ref())
            .and_then(|u| u.rcvbuf_granted),
        payload: ts.map(|t| t.blksize).filter(|b| *b > 0),
    }
}

/// The best reporting interval that was not omitted, bit/s (0 without any).
fn best_interval(doc: &Document) -> f64 {
    doc.intervals
        .iter()
        .flatten()
        .filter(|i| !i.sum.omitted)
        .filter_map(|i| real(i.sum.bits_per_second))
        .fold(0.0, f64::max)
}

/// One end's CPU: `process_pct` is iperf3's figure for its process, `side`
/// its `end.plumb` object (`None` for a stock iperf3 end), `dur` the test's
/// seconds. `None` when the process figure is missing.
fn end_cpu(process_pct: Option<f64>, side: Option<&PlumbSide>, dur: f64) -> Option<Cpu> {
    let c = side.and_then(|s| s.cpu_system_wide.as_ref());
    let system_busy = c.and_then(|c| real(c.idle)).map(|i| 100.0 - i);
    let softirq = c.and_then(|c| real(c.softirq));
    let (thread_cpu, thread_wait) = busiest_thread(side, dur);
    let (quota, throttled) = cgroup_quota(side.and_then(|s| s.cgroup_cpu.as_ref()));
    process_pct.map(|p| Cpu {
        process_pct: p,
        thread_cpu_pct: thread_cpu,
        thread_wait_pct: thread_wait,
        system_busy_pct: system_busy,
        softirq_pct: softirq,
        quota_pct: quota,
        throttled_pct: throttled,
    })
}

/// The data thread that wanted the most CPU on a side: the share of the
/// test it ran and the share it waited for a CPU, percent.
fn busiest_thread(side: Option<&PlumbSide>, dur: f64) -> (Option<f64>, Option<f64>) {
    let best = side
        .and_then(|s| s.streams.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|st| Some((st.thread_cpu_us?, st.thread_wait_us?)))
        .max_by_key(|(c, w)| c + w);
    match best {
        Some((c, w)) if dur > 0.0 => (Some(c as f64 / 1e4 / dur), Some(w as f64 / 1e4 / dur)),
        _ => (None, None),
    }
}

/// The cgroup quota a plumb end ran under, percent of one core, and the
/// share of its periods in which the quota ran out, percent.
fn cgroup_quota(g: Option<&CgroupCpu>) -> (Option<f64>, Option<f64>) {
    // A peer's figure outside any real quota (0.01 % to 10,000
    // cores) is dropped rather than printed.
    let q = g
        .and_then(|g| g.quota_pct)
        .and_then(real)
        .filter(|q| (0.01..=1e6).contains(q));
    let t = match g.map(|g| (g.periods, g.throttled_periods)) {
        Some((Some(p), Some(t))) if p > 0 => Some(t.min(p) as f64 / p as f64 * 100.0),
        _ => None,
    };
    (q, q.and(t))
}

/// The diagnosed direction's streams: in bidir the client's sending ones.
/// `snd` is the sending end's `end.plumb` object; `local` says the sender
/// is the client, which opened every connection of the test, and then
/// `intervals` are its own reporting intervals.
fn sending_streams(
    end: &End,
    snd: Option<&PlumbSide>,
    bidir: bool,
    local: bool,
    intervals: Option<&[Interval]>,
) -> Vec<StreamTcp> {
    let opened = u64::from(local);
    let plumb_streams = snd.and_then(|s| s.streams.as_deref()).unwrap_or_default();
    end.streams
        .iter()
        .flatten()
        .enumerate()
        .filter(|(_, s)| !bidir || sends(s))
        .map(|(i, s)| {
            let mut st = stream_tcp(s.sender.as_ref(), plumb_streams.get(i));
            let socket = s.sender.as_ref().map(|x| x.socket);
            st.stalled_us = intervals.and_then(|iv| stalled_us(iv, socket, st.mss));
            let info = plumb_streams.get(i).and_then(|p| p.tcp_info.as_ref());
            st.payload_acked = info
                .and_then(|t| t.bytes_acked)
                .map(|b| b.saturating_sub(opened));
            st
        })
        .collect()
}

/// A sending end that is not plumb (a stock server sending, `-R`) records
/// no TCP_INFO; the receiving plumb end's sockets know two of the figures
/// the rules reason with, and fill them where the sender left them out:
/// the most the receiver advertises (its TCP_WINDOW_CLAMP: `--rwin`, else
/// what its autotuned buffer allows), and the round trip TCP timed on the
/// socket (the handshake's: a receiver sends no data to time, so it is the
/// minimum, never the smoothed RTT).
fn receivers_view(streams: &mut [StreamTcp], rcv: Option<&PlumbSide>) {
    let theirs = rcv.and_then(|s| s.streams.as_deref()).unwrap_or_default();
    for (st, r) in streams.iter_mut().zip(theirs) {
        let positive = |v: Option<u64>| v.filter(|x| *x > 0);
        if positive(st.max_snd_wnd).is_none() {
            st.max_snd_wnd = positive(r.window_clamp);
            st.window_is_clamp = st.max_snd_wnd.is_some();
        }
        st.min_rtt_us = positive(st.min_rtt_us)
            .or_else(|| positive(r.tcp_info.as_ref().and_then(|t| t.min_rtt_us)));
    }
}

/// A test that ended without the receiving end's results (interrupted, or
/// they never came back): its received count is zero for want of one. The
/// sender's own clock (`sent_s`) and what it saw acknowledged stand in for
/// them, and the unknowns say so.
fn answered_alone(ev: &mut Evidence, sent_s: f64) {
    if ev.duration_s <= 0.0 {
        ev.duration_s = sent_s;
    }
    let acked: Option<u64> = ev.streams.iter().map(|s| s.payload_acked).sum();
    match acked.filter(|_| ev.sender_is_local && ev.duration_s > 0.0) {
        Some(b) => {
            ev.measured_bps = b as f64 * 8.0 / ev.duration_s;
            ev.unknown.push(
                "the receiver's count: the test ended without its results; the rate is what the sender saw acknowledged (TCP_INFO bytes_acked)".into(),
            );
        }
        None => ev
            .unknown
            .push("the receiver's count: the test ended without its results".into()),
    }
}

/// Time the sending stream on `socket` stalled in retransmission timeouts,
/// µs, from its own reporting intervals: those in which it could write
/// nothing while its congestion window was at most two segments (of `mss`,
/// 1448 B when unknown). An application that pauses keeps its window; a
/// timeout takes it down to one segment. `None` when no interval of the
/// stream reports its window (a stock iperf3 receiver's document).
fn stalled_us(intervals: &[Interval], socket: Option<i32>, mss: Option<u64>) -> Option<u64> {
    let small = 2 * mss.unwrap_or(1448);
    let mut seen = false;
    let mut us = 0.0;
    for iv in intervals {
        let stream = iv
            .streams
            .iter()
            .find(|s| socket.is_none_or(|k| s.socket == k) && s.sender != Some(false));
        let Some((s, cwnd)) = stream.and_then(|s| Some((s, s.snd_cwnd?))) else {
            continue;
        };
        seen = true;
        if !s.omitted && s.bytes == 0 && cwnd <= small {
            us += real(s.seconds).unwrap_or(0.0).max(0.0) * 1e6;
        }
    }
    seen.then_some(us.round() as u64)
}

/// The stream's `sender` side says the local end sends it.
fn sends(s: &EndStream) -> bool {
    s.sender.as_ref().and_then(|x| x.sender) == Some(true)
}

/// One sending stream from iperf3's `sender` summary and, when the sending
/// end is plumb, its own record of the stream.
fn stream_tcp(sender: Option<&TcpEndSide>, plumb: Option<&PlumbStream>) -> StreamTcp {
    let info = plumb.and_then(|p| p.tcp_info.clone()).unwrap_or_default();
    let snd = |pick: fn(&TcpEndSide) -> Option<u64>| sender.and_then(pick);
    let mut st = StreamTcp {
        mss: info.snd_mss,
        pmtu: info.pmtu,
        min_rtt_us: info.min_rtt_us.or_else(|| snd(|s| s.min_rtt)),
        srtt_us: snd(|s| s.mean_rtt).filter(|r| *r > 0).or(info.rtt_us),
        max_cwnd: snd(|s| s.max_snd_cwnd).or(info.snd_cwnd_bytes),
        max_snd_wnd: snd(|s| s.max_snd_wnd).or(info.snd_wnd),
        window_is_clamp: false,
        retransmits: snd(|s| s.retransmits.and_then(count)).or(info.total_retrans),
        bytes_retrans: info.bytes_retrans,
        bytes_sent: sender.map_or(0, |s| s.bytes),
        busy_us: info.busy_time_us,
        rwnd_limited_us: info.rwnd_limited_us,
        sndbuf_limited_us: info.sndbuf_limited_us,
        sndbuf_actual: plumb.and_then(|p| p.sndbuf_actual),
        sndbuf_set: plumb.is_some_and(|p| p.sndbuf_set == Some(true)),
        window_shrank_share: None,
        stalled_us: None,
        // The SYN's byte comes off where the document says who opened.
        payload_acked: None,
        timeouts: None,
    };
    // A sender that cannot count may report a huge number.
    if st.retransmits.is_some_and(|r| r > u64::from(u32::MAX)) {
        st.retransmits = None;
    }
    st
}

/// What the document could not tell, from what [`Evidence::from_document`]
/// found in it.
/// `alone`: the test ended without the peer's results.
fn unknowns(ev: &Evidence, alone: bool) -> Vec<String> {
    let mut unknown = Vec::new();
    if ev.tcp && ev.streams.iter().all(|s| s.busy_us.is_none()) {
        unknown.push(if ev.peer_is_plumb || ev.sender_is_local {
            "the sender's TCP limit counters (busy, rwnd_limited, sndbuf_limited): kernel too old"
                .into()
        } else {
            "the sender's TCP limit counters: the sending server is not plumb".into()
        });
    }
    if alone {
        unknown.push(
            "the remote host's TCP settings, buffers and system CPU: its results never came".into(),
        );
    } else if !ev.peer_is_plumb {
        unknown.push(
            "the remote host's TCP settings, buffers and system CPU: the peer is not plumb".into(),
        );
    }
    if ev.link.is_none() {
        unknown.push("the link rate: give --link (e.g. --link 1g)".into());
    }
    unknown
}

/// Reads `end.plumb.latency` of a `-J` document, and the model's
/// full-queue delay beside it; `None` without loaded probes.
pub fn latency_evidence(doc: &Document) -> Option<LatencyEvidence> {
    let l = doc.end.as_ref()?.plumb.as_ref()?.latency.as_ref()?;
    let (idle, loaded) = (l.idle.as_ref()?, l.loaded.as_ref()?);
    Some(LatencyEvidence {
        idle_p50_ms: idle.p50_ms.and_then(real)?,
        loaded_p50_ms: loaded.p50_ms.and_then(real)?,
        loaded_p99_ms: loaded.p99_ms.and_then(real)?,
        loaded_rpm: loaded.rpm.flatten().and_then(real),
        // The lab's queue model (`plumb lab --latency`).
        predicted_queue_ms: doc
            .model
            .as_ref()
            .and_then(|m| m.queue_delay_ms)
            .and_then(real),
    })
}

impl Evidence {
    /// Reads a client's `-J` document as [`Evidence::from_document`] does;
    /// without a known link rate, the best interval stands for it: the only
    /// (lower) bound on the link the document gives. `plumb why`, the
    /// exporter's probes and the report's pages explain a test this way.
    pub fn from_document_or_best(
        doc: &Document,
        link: Option<LinkRate>,
    ) -> Result<Evidence, String> {
        let mut ev = Evidence::from_document(doc, link)?;
        if ev.link.is_none() && ev.best_interval_bps > 0.0 {
            ev.link = Some(LinkRate {
                bps: ev.best_interval_bps,
                source: crate::LinkSource::BestInterval,
            });
        }
        Ok(ev)
    }

    /// Reads a client's `-J` document. `link` is the link rate when known.
    pub fn from_document(doc: &Document, link: Option<LinkRate>) -> Result<Evidence, String> {
        let ts = doc.start.as_ref().and_then(|s| s.test_start.as_ref());
        let (end, received) =
            match doc
                .end
                .as_ref()
                .and_then(|e| Some((e, e.sum_received.as_ref()?)))
            {
                Some(x) => x,
                None => return Err(match &doc.error {
                    Some(e) => format!("the test did not complete: {e}"),
                    None => {
                        "the document has no end.sum_received: not a completed iperf3/plumb test"
                            .into()
                    }
                }),
            };
        let mut ev = Evidence {
            tcp: ts.map(|t| t.protocol.as_str()) != Some("UDP"),
            reverse: ts.map(|t| t.reverse) == Some(1),
            bidir: ts.and_then(|t| t.bidir) == Some(1),
            duration_s: real(received.seconds()).unwrap_or(0.0),
            measured_bps: real(received.bits_per_second()).unwrap_or(0.0),
            congestion: end.sender_tcp_congestion.clone(),
            link,
            ..Evidence::default()
        };
        ev.sender_is_local = !ev.reverse;
        ev.latency = latency_evidence(doc);

        let per_stream = ts.and_then(|t| t.target_bitrate).filter(|b| *b > 0);
        let n = ts.map_or(1, |t| t.num_streams).max(1);
        ev.target_bps = per_stream.map(|b| b as f64 * n as f64);
        ev.best_interval_bps = best_interval(doc);
        let plumb = end.plumb.as_ref();
        let local = plumb
            .and_then(|p| p.local.as_ref())
            .and_then(Option::as_ref);
        let remote = plumb
            .and_then(|p| p.remote.as_ref())
            .and_then(Option::as_ref);
        ev.peer_is_plumb = remote.is_some();
        let (snd, rcv) = if ev.sender_is_local {
            (local, remote)
        } else {
            (remote, local)
        };
        let sysctls = |s: Option<&PlumbSide>| s.and_then(|s| s.sysctl.clone()).unwrap_or_default();
        ev.sysctl_sender = sysctls(snd);
        ev.sysctl_receiver = sysctls(rcv);
        ev.rcvbuf_actual = rcv
            .and_then(|s| s.streams.as_ref())
            .and_then(|v| v.first())
            .and_then(|s| s.rcvbuf_actual);
        if !ev.tcp {
            ev.udp = Some(udp_evidence(ts, end, rcv));
        }
        let cpu = end.cpu_utilization_percent.as_ref();
        let host = cpu.and_then(|c| real(c.host_total));
        let remote_pct = cpu.and_then(|c| real(c.remote_total));
        let (snd_pct, rcv_pct) = if ev.sender_is_local {
            (host, remote_pct)
        } else {
            (remote_pct, host)
        };
        ev.cpu_sender = end_cpu(snd_pct, snd, ev.duration_s);
        ev.cpu_receiver = end_cpu(rcv_pct, rcv, ev.duration_s);
        let local = ev.sender_is_local;
        let own_intervals = doc.intervals.as_deref().filter(|_| local);
        ev.streams = sending_streams(end, snd, ev.bidir, local, own_intervals);
        if snd.is_none() && !ev.bidir {
            receivers_view(&mut ev.streams, rcv);
        }

        let alone = doc.error.is_some() && received.bytes() == 0;
        ev.unknown = unknowns(&ev, alone);
        if alone {
            let sent = end.sum_sent.as_ref().and_then(|s| real(s.seconds()));
            answered_alone(&mut ev, sent.unwrap_or(0.0));
        }
        Ok(ev)
    }
}

#[cfg(test)]
mod tests {
    use plumb_record::Document;

    use super::{latency_evidence, LatencyEvidence};
    use crate::testing::*;

    #[test]
    fn latency_probes_are_read_and_missing_ones_give_nothing() {
        let doc = Document::parse(
            r#"{"end": {"plumb": {"latency": {
                "idle": {"p50_ms": 15.0}, "loaded": {"p50_ms": 97.0, "p99_ms": 115.0, "rpm": 600.0}
            }}}, "model": {"predicted_bps": 1e9, "limit": "link", "streams": 1,
                           "queue_delay_ms": 100.0}}"#,
        )
        .expect("document");
        assert_eq!(
            latency_evidence(&doc),
            Some(LatencyEvidence {
                idle_p50_ms: 15.0,
                loaded_p50_ms: 97.0,
                loaded_p99_ms: 115.0,
                loaded_rpm: Some(600.0),
                predicted_queue_ms: Some(100.0),
            })
        );
        let empty = Document::parse(r#"{"end": {}}"#).expect("document");
        assert_eq!(latency_evidence(&empty), None);
    }

    #[test]
    fn a_senders_stall_is_read_from_its_intervals() {
        // The lab's black hole with tcp_mtu_probing=1: intervals 1-3 s
        // wrote nothing with a one-segment window, then the transfer went on.
        let ev = fixture("lab-black-hole-probing.json", None);
        let s = &ev.streams[0];
        // Two whole intervals, as the clock measured them.
        let stalled = s.stalled_us.unwrap_or(0);
        assert!(stalled.abs_diff(2_000_000) < 10_000, "{s:?}");
        assert_eq!((s.mss, s.pmtu), (Some(1347), Some(1500)));
        assert!(ev.measured_bps > 1e6);
        // The same scenario seen from the server's side of a -R test has
        // no sender intervals: no stall is claimed.
        let mut doc = Document::parse(
            &std::fs::read_to_string(format!(
                "{}/tests/fixtures/lab-black-hole-probing.json",
                env!("CARGO_MANIFEST_DIR")
            ))
            .expect("fixture"),
        )
        .expect("a -J document");
        for iv in doc.intervals.iter_mut().flatten() {
            for s in &mut iv.streams {
                s.snd_cwnd = None;
            }
        }
        let ev = Evidence::from_document(&doc, None).expect("evidence");
        assert_eq!(ev.streams[0].stalled_us, None);
    }

    #[test]
    fn an_interrupted_test_is_read_from_the_senders_own_state() {
        // tcp_mtu_probing=0: stalled after the 37-byte cookie, interrupted
        // while its results were black-holed too.
        let ev = fixture("lab-black-hole-stall.json", None);
        let s = &ev.streams[0];
        assert_eq!(s.payload_acked, Some(37));
        // Intervals 1-4 s; the empty last one is not emitted.
        let stalled = s.stalled_us.unwrap_or(0);
        assert!(stalled.abs_diff(3_000_000) < 10_000, "{s:?}");
        assert!((ev.duration_s - 5.0).abs() < 0.1, "{}", ev.duration_s);
        // 37 B acknowledged over 5 s.
        assert!((ev.measured_bps - 37.0 * 8.0 / ev.duration_s).abs() < 1.0);
        assert!(
            ev.unknown.iter().any(|u| u.contains("without its results")),
            "{:?}",
            ev.unknown
        );
        assert!(!ev.unknown.iter().any(|u| u.contains("not plumb")));
    }

    #[test]
    fn reads_a_stock_iperf3_document() {
        let e = fixture("iperf3-3.12-forward.json", None);
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

    /// `plumb -c … --tool nuttcp -R --rwin 17520` against a stock
    /// `nuttcp -S` across the lab's 1 Gbit/s, 15 ms: the sending server
    /// records nothing of its TCP, so the receiving client's own socket
    /// gives the window (its clamp) and the round trip (its handshake's),
    /// and the window is named.
    #[test]
    fn a_stock_senders_window_and_rtt_come_from_the_plumb_receiver() {
        let e = fixture("nuttcp-reverse-rwin.json", Some(1e9));
        assert!(e.reverse && !e.peer_is_plumb && !e.sender_is_local);
        assert_eq!(e.window(), Some(17_520));
        let rtt = e.min_rtt_s().expect("the receiver's RTT");
        assert!((rtt - 0.015).abs() < 0.001, "{rtt}");
        assert!(e.streams.iter().all(|s| s.srtt_us.is_none()));
        let d = diagnose(&e);
        consistent(&d);
        assert_eq!(d.limit, Some(Limit::ReceiveWindow), "{}", d.summary);
        // The figure is the most the receiver can advertise, and says so.
        assert!(e.window_is_clamp());
        let named = d.findings.iter().flat_map(|f| &f.evidence).any(|l| {
            l.what == "most the receiver can advertise (its window clamp)" && l.value == 17_520.0
        });
        assert!(named, "{:?}", d.findings);
        // A plumb sender's own figures are never replaced by the receiver's.
        let own = fixture("lab-backup.json", Some(1e9));
        assert!(own.streams[0].srtt_us.is_some());
        assert!(!own.window_is_clamp());
    }

    /// Without a link rate, the best interval stands for it; a rate given
    /// stays as given.
    #[test]
    fn the_best_interval_stands_for_an_unknown_link() {
        let path = format!(
            "{}/tests/fixtures/iperf3-3.12-forward.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).expect("fixture");
        let doc = plumb_record::Document::parse(&text).expect("a -J document");
        let best = Evidence::from_document_or_best(&doc, None).expect("evidence");
        let link = best.link.expect("a link rate");
        assert!(matches!(link.source, crate::LinkSource::BestInterval));
        assert!(
            link.bps > 0.0 && link.bps == best.best_interval_bps,
            "{link:?}"
        );
        let given = LinkRate {
            bps: 1e9,
            source: crate::LinkSource::Given,
        };
        let ev = Evidence::from_document_or_best(&doc, Some(given)).expect("evidence");
        let link = ev.link.expect("the link given");
        assert!(matches!(link.source, crate::LinkSource::Given) && link.bps == 1e9);
    }
}
