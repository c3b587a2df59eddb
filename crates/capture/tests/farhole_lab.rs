//! The path-MTU black hole in captures from plumb's lab (`tests/lab/`,
//! where they come from and what each holds: `tests/lab/README.md`): the
//! data connection is named `path_mtu` from either end — beside the sender
//! from the full-size copies resent without an ACK, beside the receiver
//! from the silence and the sender's later proof that it had sent more.

use std::path::PathBuf;

use plumb_capture::{analyze_file, explain_all, CaptureFilters, Proof};
use plumb_record::capture::{Explanation, Limits};
use plumb_record::diagnosis::Limit;

/// The data connection's client port in each run.
const STALL_PORT: u16 = 60318;
const PROBING_PORT: u16 = 55714;

fn lab(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/lab")
        .join(name)
}

/// The explanation of the connection whose client port is `port`, and its
/// receiver-end black-hole record.
fn data_connection(name: &str, port: u16) -> (Explanation, Option<plumb_capture::FarStall>) {
    let a = analyze_file(&lab(name), Limits::default()).expect("a lab capture");
    let c = a
        .connections
        .iter()
        .find(|c| c.client_addr().is_some_and(|s| s.port() == port))
        .unwrap_or_else(|| panic!("{name}: no connection from port {port}"));
    let far = c.client.far_hole.found;
    let client = c.client_addr().map(|s| s.to_string());
    let x = explain_all(&a, &CaptureFilters::default(), None, None)
        .into_iter()
        .find(|x| Some(&x.flow.client) == client.as_ref())
        .unwrap_or_else(|| panic!("{name}: the data connection is not explained"));
    (x.entry, far)
}

#[test]
fn the_stalled_transfer_is_named_from_the_receivers_capture() {
    let (x, far) = data_connection("stall-far.pcap", STALL_PORT);
    // The capture: the handshake and 37 bytes, no ICMP, and the proof.
    assert!(x.flow.handshake);
    assert_eq!(x.flow.data_bytes, 37);
    assert_eq!(x.flow.icmp_too_big, 0);
    let s = far.expect("the receiver-end black hole");
    assert_eq!(
        (s.proof, s.proof_seq, s.unseen),
        (Proof::Ack, 17_414, 17_376)
    );
    let d = &x.diagnosis;
    assert_eq!(d.limit, Some(Limit::PathMtu), "{}", d.summary);
    assert!(
        d.summary.contains("before this capture point")
            && d.summary.contains("its later ACK carries sequence 17,414"),
        "{}",
        d.summary
    );
}

#[test]
fn the_fallback_is_named_from_the_receivers_capture() {
    let (x, far) = data_connection("probing-far.pcap", PROBING_PORT);
    assert!(x.flow.handshake);
    assert!(x.flow.data_bytes > 1_000_000, "{}", x.flow.data_bytes);
    let s = far.expect("the receiver-end black hole");
    assert_eq!((s.full, s.fallback), (1448, Some(1024)));
    assert!((3_300..3_500).contains(&s.silence_ms), "{}", s.silence_ms);
    let d = &x.diagnosis;
    assert_eq!(d.limit, Some(Limit::PathMtu), "{}", d.summary);
    assert!(
        d.summary.contains(
            "came back as 1024-byte ones where 1448 were agreed (as Linux's tcp_mtu_probing=1 does"
        ),
        "{}",
        d.summary
    );
}

#[test]
fn the_senders_captures_still_name_it_from_the_lost_copies() {
    for (name, port) in [
        ("stall-near.pcap", STALL_PORT),
        ("probing-near.pcap", PROBING_PORT),
    ] {
        let (x, far) = data_connection(name, port);
        // Beside the sender the full-size copies are there: the
        // receiver-end rule has nothing to see.
        assert_eq!(far, None, "{name}");
        let d = &x.diagnosis;
        assert_eq!(d.limit, Some(Limit::PathMtu), "{name}: {}", d.summary);
        assert!(
            d.summary.contains("1448-byte segments were sent")
                && !d.summary.contains("before this capture point"),
            "{name}: {}",
            d.summary
        );
    }
}
