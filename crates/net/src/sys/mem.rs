//! Anonymous memory mappings for the data path's buffers.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
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
// SAFETY: as for Send: `&AnonMap` only gives out `&[u8]`. (`SinkMap`, which
// lets the kernel write through `&self`, keeps its `AnonMap` private and
// never calls `as_slice`; it states its own Send and Sync below.)
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

/// Memory that the kernel writes into and nothing ever reads: where TCP
/// receivers that only count their bytes put them, one mapping shared by
/// several receiving threads at once.
///
/// Why shared: a receiver's bytes are thrown away, so each thread needs a
/// place to land them, not a place of its own; one 128 KiB buffer a stream
/// made a `-P 8` server's peak resident memory 1 MiB of landing places.
///
/// Why it is sound: the type gives out no reference to its bytes (it keeps
/// its [`AnonMap`] private and only hands the mapping's address to
/// `read(2)`), so no Rust code can observe the kernel's writes, and copies
/// of concurrent reads that overlap only leave bytes nobody looks at.
#[derive(Debug)]
pub struct SinkMap {
    map: AnonMap,
}

// SAFETY: owned memory, as `AnonMap`'s; moving it to another thread moves
// the only handle to the mapping.
unsafe impl Send for SinkMap {}
// SAFETY: shared use only passes the mapping's address to read(2): the
// kernel's writes may overlap, but no reference to the bytes exists and
// nothing reads them (the type has no accessor), so they are unobservable.
// Any accessor added to this type would break this; there must be none.
unsafe impl Sync for SinkMap {}

impl SinkMap {
    /// A landing place of `len` bytes.
    pub fn new(len: usize) -> io::Result<SinkMap> {
        Ok(SinkMap {
            map: AnonMap::new(len)?,
        })
    }

    /// Bytes one read may land.
    pub fn len(&self) -> usize {
        self.map.len
    }

    /// Whether no byte can land (a zero-length read would look like EOF).
    pub fn is_empty(&self) -> bool {
        self.map.len == 0
    }

    /// `read(2)` of up to [`SinkMap::len`] bytes from `fd`, landing here;
    /// the count, 0 at end of stream.
    pub fn read(&self, fd: BorrowedFd<'_>) -> io::Result<usize> {
        // SAFETY: the mapping is live (owned by `self`) and writable for
        // `len` bytes. Other threads may be in read(2) on the same bytes at
        // the same time; nothing reads them and no Rust reference to them
        // exists (see the type's documentation), so overlapping copies are
        // unobservable.
        super::cvt_size(unsafe {
            libc::read(fd.as_raw_fd(), self.map.ptr.as_ptr().cast(), self.map.len)
        })
    }
}

/// Makes every thread allocate from the one main heap (glibc's
/// `M_ARENA_MAX` of 1).
///
/// Why: glibc gives each thread that allocates a heap of its own (up to 8
/// per CPU), each mapped and grown by its own system calls and each keeping
/// pages resident; a `-P 8` end has 8 data threads and a reporter, and
/// every end's peak resident memory and its start-up (exec to the first
/// data write, which the parsing thread's heap delayed by a mapping and a
/// dozen `mprotect`s) count them (`bench/run`). The data threads do not
/// allocate per block, so one heap's lock is never contended in the data
/// path. Call it first, before any thread starts. Other C libraries:
/// nothing to do.
pub fn one_heap_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt takes no pointers; it sets a limit the allocator
    // reads when a thread first allocates.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Hands the allocator's free memory back to the kernel (glibc's
/// `malloc_trim`: whole free pages in every arena, not only the top).
///
/// Why: clap's freed command tree (about 300 KiB) would otherwise stay
/// resident in the heap for the whole test; every `-P 8` end's peak
/// resident memory counts it. Other C libraries: nothing to do.
pub fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers; it only returns free pages of
    // the allocator's own arenas, which no live allocation uses.
    unsafe {
        libc::malloc_trim(0);
    }
}
