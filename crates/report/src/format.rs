//! How every sink writes sizes, rates, times and counts for people: iperf3's
//! column layout ([`bytes`], [`bitrate`], [`interval_secs`], [`lost_of`])
//! for the text sink, the shorter
//! forms the HTML report and `plumb top` use ([`rate`], [`time_us`],
//! [`size_compact`], [`figures`], [`thousands`]), and the names of the
//! systems a diagnosis writes fixes for, shared by the text (`plumb why`)
//! and the HTML report. No other module formats a number with a unit.

use crate::chart::{unit_for, Quantity};

/// Bytes with binary prefixes as iperf3 prints them: `1.43 GBytes`, ` 895 KBytes`.
pub fn bytes(n: f64) -> String {
    let units = ["Bytes", "KBytes", "MBytes", "GBytes", "TBytes"];
    let mut v = n;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    format!("{} {}", three(v), units[i])
}

/// Bits per second with decimal prefixes: `12.3 Gbits/sec`, ` 100 Mbits/sec`.
pub fn bitrate(bps: f64) -> String {
    let units = [
        "bits/sec",
        "Kbits/sec",
        "Mbits/sec",
        "Gbits/sec",
        "Tbits/sec",
    ];
    let mut v = bps;
    let mut i = 0;
    while v >= 1000.0 && i + 1 < units.len() {
        v /= 1000.0;
        i += 1;
    }
    format!("{} {}", three(v), units[i])
}

/// iperf3's `-f`: the unit of the bitrate column. The transfer column
/// stays adaptive in bytes, as iperf3's does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RateFormat {
    /// The prefix that keeps the figure under 1000 (iperf3's default).
    #[default]
    Adaptive,
    /// `k m g t`: bits per second, that many thousands.
    Bits(u8),
    /// `K M G T`: bytes per second, that many 1024s.
    Bytes(u8),
}

impl RateFormat {
    /// Parses `-f`'s letter; anything else is one line naming the accepted ones.
    pub fn parse(s: &str) -> Result<RateFormat, String> {
        let power = |c: char| "kmgt".find(c.to_ascii_lowercase()).map(|i| i as u8 + 1);
        match (s.len(), s.chars().next().and_then(|c| power(c).map(|p| (c, p)))) {
            (1, Some((c, p))) if c.is_ascii_lowercase() => Ok(RateFormat::Bits(p)),
            (1, Some((_, p))) => Ok(RateFormat::Bytes(p)),
            _ => Err(format!(
                "invalid format '{s}' (accepted: k m g t for Kbits…Tbits/sec, K M G T for KBytes…TBytes/sec)"
            )),
        }
    }
}

/// Bits per second in the unit `-f` asks for: `bitrate` when adaptive,
/// else `942 Mbits/sec` or `112290 KBytes/sec`, iperf3's fixed forms.
pub fn bitrate_as(bps: f64, f: RateFormat) -> String {
    const BITS: [&str; 5] = ["bits", "Kbits", "Mbits", "Gbits", "Tbits"];
    const BYTES: [&str; 5] = ["Bytes", "KBytes", "MBytes", "GBytes", "TBytes"];
    match f {
        RateFormat::Adaptive => bitrate(bps),
        RateFormat::Bits(p) => {
            let v = bps / 1000f64.powi(i32::from(p));
            format!("{} {}/sec", three(v), BITS[usize::from(p)])
        }
        RateFormat::Bytes(p) => {
            let v = bps / 8.0 / 1024f64.powi(i32::from(p));
            format!("{} {}/sec", three(v), BYTES[usize::from(p)])
        }
    }
}

/// An interval's start and end as iperf3's column: `  0.00-1.00   sec`.
pub fn interval_secs(start: f64, end: f64) -> String {
    format!("{start:6.2}-{end:<6.2} sec")
}

/// Datagrams lost of those sent, as iperf3's UDP column: `3/1000 (0.3%)`.
pub fn lost_of(lost: i64, packets: i64) -> String {
    let pct = if packets > 0 {
        100.0 * lost as f64 / packets as f64
    } else {
        0.0
    };
    format!("{lost}/{packets} ({}%)", loss_pct(pct))
}

/// A loss percentage: two decimals without trailing zeros, or in
/// scientific notation below 0.01 so that a rare loss does not read 0.
fn loss_pct(p: f64) -> String {
    if p == 0.0 {
        "0".into()
    } else if p >= 0.01 {
        format!("{p:.2}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else {
        format!("{p:.2e}")
    }
}

/// Three significant figures in a four-character field, as iperf3 does.
fn three(v: f64) -> String {
    if v < 9.995 {
        format!("{v:4.2}")
    } else if v < 99.95 {
        format!("{v:4.1}")
    } else {
        format!("{v:4.0}")
    }
}

/// A rate for a page or a table: three significant figures, the unit by
/// size (`942 Mbit/s`, `1.20 Gbit/s`); [`bitrate`] is iperf3's column.
pub fn rate(bps: f64) -> String {
    let (div, unit) = unit_for(Quantity::Rate, bps.abs());
    format!("{} {unit}", figures(bps / div))
}

/// A time given in µs: µs, ms or s by size, three significant figures
/// without trailing zeros (`850 µs`, `1.2 ms`).
pub fn time_us(us: f64) -> String {
    let (div, unit) = unit_for(Quantity::Micros, us.abs());
    format!("{} {unit}", figures_trimmed(us / div))
}

/// A size in bytes for a table column, one word wide: bytes below 1000,
/// else three significant figures with a decimal prefix (`980`, `17.4K`,
/// `2.32M`, `1.05G`), the same for every row so that a column compares.
pub fn size_compact(b: f64) -> String {
    let (div, unit) = unit_for(Quantity::Bytes, b.abs());
    let prefix = unit.trim_end_matches('B').to_uppercase();
    format!("{}{prefix}", figures(b / div))
}

/// Three significant figures, zeros kept (`0.500`, `10.0`, `942`, `1234`);
/// `0` for zero or a number that is not finite.
pub fn figures(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return "0".into();
    }
    let digits = 3 - 1 - x.abs().log10().floor() as i32;
    let d = digits.clamp(0, 6) as usize;
    format!("{x:.d$}")
}

/// Three significant figures without trailing zeros: `10`, `1.2`, `77.4`.
pub fn figures_trimmed(x: f64) -> String {
    let n = figures(x);
    if n.contains('.') {
        n.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        n
    }
}

/// A whole number with thousands separators: `799,854`.
pub fn thousands(x: f64) -> String {
    let digits = format!("{:.0}", x.abs());
    let mut out = String::new();
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if x < 0.0 && digits != "0" {
        out.insert(0, '-');
    }
    out
}

/// The name a person reads for the `os` of a diagnosis's fix (`"linux"`,
/// `"windows-legacy"`, …; `plumb_diagnose`'s ids); an unknown id as it is.
pub fn os_name(os: &str) -> &str {
    match os {
        "linux" => "Linux",
        "windows" => "Windows (Vista and later)",
        "windows-legacy" => "Windows 2000/2003/XP",
        "macos" => "macOS",
        "freebsd" => "FreeBSD",
        "application" => "Application",
        "path" => "Path",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_iperf3() {
        assert_eq!(bytes(1.43 * 1024.0 * 1024.0 * 1024.0), "1.43 GBytes");
        assert_eq!(bytes(895.0 * 1024.0), " 895 KBytes");
        assert_eq!(bytes(0.0), "0.00 Bytes");
        assert_eq!(bitrate(12.3e9), "12.3 Gbits/sec");
        assert_eq!(bitrate(100e6), " 100 Mbits/sec");
        assert_eq!(bitrate(9.344e6), "9.34 Mbits/sec");
        // iperf3 -f: fixed units, bits by 1000s, bytes by 1024s.
        let f = |s| RateFormat::parse(s).expect("a format iperf3 takes");
        assert_eq!(bitrate_as(9.344e6, f("m")), "9.34 Mbits/sec");
        assert_eq!(bitrate_as(9.344e6, f("k")), "9344 Kbits/sec");
        assert_eq!(bitrate_as(941.5e6, f("g")), "0.94 Gbits/sec");
        assert_eq!(bitrate_as(8.0 * 1024.0 * 1024.0, f("M")), "1.00 MBytes/sec");
        assert_eq!(bitrate_as(17.0e9, f("K")), "2075195 KBytes/sec");
        assert_eq!(bitrate_as(12.3e9, RateFormat::Adaptive), "12.3 Gbits/sec");
        for bad in ["", "x", "mm", "b", "A"] {
            assert!(
                RateFormat::parse(bad).is_err_and(|e| e.contains("accepted")),
                "{bad}"
            );
        }
        assert_eq!(interval_secs(0.0, 1.0), "  0.00-1.00   sec");
        assert_eq!(lost_of(3, 1000), "3/1000 (0.3%)");
        assert_eq!(lost_of(1, 1_000_000), "1/1000000 (1.00e-4%)");
        assert_eq!(lost_of(0, 0), "0/0 (0%)");
    }

    #[test]
    fn for_pages_and_tables() {
        assert_eq!(rate(942.4e6), "942 Mbit/s");
        assert_eq!(rate(1.2e9), "1.20 Gbit/s");
        assert_eq!(rate(0.0), "0 bit/s");
        assert_eq!(time_us(850.0), "850 µs");
        assert_eq!(time_us(1200.0), "1.2 ms");
        assert_eq!(figures(0.5), "0.500");
        assert_eq!(figures(10.0), "10.0");
        assert_eq!(figures(f64::NAN), "0");
        assert_eq!(figures_trimmed(77.4), "77.4");
        assert_eq!(figures_trimmed(10.0), "10");
        assert_eq!(thousands(799_854.0), "799,854");
        assert_eq!(thousands(-1234.0), "-1,234");
        assert_eq!(thousands(-0.2), "0");
    }

    /// One rule for every row: a 17 kB window beside a 2 MB one reads
    /// `17.4K` beside `2.32M`, not `17376` beside `2322.6K`.
    #[test]
    fn sizes_in_a_column_share_one_rule() {
        assert_eq!(size_compact(980.0), "980");
        assert_eq!(size_compact(17_376.0), "17.4K");
        assert_eq!(size_compact(14_480.0), "14.5K");
        assert_eq!(size_compact(2_322_600.0), "2.32M");
        assert_eq!(size_compact(1.05e9), "1.05G");
        assert_eq!(size_compact(0.0), "0");
    }

    #[test]
    fn os_names() {
        assert_eq!(os_name("windows-legacy"), "Windows 2000/2003/XP");
        assert_eq!(os_name("macos"), "macOS");
        assert_eq!(os_name("plan9"), "plan9");
    }
}
