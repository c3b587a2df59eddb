//! The bytes of a handshake: the SYN `plumb handshake` sends from a raw
//! socket and the SYN-ACK it reads back. Pure: no socket, no clock, so each
//! field is tested against hand-checked packets.
//!
//! The SYN carries every option a modern stack offers, in Linux's order
//! (MSS, SACK-permitted, timestamps, NOP, window scale; RFC 793, 2018, 7323)
//! and ECE|CWR (RFC 3168 §6.1.1), as nmap's probes do: a peer then answers
//! with every option it supports, whatever this host's sysctls.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::os::SynFacts;

/// TCP flag bits (RFC 793 §3.1, RFC 3168 §6.1).
pub const FIN: u8 = 0x01;
/// Synchronise sequence numbers.
pub const SYN: u8 = 0x02;
/// Reset.
pub const RST: u8 = 0x04;
/// Acknowledgement field significant.
pub const ACK: u8 = 0x10;
/// ECN-Echo: on a SYN-ACK without CWR, "I accept ECN" (RFC 3168 §6.1.1).
pub const ECE: u8 = 0x40;
/// Congestion window reduced: with ECE on a SYN, "I ask for ECN".
pub const CWR: u8 = 0x80;

/// The window scale shift the SYN offers: Linux's for a 6 MB receive buffer.
pub const SYN_WSCALE: u8 = 7;
/// The MSS the SYN offers: Ethernet's 1,500 B MTU less 40 B of headers.
pub const SYN_MSS: u16 = 1460;
/// The receive window in the SYN (never scaled in a SYN: RFC 7323 §2.2).
pub const SYN_WINDOW: u16 = 64_240;

const TCP_HEADER: usize = 20;
/// MSS (4) + SACK-permitted (2) + timestamps (10) + NOP (1) + window scale (3).
const SYN_OPTIONS: usize = 20;

/// The TCP options of a SYN or SYN-ACK that `plumb handshake` reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TcpOptions {
    /// Maximum segment size (kind 2).
    pub mss: Option<u16>,
    /// Window scale shift (kind 3), as sent (a shift over 14 is the peer's
    /// error; RFC 7323 §2.3 says to use 14).
    pub wscale: Option<u8>,
    /// SACK permitted (kind 4).
    pub sack_permitted: bool,
    /// Timestamps (kind 8): TSval and TSecr.
    pub timestamps: Option<(u32, u32)>,
    /// Every option's kind in order, NOPs included, up to and including an
    /// end-of-list: the layout the OS guess reads.
    pub kinds: Vec<u8>,
}

/// A TCP segment read from an IPv4 packet (or an IPv6 payload), with what
/// `plumb handshake` needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// IP source.
    pub src: IpAddr,
    /// IP destination.
    pub dst: IpAddr,
    /// The IPv4 TTL or IPv6 hop limit as it arrived.
    pub ttl: u8,
    /// The IPv4 don't-fragment bit (`None` for IPv6, which has none).
    pub df: Option<bool>,
    /// TCP source port.
    pub src_port: u16,
    /// TCP destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgement number.
    pub ack: u32,
    /// The flag byte (FIN … CWR).
    pub flags: u8,
    /// The window field, unscaled (a SYN-ACK's never is: RFC 7323 §2.2).
    pub window: u16,
    /// The options.
    pub options: TcpOptions,
}

impl Segment {
    /// What this SYN or SYN-ACK shows of its sender, for the OS guess.
    pub fn facts(&self) -> SynFacts {
        SynFacts {
            ttl: self.ttl,
            window: self.window,
            mss: self.options.mss,
            wscale: self.options.wscale,
            sack_permitted: self.options.sack_permitted,
            timestamps: self.options.timestamps.is_some(),
            option_kinds: self.options.kinds.clone(),
            df: self.df,
            syn_ack: self.flags & (SYN | ACK) == SYN | ACK,
        }
    }
}

/// Why a packet or an option list could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Shorter than its headers say.
    #[error("truncated packet")]
    Truncated,
    /// Not IPv4 carrying TCP.
    #[error("not an IPv4 TCP packet")]
    NotTcp,
    /// An option whose length runs past the header or is below 2.
    #[error("malformed TCP option (kind {0})")]
    BadOption(u8),
}

/// The Internet checksum (RFC 1071) of `parts`, concatenated.
pub fn checksum(parts: &[&[u8]]) -> u16 {
    let mut sum: u32 = 0;
    let mut odd: Option<u8> = None;
    for part in parts {
        for &b in *part {
            match odd.take() {
                Some(hi) => sum += u32::from(u16::from_be_bytes([hi, b])),
                None => odd = Some(b),
            }
        }
    }
    if let Some(hi) = odd {
        sum += u32::from(u16::from_be_bytes([hi, 0]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The TCP checksum of `segment` (header with a zero checksum field, and
/// any payload) between `src` and `dst`: over the IPv4 pseudo-header too.
pub fn tcp_checksum(src: Ipv4Addr, dst: Ipv4Addr, segment: &[u8]) -> u16 {
    let len = u16::try_from(segment.len())
        .unwrap_or(u16::MAX)
        .to_be_bytes();
    let pseudo = [0, 6, len[0], len[1]];
    checksum(&[&src.octets(), &dst.octets(), &pseudo, segment])
}

/// The same over IPv6's pseudo-header (RFC 8200 §8.1): a 32-bit length and
/// the next-header value 6.
pub fn tcp_checksum_v6(src: Ipv6Addr, dst: Ipv6Addr, segment: &[u8]) -> u16 {
    let len = u32::try_from(segment.len())
        .unwrap_or(u32::MAX)
        .to_be_bytes();
    let pseudo = [len[0], len[1], len[2], len[3], 0, 0, 0, 6];
    checksum(&[&src.octets(), &dst.octets(), &pseudo, segment])
}

/// The SYN's options: MSS, SACK-permitted, timestamps (TSval `tsval`), NOP,
/// window scale — Linux's order, 20 bytes.
pub fn syn_options(tsval: u32) -> [u8; SYN_OPTIONS] {
    let mut o = [0u8; SYN_OPTIONS];
    o[..4].copy_from_slice(&[2, 4, (SYN_MSS >> 8) as u8, SYN_MSS as u8]);
    o[4..6].copy_from_slice(&[4, 2]);
    o[6..8].copy_from_slice(&[8, 10]);
    o[8..12].copy_from_slice(&tsval.to_be_bytes());
    // TSecr stays 0 on a SYN (RFC 7323 §3.2).
    o[16] = 1;
    o[17..20].copy_from_slice(&[3, 3, SYN_WSCALE]);
    o
}

/// A SYN with ECE|CWR and every option, checksummed for `src` → `dst` (IPv4
/// or IPv6): the TCP header a raw socket sends (the kernel adds the IP header).
pub fn build_syn(
    src: IpAddr,
    dst: IpAddr,
    src_port: u16,
    dst_port: u16,
    seq: u32,
    tsval: u32,
) -> Vec<u8> {
    let mut h = vec![0u8; TCP_HEADER + SYN_OPTIONS];
    h[0..2].copy_from_slice(&src_port.to_be_bytes());
    h[2..4].copy_from_slice(&dst_port.to_be_bytes());
    h[4..8].copy_from_slice(&seq.to_be_bytes());
    // Data offset in 32-bit words: 10 (40 bytes).
    h[12] = (((TCP_HEADER + SYN_OPTIONS) / 4) as u8) << 4;
    h[13] = SYN | ECE | CWR;
    h[14..16].copy_from_slice(&SYN_WINDOW.to_be_bytes());
    h[TCP_HEADER..].copy_from_slice(&syn_options(tsval));
    let sum = match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => tcp_checksum(s, d, &h),
        (IpAddr::V6(s), IpAddr::V6(d)) => tcp_checksum_v6(s, d, &h),
        // Mixed families never share a packet; the peer drops a bad sum.
        _ => 0,
    };
    h[16..18].copy_from_slice(&sum.to_be_bytes());
    h
}

/// Reads a TCP option list. Unknown kinds are skipped by their length; a
/// length below 2 or past the end is an error (a peer's malformed SYN-ACK
/// must not be read as options it did not send).
pub fn parse_options(mut b: &[u8]) -> Result<TcpOptions, WireError> {
    let mut o = TcpOptions::default();
    while let Some(&kind) = b.first() {
        o.kinds.push(kind);
        match kind {
            0 => break,
            1 => {
                b = &b[1..];
                continue;
            }
            _ => {}
        }
        let len = usize::from(*b.get(1).ok_or(WireError::BadOption(kind))?);
        if len < 2 || len > b.len() {
            return Err(WireError::BadOption(kind));
        }
        let body = &b[2..len];
        match (kind, body.len()) {
            (2, 2) => o.mss = Some(u16::from_be_bytes([body[0], body[1]])),
            (3, 1) => o.wscale = Some(body[0]),
            (4, 0) => o.sack_permitted = true,
            (8, 8) => {
                let v =
                    |i: usize| u32::from_be_bytes([body[i], body[i + 1], body[i + 2], body[i + 3]]);
                o.timestamps = Some((v(0), v(4)));
            }
            (2 | 3 | 4 | 8, _) => return Err(WireError::BadOption(kind)),
            _ => {}
        }
        b = &b[len..];
    }
    Ok(o)
}

/// Reads an IPv4 packet carrying TCP (as a raw IPv4 socket receives it:
/// the IP header first). Lengths come from the headers and are checked
/// against the bytes read.
pub fn parse_ipv4_tcp(p: &[u8]) -> Result<Segment, WireError> {
    let first = *p.first().ok_or(WireError::Truncated)?;
    if first >> 4 != 4 {
        return Err(WireError::NotTcp);
    }
    let ihl = usize::from(first & 0x0f) * 4;
    if ihl < 20 || p.len() < ihl + TCP_HEADER {
        return Err(WireError::Truncated);
    }
    if p[9] != 6 {
        return Err(WireError::NotTcp);
    }
    let ip = |i: usize| IpAddr::from([p[i], p[i + 1], p[i + 2], p[i + 3]]);
    parse_tcp(&p[ihl..], ip(12), ip(16), p[8], Some(p[6] & 0x40 != 0))
}

/// Reads a TCP segment without its IP header (as a raw IPv6 socket hands it
/// over), with what the IP layer told: the addresses, the TTL or hop limit,
/// the DF bit if any.
pub fn parse_tcp(
    t: &[u8],
    src: IpAddr,
    dst: IpAddr,
    ttl: u8,
    df: Option<bool>,
) -> Result<Segment, WireError> {
    if t.len() < TCP_HEADER {
        return Err(WireError::Truncated);
    }
    let doff = usize::from(t[12] >> 4) * 4;
    if doff < TCP_HEADER || t.len() < doff {
        return Err(WireError::Truncated);
    }
    let be16 = |i: usize| u16::from_be_bytes([t[i], t[i + 1]]);
    let be32 = |i: usize| u32::from_be_bytes([t[i], t[i + 1], t[i + 2], t[i + 3]]);
    Ok(Segment {
        src,
        dst,
        ttl,
        df,
        src_port: be16(0),
        dst_port: be16(2),
        seq: be32(4),
        ack: be32(8),
        flags: t[13],
        window: be16(14),
        options: parse_options(&t[TCP_HEADER..doff])?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);

    /// An IPv4 header (no options, no checksum: the parser does not check it) before `tcp`.
    fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, tcp: &[u8]) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 6, 0, 0];
        let len = (20 + tcp.len()) as u16;
        p[2..4].copy_from_slice(&len.to_be_bytes());
        p.extend_from_slice(&src.octets());
        p.extend_from_slice(&dst.octets());
        p.extend_from_slice(tcp);
        p
    }

    #[test]
    fn checksum_matches_rfc_1071_example() {
        // RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2 (one's complement 220d).
        assert_eq!(
            checksum(&[&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]]),
            0x220d
        );
        // Split across parts at odd offsets, the sum is the same.
        assert_eq!(
            checksum(&[&[0x00], &[0x01, 0xf2], &[0x03, 0xf4, 0xf5, 0xf6, 0xf7]]),
            0x220d
        );
        // An odd length pads with a zero byte.
        assert_eq!(checksum(&[&[0x01]]), !0x0100);
    }

    #[test]
    fn syn_checksums_to_zero_and_reads_back() {
        let syn = build_syn(SRC.into(), DST.into(), 40_000, 445, 0x1234_5678, 99);
        assert_eq!(syn.len(), 40);
        // A correct checksum makes the whole segment (with pseudo-header) sum to zero.
        assert_eq!(tcp_checksum(SRC, DST, &syn), 0);
        let seg = parse_ipv4_tcp(&ipv4(SRC, DST, &syn)).expect("own SYN");
        assert_eq!(
            (seg.src_port, seg.dst_port, seg.seq),
            (40_000, 445, 0x1234_5678)
        );
        assert_eq!(seg.flags, SYN | ECE | CWR);
        assert_eq!(seg.window, SYN_WINDOW);
        assert_eq!(
            seg.options,
            TcpOptions {
                mss: Some(1460),
                wscale: Some(7),
                sack_permitted: true,
                timestamps: Some((99, 0)),
                kinds: vec![2, 4, 8, 1, 3],
            }
        );
        assert!(!seg.facts().syn_ack);
    }

    /// The SYN-ACK of a Windows 2003 server as a capture shows it: MSS 1460,
    /// NOP NOP SACK-permitted, no window scale, no timestamps, 17,520 B.
    #[test]
    fn reads_an_old_windows_syn_ack() {
        let mut t = vec![0u8; 28];
        t[0..2].copy_from_slice(&445u16.to_be_bytes());
        t[2..4].copy_from_slice(&40_000u16.to_be_bytes());
        t[8..12].copy_from_slice(&0x1234_5679u32.to_be_bytes());
        t[12] = 7 << 4;
        t[13] = SYN | ACK;
        t[14..16].copy_from_slice(&17_520u16.to_be_bytes());
        t[20..28].copy_from_slice(&[2, 4, 0x05, 0xb4, 1, 1, 4, 2]);
        let seg = parse_ipv4_tcp(&ipv4(DST, SRC, &t)).expect("syn-ack");
        assert_eq!(seg.src, IpAddr::V4(DST));
        assert_eq!(seg.ack, 0x1234_5679);
        assert_eq!(seg.window, 17_520);
        assert_eq!(seg.ttl, 64);
        assert_eq!(seg.df, Some(true));
        assert_eq!(
            seg.options,
            TcpOptions {
                mss: Some(1460),
                sack_permitted: true,
                kinds: vec![2, 1, 1, 4],
                ..TcpOptions::default()
            }
        );
        // What the OS guess reads: the layout, the TTL, a SYN-ACK.
        let f = seg.facts();
        assert_eq!(f.option_kinds, vec![2, 1, 1, 4]);
        assert_eq!(
            (f.ttl, f.window, f.df, f.syn_ack),
            (64, 17_520, Some(true), true)
        );
    }

    #[test]
    fn an_ipv6_syn_checksums_to_zero_and_reads_back() {
        let (a, b) = (Ipv6Addr::LOCALHOST, "2001:db8::2".parse().expect("addr"));
        let syn = build_syn(a.into(), IpAddr::V6(b), 40_000, 22, 7, 9);
        assert_eq!(tcp_checksum_v6(a, b, &syn), 0);
        // The same bytes summed as IPv4 would not be zero: the pseudo-header counts.
        assert_ne!(checksum(&[&syn]), 0);
        let seg = parse_tcp(&syn, a.into(), b.into(), 64, None).expect("own SYN");
        assert_eq!((seg.dst_port, seg.seq, seg.df), (22, 7, None));
        assert_eq!(seg.options.kinds, vec![2, 4, 8, 1, 3]);
        assert_eq!(
            parse_tcp(&syn[..19], a.into(), b.into(), 64, None),
            Err(WireError::Truncated)
        );
    }

    #[test]
    fn malformed_options_are_errors_not_guesses() {
        assert_eq!(parse_options(&[2, 4, 5]), Err(WireError::BadOption(2)));
        assert_eq!(parse_options(&[3, 0, 7]), Err(WireError::BadOption(3)));
        assert_eq!(parse_options(&[3]), Err(WireError::BadOption(3)));
        assert_eq!(parse_options(&[2, 3, 5]), Err(WireError::BadOption(2)));
        // Unknown kinds are skipped; the end-of-list stops reading.
        let o = parse_options(&[30, 4, 0, 0, 4, 2, 0, 3, 3, 9]).expect("options");
        assert!(o.sack_permitted);
        assert_eq!(o.wscale, None);
        // The layout stops at the end-of-list: what follows is padding.
        assert_eq!(o.kinds, vec![30, 4, 0]);
    }

    #[test]
    fn short_or_foreign_packets_are_refused() {
        assert_eq!(parse_ipv4_tcp(&[]), Err(WireError::Truncated));
        assert_eq!(parse_ipv4_tcp(&[0x60; 60]), Err(WireError::NotTcp));
        let syn = build_syn(SRC.into(), DST.into(), 1, 2, 3, 4);
        let p = ipv4(SRC, DST, &syn);
        assert_eq!(parse_ipv4_tcp(&p[..30]), Err(WireError::Truncated));
        // The data offset says 40 B of TCP header; 35 arrived.
        assert_eq!(parse_ipv4_tcp(&p[..55]), Err(WireError::Truncated));
        let mut udp = p.clone();
        udp[9] = 17;
        assert_eq!(parse_ipv4_tcp(&udp), Err(WireError::NotTcp));
    }
}
