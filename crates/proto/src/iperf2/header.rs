//! The test header an iperf 2 client sends first: at the start of each TCP
//! connection, and in every UDP datagram after the [`Datagram`](super::Datagram)
//! header. A 24-byte base (flags, streams, port, buffer length, window,
//! amount) and, with [`flags::EXTEND`], 36 bytes more (upper and lower
//! flags, the sender's version, TOS, rate).

use std::time::Duration;

use super::{be32, Iperf2Error, DATAGRAM_LEN};

/// Bits of the first word.
pub mod flags {
    /// A base header follows; with [`VERSION2`] clear, the old dual (-d) or
    /// tradeoff (-r) test that makes the server connect back.
    pub const VERSION1: u32 = 0x8000_0000;
    /// The 36-byte extension follows the base.
    pub const EXTEND: u32 = 0x4000_0000;
    /// UDP: the upper flags describe per-datagram test settings.
    pub const UDPTESTS: u32 = 0x2000_0000;
    /// A permit key follows the header (`--permit-key`).
    pub const KEYCHECK: u32 = 0x1000_0000;
    /// UDP sequence numbers are 64 bits wide.
    pub const SEQNO64B: u32 = 0x0800_0000;
    /// The upper flags carry reverse / full-duplex requests.
    pub const VERSION2: u32 = 0x0400_0000;
    /// The client waits for the server's [`HeaderAck`](crate::iperf2::HeaderAck).
    pub const V2PEERDETECT: u32 = 0x0200_0000;
    /// A bounce-back (request/response) test.
    pub const BOUNCEBACK: u32 = 0x0080_0000;
    /// UDP trip-times header of 18 bytes.
    pub const SMALL_TRIPTIMES: u32 = 0x0002_0000;
    /// Bits 1..=8 hold the header's length.
    pub const LEN_BIT: u32 = 0x0001_0000;
    /// Where the length sits (shifted left by one).
    pub const LEN_MASK: u32 = 0x0000_01FE;
    /// With [`VERSION1`]: dual test (at once) rather than tradeoff (after).
    pub const RUN_NOW: u32 = 0x0000_0001;
}

/// Bits of the extension's upper flags.
pub mod upper {
    /// Isochronous traffic.
    pub const ISOCH: u16 = 0x0001;
    /// The UDP sender sends no final datagrams and expects no report.
    pub const NOUDPFIN: u16 = 0x0008;
    /// Trip times (`--trip-times`).
    pub const TRIPTIME: u16 = 0x0010;
    /// The rate is in packets per second.
    pub const UNITS_PPS: u16 = 0x0080;
    /// The server sends (`-R`).
    pub const REVERSE: u16 = 0x0400;
    /// Both send on the one connection (`--full-duplex`).
    pub const FULLDUPLEX: u16 = 0x0800;
    /// Periodic bursts.
    pub const PERIODICBURST: u16 = 0x2000;
}

/// The base header's length.
pub const V1_LEN: usize = 24;
/// The extension's length.
pub const EXT_LEN: usize = 36;
/// What 2.1.8 sends at the start of a TCP connection: base + extension.
pub const TCP_HEADER_LEN: usize = V1_LEN + EXT_LEN;
/// What 2.1.8 counts as a UDP test header: datagram header + base + extension.
pub const UDP_HEADER_LEN: usize = DATAGRAM_LEN + V1_LEN + EXT_LEN;
/// The longest header iperf 2 accepts.
pub const MAX_HEADER_LEN: usize = 256;

/// How much a test moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Amount {
    /// For this long (the wire carries hundredths of a second).
    Time(Duration),
    /// This many bytes.
    Bytes(u64),
}

/// Which test the header asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The client sends, the server receives.
    Normal,
    /// The server sends on the client's connection (`-R`).
    Reverse,
    /// Both send on one connection (`--full-duplex`).
    FullDuplex,
    /// The server connects back and sends at once (`-d`).
    Dual,
    /// The server connects back and sends afterwards (`-r`).
    Tradeoff,
    /// Request/response (`--bounceback`).
    BounceBack,
    /// A permit key follows (`--permit-key`).
    Keyed,
}

/// A test header, decoded or to be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestHeader {
    /// The first word ([`flags`]).
    pub flags: u32,
    /// Parallel streams of the test (`-P`).
    pub threads: u32,
    /// The port the client connected to (or its `-L`).
    pub port: u16,
    /// Buffer length the client set with `-l`, 0 if it did not.
    pub buf_len: u32,
    /// The window (`-w`) the client asks for, 0 if none.
    pub window: u32,
    /// Time or bytes.
    pub amount: Amount,
    /// The extension's upper flags ([`upper`]); 0 without the extension.
    pub upper: u16,
    /// The extension's lower flags.
    pub lower: u16,
    /// The sender's version words, with the extension.
    pub version: Option<(u32, u32)>,
    /// IP TOS byte.
    pub tos: u8,
    /// Rate, bit/s (packets/s with [`upper::UNITS_PPS`]); 0 if none.
    pub rate: u64,
}

impl TestHeader {
    /// The header a 2.1.8 client sends for a normal or reverse test, TCP
    /// or UDP: base + extension, its length in the flags.
    pub fn client(udp: bool, reverse: bool, threads: u32, port: u16, amount: Amount) -> TestHeader {
        let len = if udp { UDP_HEADER_LEN } else { TCP_HEADER_LEN };
        let mut f = flags::EXTEND | flags::LEN_BIT | ((len as u32) << 1);
        if udp {
            f |= flags::SEQNO64B;
        }
        if reverse {
            f |= flags::VERSION2;
            if udp {
                f |= flags::UDPTESTS;
            }
        }
        TestHeader {
            flags: f,
            threads,
            port,
            buf_len: 0,
            window: 0,
            amount,
            upper: if reverse { upper::REVERSE } else { 0 },
            lower: 0,
            version: Some(super::VERSION_2_1_8),
            tos: 0,
            rate: 0,
        }
    }

    /// Base + extension, 60 bytes (a UDP sender puts a [`Datagram`](super::Datagram) before them).
    pub fn encode(&self) -> [u8; TCP_HEADER_LEN] {
        let mut b = [0u8; TCP_HEADER_LEN];
        let amount: u32 = match self.amount {
            Amount::Time(d) => {
                let cs = i32::try_from(d.as_millis() / 10).unwrap_or(i32::MAX);
                cs.wrapping_neg() as u32
            }
            Amount::Bytes(n) => u32::try_from(n).unwrap_or(u32::MAX) & 0x7FFF_FFFF,
        };
        let (vu, vl) = self.version.unwrap_or((0, 0));
        // iperf 2 keeps the rate's upper 32 bits shifted left by 8.
        let rate_hi = u32::try_from(self.rate >> 32).unwrap_or(0) << 8;
        let words: [(usize, u32); 11] = [
            (0, self.flags),
            (4, self.threads),
            (8, u32::from(self.port)),
            (12, self.buf_len),
            (16, self.window),
            (20, amount),
            (32, (u32::from(self.upper) << 16) | u32::from(self.lower)),
            (36, vu),
            (40, vl),
            (44, u32::from(self.tos)),
            (48, self.rate as u32),
        ];
        for (at, w) in words {
            b[at..at + 4].copy_from_slice(&w.to_be_bytes());
        }
        b[52..56].copy_from_slice(&rate_hi.to_be_bytes());
        b
    }

    /// How many bytes a TCP header whose first word is `flags` has in all,
    /// flags included.
    ///
    /// # Errors
    /// Flags that mark no header, or a length under the base's or over
    /// [`MAX_HEADER_LEN`].
    pub fn tcp_len(flags: u32) -> Result<usize, Iperf2Error> {
        if flags & flags::BOUNCEBACK != 0 && flags & (flags::VERSION1 | flags::EXTEND) == 0 {
            return Ok(4);
        }
        if flags & (flags::VERSION1 | flags::VERSION2 | flags::EXTEND) == 0 {
            return Err(Iperf2Error::NoHeader(flags));
        }
        let len = if flags & flags::LEN_BIT != 0 {
            ((flags & flags::LEN_MASK) >> 1) as usize
        } else if flags & (flags::VERSION2 | flags::EXTEND) != 0 {
            V1_LEN + EXT_LEN
        } else {
            V1_LEN
        };
        if !(V1_LEN..=MAX_HEADER_LEN).contains(&len) {
            return Err(Iperf2Error::BadLength {
                len,
                min: V1_LEN,
                max: MAX_HEADER_LEN,
            });
        }
        Ok(len)
    }

    /// Reads a header from `b`, which starts at the flags word (after the
    /// datagram header in UDP). Bytes past the extension are ignored.
    ///
    /// # Errors
    /// Too few bytes for the base (or the extension the flags announce),
    /// flags that mark no header, or a negative stream count.
    pub fn decode(b: &[u8]) -> Result<TestHeader, Iperf2Error> {
        if b.len() < V1_LEN {
            return Err(Iperf2Error::Short {
                what: "test header",
                have: b.len(),
                need: V1_LEN,
            });
        }
        let f = be32(b, 0);
        if f & (flags::VERSION1 | flags::VERSION2 | flags::EXTEND | flags::BOUNCEBACK) == 0 {
            return Err(Iperf2Error::NoHeader(f));
        }
        let threads = be32(b, 4);
        if threads > i32::MAX as u32 {
            return Err(Iperf2Error::BadField {
                field: "stream count",
                value: i64::from(threads as i32),
            });
        }
        let raw_amount = be32(b, 20) as i32;
        let amount = if raw_amount < 0 {
            Amount::Time(Duration::from_millis(
                u64::from(raw_amount.unsigned_abs()) * 10,
            ))
        } else {
            Amount::Bytes(u64::from(raw_amount.unsigned_abs()))
        };
        let mut h = TestHeader {
            flags: f,
            threads,
            port: (be32(b, 8) & 0xFFFF) as u16,
            buf_len: be32(b, 12),
            window: be32(b, 16),
            amount,
            upper: 0,
            lower: 0,
            version: None,
            tos: 0,
            rate: 0,
        };
        if f & flags::EXTEND != 0 {
            if b.len() < TCP_HEADER_LEN {
                return Err(Iperf2Error::Short {
                    what: "extended test header",
                    have: b.len(),
                    need: TCP_HEADER_LEN,
                });
            }
            let ul = be32(b, 32);
            h.upper = (ul >> 16) as u16;
            h.lower = (ul & 0xFFFF) as u16;
            h.version = Some((be32(b, 36), be32(b, 40)));
            h.tos = (be32(b, 44) & 0xFF) as u8;
            h.rate = u64::from(be32(b, 48)) | (u64::from(be32(b, 52) >> 8) << 32);
        }
        Ok(h)
    }

    /// The test asked for.
    pub fn mode(&self) -> Mode {
        let f = self.flags;
        if f & flags::BOUNCEBACK != 0 {
            Mode::BounceBack
        } else if f & flags::KEYCHECK != 0 {
            Mode::Keyed
        } else if f & flags::VERSION1 != 0 && f & flags::VERSION2 == 0 {
            if f & flags::RUN_NOW != 0 {
                Mode::Dual
            } else {
                Mode::Tradeoff
            }
        } else if f & flags::VERSION2 != 0 && self.upper & upper::FULLDUPLEX != 0 {
            Mode::FullDuplex
        } else if f & flags::VERSION2 != 0 && self.upper & upper::REVERSE != 0 {
            Mode::Reverse
        } else {
            Mode::Normal
        }
    }

    /// Whether a TCP server answers this header with a [`HeaderAck`](super::HeaderAck):
    /// an extended header without [`flags::VERSION2`], or one that asks for it.
    pub fn wants_ack(&self) -> bool {
        let f = self.flags;
        (f & flags::EXTEND != 0 && f & flags::VERSION2 == 0) || f & flags::V2PEERDETECT != 0
    }

    /// UDP: whether the sender ends with negative sequence numbers and
    /// waits for a [`ServerReport`](super::ServerReport).
    pub fn wants_report(&self) -> bool {
        self.upper & upper::NOUDPFIN == 0 && self.mode() == Mode::Normal
    }

    /// UDP: whether sequence numbers are 64 bits wide.
    pub fn wide_seq(&self) -> bool {
        self.flags & flags::SEQNO64B != 0
    }
}
