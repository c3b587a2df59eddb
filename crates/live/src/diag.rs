//! INET_DIAG: the dump request's bytes, and a dump's bytes parsed into one
//! typed [`Conn`] per TCP socket. Pure: no socket, no clock.
//!
//! Parsing walks the receive buffer in place and allocates nothing per
//! socket: `netlink-packet-core`'s buffer types frame the messages and
//! iterate the attributes without copying them, `netlink-packet-sock-diag`
//! reads the fixed response header, and the attributes live diagnosis uses
//! (TCP_INFO, BBR info, SKMEMINFO, the congestion name) are read from their
//! bytes here. The crates' owned messages (`SockDiagMessage`) are not used:
//! building them costs a vector of attributes, a copy of TCP_INFO and a
//! formatted error context per attribute, which was 40 % of a 10,000-
//! connection sample (`bench/live`); their typed TCP_INFO also stops at
//! Linux 5.4's fields and knows nothing of `rcv_wnd`. The request is built
//! here too, because the crate's request cannot carry the bytecode filter
//! that lets the kernel skip sockets on other ports.

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use netlink_packet_core::{NetlinkBuffer, NlasIterator, Parseable};
use netlink_packet_sock_diag::constants::{
    AF_INET, AF_INET6, INET_DIAG_BBRINFO, INET_DIAG_CONG, INET_DIAG_INFO, INET_DIAG_SKMEMINFO,
    IPPROTO_TCP,
};
use netlink_packet_sock_diag::inet::InetResponseHeader;

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

/// A congestion control's name (INET_DIAG_CONG), held inline: the kernel's
/// names are at most 15 bytes (`TCP_CA_NAME_MAX` with its NUL), so a dump
/// of many sockets allocates no string per socket.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct CcName {
    len: u8,
    name: [u8; 15],
}

impl CcName {
    /// From the attribute's bytes: up to the first NUL, printable ASCII
    /// only; `None` for anything else (empty, too long, not a name).
    pub fn new(b: &[u8]) -> Option<CcName> {
        let b = b.split(|c| *c == 0).next().unwrap_or_default();
        if b.is_empty() || b.len() > 15 || !b.iter().all(|c| c.is_ascii_graphic()) {
            return None;
        }
        let mut name = [0u8; 15];
        name[..b.len()].copy_from_slice(b);
        Some(CcName {
            len: b.len() as u8,
            name,
        })
    }

    /// The name (`bbr`, `cubic`, …).
    pub fn as_str(&self) -> &str {
        // Checked ASCII in `new`; the fallback is unreachable.
        std::str::from_utf8(&self.name[..usize::from(self.len)]).unwrap_or("")
    }
}

impl fmt::Display for CcName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for CcName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// One TCP socket as one dump saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
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
    pub congestion: Option<CcName>,
    /// Socket memory.
    pub mem: Option<SkMem>,
    /// BBR state, for BBR sockets.
    pub bbr: Option<BbrInfo>,
}

/// `TCP_ESTABLISHED`.
pub const ESTABLISHED: u8 = 1;
/// `TCP_LISTEN`.
pub const LISTEN: u8 = 10;

/// Extension bits of a dump request (`1 << (INET_DIAG_* - 1)`).
pub mod ext {
    /// TCP_INFO.
    pub const INFO: u8 = 1 << (2 - 1);
    /// Vegas info; BBR answers it with INET_DIAG_BBRINFO (the mask is a u8,
    /// so BBRINFO's own bit, 16, cannot be asked for).
    pub const VEGAS_OR_BBR: u8 = 1 << (3 - 1);
    /// The congestion control's name.
    pub const CONG: u8 = 1 << (4 - 1);
    /// SKMEMINFO.
    pub const SKMEMINFO: u8 = 1 << (7 - 1);
    /// Everything live diagnosis reads.
    pub const ALL: u8 = INFO | VEGAS_OR_BBR | CONG | SKMEMINFO;
}

/// What a dump asks the kernel for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Query {
    /// `AF_INET` or `AF_INET6`.
    pub family: u8,
    /// The [`ext`] bits: each attribute asked for costs the kernel a fill
    /// and the dump its bytes.
    pub ext: u8,
    /// Only sockets with this port at either end: the kernel runs the
    /// filter before it fills a message, so other sockets cost it a compare.
    pub port: Option<u16>,
}

/// Every state but listeners and TIME_WAIT: connections that carry data
/// (`1 << TCP_*`, ESTABLISHED 1 … CLOSING 11).
const STATES: u32 = 0xffe & !(1 << LISTEN) & !(1 << 6);

/// `SOCK_DIAG_BY_FAMILY`.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// The original (v1) inet_diag request, which dumps both families in one
/// walk of the kernel's socket table.
const TCPDIAG_GETSOCK: u16 = 18;
/// `sizeof(struct inet_diag_req)` (v1).
const REQ_V1_LEN: usize = 60;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// `sizeof(struct inet_diag_req_v2)`.
const REQ_LEN: usize = 56;
/// `sizeof(struct inet_diag_msg)`.
const MSG_LEN: usize = 72;
/// `INET_DIAG_REQ_BYTECODE`.
const REQ_BYTECODE: u16 = 1;

/// The inet_diag bytecode for "source port is `port` or destination port
/// is `port`", in the kernel's `inet_diag_bc_op` form (code, yes, no; a
/// port compare is followed by an op whose `no` holds the port). Only the
/// `>=`/`<=` compares are used (equality arrived in Linux 4.16). Each op
/// jumps `yes` bytes when its test holds, `no` bytes when not; landing
/// exactly on the end accepts, landing past it rejects. The kernel audits
/// that the `yes` chain walks every op in order, so the OR's two halves are
/// joined by a JMP that the chain steps into and the run jumps over.
pub fn port_bytecode(port: u16) -> [u8; 36] {
    const S_GE: u8 = 2;
    const S_LE: u8 = 3;
    const D_GE: u8 = 4;
    const D_LE: u8 = 5;
    const JMP: u8 = 1;
    // (code, yes, no) at offsets 0, 8 (sport), 16 (jmp), 20, 28 (dport);
    // the sport half fails to 20, the dport half fails to 40 (past 36).
    let ops: [(usize, u8, u16, u16); 5] = [
        (0, S_GE, 8, 20),
        (8, S_LE, 8, 12),
        (16, JMP, 4, 20),
        (20, D_GE, 8, 20),
        (28, D_LE, 8, 12),
    ];
    let mut b = [0u8; 36];
    for (at, code, yes, no) in ops {
        b[at] = code;
        b[at + 1] = yes as u8;
        b[at + 2..at + 4].copy_from_slice(&no.to_ne_bytes());
        if code != JMP {
            b[at + 6..at + 8].copy_from_slice(&port.to_ne_bytes());
        }
    }
    b
}

/// The dump request for `q`'s sockets, sequence number `seq`.
pub fn dump_request(q: &Query, seq: u32) -> Vec<u8> {
    let bc = q.port.map(port_bytecode);
    let attr_len = bc.map_or(0, |b| 4 + b.len());
    let len = 16 + REQ_LEN + attr_len;
    let mut r = Vec::with_capacity(len);
    r.extend_from_slice(&(len as u32).to_ne_bytes());
    r.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    // NLM_F_REQUEST | NLM_F_DUMP (ROOT | MATCH).
    r.extend_from_slice(&0x301u16.to_ne_bytes());
    r.extend_from_slice(&seq.to_ne_bytes());
    r.extend_from_slice(&0u32.to_ne_bytes());
    // inet_diag_req_v2: family, protocol, ext, pad, states, then the
    // 48-byte socket id left zero (a dump matches on the filter, not on it).
    r.extend_from_slice(&[q.family, IPPROTO_TCP, q.ext, 0]);
    r.extend_from_slice(&STATES.to_ne_bytes());
    r.resize(16 + REQ_LEN, 0);
    if let Some(b) = bc {
        r.extend_from_slice(&((4 + b.len()) as u16).to_ne_bytes());
        r.extend_from_slice(&REQ_BYTECODE.to_ne_bytes());
        r.extend_from_slice(&b);
    }
    r
}

/// The dump request for IPv4 and IPv6 sockets at once (`q.family` is
/// ignored): the original inet_diag request, which the kernel still serves
/// and answers with `AF_UNSPEC` semantics, so its socket table is walked
/// once instead of once per family.
pub fn dump_request_both(q: &Query, seq: u32) -> Vec<u8> {
    let bc = q.port.map(port_bytecode);
    let attr_len = bc.map_or(0, |b| 4 + b.len());
    let len = 16 + REQ_V1_LEN + attr_len;
    let mut r = Vec::with_capacity(len);
    r.extend_from_slice(&(len as u32).to_ne_bytes());
    r.extend_from_slice(&TCPDIAG_GETSOCK.to_ne_bytes());
    r.extend_from_slice(&0x301u16.to_ne_bytes());
    r.extend_from_slice(&seq.to_ne_bytes());
    r.extend_from_slice(&0u32.to_ne_bytes());
    // inet_diag_req: family, src_len, dst_len, ext, the 48-byte socket id,
    // states, dbs.
    r.extend_from_slice(&[0, 0, 0, q.ext]);
    r.resize(16 + 4 + 48, 0);
    r.extend_from_slice(&STATES.to_ne_bytes());
    r.extend_from_slice(&0u32.to_ne_bytes());
    if let Some(b) = bc {
        r.extend_from_slice(&((4 + b.len()) as u16).to_ne_bytes());
        r.extend_from_slice(&REQ_BYTECODE.to_ne_bytes());
        r.extend_from_slice(&b);
    }
    r
}

/// The address families a full dump asks for.
pub const FAMILIES: [u8; 2] = [AF_INET, AF_INET6];

/// How one receive buffer of a dump ended.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// NLMSG_DONE was seen: the dump is complete.
    pub done: bool,
    /// The kernel answered with this error (negative errno).
    pub error: Option<i32>,
    /// Messages that could not be decoded (skipped, counted).
    pub bad: usize,
}

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

/// Parses one buffer of netlink messages from a sock_diag dump (see
/// [`parse_into`]).
pub fn parse(buf: &[u8]) -> Parsed {
    let mut conns = Vec::new();
    let s = parse_into(buf, &mut conns);
    Parsed {
        conns,
        done: s.done,
        error: s.error,
        bad: s.bad,
    }
}

/// Parses one buffer of netlink messages from a sock_diag dump, appending
/// each socket to `out`. Never panics on any input: a malformed message is
/// counted in [`Status::bad`] and skipped when its length can be trusted;
/// a length that cannot stops parsing there.
pub fn parse_into(buf: &[u8], out: &mut Vec<Conn>) -> Status {
    let mut st = Status::default();
    let mut at = 0usize;
    while buf.len() - at >= 16 {
        let rest = &buf[at..];
        let msg = match NetlinkBuffer::new_checked(rest) {
            Ok(m) if m.length() >= 16 => m,
            _ => {
                st.bad += 1;
                break;
            }
        };
        let len = msg.length() as usize;
        let payload = &rest[16..len];
        match msg.message_type() {
            SOCK_DIAG_BY_FAMILY | TCPDIAG_GETSOCK => match conn_of(payload) {
                Some(c) => out.push(c),
                None => st.bad += 1,
            },
            NLMSG_DONE => st.done = true,
            NLMSG_ERROR => match payload.get(..4) {
                Some(e) => {
                    let code = i32::from_ne_bytes([e[0], e[1], e[2], e[3]]);
                    // An error message with code 0 is an acknowledgement.
                    if code != 0 {
                        st.error = Some(code);
                    }
                }
                None => st.bad += 1,
            },
            _ => {}
        }
        // Messages are 4-byte aligned.
        at += (len + 3) & !3;
        if at >= buf.len() {
            break;
        }
    }
    st
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    b.get(i * 4..i * 4 + 4)
        .map_or(0, |s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

/// Decodes SKMEMINFO: the kernel's `SK_MEMINFO_*` u32s, by index.
fn skmem(b: &[u8]) -> Option<SkMem> {
    // RMEM_ALLOC 0, RCVBUF 1, WMEM_ALLOC 2, SNDBUF 3, FWD_ALLOC 4,
    // WMEM_QUEUED 5, OPTMEM 6, BACKLOG 7, DROPS 8 (newer).
    (b.len() >= 24).then(|| SkMem {
        rmem_alloc: u32_at(b, 0),
        rcvbuf: u32_at(b, 1),
        wmem_alloc: u32_at(b, 2),
        sndbuf: u32_at(b, 3),
        wmem_queued: u32_at(b, 5),
        drops: u32_at(b, 8),
    })
}

/// One `inet_diag_msg` and its attributes; `None` when it is not one.
fn conn_of(payload: &[u8]) -> Option<Conn> {
    if payload.len() < MSG_LEN || !matches!(payload[0], AF_INET | AF_INET6) {
        return None;
    }
    let h = InetResponseHeader::parse(&payload[..MSG_LEN]).ok()?;
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
    for nla in NlasIterator::new(&payload[MSG_LEN..]) {
        let nla = nla.ok()?;
        let v = nla.value();
        match nla.kind() {
            INET_DIAG_INFO => c.tcp = TcpInfo::decode(v),
            INET_DIAG_CONG => c.congestion = CcName::new(v),
            INET_DIAG_SKMEMINFO => c.mem = skmem(v),
            INET_DIAG_BBRINFO => c.bbr = BbrInfo::decode(v),
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
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn congestion_names_are_checked() {
        assert_eq!(
            CcName::new(b"bbr\0").map(|c| c.to_string()),
            Some("bbr".into())
        );
        assert_eq!(
            CcName::new(b"cubic").map(|c| c.to_string()),
            Some("cubic".into())
        );
        assert_eq!(CcName::new(b""), None);
        assert_eq!(CcName::new(b"\0bbr"), None);
        assert_eq!(CcName::new(b"sixteen-bytes-xx"), None);
        assert_eq!(CcName::new(b"b r"), None);
    }

    /// Runs the bytecode as the kernel's `inet_diag_bc_run` does.
    fn run(bc: &[u8], sport: u16, dport: u16) -> bool {
        let mut len = bc.len() as i64;
        let mut at = 0usize;
        let mut steps = 0;
        while len > 0 {
            steps += 1;
            assert!(steps < 100);
            let code = bc[at];
            let yes_n = i64::from(bc[at + 1]);
            let no_n = i64::from(u16::from_ne_bytes([bc[at + 2], bc[at + 3]]));
            let arg = || u16::from_ne_bytes([bc[at + 6], bc[at + 7]]);
            let yes = match code {
                1 => false,
                2 => sport >= arg(),
                3 => sport <= arg(),
                4 => dport >= arg(),
                5 => dport <= arg(),
                c => panic!("op {c}"),
            };
            let step = if yes { yes_n } else { no_n };
            len -= step;
            at += step as usize;
        }
        len == 0
    }

    /// Audits it as the kernel's `inet_diag_bc_audit` does: the `yes` chain
    /// walks every op, and every `no` lands on that chain or just past the end.
    fn audit(bc: &[u8]) -> bool {
        let total = bc.len() as i64;
        let chain = |target_left: i64| {
            let (mut left, mut at) = (total, 0usize);
            while left >= 0 {
                if target_left > left {
                    return false;
                }
                if target_left == left {
                    return true;
                }
                left -= i64::from(bc[at + 1]);
                at += usize::from(bc[at + 1]);
            }
            false
        };
        let (mut left, mut at) = (total, 0usize);
        while left > 0 {
            let min = if bc[at] == 1 { 4 } else { 8 };
            let yes = i64::from(bc[at + 1]);
            let no = i64::from(u16::from_ne_bytes([bc[at + 2], bc[at + 3]]));
            if no < min || no > left + 4 || no & 3 != 0 || (no < left && !chain(left - no)) {
                return false;
            }
            if yes < min || yes > left + 4 || yes & 3 != 0 {
                return false;
            }
            left -= yes;
            at += yes as usize;
        }
        left == 0
    }

    #[test]
    fn port_bytecode_matches_either_end_and_passes_the_audit() {
        let bc = port_bytecode(5201);
        assert!(audit(&bc));
        assert!(run(&bc, 5201, 40000));
        assert!(run(&bc, 40000, 5201));
        assert!(run(&bc, 5201, 5201));
        assert!(!run(&bc, 5200, 5202));
        assert!(!run(&bc, 5202, 5200));
        assert!(!run(&bc, 1, 65535));
        let edge = port_bytecode(0);
        assert!(audit(&edge) && run(&edge, 0, 9) && !run(&edge, 1, 9));
    }

    #[test]
    fn request_carries_the_filter_only_when_asked() {
        let q = Query {
            family: AF_INET6,
            ext: ext::INFO,
            port: None,
        };
        let r = dump_request(&q, 3);
        assert_eq!(r.len(), 16 + REQ_LEN);
        assert_eq!((r[16], r[17], r[18]), (AF_INET6, IPPROTO_TCP, ext::INFO));
        let states = u32::from_ne_bytes([r[20], r[21], r[22], r[23]]);
        assert_eq!(states & (1 << LISTEN), 0);
        assert_ne!(states & (1 << ESTABLISHED), 0);
        let r = dump_request(
            &Query {
                port: Some(80),
                ..q
            },
            3,
        );
        assert_eq!(r.len(), 16 + REQ_LEN + 40);
        assert_eq!(
            u32::from_ne_bytes([r[0], r[1], r[2], r[3]]) as usize,
            r.len()
        );
        assert_eq!(u16::from_ne_bytes([r[74], r[75]]), REQ_BYTECODE);
        assert_eq!(&r[76..], &port_bytecode(80));
    }
}
