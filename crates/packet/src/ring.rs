//! The `TPACKET_V3` receive ring's layout: how it is asked for
//! (`tpacket_req3`) and how a retired block is walked, packet by packet,
//! as plain bytes. Every offset read from the kernel's headers is checked
//! against the block, so a surprise ends the walk instead of reading past it.
//!
//! A block is handed to user space when it is full or when its retire
//! timer runs out, so a quiet link still delivers its packets within
//! [`RETIRE_MS`]; one `poll` wakes for a whole block, not per packet, which
//! is what lets one core keep up with 100,000 packets/s and more.

/// Bytes per block: a power-of-two number of pages. Small, because the
/// retire timer hands a block over however little it holds: at 40,000
/// packets/s a 10 ms block holds 400 of them, and a ring of eight 1 MiB
/// blocks filled that way is 80 ms of buffer, less than a busy reader can
/// be kept off a CPU. 128 KiB blocks hold about 600 packets each.
pub const BLOCK_SIZE: usize = 1 << 17;
/// Blocks in the ring (8 MiB: at 128 bytes kept per packet, about 40,000
/// packets, 0.4 s of a 1 Gbit/s transfer of full-size segments, and at
/// least 64 retire periods, 0.64 s, at any rate).
pub const BLOCKS: usize = 64;
/// A block not yet full is handed over after this many milliseconds.
pub const RETIRE_MS: u32 = 10;
/// The frame size the request names (V3 packs packets of any size into a
/// block; the kernel only checks the frame count against the blocks).
const FRAME_SIZE: usize = 2048;

/// `struct tpacket_req3` as the bytes `setsockopt(PACKET_RX_RING)` takes.
pub fn request() -> [u8; 28] {
    let fields: [u32; 7] = [
        BLOCK_SIZE as u32,
        BLOCKS as u32,
        FRAME_SIZE as u32,
        (BLOCK_SIZE / FRAME_SIZE * BLOCKS) as u32,
        RETIRE_MS,
        0, // tp_sizeof_priv
        0, // tp_feature_req_word
    ];
    let mut out = [0u8; 28];
    for (chunk, v) in out.chunks_exact_mut(4).zip(fields) {
        chunk.copy_from_slice(&v.to_ne_bytes());
    }
    out
}

/// One packet out of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// Kernel receive time, ns since the Unix epoch.
    pub ts_ns: u64,
    /// The bytes kept (at most the snap length), from the link header on.
    pub data: &'a [u8],
    /// The packet's real length.
    pub orig_len: u32,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let bytes = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_ne_bytes(bytes.try_into().ok()?))
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    let bytes = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_ne_bytes(bytes.try_into().ok()?))
}

/// Calls `each` for every packet of a retired block (`tpacket_block_desc`
/// then `num_pkts` `tpacket3_hdr`s chained by `tp_next_offset`); returns
/// the packets walked.
pub fn walk(block: &[u8], mut each: impl FnMut(Packet<'_>)) -> u32 {
    // tpacket_block_desc: version, offset_to_priv, then tpacket_hdr_v1:
    // block_status (8), num_pkts (12), offset_to_first_pkt (16).
    let (Some(n), Some(first)) = (u32_at(block, 12), u32_at(block, 16)) else {
        return 0;
    };
    let mut at = first as usize;
    for i in 0..n {
        // tpacket3_hdr: next_offset (0), sec (4), nsec (8), snaplen (12),
        // len (16), status (20), mac (24), net (26).
        let fields = (
            u32_at(block, at),
            u32_at(block, at + 4),
            u32_at(block, at + 8),
            u32_at(block, at + 12),
            u32_at(block, at + 16),
            u16_at(block, at + 24),
        );
        let (Some(next), Some(sec), Some(nsec), Some(snap), Some(len), Some(mac)) = fields else {
            return i;
        };
        let start = at + usize::from(mac);
        let Some(data) = block.get(start..start + snap as usize) else {
            return i;
        };
        each(Packet {
            ts_ns: u64::from(sec) * 1_000_000_000 + u64::from(nsec),
            data,
            orig_len: len,
        });
        if next == 0 {
            return i + 1;
        }
        at += next as usize;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block as the kernel lays it out, with these packets.
    fn block(packets: &[(u32, u32, &[u8], u32)]) -> Vec<u8> {
        let mut b = vec![0u8; 4096];
        let put = |b: &mut Vec<u8>, at: usize, v: u32| {
            b[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        };
        put(&mut b, 8, 1);
        put(&mut b, 12, packets.len() as u32);
        put(&mut b, 16, 48);
        let mut at = 48;
        for (i, (sec, nsec, data, len)) in packets.iter().enumerate() {
            let mac = 80u16;
            let next = if i + 1 == packets.len() {
                0
            } else {
                (usize::from(mac) + data.len()).next_multiple_of(16)
            };
            put(&mut b, at, next as u32);
            put(&mut b, at + 4, *sec);
            put(&mut b, at + 8, *nsec);
            put(&mut b, at + 12, data.len() as u32);
            put(&mut b, at + 16, *len);
            b[at + 24..at + 26].copy_from_slice(&mac.to_ne_bytes());
            let d = at + usize::from(mac);
            b[d..d + data.len()].copy_from_slice(data);
            at += next;
        }
        b
    }

    #[test]
    fn walks_every_packet_with_time_and_real_length() {
        let b = block(&[(1, 5, b"abc", 1500), (2, 999_999_999, b"defgh", 60)]);
        let mut got = Vec::new();
        let n = walk(&b, |p| got.push((p.ts_ns, p.data.to_vec(), p.orig_len)));
        assert_eq!(n, 2);
        assert_eq!(
            got,
            vec![
                (1_000_000_005, b"abc".to_vec(), 1500),
                (2_999_999_999, b"defgh".to_vec(), 60)
            ]
        );
    }

    #[test]
    fn a_header_pointing_outside_the_block_ends_the_walk() {
        let mut b = block(&[(1, 0, b"abc", 3), (1, 1, b"abc", 3)]);
        // The first packet's next offset points past the block.
        b[48..52].copy_from_slice(&100_000u32.to_ne_bytes());
        let mut seen = 0;
        assert_eq!(walk(&b, |_| seen += 1), 1);
        assert_eq!(seen, 1);
        // A snaplen past the end: nothing read.
        let mut b = block(&[(1, 0, b"abc", 3)]);
        b[60..64].copy_from_slice(&9999u32.to_ne_bytes());
        assert_eq!(walk(&b, |_| seen += 1), 0);
        assert_eq!(walk(&[0u8; 10], |_| seen += 1), 0);
    }

    #[test]
    fn the_request_is_what_the_kernel_reads() {
        let r = request();
        assert_eq!(u32_at(&r, 0), Some(BLOCK_SIZE as u32));
        assert_eq!(u32_at(&r, 4), Some(BLOCKS as u32));
        assert_eq!(u32_at(&r, 16), Some(RETIRE_MS));
        // Frames must fill the blocks exactly (the kernel checks).
        let (fsize, fnr) = (u32_at(&r, 8).expect("size"), u32_at(&r, 12).expect("count"));
        assert_eq!(fsize as usize * fnr as usize, BLOCK_SIZE * BLOCKS);
    }
}
