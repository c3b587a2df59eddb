//! Verdicts from captures built in code: each flow is simulated segment by
//! segment (`common::flow`), written as a pcap, analysed and explained, and
//! the test checks the flow is what it says (its window, its loss, its
//! zero window) before asserting the verdict.

mod common;

use common::flow::Flow;
use common::{pcap_of, MS};
use plumb_capture::{explain_all, CaptureFilters, Explained};
use plumb_record::capture::Position;
use plumb_record::diagnosis::Limit;

fn explained(f: &Flow) -> Vec<Explained> {
    let a = common::analyze(&pcap_of(&f.segments()));
    explain_all(&a, &CaptureFilters::default(), None, None)
}

fn one(f: &Flow) -> Explained {
    let mut v = explained(f);
    assert_eq!(v.len(), 1, "one connection carried data");
    v.remove(0)
}

/// The backup scenario: 17,520 B windows without scaling over 15 ms.
#[test]
fn an_unscaled_17520_byte_window_is_the_receive_window() {
    let x = one(&Flow::default());
    let f = &x.flow;
    // The scenario holds: the handshake, no scaling, the window, the RTT.
    assert!(f.handshake);
    assert_eq!(f.position, Position::NearSender);
    assert_eq!(f.max_window_bytes, Some(17_520));
    assert_eq!(f.window_bytes, Some(17_520));
    assert!(f.packets > 1000, "{}", f.packets);
    // A window that never moved never shrank.
    assert_eq!(f.window_shrank_share, Some(0.0));
    assert_eq!(x.evidence.streams[0].window_shrank_share, Some(0.0));
    let rtt = f.srtt_ms.expect("RTT under load");
    assert!((rtt - 15.0).abs() < 0.2, "{rtt}");
    let d = &x.diagnosis;
    assert_eq!(d.limit, Some(Limit::ReceiveWindow), "{}", d.summary);
    let p = d.predicted_bps.expect("a prediction");
    assert!((p / 9.344e6 - 1.0).abs() < 0.02, "{p}");
    assert!(
        (f.measured_bps / 9.344e6 - 1.0).abs() < 0.05,
        "{}",
        f.measured_bps
    );
    assert!(
        d.summary.contains("without window scaling"),
        "{}",
        d.summary
    );
    let note = x
        .notes
        .iter()
        .find(|n| n.contains("window scaling is off"))
        .expect("the scaling note");
    assert!(
        note.contains("advertises 17,520 B without window scaling") && note.contains("9.3"),
        "{note}"
    );
    // Near the sender the flight is the sender's: window-limited time counted.
    assert!(f.window_limited_share.unwrap_or(0.0) > 0.5, "{f:?}");
}

/// The same flow captured beside the receiver: data→ACK there is only
/// the receiver's delay, the handshake gives the rest; the window is named
/// by its prediction, without the sender's window-limited time.
#[test]
fn the_window_is_named_from_the_receivers_end_too() {
    let x = one(&Flow {
        at_receiver: true,
        ..Flow::default()
    });
    let f = &x.flow;
    assert_eq!(f.position, Position::NearReceiver);
    assert_eq!(f.max_window_bytes, Some(17_520));
    let rtt = f.srtt_ms.expect("RTT under load");
    assert!((rtt - 15.0).abs() < 0.2, "{rtt}");
    assert_eq!(f.window_limited_share, None);
    let d = &x.diagnosis;
    assert_eq!(d.limit, Some(Limit::ReceiveWindow), "{}", d.summary);
    assert!(
        (f.measured_bps / 9.344e6 - 1.0).abs() < 0.05,
        "{}",
        f.measured_bps
    );
    assert!(
        x.notes[0].starts_with("captured near the receiver"),
        "{:?}",
        x.notes
    );
}

/// A receiver at zero window for 600 ms of a 1.5 s transfer.
#[test]
fn a_zero_window_episode_is_counted_with_its_time() {
    let flow = Flow {
        shift: Some(7),
        window: 1000,
        zero: Some((300 * MS, 900 * MS)),
        for_ns: 1_500 * MS,
        ..Flow::default()
    };
    let x = one(&flow);
    let f = &x.flow;
    assert_eq!(f.zero_window_episodes, 1, "{f:?}");
    assert!((f.zero_window_s - 0.6).abs() < 0.03, "{}", f.zero_window_s);
    assert!(x.notes.iter().any(|n| n.contains("zero window 1 time(s)")));
    // The zero window is a shrunk one: 0.6 s of the 1.5 s with data in
    // flight, and the diagnosis weighs that share.
    let shrank = f.window_shrank_share.expect("the window is known");
    assert!((shrank - 0.4).abs() < 0.05, "{shrank}");
    assert_eq!(x.evidence.streams[0].window_shrank_share, Some(shrank));
    let d = &x.diagnosis;
    assert_eq!(d.limit, Some(Limit::Application), "{}", d.summary);
    assert!(d.summary.contains("receiving application"), "{}", d.summary);
    assert!(d
        .evidence
        .iter()
        .any(|e| e.what == "time at zero window" && (e.value - 0.6).abs() < 0.03));
}

/// 1 % of segments sent twice, a 17.7 kB flight over 20 ms under a 1 MB
/// window: Mathis explains it.
#[test]
fn a_lossy_flow_is_loss_with_a_mathis_figure() {
    let flow = Flow {
        rtt_ns: 20 * MS,
        mss: 1448,
        shift: Some(7),
        window: 8192,
        cap: Some(17_700),
        resend_every: Some(100),
        for_ns: 4_000 * MS,
        ..Flow::default()
    };
    let x = one(&flow);
    let f = &x.flow;
    let p = f.retransmits as f64 / (f.data_bytes as f64 / 1448.0);
    assert!((p - 0.01).abs() < 0.002, "{p}");
    assert_eq!(f.max_window_bytes, Some(8192 << 7));
    let d = &x.diagnosis;
    assert_eq!(d.limit, Some(Limit::Loss), "{}", d.summary);
    assert!(d.summary.contains("(Mathis)"), "{}", d.summary);
    let mathis = 1448.0 * 8.0 / 0.020 * 1.2247 / 0.1;
    let got = d.predicted_bps.expect("Mathis");
    assert!((got / mathis - 1.0).abs() < 0.1, "{got} vs {mathis}");
}

/// Without the handshake the scale is unknown: bounds, said so.
#[test]
fn a_missed_handshake_gives_the_windows_bounds() {
    let flow = Flow {
        handshake: false,
        ..Flow::default()
    };
    let x = one(&flow);
    let f = &x.flow;
    assert!(!f.handshake);
    assert_eq!(f.position, Position::Unknown);
    assert_eq!(f.max_window_bytes, None);
    let (lo, hi) = f.window_bounds.expect("bounds");
    assert_eq!((lo, hi), (17_520, 17_520 << 14));
    assert!(x
        .notes
        .iter()
        .any(|n| n.contains("window scale is unknown")));
    assert!(x
        .diagnosis
        .unknown
        .iter()
        .any(|u| u.contains("window scale")));
}

/// Super-segments (TSO/GSO on the sending host) never set the MSS.
#[test]
fn super_segments_do_not_set_the_mss() {
    let flow = Flow {
        shift: Some(7),
        window: 8192,
        super_every: Some((3, 10)),
        for_ns: 500 * MS,
        ..Flow::default()
    };
    let x = one(&flow);
    let f = &x.flow;
    assert!(f.super_segments > 10, "{f:?}");
    assert_eq!(f.mss, Some(1460));
    assert!(x.notes.iter().any(|n| n.contains("super-segments")));
}

/// The filters: a port either end, a peer either end, one connection.
#[test]
fn filters_pick_connections() {
    let a = common::analyze(&pcap_of(&Flow::default().segments()));
    let all = CaptureFilters::default();
    assert_eq!(explain_all(&a, &all, None, None).len(), 1);
    let port = |p| CaptureFilters {
        port: Some(p),
        ..CaptureFilters::default()
    };
    assert_eq!(explain_all(&a, &port(5201), None, None).len(), 1);
    assert_eq!(explain_all(&a, &port(40000), None, None).len(), 1);
    assert_eq!(explain_all(&a, &port(80), None, None).len(), 0);
    let peer = CaptureFilters {
        peer: Some(("10.0.0.1".parse().expect("ip"), None)),
        ..CaptureFilters::default()
    };
    assert_eq!(explain_all(&a, &peer, None, None).len(), 1);
    let conn = CaptureFilters {
        conn: Some((
            "10.0.0.2:5201".parse().expect("addr"),
            "10.0.0.1:40000".parse().expect("addr"),
        )),
        ..CaptureFilters::default()
    };
    assert_eq!(explain_all(&a, &conn, None, None).len(), 1);
}

/// A path kept full: segments leave at a 100 Mbit/s bottleneck's spacing
/// (120 µs per 1,460 B) under a window allowing 140 Mbit/s. With no link
/// rate given and no standing queue to see, the data in every eighth of
/// the round trip names the path, from either end.
#[test]
fn data_without_pauses_is_a_full_path_from_either_end() {
    for at_receiver in [false, true] {
        let x = one(&Flow {
            window: 65_535,
            shift: Some(2),
            pace_ns: Some(120_000),
            at_receiver,
            ..Flow::default()
        });
        let f = &x.flow;
        // The scenario holds: the bottleneck's rate, and a window above it.
        assert!(
            (f.measured_bps / 97.3e6 - 1.0).abs() < 0.03,
            "{}",
            f.measured_bps
        );
        assert!(f.window_bytes.unwrap_or(0) > 200_000, "{f:?}");
        assert!(f.continuity.unwrap_or(0.0) > 0.95, "{:?}", f.continuity);
        let d = &x.diagnosis;
        assert_eq!(d.limit, Some(Limit::Link), "{at_receiver}: {}", d.summary);
        assert_eq!(d.link_source.as_deref(), Some("inferred"));
        assert!(d.summary.contains("the path is full"), "{}", d.summary);
        assert!(
            d.fixes
                .iter()
                .all(|f| !f.commands.join(" ").contains("rmem")),
            "{:?}",
            d.fixes
        );
    }
}

/// A sender that keeps 64 KiB in flight under a 1 MiB window: a burst a
/// round trip, then a pause. From either end it is the sender, said to be
/// its application or its send buffer, which one capture cannot tell apart.
#[test]
fn bursts_under_a_larger_window_are_the_sender_from_either_end() {
    for at_receiver in [false, true] {
        let x = one(&Flow {
            window: 65_535,
            shift: Some(4),
            cap: Some(65_536),
            at_receiver,
            ..Flow::default()
        });
        let f = &x.flow;
        // The scenario holds: the cap's rate, far under the window's.
        assert!(
            (f.measured_bps / 33.1e6 - 1.0).abs() < 0.1,
            "{}",
            f.measured_bps
        );
        assert!(f.continuity.unwrap_or(1.0) < 0.3, "{:?}", f.continuity);
        let d = &x.diagnosis;
        assert_eq!(
            d.limit,
            Some(Limit::Application),
            "{at_receiver}: {}",
            d.summary
        );
        assert!(d.summary.contains("look alike"), "{}", d.summary);
        assert_eq!(d.predicted_bps, None);
        // The seed's window-limited flow is not the sender.
        let seed = one(&Flow {
            at_receiver,
            ..Flow::default()
        });
        assert_eq!(seed.diagnosis.limit, Some(Limit::ReceiveWindow));
    }
}

/// The same held sender, its ACKs delayed 3 ms by the receiver: near the
/// sender the data→ACK RTT sits 20 % above the handshake's, which alone
/// would read as a standing queue on a full path. The bursts say no
/// bottleneck was kept busy: it is still the sender, not the link.
#[test]
fn delayed_acks_under_bursts_are_not_a_full_path() {
    let x = one(&Flow {
        window: 65_535,
        shift: Some(4),
        cap: Some(65_536),
        ack_delay_ns: 3 * MS,
        ..Flow::default()
    });
    let f = &x.flow;
    // The scenario holds: near the sender, the RTT 3 ms over its minimum.
    assert_eq!(f.position, Position::NearSender);
    let rise = f.srtt_ms.unwrap_or(0.0) - f.min_rtt_ms.unwrap_or(0.0);
    assert!((rise - 3.0).abs() < 0.5, "{f:?}");
    assert!(f.continuity.unwrap_or(1.0) < 0.3, "{:?}", f.continuity);
    let d = &x.diagnosis;
    assert_eq!(d.limit, Some(Limit::Application), "{}", d.summary);
    assert!(d.summary.contains("look alike"), "{}", d.summary);
}
