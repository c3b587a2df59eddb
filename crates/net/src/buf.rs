//! Page-aligned byte buffers for the data path.
//!
//! The kernel copies every block between user memory and socket buffers
//! (`_copy_from_iter`, `_copy_to_iter`: most of a loopback test's CPU). Where
//! the user buffer starts matters: a 128 KiB `Vec` comes from glibc's
//! `mmap` path and starts 16 bytes into a page, and with it plumb ↔ plumb
//! on loopback ran at a median 31 Gb/s with runs down to 15; the same code
//! with both buffers on a 64-byte or page boundary ran at 39–42 Gb/s,
//! steadily (cubic, 8 runs of each, interleaved). iperf3 maps its buffers
//! from a file, so they are page-aligned. A page covers every alignment a
//! copy routine or `MSG_ZEROCOPY` could want, for at most 4 KiB of waste.

use std::ops::{Deref, DerefMut};

/// A zero-initialised byte buffer whose first byte is on a page boundary.
pub struct PageBuf {
    store: Vec<u8>,
    start: usize,
    len: usize,
}

impl PageBuf {
    /// The alignment of the first byte.
    pub const ALIGN: usize = 4096;

    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> PageBuf {
        let store = vec![0u8; len + Self::ALIGN];
        // The offset that moves the start to the next page boundary; the
        // pointer is only looked at, never made from an integer.
        let start = store.as_ptr().align_offset(Self::ALIGN);
        debug_assert!(start < Self::ALIGN);
        PageBuf { store, start, len }
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
        &self.store[self.start..self.start + self.len]
    }
}

impl DerefMut for PageBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.store[self.start..self.start + self.len]
    }
}

impl Clone for PageBuf {
    /// A new allocation lands elsewhere, so the offset is worked out anew.
    fn clone(&self) -> PageBuf {
        PageBuf::from_slice(self)
    }
}

impl std::fmt::Debug for PageBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageBuf").field("len", &self.len).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_on_a_page_and_holds_exactly_its_bytes() {
        for len in [0, 1, 1472, 4096, 128 * 1024, 128 * 1024 + 3] {
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
        // A clone is a new allocation, so its offset is worked out anew.
        let d = c.clone();
        assert_eq!(&d[..], &src[..]);
        assert_eq!(d.as_ptr() as usize % PageBuf::ALIGN, 0);
    }
}
