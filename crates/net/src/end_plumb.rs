//! `end.plumb`: the two ends' plumb results (this end's and the peer's, as
//! exchanged in the results message) as the document records them, and
//! the UDP summary drawn from both.
//!
//! The results message carries them as `plumb-proto`'s types; the document
//! writes each key the message would, with the same JSON kinds: a float of
//! the message is a float (a non-finite one 0, as the message sends it),
//! an empty list or map and a `false` the message leaves out are left out.

use plumb_proto::results::{
    CgroupCpu, CpuTimes, PlumbResults, PlumbStreamInfo, PlumbUdp, TcpInfoSummary,
};
use plumb_record::{self as doc, Real};

/// `end.plumb` of a test whose ends reported `local` and `remote` (`None`:
/// a stock iperf3 peer); `we_send` when this end sends.
pub fn end_plumb(
    local: Option<&PlumbResults>,
    remote: Option<&PlumbResults>,
    we_send: bool,
) -> doc::EndPlumb {
    let udp = local
        .and_then(|p| p.udp.as_ref())
        .map(|l| udp_summary(l, remote.and_then(|p| p.udp.as_ref()), we_send));
    doc::EndPlumb {
        local: Some(local.map(side)),
        remote: Some(remote.map(side)),
        udp,
        ..doc::EndPlumb::default()
    }
}

/// A float as the results message writes it.
fn finite(v: f64) -> Real {
    Real::float(if v.is_finite() { v } else { 0.0 })
}

/// One end's results: `end.plumb.local` or `end.plumb.remote`.
pub fn side(p: &PlumbResults) -> doc::PlumbSide {
    doc::PlumbSide {
        version: Some(p.version.clone()),
        system: p.system.clone(),
        cpu_system_wide: p.cpu_system_wide.as_ref().map(cpu_times),
        sysctl: (!p.sysctl.is_empty()).then(|| p.sysctl.clone()),
        streams: (!p.streams.is_empty()).then(|| p.streams.iter().map(stream).collect()),
        concurrent_tests: p.concurrent_tests,
        udp: p.udp.as_ref().map(udp),
        cgroup_cpu: p.cgroup_cpu.as_ref().map(cgroup_cpu),
        cpus_allowed: p.cpus_allowed.clone(),
        extra: Default::default(),
    }
}

fn cpu_times(c: &CpuTimes) -> doc::CpuTimes {
    doc::CpuTimes {
        user: finite(c.user),
        nice: finite(c.nice),
        system: finite(c.system),
        irq: finite(c.irq),
        softirq: finite(c.softirq),
        iowait: finite(c.iowait),
        steal: finite(c.steal),
        idle: finite(c.idle),
        extra: Default::default(),
    }
}

fn stream(s: &PlumbStreamInfo) -> doc::PlumbStream {
    doc::PlumbStream {
        id: u64::from(s.id),
        sndbuf_actual: s.sndbuf_actual.map(u64::from),
        sndbuf_set: s.sndbuf_set.then_some(true),
        rcvbuf_actual: s.rcvbuf_actual.map(u64::from),
        window_clamp: s.window_clamp.map(u64::from),
        mss: s.mss.map(u64::from),
        congestion: s.congestion.clone(),
        tcp_info: s.tcp_info.as_ref().map(tcp_info),
        thread_cpu_us: s.thread_cpu_us,
        thread_wait_us: s.thread_wait_us,
        extra: Default::default(),
    }
}

fn tcp_info(t: &TcpInfoSummary) -> doc::TcpInfo {
    doc::TcpInfo {
        busy_time_us: t.busy_time_us,
        rwnd_limited_us: t.rwnd_limited_us,
        sndbuf_limited_us: t.sndbuf_limited_us,
        delivery_rate_bps: t.delivery_rate_bps,
        min_rtt_us: t.min_rtt_us,
        rtt_us: t.rtt_us,
        rttvar_us: t.rttvar_us,
        snd_cwnd_bytes: t.snd_cwnd_bytes,
        snd_wnd: t.snd_wnd,
        total_retrans: t.total_retrans,
        bytes_retrans: t.bytes_retrans,
        bytes_acked: t.bytes_acked,
        pmtu: t.pmtu,
        snd_mss: t.snd_mss,
        rcv_space: t.rcv_space,
        extra: Default::default(),
    }
}

fn udp(u: &PlumbUdp) -> doc::PlumbUdp {
    doc::PlumbUdp {
        gsro: Some(u.gsro),
        gso_segments: u.gso_segments,
        gso_segments_asked: u.gso_segments_asked,
        gro: u.gro,
        jitter_resolution: u.jitter_resolution.clone(),
        receive_poll_us: u.receive_poll_us,
        truncated_reads: u.truncated_reads,
        socket_drops: u.socket_drops,
        socket_buffer_requested: u.socket_buffer_requested,
        sndbuf_granted: u.sndbuf_granted.map(u64::from),
        rcvbuf_granted: u.rcvbuf_granted.map(u64::from),
        extra: Default::default(),
    }
}

fn cgroup_cpu(c: &CgroupCpu) -> doc::CgroupCpu {
    doc::CgroupCpu {
        quota_pct: Some(finite(c.quota_pct)),
        periods: Some(c.periods),
        throttled_periods: Some(c.throttled_periods),
        throttled_us: Some(c.throttled_us),
        extra: Default::default(),
    }
}

/// `end.plumb.udp`: what the test used, each fact from the end that plays
/// the part — GSO from the sending end, GRO, jitter resolution and cut reads
/// from the receiving end (this end where it plays both, as with
/// `--bidir`) — and this end's socket buffers. A fact only a stock iperf3
/// peer knows is `null`.
pub fn udp_summary(local: &PlumbUdp, remote: Option<&PlumbUdp>, we_send: bool) -> doc::UdpSummary {
    let pick = |ours: bool| if ours { Some(local) } else { remote };
    let we_receive = local.gro.is_some();
    let sender = pick(we_send || local.gso_segments.is_some());
    let receiver = pick(we_receive || !we_send);
    doc::UdpSummary {
        gsro: Some(Some(local.gsro)),
        gso_segments: Some(sender.and_then(|u| u.gso_segments)),
        gso_segments_asked: Some(local.gso_segments_asked),
        gro: Some(receiver.and_then(|u| u.gro)),
        jitter_resolution: Some(receiver.and_then(|u| u.jitter_resolution.clone())),
        receive_poll_us: Some(receiver.and_then(|u| u.receive_poll_us)),
        truncated_reads: Some(receiver.and_then(|u| u.truncated_reads)),
        socket_drops: Some(receiver.and_then(|u| u.socket_drops)),
        socket_buffer_requested: Some(local.socket_buffer_requested),
        sndbuf_granted: Some(local.sndbuf_granted.map(u64::from)),
        rcvbuf_granted: Some(local.rcvbuf_granted.map(u64::from)),
        extra: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use plumb_proto::framing::encode_json;
    use plumb_record::Document;

    use super::*;

    /// What the results message sends for `p`, read as the document reads
    /// `end.plumb.local`: equal to [`side`]'s value only if every key is
    /// the same. The message writes a float that is integral as an integer,
    /// as iperf3 does, where the document writes every float as a float;
    /// so the floats read back are made floats again here.
    fn as_sent(p: &PlumbResults) -> doc::PlumbSide {
        let wire = String::from_utf8(encode_json(p, "plumb").expect("encodes")).expect("UTF-8");
        let text = format!(r#"{{"end": {{"plumb": {{"local": {wire}}}}}}}"#);
        let mut s = Document::parse(&text)
            .expect("a document")
            .end
            .and_then(|e| e.plumb)
            .and_then(|p| p.local)
            .flatten()
            .expect("end.plumb.local");
        let float = |r: &mut Real| *r = Real::float(r.get());
        if let Some(c) = s.cpu_system_wide.as_mut() {
            for r in [
                &mut c.user,
                &mut c.nice,
                &mut c.system,
                &mut c.irq,
                &mut c.softirq,
                &mut c.iowait,
                &mut c.steal,
                &mut c.idle,
            ] {
                float(r);
            }
        }
        if let Some(q) = s.cgroup_cpu.as_mut().and_then(|c| c.quota_pct.as_mut()) {
            float(q);
        }
        s
    }

    fn full() -> PlumbResults {
        PlumbResults {
            version: "plumb 0.1.0".into(),
            system: Some("Linux host 6.1.0 #1 SMP x86_64".into()),
            cpu_system_wide: Some(CpuTimes {
                user: 1.0,
                nice: 0.0,
                system: 2.5,
                irq: f64::NAN,
                softirq: 3.25,
                iowait: 0.0,
                steal: f64::INFINITY,
                idle: 90.0,
            }),
            sysctl: BTreeMap::from([("net.ipv4.tcp_rmem".into(), "4096 131072 6291456".into())]),
            streams: vec![PlumbStreamInfo {
                id: 1,
                sndbuf_actual: Some(16_384),
                sndbuf_set: true,
                rcvbuf_actual: Some(131_072),
                window_clamp: Some(65_535),
                mss: Some(1448),
                congestion: Some("cubic".into()),
                tcp_info: Some(TcpInfoSummary {
                    busy_time_us: Some(1),
                    rwnd_limited_us: Some(2),
                    sndbuf_limited_us: Some(3),
                    delivery_rate_bps: Some(4),
                    min_rtt_us: Some(5),
                    rtt_us: Some(6),
                    rttvar_us: Some(7),
                    snd_cwnd_bytes: Some(8),
                    snd_wnd: Some(9),
                    total_retrans: Some(10),
                    bytes_retrans: Some(11),
                    bytes_acked: Some(15),
                    pmtu: Some(12),
                    snd_mss: Some(13),
                    rcv_space: Some(14),
                }),
                thread_cpu_us: Some(100),
                thread_wait_us: Some(7),
            }],
            concurrent_tests: Some(2),
            udp: Some(PlumbUdp {
                gsro: true,
                gso_segments: Some(64),
                gso_segments_asked: Some(64),
                gro: Some(true),
                jitter_resolution: Some("gro_batch".into()),
                receive_poll_us: Some(50),
                truncated_reads: Some(0),
                socket_drops: Some(3),
                socket_buffer_requested: Some(4 << 20),
                sndbuf_granted: Some(8 << 20),
                rcvbuf_granted: Some(8 << 20),
            }),
            cgroup_cpu: Some(CgroupCpu {
                quota_pct: 50.0,
                periods: 10,
                throttled_periods: 4,
                throttled_us: 12_000,
            }),
            cpus_allowed: Some("0-3,6".into()),
        }
    }

    #[test]
    fn a_side_is_what_the_results_message_sends() {
        let full = full();
        let s = side(&full);
        assert_eq!(s, as_sent(&full));
        let cpu = s.cpu_system_wide.expect("CPU times");
        assert!(!cpu.idle.is_integer(), "a float stays a float: {cpu:?}");
        assert_eq!(cpu.irq, Real::float(0.0), "NaN is sent as 0");
        // A message leaves out empty lists and maps, a false `sndbuf_set`
        // and every absent fact.
        let mut bare = PlumbResults::default();
        bare.streams.push(PlumbStreamInfo {
            id: 3,
            ..PlumbStreamInfo::default()
        });
        bare.udp = Some(PlumbUdp::default());
        let s = side(&bare);
        assert_eq!(s, as_sent(&bare));
        assert_eq!((s.sysctl, s.cpu_system_wide), (None, None));
        assert_eq!(s.streams.expect("a stream")[0].sndbuf_set, None);
    }

    #[test]
    fn both_ends_and_the_udp_facts_of_the_end_that_plays_the_part() {
        let ours = full();
        let p = end_plumb(Some(&ours), None, true);
        assert_eq!(p.local, Some(Some(side(&ours))));
        assert_eq!(p.remote, Some(None), "a stock iperf3 peer: null");
        let u = p.udp.expect("a UDP test");
        // This end sends and receives nothing: the receiver's facts are
        // the peer's, which a stock iperf3 does not report.
        assert_eq!(u.gso_segments, Some(Some(64)));
        assert_eq!((u.gro, u.socket_drops), (Some(Some(true)), Some(Some(3))));
        let mut sending = ours.udp.clone().expect("udp");
        sending.gro = None;
        let u = udp_summary(&sending, None, true);
        assert_eq!((u.gro, u.jitter_resolution), (Some(None), Some(None)));
        assert_eq!(u.rcvbuf_granted, Some(Some(8 << 20)));
        assert!(end_plumb(None, None, false).udp.is_none());
    }
}
