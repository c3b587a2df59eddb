//! `plumb why -J` on a capture: the source's statistics, the class rules
//! and each connection explained, as `plumb-record`'s [`CaptureDocument`]
//! ([`document`]); the text form of the same document is `plumb-report`'s
//! `flows`. Also the sentence a live capture's dropped packets need
//! ([`kernel_warning`]).

use plumb_diagnose::class::RULES;
use plumb_record::capture::{CaptureDocument, Explanation, KernelCounts};

use crate::analysis::Analysis;

/// The document of `a` read from `source`, with `explained` its
/// connections explained.
pub fn document(
    source: &str,
    a: &Analysis,
    kernel: Option<KernelCounts>,
    explained: Vec<Explanation>,
) -> CaptureDocument {
    CaptureDocument {
        source: source.to_string(),
        read: a.read.clone(),
        decode: a.decode.clone(),
        limits: a.limits,
        dropped: a.dropped,
        duplicates: a.duplicates,
        kernel,
        connections: a.connections.len(),
        classes: RULES,
        explained,
    }
}

/// The sentence a reader needs when the kernel dropped packets of a live
/// capture; nothing when it dropped none.
pub fn kernel_warning(k: &KernelCounts) -> Option<String> {
    (k.dropped > 0).then(|| {
        format!(
            "The kernel dropped {} of the {} packets the filter passed ({:.1} %) before plumb read them: the rates below read low and the missing segments look like losses; capture for less time, filter more narrowly (-p, --peer), or give plumb more CPU.",
            plumb_diagnose::rules::human_count(k.dropped),
            plumb_diagnose::rules::human_count(k.received),
            100.0 * k.dropped as f64 / k.received.max(1) as f64
        )
    })
}

#[cfg(test)]
mod tests {
    use super::{kernel_warning, KernelCounts};

    #[test]
    fn drops_are_said_with_their_share_and_none_says_nothing() {
        let k = |dropped| KernelCounts {
            received: 1000,
            read: 1000 - dropped,
            dropped,
        };
        assert_eq!(kernel_warning(&k(0)), None);
        let w = kernel_warning(&k(250)).expect("a warning");
        assert!(
            w.contains("dropped 250 of the 1,000") && w.contains("25.0 %"),
            "{w}"
        );
    }
}
