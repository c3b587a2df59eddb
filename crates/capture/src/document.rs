//! `plumb why -J` on a capture: the source's statistics, the class rules
//! and each connection explained ([`CaptureDocument`]); the text form of
//! the same document is `plumb-report`'s `flows`.

use plumb_diagnose::class::RULES;
use plumb_record::class::ClassRules;
use serde::Serialize;

use crate::analysis::{Analysis, DecodeStats};
use crate::copies::Duplicates;
use crate::explain::Explanation;
use crate::source::ReadStats;
use crate::table::{Dropped, Limits};

/// The document: what was read, and each connection explained.
#[derive(Debug, Serialize)]
pub struct CaptureDocument<'a> {
    /// The file (or source) read.
    pub source: &'a str,
    /// The container: format, records, skipped records, and where the
    /// capture was cut short (`read.truncated`: `after_packet`, `at_byte`;
    /// null when whole).
    pub read: &'a ReadStats,
    /// Packets the decoders skipped, by reason.
    pub decode: &'a DecodeStats,
    /// The ceiling on tracked connections.
    pub limits: &'a Limits,
    /// Connections the ceiling dropped.
    pub dropped: &'a Dropped,
    /// TCP segments recorded more than once, counted once: `packets`, and
    /// of them `other_interface` (recorded on another pcapng interface).
    pub duplicates: &'a Duplicates,
    /// From an interface: the packet socket's counts (absent for a file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelCounts>,
    /// TCP connections tracked.
    pub connections: usize,
    /// The order in which flow classes are tried and their thresholds.
    pub classes: ClassRules,
    /// Those that matched the filters and carried data, explained, busiest
    /// first.
    pub explained: &'a [Explanation],
}

impl<'a> CaptureDocument<'a> {
    /// The document of `a` read from `source`, with `explained` its
    /// connections explained.
    pub fn new(
        source: &'a str,
        a: &'a Analysis,
        kernel: Option<KernelCounts>,
        explained: &'a [Explanation],
    ) -> CaptureDocument<'a> {
        CaptureDocument {
            source,
            read: &a.read,
            decode: &a.decode,
            limits: &a.limits,
            dropped: &a.dropped,
            duplicates: &a.duplicates,
            kernel,
            connections: a.connections.len(),
            classes: RULES,
            explained,
        }
    }
}

/// What the kernel passed to a live capture, and what it dropped for want
/// of room in the ring: every figure of the analysis misses the dropped
/// packets.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct KernelCounts {
    /// Packets the socket's filter passed (those dropped included).
    pub received: u64,
    /// Packets read and analysed.
    pub read: u64,
    /// Packets dropped before they were read.
    pub dropped: u64,
}

impl KernelCounts {
    /// The sentence a reader needs when packets were dropped.
    pub fn warning(&self) -> Option<String> {
        (self.dropped > 0).then(|| {
            format!(
                "The kernel dropped {} of the {} packets the filter passed ({:.1} %) before plumb read them: the rates below read low and the missing segments look like losses; capture for less time, filter more narrowly (-p, --peer), or give plumb more CPU.",
                plumb_diagnose::rules::human_count(self.dropped),
                plumb_diagnose::rules::human_count(self.received),
                100.0 * self.dropped as f64 / self.received.max(1) as f64
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::KernelCounts;

    #[test]
    fn drops_are_said_with_their_share_and_none_says_nothing() {
        let k = |dropped| KernelCounts {
            received: 1000,
            read: 1000 - dropped,
            dropped,
        };
        assert_eq!(k(0).warning(), None);
        let w = k(250).warning().expect("a warning");
        assert!(
            w.contains("dropped 250 of the 1,000") && w.contains("25.0 %"),
            "{w}"
        );
    }
}
