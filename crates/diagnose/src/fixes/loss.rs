//! The fixes for loss: TCP's (find where packets are lost, a congestion
//! control that does not treat random loss as congestion, parallel
//! streams) and lost UDP datagrams (the receiving socket's, or the path's).

use super::command::{fix, rate_arg};
use crate::evidence::Evidence;
use plumb_record::diagnosis::Figures;
use plumb_record::diagnosis::{Finding, Fix, Limit};

/// The fixes for TCP loss. The loss finding's Mathis bound, when it has
/// one, says what parallel streams would reach.
pub(super) fn tcp(ev: &Evidence, figures: &Figures, findings: &[Finding]) -> Vec<Fix> {
    let expect = figures.expect_bps;
    let goodput = figures.goodput_bps;
    let streams = figures.streams_needed;
    let loss_cap = findings
        .iter()
        .find(|f| f.limit == Limit::Loss)
        .and_then(|f| f.predicted_bps);
    let mut out = vec![
        fix(
        "path",
        "find where packets are lost and remove it: the model says loss, not the hosts, holds the rate",
        expect,
        &[
            "ip -s link   (errors and drops on each interface on the path)".into(),
            "ethtool -S IF | grep -i -E 'err|drop|crc'".into(),
            "check duplex/speed negotiation, optics, and queue drops on switches and routers".into(),
        ],
    ),
    fix(
        "linux",
        "a congestion control that does not treat random loss as congestion",
        None,
        &[
            "sysctl -w net.core.default_qdisc=fq".into(),
            "sysctl -w net.ipv4.tcp_congestion_control=bbr".into(),
        ],
    ),
    ];
    if let Some(n) = streams {
        out.push(fix(
            "application",
            "parallel streams share the loss and multiply the Mathis bound",
            loss_cap
                .map(|l| l * n as f64 / ev.streams.len().max(1) as f64)
                .map(|e| goodput.map_or(e, |g| g.min(e))),
            &[format!("{n} parallel streams (plumb -c HOST -P {n})")],
        ));
    }
    out
}

/// The fixes for lost UDP datagrams: the receiving socket's, or the path's.
pub(super) fn udp(ev: &Evidence) -> Vec<Fix> {
    let mut out = Vec::new();
    let Some(u) = ev.udp else { return out };
    let in_socket = u.socket_drops.is_some_and(|d| d * 2 >= u.lost && d > 0);
    if in_socket {
        let want = u.rcvbuf_granted.map_or(8 << 20, |b| (b * 4).max(8 << 20));
        out.push(fix(
            "receiver",
            "a larger receive buffer rides out the reader's pauses; a reader that keeps up needs a core of its own",
            u.sent_bps,
            &[
                format!("plumb -c HOST -u -w {}M   (SO_RCVBUF at both ends)", want >> 20),
                format!("sysctl -w net.core.rmem_max={want}   (Linux caps SO_RCVBUF at it)"),
                "top -H on the receiver: is its reading thread at 100 % of a core?".into(),
            ],
        ));
    } else {
        out.push(fix(
            "application",
            "offer no more than the path delivers: UDP does not slow down for loss",
            Some(ev.measured_bps),
            &[format!("plumb -c HOST -u -b {}", rate_arg(ev.measured_bps))],
        ));
        out.push(fix(
            "path",
            "find where datagrams are dropped",
            None,
            &[
                "ip -s link   (errors and drops on each interface on the path)".into(),
                "tc -s qdisc   (queue drops at the sender's bottleneck)".into(),
            ],
        ));
    }
    out
}
