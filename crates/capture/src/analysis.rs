//! The analysis driver: records in, per-connection evidence out. Each
//! record is sliced to its IP packet, decoded, and handed to its connection;
//! what cannot be decoded is counted by reason, never fatal.

use std::io::Read;
use std::path::Path;

use plumb_record::capture::{DecodeStats, Dropped, Duplicates, Limits, ReadStats};
use serde::Serialize;

use crate::connection::Connection;
use crate::copies::Behind;
use crate::link::{self, NotIp};
use crate::segment::{self, Decoded};
use crate::source::{self, Record};
use crate::table::{Key, Table};
use crate::Error;

/// Everything gathered from one capture.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Analysis {
    /// The container: format, records, skipped records.
    pub read: ReadStats,
    /// Packets skipped by the decoders.
    pub decode: DecodeStats,
    /// The ceiling on tracked connections.
    pub limits: Limits,
    /// Connections the ceiling dropped.
    pub dropped: Dropped,
    /// TCP segments recorded more than once, counted once (each
    /// connection's own are in its directions' `duplicates`).
    pub duplicates: Duplicates,
    /// The connections tracked at the end, by first segment's time.
    pub connections: Vec<Connection>,
}

/// Feeds records to the connection table.
#[derive(Debug)]
pub struct Analyzer {
    table: Table,
    limits: Limits,
    decode: DecodeStats,
    duplicates: Duplicates,
    /// Every recent segment, file-wide, once the capture has shown a copy.
    behind: Option<Box<Behind>>,
}

impl Analyzer {
    /// An analyzer within `limits`.
    pub fn new(limits: Limits) -> Analyzer {
        Analyzer {
            table: Table::new(limits),
            limits,
            decode: DecodeStats::default(),
            duplicates: Duplicates::default(),
            behind: None,
        }
    }

    /// Also draws each connection's time-sequence series, `budget` points
    /// of each kind per direction ([`crate::Series`]).
    pub fn with_series(mut self, budget: usize) -> Analyzer {
        self.table.series_budget = budget.max(crate::series::MIN_BUDGET);
        self
    }

    /// Connections tracked now.
    pub fn tracked(&self) -> usize {
        self.table.len()
    }

    /// Adds one record.
    pub fn record(&mut self, rec: &Record<'_>) {
        let d = &mut self.decode;
        let packet = match link::network(rec.linktype, rec.data) {
            Ok(p) => p,
            Err(NotIp::UnknownLink) => return d.unknown_link += 1,
            Err(NotIp::Truncated) => return d.truncated += 1,
            Err(NotIp::OtherProtocol) => return d.not_ip += 1,
        };
        // Matched by reference: the segment is not moved out of its enum.
        match &segment::decode(&packet, rec.data, rec.orig_len) {
            Decoded::Tcp(seg) => {
                d.tcp += 1;
                let key = Key::new(seg.src, seg.dst);
                let conn = self.table.entry(key);
                let behind = self.behind.as_deref_mut();
                if let Some(copy) =
                    conn.segment(rec.ts_ns, rec.orig_len, seg, rec.interface, behind)
                {
                    self.duplicates.packets += 1;
                    self.duplicates.other_interface += u64::from(copy.other_interface);
                    // The capture records packets more than once: from now
                    // on copies are sought further back too, for those that
                    // come back from behind a queue (see `copies`).
                    self.behind.get_or_insert_with(Box::default);
                }
            }
            &Decoded::TooBig { src, dst, mtu } => match self.table.get_mut(&Key::new(src, dst)) {
                Some(c) => c.too_big(mtu),
                None => d.icmp_unmatched += 1,
            },
            Decoded::Other => d.other_ip += 1,
            Decoded::Fragment => d.fragments += 1,
            Decoded::Truncated => d.truncated += 1,
            Decoded::Malformed => d.malformed += 1,
        }
    }

    /// The evidence, given the container's statistics.
    pub fn finish(self, read: ReadStats) -> Analysis {
        Analysis {
            read,
            decode: self.decode,
            limits: self.limits,
            dropped: self.table.dropped,
            duplicates: self.duplicates,
            connections: self.table.into_connections(),
        }
    }
}

/// Analyses a capture read from `input` (pcap or pcapng, maybe gzip).
pub fn analyze<R: Read + Send>(input: R, limits: Limits) -> Result<Analysis, Error> {
    let mut a = Analyzer::new(limits);
    let read = source::read_records(input, |r| a.record(r))?;
    Ok(a.finish(read))
}

/// Analyses the capture file at `path` and draws each connection's
/// time-sequence series within `budget` points of each kind per direction:
/// memory is set by `limits` and `budget`, not by the capture's length.
pub fn analyze_file_with_series(
    path: &Path,
    limits: Limits,
    budget: usize,
) -> Result<Analysis, Error> {
    let mut a = Analyzer::new(limits).with_series(budget);
    let read = source::read_records(std::fs::File::open(path)?, |r| a.record(r))?;
    Ok(a.finish(read))
}

/// Analyses the capture file at `path`.
pub fn analyze_file(path: &Path, limits: Limits) -> Result<Analysis, Error> {
    analyze(std::fs::File::open(path)?, limits)
}
