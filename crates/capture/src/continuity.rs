//! What the data's spacing at the capture point says, at either end: data
//! in nearly every eighth of the round trip means a bottleneck kept busy
//! all the time (the path is full), and data in bursts with pauses every
//! round trip, under a window that allowed far more, means the sender held
//! it (its application or its send buffer, which one capture point cannot
//! tell apart).
//!
//! Both read [`crate::timing::DataTiming::continuity`], which needs neither
//! the sender's flight nor its RTTs: near the receiver, where neither is
//! seen, the spacing still is. A window- or loss-limited flow sends its
//! round trip's worth in one burst at the bottleneck's pace and then waits
//! for ACKs, so its data fills few eighths however close its rate comes to
//! a common link's.

use plumb_diagnose::evidence::LinkRate;
use plumb_diagnose::path::{common_link, QUEUE_BIG_SHARE};
use plumb_diagnose::rules::{efficiency, human_count};
use plumb_diagnose::LinkSource;
use plumb_record::diagnosis::{Diagnosis, Limit};
use plumb_record::diagnosis::{Finding, Fix};

use crate::evidence::FlowEvidence;
use crate::headline::put_first;

/// The least share of eighth-RTT slots with data for a full path: slow
/// start's first bursty round trips and the end of a short test cost a
/// few (the lab's full paths: 0.92-0.99), a pause each round trip costs
/// most. A sender that paces below the path (bbr held by a 64 KiB send
/// buffer: 0.75 at both ends) spreads its data as a bottleneck would, so
/// the bar stays well above it: such a flow is left unexplained rather
/// than called a full path.
pub const FULL_SHARE: f64 = 0.9;
/// The most share of slots with data for a sender that held its data.
pub const HELD_SHARE: f64 = 0.5;
/// How far above the measured rate the receiver's window must allow for a
/// held sender: a window that allows little more is the window's doing.
pub const WINDOW_ROOM: f64 = 1.5;
/// The sender's flight at the window this share of the time or more (near
/// the sender) makes the window, not the sender, the holder.
const WINDOW_LIMITED: f64 = 0.05;

/// The path's rate when the data passed the capture point without pause
/// and no link rate was given: the common link whose goodput the measured
/// rate matches, else the measured rate on the wire.
pub fn full_path(fe: &FlowEvidence) -> Option<LinkRate> {
    let s = &fe.summary;
    let c = s.continuity?;
    if c < FULL_SHARE || s.measured_bps <= 0.0 {
        return None;
    }
    // The segments seen are the wire's; timestamps as Linux sends them.
    let eff = efficiency(s.mss.unwrap_or(1448), true);
    Some(LinkRate {
        bps: common_link(s.measured_bps, eff).unwrap_or(s.measured_bps / eff),
        source: LinkSource::Inferred,
    })
}

/// Whether the data passed the capture point in bursts, pausing every
/// round trip: then no bottleneck was kept busy, and an RTT above its
/// minimum is not a standing queue (near the sender, the receiver's delayed
/// ACKs lift the data→ACK samples by a few milliseconds).
/// A rise of half the minimum RTT or more is a queue whatever the spacing
/// ([`QUEUE_BIG_SHARE`]): delayed ACKs add milliseconds, not that.
pub fn bursts(fe: &FlowEvidence) -> bool {
    let e = &fe.evidence;
    let small_rise = match (e.rtt_s(), e.min_rtt_s()) {
        (Some(r), Some(m)) => r - m < QUEUE_BIG_SHARE * m,
        _ => true,
    };
    small_rise && fe.summary.continuity.is_some_and(|c| c <= HELD_SHARE)
}

/// The clause the link's sentence gains when [`full_path`] inferred it.
pub fn full_path_clause(fe: &FlowEvidence) -> String {
    format!(
        "; the path is full: data passed the capture point in {:.0}% of the time (slots of an eighth of a round trip), as only a bottleneck kept busy carries it (inferred from the capture; --link states the rate)",
        fe.summary.continuity.unwrap_or(0.0) * 100.0
    )
}

/// Makes the sender the answer of `dg`, which named nothing, when its data
/// passed in bursts with pauses under a window that allowed far more.
pub fn sender_held(dg: &mut Diagnosis, fe: &FlowEvidence) {
    let s = &fe.summary;
    let (Some(c), Some(w), Some(rtt)) = (s.continuity, s.window_bytes, fe.evidence.rtt_s()) else {
        return;
    };
    let allows = w as f64 * 8.0 / rtt;
    let at_window = s.window_limited_share.unwrap_or(0.0);
    if dg.limit.is_some()
        || c > HELD_SHARE
        || allows < WINDOW_ROOM * s.measured_bps
        || at_window >= WINDOW_LIMITED
    {
        return;
    }
    let share = 1.0 - c;
    let sentence = format!(
        "its data passed the capture point in bursts (data in {:.0}% of the time, in slots of an eighth of a round trip), while the receiver's {} B window allowed {:.1} Mbit/s: the sender had no more to send; from one capture point an application that did not write and a full send buffer look alike (plumb why --port PORT on the sending host tells them apart)",
        c * 100.0,
        human_count(w),
        allows / 1e6
    );
    let f = Finding {
        missing: vec![
            "which of the sender's application and send buffer held it: TCP_INFO's send-buffer-limited time on the sending host".into(),
        ],
        ..Finding::unmodelled(
            Limit::Application,
            "the sender (its application or its send buffer)",
            &sentence,
            share,
            0.5,
        )
    };
    // A send buffer that fills no longer holds the flight once the window
    // does: up to what the window allows, no more.
    let fix = Fix {
        os: "application".into(),
        commands: vec![
            "on the sending host: plumb why --port PORT (its TCP_INFO tells the send buffer from the application)".into(),
            "if it is the send buffer: raise SO_SNDBUF or net.ipv4.tcp_wmem's maximum; if the application: write sooner and in larger writes".into(),
        ],
        expected_bps: Some(allows),
        note: format!(
            "let the sender keep data in flight: the receiver's window then allows up to {:.1} Mbit/s",
            allows / 1e6
        ),
    };
    put_first(dg, f, fix);
}

/// Whether `dg` should be weighed again with the path [`full_path`]
/// infers: no link was given and nothing explained the rate. A window,
/// loss or sender that explains it stands: the path kept busy by a window
/// that only just fills it (`iperf3 -w 17520`, whose receiver opens the
/// window through the round trip: data in 76 % of the eighths) is the
/// window's doing, and a link at the measured rate would always "explain".
pub fn worth_inferring(dg: &Diagnosis, link_given: bool) -> bool {
    !link_given && dg.limit.is_none()
}
