//! Reading a capture file record by record: gzip is told apart from a plain
//! capture by its first two bytes, pcap from pcapng by the magic number, and
//! every packet comes out as a [`Record`] with its link type and a timestamp
//! in nanoseconds, whatever the file's resolution (pcap's microsecond and
//! nanosecond magics, each pcapng interface's `if_tsresol`/`if_tsoffset`).
//! pcapng sections and interfaces are followed as they come: a new section
//! forgets the interfaces of the one before. Memory stays bounded by the
//! largest record ([`MAX_RECORD`]): the file is never loaded whole.
//!
//! A capture cut short (tcpdump killed, a disk full, a copy of a file still
//! being written, a gzip stream cut) is read up to the cut: every whole
//! record is handed on and `ReadStats::truncated` says where it ends, as
//! tcpdump and tshark read such files. Only a file whose own header is cut
//! is an error: nothing in it says it is a capture.

use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use flate2::read::MultiGzDecoder;
use pcap_parser::traits::{PcapNGPacketBlock, PcapReaderIterator};
use pcap_parser::{Block, LegacyPcapReader, PcapBlockOwned, PcapError, PcapNGReader};
use plumb_record::capture::{ReadStats, Truncation};

use crate::Error;

/// The reader's buffer to start with: a few records of a 64 KiB snaplen.
const START_BUFFER: usize = 256 * 1024;
/// The largest record or block buffered (tcpdump's snaplen is 256 KiB; a
/// record claiming more than this is not a packet).
pub const MAX_RECORD: usize = 16 * 1024 * 1024;

/// One captured packet.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// Capture time, nanoseconds since the Unix epoch (0 for a pcapng
    /// simple packet block before any timestamped one).
    pub ts_ns: u64,
    /// The interface's link type (LINKTYPE_* number).
    pub linktype: u32,
    /// The captured bytes (at most the snaplen).
    pub data: &'a [u8],
    /// The packet's length on the wire.
    pub orig_len: u32,
    /// The pcapng interface it was captured on (its index in the section);
    /// 0 in a pcap file.
    pub interface: u32,
}

/// A link's description: its type, snaplen and clock.
#[derive(Debug, Clone, Copy)]
struct Iface {
    linktype: u32,
    snaplen: u32,
    /// Timestamp units per second.
    units: u64,
    /// Seconds added to every timestamp (pcapng `if_tsoffset`).
    offset_s: i64,
}

impl Iface {
    fn ts_ns(&self, ts: u64) -> u64 {
        // Microseconds and nanoseconds, nearly every capture's units, take
        // no 128-bit division: this runs once per record.
        let ns = match self.units {
            1_000_000_000 => u128::from(ts),
            1_000_000 => u128::from(ts) * 1_000,
            units => u128::from(ts) * 1_000_000_000 / u128::from(units.max(1)),
        };
        let ns = ns as i128 + i128::from(self.offset_s) * 1_000_000_000;
        u64::try_from(ns.max(0)).unwrap_or(u64::MAX)
    }

    fn fits(&self, caplen: u32, orig_len: u32) -> bool {
        (self.snaplen == 0 || caplen <= self.snaplen) && caplen <= orig_len
    }
}

/// Reads `input` (pcap or pcapng, plain or gzip) and calls `each` for every
/// packet record, in file order. A capture cut short is read up to the cut
/// (`ReadStats::truncated`); a broken container or a cut file header is
/// an [`Error`].
pub fn read_records<'a, R, F>(input: R, mut each: F) -> Result<ReadStats, Error>
where
    R: Read + Send + 'a,
    F: FnMut(&Record<'_>),
{
    let gzip_cut = Arc::new(AtomicBool::new(false));
    let (input, gzip) = ungzip(input, &gzip_cut)?;
    let (input, magic) = peek_magic(input)?;
    let mut stats = ReadStats {
        format: format_of(&magic)?.to_string(),
        gzip,
        ..ReadStats::default()
    };
    let mut reader = open(&stats.format, input)?;
    let mut walker = Walker::default();
    let mut capacity = START_BUFFER;
    let mut stalled = 0u32;
    loop {
        let offset = reader.consumed() as u64;
        let step = match reader.next() {
            Ok((used, block)) => {
                walker.block(&block, &mut stats, &mut each);
                Step::Consume(used)
            }
            Err(e) => Step::from(e),
        };
        match step {
            Step::Consume(used) => {
                reader.consume(used);
                stalled = 0;
            }
            Step::Done => {
                // A gzip stream that ended early may end between records.
                return Ok(if gzip_cut.load(Ordering::Relaxed) {
                    cut_at(stats, offset)
                } else {
                    stats
                });
            }
            Step::Refill => {
                // A refill that brings nothing new twice over means the
                // input has ended inside a record.
                stalled += 1;
                if stalled > 2 {
                    return Ok(cut_at(stats, offset));
                }
                reader.refill().map_err(|_| io_failed())?;
            }
            Step::Grow => {
                // Bounded: capacity doubles up to MAX_RECORD at most.
                stalled = 0;
                capacity *= 2;
                if capacity > MAX_RECORD || !reader.grow(capacity) {
                    return Err(Error::TooLarge {
                        offset,
                        limit: MAX_RECORD,
                    });
                }
                reader.refill().map_err(|_| io_failed())?;
            }
            Step::Truncated => return Ok(cut_at(stats, offset)),
            Step::Io => return Err(io_failed()),
            Step::Malformed => {
                return Err(Error::Malformed {
                    what: if stats.format == "pcapng" {
                        "pcapng block"
                    } else {
                        "pcap record"
                    },
                    offset,
                })
            }
        }
    }
}

/// Packet records read, those skipped included.
fn packets_read(s: &ReadStats) -> u64 {
    s.records + s.oversize_records + s.unknown_interface
}

/// Notes that the capture ends inside the record starting at `offset`
/// (or, for a gzip stream cut between records, at `offset`).
fn cut_at(mut s: ReadStats, offset: u64) -> ReadStats {
    s.truncated = Some(Truncation {
        after_packet: packets_read(&s),
        at_byte: offset,
    });
    s
}

/// The container's reader, by the format the magic named.
fn open<'a>(
    format: &str,
    input: Box<dyn Read + Send + 'a>,
) -> Result<Box<dyn PcapReaderIterator + Send + 'a>, Error> {
    let reader = if format == "pcapng" {
        PcapNGReader::new(START_BUFFER, input)
            .map(|r| Box::new(r) as Box<dyn PcapReaderIterator + Send>)
    } else {
        LegacyPcapReader::new(START_BUFFER, input)
            .map(|r| Box::new(r) as Box<dyn PcapReaderIterator + Send>)
    };
    reader.map_err(|e| match e {
        PcapError::Incomplete(_) | PcapError::Eof | PcapError::UnexpectedEof => Error::CutHeader,
        PcapError::ReadError => io_failed(),
        _ => Error::Malformed {
            what: "file header",
            offset: 0,
        },
    })
}

fn io_failed() -> Error {
    Error::Io(io::Error::other("reading the capture failed"))
}

/// What the read loop does after one `next()`.
enum Step {
    Consume(usize),
    Done,
    Refill,
    Grow,
    Truncated,
    Io,
    Malformed,
}

impl<I> From<PcapError<I>> for Step {
    fn from(e: PcapError<I>) -> Self {
        match e {
            PcapError::Eof => Step::Done,
            PcapError::Incomplete(_) => Step::Refill,
            PcapError::BufferTooSmall => Step::Grow,
            PcapError::UnexpectedEof => Step::Truncated,
            PcapError::ReadError => Step::Io,
            PcapError::HeaderNotRecognized
            | PcapError::NomError(..)
            | PcapError::OwnedNomError(..) => Step::Malformed,
        }
    }
}

/// The container's state between blocks: the current section's interfaces.
#[derive(Default)]
struct Walker {
    legacy: Option<Iface>,
    ifaces: Vec<Iface>,
    last_ts: u64,
}

impl Walker {
    fn block<F: FnMut(&Record<'_>)>(
        &mut self,
        block: &PcapBlockOwned<'_>,
        stats: &mut ReadStats,
        each: &mut F,
    ) {
        let (iface, ts, data, orig_len, if_id) = match block {
            PcapBlockOwned::LegacyHeader(h) => {
                stats.sections += 1;
                self.legacy = Some(Iface {
                    linktype: h.network.0 as u32,
                    snaplen: h.snaplen,
                    units: if h.is_nanosecond_precision() {
                        1_000_000_000
                    } else {
                        1_000_000
                    },
                    offset_s: 0,
                });
                return;
            }
            PcapBlockOwned::Legacy(b) => {
                let Some(iface) = self.legacy else { return };
                let ts = u64::from(b.ts_sec) * iface.units + u64::from(b.ts_usec);
                if !iface.fits(b.caplen, b.origlen) || b.data.len() < b.caplen as usize {
                    stats.oversize_records += 1;
                    return;
                }
                (iface, Some(ts), &b.data[..b.caplen as usize], b.origlen, 0)
            }
            PcapBlockOwned::NG(Block::SectionHeader(_)) => {
                stats.sections += 1;
                self.ifaces.clear();
                return;
            }
            PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                stats.interfaces += 1;
                self.ifaces.push(Iface {
                    linktype: idb.linktype.0 as u32,
                    snaplen: idb.snaplen,
                    // An invalid resolution (past 2^64 units per second)
                    // falls back to the default, microseconds.
                    units: idb.ts_resolution().unwrap_or(1_000_000),
                    offset_s: idb.ts_offset(),
                });
                return;
            }
            PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                let Some(&iface) = self.ifaces.get(epb.if_id as usize) else {
                    stats.unknown_interface += 1;
                    return;
                };
                let ts = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
                if !iface.fits(epb.caplen, epb.origlen) {
                    stats.oversize_records += 1;
                    return;
                }
                (iface, Some(ts), epb.packet_data(), epb.origlen, epb.if_id)
            }
            PcapBlockOwned::NG(Block::SimplePacket(spb)) => {
                let Some(&iface) = self.ifaces.first() else {
                    stats.unknown_interface += 1;
                    return;
                };
                (iface, None, spb.packet_data(), spb.origlen, 0)
            }
            PcapBlockOwned::NG(_) => return,
        };
        if let Some(ts) = ts {
            self.last_ts = iface.ts_ns(ts);
        }
        stats.records += 1;
        each(&Record {
            ts_ns: self.last_ts,
            linktype: iface.linktype,
            data,
            orig_len,
            interface: if_id,
        });
    }
}

/// Gzip is told by its magic bytes (1f 8b), not by the file name. A gzip
/// stream that ends early ends the capture there, and sets `cut`.
fn ungzip<'a, R: Read + Send + 'a>(
    input: R,
    cut: &Arc<AtomicBool>,
) -> Result<(Box<dyn Read + Send + 'a>, bool), Error> {
    let (input, head) = peek(input, 2)?;
    if head == [0x1f, 0x8b] {
        let gz = GzipCut {
            inner: MultiGzDecoder::new(input),
            cut: Arc::clone(cut),
        };
        Ok((Box::new(FullRead(gz)), true))
    } else {
        Ok((Box::new(input), false))
    }
}

/// A gzip stream read up to where it was cut: the decoder's "unexpected
/// end" (a deflate stream or trailer cut short) becomes the end of the
/// input, noted in `cut`; a corrupt stream stays an error.
struct GzipCut<R> {
    inner: R,
    cut: Arc<AtomicBool>,
}

impl<R: Read> Read for GzipCut<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.cut.load(Ordering::Relaxed) {
            return Ok(0);
        }
        match self.inner.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                self.cut.store(true, Ordering::Relaxed);
                Ok(0)
            }
            other => other,
        }
    }
}

fn peek_magic<'a>(
    input: Box<dyn Read + Send + 'a>,
) -> Result<(Box<dyn Read + Send + 'a>, Vec<u8>), Error> {
    let (input, head) = peek(input, 4)?;
    Ok((Box::new(input), head))
}

/// The format a magic number names.
fn format_of(magic: &[u8]) -> Result<&'static str, Error> {
    match magic {
        [0x0a, 0x0d, 0x0d, 0x0a] => Ok("pcapng"),
        [0xa1, 0xb2, 0xc3, 0xd4]
        | [0xd4, 0xc3, 0xb2, 0xa1]
        | [0xa1, 0xb2, 0x3c, 0x4d]
        | [0x4d, 0x3c, 0xb2, 0xa1]
        | [0xa1, 0xb2, 0xcd, 0x34]
        | [0x34, 0xcd, 0xb2, 0xa1] => Ok("pcap"),
        _ => Err(Error::BadMagic {
            found: magic.to_vec(),
        }),
    }
}

/// Reads up to `n` bytes and gives back a reader that yields them again.
fn peek<R: Read>(mut input: R, n: usize) -> Result<(impl Read, Vec<u8>), Error> {
    let mut head = vec![0u8; n];
    let got = FullRead(&mut input).read(&mut head)?;
    head.truncate(got);
    let again = io::Cursor::new(head.clone());
    Ok((FullRead(again.chain(input)), head))
}

/// Fills the whole buffer unless the input ends: the pcap parser takes a
/// short read for a truncated block, and a gzip stream reads short often.
struct FullRead<R>(R);

impl<R: Read> Read for FullRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut filled = 0;
        while filled < buf.len() {
            match self.0.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(filled)
    }
}
