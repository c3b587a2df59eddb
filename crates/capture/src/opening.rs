//! A congestion window still opening when the transfer ended, named from
//! a capture: over the longest run the sender's new data per round trip
//! was still growing at the end ([`crate::rounds::Growth`]), with nothing
//! resent and the receiver's window never reached. Neither the window nor
//! the sender's application held it: TCP itself had not yet grown its
//! window to the path's rate (T-RAT's "transport-limited"), as in
//! congestion avoidance from a small start, where the flight grows a
//! segment per round trip or less. A sender that holds its own flight, or
//! a window that binds, keeps the rounds level.

use plumb_diagnose::rules::human_count;
use plumb_record::diagnosis::{Diagnosis, Limit};
use plumb_record::diagnosis::{Finding, Fix};

use crate::connection::Connection;
use crate::evidence::FlowEvidence;
use crate::headline::put_first;

/// The share of the receiver's window the largest round stays under.
const UNDER_WINDOW: f64 = 0.9;

/// Makes a window still opening the answer of `dg`, which named nothing.
pub fn still_opening(c: &Connection, fe: &FlowEvidence, dg: &mut Diagnosis) {
    let s = &fe.summary;
    let Some(run) = c.shape.longest else { return };
    let g = run.growth;
    let under = s
        .window_bytes
        .is_some_and(|w| f64::from(g.peak) < UNDER_WINDOW * w as f64);
    if dg.limit.is_some() || s.retransmits > 0 || !g.growing || !under {
        return;
    }
    let sentence = format!(
        "its data per round trip grew from {} B to {} B over {} round trips, with nothing resent and the receiver's {} B window never reached: TCP's congestion window was still opening (slow start, or congestion avoidance from a small start) when the transfer ended",
        human_count(u64::from(g.first)),
        human_count(u64::from(g.last)),
        g.rounds,
        human_count(s.window_bytes.unwrap_or(0)),
    );
    let f = Finding {
        missing: vec![
            "the sender's congestion window and congestion control: only its flight is on the wire"
                .into(),
        ],
        ..Finding::unmodelled(
            Limit::Congestion,
            "the congestion window, still opening",
            &sentence,
            1.0,
            0.6,
        )
    };
    let fix = Fix {
        os: "linux".into(),
        commands: vec![
            "ip route change ROUTE initcwnd 20   (on the sender; ROUTE as `ip route show` prints it)".into(),
            "sysctl -w net.ipv4.tcp_congestion_control=bbr   (reaches the path's rate in fewer round trips)".into(),
        ],
        expected_bps: None,
        note: "on the sender: let the window open sooner, or keep the connection open so it keeps its window".into(),
    };
    put_first(dg, f, fix);
}
