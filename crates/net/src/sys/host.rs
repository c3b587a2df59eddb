//! Host queries: resource usage, `uname`, CPU affinity, online CPUs and the
//! monotonic clock.

use std::io;

use super::cvt;

/// Process CPU time from `getrusage(RUSAGE_SELF)`, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rusage {
    /// `ru_utime`: time spent in user mode, all threads.
    pub user_us: u64,
    /// `ru_stime`: time spent in the kernel on behalf of the process.
    pub system_us: u64,
}

fn timeval_us(tv: libc::timeval) -> u64 {
    // Kernel-reported CPU times are never negative; clamp instead of wrapping.
    let sec = u64::try_from(tv.tv_sec).unwrap_or(0);
    let usec = u64::try_from(tv.tv_usec).unwrap_or(0);
    sec.saturating_mul(1_000_000).saturating_add(usec)
}

/// `getrusage(RUSAGE_SELF)`.
pub fn getrusage_self() -> io::Result<Rusage> {
    // SAFETY: `rusage` is a plain C struct of integers; all-zero is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, exclusive `rusage` for the kernel to fill.
    cvt(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) })?;
    Ok(Rusage {
        user_us: timeval_us(ru.ru_utime),
        system_us: timeval_us(ru.ru_stime),
    })
}

/// The five `struct utsname` strings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawUname {
    /// `sysname`, e.g. `Linux`.
    pub sysname: String,
    /// `nodename`: the host name.
    pub nodename: String,
    /// `release`, e.g. `6.1.0-18-amd64`.
    pub release: String,
    /// `version`, e.g. `#1 SMP PREEMPT_DYNAMIC Debian ...`.
    pub version: String,
    /// `machine`, e.g. `x86_64`.
    pub machine: String,
}

/// Reads a NUL-terminated `c_char` array, lossily, never past its end.
fn field(chars: &[libc::c_char]) -> String {
    // c_char is i8 or u8 depending on the target; either way one byte.
    let bytes: Vec<u8> = chars
        .iter()
        .map(|&c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `uname(2)`.
pub fn uname() -> io::Result<RawUname> {
    // SAFETY: `utsname` is arrays of `c_char`; all-zero is valid.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, exclusive `utsname` for the kernel to fill.
    cvt(unsafe { libc::uname(&mut u) })?;
    Ok(RawUname {
        sysname: field(&u.sysname),
        nodename: field(&u.nodename),
        release: field(&u.release),
        version: field(&u.version),
        machine: field(&u.machine),
    })
}

/// `sched_setaffinity(0, {cpu})`: pins the calling thread to one CPU.
pub fn sched_setaffinity_self(cpu: usize) -> io::Result<()> {
    // CPU_SET indexes a fixed-size bitmap; beyond it the macro would write
    // out of bounds, so refuse before touching it.
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("cpu {cpu} is beyond CPU_SETSIZE"),
        ));
    }
    // SAFETY: `cpu_set_t` is a plain bitmap; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` < CPU_SETSIZE was checked above.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid `cpu_set_t` of the size we pass; pid 0 means
    // the calling thread.
    cvt(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) })?;
    Ok(())
}

/// `sched_setscheduler(0, SCHED_BATCH)`: the calling thread's scheduling
/// policy becomes batch (allowed without privileges).
pub fn sched_batch_self() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid `sched_param` that outlives the call; pid 0
    // means the calling thread.
    cvt(unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) })?;
    Ok(())
}

/// `sched_getscheduler(0)`: the calling thread's scheduling policy.
pub fn sched_policy_self() -> io::Result<i32> {
    // SAFETY: no pointers; pid 0 means the calling thread.
    cvt(unsafe { libc::sched_getscheduler(0) })
}

/// `sched_getaffinity(0)`: the CPUs the calling thread may run on.
pub fn sched_getaffinity_self() -> io::Result<Vec<usize>> {
    // SAFETY: all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, exclusive `cpu_set_t` of the size we pass.
    cvt(unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) })?;
    let is_set = |cpu: usize| {
        // SAFETY: every index passed in below is < CPU_SETSIZE.
        unsafe { libc::CPU_ISSET(cpu, &set) }
    };
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&c| is_set(c))
        .collect())
}

/// `sysconf(_SC_NPROCESSORS_ONLN)`, or 1 if the call fails.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf takes an integer name and touches no user memory.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(1)
}

/// `CLOCK_MONOTONIC` and `CLOCK_REALTIME` read back to back, each to the
/// nanosecond: a UDP receiver maps the kernel's receive timestamps (realtime)
/// onto the monotonic clock that iperf3's send stamps use. A clock before
/// 1970 reads as zero.
pub fn clock_pair() -> (std::time::Duration, std::time::Duration) {
    let read = |id: libc::clockid_t| {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, exclusive timespec; both clocks always
        // exist on Linux.
        unsafe { libc::clock_gettime(id, &mut ts) };
        std::time::Duration::new(
            u64::try_from(ts.tv_sec).unwrap_or(0),
            u32::try_from(ts.tv_nsec).unwrap_or(0).min(999_999_999),
        )
    };
    let mono = read(libc::CLOCK_MONOTONIC);
    let real = read(libc::CLOCK_REALTIME);
    (mono, real)
}

/// `clock_gettime(CLOCK_MONOTONIC)` as `(seconds, microseconds)`, truncated
/// to `u32` the way iperf3 writes them into UDP headers.
///
/// This is the only clock read in the socket/host primitives; it exists
/// for the UDP header writer and is not used by anything in this crate's
/// data-path functions.
pub fn clock_monotonic() -> (u32, u32) {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, exclusive timespec. CLOCK_MONOTONIC always
    // exists on Linux, so the call cannot fail and the result is not checked.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    // Truncation is the wire format: iperf3 sends 32-bit seconds.
    (ts.tv_sec as u32, (ts.tv_nsec / 1000) as u32)
}
