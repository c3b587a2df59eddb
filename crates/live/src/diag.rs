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
use plumb_tcpinfo::TcpInfo;

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
    /// The interface the socket is bound to (0: none); a lookup of one
    /// socket ([`lookup_request`]) must name it.
    pub ifindex: u32,
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

/// Whether a dump keeps a socket in `state` ([`STATES`]): a lookup also
/// finds what the socket became after it closed (a TIME_WAIT socket keeps
/// its cookie), which a dump would not list.
pub fn dumped_state(state: u8) -> bool {
    state < 32 && STATES & (1 << state) != 0
}

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

/// NLM_F_REQUEST | NLM_F_DUMP (ROOT | MATCH).
const DUMP_FLAGS: u16 = 0x301;

/// Appends a netlink header: the message's whole length, its type, flags
/// and sequence number (port id 0: the kernel).
fn nl_header(out: &mut Vec<u8>, len: usize, kind: u16, flags: u16, seq: u32) {
    out.extend_from_slice(&(len as u32).to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(&flags.to_ne_bytes());
    out.extend_from_slice(&seq.to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes());
}

/// Appends the start of an `inet_diag_req_v2`: family, protocol, the
/// extensions asked for, padding, and the states kept ([`STATES`]); the
/// 48-byte socket id follows.
fn req_v2_head(out: &mut Vec<u8>, family: u8, ext: u8) {
    out.extend_from_slice(&[family, IPPROTO_TCP, ext, 0]);
    out.extend_from_slice(&STATES.to_ne_bytes());
}

/// Appends the port filter's bytecode as a request attribute.
fn bytecode_attr(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&((4 + b.len()) as u16).to_ne_bytes());
    out.extend_from_slice(&REQ_BYTECODE.to_ne_bytes());
    out.extend_from_slice(b);
}

/// The dump request for `q`'s sockets, sequence number `seq`.
pub fn dump_request(q: &Query, seq: u32) -> Vec<u8> {
    let bc = q.port.map(port_bytecode);
    let attr_len = bc.map_or(0, |b| 4 + b.len());
    let len = 16 + REQ_LEN + attr_len;
    let mut r = Vec::with_capacity(len);
    nl_header(&mut r, len, SOCK_DIAG_BY_FAMILY, DUMP_FLAGS, seq);
    // The socket id stays zero: a dump matches on the filter, not on it.
    req_v2_head(&mut r, q.family, q.ext);
    r.resize(16 + REQ_LEN, 0);
    if let Some(b) = bc {
        bytecode_attr(&mut r, &b);
    }
    r
}

/// The dump request for IPv4 and IPv6 sockets at once (`q.family` is
/// ignored): the original inet_diag request, which the kernel still serves
/// and answers with `AF_UNSPEC` semantics, so its socket table is walked
/// once instead of once per family.
pub fn dump_request_both(q: &Query, seq: u32) -> Vec<u8> {
    request_both(q, STATES, seq)
}

/// The dump request for every listening TCP socket, both families, with no
/// attributes: which local ports accept connections, so that a connection
/// on one was opened by its peer.
pub fn listeners_request(seq: u32) -> Vec<u8> {
    let q = Query {
        family: 0,
        ext: 0,
        port: None,
    };
    request_both(&q, 1 << LISTEN, seq)
}

/// Whether a connection with local address `local` was opened by this end:
/// no listener in `listeners` ([`listeners_request`]) holds its local port
/// on its address or on the wildcard. TCP_INFO's `bytes_acked` counts the
/// SYN's sequence number only on the end that opened the connection.
pub fn opened_here(local: std::net::SocketAddr, listeners: &[std::net::SocketAddr]) -> bool {
    !listeners
        .iter()
        .any(|l| l.port() == local.port() && (l.ip().is_unspecified() || l.ip() == local.ip()))
}

/// [`dump_request_both`] for the sockets in `states` (`1 << TCP_*` bits).
fn request_both(q: &Query, states: u32, seq: u32) -> Vec<u8> {
    let bc = q.port.map(port_bytecode);
    let attr_len = bc.map_or(0, |b| 4 + b.len());
    let len = 16 + REQ_V1_LEN + attr_len;
    let mut r = Vec::with_capacity(len);
    nl_header(&mut r, len, TCPDIAG_GETSOCK, DUMP_FLAGS, seq);
    // inet_diag_req: family, src_len, dst_len, ext, the 48-byte socket id,
    // states, dbs.
    r.extend_from_slice(&[0, 0, 0, q.ext]);
    r.resize(16 + 4 + 48, 0);
    r.extend_from_slice(&states.to_ne_bytes());
    r.extend_from_slice(&0u32.to_ne_bytes());
    if let Some(b) = bc {
        bytecode_attr(&mut r, &b);
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
    st.bad = walk(buf, |_seq, a| match a {
        Answer::Conn(c) => out.push(c),
        Answer::Done => st.done = true,
        Answer::Error(code) => st.error = Some(code),
        Answer::Ack => {}
    });
    st
}

/// One message of sock_diag's answer.
// Handed to a callback one at a time and never stored in bulk, so the size
// of the socket variant costs nothing; boxing it would allocate per socket.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Answer {
    /// A socket.
    Conn(Conn),
    /// NLMSG_DONE: a dump is complete.
    Done,
    /// NLMSG_ERROR with this (negative) errno: the request with the
    /// message's sequence number failed (`-ENOENT` for a lookup: no such
    /// socket, or its cookie belongs to an earlier one).
    Error(i32),
    /// NLMSG_ERROR with code 0: the acknowledgement a request asked for.
    Ack,
}

/// Parses one buffer of netlink messages from sock_diag, calling `each`
/// with every message's sequence number and what it says, in order.
/// Returns the messages that could not be decoded (skipped when their
/// length can be trusted; a length that cannot stops parsing there). Never
/// panics on any input.
pub fn walk(buf: &[u8], mut each: impl FnMut(u32, Answer)) -> usize {
    let mut bad = 0;
    let mut at = 0usize;
    while buf.len() - at >= 16 {
        let rest = &buf[at..];
        let msg = match NetlinkBuffer::new_checked(rest) {
            Ok(m) if m.length() >= 16 => m,
            _ => {
                bad += 1;
                break;
            }
        };
        let len = msg.length() as usize;
        let payload = &rest[16..len];
        let seq = msg.sequence_number();
        match msg.message_type() {
            SOCK_DIAG_BY_FAMILY | TCPDIAG_GETSOCK => match conn_of(payload) {
                Some(c) => each(seq, Answer::Conn(c)),
                None => bad += 1,
            },
            NLMSG_DONE => each(seq, Answer::Done),
            NLMSG_ERROR => match payload.get(..4) {
                Some(e) => {
                    let code = i32::from_ne_bytes([e[0], e[1], e[2], e[3]]);
                    // An error message with code 0 is an acknowledgement.
                    each(
                        seq,
                        if code == 0 {
                            Answer::Ack
                        } else {
                            Answer::Error(code)
                        },
                    );
                }
                None => bad += 1,
            },
            _ => {}
        }
        // Messages are 4-byte aligned.
        at += (len + 3) & !3;
        if at >= buf.len() {
            break;
        }
    }
    bad
}

/// Appends to `out` the request for one socket, `c` as a dump saw it: a
/// `SOCK_DIAG_BY_FAMILY` request without `NLM_F_DUMP`, which the kernel
/// answers by a hash lookup of the 4-tuple (on the bound interface) and a
/// check of the cookie — one message for that socket, or `-ENOENT` when it
/// is gone (a reused 4-tuple has another cookie) — without walking its
/// socket table. Several go in one `send`; the kernel answers them in
/// order, and `ack` on the last one marks the end of the answers.
pub fn lookup_request(c: &Conn, ext: u8, seq: u32, ack: bool, out: &mut Vec<u8>) {
    let len = 16 + REQ_LEN;
    out.reserve(len);
    // NLM_F_REQUEST, and NLM_F_ACK when asked.
    let flags: u16 = if ack { 0x5 } else { 0x1 };
    nl_header(out, len, SOCK_DIAG_BY_FAMILY, flags, seq);
    // An IPv4 connection (also one an IPv6 socket holds through mapped
    // addresses, which the parser reports as IPv4) is found in the IPv4
    // lookup; the kernel keeps both in one table.
    let family = if c.local.is_ipv4() { AF_INET } else { AF_INET6 };
    req_v2_head(out, family, ext);
    // inet_diag_sockid: ports and addresses in network order, the
    // interface and the cookie's two u32 as the kernel reported them.
    out.extend_from_slice(&c.local.port().to_be_bytes());
    out.extend_from_slice(&c.remote.port().to_be_bytes());
    for a in [c.local.ip(), c.remote.ip()] {
        let mut b = [0u8; 16];
        match a {
            IpAddr::V4(v4) => b[..4].copy_from_slice(&v4.octets()),
            IpAddr::V6(v6) => b = v6.octets(),
        }
        out.extend_from_slice(&b);
    }
    out.extend_from_slice(&c.ifindex.to_ne_bytes());
    out.extend_from_slice(&c.cookie.to_ne_bytes());
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
        ifindex: id.interface_id,
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
    fn bbr_info_is_five_native_words() {
        let mut b = Vec::new();
        for w in [0x8000_0000u32, 0x2, 15_000, 739, 512] {
            b.extend_from_slice(&w.to_ne_bytes());
        }
        assert_eq!(
            BbrInfo::decode(&b),
            Some(BbrInfo {
                bw: 0x2_8000_0000,
                min_rtt_us: 15_000,
                pacing_gain: 739,
                cwnd_gain: 512,
            })
        );
        // A short attribute is no BBR info, not a guess.
        assert_eq!(BbrInfo::decode(&b[..19]), None);
    }

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
    fn a_connection_on_a_listening_port_was_accepted() {
        let l: Vec<std::net::SocketAddr> = ["0.0.0.0:8000", "198.18.0.2:22", "[::]:443"]
            .iter()
            .map(|a| a.parse().expect("addr"))
            .collect();
        let at = |a: &str| opened_here(a.parse().expect("addr"), &l);
        assert!(!at("198.18.0.2:8000"), "the wildcard listener's port");
        assert!(!at("198.18.0.2:22"));
        assert!(at("198.18.0.3:22"), "another address's port 22");
        assert!(!at("[2001:db8::1]:443"));
        assert!(at("198.18.0.2:40000"), "an ephemeral port: opened here");
        // The request asks for listeners only, with no attributes.
        let r = listeners_request(7);
        assert_eq!(u32_at(&r, (16 + 4 + 48) / 4), 1 << LISTEN);
        assert_eq!(r[16 + 3], 0);
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
        assert!(dumped_state(ESTABLISHED) && !dumped_state(LISTEN) && !dumped_state(6));
        assert!(!dumped_state(0) && !dumped_state(200));
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

    fn conn(local: &str, remote: &str, ifindex: u32, cookie: u64) -> Conn {
        Conn {
            local: local.parse().expect("local"),
            remote: remote.parse().expect("remote"),
            state: ESTABLISHED,
            inode: 7,
            uid: 1000,
            ifindex,
            cookie,
            recv_queue: 0,
            send_queue: 0,
            tcp: None,
            congestion: None,
            mem: None,
            bbr: None,
        }
    }

    /// The kernel's answer to a lookup: an `inet_diag_msg` that repeats
    /// the request's socket id (as `inet_diag_msg_common_fill` does).
    fn answer_to(req: &[u8], seq: u32) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&((16 + MSG_LEN) as u32).to_ne_bytes());
        m.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        m.extend_from_slice(&0u16.to_ne_bytes());
        m.extend_from_slice(&seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        // family, state, timer, retrans, the 48-byte id, then expires,
        // rqueue, wqueue, uid, inode.
        m.extend_from_slice(&[req[16], ESTABLISHED, 0, 0]);
        m.extend_from_slice(&req[24..72]);
        for v in [0u32, 5, 6, 1000, 7] {
            m.extend_from_slice(&v.to_ne_bytes());
        }
        m
    }

    fn error(seq: u32, code: i32) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&(16u32 + 4 + 16).to_ne_bytes());
        m.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        m.extend_from_slice(&0u16.to_ne_bytes());
        m.extend_from_slice(&seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(&code.to_ne_bytes());
        m.extend_from_slice(&[0u8; 16]);
        m
    }

    #[test]
    fn lookup_request_names_one_socket_as_the_kernel_reads_it() {
        let c = conn("10.1.2.3:40000", "192.0.2.9:5201", 3, 0x1122_3344_5566_7788);
        let mut r = Vec::new();
        lookup_request(&c, ext::ALL, 41, false, &mut r);
        assert_eq!(r.len(), 16 + REQ_LEN);
        assert_eq!(
            u32::from_ne_bytes([r[0], r[1], r[2], r[3]]) as usize,
            r.len()
        );
        assert_eq!(u16::from_ne_bytes([r[4], r[5]]), SOCK_DIAG_BY_FAMILY);
        // A request, not a dump (NLM_F_DUMP would walk the table).
        assert_eq!(u16::from_ne_bytes([r[6], r[7]]), 0x1);
        assert_eq!(u32::from_ne_bytes([r[8], r[9], r[10], r[11]]), 41);
        assert_eq!((r[16], r[17], r[18]), (AF_INET, IPPROTO_TCP, ext::ALL));
        // inet_diag_sockid at 24: sport, dport big-endian; src, dst; if; cookie.
        assert_eq!(&r[24..28], &[0x9c, 0x40, 0x14, 0x51]);
        assert_eq!(&r[28..32], &[10, 1, 2, 3]);
        assert_eq!(&r[32..44], &[0u8; 12]);
        assert_eq!(&r[44..48], &[192, 0, 2, 9]);
        assert_eq!(u32::from_ne_bytes([r[60], r[61], r[62], r[63]]), 3);
        assert_eq!(&r[64..72], &0x1122_3344_5566_7788u64.to_ne_bytes());
        // The acknowledgement flag, and IPv6 with its 16 bytes.
        let c6 = conn("[2001:db8::1]:22", "[2001:db8::2]:50000", 0, 9);
        lookup_request(&c6, ext::INFO, 42, true, &mut r);
        let r6 = &r[72..];
        assert_eq!(u16::from_ne_bytes([r6[6], r6[7]]), 0x5);
        assert_eq!(r6[16], AF_INET6);
        assert_eq!(
            &r6[28..44],
            &"2001:db8::1"
                .parse::<std::net::Ipv6Addr>()
                .expect("v6")
                .octets()
        );
    }

    #[test]
    fn lookup_answers_parse_back_to_the_socket_asked_for() {
        for c in [
            conn("10.1.2.3:40000", "192.0.2.9:5201", 3, 0xdead_beef_0000_0001),
            conn("[2001:db8::1]:22", "[2001:db8::2]:50000", 0, 9),
        ] {
            let mut r = Vec::new();
            lookup_request(&c, ext::ALL, 5, false, &mut r);
            let p = parse(&answer_to(&r, 5));
            assert_eq!(p.bad, 0);
            let got = p.conns.first().expect("one socket");
            assert_eq!(
                (got.local, got.remote, got.ifindex, got.cookie, got.inode),
                (c.local, c.remote, c.ifindex, c.cookie, c.inode)
            );
        }
    }

    #[test]
    fn a_batch_of_answers_is_told_apart_by_sequence_number() {
        let a = conn("127.0.0.1:1", "127.0.0.1:2", 0, 1);
        let b = conn("127.0.0.1:3", "127.0.0.1:4", 0, 2);
        let mut reqs = Vec::new();
        lookup_request(&a, ext::ALL, 10, false, &mut reqs);
        lookup_request(&b, ext::ALL, 11, true, &mut reqs);
        // The kernel's order: a's socket, b gone, then the ack of the last.
        let mut buf = answer_to(&reqs[..72], 10);
        buf.extend(error(11, -2));
        buf.extend(error(11, 0));
        let mut seen = Vec::new();
        let bad = walk(&buf, |seq, a| seen.push((seq, a)));
        assert_eq!(bad, 0);
        assert_eq!(seen.len(), 3);
        assert!(matches!(seen[0], (10, Answer::Conn(c)) if c.cookie == 1));
        assert_eq!(seen[1], (11, Answer::Error(-2)));
        assert_eq!(seen[2], (11, Answer::Ack));
        // A dump's parser still stops on an error and counts nothing bad.
        let st = parse_into(&buf, &mut Vec::new());
        assert_eq!((st.error, st.done, st.bad), (Some(-2), false, 0));
        // Truncated: parsing stops, counted, no panic.
        assert_eq!(walk(&buf[..20], |_, _| {}), 1);
    }
}
