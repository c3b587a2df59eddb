//! `--write FILE`: the packets a live capture read, saved as pcapng so
//! that Wireshark, tshark and plumb itself read them back. One section
//! (SHB naming plumb), one interface (IDB: the link type, the snap length,
//! the interface's name and `if_tsresol` = 9, nanoseconds), one Enhanced
//! Packet Block per packet, and at the end an Interface Statistics Block
//! with the kernel's received and dropped counts, which Wireshark shows.
//!
//! Written here rather than with `pcap-parser`'s `serialize` feature: that
//! builds a `Vec` per block (an allocation per packet at 100,000 packets/s)
//! and pulls in `cookie-factory`; four block types in little-endian are a
//! few lines, and plumb's own reader (`pcap-parser`) and tshark check them.

use std::io::{self, Write};

const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 1;
const ISB: u32 = 5;
const EPB: u32 = 6;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
const OPT_END: u16 = 0;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_TSRESOL: u16 = 9;
const ISB_IFRECV: u16 = 4;
const ISB_IFDROP: u16 = 5;

/// Writes a pcapng file of one interface.
#[derive(Debug)]
pub struct PcapngWriter<W: Write> {
    out: W,
    block: Vec<u8>,
}

/// A block under construction: header, body, options, trailer.
fn begin(block: &mut Vec<u8>, kind: u32) {
    block.clear();
    block.extend_from_slice(&kind.to_le_bytes());
    block.extend_from_slice(&0u32.to_le_bytes()); // length, set by end()
}

fn option(block: &mut Vec<u8>, code: u16, value: &[u8]) {
    block.extend_from_slice(&code.to_le_bytes());
    block.extend_from_slice(&(value.len() as u16).to_le_bytes());
    block.extend_from_slice(value);
    pad(block);
}

fn pad(block: &mut Vec<u8>) {
    while block.len() % 4 != 0 {
        block.push(0);
    }
}

fn end(block: &mut Vec<u8>) {
    let len = (block.len() + 4) as u32;
    block[4..8].copy_from_slice(&len.to_le_bytes());
    block.extend_from_slice(&len.to_le_bytes());
}

impl<W: Write> PcapngWriter<W> {
    /// Starts the file: the section and the interface `iface` of
    /// `linktype` (LINKTYPE_*), `snaplen` bytes kept per packet.
    pub fn new(out: W, iface: &str, linktype: u32, snaplen: u32) -> io::Result<Self> {
        let mut w = PcapngWriter {
            out,
            block: Vec::with_capacity(256),
        };
        let b = &mut w.block;
        begin(b, SHB);
        b.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&(-1i64).to_le_bytes()); // section length unknown
        option(b, SHB_USERAPPL, b"plumb");
        option(b, OPT_END, &[]);
        end(b);
        w.out.write_all(&w.block)?;

        let b = &mut w.block;
        begin(b, IDB);
        let linktype = u16::try_from(linktype)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "link type past 16 bits"))?;
        b.extend_from_slice(&linktype.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&snaplen.to_le_bytes());
        option(b, IF_NAME, iface.as_bytes());
        option(b, IF_TSRESOL, &[9]);
        option(b, OPT_END, &[]);
        end(b);
        w.out.write_all(&w.block)?;
        Ok(w)
    }

    /// One packet: its time (ns since the epoch), the bytes kept and its
    /// real length.
    pub fn packet(&mut self, ts_ns: u64, data: &[u8], orig_len: u32) -> io::Result<()> {
        let caplen = u32::try_from(data.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "packet too long"))?;
        let padded = data.len().next_multiple_of(4);
        let len = (32 + padded) as u32;
        let mut head = [0u8; 28];
        for (chunk, v) in head.chunks_exact_mut(4).zip([
            EPB,
            len,
            0, // interface 0
            (ts_ns >> 32) as u32,
            ts_ns as u32,
            caplen,
            orig_len.max(caplen),
        ]) {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        self.out.write_all(&head)?;
        self.out.write_all(data)?;
        self.out.write_all(&[0u8; 3][..padded - data.len()])?;
        self.out.write_all(&len.to_le_bytes())
    }

    /// Ends the file with the interface's statistics at `ts_ns`: packets
    /// the kernel's filter passed and packets it dropped; flushes it.
    pub fn finish(mut self, ts_ns: u64, received: u64, dropped: u64) -> io::Result<W> {
        let b = &mut self.block;
        begin(b, ISB);
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&((ts_ns >> 32) as u32).to_le_bytes());
        b.extend_from_slice(&(ts_ns as u32).to_le_bytes());
        option(b, ISB_IFRECV, &received.to_le_bytes());
        option(b, ISB_IFDROP, &dropped.to_le_bytes());
        option(b, OPT_END, &[]);
        end(b);
        self.out.write_all(&self.block)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(n: u8, len: usize) -> Vec<u8> {
        (0..len).map(|i| n.wrapping_add(i as u8)).collect()
    }

    #[test]
    fn plumbs_reader_reads_back_every_packet() {
        let mut w = PcapngWriter::new(Vec::new(), "lo", 1, 128).expect("header");
        let packets = [
            (1_700_000_000_123_456_789u64, frame(1, 54), 54u32),
            (1_700_000_000_223_456_789, frame(2, 128), 65_483),
            (1_700_000_001_000_000_001, frame(3, 61), 61),
        ];
        for (ts, data, len) in &packets {
            w.packet(*ts, data, *len).expect("packet");
        }
        let file = w.finish(1_700_000_002_000_000_000, 5, 2).expect("finish");
        assert_eq!(file.len() % 4, 0);
        let mut got = Vec::new();
        let stats = plumb_capture::read_records(&file[..], |r| {
            got.push((r.ts_ns, r.linktype, r.data.to_vec(), r.orig_len));
        })
        .expect("read back");
        assert_eq!(stats.format, "pcapng");
        assert_eq!((stats.sections, stats.interfaces), (1, 1));
        assert_eq!(stats.oversize_records, 0);
        let want: Vec<_> = packets
            .iter()
            .map(|(ts, d, l)| (*ts, 1, d.clone(), *l))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn blocks_are_framed_by_equal_lengths() {
        let mut w = PcapngWriter::new(Vec::new(), "eth0", 101, 128).expect("header");
        w.packet(1, &frame(0, 5), 5).expect("packet");
        let file = w.finish(2, 1, 0).expect("finish");
        // Walk the blocks by their leading lengths: each trailing copy
        // matches and the walk ends exactly at the end of the file.
        let (mut at, mut kinds) = (0, Vec::new());
        while at < file.len() {
            let word = |o: usize| u32::from_le_bytes(file[o..o + 4].try_into().expect("4"));
            let len = word(at + 4) as usize;
            assert_eq!(word(at + len - 4) as usize, len);
            kinds.push(word(at));
            at += len;
        }
        assert_eq!(at, file.len());
        assert_eq!(kinds, vec![SHB, IDB, EPB, ISB]);
    }
}
