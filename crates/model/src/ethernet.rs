//! Ethernet framing: what share of the wire is TCP payload, and how many frames
//! a link carries per second.

use crate::units::{thousands, Bytes, Rate};

/// Ethernet header (14 B, IEEE 802.3 §3.1.1).
pub const ETH_HEADER: u64 = 14;
/// Frame check sequence (4 B).
pub const ETH_FCS: u64 = 4;
/// Preamble and start-of-frame delimiter (8 B, IEEE 802.3 §4.2.5).
pub const ETH_PREAMBLE: u64 = 8;
/// Minimum inter-frame gap, 96 bit times (12 B, IEEE 802.3 §4.4.2).
pub const ETH_IFG: u64 = 12;
/// 802.1Q VLAN tag (4 B).
pub const VLAN_TAG: u64 = 4;
/// Wire cost of one frame beyond its IP packet: 14 + 4 + 8 + 12 = 38 B.
pub const ETH_OVERHEAD: u64 = ETH_HEADER + ETH_FCS + ETH_PREAMBLE + ETH_IFG;
/// IPv4 header without options (RFC 791).
pub const IPV4_HEADER: u64 = 20;
/// IPv6 fixed header (RFC 8200).
pub const IPV6_HEADER: u64 = 40;
/// TCP header without options (RFC 9293).
pub const TCP_HEADER: u64 = 20;
/// The TCP timestamps option as sent on every segment: 10 B padded to 12 (RFC 7323 §3).
pub const TCP_TIMESTAMPS: u64 = 12;
/// Ethernet clock tolerance: ±100 ppm (IEEE 802.3 §22.2.2.1 / §35.4.1.1).
pub const CLOCK_TOLERANCE: f64 = 100e-6;

/// How TCP segments are framed on an Ethernet link.
///
/// The default is the one every command assumes unless told otherwise:
/// IPv4 at MTU 1500 with TCP timestamps on every segment, as Linux sends
/// (1,448 B of payload). `--tcp-timestamps off` gives 1,460 B, as stacks
/// without RFC 7323 (the backup scenario's old Windows hosts) send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Framing {
    /// IP MTU in bytes (1500 on most Ethernet).
    pub mtu: u64,
    /// IPv6 (40-byte header) rather than IPv4 (20).
    pub ipv6: bool,
    /// TCP timestamps on every segment (12 bytes of options); Linux's default.
    pub timestamps: bool,
    /// An 802.1Q tag on every frame.
    pub vlan: bool,
}

impl Default for Framing {
    fn default() -> Self {
        Framing {
            mtu: 1500,
            ipv6: false,
            timestamps: true,
            vlan: false,
        }
    }
}

impl Framing {
    /// The framing if its MTU can carry TCP: at least IPv4's 68 B or IPv6's
    /// 1280 B, room for payload after the headers, and at most an IP
    /// packet's 65535 B; else the one-line reason.
    pub fn checked(self) -> Result<Framing, String> {
        let min_mtu = if self.ipv6 { 1280 } else { 68 };
        let opts = if self.timestamps { TCP_TIMESTAMPS } else { 0 };
        if self.mtu < min_mtu || self.mtu <= self.ip_tcp_headers() + opts {
            return Err(format!(
                "invalid MTU {} B: {} needs at least {min_mtu} B and room for TCP payload after {} B of headers",
                self.mtu,
                if self.ipv6 { "IPv6" } else { "IPv4" },
                self.ip_tcp_headers() + opts
            ));
        }
        if self.mtu > 65_535 {
            return Err(format!(
                "invalid MTU {} B: an IP packet is at most 65535 B",
                self.mtu
            ));
        }
        Ok(self)
    }

    /// IP + TCP header bytes, without options.
    pub fn ip_tcp_headers(&self) -> u64 {
        TCP_HEADER + if self.ipv6 { IPV6_HEADER } else { IPV4_HEADER }
    }
    /// The MSS TCP announces: MTU − IP − TCP headers (1460 for 1500/IPv4).
    pub fn mss(&self) -> Bytes {
        Bytes(self.mtu.saturating_sub(self.ip_tcp_headers()))
    }
    /// The framing for a given announced MSS: MTU = MSS + headers.
    pub fn with_mss(mss: Bytes, ipv6: bool, timestamps: bool, vlan: bool) -> Framing {
        let mut f = Framing {
            mtu: 0,
            ipv6,
            timestamps,
            vlan,
        };
        f.mtu = mss.get() + f.ip_tcp_headers();
        f
    }
    /// Payload bytes per full segment: the MSS less options (1448 with timestamps).
    pub fn payload(&self) -> Bytes {
        let opts = if self.timestamps { TCP_TIMESTAMPS } else { 0 };
        Bytes(self.mss().get().saturating_sub(opts))
    }
    /// Bytes one full-size frame occupies on the wire: MTU + 38 (+ 4 with VLAN).
    pub fn wire_bytes(&self) -> u64 {
        self.mtu + ETH_OVERHEAD + if self.vlan { VLAN_TAG } else { 0 }
    }
    /// Payload share of the wire: payload / wire cost (1460/1538 = 94.9 %).
    pub fn efficiency(&self) -> f64 {
        self.payload().get() as f64 / self.wire_bytes() as f64
    }
    /// TCP goodput of a link at line `rate` carrying only full-size segments.
    pub fn goodput(&self, rate: Rate) -> Rate {
        Rate::from_bps(rate.bps() * self.efficiency()).unwrap_or(rate)
    }
    /// The header assumption in the words every command prints it with:
    /// `IPv4, MTU 1500, TCP timestamps on: 1,448 B payload`.
    pub fn describe(&self) -> String {
        format!(
            "{}, MTU {}, TCP timestamps {}: {} B payload{}",
            if self.ipv6 { "IPv6" } else { "IPv4" },
            self.mtu,
            if self.timestamps { "on" } else { "off" },
            thousands(self.payload().get()),
            if self.vlan { ", 802.1Q" } else { "" }
        )
    }
}

/// Frames per second at line rate for `frame` bytes (Ethernet header to FCS):
/// rate / ((frame + 20) × 8) — 20 B of preamble, SFD and gap per frame
/// (RFC 2544 §20 and the IEEE 802.3 figures it cites).
pub fn frame_rate(rate: Rate, frame: Bytes) -> f64 {
    rate.bps() / ((frame.get() + ETH_PREAMBLE + ETH_IFG) as f64 * 8.0)
}

/// The frame rate band allowed by the ±100 ppm clock tolerance: (low, high).
pub fn frame_rate_band(rate: Rate, frame: Bytes) -> (f64, f64) {
    let f = frame_rate(rate, frame);
    (f * (1.0 - CLOCK_TOLERANCE), f * (1.0 + CLOCK_TOLERANCE))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(s: &str) -> Rate {
        Rate::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn efficiency_at_1500() {
        // Without timestamps: the backup scenario's hosts.
        let f = Framing {
            timestamps: false,
            ..Framing::default()
        };
        assert_eq!(f.mss(), Bytes(1460));
        assert_eq!(f.wire_bytes(), 1538);
        assert_eq!(format!("{:.1}", f.efficiency() * 100.0), "94.9");
        let ts = Framing {
            timestamps: true,
            ..f
        };
        assert_eq!(ts.payload(), Bytes(1448));
        assert_eq!(
            format!("{:.1}", ts.goodput(rate("1G")).bps() / 1e6),
            "941.5"
        );
        let v6 = Framing { ipv6: true, ..f };
        assert_eq!(v6.mss(), Bytes(1440));
        let vlan = Framing { vlan: true, ..f };
        assert_eq!(vlan.wire_bytes(), 1542);
        assert_eq!(Framing::with_mss(Bytes(1460), false, false, false), f);
        // The default is Linux's: timestamps on.
        assert_eq!(Framing::default(), ts);
        assert_eq!(
            ts.describe(),
            "IPv4, MTU 1500, TCP timestamps on: 1,448 B payload"
        );
        assert_eq!(
            f.describe(),
            "IPv4, MTU 1500, TCP timestamps off: 1,460 B payload"
        );
    }

    #[test]
    fn frame_rates() {
        assert_eq!(frame_rate(rate("1G"), Bytes(64)).floor() as u64, 1_488_095);
        assert_eq!(
            frame_rate(rate("10G"), Bytes(64)).floor() as u64,
            14_880_952
        );
        let (lo, hi) = frame_rate_band(rate("1G"), Bytes(64));
        assert_eq!(
            (lo.floor() as u64, hi.floor() as u64),
            (1_487_946, 1_488_244)
        );
        assert_eq!(frame_rate(rate("1G"), Bytes(1518)).floor() as u64, 81_274);
    }

    /// An MTU that cannot carry TCP is refused in one line naming it.
    #[test]
    fn an_mtu_that_cannot_carry_tcp_is_refused() {
        let f = |mtu, ipv6| Framing {
            mtu,
            ipv6,
            ..Framing::default()
        };
        assert_eq!(f(1500, false).checked(), Ok(f(1500, false)));
        assert_eq!(f(1280, true).checked(), Ok(f(1280, true)));
        let e = f(1000, true).checked().expect_err("IPv6 under 1280");
        assert!(
            e.starts_with("invalid MTU 1000 B: IPv6 needs at least 1280 B"),
            "{e}"
        );
        let e = f(50, false).checked().expect_err("under 68 B");
        assert!(
            e.contains("at least 68 B") && e.contains("after 52 B of headers"),
            "{e}"
        );
        let e = f(70_000, false).checked().expect_err("over an IP packet");
        assert_eq!(e, "invalid MTU 70000 B: an IP packet is at most 65535 B");
    }
}
