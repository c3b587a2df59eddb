//! Page-aligned byte buffers for the data path.
//!
//! The kernel copies every block between user memory and socket buffers
//! (`_copy_from_iter`, `_copy_to_iter`: most of a loopback test's CPU). Where
//! the user buffer starts matters: a 128 KiB `Vec` comes from glibc's
//! `mmap` path and starts 16 bytes into a page, and with it plumb ↔ plumb
//! on loopback ran at a median 31 Gb/s with runs down to 15; the same code
//! with both buffers on a 64-byte or page boundary ran at 39–42 Gb/s,
//! steadily (cubic, 8 runs of each, interleaved). iperf3 maps its buffers
//! from a file, so they are page-aligned.
//!
//! The buffers are mapped directly ([`sys::AnonMap`]) so that a test's
//! buffers go back to the kernel when it ends: through malloc, the 2 MiB
//! receive buffers would stay in the allocator's heap and a long-running
//! server's resident memory would creep up test after test. If a mapping fails, a heap
//! buffer with its start moved to a page boundary stands in.

use std::ops::{Deref, DerefMut};

use crate::sys;

/// A zero-initialised byte buffer whose first byte is on a page boundary.
pub struct PageBuf {
    store: Store,
}

enum Store {
    Map(sys::AnonMap),
    Heap {
        bytes: Vec<u8>,
        start: usize,
        len: usize,
    },
}

impl PageBuf {
    /// The alignment of the first byte.
    pub const ALIGN: usize = 4096;

    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> PageBuf {
        let store = match sys::AnonMap::new(len) {
            Ok(m) => Store::Map(m),
            Err(_) => {
                let bytes = vec![0u8; len + Self::ALIGN];
                // Moves the start to the next page boundary; the pointer is
                // only looked at, never made from an integer.
                let start = bytes.as_ptr().align_offset(Self::ALIGN);
                Store::Heap { bytes, start, len }
            }
        };
        PageBuf { store }
    }

    /// A copy of `bytes`.
    pub fn from_slice(bytes: &[u8]) -> PageBuf {
        let mut b = PageBuf::zeroed(bytes.len());
        b.copy_from_slice(bytes);
        b
    }
}

impl Deref for PageBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.store {
            Store::Map(m) => m.as_slice(),
            Store::Heap { bytes, start, len } => &bytes[*start..*start + *len],
        }
    }
}

impl DerefMut for PageBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        match &mut self.store {
            Store::Map(m) => m.as_mut_slice(),
            Store::Heap { bytes, start, len } => &mut bytes[*start..*start + *len],
        }
    }
}

/// Where TCP receivers that only count their bytes land them: one mapping
/// shared by several receiving streams at once (see [`sys::SinkMap`] for
/// why that is sound). A session makes one per CPU its receivers can run on,
/// so streams that run at the same time mostly write to different places.
pub type DiscardBuf = sys::SinkMap;

impl Clone for PageBuf {
    fn clone(&self) -> PageBuf {
        PageBuf::from_slice(self)
    }
}

impl std::fmt::Debug for PageBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageBuf").field("len", &self.len()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_on_a_page_and_holds_exactly_its_bytes() {
        for len in [0, 1, 1472, 4096, 128 * 1024, 2 << 20] {
            let mut b = PageBuf::zeroed(len);
            assert_eq!(b.len(), len);
            assert_eq!(b.as_ptr() as usize % PageBuf::ALIGN, 0, "len {len}");
            assert!(b.iter().all(|&x| x == 0));
            if len > 0 {
                b[len - 1] = 7;
                assert_eq!(b[len - 1], 7);
            }
        }
        let src: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        let c = PageBuf::from_slice(&src);
        assert_eq!(&c[..], &src[..]);
        assert_eq!(c.as_ptr() as usize % PageBuf::ALIGN, 0);
        let d = c.clone();
        assert_eq!(&d[..], &src[..]);
        assert_eq!(d.as_ptr() as usize % PageBuf::ALIGN, 0);
        assert_ne!(d.as_ptr(), c.as_ptr());
    }

    #[test]
    fn the_heap_stand_in_is_aligned_too() {
        let bytes = vec![0u8; 100 + PageBuf::ALIGN];
        let start = bytes.as_ptr().align_offset(PageBuf::ALIGN);
        let b = PageBuf {
            store: Store::Heap {
                bytes,
                start,
                len: 100,
            },
        };
        assert_eq!(b.len(), 100);
        assert_eq!(b.as_ptr() as usize % PageBuf::ALIGN, 0);
    }
}
