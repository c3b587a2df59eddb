//! Wire formats the emulator has to look inside.
//!
//! Owns: the `virtio_net_hdr` that TUN prepends to every packet when opened with
//! `IFF_VNET_HDR`, the [`Layout`] of a (GSO) packet in wire-sized segments, the
//! software segmenter used when the emulated link drops only part of a GSO
//! packet, and Internet checksums (RFC 1071).
//!
//! Parsing is defensive: a packet the emulator cannot make sense of is never
//! an error, it is simply treated as one opaque frame of its own length.
//! Nothing here panics on malformed input.

/// Size of the virtio header we ask TUN for (`TUNSETVNETHDRSZ`): the 12-byte
/// `virtio_net_hdr_mrg_rxbuf` layout, whose trailing `num_buffers` TUN ignores.
/// 12 rather than 10 keeps the IP header 4-byte aligned in our buffers.
pub const VNET_HDR_LEN: usize = 12;

/// Per-frame Ethernet cost on the emulated wire, in bytes: 14 header + 4 FCS +
/// 8 preamble/SFD + 12 inter-frame gap (IEEE 802.3 clause 4.4.2).
pub const ETHERNET_OVERHEAD: u32 = 38;

/// Parsed `struct virtio_net_hdr` (virtio spec 1.2 §5.1.6; little-endian on
/// every architecture we run on, which is what TUN uses unless told otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VnetHdr {
    /// `VIRTIO_NET_HDR_F_*` bits.
    pub flags: u8,
    /// `VIRTIO_NET_HDR_GSO_*` type, possibly or-ed with [`VnetHdr::GSO_ECN`].
    pub gso_type: u8,
    /// Length of headers to copy into the linear part; a hint only (TUN sets it
    /// to the skb's linear length, which may include payload).
    pub hdr_len: u16,
    /// Payload bytes per segment when `gso_type` is not `GSO_NONE`.
    pub gso_size: u16,
    /// Where checksumming starts, from the start of the IP header.
    pub csum_start: u16,
    /// Where the checksum is stored, relative to `csum_start`.
    pub csum_offset: u16,
}

impl VnetHdr {
    /// The L4 checksum is partial: fill in from `csum_start`, store at `csum_offset`.
    pub const NEEDS_CSUM: u8 = 1;
    /// The checksum has been verified.
    pub const DATA_VALID: u8 = 2;
    /// Not a GSO packet.
    pub const GSO_NONE: u8 = 0;
    /// TCP over IPv4 segmentation offload.
    pub const GSO_TCPV4: u8 = 1;
    /// Legacy UDP fragmentation offload (UFO).
    pub const GSO_UDP: u8 = 3;
    /// TCP over IPv6 segmentation offload.
    pub const GSO_TCPV6: u8 = 4;
    /// UDP segmentation offload (USO, `UDP_SEGMENT`), IPv4 or IPv6.
    pub const GSO_UDP_L4: u8 = 5;
    /// Flag: the TCP stream uses ECN (CWR must go on the first segment only).
    pub const GSO_ECN: u8 = 0x80;

    /// Reads a header from the first 10 bytes of `b`; `None` if `b` is shorter.
    pub fn parse(b: &[u8]) -> Option<VnetHdr> {
        if b.len() < 10 {
            return None;
        }
        let le = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Some(VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: le(2),
            gso_size: le(4),
            csum_start: le(6),
            csum_offset: le(8),
        })
    }

    /// Writes the header into the first 10 bytes of `b` and zeroes the rest up
    /// to [`VNET_HDR_LEN`] (the `num_buffers` field).
    ///
    /// # Panics
    /// If `b` is shorter than 10 bytes.
    pub fn emit(&self, b: &mut [u8]) {
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
        let end = b.len().min(VNET_HDR_LEN);
        b[10..end].fill(0);
    }

    /// The GSO type without the ECN flag.
    pub fn gso_kind(&self) -> GsoKind {
        match self.gso_type & !Self::GSO_ECN {
            Self::GSO_NONE => GsoKind::None,
            Self::GSO_TCPV4 => GsoKind::TcpV4,
            Self::GSO_TCPV6 => GsoKind::TcpV6,
            Self::GSO_UDP_L4 => GsoKind::UdpL4,
            other => GsoKind::Other(other),
        }
    }
}

/// What kind of segmentation a GSO packet asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GsoKind {
    /// A single packet.
    None,
    /// TCP/IPv4 (TSO).
    TcpV4,
    /// TCP/IPv6 (TSO6).
    TcpV6,
    /// UDP, either IP version (USO).
    UdpL4,
    /// Something we do not split (e.g. legacy UFO).
    Other(u8),
}

/// IP version of a splittable packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpVersion {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

/// Transport protocol of a splittable packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
}

/// Where the headers of a GSO packet are, once checked to be consistent enough
/// for [`write_segment`] to cut the packet up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitInfo {
    /// IP version.
    pub ip: IpVersion,
    /// Transport protocol.
    pub transport: Transport,
    /// Offset of the TCP/UDP header from the start of the IP header.
    pub l4_offset: u16,
}

/// A packet seen as the wire-sized segments it stands for.
///
/// A plain packet is one segment of its own length. A GSO packet of `P` payload
/// bytes with segment size `G` is `ceil(P / G)` segments, each carrying a copy
/// of the `header_len` bytes of IP and TCP/UDP headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Number of wire-sized segments (≥ 1).
    pub segments: u32,
    /// IP + L4 header bytes repeated in every segment; the whole packet if
    /// `segments == 1` and the packet is not GSO.
    pub header_len: u32,
    /// Payload bytes per segment (0 for a non-GSO packet).
    pub gso_size: u32,
    /// Payload bytes shared out among segments (0 for a non-GSO packet).
    pub payload_len: u32,
    /// Present when the packet can be cut up by [`write_segment`].
    pub split: Option<SplitInfo>,
}

impl Layout {
    /// A non-GSO packet of `len` IP bytes.
    pub fn single(len: usize) -> Layout {
        Layout {
            segments: 1,
            header_len: clamp_u32(len),
            gso_size: 0,
            payload_len: 0,
            split: None,
        }
    }

    /// Works out the layout of the IP packet `ip`, given the virtio header
    /// that came with it (if TUN was opened with `IFF_VNET_HDR`).
    ///
    /// Unknown or inconsistent GSO metadata yields [`Layout::single`], so the
    /// packet is charged and dropped as one unit and never cut up.
    pub fn of(ip: &[u8], vnet: Option<&VnetHdr>) -> Layout {
        let single = Layout::single(ip.len());
        let Some(h) = vnet else { return single };
        let kind = h.gso_kind();
        if kind == GsoKind::None || h.gso_size == 0 || ip.is_empty() {
            return single;
        }
        let version = match ip[0] >> 4 {
            4 => IpVersion::V4,
            6 => IpVersion::V6,
            _ => return single,
        };
        let transport = match (kind, version) {
            (GsoKind::TcpV4, IpVersion::V4) | (GsoKind::TcpV6, IpVersion::V6) => Transport::Tcp,
            (GsoKind::UdpL4, _) => Transport::Udp,
            _ => return single,
        };
        // Prefer the kernel's csum_start: it already skipped IPv4 options and
        // IPv6 extension headers.
        let l4_offset = if h.flags & VnetHdr::NEEDS_CSUM != 0 && h.csum_start != 0 {
            usize::from(h.csum_start)
        } else {
            match version {
                IpVersion::V4 => usize::from(ip[0] & 0x0f) * 4,
                IpVersion::V6 => 40,
            }
        };
        let min_ip = match version {
            IpVersion::V4 => 20,
            IpVersion::V6 => 40,
        };
        if l4_offset < min_ip {
            return single;
        }
        let l4_len = match transport {
            Transport::Tcp => match ip.get(l4_offset + 12) {
                Some(&b) if (b >> 4) >= 5 => usize::from(b >> 4) * 4,
                _ => return single,
            },
            Transport::Udp => 8,
        };
        let header_len = l4_offset + l4_len;
        if header_len >= ip.len() || ip.len() > u32::MAX as usize {
            return single;
        }
        let payload_len = (ip.len() - header_len) as u32;
        let gso_size = u32::from(h.gso_size);
        Layout {
            segments: payload_len.div_ceil(gso_size),
            header_len: header_len as u32,
            gso_size,
            payload_len,
            split: Some(SplitInfo {
                ip: version,
                transport,
                l4_offset: l4_offset as u16,
            }),
        }
    }

    /// Payload bytes in segment `i` (0 for a non-GSO packet).
    pub fn segment_payload(&self, i: u32) -> u32 {
        if self.gso_size == 0 {
            return 0;
        }
        let start = i.saturating_mul(self.gso_size);
        self.payload_len.saturating_sub(start).min(self.gso_size)
    }

    /// IP bytes of segment `i` as it would appear on the wire.
    pub fn segment_ip_len(&self, i: u32) -> u32 {
        self.header_len + self.segment_payload(i)
    }

    /// Bytes segment `i` occupies on the emulated Ethernet wire.
    pub fn segment_wire_len(&self, i: u32) -> u32 {
        self.segment_ip_len(i) + ETHERNET_OVERHEAD
    }

    /// IP bytes of all segments together (headers counted once per segment).
    pub fn total_ip_len(&self) -> u64 {
        u64::from(self.segments) * u64::from(self.header_len) + u64::from(self.payload_len)
    }
}

fn clamp_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Buffer size that always fits a frame written by [`write_segments`].
pub const MAX_SEGMENT_FRAME: usize = VNET_HDR_LEN + 65_535;

/// Writes segment `index` of the GSO packet `ip` into `out` as a plain
/// (non-GSO) TUN frame; see [`write_segments`].
pub fn write_segment(ip: &[u8], layout: &Layout, index: u32, out: &mut [u8]) -> Option<usize> {
    write_segments(ip, layout, index, 1, out)
}

/// Writes segments `first .. first + count` of the GSO packet `ip` (laid out
/// as `layout`) into `out` as one TUN frame, and returns the frame's length.
///
/// One segment becomes a plain packet; a longer run stays a (smaller) GSO
/// packet with the same `gso_size`, which the receiving stack takes whole —
/// so dropping one segment of a 64 KiB packet costs two writes, not 44.
///
/// The frame is a [`VNET_HDR_LEN`]-byte virtio header saying `NEEDS_CSUM`
/// with `csum_start`/`csum_offset` pointing at the TCP/UDP checksum, followed
/// by the IP packet: headers copied, then fixed up the way the kernel's own
/// GSO does it (`tcp_gso_segment`, `inet_gso_segment`, `ipv6_gso_segment`):
/// - IPv4 total length and header checksum; the IP ID is the original plus
///   `first` (the kernel increments it per segment);
/// - IPv6 payload length;
/// - TCP sequence number advanced by `first × gso_size`; FIN and PSH kept only
///   if the run ends with the last segment, CWR only if it starts with the first;
/// - UDP length;
/// - the L4 checksum field seeded with the pseudo-header sum, as
///   `CHECKSUM_PARTIAL` expects (the receiver trusts it; [`complete_checksum`]
///   finishes it when a full checksum is needed).
///
/// Returns `None` (and writes nothing meaningful) if the layout is not
/// splittable, the run is empty or out of range, `ip` does not match
/// `layout`, or `out` is too small.
pub fn write_segments(
    ip: &[u8],
    layout: &Layout,
    first: u32,
    count: u32,
    out: &mut [u8],
) -> Option<usize> {
    let split = layout.split?;
    let gso_len = u64::from(layout.header_len) + u64::from(layout.payload_len);
    let end = first.checked_add(count)?;
    if count == 0 || end > layout.segments || ip.len() as u64 != gso_len {
        return None;
    }
    let hl = layout.header_len as usize;
    let gso = layout.gso_size as usize;
    let start = hl + first as usize * gso;
    let pay: usize = (first..end)
        .map(|i| layout.segment_payload(i) as usize)
        .sum();
    let seg_len = hl + pay;
    let frame_len = VNET_HDR_LEN + seg_len;
    let frame = out.get_mut(..frame_len)?;
    let (vnet, p) = frame.split_at_mut(VNET_HDR_LEN);
    p[..hl].copy_from_slice(&ip[..hl]);
    p[hl..].copy_from_slice(ip.get(start..start + pay)?);

    let (src, dst): (&[u8], &[u8]) = match split.ip {
        IpVersion::V4 => {
            let ihl = usize::from(p[0] & 0x0f) * 4;
            put16(p, 2, seg_len as u16);
            let id = get16(p, 4).wrapping_add(first as u16);
            put16(p, 4, id);
            put16(p, 10, 0);
            let c = internet_checksum(&p[..ihl]);
            put16(p, 10, c);
            (&ip[12..16], &ip[16..20])
        }
        IpVersion::V6 => {
            put16(p, 4, (seg_len - 40) as u16);
            (&ip[8..24], &ip[24..40])
        }
    };
    let l4 = usize::from(split.l4_offset);
    let l4_len = seg_len - l4;
    let (proto, csum_offset) = match split.transport {
        Transport::Tcp => {
            let seq = get32(p, l4 + 4).wrapping_add(first.wrapping_mul(layout.gso_size));
            put32(p, l4 + 4, seq);
            let mut flags = p[l4 + 13];
            if end < layout.segments {
                flags &= !(TCP_FIN | TCP_PSH);
            }
            if first > 0 {
                flags &= !TCP_CWR;
            }
            p[l4 + 13] = flags;
            (6u8, 16u16)
        }
        Transport::Udp => {
            // A USO packet's UDP length covers the whole run, as in the
            // kernel's own (udp_send_skb); segmentation rewrites it per segment.
            put16(p, l4 + 4, l4_len as u16);
            (17u8, 6u16)
        }
    };
    let seed = fold(pseudo_header_sum(src, dst, proto, l4_len as u32));
    put16(p, l4 + usize::from(csum_offset), seed);
    let vh = if count == 1 {
        VnetHdr {
            flags: VnetHdr::NEEDS_CSUM,
            gso_type: VnetHdr::GSO_NONE,
            hdr_len: hl as u16,
            gso_size: 0,
            csum_start: split.l4_offset,
            csum_offset,
        }
    } else {
        let gso_type = match (split.transport, split.ip) {
            (Transport::Tcp, IpVersion::V4) => VnetHdr::GSO_TCPV4,
            (Transport::Tcp, IpVersion::V6) => VnetHdr::GSO_TCPV6,
            (Transport::Udp, _) => VnetHdr::GSO_UDP_L4,
        };
        VnetHdr {
            flags: VnetHdr::NEEDS_CSUM,
            gso_type,
            hdr_len: hl as u16,
            gso_size: layout.gso_size as u16,
            csum_start: split.l4_offset,
            csum_offset,
        }
    };
    vh.emit(vnet);
    Some(frame_len)
}

/// TCP FIN flag.
pub const TCP_FIN: u8 = 0x01;
/// TCP PSH flag.
pub const TCP_PSH: u8 = 0x08;
/// TCP CWR flag.
pub const TCP_CWR: u8 = 0x80;

fn get16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}
fn put16(b: &mut [u8], i: usize, v: u16) {
    b[i..i + 2].copy_from_slice(&v.to_be_bytes());
}
fn get32(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}
fn put32(b: &mut [u8], i: usize, v: u32) {
    b[i..i + 4].copy_from_slice(&v.to_be_bytes());
}

/// One's-complement sum of `data` as big-endian 16-bit words (an odd trailing
/// byte is padded with zero), added to `initial`; not yet folded.
pub fn ones_sum(data: &[u8], initial: u64) -> u64 {
    let mut sum = initial;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        sum += u64::from(u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
    }
    let rest = chunks.remainder();
    let mut i = 0;
    while i + 1 < rest.len() {
        sum += u64::from(u16::from_be_bytes([rest[i], rest[i + 1]]));
        i += 2;
    }
    if i < rest.len() {
        sum += u64::from(rest[i]) << 8;
    }
    sum
}

/// Folds a wide one's-complement sum to 16 bits (not complemented).
pub fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// The Internet checksum of `data` (RFC 1071): complement of the folded sum.
pub fn internet_checksum(data: &[u8]) -> u16 {
    !fold(ones_sum(data, 0))
}

/// Sum of the TCP/UDP pseudo-header (RFC 793 §3.1 for IPv4, RFC 8200 §8.1 for
/// IPv6; the two differ only in field widths, which do not change the sum).
pub fn pseudo_header_sum(src: &[u8], dst: &[u8], proto: u8, l4_len: u32) -> u64 {
    let s = ones_sum(src, 0);
    let s = ones_sum(dst, s);
    s + u64::from(proto) + u64::from(l4_len >> 16) + u64::from(l4_len & 0xffff)
}

/// Finishes a `NEEDS_CSUM` frame (virtio header + IP packet) in place: sums
/// from `csum_start` to the end and stores the result at `csum_offset`, as a
/// NIC would. Returns `false` if the frame has no partial checksum or its
/// offsets are out of range.
pub fn complete_checksum(frame: &mut [u8]) -> bool {
    let Some(h) = VnetHdr::parse(frame) else {
        return false;
    };
    if h.flags & VnetHdr::NEEDS_CSUM == 0 || frame.len() < VNET_HDR_LEN {
        return false;
    }
    let ip = &mut frame[VNET_HDR_LEN..];
    let start = usize::from(h.csum_start);
    let at = start + usize::from(h.csum_offset);
    if at + 2 > ip.len() {
        return false;
    }
    let c = !fold(ones_sum(&ip[start..], 0));
    // RFC 768: a computed UDP checksum of zero is sent as all ones.
    let c = if c == 0 { 0xffff } else { c };
    put16(ip, at, c);
    true
}

/// Verifies the full TCP or UDP checksum of the IPv4/IPv6 packet `ip`
/// (no extension headers). For tests and diagnostics, not the data path.
pub fn l4_checksum_ok(ip: &[u8]) -> bool {
    let (src, dst, proto, l4) = match ip.first().map(|b| b >> 4) {
        Some(4) if ip.len() >= 20 => {
            let ihl = usize::from(ip[0] & 0x0f) * 4;
            (&ip[12..16], &ip[16..20], ip[9], ihl)
        }
        Some(6) if ip.len() >= 40 => (&ip[8..24], &ip[24..40], ip[6], 40),
        _ => return false,
    };
    if l4 > ip.len() {
        return false;
    }
    let len = (ip.len() - l4) as u32;
    let sum = ones_sum(&ip[l4..], pseudo_header_sum(src, dst, proto, len));
    fold(sum) == 0xffff
}

#[cfg(test)]
pub(crate) mod testpkt {
    //! Synthetic packets for unit tests.
    use super::*;

    /// Parameters of a synthetic GSO packet.
    pub struct Spec {
        pub v6: bool,
        pub udp: bool,
        pub payload: usize,
        pub gso_size: u16,
        pub seq: u32,
        pub ip_id: u16,
        pub tcp_flags: u8,
    }

    impl Default for Spec {
        fn default() -> Self {
            Spec {
                v6: false,
                udp: false,
                payload: 10_000,
                gso_size: 1448,
                seq: 0xffff_f000,
                ip_id: 0xfffe,
                tcp_flags: 0x18 | TCP_FIN | TCP_CWR,
            }
        }
    }

    /// Cuts a TUN frame (GSO or not) into the plain frames of its segments.
    pub fn resegment(frame: &[u8]) -> Vec<Vec<u8>> {
        let h = VnetHdr::parse(frame).expect("virtio header");
        let ip = &frame[VNET_HDR_LEN..];
        let l = Layout::of(ip, Some(&h));
        if l.split.is_none() {
            return vec![frame.to_vec()];
        }
        let mut out = vec![0u8; MAX_SEGMENT_FRAME];
        (0..l.segments)
            .map(|i| {
                let n = write_segment(ip, &l, i, &mut out).expect("segment");
                out[..n].to_vec()
            })
            .collect()
    }

    /// TCP sequence number of a frame with a virtio header and IPv4.
    pub fn seq_of(frame: &[u8]) -> u32 {
        let tcp = &frame[VNET_HDR_LEN + 20..];
        u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]])
    }

    /// Builds `[virtio hdr][IP][TCP 32 B with timestamps | UDP][payload]` with
    /// a patterned payload and the checksum field seeded as the kernel does.
    pub fn build(spec: &Spec) -> Vec<u8> {
        let ip_len = if spec.v6 { 40 } else { 20 };
        let l4_len = if spec.udp { 8 } else { 32 };
        let total = ip_len + l4_len + spec.payload;
        let mut f = vec![0u8; VNET_HDR_LEN + total];
        let proto = if spec.udp { 17 } else { 6 };
        {
            let p = &mut f[VNET_HDR_LEN..];
            if spec.v6 {
                p[0] = 0x60;
                put16(p, 4, (total - 40) as u16);
                p[6] = proto;
                p[7] = 64;
                p[8..24]
                    .copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
                p[24..40]
                    .copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
            } else {
                p[0] = 0x45;
                put16(p, 2, total as u16);
                put16(p, 4, spec.ip_id);
                p[6] = 0x40; // DF
                p[8] = 64;
                p[9] = proto;
                p[12..16].copy_from_slice(&[198, 18, 0, 1]);
                p[16..20].copy_from_slice(&[198, 18, 0, 2]);
                let c = internet_checksum(&p[..20]);
                put16(p, 10, c);
            }
            let l4 = ip_len;
            put16(p, l4, 40000);
            put16(p, l4 + 2, 5201);
            if spec.udp {
                put16(p, l4 + 4, (l4_len + spec.payload) as u16);
            } else {
                put32(p, l4 + 4, spec.seq);
                put32(p, l4 + 8, 12345);
                p[l4 + 12] = 8 << 4;
                p[l4 + 13] = spec.tcp_flags;
                put16(p, l4 + 14, 512);
                // NOP NOP TS
                p[l4 + 20] = 1;
                p[l4 + 21] = 1;
                p[l4 + 22] = 8;
                p[l4 + 23] = 10;
            }
            for (i, b) in p[ip_len + l4_len..].iter_mut().enumerate() {
                *b = (i % 251) as u8;
            }
            let (src, dst) = if spec.v6 {
                (8..24, 24..40)
            } else {
                (12..16, 16..20)
            };
            let seed = fold(pseudo_header_sum(
                &p[src],
                &p[dst],
                proto,
                (l4_len + spec.payload) as u32,
            ));
            put16(p, l4 + if spec.udp { 6 } else { 16 }, seed);
        }
        let gso_type = match (spec.udp, spec.v6) {
            (true, _) => VnetHdr::GSO_UDP_L4,
            (false, false) => VnetHdr::GSO_TCPV4,
            (false, true) => VnetHdr::GSO_TCPV6,
        };
        VnetHdr {
            flags: VnetHdr::NEEDS_CSUM,
            gso_type,
            hdr_len: (ip_len + l4_len) as u16,
            gso_size: spec.gso_size,
            csum_start: ip_len as u16,
            csum_offset: if spec.udp { 6 } else { 16 },
        }
        .emit(&mut f);
        f
    }
}

#[cfg(test)]
mod tests {
    use super::testpkt::{build, Spec};
    use super::*;

    fn check_segments(spec: &Spec) {
        let frame = build(spec);
        let h = VnetHdr::parse(&frame).expect("header");
        let ip = &frame[VNET_HDR_LEN..];
        let layout = Layout::of(ip, Some(&h));
        let gso = usize::from(spec.gso_size);
        assert_eq!(layout.segments as usize, spec.payload.div_ceil(gso));
        let mut out = vec![0u8; MAX_SEGMENT_FRAME];
        let mut payload = Vec::new();
        let ip_hl = if spec.v6 { 40 } else { 20 };
        let l4_hl = if spec.udp { 8 } else { 32 };
        for i in 0..layout.segments {
            let n = write_segment(ip, &layout, i, &mut out).expect("segment");
            let seg = &mut out[..n];
            let sh = VnetHdr::parse(seg).expect("seg header");
            assert_eq!(sh.flags, VnetHdr::NEEDS_CSUM);
            assert_eq!(sh.gso_type, VnetHdr::GSO_NONE);
            assert_eq!(usize::from(sh.csum_start), ip_hl);
            let sp = &seg[VNET_HDR_LEN..];
            let seg_pay = (spec.payload - i as usize * gso).min(gso);
            assert_eq!(sp.len(), ip_hl + l4_hl + seg_pay);
            assert_eq!(layout.segment_ip_len(i) as usize, sp.len());
            if spec.v6 {
                assert_eq!(usize::from(get16(sp, 4)), sp.len() - 40);
            } else {
                assert_eq!(usize::from(get16(sp, 2)), sp.len());
                assert_eq!(get16(sp, 4), spec.ip_id.wrapping_add(i as u16));
                assert_eq!(internet_checksum(&sp[..20]), 0, "IPv4 header checksum");
            }
            let l4 = ip_hl;
            if spec.udp {
                assert_eq!(usize::from(get16(sp, l4 + 4)), l4_hl + seg_pay);
            } else {
                let seq = get32(sp, l4 + 4);
                assert_eq!(seq, spec.seq.wrapping_add(i * u32::from(spec.gso_size)));
                let flags = sp[l4 + 13];
                let last = i + 1 == layout.segments;
                assert_eq!(flags & TCP_FIN != 0, last && spec.tcp_flags & TCP_FIN != 0);
                assert_eq!(flags & TCP_PSH != 0, last && spec.tcp_flags & TCP_PSH != 0);
                assert_eq!(
                    flags & TCP_CWR != 0,
                    i == 0 && spec.tcp_flags & TCP_CWR != 0
                );
                assert_eq!(flags & 0x10, 0x10, "ACK kept on every segment");
            }
            payload.extend_from_slice(&sp[ip_hl + l4_hl..]);
            // A partial checksum is not yet valid; completing it must make it so.
            assert!(complete_checksum(seg));
            assert!(l4_checksum_ok(&seg[VNET_HDR_LEN..]), "segment {i} checksum");
        }
        assert_eq!(payload, ip[ip_hl + l4_hl..], "payload reassembles");
        assert!(write_segment(ip, &layout, layout.segments, &mut out).is_none());
    }

    #[test]
    fn segments_tcp_v4() {
        check_segments(&Spec::default());
    }

    #[test]
    fn segments_tcp_v6() {
        check_segments(&Spec {
            v6: true,
            ..Spec::default()
        });
    }

    #[test]
    fn segments_udp_both() {
        for v6 in [false, true] {
            check_segments(&Spec {
                v6,
                udp: true,
                payload: 5000,
                gso_size: 1200,
                ..Spec::default()
            });
        }
    }

    #[test]
    fn exact_multiple_and_single_segment() {
        check_segments(&Spec {
            payload: 1448 * 3,
            ..Spec::default()
        });
        check_segments(&Spec {
            payload: 100,
            ..Spec::default()
        });
    }

    /// A run written as a smaller GSO packet must segment into exactly the
    /// segments the original would have given.
    #[test]
    fn runs_resegment_like_the_original() {
        for spec in [
            Spec::default(),
            Spec {
                v6: true,
                ..Spec::default()
            },
            Spec {
                udp: true,
                payload: 9000,
                gso_size: 1000,
                ..Spec::default()
            },
        ] {
            let frame = build(&spec);
            let h = VnetHdr::parse(&frame).expect("header");
            let ip = &frame[VNET_HDR_LEN..];
            let layout = Layout::of(ip, Some(&h));
            let n = layout.segments;
            let mut run = vec![0u8; MAX_SEGMENT_FRAME];
            let mut a = vec![0u8; MAX_SEGMENT_FRAME];
            let mut b = vec![0u8; MAX_SEGMENT_FRAME];
            for (first, count) in [(0, 2), (1, n - 1), (2, 3), (0, n)] {
                let len = write_segments(ip, &layout, first, count, &mut run).expect("run");
                let rh = VnetHdr::parse(&run).expect("run header");
                assert_eq!(rh.gso_kind(), h.gso_kind());
                let rip = &run[VNET_HDR_LEN..len];
                let rl = Layout::of(rip, Some(&rh));
                assert_eq!(rl.segments, count);
                let mut whole = run[..len].to_vec();
                assert!(complete_checksum(&mut whole));
                assert!(l4_checksum_ok(&whole[VNET_HDR_LEN..]), "run checksum");
                for k in 0..count {
                    let la = write_segment(rip, &rl, k, &mut a).expect("a");
                    let lb = write_segment(ip, &layout, first + k, &mut b).expect("b");
                    assert_eq!(&a[..la], &b[..lb], "run ({first}, {count}) segment {k}");
                }
            }
            assert!(write_segments(ip, &layout, 1, n, &mut run).is_none());
            assert!(write_segments(ip, &layout, 0, 0, &mut run).is_none());
        }
    }

    #[test]
    fn layout_64k_tso() {
        let frame = build(&Spec {
            payload: 65_535 - 52,
            ..Spec::default()
        });
        let h = VnetHdr::parse(&frame).expect("header");
        let l = Layout::of(&frame[VNET_HDR_LEN..], Some(&h));
        assert_eq!(l.header_len, 52);
        assert_eq!(l.segments, 46);
        assert_eq!(l.segment_ip_len(0), 1500);
        assert_eq!(l.segment_wire_len(0), 1538);
        assert_eq!(l.segment_ip_len(45), 52 + (65_483 - 45 * 1448));
        assert_eq!(l.total_ip_len(), 46 * 52 + 65_483);
    }

    #[test]
    fn garbage_is_one_opaque_frame() {
        let h = VnetHdr {
            gso_type: VnetHdr::GSO_TCPV4,
            gso_size: 100,
            ..VnetHdr::default()
        };
        for junk in [&[][..], &[0x45][..], &[0x45; 30][..], &[0x99; 200][..]] {
            let l = Layout::of(junk, Some(&h));
            assert_eq!(l.segments, 1);
            assert!(l.split.is_none());
        }
        assert_eq!(Layout::of(&[0x45; 200], None), Layout::single(200));
    }

    #[test]
    fn checksum_known_value() {
        // RFC 1071 §3 example words.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(ones_sum(&data, 0)), 0xddf2);
    }

    #[test]
    fn vnet_roundtrip() {
        let h = VnetHdr {
            flags: 1,
            gso_type: 0x81,
            hdr_len: 66,
            gso_size: 1448,
            csum_start: 20,
            csum_offset: 16,
        };
        let mut b = [0xaau8; VNET_HDR_LEN];
        h.emit(&mut b);
        assert_eq!(VnetHdr::parse(&b), Some(h));
        assert_eq!(h.gso_kind(), GsoKind::TcpV4);
        assert_eq!(&b[10..], &[0, 0]);
    }
}
