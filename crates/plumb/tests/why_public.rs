//! `plumb why -r FILE` on captures no one on this project made
//! (`crates/capture/tests/public/`, described in its README): gzip, pcapng
//! with many interfaces, Linux cooked v1 and v2, raw IP, IPv6 and VLAN
//! tags. Each run exits 0; its document counts the file's connections and
//! gives each one that carried data a verdict sentence; the text form says
//! the same to a reader.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::*;

const FILES: &[(&str, u64)] = &[
    // (file, TCP connections in it, as tshark -z conv,tcp lists them)
    ("iso-download.pcap.gz", 1),
    ("206_example_b.pcap.gz", 2),
    // A file with capture duplicates (see DUPLICATES).
    ("ssh-dups.pcap", 1),
    ("reassembly.pcap", 1),
    ("gap-data-missing.pcapng", 1),
    ("irc-starttls.pcap", 1),
    ("openjdk-zeek.org.pcap", 1),
    ("ml-dsa-44-cert.pcap", 1),
    ("ipv6-http-atomic-frag.pcap", 4),
    ("vlan-collisions.pcap", 1),
];

/// The files with capture duplicates, and the copies: `ssh-dups.pcap`,
/// whose every packet after the handshake was captured four times, as many
/// as `editcap -D 5` removes; `vlan-collisions.pcap`, whose packets were
/// recorded twice again under other VLAN tags
/// (crates/capture/tests/public.rs compares both).
const DUPLICATES: &[(&str, u64)] = &[("ssh-dups.pcap", 280), ("vlan-collisions.pcap", 28)];

fn public(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../capture/tests/public")
        .join(name)
}

#[test]
fn every_public_capture_gets_a_verdict() {
    let mut instant = 0;
    for (name, connections) in FILES {
        let file = public(name);
        assert!(file.is_file(), "{}: missing", file.display());
        let path = file.to_str().expect("utf-8 path");
        let o = run(
            plumb_bin(),
            &["why", "-r", path, "-J"],
            Duration::from_secs(60),
        );
        assert!(
            o.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v = json(&o, name);
        assert_eq!(v["connections"].as_u64(), Some(*connections), "{name}");
        assert!(v["read"]["truncated"].is_null(), "{name}: whole");
        let copies = DUPLICATES.iter().find(|d| d.0 == *name).map_or(0, |d| d.1);
        assert_eq!(v["duplicates"]["packets"].as_u64(), Some(copies), "{name}");
        let explained = v["explained"].as_array().expect("explained flows");
        let counted: u64 = explained
            .iter()
            .map(|x| x["flow"]["duplicates"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(counted, copies, "{name}: the connections' duplicates");
        if *name == "ssh-dups.pcap" {
            // Copies are no retransmissions: tshark on editcap -D's output
            // flags none either.
            assert_eq!(explained[0]["flow"]["retransmits"], 0, "{name}");
        }
        assert!(!explained.is_empty(), "{name}: nothing explained");
        for x in explained {
            let summary = x["diagnosis"]["summary"].as_str().unwrap_or("");
            // A bulk flow's answer is a cause (or none); any other flow's is
            // its class, with no limit.
            let lead = match x["class"].as_str() {
                Some("bulk") => ["Limited by", "Unexplained: "].as_slice(),
                Some("short") => &["Short: "],
                Some("request_response") => &["Request/response: "],
                Some("interactive") => &["Interactive: "],
                other => panic!("{name}: class {other:?}"),
            };
            assert!(
                lead.iter().any(|l| summary.starts_with(l))
                    || summary.starts_with("Limited by a path-MTU"),
                "{name}: {summary}"
            );
            if x["class"] != "bulk" {
                assert!(
                    x["diagnosis"]["limit"].is_null()
                        || summary.starts_with("Limited by a path-MTU"),
                    "{name}"
                );
            }
            assert!(!summary.contains(" 0 bit/s"), "{name}: {summary}");
        }
        let t = run(plumb_bin(), &["why", "-r", path], Duration::from_secs(60));
        assert!(t.status.success(), "{name}: text form");
        let text = String::from_utf8_lossy(&t.stdout);
        // A few flows are each shown; many open with the class summary and
        // show the bulk ones.
        if explained.len() < 3 || explained[0]["class"] == "bulk" {
            let first = explained[0]["diagnosis"]["summary"].as_str().unwrap_or("");
            let lead: String = first.chars().take(20).collect();
            assert!(text.contains(&lead), "{name}: text lacks {lead:?}:\n{text}");
        } else {
            assert!(text.contains("\nFlows by class"), "{name}:\n{text}");
        }
        // A flow whose data passed at one instant has no rate, in its
        // header line too.
        assert!(!text.contains(" 0 bit/s"), "{name}:\n{text}");
        // One line for the duplicates, only where there are any.
        let said = format!("Duplicates: {copies} packets are copies of one just before them: the capture was taken on two interfaces or a mirror port saw both directions");
        assert_eq!(text.contains(&said), copies > 0, "{name}:\n{text}");
        assert_eq!(text.contains("Duplicates:"), copies > 0, "{name}:\n{text}");
        assert!(
            t.stderr.is_empty(),
            "{name}: {}",
            String::from_utf8_lossy(&t.stderr)
        );
        if explained
            .iter()
            .any(|x| x["flow"]["duration_s"].as_f64() == Some(0.0))
        {
            instant += 1;
            assert!(!text.contains("bit/s"), "{name}:\n{text}");
        }
    }
    // ml-dsa-44-cert's timestamps are all equal: at least its flow.
    assert!(instant >= 1, "no flow at one instant");
}
