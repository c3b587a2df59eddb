//! The latency verdict: when a test measured idle and loaded latency
//! (`--latency`), how much the bottleneck queue added, against the model's
//! prediction when the queue's size is known, and what to change.
//!
//! Owns the bufferbloat rule and its fixes. Pure: [`crate::evidence`] reads
//! the `end.plumb.latency` object of a `-J` document once into
//! [`LatencyEvidence`]; this module judges it.

use plumb_model::units::sig;
use plumb_record::diagnosis::{Fix, LatencyEvidence, LatencyVerdict, Verdict};

/// An increase at or under this (or under the idle RTT itself) is no bloat:
/// a queue of a few milliseconds is what keeps a link busy.
const FINE_MS: f64 = 10.0;

/// Judges the evidence; `link_bps` sizes the queue in bytes when known.
pub fn verdict(ev: &LatencyEvidence, link_bps: Option<f64>) -> LatencyVerdict {
    let added = ev.added_ms();
    let added_p50 = (ev.loaded_p50_ms - ev.idle_p50_ms).max(0.0);
    let bloated = added > FINE_MS.max(ev.idle_p50_ms);
    let queue_bytes = link_bps.map(|b| added / 1e3 * b / 8.0);
    let mut sentence = if bloated {
        format!(
            "Bufferbloat: under load the bottleneck queue adds {} ms to every round trip \
             (idle {} ms, loaded median {} ms, at worst {} ms{})",
            sig(added, 3),
            sig(ev.idle_p50_ms, 3),
            sig(ev.loaded_p50_ms, 3),
            sig(ev.loaded_p99_ms, 3),
            ev.loaded_rpm
                .map(|r| format!("; {} round trips per minute", sig(r, 3)))
                .unwrap_or_default()
        )
    } else {
        format!(
            "Latency under load is fine: the load added {} ms at worst to an idle {} ms",
            sig(added, 3),
            sig(ev.idle_p50_ms, 3)
        )
    };
    if let Some(q) = queue_bytes.filter(|_| bloated) {
        sentence += &format!(
            ", a standing queue of about {} kB at the link rate",
            sig(q / 1e3, 3)
        );
    }
    if let Some(p) = ev.predicted_queue_ms {
        sentence += &format!(
            "; the model predicts {} ms for the configured queue when full (measured {}% of it)",
            sig(p, 3),
            sig(added / p.max(1e-9) * 100.0, 3)
        );
    }
    sentence.push('.');
    LatencyVerdict {
        verdict: if bloated {
            Verdict::Bufferbloat
        } else {
            Verdict::Fine
        },
        added_ms: added,
        added_p50_ms: added_p50,
        predicted_ms: ev.predicted_queue_ms,
        queue_bytes,
        sentence,
        evidence: *ev,
        fixes: if bloated { fixes(link_bps) } else { Vec::new() },
    }
}

fn fix(os: &str, commands: &[&str], expected_bps: Option<f64>, note: &str) -> Fix {
    Fix {
        os: os.into(),
        commands: commands.iter().map(|c| (*c).to_string()).collect(),
        expected_bps,
        note: note.into(),
    }
}

/// The remedies, from the bottleneck device to the sender, each with its cost.
fn fixes(link_bps: Option<f64>) -> Vec<Fix> {
    let share = |f: f64| link_bps.map(|b| b * f);
    vec![
        fix(
            "linux",
            &["tc qdisc replace dev IFACE root fq_codel   # on the bottleneck's egress"],
            share(1.0),
            "fq_codel keeps the standing queue near 5 ms and gives each flow its own queue; \
             no throughput cost for bulk TCP",
        ),
        fix(
            "router",
            &["tc qdisc replace dev WAN root cake bandwidth RATE   # RATE = 90-95 % of the line"],
            share(0.92),
            "on a home gateway or any device whose bottleneck is upstream (a modem), shape \
             just under the line rate so the queue forms where cake can manage it: costs \
             the 5-10 % shaped away",
        ),
        fix(
            "device",
            &[
                "ip link set dev IFACE txqueuelen 100",
                "smaller switch/modem buffers: about one BDP of the flows you care about",
            ],
            share(1.0),
            "a drop-tail buffer of one BDP still lets one loss-based flow fill the link; \
             below that a single flow loses rate",
        ),
        fix(
            "linux",
            &["sysctl -w net.ipv4.tcp_congestion_control=bbr", "sysctl -w net.core.default_qdisc=fq"],
            share(1.0),
            "BBR paces at the bottleneck rate and keeps about one BDP in flight, so it does not \
             fill deep buffers; no cost on a clean path (it shares less fairly with CUBIC)",
        ),
        fix(
            "application",
            &["pace the sender below the link: plumb -b RATE / --fq-rate, SO_MAX_PACING_RATE"],
            share(0.95),
            "a sender paced at 95 % of the bottleneck never builds a queue; costs the 5 % held back",
        ),
        fix(
            "linux",
            &["sysctl -w net.ipv4.tcp_ecn=1", "tc qdisc replace dev IFACE root fq_codel ecn"],
            share(1.0),
            "ECN lets the queue signal congestion by marking instead of dropping; no throughput \
             cost, but it needs an AQM (fq_codel, cake) at the bottleneck to mark",
        ),
        fix(
            "macos",
            &["sysctl -w net.inet.tcp.ecn_initiate_out=1"],
            share(1.0),
            "ECN from macOS senders; the queue itself must be managed at the bottleneck device",
        ),
        fix(
            "windows",
            &["netsh int tcp set global ecncapability=enabled"],
            share(1.0),
            "ECN from Windows senders; the queue itself must be managed at the bottleneck device",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probes a `-J` document with these figures gives (600 round
    /// trips per minute loaded, a configured queue of 100 ms); reading the
    /// document itself is tested in [`crate::evidence`].
    fn probes(idle: f64, p50: f64, p99: f64) -> LatencyEvidence {
        LatencyEvidence {
            idle_p50_ms: idle,
            loaded_p50_ms: p50,
            loaded_p99_ms: p99,
            loaded_rpm: Some(600.0),
            predicted_queue_ms: Some(100.0),
        }
    }

    #[test]
    fn a_full_queue_is_bufferbloat_with_fixes() {
        let ev = probes(15.0, 97.0, 115.0);
        let v = verdict(&ev, Some(1e9));
        assert_eq!(v.verdict, Verdict::Bufferbloat);
        assert!((v.added_ms - 100.0).abs() < 1e-9);
        assert!((v.queue_bytes.expect("bytes") - 12.5e6).abs() < 1.0);
        assert!(v.sentence.contains("queue") && v.sentence.contains("predicts 100 ms"));
        // The README's list: fq_codel or cake, smaller buffers, BBR, pacing
        // and ECN, each with the rate it leaves (its cost).
        let has = |word: &str| {
            v.fixes
                .iter()
                .any(|f| f.commands.iter().any(|c| c.contains(word)))
        };
        for word in [
            "fq_codel",
            "cake",
            "txqueuelen",
            "smaller",
            "bbr",
            "pace",
            "tcp_ecn",
        ] {
            assert!(has(word), "no fix names {word}");
        }
        assert!(v.fixes.iter().all(|f| f.expected_bps.is_some()));
        assert!(
            v.fixes.iter().any(|f| f.expected_bps < Some(1e9)),
            "a fix with a cost"
        );
    }

    #[test]
    fn a_small_increase_is_fine() {
        let ev = probes(15.0, 17.0, 22.0);
        let v = verdict(&ev, None);
        assert_eq!(v.verdict, Verdict::Fine);
        assert!(v.fixes.is_empty());
    }
}
