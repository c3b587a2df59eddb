//! Owned packet buffers and the pool they cycle through.
//!
//! Owns: the bytes of every packet between the read from one TUN device and
//! the write to the other, plus the per-segment drop marks the emulator puts
//! on GSO packets. Buffers come in two sizes (a 64 KiB class for reads and GSO
//! packets, a 2 KiB class that small packets are moved into while they sit in
//! the delay line), so a long fat pipe full of ACKs does not pin 64 KiB each.
//! In steady state packets are recycled, not allocated.

use crate::wire::{write_segments, Layout, VnetHdr, MAX_SEGMENT_FRAME, VNET_HDR_LEN};

/// Size of a large buffer: any TUN frame (virtio header + 64 KiB IP packet).
pub const LARGE_BUF: usize = VNET_HDR_LEN + 65_536;
/// Size of a small buffer: an MTU-1500 frame with its virtio header, rounded up.
pub const SMALL_BUF: usize = 2048;

/// One packet as exchanged with a TUN device: optionally a
/// [`VNET_HDR_LEN`]-byte virtio header, then the IP packet.
#[derive(Debug)]
pub struct Packet {
    /// Always fully initialised to its size class; `len` says how much is used.
    data: Vec<u8>,
    len: usize,
    vnet: bool,
    /// Bit `i` set: segment `i` was dropped by the link. Empty when intact.
    dropped: Vec<u64>,
}

impl Packet {
    fn with_capacity(size: usize) -> Packet {
        Packet {
            data: vec![0; size],
            len: 0,
            vnet: false,
            dropped: Vec::new(),
        }
    }

    /// A packet holding a copy of `frame`. Allocates; meant for tests and
    /// tools, the data path takes packets from a [`Pool`].
    ///
    /// `vnet` says whether `frame` starts with a [`VNET_HDR_LEN`]-byte
    /// virtio header.
    pub fn from_frame(frame: &[u8], vnet: bool) -> Packet {
        let size = if frame.len() <= SMALL_BUF {
            SMALL_BUF
        } else {
            frame.len().max(LARGE_BUF)
        };
        let mut p = Packet::with_capacity(size);
        p.data[..frame.len()].copy_from_slice(frame);
        p.len = frame.len();
        p.vnet = vnet;
        p
    }

    /// Fills the packet by calling `read` with the whole buffer (e.g. a
    /// `read(2)` from TUN); the returned length becomes the frame length.
    /// Clears any drop marks.
    pub fn fill_with<E>(
        &mut self,
        vnet: bool,
        read: impl FnOnce(&mut [u8]) -> Result<usize, E>,
    ) -> Result<usize, E> {
        self.dropped.clear();
        self.vnet = vnet;
        self.len = 0;
        let n = read(&mut self.data)?;
        self.len = n.min(self.data.len());
        Ok(self.len)
    }

    /// The whole frame (virtio header, if any, then the IP packet).
    pub fn frame(&self) -> &[u8] {
        &self.data[..self.len]
    }

    /// The whole frame, mutably (e.g. to patch a header in a test).
    pub fn frame_mut(&mut self) -> &mut [u8] {
        &mut self.data[..self.len]
    }

    /// Whether the frame starts with a virtio header.
    pub fn has_vnet_hdr(&self) -> bool {
        self.vnet
    }

    /// The virtio header, if the frame has one.
    pub fn vnet_hdr(&self) -> Option<VnetHdr> {
        if self.vnet {
            VnetHdr::parse(self.frame())
        } else {
            None
        }
    }

    /// The IP packet (empty if the frame is shorter than its virtio header).
    pub fn ip(&self) -> &[u8] {
        let off = if self.vnet { VNET_HDR_LEN } else { 0 };
        self.frame().get(off..).unwrap_or(&[])
    }

    /// The packet as wire-sized segments.
    pub fn layout(&self) -> Layout {
        Layout::of(self.ip(), self.vnet_hdr().as_ref())
    }

    /// Frame length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the frame is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True if no segment of the packet was dropped, so it can be written
    /// out as it came in.
    pub fn is_intact(&self) -> bool {
        self.dropped.is_empty()
    }

    /// Whether segment `i` was dropped by the link.
    pub fn segment_dropped(&self, i: u32) -> bool {
        let (w, b) = (i as usize / 64, i % 64);
        self.dropped.get(w).is_some_and(|x| x & (1 << b) != 0)
    }

    pub(crate) fn mark_dropped(&mut self, i: u32) {
        let w = i as usize / 64;
        if self.dropped.len() <= w {
            self.dropped.resize(w + 1, 0);
        }
        self.dropped[w] |= 1 << (i % 64);
    }

    /// Calls `write` with every frame that has to go out for this packet: the
    /// packet itself if intact, else each run of consecutive surviving
    /// segments, cut out by [`write_segments`] into `scratch` (a smaller GSO
    /// packet, or a plain one for a run of one).
    ///
    /// `scratch` must hold [`MAX_SEGMENT_FRAME`] bytes (it is grown if not;
    /// keep it around to avoid allocating).
    pub fn for_each_frame<E>(
        &self,
        scratch: &mut Vec<u8>,
        mut write: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.is_intact() {
            return write(self.frame());
        }
        if scratch.len() < MAX_SEGMENT_FRAME {
            scratch.resize(MAX_SEGMENT_FRAME, 0);
        }
        let layout = self.layout();
        let mut i = 0;
        while i < layout.segments {
            if self.segment_dropped(i) {
                i += 1;
                continue;
            }
            let first = i;
            while i < layout.segments && !self.segment_dropped(i) {
                i += 1;
            }
            // The link only marks segments of splittable layouts; this cannot fail.
            if let Some(n) = write_segments(self.ip(), &layout, first, i - first, scratch) {
                write(&scratch[..n])?;
            }
        }
        Ok(())
    }

    fn capacity_class(&self) -> usize {
        self.data.len()
    }
}

/// Free lists of packet buffers.
#[derive(Debug)]
pub struct Pool {
    large: Vec<Packet>,
    small: Vec<Packet>,
    max_free: usize,
    allocations: u64,
}

impl Default for Pool {
    fn default() -> Self {
        Pool::new(4096)
    }
}

impl Pool {
    /// A pool that keeps at most `max_free` idle buffers of each size (idle
    /// buffers beyond that are freed, so a burst does not pin memory forever).
    pub fn new(max_free: usize) -> Pool {
        Pool {
            large: Vec::new(),
            small: Vec::new(),
            max_free,
            allocations: 0,
        }
    }

    /// A buffer big enough for any TUN frame.
    pub fn take(&mut self) -> Packet {
        self.large.pop().unwrap_or_else(|| {
            self.allocations += 1;
            Packet::with_capacity(LARGE_BUF)
        })
    }

    fn take_small(&mut self) -> Packet {
        self.small.pop().unwrap_or_else(|| {
            self.allocations += 1;
            Packet::with_capacity(SMALL_BUF)
        })
    }

    /// Returns a packet's buffer for reuse.
    pub fn give(&mut self, mut p: Packet) {
        p.len = 0;
        p.dropped.clear();
        let list = if p.capacity_class() <= SMALL_BUF {
            &mut self.small
        } else {
            &mut self.large
        };
        if list.len() < self.max_free {
            list.push(p);
        }
    }

    /// Moves a small packet out of a large buffer (returning the large one to
    /// the pool); other packets are returned unchanged.
    pub fn compact(&mut self, p: Packet) -> Packet {
        if p.len > SMALL_BUF || p.capacity_class() <= SMALL_BUF {
            return p;
        }
        let mut s = self.take_small();
        s.data[..p.len].copy_from_slice(p.frame());
        s.len = p.len;
        s.vnet = p.vnet;
        s.dropped.clone_from(&p.dropped);
        self.give(p);
        s
    }

    /// A copy of `p`, drop marks included.
    pub fn duplicate(&mut self, p: &Packet) -> Packet {
        let mut d = if p.len <= SMALL_BUF {
            self.take_small()
        } else {
            self.take()
        };
        d.data[..p.len].copy_from_slice(p.frame());
        d.len = p.len;
        d.vnet = p.vnet;
        d.dropped.clone_from(&p.dropped);
        d
    }

    /// Buffers allocated so far (stops growing once the pool has warmed up).
    pub fn allocations(&self) -> u64 {
        self.allocations
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::l4_checksum_ok;
    use crate::wire::testpkt::{build, resegment, seq_of, Spec};

    #[test]
    fn intact_packet_is_written_as_is() {
        let f = build(&Spec::default());
        let p = Packet::from_frame(&f, true);
        let mut frames = Vec::new();
        let mut scratch = Vec::new();
        p.for_each_frame::<()>(&mut scratch, |b| {
            frames.push(b.to_vec());
            Ok(())
        })
        .expect("infallible");
        assert_eq!(frames, vec![f]);
    }

    #[test]
    fn dropped_segments_are_left_out() {
        let f = build(&Spec::default());
        let mut p = Packet::from_frame(&f, true);
        assert_eq!(p.layout().segments, 7);
        p.mark_dropped(0);
        p.mark_dropped(3);
        let mut seqs = Vec::new();
        let mut scratch = Vec::new();
        let mut frames = 0;
        p.for_each_frame::<()>(&mut scratch, |b| {
            frames += 1;
            for mut seg in resegment(b) {
                assert!(crate::wire::complete_checksum(&mut seg));
                assert!(l4_checksum_ok(&seg[VNET_HDR_LEN..]));
                seqs.push(seq_of(&seg));
            }
            Ok(())
        })
        .expect("infallible");
        assert_eq!(frames, 2, "runs 1-2 and 4-6 go out as two GSO packets");
        let base = Spec::default().seq;
        let want: Vec<u32> = [1u32, 2, 4, 5, 6]
            .iter()
            .map(|i| base.wrapping_add(i * 1448))
            .collect();
        assert_eq!(seqs, want);
    }

    #[test]
    fn pool_recycles_and_compacts() {
        let mut pool = Pool::new(8);
        let mut p = pool.take();
        p.fill_with::<()>(false, |b| {
            b[..3].copy_from_slice(&[1, 2, 3]);
            Ok(3)
        })
        .expect("infallible");
        let s = pool.compact(p);
        assert_eq!(s.frame(), &[1, 2, 3]);
        assert_eq!(s.capacity_class(), SMALL_BUF);
        pool.give(s);
        let before = pool.allocations();
        for _ in 0..100 {
            let p = pool.take();
            let s = pool.compact(p);
            pool.give(s);
        }
        assert_eq!(pool.allocations(), before);
    }
}
