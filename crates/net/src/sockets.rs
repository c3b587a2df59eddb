//! Creating, binding, connecting and configuring the control and data sockets.
//!
//! Options that TCP negotiates in the handshake (buffer sizes → window scale,
//! MSS, window clamp) are set before `connect` on the client and on the
//! listening socket on the server, so that the handshake already carries them.

use std::io;
use std::net::{
    IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs, UdpSocket,
};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::Arc;
use std::time::Duration;

use plumb_proto::params::TestParams;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::config::Family;
use crate::local::LocalOptions;
use crate::sockopt;

/// Options for one data socket, from the test parameters and its role.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DataOptions {
    /// SO_SNDBUF and SO_RCVBUF (`-w`).
    pub window: Option<u32>,
    /// TCP_MAXSEG (`-M`).
    pub mss: Option<u32>,
    /// TCP_NODELAY (`-N`).
    pub nodelay: bool,
    /// TCP_CONGESTION (`-C`).
    pub congestion: Option<String>,
    /// IP_TOS / IPV6_TCLASS.
    pub tos: u8,
    /// TCP_WINDOW_CLAMP, applied on receiving sockets only (`--rwin`).
    pub rwin: Option<u32>,
    /// SO_SNDBUF on sending sockets only (`--sndbuf`).
    pub sndbuf: Option<u32>,
    /// SO_MAX_PACING_RATE on sending sockets, bit/s (`fqrate`, `--fq-rate`).
    pub fq_rate: Option<u64>,
    /// Multipath TCP data streams (`mptcp`, `-m`): the client's sockets and
    /// the server's data listener are IPPROTO_MPTCP.
    pub mptcp: bool,
}

impl DataOptions {
    /// The options both ends apply, from the parameters.
    pub fn of(p: &TestParams) -> DataOptions {
        let plumb = p.plumb.clone().unwrap_or_default();
        DataOptions {
            window: p.window.and_then(|w| u32::try_from(w).ok()),
            mss: p.mss.and_then(|m| u32::try_from(m).ok()),
            nodelay: p.nodelay,
            congestion: p.congestion.clone(),
            tos: p.tos.unwrap_or(0) as u8,
            rwin: plumb.rwin,
            sndbuf: plumb.sndbuf,
            fq_rate: u64::try_from(p.fqrate).ok().filter(|&r| r > 0),
            mptcp: p.mptcp,
        }
    }

    /// Whether the listener must be made anew with these options for the streams.
    pub fn need_listener_options(&self) -> bool {
        self.window.is_some() || self.mss.is_some() || self.rwin.is_some() || self.mptcp
    }
}

/// Why a data socket could not be set up as asked.
fn opt_err(what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Applies the options that must precede the handshake. `receiver`/`sender`
/// say which role-specific options apply (a listener takes both possible).
pub fn pre_connect(
    sock: &Socket,
    o: &DataOptions,
    sender: bool,
    receiver: bool,
    tcp: bool,
) -> io::Result<()> {
    if let Some(w) = o.window {
        sock.set_send_buffer_size(w as usize)
            .map_err(|e| opt_err("cannot set the socket buffer (-w)", e))?;
        sock.set_recv_buffer_size(w as usize)
            .map_err(|e| opt_err("cannot set the socket buffer (-w)", e))?;
    }
    if sender {
        if let Some(s) = o.sndbuf {
            sock.set_send_buffer_size(s as usize)
                .map_err(|e| opt_err("cannot set --sndbuf", e))?;
        }
        pace(sock.as_fd(), o)?;
    }
    if tcp {
        if let Some(m) = o.mss {
            sockopt::set_max_segment(sock.as_fd(), m)
                .map_err(|e| opt_err("cannot set the MSS (-M)", e))?;
        }
        if receiver {
            if let Some(r) = o.rwin {
                lock_rcvbuf_for_clamp(sock.as_fd(), o, r)?;
                sockopt::set_window_clamp(sock.as_fd(), r)
                    .map_err(|e| opt_err("cannot clamp the window (--rwin)", e))?;
            }
        }
        if let Some(cc) = &o.congestion {
            let name = sockopt::CongestionName::new(cc)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
            sockopt::set_congestion(sock.as_fd(), &name).map_err(|e| {
                opt_err(&format!("congestion control '{cc}' is not available here (see /proc/sys/net/ipv4/tcp_available_congestion_control)"), e)
            })?;
        }
        if o.nodelay {
            sock.set_nodelay(true)?;
        }
    }
    if o.tos != 0 {
        // IPv4 TOS and IPv6 traffic class; one of them fails depending on the family.
        let _ = sockopt::set_traffic_class(sock.as_fd(), o.tos);
    }
    Ok(())
}

/// The kernel's pacing of a sending stream (`fqrate`): SO_MAX_PACING_RATE
/// takes bytes a second, and setting it turns TCP's own pacing on where
/// the qdisc is not fq.
fn pace(fd: std::os::fd::BorrowedFd<'_>, o: &DataOptions) -> io::Result<()> {
    match o.fq_rate {
        Some(bits) => sockopt::set_max_pacing_rate(fd, Some(bits / 8))
            .map_err(|e| opt_err("cannot set the pacing rate (--fq-rate)", e)),
        None => Ok(()),
    }
}

/// Receive-buffer autotuning rewrites TCP_WINDOW_CLAMP as the buffer grows
/// ("make the window clamp follow along" in tcp_rcv_space_adjust); a fixed
/// SO_RCVBUF turns autotuning off. Four times the clamp (the kernel doubles it
/// again) keeps the buffer from becoming the limit instead of the clamp.
fn lock_rcvbuf_for_clamp(
    fd: std::os::fd::BorrowedFd<'_>,
    o: &DataOptions,
    clamp: u32,
) -> io::Result<()> {
    if o.window.is_none() {
        let want = clamp.saturating_mul(4).max(64 * 1024);
        sockopt::set_recv_buffer(fd, want)
            .map_err(|e| opt_err("cannot size the receive buffer for --rwin", e))?;
    }
    Ok(())
}

/// Applies role-specific options again after accept, where inheritance from
/// the listener may not cover them.
pub fn post_accept(sock: &TcpStream, o: &DataOptions, sender: bool) -> io::Result<()> {
    let fd = sock.as_fd();
    if !sender {
        if let Some(r) = o.rwin {
            lock_rcvbuf_for_clamp(fd, o, r)?;
            sockopt::set_window_clamp(fd, r)
                .map_err(|e| opt_err("cannot clamp the window (--rwin)", e))?;
        }
    } else {
        if let Some(s) = o.sndbuf {
            sockopt::set_send_buffer(fd, s).map_err(|e| opt_err("cannot set --sndbuf", e))?;
        }
        pace(fd, o)?;
    }
    // Both ways: the accept loop turns Nagle off on every connection for the
    // control channel's sake, and a data stream keeps it only with -N, as
    // iperf3's do (a -R sender with Nagle off is not like for like).
    sock.set_nodelay(o.nodelay)?;
    if let Some(cc) = &o.congestion {
        if let Ok(name) = sockopt::CongestionName::new(cc) {
            sockopt::set_congestion(fd, &name)
                .map_err(|e| opt_err(&format!("congestion control '{cc}'"), e))?;
        }
    }
    Ok(())
}

/// Resolves `host:port` for the family asked for.
pub fn resolve(host: &str, port: u16, family: Family) -> io::Result<Vec<SocketAddr>> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot resolve '{host}': {e}")))?
        .filter(|a| match family {
            Family::Any => true,
            Family::V4 => a.is_ipv4(),
            Family::V6 => a.is_ipv6(),
        })
        .collect();
    if addrs.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("'{host}' has no address of the requested family"),
        ));
    }
    Ok(addrs)
}

/// Connects a TCP socket with options applied before the handshake.
pub fn connect_tcp(
    addr: SocketAddr,
    bind: Option<IpAddr>,
    local_port: Option<u16>,
    timeout: Option<Duration>,
    prepare: impl FnOnce(&Socket) -> io::Result<()>,
) -> io::Result<TcpStream> {
    connect_stream(addr, bind, local_port, timeout, false, prepare)
}

/// IPPROTO_MPTCP: Linux's Multipath TCP, a stream socket that speaks TCP
/// to a peer without it.
const MPTCP: i32 = 262;

/// A stream socket: TCP, or Multipath TCP when `mptcp`.
fn stream_socket(addr: SocketAddr, mptcp: bool) -> io::Result<Socket> {
    let proto = if mptcp {
        Protocol::from(MPTCP)
    } else {
        Protocol::TCP
    };
    Socket::new(Domain::for_address(addr), Type::STREAM, Some(proto)).map_err(|e| {
        if mptcp {
            io::Error::new(
                e.kind(),
                format!("MPTCP (-m): {e} (this kernel has no MPTCP, or net.mptcp.enabled is 0)"),
            )
        } else {
            e
        }
    })
}

/// [`connect_tcp`], as Multipath TCP when `mptcp` (`-m`).
pub fn connect_stream(
    addr: SocketAddr,
    bind: Option<IpAddr>,
    local_port: Option<u16>,
    timeout: Option<Duration>,
    mptcp: bool,
    prepare: impl FnOnce(&Socket) -> io::Result<()>,
) -> io::Result<TcpStream> {
    let sock = stream_socket(addr, mptcp)?;
    prepare(&sock)?;
    if bind.is_some() || local_port.is_some() {
        let ip = bind.unwrap_or(if addr.is_ipv4() {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        } else {
            IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        });
        sock.set_reuse_address(true)?;
        sock.bind(&SockAddr::from(SocketAddr::new(
            ip,
            local_port.unwrap_or(0),
        )))?;
    }
    match timeout {
        Some(t) => sock.connect_timeout(&SockAddr::from(addr), t)?,
        None => sock.connect(&SockAddr::from(addr))?,
    }
    Ok(sock.into())
}

/// SO_SNDBUF and SO_RCVBUF a UDP socket asks for when `-w` does not say:
/// 4 MiB, against the system default iperf3 keeps (`net.core.rmem_default`,
/// 208 KiB on most machines). A receiver that takes datagrams a batch per
/// system call needs room for what arrives while it is away: the kernel
/// charges each 64-byte datagram 832 bytes (the whole buffer it sits in), so
/// the default 212,992 bytes held 256 of them on the development machine —
/// 13 µs at 20 Mpps, less than one scheduler tick of a busy CPU. The kernel caps the request at
/// `rmem_max`/`wmem_max`, and every UDP result reports what was asked and
/// granted (`end.plumb.udp`); `-w` sets any other size, as with iperf3.
pub const UDP_DEFAULT_BUFFER: u32 = 4 << 20;

/// Sizes a UDP socket's buffers to [`UDP_DEFAULT_BUFFER`] unless `-w` set
/// them, and asks for receive timestamps (`SO_TIMESTAMPNS`) now, during the
/// handshake: the first socket on a host to ask switches the kernel's
/// stamping on from a workqueue, some time later, and until it runs a
/// datagram is stamped when read rather than when it arrived.
fn udp_buffers(sock: &Socket, o: &DataOptions) {
    if o.window.is_none() {
        let _ = sock.set_recv_buffer_size(UDP_DEFAULT_BUFFER as usize);
        let _ = sock.set_send_buffer_size(UDP_DEFAULT_BUFFER as usize);
    }
    let _ = sockopt::set_timestamp_ns(sock.as_fd(), true);
}

/// A UDP socket connected to `addr`, optionally bound first, with
/// `prepare`'s options set before it connects.
pub fn connect_udp(
    addr: SocketAddr,
    bind: Option<IpAddr>,
    local_port: Option<u16>,
    o: &DataOptions,
    prepare: impl FnOnce(&Socket) -> io::Result<()>,
) -> io::Result<UdpSocket> {
    let sock = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    pre_connect(&sock, o, true, true, false)?;
    prepare(&sock)?;
    udp_buffers(&sock, o);
    let ip = bind.unwrap_or(if addr.is_ipv4() {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    } else {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    });
    sock.bind(&SockAddr::from(SocketAddr::new(
        ip,
        local_port.unwrap_or(0),
    )))?;
    sock.connect(&SockAddr::from(addr))?;
    Ok(sock.into())
}

fn listen_addr(port: u16, bind: Option<IpAddr>, family: Family) -> SocketAddr {
    let ip = bind.unwrap_or(match family {
        Family::V4 => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        _ => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    });
    SocketAddr::new(ip, port)
}

fn dual_stack(sock: &Socket, addr: SocketAddr, family: Family) {
    if addr.is_ipv6() && addr.ip().is_unspecified() {
        // [::] takes IPv4 clients too, unless -6 asked for IPv6 only.
        let _ = sock.set_only_v6(family == Family::V6);
    }
}

/// The server's TCP listener, with data-stream options when a test asks for them.
pub fn listen_tcp(
    port: u16,
    bind: Option<IpAddr>,
    family: Family,
    o: Option<&DataOptions>,
    local: &LocalOptions,
) -> io::Result<TcpListener> {
    let addr = listen_addr(port, bind, family);
    let sock = stream_socket(addr, o.is_some_and(|o| o.mptcp))?;
    // What the listener has, each connection it accepts has too.
    local.listener(&sock)?;
    sock.set_reuse_address(true)?;
    dual_stack(&sock, addr, family);
    if let Some(o) = o {
        pre_connect(&sock, o, false, true, true)?;
    }
    sock.bind(&SockAddr::from(addr))
        .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
    sock.listen(128)?;
    Ok(sock.into())
}

/// The server's UDP socket on the test port, waiting for a stream's hello.
pub fn bind_udp(
    port: u16,
    bind: Option<IpAddr>,
    family: Family,
    o: &DataOptions,
    local: &LocalOptions,
) -> io::Result<UdpSocket> {
    let addr = listen_addr(port, bind, family);
    let sock = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    local.udp_data(&sock)?;
    sock.set_reuse_address(true)?;
    sock.set_reuse_port(true)?;
    dual_stack(&sock, addr, family);
    pre_connect(&sock, o, true, true, false)?;
    udp_buffers(&sock, o);
    sock.bind(&SockAddr::from(addr))
        .map_err(|e| io::Error::new(e.kind(), format!("cannot bind UDP {addr}: {e}")))?;
    Ok(sock.into())
}

/// Host part of an address as iperf3 prints it (IPv4-mapped shown as IPv4).
pub fn host_string(a: &SocketAddr) -> String {
    match a.ip() {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map_or_else(|| v6.to_string(), |v4| v4.to_string()),
        IpAddr::V4(v4) => v4.to_string(),
    }
}

/// Replaces the server's listener with one on the same port carrying `o`
/// (or none). Two listeners cannot share a port, so the old one is closed
/// first; the port is unbound for the moment in between, when no client of
/// the current test is connecting.
pub fn rebind_listener(
    listener: &mut TcpListener,
    bind: Option<IpAddr>,
    family: Family,
    o: Option<&DataOptions>,
    local: &LocalOptions,
) -> io::Result<()> {
    let port = listener.local_addr()?.port();
    let placeholder = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    drop(std::mem::replace(listener, placeholder));
    let mut last = None;
    // Bounded: a few tries over ~200 ms if the kernel still holds the port.
    for _ in 0..10 {
        match listen_tcp(port, bind, family, o, local) {
            Ok(l) => {
                *listener = l;
                return Ok(());
            }
            Err(e) => last = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Err(last.unwrap_or_else(|| io::Error::other("cannot listen again")))
}

/// Waits up to `wait` for the control socket; `poll` has millisecond
/// resolution where a socket timeout would round to the scheduler tick.
pub(crate) fn readable(s: &TcpStream, wait: Duration) -> bool {
    let ms = i32::try_from(wait.as_micros().div_ceil(1000)).unwrap_or(i32::MAX);
    match crate::sys::poll_one(s.as_fd(), libc::POLLIN, ms) {
        Ok(r) => r != 0,
        // EINTR and friends: let the caller's loop look at its clocks and flags again.
        Err(_) => false,
    }
}

/// A data stream's socket.
#[derive(Debug, Clone)]
pub enum StreamSocket {
    /// A TCP connection.
    Tcp(Arc<TcpStream>),
    /// A connected UDP socket.
    Udp(Arc<UdpSocket>),
}

impl StreamSocket {
    /// The socket's descriptor, as iperf3 reports it.
    pub fn raw_fd(&self) -> i32 {
        match self {
            StreamSocket::Tcp(s) => s.as_raw_fd(),
            StreamSocket::Udp(s) => s.as_raw_fd(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accepted_data_stream_has_nagle_unless_asked() {
        let l = TcpListener::bind("127.0.0.1:0").expect("listen");
        let _c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let (s, _) = l.accept().expect("accept");
        // As the accept loop leaves every connection.
        s.set_nodelay(true).expect("nodelay");
        post_accept(&s, &DataOptions::default(), true).expect("options");
        assert!(!s.nodelay().expect("read back"), "no -N: Nagle on");
        let n = DataOptions {
            nodelay: true,
            ..DataOptions::default()
        };
        post_accept(&s, &n, false).expect("options");
        assert!(s.nodelay().expect("read back"), "-N: Nagle off");
    }
}
