//! Typed socket options that `socket2` does not cover, or that plumb needs
//! to read back (the kernel often grants something other than what was
//! asked: doubled buffer sizes, clamped windows, MSS minus options).
//!
//! This module owns option names, levels and value encodings; the raw
//! `getsockopt`/`setsockopt` are in [`crate::sys`]. Every function takes a
//! [`BorrowedFd`], so it works on `std::net` sockets, `socket2::Socket` and
//! raw owned descriptors alike (`sock.as_fd()`). None are data-path calls.
//! `SO_REUSEADDR`, `SO_REUSEPORT` and friends are left to `socket2`.

use std::fmt;
use std::io;
use std::os::fd::BorrowedFd;
use std::str::FromStr;

use crate::sys;

/// `SO_BUSY_POLL` is absent from `libc` for some Linux targets; its value
/// is the same on every architecture (`include/uapi/asm-generic/socket.h`).
const SO_BUSY_POLL: libc::c_int = 46;

fn get_u32(fd: BorrowedFd<'_>, level: libc::c_int, name: libc::c_int) -> io::Result<u32> {
    // Options read here are non-negative ints; a negative one would be a
    // kernel contract change worth surfacing rather than wrapping.
    let v = sys::getsockopt_int(fd, level, name)?;
    u32::try_from(v).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "negative option"))
}

fn set_u32(fd: BorrowedFd<'_>, level: libc::c_int, name: libc::c_int, v: u32) -> io::Result<()> {
    let v = libc::c_int::try_from(v)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "option value exceeds i32"))?;
    sys::setsockopt_int(fd, level, name, v)
}

fn set_bool(fd: BorrowedFd<'_>, level: libc::c_int, name: libc::c_int, on: bool) -> io::Result<()> {
    sys::setsockopt_int(fd, level, name, libc::c_int::from(on))
}

fn get_bool(fd: BorrowedFd<'_>, level: libc::c_int, name: libc::c_int) -> io::Result<bool> {
    Ok(sys::getsockopt_int(fd, level, name)? != 0)
}

/// The socket's address family (`SO_DOMAIN`): `AF_INET` or `AF_INET6` for
/// the sockets plumb uses.
pub fn domain(fd: BorrowedFd<'_>) -> io::Result<libc::c_int> {
    sys::getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_DOMAIN)
}

fn is_ipv6(fd: BorrowedFd<'_>) -> io::Result<bool> {
    Ok(domain(fd)? == libc::AF_INET6)
}

// --- TCP ---------------------------------------------------------------

/// Sets `TCP_WINDOW_CLAMP`: the largest receive window to advertise, bytes.
///
/// The kernel raises values below `SOCK_MIN_RCVBUF / 2` to that floor and
/// accepts 0 only on an unconnected socket; read back with [`window_clamp`].
pub fn set_window_clamp(fd: BorrowedFd<'_>, bytes: u32) -> io::Result<()> {
    set_u32(fd, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP, bytes)
}

/// Reads `TCP_WINDOW_CLAMP`, bytes.
pub fn window_clamp(fd: BorrowedFd<'_>) -> io::Result<u32> {
    get_u32(fd, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP)
}

/// Sets `TCP_MAXSEG` (the user MSS cap, bytes). Must be set before
/// `connect`/`listen` to affect the handshake.
pub fn set_max_segment(fd: BorrowedFd<'_>, bytes: u32) -> io::Result<()> {
    set_u32(fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG, bytes)
}

/// Reads `TCP_MAXSEG`: the current MSS on a connected socket (payload per
/// segment, net of TCP options), the user cap or 536 before that.
pub fn max_segment(fd: BorrowedFd<'_>) -> io::Result<u32> {
    get_u32(fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG)
}

/// Sets `TCP_NODELAY` (disables Nagle).
pub fn set_nodelay(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    set_bool(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, on)
}

/// Reads `TCP_NODELAY`.
pub fn nodelay(fd: BorrowedFd<'_>) -> io::Result<bool> {
    get_bool(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY)
}

/// Sets `TCP_NOTSENT_LOWAT`: writability needs fewer than `bytes` unsent
/// bytes queued, which bounds send-buffer bloat.
pub fn set_notsent_lowat(fd: BorrowedFd<'_>, bytes: u32) -> io::Result<()> {
    set_u32(fd, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, bytes)
}

/// Reads `TCP_NOTSENT_LOWAT`, bytes (`u32::MAX`-ish when unset).
pub fn notsent_lowat(fd: BorrowedFd<'_>) -> io::Result<u32> {
    // The unset value is UINT_MAX, which is -1 as an int: reinterpret.
    Ok(sys::getsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT)? as u32)
}

/// `TCP_CA_NAME_MAX` from `include/net/tcp.h`, including the NUL.
const CA_NAME_MAX: usize = 16;

/// A congestion-control algorithm name the kernel can be handed, e.g.
/// `cubic`, `bbr`, `reno`: non-empty, at most 15 bytes, no NUL.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CongestionName(String);

/// Why a string is not a [`CongestionName`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CongestionNameError {
    /// The name was empty.
    #[error("congestion control name is empty")]
    Empty,
    /// The name does not fit `TCP_CA_NAME_MAX` (15 bytes plus NUL).
    #[error("congestion control name {0:?} is longer than 15 bytes")]
    TooLong(String),
    /// The name contained a NUL byte.
    #[error("congestion control name {0:?} contains a NUL byte")]
    Nul(String),
}

impl CongestionName {
    /// Checks `name` against the kernel's limits.
    pub fn new(name: &str) -> Result<Self, CongestionNameError> {
        if name.is_empty() {
            Err(CongestionNameError::Empty)
        } else if name.len() >= CA_NAME_MAX {
            Err(CongestionNameError::TooLong(name.to_owned()))
        } else if name.contains('\0') {
            Err(CongestionNameError::Nul(name.to_owned()))
        } else {
            Ok(Self(name.to_owned()))
        }
    }

    /// The name as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for CongestionName {
    type Err = CongestionNameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl fmt::Display for CongestionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Sets `TCP_CONGESTION`. Fails with `ENOENT` if the algorithm is not
/// available, `EPERM` if it is not in `tcp_allowed_congestion_control`
/// and the process lacks `CAP_NET_ADMIN`.
pub fn set_congestion(fd: BorrowedFd<'_>, name: &CongestionName) -> io::Result<()> {
    sys::setsockopt_bytes(
        fd,
        libc::IPPROTO_TCP,
        libc::TCP_CONGESTION,
        name.0.as_bytes(),
    )
}

/// Reads `TCP_CONGESTION`.
pub fn congestion(fd: BorrowedFd<'_>) -> io::Result<CongestionName> {
    let mut buf = [0u8; CA_NAME_MAX];
    let n = sys::getsockopt_bytes(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, &mut buf)?;
    let name = &buf[..n];
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    let name = std::str::from_utf8(&name[..end])
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "congestion name not UTF-8"))?;
    CongestionName::new(name).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

// --- buffers, pacing, zerocopy, busy poll ------------------------------

/// Sets `SO_SNDBUF` and returns the size the kernel granted (usually
/// double the request, for bookkeeping overhead, capped by `wmem_max`).
pub fn set_send_buffer(fd: BorrowedFd<'_>, bytes: u32) -> io::Result<u32> {
    set_u32(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, bytes)?;
    send_buffer(fd)
}

/// Reads `SO_SNDBUF`, bytes.
pub fn send_buffer(fd: BorrowedFd<'_>) -> io::Result<u32> {
    get_u32(fd, libc::SOL_SOCKET, libc::SO_SNDBUF)
}

/// Sets `SO_RCVBUF` and returns the size granted (see [`set_send_buffer`];
/// capped by `rmem_max`). Setting it disables receive auto-tuning.
pub fn set_recv_buffer(fd: BorrowedFd<'_>, bytes: u32) -> io::Result<u32> {
    set_u32(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, bytes)?;
    recv_buffer(fd)
}

/// Reads `SO_RCVBUF`, bytes.
pub fn recv_buffer(fd: BorrowedFd<'_>) -> io::Result<u32> {
    get_u32(fd, libc::SOL_SOCKET, libc::SO_RCVBUF)
}

/// Sets `SO_MAX_PACING_RATE` in bytes per second; `None` removes the cap.
/// Enforced by the fq qdisc, or by TCP's internal pacing without it.
pub fn set_max_pacing_rate(fd: BorrowedFd<'_>, bytes_per_sec: Option<u64>) -> io::Result<()> {
    // 64-bit kernels take a u64 when given 8 bytes; u64::MAX (~0UL) is "none".
    let v = bytes_per_sec.unwrap_or(u64::MAX);
    sys::setsockopt_bytes(
        fd,
        libc::SOL_SOCKET,
        libc::SO_MAX_PACING_RATE,
        &v.to_ne_bytes(),
    )
}

/// Reads `SO_MAX_PACING_RATE`, bytes per second; `None` when uncapped.
pub fn max_pacing_rate(fd: BorrowedFd<'_>) -> io::Result<Option<u64>> {
    let mut buf = [0u8; 8];
    let n = sys::getsockopt_bytes(fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, &mut buf)?;
    let v = match n {
        8 => u64::from_ne_bytes(buf),
        4 => {
            // 32-bit kernels answer with a u32 where ~0U means "none".
            let v = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]);
            if v == u32::MAX {
                u64::MAX
            } else {
                u64::from(v)
            }
        }
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("SO_MAX_PACING_RATE returned {n} bytes"),
            ))
        }
    };
    Ok((v != u64::MAX).then_some(v))
}

/// Sets `SO_RCVLOWAT`: a blocking read waits until this many bytes are
/// queued (or its timeout, EOF or an error), so the receiver is woken — and
/// the sender's softirq wakes it — once per that much data rather than per
/// segment. 0 and 1 both mean the default, any data.
pub fn set_recv_lowat(fd: BorrowedFd<'_>, bytes: u32) -> io::Result<()> {
    set_u32(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT, bytes.max(1))
}

/// Reads `SO_RCVLOWAT`, bytes.
pub fn recv_lowat(fd: BorrowedFd<'_>) -> io::Result<u32> {
    get_u32(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT)
}

/// Sets `SO_ZEROCOPY`, which `MSG_ZEROCOPY` sends require (Linux 4.14).
pub fn set_zerocopy(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    set_bool(fd, libc::SOL_SOCKET, libc::SO_ZEROCOPY, on)
}

/// Reads `SO_ZEROCOPY`.
pub fn zerocopy(fd: BorrowedFd<'_>) -> io::Result<bool> {
    get_bool(fd, libc::SOL_SOCKET, libc::SO_ZEROCOPY)
}

/// Sets `SO_BUSY_POLL`: microseconds to busy-poll the device queue on a
/// blocking receive (raising it above the sysctl needs `CAP_NET_ADMIN`).
pub fn set_busy_poll(fd: BorrowedFd<'_>, micros: u32) -> io::Result<()> {
    set_u32(fd, libc::SOL_SOCKET, SO_BUSY_POLL, micros)
}

/// Reads `SO_BUSY_POLL`, microseconds.
pub fn busy_poll(fd: BorrowedFd<'_>) -> io::Result<u32> {
    get_u32(fd, libc::SOL_SOCKET, SO_BUSY_POLL)
}

// --- IP level ------------------------------------------------------------

/// Sets the DSCP/ECN byte: `IP_TOS` on IPv4 sockets, `IPV6_TCLASS` on IPv6.
pub fn set_traffic_class(fd: BorrowedFd<'_>, tos: u8) -> io::Result<()> {
    if is_ipv6(fd)? {
        sys::setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_TCLASS, tos.into())
    } else {
        sys::setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_TOS, tos.into())
    }
}

/// Reads `IP_TOS` or `IPV6_TCLASS` according to the socket's family.
pub fn traffic_class(fd: BorrowedFd<'_>) -> io::Result<u8> {
    let v = if is_ipv6(fd)? {
        sys::getsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_TCLASS)?
    } else {
        sys::getsockopt_int(fd, libc::IPPROTO_IP, libc::IP_TOS)?
    };
    // The kernel stores one byte; IPV6_TCLASS reads -1 only if never set on
    // very old kernels, which we map to 0 like "no class".
    Ok(u8::try_from(v).unwrap_or(0))
}

/// Path-MTU discovery mode (`IP_MTU_DISCOVER` / `IPV6_MTU_DISCOVER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PmtuDiscovery {
    /// `IP_PMTUDISC_DONT`: never set DF; let routers fragment.
    Dont,
    /// `IP_PMTUDISC_WANT`: set DF, fall back per route (the Linux default).
    Want,
    /// `IP_PMTUDISC_DO`: always set DF; oversize sends fail with `EMSGSIZE`.
    Do,
    /// `IP_PMTUDISC_PROBE`: set DF and ignore the cached path MTU.
    Probe,
}

impl PmtuDiscovery {
    fn to_raw(self) -> libc::c_int {
        // The IPv4 and IPv6 constants share values 0..=3.
        match self {
            Self::Dont => libc::IP_PMTUDISC_DONT,
            Self::Want => libc::IP_PMTUDISC_WANT,
            Self::Do => libc::IP_PMTUDISC_DO,
            Self::Probe => libc::IP_PMTUDISC_PROBE,
        }
    }

    fn from_raw(v: libc::c_int) -> io::Result<Self> {
        Ok(match v {
            libc::IP_PMTUDISC_DONT => Self::Dont,
            libc::IP_PMTUDISC_WANT => Self::Want,
            libc::IP_PMTUDISC_DO => Self::Do,
            libc::IP_PMTUDISC_PROBE => Self::Probe,
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("unknown PMTU discovery mode {other}"),
                ))
            }
        })
    }
}

fn mtu_level(fd: BorrowedFd<'_>) -> io::Result<(libc::c_int, libc::c_int)> {
    Ok(if is_ipv6(fd)? {
        (libc::IPPROTO_IPV6, libc::IPV6_MTU_DISCOVER)
    } else {
        (libc::IPPROTO_IP, libc::IP_MTU_DISCOVER)
    })
}

/// Sets the path-MTU discovery mode; [`PmtuDiscovery::Do`] is "don't fragment".
pub fn set_pmtu_discovery(fd: BorrowedFd<'_>, mode: PmtuDiscovery) -> io::Result<()> {
    let (level, name) = mtu_level(fd)?;
    sys::setsockopt_int(fd, level, name, mode.to_raw())
}

/// Reads the path-MTU discovery mode.
pub fn pmtu_discovery(fd: BorrowedFd<'_>) -> io::Result<PmtuDiscovery> {
    let (level, name) = mtu_level(fd)?;
    PmtuDiscovery::from_raw(sys::getsockopt_int(fd, level, name)?)
}

/// Reads the kernel's path MTU for a *connected* socket (`IP_MTU` /
/// `IPV6_MTU`) from its cached route; fails with `ENOTCONN` when there is
/// none: unconnected, or just after an option such as `IP_TOS` reset the
/// cache (the next send restores it).
pub fn path_mtu(fd: BorrowedFd<'_>) -> io::Result<u32> {
    if is_ipv6(fd)? {
        get_u32(fd, libc::IPPROTO_IPV6, libc::IPV6_MTU)
    } else {
        get_u32(fd, libc::IPPROTO_IP, libc::IP_MTU)
    }
}

// --- UDP -----------------------------------------------------------------

/// Sets `UDP_SEGMENT`: every send on this socket larger than `bytes` is
/// split by the kernel (or NIC) into datagrams of `bytes` (GSO, Linux 4.18).
/// 0 turns it off. A per-send cmsg overrides it ([`crate::udp::UdpBatch`]).
pub fn set_udp_segment(fd: BorrowedFd<'_>, bytes: u16) -> io::Result<()> {
    sys::setsockopt_int(fd, libc::SOL_UDP, libc::UDP_SEGMENT, bytes.into())
}

/// Reads `UDP_SEGMENT`, bytes (0 = off).
pub fn udp_segment(fd: BorrowedFd<'_>) -> io::Result<u16> {
    let v = sys::getsockopt_int(fd, libc::SOL_UDP, libc::UDP_SEGMENT)?;
    u16::try_from(v).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad UDP_SEGMENT"))
}

/// Sets `UDP_GRO`: let the kernel coalesce same-flow datagrams into one
/// receive, reporting the segment size in a cmsg (Linux 5.0).
pub fn set_udp_gro(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    set_bool(fd, libc::SOL_UDP, libc::UDP_GRO, on)
}

/// Sets `SO_TIMESTAMPNS`: every received message carries the kernel's
/// receive time (realtime clock, nanoseconds) in a cmsg.
pub fn set_timestamp_ns(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    set_bool(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, on)
}

/// Packets the kernel dropped at this socket because its receive buffer
/// was full (`SO_MEMINFO`'s `SK_MEMINFO_DROPS`, Linux 4.6). For UDP with
/// GRO one drop may be a whole coalesced read of many datagrams.
pub fn socket_drops(fd: BorrowedFd<'_>) -> io::Result<u32> {
    // The kernel's `SK_MEMINFO_VARS` u32 counters; drops is the last.
    const VARS: usize = 9;
    const DROPS: usize = 8;
    let mut buf = [0u8; 4 * VARS];
    let n = sys::getsockopt_bytes(fd, libc::SOL_SOCKET, libc::SO_MEMINFO, &mut buf)?;
    if n < 4 * (DROPS + 1) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "SO_MEMINFO without a drop counter",
        ));
    }
    let at = 4 * DROPS;
    Ok(u32::from_ne_bytes([
        buf[at],
        buf[at + 1],
        buf[at + 2],
        buf[at + 3],
    ]))
}

/// Reads `UDP_GRO`.
pub fn udp_gro(fd: BorrowedFd<'_>) -> io::Result<bool> {
    get_bool(fd, libc::SOL_UDP, libc::UDP_GRO)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{tcp_stream_pair, udp_pair};
    use socket2::{Domain, Protocol, Socket, Type};
    use std::net::{Ipv6Addr, SocketAddr, TcpListener, UdpSocket};
    use std::os::fd::AsFd;

    #[test]
    fn congestion_names_are_validated() {
        assert_eq!(CongestionName::new(""), Err(CongestionNameError::Empty));
        assert!(matches!(
            CongestionName::new("a_name_that_is_too_long"),
            Err(CongestionNameError::TooLong(_))
        ));
        assert!(matches!(
            CongestionName::new("cu\0bic"),
            Err(CongestionNameError::Nul(_))
        ));
        assert_eq!(
            "cubic".parse::<CongestionName>().map(|n| n.to_string()),
            Ok("cubic".to_owned())
        );
    }

    #[test]
    fn tcp_options_round_trip_on_loopback() {
        let (c, _s) = tcp_stream_pair();
        let fd = c.as_fd();

        // Loopback's MTU is 65536, which IPv4 clamps to IP_MAX_MTU (65535).
        // Read it first: changing IP_TOS below resets the socket's cached
        // route, and IP_MTU reads that cache.
        assert_eq!(path_mtu(fd).expect("mtu"), 65_535);

        set_window_clamp(fd, 100_000).expect("set clamp");
        assert_eq!(window_clamp(fd).expect("clamp"), 100_000);

        // reno is built into every kernel, so it is always settable.
        let reno = CongestionName::new("reno").expect("valid name");
        set_congestion(fd, &reno).expect("set reno");
        assert_eq!(congestion(fd).expect("congestion"), reno);
        let missing = CongestionName::new("no_such_cc").expect("valid name");
        let err = set_congestion(fd, &missing).expect_err("unknown algorithm");
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));

        set_nodelay(fd, true).expect("nodelay");
        assert!(nodelay(fd).expect("nodelay"));
        set_nodelay(fd, false).expect("nodelay");
        assert!(!nodelay(fd).expect("nodelay"));

        set_notsent_lowat(fd, 128 * 1024).expect("lowat");
        assert_eq!(notsent_lowat(fd).expect("lowat"), 128 * 1024);

        set_max_pacing_rate(fd, Some(12_500_000)).expect("pacing");
        assert_eq!(max_pacing_rate(fd).expect("pacing"), Some(12_500_000));
        set_max_pacing_rate(fd, None).expect("pacing");
        assert_eq!(max_pacing_rate(fd).expect("pacing"), None);

        set_zerocopy(fd, true).expect("zerocopy");
        assert!(zerocopy(fd).expect("zerocopy"));

        set_traffic_class(fd, 0x28).expect("tos");
        assert_eq!(traffic_class(fd).expect("tos"), 0x28);

        set_busy_poll(fd, 50).expect("busy poll");
        assert_eq!(busy_poll(fd).expect("busy poll"), 50);
    }

    #[test]
    fn buffers_report_the_granted_size() {
        let (c, _s) = tcp_stream_pair();
        let fd = c.as_fd();
        let granted = set_send_buffer(fd, 64 * 1024).expect("sndbuf");
        // Linux doubles the request to account for skb overhead.
        assert_eq!(granted, 128 * 1024);
        assert_eq!(send_buffer(fd).expect("sndbuf"), granted);
        let granted = set_recv_buffer(fd, 48 * 1024).expect("rcvbuf");
        assert_eq!(granted, 96 * 1024);
    }

    #[test]
    fn max_segment_caps_the_connection_mss() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let sock = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).expect("socket");
        set_max_segment(sock.as_fd(), 1_000).expect("set mss");
        assert_eq!(max_segment(sock.as_fd()).expect("mss"), 1_000);
        sock.connect_timeout(&addr.into(), crate::testutil::IO_TIMEOUT)
            .expect("connect");
        let _server = listener.accept().expect("accept");
        let mss = max_segment(sock.as_fd()).expect("mss");
        // The cap applies; timestamps (12 bytes) may come off it.
        assert!((900..=1_000).contains(&mss), "mss {mss}");
    }

    #[test]
    fn pmtu_discovery_modes_round_trip_v4_and_v6() {
        let (tx, _rx) = udp_pair();
        for mode in [PmtuDiscovery::Do, PmtuDiscovery::Dont, PmtuDiscovery::Probe] {
            set_pmtu_discovery(tx.as_fd(), mode).expect("set pmtu");
            assert_eq!(pmtu_discovery(tx.as_fd()).expect("pmtu"), mode);
        }
        // IPv6 loopback may be disabled in some sandboxes; only test if bindable.
        if let Ok(v6) = UdpSocket::bind(SocketAddr::from((Ipv6Addr::LOCALHOST, 0))) {
            assert_eq!(domain(v6.as_fd()).expect("domain"), libc::AF_INET6);
            set_pmtu_discovery(v6.as_fd(), PmtuDiscovery::Do).expect("set pmtu v6");
            assert_eq!(pmtu_discovery(v6.as_fd()).expect("pmtu"), PmtuDiscovery::Do);
            set_traffic_class(v6.as_fd(), 0xb8).expect("tclass");
            assert_eq!(traffic_class(v6.as_fd()).expect("tclass"), 0xb8);
        }
    }

    #[test]
    fn udp_gso_and_gro_options_round_trip() {
        let (tx, rx) = udp_pair();
        set_udp_segment(tx.as_fd(), 1_200).expect("segment");
        assert_eq!(udp_segment(tx.as_fd()).expect("segment"), 1_200);
        set_udp_segment(tx.as_fd(), 0).expect("segment off");
        assert_eq!(udp_segment(tx.as_fd()).expect("segment"), 0);
        set_udp_gro(rx.as_fd(), true).expect("gro");
        assert!(udp_gro(rx.as_fd()).expect("gro"));
    }

    #[test]
    fn a_full_udp_receive_buffer_counts_drops() {
        let (tx, rx) = udp_pair();
        // The smallest buffer the kernel grants, never read from.
        set_recv_buffer(rx.as_fd(), 1).expect("rcvbuf");
        assert_eq!(socket_drops(rx.as_fd()).expect("meminfo"), 0);
        for _ in 0..1_000 {
            let _ = tx.send(&[0u8; 1_000]);
        }
        let drops = socket_drops(rx.as_fd()).expect("meminfo");
        assert!(
            (900..=1_000).contains(&drops),
            "{drops} drops of 1000 datagrams"
        );
    }
}
