//! Captures written by the tests: pcap and pcapng containers around frames
//! that etherparse's `PacketBuilder` makes, so each test states its packets
//! and knows what the analysis must find.
#![allow(dead_code, clippy::unwrap_used)]

pub mod flow;

use etherparse::{IpHeaders, LinuxSllPacketType, PacketBuilder, PacketBuilderStep, VlanId};

/// The link layer a frame is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    Ethernet,
    Vlan,
    Sll,
    Sll2,
    Raw,
}

impl Link {
    pub fn linktype(self) -> u32 {
        match self {
            Link::Ethernet | Link::Vlan => 1,
            Link::Sll => 113,
            Link::Sll2 => 276,
            Link::Raw => 101,
        }
    }
}

/// One TCP segment to build.
#[derive(Clone, Debug)]
pub struct Seg {
    pub src: ([u8; 16], u16),
    pub dst: ([u8; 16], u16),
    pub v6: bool,
    pub ttl: u8,
    pub seq: u32,
    pub ack: Option<u32>,
    pub syn: bool,
    pub fin: bool,
    pub window: u16,
    pub options: Vec<u8>,
    pub len: usize,
    /// The IPv4 identification (etherparse writes 0).
    pub id: u16,
}

pub const CLIENT_V4: [u8; 4] = [10, 0, 0, 1];
pub const SERVER_V4: [u8; 4] = [10, 0, 0, 2];

fn v4(a: [u8; 4]) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..4].copy_from_slice(&a);
    b
}

fn v4_of(a: &[u8; 16]) -> [u8; 4] {
    [a[0], a[1], a[2], a[3]]
}

impl Seg {
    /// A segment from the client (10.0.0.1:40000) to the server
    /// (10.0.0.2:5201), or back when `from_client` is false.
    pub fn v4(from_client: bool, seq: u32) -> Seg {
        let (c, s) = ((v4(CLIENT_V4), 40000), (v4(SERVER_V4), 5201));
        let (src, dst) = if from_client { (c, s) } else { (s, c) };
        Seg {
            src,
            dst,
            v6: false,
            ttl: 64,
            seq,
            ack: None,
            syn: false,
            fin: false,
            window: 1000,
            options: Vec::new(),
            len: 0,
            id: 0,
        }
    }

    pub fn ack(mut self, a: u32) -> Seg {
        self.ack = Some(a);
        self
    }
    pub fn syn(mut self) -> Seg {
        self.syn = true;
        self
    }
    pub fn fin(mut self) -> Seg {
        self.fin = true;
        self
    }
    pub fn win(mut self, w: u16) -> Seg {
        self.window = w;
        self
    }
    pub fn len(mut self, n: usize) -> Seg {
        self.len = n;
        self
    }
    pub fn opts(mut self, o: &[u8]) -> Seg {
        self.options = o.to_vec();
        self
    }
    /// The same segment over IPv6: fd00::1 and fd00::2.
    pub fn v6(mut self) -> Seg {
        self.v6 = true;
        for a in [&mut self.src.0, &mut self.dst.0] {
            let last = a[3];
            *a = [0; 16];
            a[0] = 0xfd;
            a[15] = last;
        }
        self
    }
    pub fn ttl(mut self, t: u8) -> Seg {
        self.ttl = t;
        self
    }
    /// The IPv4 identification.
    pub fn id(mut self, id: u16) -> Seg {
        self.id = id;
        self
    }
    /// A timestamp option (NOP, NOP, TS), as Linux sends on every segment
    /// after a handshake that agreed on timestamps.
    pub fn ts(self, tsval: u32, tsecr: u32) -> Seg {
        let mut o = vec![1, 1, 8, 10];
        o.extend_from_slice(&tsval.to_be_bytes());
        o.extend_from_slice(&tsecr.to_be_bytes());
        self.opts(&o)
    }

    fn ip(&self, start: IpStart) -> PacketBuilderStep<IpHeaders> {
        if self.v6 {
            start.ipv6(self.src.0, self.dst.0, self.ttl)
        } else {
            start.ipv4(v4_of(&self.src.0), v4_of(&self.dst.0), self.ttl)
        }
    }

    /// The frame for `link`.
    pub fn frame(&self, link: Link) -> Vec<u8> {
        let (mac_a, mac_b) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        let ip = match link {
            Link::Ethernet => self.ip(IpStart::Eth(PacketBuilder::ethernet2(mac_a, mac_b))),
            Link::Vlan => self.ip(IpStart::Vlan(
                PacketBuilder::ethernet2(mac_a, mac_b).single_vlan(VlanId::try_new(42).unwrap()),
            )),
            Link::Sll => self.ip(IpStart::Sll(PacketBuilder::linux_sll(
                LinuxSllPacketType::OUTGOING,
                6,
                [2, 0, 0, 0, 0, 1, 0, 0],
            ))),
            Link::Raw | Link::Sll2 => self.ip(IpStart::Ip),
        };
        let mut b = ip.tcp(self.src.1, self.dst.1, self.seq, self.window);
        if self.syn {
            b = b.syn();
        }
        if let Some(a) = self.ack {
            b = b.ack(a);
        }
        if self.fin {
            b = b.fin();
        }
        if !self.options.is_empty() {
            b = b.options_raw(&self.options).unwrap();
        }
        let mut v = Vec::new();
        b.write(&mut v, &vec![0xab; self.len]).unwrap();
        if !self.v6 && self.id != 0 {
            let at = match link {
                Link::Ethernet => 14,
                Link::Vlan => 18,
                Link::Sll => 16,
                Link::Raw | Link::Sll2 => 0,
            };
            set_ipv4_id(&mut v[at..], self.id);
        }
        if link == Link::Sll2 {
            // SLL2: protocol, reserved, ifindex, ARPHRD, packet type,
            // address length, 8 address bytes; then the packet.
            let proto: u16 = if self.v6 { 0x86dd } else { 0x0800 };
            let mut h = proto.to_be_bytes().to_vec();
            h.extend_from_slice(&[0, 0, 0, 0, 0, 1, 0, 1, 4, 6, 2, 0, 0, 0, 0, 1, 0, 0]);
            h.extend_from_slice(&v);
            return h;
        }
        v
    }
}

/// Writes `id` into the IPv4 header at the start of `ip`, and the header's
/// checksum again (the TCP checksum does not cover it).
fn set_ipv4_id(ip: &mut [u8], id: u16) {
    ip[4..6].copy_from_slice(&id.to_be_bytes());
    ip[10..12].copy_from_slice(&[0, 0]);
    let words = usize::from(ip[0] & 0x0f) * 2;
    let mut sum: u32 = (0..words)
        .map(|i| u32::from(u16::from_be_bytes([ip[2 * i], ip[2 * i + 1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

/// Where the builder starts, before the IP header.
enum IpStart {
    Eth(PacketBuilderStep<etherparse::Ethernet2Header>),
    Vlan(PacketBuilderStep<etherparse::VlanHeader>),
    Sll(PacketBuilderStep<etherparse::LinuxSllHeader>),
    Ip,
}

impl IpStart {
    fn ipv4(self, s: [u8; 4], d: [u8; 4], ttl: u8) -> PacketBuilderStep<IpHeaders> {
        match self {
            IpStart::Eth(b) => b.ipv4(s, d, ttl),
            IpStart::Vlan(b) => b.ipv4(s, d, ttl),
            IpStart::Sll(b) => b.ipv4(s, d, ttl),
            IpStart::Ip => PacketBuilder::ipv4(s, d, ttl),
        }
    }
    fn ipv6(self, s: [u8; 16], d: [u8; 16], hl: u8) -> PacketBuilderStep<IpHeaders> {
        match self {
            IpStart::Eth(b) => b.ipv6(s, d, hl),
            IpStart::Vlan(b) => b.ipv6(s, d, hl),
            IpStart::Sll(b) => b.ipv6(s, d, hl),
            IpStart::Ip => PacketBuilder::ipv6(s, d, hl),
        }
    }
}

/// A legacy pcap file in memory.
pub struct Pcap {
    pub buf: Vec<u8>,
    nanos: bool,
}

impl Pcap {
    pub fn new(linktype: u32, nanos: bool) -> Pcap {
        Pcap::with_snaplen(linktype, nanos, 65535)
    }

    pub fn with_snaplen(linktype: u32, nanos: bool, snaplen: u32) -> Pcap {
        let magic: u32 = if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 };
        let mut buf = magic.to_le_bytes().to_vec();
        buf.extend_from_slice(&2u16.to_le_bytes());
        buf.extend_from_slice(&4u16.to_le_bytes());
        buf.extend_from_slice(&[0; 8]);
        buf.extend_from_slice(&snaplen.to_le_bytes());
        buf.extend_from_slice(&linktype.to_le_bytes());
        Pcap { buf, nanos }
    }

    /// A record of `frame` at `ts_ns`, cut to `caplen` bytes if given.
    pub fn record_cut(&mut self, ts_ns: u64, frame: &[u8], caplen: usize) {
        let sec = ts_ns / 1_000_000_000;
        let frac = ts_ns % 1_000_000_000;
        let frac = if self.nanos { frac } else { frac / 1000 };
        let caplen = caplen.min(frame.len());
        self.buf.extend_from_slice(&(sec as u32).to_le_bytes());
        self.buf.extend_from_slice(&(frac as u32).to_le_bytes());
        self.buf.extend_from_slice(&(caplen as u32).to_le_bytes());
        self.buf
            .extend_from_slice(&(frame.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(&frame[..caplen]);
    }

    pub fn record(&mut self, ts_ns: u64, frame: &[u8]) {
        self.record_cut(ts_ns, frame, frame.len());
    }
}

/// A pcapng file in memory (little-endian).
pub struct PcapNg {
    pub buf: Vec<u8>,
}

impl PcapNg {
    pub fn new() -> PcapNg {
        let mut p = PcapNg { buf: Vec::new() };
        p.section();
        p
    }

    fn block(&mut self, kind: u32, body: &[u8]) {
        let mut body = body.to_vec();
        while body.len() % 4 != 0 {
            body.push(0);
        }
        let len = (body.len() + 12) as u32;
        self.buf.extend_from_slice(&kind.to_le_bytes());
        self.buf.extend_from_slice(&len.to_le_bytes());
        self.buf.extend_from_slice(&body);
        self.buf.extend_from_slice(&len.to_le_bytes());
    }

    /// A new section: it forgets the interfaces before it.
    pub fn section(&mut self) {
        let mut b = 0x1a2b_3c4du32.to_le_bytes().to_vec();
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&(-1i64).to_le_bytes());
        self.block(0x0a0d_0d0a, &b);
    }

    /// An interface; `tsresol` is the if_tsresol option (none: µs).
    pub fn interface(&mut self, linktype: u16, tsresol: Option<u8>) {
        let mut b = linktype.to_le_bytes().to_vec();
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        if let Some(r) = tsresol {
            b.extend_from_slice(&9u16.to_le_bytes());
            b.extend_from_slice(&1u16.to_le_bytes());
            b.extend_from_slice(&[r, 0, 0, 0]);
            b.extend_from_slice(&[0, 0, 0, 0]);
        }
        self.block(1, &b);
    }

    /// An enhanced packet block on interface `if_id`, `ts` in its units.
    pub fn packet(&mut self, if_id: u32, ts: u64, frame: &[u8]) {
        let mut b = if_id.to_le_bytes().to_vec();
        b.extend_from_slice(&((ts >> 32) as u32).to_le_bytes());
        b.extend_from_slice(&(ts as u32).to_le_bytes());
        b.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        b.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        b.extend_from_slice(frame);
        self.block(6, &b);
    }
}

/// The options of a Linux SYN: MSS, SACK permitted, timestamps, NOP,
/// window scale `shift`.
pub fn linux_syn_options(mss: u16, shift: u8) -> Vec<u8> {
    let m = mss.to_be_bytes();
    vec![
        2, 4, m[0], m[1], 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, shift,
    ]
}

pub const MS: u64 = 1_000_000;
/// A base time: 2026-01-01 00:00:00 UTC.
pub const T0: u64 = 1_767_225_600 * 1_000_000_000;

/// The handshake of a client (ISN 1000, wscale 7, MSS 1460) and a server
/// (ISN 5000, wscale 9, MSS 1400): SYN at T0, SYN-ACK at +10 ms, ACK at
/// +12 ms. Returns (ts, segment) for the caller to frame.
pub fn handshake() -> Vec<(u64, Seg)> {
    vec![
        (
            T0,
            Seg::v4(true, 1000)
                .syn()
                .win(64240)
                .opts(&linux_syn_options(1460, 7))
                .ttl(61),
        ),
        (
            T0 + 10 * MS,
            Seg::v4(false, 5000)
                .syn()
                .ack(1001)
                .win(65160)
                .opts(&linux_syn_options(1400, 9))
                .ttl(120),
        ),
        (T0 + 12 * MS, Seg::v4(true, 1001).ack(5001).win(502)),
    ]
}

/// A router's ICMP "fragmentation needed" (next-hop MTU 1400) to the
/// client, as an Ethernet frame quoting the first 28 bytes (IP header and 8
/// of TCP) of `quoted`, a raw IPv4 segment.
pub fn icmp_too_big(quoted: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    PacketBuilder::ethernet2([2; 6], [4; 6])
        .ipv4([192, 0, 2, 1], CLIENT_V4, 64)
        .icmpv4_raw(3, 4, [0, 0, 0x05, 0x78])
        .write(&mut v, &quoted[..28])
        .expect("an ICMP frame");
    v
}

/// A pcap (Ethernet, µs) of `segs`. Each IPv4 packet that names no IP ID
/// gets its own (its place in `segs`, from 1), as a sender numbers the
/// packets it sends: two segments alike are two sends, not one packet
/// captured twice (see `copies` in the crate), unless a test makes the
/// copy on purpose.
pub fn pcap_of(segs: &[(u64, Seg)]) -> Vec<u8> {
    let mut p = Pcap::new(1, false);
    for (i, (ts, s)) in segs.iter().enumerate() {
        let mut s = s.clone();
        if s.id == 0 {
            s.id = (i as u16).wrapping_add(1).max(1);
        }
        p.record(*ts, &s.frame(Link::Ethernet));
    }
    p.buf
}

pub fn analyze(bytes: &[u8]) -> plumb_capture::Analysis {
    plumb_capture::analyze(bytes, plumb_record::capture::Limits::default()).unwrap()
}

/// After the handshake, client data: four segments of 1000 bytes, the first
/// lost: the server sends three duplicate ACKs, the client resends fast;
/// later one resent after a 300 ms silence (timeout-like); one resent after
/// it was acknowledged (spurious).
pub fn retransmissions() -> Vec<(u64, Seg)> {
    let mut segs = handshake();
    let d = |t: u64, seq: u32| (T0 + t * MS, Seg::v4(true, seq).ack(5001).len(1000));
    let ack = |t: u64, a: u32| (T0 + t * MS, Seg::v4(false, 5001).ack(a).win(1000));
    segs.push(d(20, 1001));
    segs.push(d(21, 2001));
    segs.push(d(22, 3001));
    segs.push(d(23, 4001));
    segs.push(ack(30, 1001)); // first ACK for 1001: not a duplicate
    segs.push(ack(31, 1001));
    segs.push(ack(32, 1001));
    segs.push(ack(33, 1001));
    segs.push(d(34, 1001)); // fast retransmit
    segs.push(ack(40, 5001));
    segs.push(d(41, 5001));
    segs.push(d(342, 5001)); // after 301 ms of silence: timeout-like
    segs.push(ack(350, 6001));
    segs.push(d(351, 2001)); // already acknowledged: spurious
    segs
}
