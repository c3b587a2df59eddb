//! The diagnosis as the `diagnosis` object of a `-J` document: pinned for a
//! few recorded tests (`tests/golden/*.json`, written with
//! `PLUMB_BLESS=1 cargo test -p plumb-diagnose --test diagnosis_json`), and
//! read back into the same [`Diagnosis`] for every fixture; and a document
//! with its diagnosis (`Document::with_diagnosis`) written and read back.

use plumb_diagnose::evidence::LinkRate;
use plumb_diagnose::{diagnose, Evidence, LinkSource};
use plumb_record::diagnosis::Diagnosis;
use plumb_record::Document;

const DIR: &str = env!("CARGO_MANIFEST_DIR");

/// The diagnosis of fixture `file`, with the link rate given when known.
fn diagnosis_of(file: &str, link_bps: Option<f64>) -> Diagnosis {
    let text = std::fs::read_to_string(format!("{DIR}/tests/fixtures/{file}")).expect("fixture");
    let doc = Document::parse(&text).expect("a -J document");
    let link = link_bps.map(|bps| LinkRate {
        bps,
        source: LinkSource::Given,
    });
    diagnose(&Evidence::from_document(&doc, link).expect("evidence"))
}

/// A window limit with an application cap beside it; a stock iperf3
/// document with no link rate; a UDP test faster than its link.
#[test]
fn the_json_of_recorded_diagnoses_is_pinned() {
    for (file, link) in [
        ("lab-rwin-small-appcap.json", Some(1e9)),
        ("iperf3-3.12-forward.json", None),
        ("lab-udp-over-link.json", Some(1e9)),
    ] {
        let json = serde_json::to_string_pretty(&diagnosis_of(file, link)).expect("json") + "\n";
        let golden = format!("{DIR}/tests/golden/{file}");
        if std::env::var_os("PLUMB_BLESS").is_some() {
            std::fs::write(&golden, &json).expect("golden written");
        }
        let want = std::fs::read_to_string(&golden).expect("golden");
        assert_eq!(json, want, "{file}: the diagnosis's JSON changed");
    }
}

/// Every fixture's diagnosis, with and without a link rate, reads back from
/// its JSON as it was.
#[test]
fn every_diagnosis_reads_back() {
    for e in std::fs::read_dir(format!("{DIR}/tests/fixtures")).expect("fixtures") {
        let name = e.expect("entry").file_name().to_string_lossy().to_string();
        for link in [None, Some(1e9)] {
            let d = diagnosis_of(&name, link);
            let json = serde_json::to_string(&d).expect("json");
            let back: Diagnosis = serde_json::from_str(&json).expect("reads back");
            assert_eq!(back, d, "{name}");
        }
    }
}

/// A document explained: its keys, then `diagnosis` in place of the one it
/// had; read back, the same document and diagnosis.
#[test]
fn an_explained_document_writes_the_diagnosis_last_and_reads_back() {
    let text =
        std::fs::read_to_string(format!("{DIR}/tests/fixtures/lab-backup.json")).expect("fixture");
    let mut doc = Document::parse(&text).expect("a -J document");
    doc.diagnosis = Some(None);
    let d = diagnosis_of("lab-backup.json", Some(1e9));
    let x = doc.clone().with_diagnosis(d.clone());
    let v = serde_json::to_value(&x).expect("json");
    let keys: Vec<&String> = v.as_object().expect("an object").keys().collect();
    assert_eq!(keys.last().map(|k| k.as_str()), Some("diagnosis"));
    assert_eq!(keys.iter().filter(|k| k.as_str() == "diagnosis").count(), 1);
    assert_eq!(v["diagnosis"], serde_json::to_value(&d).expect("json"));
    let back: Document = serde_json::from_value(v).expect("reads back");
    assert_eq!(back.diagnosis.clone().flatten().as_ref(), Some(&d));
    assert_eq!(back, doc.clone().with_diagnosis(d));
    // A document with no diagnosis writes none.
    doc.diagnosis = None;
    let v = serde_json::to_value(&doc).expect("json");
    assert!(v.get("diagnosis").is_none());
}

/// A connection with nothing to explain (idle) writes `"limit": null`, apart
/// from an unexplained one's `"unexplained"`; every other key is the same.
#[test]
fn nothing_to_explain_is_a_null_limit() {
    let d = diagnosis_of("iperf3-3.12-forward.json", None);
    let mut idle = d.clone();
    idle.nothing_to_explain = true;
    let (a, b) = (
        serde_json::to_value(&d).expect("json"),
        serde_json::to_value(&idle).expect("json"),
    );
    assert!(a["limit"].is_string(), "{}", a["limit"]);
    assert!(b["limit"].is_null(), "{}", b["limit"]);
    let keys = |v: &serde_json::Value| -> Vec<String> {
        v.as_object().expect("object").keys().cloned().collect()
    };
    assert_eq!(keys(&a), keys(&b));
    // Read back, a null limit is no limit.
    let back: Diagnosis = serde_json::from_value(b).expect("reads back");
    assert_eq!(back.limit, None);
}
