#![allow(unsafe_code)]
//! The only `unsafe` code in plumb-lab: thin, checked wrappers over the Linux
//! system calls the lab needs.
//!
//! Owns: TUN devices (`/dev/net/tun` with `IFF_VNET_HDR` and offloads),
//! waiting on file descriptors with nanosecond timeouts, entering a network
//! namespace on the current thread, per-thread scheduling knobs, the CPU
//! latency request (`/dev/cpu_dma_latency`), the few
//! socket options the self-tests need, the async-signal-safe half of the
//! SIGINT/SIGTERM cleanup, sending signals, joining a cgroup between fork and
//! exec, and unnamed temporary files. Every function here either returns an
//! [`io::Error`] built from `errno` or cannot fail; none keeps raw pointers
//! past the call.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::mem::{size_of, size_of_val, MaybeUninit};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use crate::wire::VNET_HDR_LEN;

/// Turns a `-1` return into the current `errno`.
fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn cvt_size(ret: libc::ssize_t) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// `struct ifreq` as TUNSETIFF reads it: a name and the flags member of the
/// union, padded to the kernel's 40 bytes.
#[repr(C)]
struct IfReqFlags {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Offload bits we ask for. TSO needs CSUM; USO (kernel ≥ 6.2) is optional.
const OFFLOAD_TRIES: [libc::c_uint; 3] = [
    libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6 | libc::TUN_F_USO4 | libc::TUN_F_USO6,
    libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6,
    libc::TUN_F_CSUM,
];

/// A TUN device (layer 3, no packet-information prefix), non-blocking.
///
/// The device lives as long as this handle: it is not persistent, so closing
/// the descriptor (dropping the `Tun`) deletes it, from whatever network
/// namespace it has been moved to. That makes it leak-proof even on a crash.
#[derive(Debug)]
pub struct Tun {
    fd: OwnedFd,
    name: String,
    vnet_hdr: bool,
    offloads: libc::c_uint,
}

impl Tun {
    /// Creates TUN device `name` (at most 15 bytes) in the calling thread's
    /// network namespace.
    ///
    /// With `vnet_hdr`, every packet read or written starts with a
    /// [`VNET_HDR_LEN`]-byte `virtio_net_hdr`, and with `offload` as well the
    /// kernel is told it may hand over unchecksummed 64 KiB GSO packets (TCP,
    /// and UDP where the kernel supports it) instead of MTU-sized ones — the
    /// difference between ~3 and ~13 Gbit/s through a userspace forwarder.
    pub fn create(name: &str, vnet_hdr: bool, offload: bool) -> io::Result<Tun> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains(['/', ' ', '\0']) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad interface name {name:?}"),
            ));
        }
        let path = CString::new("/dev/net/tun").map_err(io::Error::other)?;
        // SAFETY: `path` is a valid NUL-terminated string; open has no other inputs.
        let raw = cvt(unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDWR | libc::O_CLOEXEC | libc::O_NONBLOCK,
            )
        })?;
        // SAFETY: `raw` was just returned by open and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut req = IfReqFlags {
            name: [0; libc::IFNAMSIZ],
            flags: 0,
            _pad: [0; 22],
        };
        req.name[..name.len()].copy_from_slice(name.as_bytes());
        let mut flags = libc::IFF_TUN | libc::IFF_NO_PI;
        if vnet_hdr {
            flags |= libc::IFF_VNET_HDR;
        }
        req.flags = flags as libc::c_short;
        // SAFETY: TUNSETIFF reads (and writes back) a `struct ifreq`; `req` has its
        // size and layout and outlives the call.
        cvt(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req as *mut IfReqFlags) })?;
        let mut tun = Tun {
            fd,
            name: name.to_owned(),
            vnet_hdr,
            offloads: 0,
        };
        if vnet_hdr {
            let size: libc::c_int = VNET_HDR_LEN as libc::c_int;
            // SAFETY: TUNSETVNETHDRSZ reads one c_int through the pointer.
            cvt(unsafe {
                libc::ioctl(
                    tun.fd.as_raw_fd(),
                    libc::TUNSETVNETHDRSZ,
                    &size as *const libc::c_int,
                )
            })?;
            if offload {
                tun.offloads = tun.set_offloads()?;
            }
        }
        Ok(tun)
    }

    fn set_offloads(&self) -> io::Result<libc::c_uint> {
        let mut last = None;
        for bits in OFFLOAD_TRIES {
            // SAFETY: TUNSETOFFLOAD takes its argument by value, not as a pointer.
            let r = unsafe {
                libc::ioctl(
                    self.fd.as_raw_fd(),
                    libc::TUNSETOFFLOAD,
                    bits as libc::c_ulong,
                )
            };
            match cvt(r) {
                Ok(_) => return Ok(bits),
                // Older kernels reject offload bits they do not know with EINVAL.
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EINVAL)))
    }

    /// The interface name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether frames carry a virtio header.
    pub fn has_vnet_hdr(&self) -> bool {
        self.vnet_hdr
    }

    /// The `TUN_F_*` offload bits the kernel accepted (0 if none).
    pub fn offloads(&self) -> u32 {
        self.offloads
    }

    /// Whether TCP segmentation offload is on (GSO packets will be read).
    pub fn has_tso(&self) -> bool {
        self.offloads & libc::TUN_F_TSO4 != 0
    }

    /// Reads one frame; `WouldBlock` when none is queued.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the call.
        cvt_size(unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) })
    }

    /// Writes one frame (the kernel processes it synchronously unless the
    /// device uses NAPI, which ours does not).
    pub fn write(&self, frame: &[u8]) -> io::Result<usize> {
        // SAFETY: `frame` is valid for reads of `frame.len()` bytes for the call.
        cvt_size(unsafe { libc::write(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len()) })
    }
}

impl AsFd for Tun {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Waits until `fd` is readable or `timeout` has passed; `Ok(true)` if
/// readable. Uses `ppoll`, so the timeout has nanosecond resolution (the
/// effective precision is the thread's timer slack, see [`set_timer_slack`]).
/// `EINTR` counts as a timeout.
pub fn wait_readable(fd: BorrowedFd<'_>, timeout: Duration) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    let r = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    match cvt(r) {
        Ok(n) => Ok(n > 0 && pfd.revents & libc::POLLIN != 0),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(false),
        Err(e) => Err(e),
    }
}

/// Moves the calling thread (only it) into the network namespace bound at
/// `path` (e.g. `/run/netns/NAME`). Sockets it opens afterwards live there.
/// A thread cannot return to where it came from except by entering another
/// namespace the same way, so do this on a thread of its own.
pub fn enter_netns(path: &Path) -> io::Result<()> {
    let f = File::open(path)?;
    // SAFETY: `f` is an open namespace file for the duration of the call.
    cvt(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) })?;
    Ok(())
}

/// Sets the calling thread's timer slack, the latitude the kernel has to
/// coalesce its timer wake-ups (default 50 µs — too coarse for release times).
pub fn set_timer_slack(ns: u64) -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long by value.
    cvt(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) })?;
    Ok(())
}

/// Gives the calling thread `SCHED_FIFO` priority `prio` (1–99). The
/// kernel's RT throttling (95 % by default) still keeps the system alive.
pub fn set_realtime(prio: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: pthread_self() is always valid; `param` is a valid sched_param.
    let r = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// Pins the calling thread to CPU `cpu`.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { MaybeUninit::zeroed().assume_init() };
    if cpu >= 8 * size_of::<libc::cpu_set_t>() {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: `cpu` is within the set, checked above.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t of the given size.
    cvt(unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) })?;
    Ok(())
}

fn setsockopt<T>(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    val: &T,
) -> io::Result<()> {
    // SAFETY: `val` points to a live T of the size we pass.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (val as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// `TCP_WINDOW_CLAMP`: bound the receive window this socket advertises. On a
/// listening socket it is inherited by the connections it accepts.
pub fn set_tcp_window_clamp(fd: BorrowedFd<'_>, bytes: u32) -> io::Result<()> {
    setsockopt(
        fd,
        libc::IPPROTO_TCP,
        libc::TCP_WINDOW_CLAMP,
        &(bytes as libc::c_int),
    )
}

/// Current `TCP_WINDOW_CLAMP` of a TCP socket.
pub fn tcp_window_clamp(fd: BorrowedFd<'_>) -> io::Result<u32> {
    let mut val: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the kernel writes one c_int into `val`, bounded by `len`.
    cvt(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_WINDOW_CLAMP,
            (&mut val as *mut libc::c_int).cast(),
            &mut len,
        )
    })?;
    Ok(val.max(0) as u32)
}

/// `TCP_CONGESTION`: choose the congestion control algorithm (e.g. "reno").
pub fn set_tcp_congestion(fd: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    // SAFETY: the option value is `name.len()` bytes at `name.as_ptr()`.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// `SO_RCVBUFFORCE`: receive buffer size beyond `rmem_max` (needs CAP_NET_ADMIN).
pub fn set_rcvbuf_force(fd: BorrowedFd<'_>, bytes: u32) -> io::Result<()> {
    setsockopt(
        fd,
        libc::SOL_SOCKET,
        libc::SO_RCVBUFFORCE,
        &(bytes as libc::c_int),
    )
}

/// `UDP_SEGMENT` (Linux ≥ 4.18): each send of up to 64 KiB is cut into
/// datagrams of `size` payload bytes, by the device if it does USO.
pub fn set_udp_segment(fd: BorrowedFd<'_>, size: u16) -> io::Result<()> {
    // The constant is 103 on every Linux architecture (include/uapi/linux/udp.h).
    const UDP_SEGMENT: libc::c_int = 103;
    setsockopt(fd, libc::SOL_UDP, UDP_SEGMENT, &libc::c_int::from(size))
}

/// `SO_TIMESTAMPNS` in asm-generic/socket.h (x86, arm, arm64, riscv…);
/// mips, sparc, parisc and alpha number it differently.
#[cfg(not(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc64",
    target_arch = "powerpc",
    target_arch = "powerpc64"
)))]
const SO_TIMESTAMPNS: libc::c_int = 35;

/// Asks the kernel to stamp every received datagram with its arrival time
/// (taken when the packet entered the stack, i.e. inside the forwarder's
/// write), read back by [`recv_timestamped`].
pub fn enable_rx_timestamps(fd: BorrowedFd<'_>) -> io::Result<()> {
    setsockopt(fd, libc::SOL_SOCKET, SO_TIMESTAMPNS, &(1 as libc::c_int))
}

/// Receives one datagram into `buf`; returns its length and, if
/// [`enable_rx_timestamps`] was called, its kernel arrival time as a
/// `CLOCK_REALTIME` offset (compare stamps with each other only). Honours the
/// socket's read timeout (`WouldBlock` when it expires).
pub fn recv_timestamped(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
) -> io::Result<(usize, Option<Duration>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // u64 elements give the control buffer cmsghdr alignment.
    let mut control = [0u64; 16];
    // SAFETY: msghdr is plain data; zeroed means no name and no flags.
    let mut msg: libc::msghdr = unsafe { MaybeUninit::zeroed().assume_init() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of_val(&control) as _;
    // SAFETY: `msg` points at `iov` (→ `buf`) and `control`, all live for the call.
    let n = cvt_size(unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, 0) })?;
    let mut stamp = None;
    // SAFETY: the CMSG_* helpers walk the control buffer the kernel just filled,
    // bounded by msg_controllen; the timespec is read unaligned from CMSG_DATA.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == SO_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                stamp = Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n, stamp))
}

/// The fields of `struct tcp_info` the lab reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// Smoothed RTT.
    pub rtt: Duration,
    /// Minimum RTT seen (the windowed minimum kernels since 4.10 keep).
    pub min_rtt: Duration,
    /// Segments retransmitted over the connection's life.
    pub total_retrans: u32,
    /// Congestion window, in segments.
    pub snd_cwnd: u32,
    /// Sender MSS.
    pub snd_mss: u32,
    /// Bytes acknowledged by the peer.
    pub bytes_acked: u64,
    /// Kernel's delivery rate estimate, bytes per second.
    pub delivery_rate: u64,
}

/// `TCP_INFO` for a connected TCP socket.
pub fn tcp_info(fd: BorrowedFd<'_>) -> io::Result<TcpInfo> {
    let mut info = MaybeUninit::<libc::tcp_info>::zeroed();
    let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `info`, which is zeroed
    // so any fields an older kernel does not fill stay 0.
    cvt(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    })?;
    // SAFETY: zero-initialised plain data, partially overwritten by the kernel.
    let i = unsafe { info.assume_init() };
    Ok(TcpInfo {
        rtt: Duration::from_micros(u64::from(i.tcpi_rtt)),
        min_rtt: Duration::from_micros(u64::from(i.tcpi_min_rtt)),
        total_retrans: i.tcpi_total_retrans,
        snd_cwnd: i.tcpi_snd_cwnd,
        snd_mss: i.tcpi_snd_mss,
        bytes_acked: i.tcpi_bytes_acked,
        delivery_rate: i.tcpi_delivery_rate,
    })
}

/// Write end of the signal pipe; -1 until [`install_signal_pipe`] ran.
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(sig: libc::c_int) {
    // Async-signal-safe: an atomic load, write(2), and errno save/restore.
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        // SAFETY: __errno_location is async-signal-safe and always valid.
        let saved = unsafe { *libc::__errno_location() };
        let b = sig as u8;
        // SAFETY: writes one byte from a live local; failure (full pipe) is harmless.
        unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
        // SAFETY: as above; restores errno for the interrupted code.
        unsafe { *libc::__errno_location() = saved };
    }
}

/// Installs handlers for `signals` that only write the signal number (one
/// byte) to a pipe, and returns the pipe's read end. Whoever reads it does the
/// actual work, outside signal context. Call once per process.
pub fn install_signal_pipe(signals: &[libc::c_int]) -> io::Result<OwnedFd> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 returns.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: both descriptors were just created and are owned by nobody else.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl on a valid descriptor; a full pipe must not block the handler.
    cvt(unsafe { libc::fcntl(wr.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) })?;
    let wr_raw = std::os::fd::IntoRawFd::into_raw_fd(wr);
    if SIGNAL_PIPE
        .compare_exchange(-1, wr_raw, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        // SAFETY: we own `wr_raw` and nobody else has seen it.
        drop(unsafe { OwnedFd::from_raw_fd(wr_raw) });
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "signal pipe already installed",
        ));
    }
    for &sig in signals {
        // SAFETY: sigaction is plain data; zeroed is a valid starting point.
        let mut act: libc::sigaction = unsafe { MaybeUninit::zeroed().assume_init() };
        act.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        act.sa_flags = libc::SA_RESTART;
        // SAFETY: `act.sa_mask` is a valid sigset_t to initialise.
        unsafe { libc::sigemptyset(&mut act.sa_mask) };
        // SAFETY: valid signal number from the caller, valid `act`, no old action wanted.
        cvt(unsafe { libc::sigaction(sig, &act, std::ptr::null_mut()) })?;
    }
    Ok(rd)
}

/// Restores the default action for `sig` and raises it again, so the process
/// ends the way it would have without our handler (exit status included).
pub fn reraise_default(sig: libc::c_int) {
    // SAFETY: SIG_DFL is always a valid disposition; raise only sends a signal.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// Blocking read of one byte from `fd`; `None` on EOF or error.
pub fn read_byte(fd: BorrowedFd<'_>) -> Option<u8> {
    let mut b = 0u8;
    loop {
        // SAFETY: reads at most one byte into a live local.
        let r = unsafe { libc::read(fd.as_raw_fd(), (&mut b as *mut u8).cast(), 1) };
        match cvt_size(r) {
            Ok(1) => return Some(b),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            _ => return None,
        }
    }
}

/// The calling process's effective capability set (bit `n` = capability `n`),
/// via `capget`.
pub fn effective_capabilities() -> io::Result<u64> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let mut h = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut d = [Data::default(); 2];
    // SAFETY: version 3 capget writes two Data records into `d`.
    cvt(unsafe {
        libc::syscall(libc::SYS_capget, &mut h as *mut Header, d.as_mut_ptr()) as libc::c_int
    })?;
    Ok(u64::from(d[0].effective) | (u64::from(d[1].effective) << 32))
}

/// Makes `cmd`'s process receive SIGKILL when the thread that spawns it dies,
/// so a program the lab runs inside a namespace cannot outlive the lab (a
/// namespace whose name is deleted lives on while a process is inside it).
pub fn kill_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec and only
    // calls prctl(2), which is async-signal-safe; it touches no memory of ours.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) == -1
            {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Makes `cmd`'s process move itself into each cgroup whose `cgroup.procs`
/// file is listed (see [`cstring_path`]), after fork and before exec: it is
/// inside before it can start a child of its own, so nothing it starts
/// escapes the group. A file that cannot be written fails the spawn.
pub fn join_cgroups_on_exec(cmd: &mut std::process::Command, procs_files: Vec<CString>) {
    use std::os::unix::process::CommandExt;
    if procs_files.is_empty() {
        return;
    }
    // SAFETY: the closure runs in the child between fork and exec and only
    // calls open(2), write(2) and close(2), which are async-signal-safe, on
    // strings the closure owns; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            for path in &procs_files {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd == -1 {
                    return Err(io::Error::last_os_error());
                }
                // "0" names the writing process.
                let n = libc::write(fd, b"0".as_ptr().cast(), 1);
                let err = io::Error::last_os_error();
                libc::close(fd);
                if n != 1 {
                    return Err(err);
                }
            }
            Ok(())
        });
    }
}

/// A path as the C string system calls take.
pub fn cstring_path(path: &Path) -> io::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)
}

/// Sends signal `sig` to process `pid`. `ESRCH` (already gone) is an error
/// like any other; callers that do not care ignore it.
pub fn send_signal(pid: u32, sig: libc::c_int) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    if pid <= 0 {
        // 0 and negatives address process groups: never what a caller means here.
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    // SAFETY: kill(2) takes two integers and touches no memory of ours.
    cvt(unsafe { libc::kill(pid, sig) })?;
    Ok(())
}

/// A read-write file in `dir` that has no name (`O_TMPFILE`), so nothing is
/// left in `dir` however the process ends. Another process can open it as
/// `/proc/<our pid>/fd/<fd>` while we hold it. Where the file system has no
/// `O_TMPFILE`, the file is created under a unique name and unlinked at once.
pub fn unnamed_file(dir: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o600)
        .open(dir);
    match tmp {
        Ok(f) => Ok(f),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
            ) =>
        {
            static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let path = dir.join(format!(
                ".plumb-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)?;
            std::fs::remove_file(&path)?;
            Ok(f)
        }
        Err(e) => Err(e),
    }
}

/// The kernel's CPU latency QoS device: while a process holds it open with a
/// value written, idle CPUs take no idle state slower to leave than that.
const CPU_DMA_LATENCY: &str = "/dev/cpu_dma_latency";

/// Asks that idle CPUs wake within `us` microseconds; the request holds until
/// the returned file is closed (dropped), and the kernel drops it if the
/// process dies.
pub fn hold_cpu_latency(us: i32) -> io::Result<File> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(CPU_DMA_LATENCY)?;
    // The device takes a native-endian s32.
    f.write_all(&us.to_ne_bytes())?;
    Ok(f)
}

/// The CPU latency in force now, µs: the strictest of all held requests.
pub fn cpu_latency_in_force() -> io::Result<i32> {
    use std::io::Read;
    let mut b = [0u8; 4];
    File::open(CPU_DMA_LATENCY)?.read_exact(&mut b)?;
    Ok(i32::from_ne_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_names_are_rejected_before_any_syscall() {
        for n in ["", "0123456789abcdef", "a/b", "a b"] {
            let e = Tun::create(n, true, true).expect_err(n);
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        }
    }

    #[test]
    fn capabilities_are_readable() {
        assert!(effective_capabilities().is_ok());
    }
}
