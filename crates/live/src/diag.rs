//! INET_DIAG: the dump request's bytes, and a dump's bytes parsed into one
//! typed [`Conn`] per TCP socket. Pure: no socket, no clock.
//!
//! The message framing and the fixed attributes (response header, SKMEMINFO,
//! congestion name) come from `netlink-packet-sock-diag`; TCP_INFO and BBR
//! info arrive as raw attribute bytes and are decoded here ([`TcpInfo`],
//! [`BbrInfo`]), because the crate's typed TCP_INFO stops at Linux 5.4's
//! fields and knows nothing of `rcv_wnd`.

use std::net::{IpAddr, SocketAddr};

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, INET_DIAG_BBRINFO, IPPROTO_TCP};
use netlink_packet_sock_diag::inet::{
    nlas::Nla, ExtensionFlags, InetRequest, SocketId, StateFlags,
};
use netlink_packet_sock_diag::SockDiagMessage;

use crate::tcpinfo::TcpInfo;

/// Socket memory (SKMEMINFO), bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SkMem {
    /// Receive queue memory charged (`rmem_alloc`).
    pub rmem_alloc: u32,
    /// Receive buffer size (`sk_rcvbuf`).
    pub rcvbuf: u32,
    /// Transmit memory in the device queues (`wmem_alloc`).
    pub wmem_alloc: u32,
    /// Send buffer size (`sk_sndbuf`).
    pub sndbuf: u32,
    /// Memory queued for sending, not yet acknowledged (`wmem_queued`).
    pub wmem_queued: u32,
    /// Packets dropped on the socket's backlog.
    pub drops: u32,
}

/// BBR's own state (INET_DIAG_BBRINFO), when the socket runs BBR.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BbrInfo {
    /// Bottleneck bandwidth estimate, bytes/s.
    pub bw: u64,
    /// Min RTT estimate, µs.
    pub min_rtt_us: u32,
    /// Pacing gain × 256.
    pub pacing_gain: u32,
    /// Cwnd gain × 256.
    pub cwnd_gain: u32,
}

impl BbrInfo {
    /// Decodes `struct tcp_bbr_info` (five u32: bw_lo, bw_hi, min_rtt, pacing_gain, cwnd_gain).
    pub fn decode(b: &[u8]) -> Option<BbrInfo> {
        let w = |i: usize| -> Option<u32> {
            let s = b.get(i * 4..i * 4 + 4)?;
            Some(u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
        };
        Some(BbrInfo {
            bw: u64::from(w(0)?) | (u64::from(w(1)?) << 32),
            min_rtt_us: w(2)?,
            pacing_gain: w(3)?,
            cwnd_gain: w(4)?,
        })
    }
}

/// One TCP socket as one dump saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Conn {
    /// This host's address and port.
    pub local: SocketAddr,
    /// The peer's.
    pub remote: SocketAddr,
    /// TCP state (1 established, 10 listen, …).
    pub state: u8,
    /// Socket inode (0 for a socket no file refers to, e.g. TIME_WAIT).
    pub inode: u32,
    /// Owner uid.
    pub uid: u32,
    /// The kernel's socket cookie: unique while the socket lives.
    pub cookie: u64,
    /// Bytes received and not read by the application.
    pub recv_queue: u32,
    /// Bytes sent and not acknowledged.
    pub send_queue: u32,
    /// TCP_INFO, when the kernel sent it.
    pub tcp: Option<TcpInfo>,
    /// Congestion control name.
    pub congestion: Option<String>,
    /// Socket memory.
    pub mem: Option<SkMem>,
    /// BBR state, for BBR sockets.
    pub bbr: Option<BbrInfo>,
}

/// `TCP_ESTABLISHED`.
pub const ESTABLISHED: u8 = 1;
/// `TCP_LISTEN`.
pub const LISTEN: u8 = 10;

/// The dump request for every TCP socket of `family` (`AF_INET` or
/// `AF_INET6`) with TCP_INFO, congestion, SKMEMINFO and BBR/Vegas info.
pub fn dump_request(family: u8, seq: u32) -> Vec<u8> {
    let mut hdr = NetlinkHeader::default();
    hdr.flags = NLM_F_REQUEST | NLM_F_DUMP;
    hdr.sequence_number = seq;
    let mut msg = NetlinkMessage::new(
        hdr,
        SockDiagMessage::InetRequest(InetRequest {
            family,
            protocol: IPPROTO_TCP,
            // BBR answers the VEGASINFO bit with an INET_DIAG_BBRINFO attribute:
            // the extension mask is a u8, so BBRINFO's own bit cannot be asked for.
            extensions: ExtensionFlags::INFO
                | ExtensionFlags::CONG
                | ExtensionFlags::SKMEMINFO
                | ExtensionFlags::VEGASINFO,
            // Everything but listeners and TIME_WAIT: connections that carry data.
            states: StateFlags::all() - StateFlags::LISTEN - StateFlags::TIME_WAIT,
            socket_id: if family == AF_INET6 {
                SocketId::new_v6()
            } else {
                SocketId::new_v4()
            },
        })
        .into(),
    );
    msg.finalize();
    let mut buf = vec![0u8; msg.buffer_len()];
    msg.serialize(&mut buf);
    buf
}

/// The address families a full dump asks for.
pub const FAMILIES: [u8; 2] = [AF_INET, AF_INET6];

/// What one receive buffer of a dump held.
#[derive(Debug, Default, PartialEq)]
pub struct Parsed {
    /// The sockets.
    pub conns: Vec<Conn>,
    /// NLMSG_DONE was seen: the dump is complete.
    pub done: bool,
    /// The kernel answered with this error (negative errno).
    pub error: Option<i32>,
    /// Messages that could not be decoded (skipped, counted).
    pub bad: usize,
}

/// Parses one buffer of netlink messages from a sock_diag dump. Never
/// panics on any input: a truncated or malformed message is counted in
/// [`Parsed::bad`] and parsing stops at it (its length cannot be trusted).
pub fn parse(buf: &[u8]) -> Parsed {
    let mut out = Parsed::default();
    let mut at = 0usize;
    while buf.len() - at >= 16 {
        let rest = &buf[at..];
        let len = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        if len < 16 || len > rest.len() {
            out.bad += 1;
            break;
        }
        let one = &rest[..len];
        match NetlinkMessage::<SockDiagMessage>::deserialize(one) {
            Ok(m) => match m.payload {
                NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(r)) => {
                    out.conns.push(conn_of(&r))
                }
                NetlinkPayload::Done(_) => out.done = true,
                NetlinkPayload::Error(e) => {
                    out.error = e.code.map(|c| c.get());
                }
                _ => {}
            },
            Err(_) => out.bad += 1,
        }
        // Messages are 4-byte aligned.
        at += (len + 3) & !3;
        if at >= buf.len() {
            break;
        }
    }
    out
}

fn conn_of(r: &netlink_packet_sock_diag::inet::InetResponse) -> Conn {
    let h = &r.header;
    let id = &h.socket_id;
    let mut c = Conn {
        local: SocketAddr::new(id.source_address, id.source_port),
        remote: SocketAddr::new(id.destination_address, id.destination_port),
        state: h.state,
        inode: h.inode,
        uid: h.uid,
        cookie: u64::from_ne_bytes(id.cookie),
        recv_queue: h.recv_queue,
        send_queue: h.send_queue,
        tcp: None,
        congestion: None,
        mem: None,
        bbr: None,
    };
    for nla in &r.nlas {
        match nla {
            Nla::TcpInfo(bytes) => c.tcp = TcpInfo::decode(bytes),
            Nla::Congestion(s) => c.congestion = Some(s.clone()),
            // The crate names the nine u32 by guesswork; these are the
            // kernel's SK_MEMINFO_* indices 0..8 in order.
            Nla::MemInfo(m) => {
                c.mem = Some(SkMem {
                    rmem_alloc: m.receive_queue,
                    rcvbuf: m.receive_queue_max,
                    wmem_alloc: m.bottom_send_queues,
                    sndbuf: m.send_queue_max,
                    wmem_queued: m.send_queue,
                    drops: m.drops,
                })
            }
            Nla::Other(o) if netlink_packet_core::Nla::kind(o) == INET_DIAG_BBRINFO => {
                let mut v = vec![0u8; netlink_packet_core::Nla::value_len(o)];
                netlink_packet_core::Nla::emit_value(o, &mut v);
                c.bbr = BbrInfo::decode(&v);
            }
            _ => {}
        }
    }
    // An IPv4-mapped IPv6 peer is an IPv4 connection.
    for a in [&mut c.local, &mut c.remote] {
        if let IpAddr::V6(v6) = a.ip() {
            if let Some(v4) = v6.to_ipv4_mapped() {
                a.set_ip(IpAddr::V4(v4));
            }
        }
    }
    c
}
