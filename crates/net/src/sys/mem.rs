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

/// Hands back the pages of the calling thread's stack below the caller's
/// frame, which earlier, deeper calls touched and left resident.
///
/// Why: building clap's command tree for every subcommand takes frames of
/// up to 28 KiB each, about 100 KiB of the main thread's stack in all, and
/// stack a thread touched stays resident for its life; every `-P 8` end's
/// peak resident memory counts it (`bench/run`). Parsing on a thread of its
/// own would give its stack back too, but at the price of about 25 system
/// calls between exec and the first data write (a thread, its stack and
/// signal stack, its heap), which `bench/run`'s start-up row counts.
///
/// Call it from a shallow frame, after the deep calls returned. Pages that
/// are not resident, or not mapped, are skipped.
#[inline(never)]
pub fn release_stack_below() {
    /// Left alone below this frame: this call's own frames and the C
    /// library's `madvise` wrapper live there.
    const KEEP: usize = 16 * 1024;
    /// How far below that the pages go back. Within 1 MiB of a growing-down
    /// stack Linux maps nothing else (its stack guard gap), so the range
    /// holds this stack's pages and unmapped addresses only.
    const SPAN: usize = 512 * 1024;
    let marker = 0u8;
    let here = std::hint::black_box(std::ptr::addr_of!(marker)) as usize;
    let page = 4096;
    let top = (here.saturating_sub(KEEP)) & !(page - 1);
    let Some(bottom) = top.checked_sub(SPAN) else {
        return;
    };
    #[cfg(target_os = "linux")]
    // SAFETY: the range lies wholly below this frame's stack pointer less
    // 16 KiB: on a stack that grows down, only frames of calls that have
    // returned were there, and no reference into them is live. Within it
    // there is this stack's mapping or the unmapped guard gap below it, never
    // another mapping (see SPAN). MADV_DONTNEED makes the stack's pages read
    // as zero on their next touch, as fresh stack does; on unmapped parts it
    // fails with ENOMEM after doing the mapped ones, which is ignored.
    unsafe {
        libc::madvise(bottom as *mut libc::c_void, SPAN, libc::MADV_DONTNEED);
    }
}

/// Fills `out` from the kernel's random number generator (`getrandom(2)`:
/// one system call, where reading `/dev/urandom` takes three).
pub fn fill_random(out: &mut [u8]) -> io::Result<()> {
    let mut done = 0;
    while done < out.len() {
        let rest = &mut out[done..];
        // SAFETY: `rest` is writable for its length; getrandom writes at most
        // that many bytes.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        done += n as usize;
    }
    Ok(())
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
