//! What only a capture tells, in sentences beside the verdict: where it was
//! taken and what that does to the RTT figures, what each side offered in
//! its SYN (RFC 7323 window scaling, SACK, timestamps) and what a side
//! that did not offer scaling costs, zero-window episodes, ICMP too-big
//! messages, super-segments, the window's bounds when the handshake was
//! missed, and a sender that held its own flight.

use plumb_diagnose::rules::{human_count, human_rate};
use plumb_record::diagnosis::{Diagnosis, Limit};

use crate::connection::Connection;
use crate::direction::Direction;
use crate::evidence::{data_direction, FlowEvidence};
use plumb_record::capture::Position;

/// The largest window a side that does not scale can advertise.
pub const UNSCALED_MAX: u64 = 65_535;

fn bytes(b: u64) -> String {
    format!("{} B", human_count(b))
}

fn ms(ns: u64) -> String {
    format!("{:.1} ms", ns as f64 / 1e6)
}

/// What one side offered in its SYN, in words.
pub fn offer(d: &Direction) -> Option<String> {
    let s = d.syn.as_ref()?;
    let o = &s.options;
    let scale = o.window_scale.map_or("no window scaling".to_string(), |w| {
        format!("window scale {w} (x{})", 1u32 << w)
    });
    let yes = |b: bool, what: &str| {
        if b {
            what.to_string()
        } else {
            format!("no {what}")
        }
    };
    Some(format!(
        "{} offered {scale}, {}, {}{}; SYN window {}, TTL {} (initial {})",
        d.sender,
        yes(o.sack_permitted, "SACK"),
        yes(o.timestamps, "timestamps"),
        o.mss.map_or(String::new(), |m| format!(", MSS {m}")),
        human_count(u64::from(s.window)),
        s.ttl,
        s.initial_ttl
    ))
}

/// The capture-only sentences for connection `c`.
pub fn notes(c: &Connection, fe: &FlowEvidence, dg: &Diagnosis) -> Vec<String> {
    let (data, back, _) = data_direction(c);
    let s = &fe.summary;
    let rtt_s = fe.evidence.rtt_s();
    let mut n = vec![position(c, s.position)];
    n.extend([&c.client, &c.server].into_iter().filter_map(offer));
    if let (Some(cs), Some(ss)) = (&c.client.syn, &c.server.syn) {
        let off: Vec<&str> = [(cs, &c.client), (ss, &c.server)]
            .iter()
            .filter(|(syn, _)| syn.options.window_scale.is_none())
            .map(|(_, d)| d.sender.as_str())
            .collect();
        if !off.is_empty() {
            let w = s.window_bytes.unwrap_or(UNSCALED_MAX);
            // Said as a cap only where the flow did not carry more.
            let at = rtt_s
                .map(|r| (r, w as f64 * 8.0 / r))
                .filter(|(_, cap)| s.measured_bps <= cap * 1.25)
                .map_or(String::new(), |(r, cap)| {
                    format!("; at {:.0} ms that allows {}", r * 1e3, human_rate(cap))
                });
            n.push(format!(
                "window scaling is off ({} did not offer it): the receiver advertises {} without window scaling, and can never advertise more than {}{at}",
                off.join(" and "),
                bytes(w),
                bytes(UNSCALED_MAX)
            ));
        }
    }
    if let Some((lo, hi)) = s.window_bounds {
        let at = rtt_s.map_or(String::new(), |r| {
            format!(
                "; at {:.0} ms that allows between {} and {}",
                r * 1e3,
                human_rate(lo as f64 * 8.0 / r),
                human_rate(hi as f64 * 8.0 / r)
            )
        });
        n.push(format!(
            "the window scale is unknown (the SYNs were not captured): the receiver's window lies between {} (no scaling, or the largest flight seen) and {} (the largest shift, 14){at}; capture from the connection's start to know it",
            bytes(lo),
            bytes(hi)
        ));
    }
    if back.zero_window.episodes > 0 {
        n.push(format!(
            "the receiver advertised a zero window {} time(s), {:.3} s in all ({:.0}% of the data time): its application did not read",
            back.zero_window.episodes,
            s.zero_window_s,
            (s.zero_window_s / s.duration_s.max(1e-9)).min(1.0) * 100.0
        ));
    }
    if c.icmp_too_big > 0 {
        n.push(format!(
            "{} ICMP too-big message(s) quote this connection, the smallest reporting an MTU of {} B: the path MTU is below what the ends offered",
            c.icmp_too_big,
            c.icmp_mtu.unwrap_or(0)
        ));
    }
    if data.super_segments > 0 {
        n.push(format!(
            "{} segments of up to {} are larger than the receiver's MSS: super-segments (TSO/GSO before a sending NIC splits them, GRO after a receiving one merges them); the MSS is taken from the handshake and the wire-size segments, never from them",
            human_count(data.super_segments),
            bytes(u64::from(data.largest_segment))
        ));
    }
    // Only where the answer is the sender's, or none: beside another
    // cause it would tell a second story.
    if matches!(
        dg.limit,
        None | Some(Limit::Application | Limit::SendBuffer)
    ) && !dg.nothing_to_explain
    {
        n.extend(held_flight(fe));
    }
    n
}

/// Where the capture was taken and what that does to the RTT figures.
fn position(c: &Connection, pos: Position) -> String {
    let h = &c.handshake;
    let halves = match (h.syn_to_syn_ack_ns, h.syn_ack_to_ack_ns, h.rtt_ns) {
        (Some(a), Some(b), Some(r)) => format!(
            " (handshake RTT {}: SYN→SYN-ACK {}, SYN-ACK→ACK {})",
            ms(r),
            ms(a),
            ms(b)
        ),
        _ => String::new(),
    };
    let what = match pos {
        Position::NearSender => "the flight and the data→ACK RTTs seen here are the sender's",
        Position::NearReceiver => "data→ACK here is only the receiver's delay, so the RTT under load is data→ACK plus the handshake's sender side, and a queue before the capture point is not seen in it; the flight here is not the sender's, so its window-limited time is not counted",
        Position::Between => "the RTT under load is data→ACK here plus the handshake's sender side; a queue between the sender and the capture point is not seen in it, and the flight here is not the sender's",
        Position::Unknown => "without the whole handshake the RTT is data→ACK at the capture point, which misses the part between the sender and the capture point",
    };
    format!("captured {}{halves}: {what}", pos.words())
}

/// Near the sender: a flight that stayed well below the receiver's window
/// with the sender idle part of the time was held by the sender itself.
fn held_flight(fe: &FlowEvidence) -> Option<String> {
    let s = &fe.summary;
    let busy = s.busy_share?;
    let w = s.window_bytes?;
    let limited = s.window_limited_share.unwrap_or(0.0);
    if s.max_flight_bytes * 2 > w || limited >= 0.05 {
        return None;
    }
    Some(format!(
        "the sender's flight never exceeded {} against the receiver's {} window, and it had data in flight {:.0}% of the time: the sender held the transfer, its application or its send buffer; from one capture point these cannot be told apart (plumb why --port PORT on the sending host reads TCP_INFO's send-buffer-limited time, which tells them apart)",
        bytes(s.max_flight_bytes),
        bytes(w),
        busy * 100.0
    ))
}
