//! Test helpers shared by the rules' tests: evidence built by hand, the
//! recorded fixtures, and the property every answer keeps. A test module
//! takes them, and the types they use, with `use crate::testing::*`.

pub(crate) use crate::evidence::{Cpu, Evidence, LinkRate, LinkSource, StreamTcp};
pub(crate) use crate::rules::diagnose;
pub(crate) use crate::tolerance::explains;
pub(crate) use plumb_record::diagnosis::Diagnosis;
pub(crate) use plumb_record::diagnosis::{Confidence, EvidenceKind, Limit, Status};

pub(crate) fn gig() -> Option<LinkRate> {
    Some(LinkRate {
        bps: 1e9,
        source: LinkSource::Given,
    })
}

pub(crate) fn stream(wnd: u64, rtt_us: u64, secs: f64) -> StreamTcp {
    StreamTcp {
        mss: Some(1448),
        pmtu: Some(1500),
        min_rtt_us: Some(rtt_us),
        srtt_us: Some(rtt_us),
        max_cwnd: Some(4 << 20),
        window_is_clamp: false,
        max_snd_wnd: Some(wnd),
        retransmits: Some(0),
        bytes_retrans: Some(0),
        bytes_sent: 0,
        busy_us: Some((secs * 1e6) as u64),
        rwnd_limited_us: Some(0),
        sndbuf_limited_us: Some(0),
        sndbuf_actual: Some(4 << 20),
        sndbuf_set: false,
        window_shrank_share: None,
        stalled_us: None,
        payload_acked: None,
        timeouts: None,
    }
}

pub(crate) fn ev(measured: f64, s: StreamTcp) -> Evidence {
    Evidence {
        tcp: true,
        duration_s: 5.0,
        measured_bps: measured,
        best_interval_bps: measured,
        link: gig(),
        streams: vec![s],
        congestion: Some("cubic".into()),
        ..Evidence::default()
    }
}

/// A lab run recorded with `plumb lab --rate 1gbit … -J` (see the
/// fixture's `lab` and `start` keys for its configuration).
pub(crate) fn recorded(name: &str, link_bps: f64) -> Evidence {
    fixture(&format!("lab-{name}.json"), Some(link_bps))
}

/// The status of the finding for `l`, if the answer has one.
pub(crate) fn status(d: &Diagnosis, l: Limit) -> Option<Status> {
    d.findings.iter().find(|f| f.limit == l).map(|f| f.status)
}

/// The property every answer keeps: a primary explains the rate or
/// binds by its counters; a predicted rate in the answer is within its
/// tolerance of the measurement; no primary means "unexplained".
pub(crate) fn consistent(d: &Diagnosis) {
    match d.primary() {
        Some(f) => {
            assert_eq!(f.status, Status::Primary);
            assert!(f.explains || f.counters_bind, "{f:?}");
        }
        None => {
            assert_eq!(d.limit_name(), "unexplained");
            assert!(d.summary.starts_with("Unexplained: "), "{}", d.summary);
            assert!(d.fixes.is_empty());
        }
    }
    if let Some(p) = d.predicted_bps {
        let t = d.tolerance.expect("a prediction comes with its tolerance");
        assert!(explains(d.measured_bps, p, t), "{} vs {p}", d.measured_bps);
    }
    assert_eq!(d.confidence_level, d.primary().map(|f| f.level));
    // A line's kind is the one its words say: it survives the JSON.
    for e in d
        .evidence
        .iter()
        .chain(d.findings.iter().flat_map(|f| &f.evidence))
    {
        assert_eq!(e.kind, EvidenceKind::of(&e.what), "{e:?}");
    }
    for f in &d.findings {
        assert!((0.0..=1.0).contains(&f.confidence), "{f:?}");
        // A cap the measurement beats never binds.
        if let (Some(p), Some(t)) = (f.predicted_bps, f.tolerance) {
            if f.status != Status::NotBinding {
                assert!(d.measured_bps <= p * (1.0 + t) * (1.0 + 1e-9), "{f:?}");
            }
        }
        assert_eq!(f.level, Confidence::of(f.confidence));
    }
}

/// Any recorded document in `tests/fixtures`, with the link rate given.
pub(crate) fn fixture(file: &str, link_bps: Option<f64>) -> Evidence {
    let path = format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture");
    let link = link_bps.map(|bps| LinkRate {
        bps,
        source: LinkSource::Given,
    });
    let doc = plumb_record::Document::parse(&text).expect("a -J document");
    Evidence::from_document(&doc, link).expect("evidence")
}

/// No UDP answer claims TCP evidence, missing or present.
pub(crate) fn no_tcp_claims(d: &Diagnosis) {
    for u in &d.unknown {
        assert!(!u.contains("limit counters"), "{u}");
    }
    assert!(d.unknown.iter().any(|u| u.starts_with("TCP's window")));
    for f in &d.findings {
        assert!(!f.sentence.contains("window"), "{}", f.sentence);
    }
}
