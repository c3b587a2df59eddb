//! Anonymous memory mappings for the data path's buffers.

use std::io;
use std::ptr::NonNull;

/// A private anonymous mapping: zeroed, page-aligned, and handed back to
/// the kernel when dropped (a 2 MiB buffer from malloc would stay in the
/// allocator's arena after its test, and resident).
#[derive(Debug)]
pub struct AnonMap {
    ptr: NonNull<u8>,
    /// Bytes the caller asked for (the mapping is at least one page).
    len: usize,
    mapped: usize,
}

// SAFETY: the mapping is owned memory like a Vec<u8>'s; nothing else holds
// its address, and shared access is read-only through `&self`.
unsafe impl Send for AnonMap {}
// SAFETY: as for Send: `&AnonMap` only gives out `&[u8]`.
unsafe impl Sync for AnonMap {}

impl AnonMap {
    /// Maps `len` zero bytes (at least one page is mapped, so `len` may be 0).
    pub fn new(len: usize) -> io::Result<AnonMap> {
        let mapped = len.max(1);
        // SAFETY: a fresh private anonymous mapping at an address the kernel
        // chooses; no existing memory is touched.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave null"))?;
        Ok(AnonMap { ptr, len, mapped })
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` is a live mapping of at least `len` readable bytes,
        // initialised (zeroed by the kernel), owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as for `as_slice`, writable, and `&mut self` makes the
        // borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AnonMap {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `new` made; no slice borrowed
        // from it can outlive `self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.mapped);
        }
    }
}

/// Hands the allocator's free memory back to the kernel (glibc's
/// `malloc_trim`: whole free pages in every arena, not only the top).
///
/// Why: the command line is parsed on a thread of its own, whose arena keeps
/// clap's freed command tree (about 300 KiB) resident for the whole test
/// otherwise; every `-P 8` end's peak resident memory counts it. Other C
/// libraries: nothing to do.
pub fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers; it only returns free pages of
    // the allocator's own arenas, which no live allocation uses.
    unsafe {
        libc::malloc_trim(0);
    }
}
