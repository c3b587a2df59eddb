//! Unit-carrying values and the parser for what people type.
//!
//! Each quantity has its own type so that a byte count cannot be passed where a
//! bit rate is expected. Every type parses from the spellings people use on the
//! command line and in tickets, and its [`Display`](std::fmt::Display) form parses
//! back to the same value (up to one rounding of an `f64`).
//!
//! Conventions, chosen to match what iperf3 users already type:
//! - rates are decimal (`1G` = 10⁹ bit/s); `B` means bytes (`100MB/s` = 800 Mbit/s);
//! - sizes with a bare prefix are binary like iperf3's `-w 64K` (= 65,536 B),
//!   with `B` they are decimal (`1.25MB` = 1,250,000 B), with `iB` binary;
//! - a bare RTT is in milliseconds, a bare distance in kilometres, a bare loss
//!   rate is a probability (`1e-4`) and `%` makes it a percentage.

use std::fmt;

/// Why a value could not be parsed; the message quotes the input and says
/// what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} '{input}': {reason} (accepted: {accepted})")]
pub struct ParseError {
    /// What kind of value was expected ("rate", "size", …).
    pub what: &'static str,
    /// The text as given.
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
    /// Examples of accepted spellings.
    pub accepted: &'static str,
}

const RATE_ACCEPTED: &str = "1G, 1Gbit, 100Mbps, 10M, 1.5e9, 125MB/s";
const SIZE_ACCEPTED: &str = "17520, 64K, 64KiB, 1.25MB, 2M, 1TB";
const RTT_ACCEPTED: &str = "15ms, 0.1s, 250us, 15 (ms)";
const LOSS_ACCEPTED: &str = "0.01%, 1e-4, 0.0001";
const DISTANCE_ACCEPTED: &str = "1000km, 1000 (km), 600mi, 5000m";

fn err(
    what: &'static str,
    input: &str,
    reason: impl Into<String>,
    accepted: &'static str,
) -> ParseError {
    ParseError {
        what,
        input: input.to_string(),
        reason: reason.into(),
        accepted,
    }
}

/// Splits `"1.5 Gbit"` into `(1.5, "Gbit")`. Accepts `_` and `,` as thousands
/// separators (`17,520`), an exponent (`1e-4`), and space before the unit.
fn split_number(
    what: &'static str,
    input: &str,
    accepted: &'static str,
) -> Result<(f64, String), ParseError> {
    let s = input.trim();
    let bytes = s.as_bytes();
    let mut end = 0;
    while end < bytes.len() {
        let c = bytes[end];
        let is_exp = (c == b'e' || c == b'E')
            && end > 0
            && bytes
                .get(end + 1)
                .is_some_and(|n| n.is_ascii_digit() || *n == b'-' || *n == b'+');
        let is_sign =
            (c == b'-' || c == b'+') && (end == 0 || matches!(bytes[end - 1], b'e' | b'E'));
        if c.is_ascii_digit() || c == b'.' || c == b'_' || c == b',' || is_exp || is_sign {
            end += 1;
        } else {
            break;
        }
    }
    let (num, unit) = s.split_at(end);
    if num.is_empty() {
        return Err(err(what, input, "no number", accepted));
    }
    if num.contains(',') {
        // Only thousands grouping: every group after the first has three digits.
        let mut groups = num.split(',');
        let first_ok = groups.next().is_some_and(|g| !g.is_empty() && g.len() <= 3);
        let rest: Vec<&str> = groups.collect();
        let last_has_fraction = rest.last().is_some_and(|g| g.contains('.'));
        let rest_ok = rest.iter().enumerate().all(|(i, g)| {
            let digits = if i + 1 == rest.len() && last_has_fraction {
                g.split('.').next().unwrap_or("")
            } else {
                g
            };
            digits.len() == 3 && digits.bytes().all(|b| b.is_ascii_digit())
        });
        if !(first_ok && rest_ok) {
            return Err(err(
                what,
                input,
                "a comma is only accepted between groups of three digits",
                accepted,
            ));
        }
    }
    let cleaned: String = num.chars().filter(|c| *c != '_' && *c != ',').collect();
    let value: f64 = cleaned
        .parse()
        .map_err(|_| err(what, input, format!("'{num}' is not a number"), accepted))?;
    if !value.is_finite() {
        return Err(err(what, input, "not a finite number", accepted));
    }
    Ok((value, unit.trim().to_string()))
}

fn positive(
    what: &'static str,
    input: &str,
    v: f64,
    accepted: &'static str,
) -> Result<f64, ParseError> {
    if v > 0.0 && v.is_finite() {
        Ok(v)
    } else {
        Err(err(what, input, "must be greater than zero", accepted))
    }
}

/// A bit rate in bits per second; always finite and greater than zero.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Rate(f64);

impl Rate {
    /// A rate of `bps` bits per second, or `None` unless finite and > 0.
    pub fn from_bps(bps: f64) -> Option<Rate> {
        (bps.is_finite() && bps > 0.0).then_some(Rate(bps))
    }
    /// Bits per second.
    pub fn bps(self) -> f64 {
        self.0
    }
    /// Bytes per second.
    pub fn bytes_per_sec(self) -> f64 {
        self.0 / 8.0
    }
    /// Parses `1G`, `1Gbit`, `100Mbps`, `10M`, `1.5e9`, `125MB/s` (decimal prefixes).
    pub fn parse(input: &str) -> Result<Rate, ParseError> {
        let (v, unit) = split_number("rate", input, RATE_ACCEPTED)?;
        let (mult, rest) = split_prefix(&unit);
        let per = match rest {
            "" | "b" | "bit" | "bits" | "bps" | "b/s" | "bit/s" | "bits/s" | "bitps" => 1.0,
            "B" | "Bps" | "B/s" | "byte/s" | "bytes/s" | "Byte/s" | "Bytes/s" => 8.0,
            _ => {
                return Err(err(
                    "rate",
                    input,
                    format!("unknown unit '{unit}'"),
                    RATE_ACCEPTED,
                ))
            }
        };
        let bps = positive("rate", input, v * mult * per, RATE_ACCEPTED)?;
        Ok(Rate(bps))
    }
    /// Three or four significant digits in the largest fitting unit: `9.344 Mbit/s`.
    pub fn human(self) -> String {
        let (scaled, unit) = scale_decimal(self.0);
        format!("{} {unit}bit/s", sig(scaled, 4))
    }
}

/// Takes a leading decimal SI prefix off a rate unit: `Gbit` → (10⁹, `bit`).
/// Lower-case `m` is mega here: nobody measures links in millibits.
fn split_prefix(unit: &str) -> (f64, &str) {
    let mut chars = unit.chars();
    let mult = match chars.next() {
        Some('k' | 'K') => 1e3,
        Some('m' | 'M') => 1e6,
        Some('g' | 'G') => 1e9,
        Some('t' | 'T') => 1e12,
        _ => return (1.0, unit),
    };
    (mult, chars.as_str())
}

fn scale_decimal(v: f64) -> (f64, &'static str) {
    let a = v.abs();
    if a >= 1e12 {
        (v / 1e12, "T")
    } else if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    }
}

/// Formats with `digits` significant digits, trailing zeros trimmed.
pub fn sig(v: f64, digits: usize) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let magnitude = v.abs().log10().floor() as i32;
    let decimals = (digits as i32 - 1 - magnitude).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Groups an integer's digits in threes: `1875000` → `1,875,000`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl fmt::Display for Rate {
    /// Shortest form that parses back: `9.344 Mbit/s`, `1 Gbit/s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (scaled, unit) = scale_decimal(self.0);
        write!(f, "{scaled} {unit}bit/s")
    }
}

/// A whole number of bytes (a window, a buffer, a file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

impl Bytes {
    /// The count.
    pub fn get(self) -> u64 {
        self.0
    }
    /// The count in bits, as a float for rate arithmetic.
    pub fn bits(self) -> f64 {
        self.0 as f64 * 8.0
    }
    /// Parses `17520`, `64K` (= 65,536, as iperf3), `64KiB`, `1.25MB` (= 1,250,000), `1TB`.
    /// Zero is rejected: no window, buffer or transfer has zero bytes.
    pub fn parse(input: &str) -> Result<Bytes, ParseError> {
        let (v, unit) = split_number("size", input, SIZE_ACCEPTED)?;
        let lower = unit.to_ascii_lowercase();
        let (mult, bits) = match lower.as_str() {
            "" | "b" | "byte" | "bytes" => (1.0, false),
            "bit" | "bits" => (1.0, true),
            "k" | "kib" => (1024.0, false),
            "m" | "mib" => (1024.0 * 1024.0, false),
            "g" | "gib" => (1024.0 * 1024.0 * 1024.0, false),
            "t" | "tib" => (1024f64.powi(4), false),
            "kb" => (1e3, false),
            "mb" => (1e6, false),
            "gb" => (1e9, false),
            "tb" => (1e12, false),
            "kbit" => (1e3, true),
            "mbit" => (1e6, true),
            "gbit" => (1e9, true),
            _ => {
                return Err(err(
                    "size",
                    input,
                    format!("unknown unit '{unit}'"),
                    SIZE_ACCEPTED,
                ))
            }
        };
        let raw = v * mult / if bits { 8.0 } else { 1.0 };
        let raw = positive("size", input, raw, SIZE_ACCEPTED)?;
        if raw > u64::MAX as f64 / 2.0 {
            return Err(err("size", input, "too large", SIZE_ACCEPTED));
        }
        let n = raw.round();
        if n < 1.0 {
            return Err(err("size", input, "is less than one byte", SIZE_ACCEPTED));
        }
        Ok(Bytes(n as u64))
    }
    /// `1,875,000 B (1.875 MB)` for people; exact bytes first.
    pub fn human(self) -> String {
        if self.0 < 100_000 {
            return format!("{} B", thousands(self.0));
        }
        let (scaled, unit) = scale_decimal(self.0 as f64);
        format!("{} B ({} {unit}B)", thousands(self.0), sig(scaled, 4))
    }
}

impl fmt::Display for Bytes {
    /// Exact and parseable: `64 KiB` when a binary multiple, `1875 kB` when decimal, else `17520 B`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        for (div, unit) in [
            (1u64 << 40, "TiB"),
            (1 << 30, "GiB"),
            (1 << 20, "MiB"),
            (1 << 10, "KiB"),
        ] {
            if n >= div && n % div == 0 {
                return write!(f, "{} {unit}", n / div);
            }
        }
        for (div, unit) in [
            (1_000_000_000_000u64, "TB"),
            (1_000_000_000, "GB"),
            (1_000_000, "MB"),
            (1_000, "kB"),
        ] {
            if n >= div && n % div == 0 {
                return write!(f, "{} {unit}", n / div);
            }
        }
        write!(f, "{n} B")
    }
}

/// A round-trip time (or any positive duration), in seconds.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Rtt(f64);

impl Rtt {
    /// A duration of `secs` seconds, or `None` unless finite and > 0.
    pub fn from_secs(secs: f64) -> Option<Rtt> {
        (secs.is_finite() && secs > 0.0).then_some(Rtt(secs))
    }
    /// A duration of `ms` milliseconds, or `None` unless finite and > 0.
    pub fn from_ms(ms: f64) -> Option<Rtt> {
        Rtt::from_secs(ms / 1e3)
    }
    /// Seconds.
    pub fn secs(self) -> f64 {
        self.0
    }
    /// Milliseconds.
    pub fn ms(self) -> f64 {
        self.0 * 1e3
    }
    /// Parses `15ms`, `0.1s`, `250us`, `15` (milliseconds when no unit is given).
    pub fn parse(input: &str) -> Result<Rtt, ParseError> {
        let secs = duration_secs("duration", input, 1e-3, RTT_ACCEPTED)?;
        Ok(Rtt(positive("duration", input, secs, RTT_ACCEPTED)?))
    }
    /// `15 ms`, `250 µs`, `2.5 s`, `1 h 23 min`, `9 d 6 h` for long transfers.
    pub fn human(self) -> String {
        let s = self.0;
        if s >= 86_400.0 {
            let total_h = (s / 3600.0).round() as u64;
            format!("{} d {} h", total_h / 24, total_h % 24)
        } else if s >= 3600.0 {
            let total_min = (s / 60.0).round() as u64;
            format!("{} h {} min", total_min / 60, total_min % 60)
        } else if s >= 120.0 {
            let total = s.round() as u64;
            format!("{} min {} s", total / 60, total % 60)
        } else if s >= 1.0 {
            format!("{} s", sig(s, 4))
        } else if s >= 1e-3 {
            format!("{} ms", sig(s * 1e3, 4))
        } else {
            format!("{} µs", sig(s * 1e6, 4))
        }
    }
}

impl fmt::Display for Rtt {
    /// Parseable: `15 ms` below a second, `2.5 s` above.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 >= 1.0 {
            write!(f, "{} s", self.0)
        } else {
            write!(f, "{} ms", self.0 * 1e3)
        }
    }
}

/// Seconds per unit of a time unit; `""` (a bare number) is `bare`.
fn time_unit(unit: &str, bare: f64) -> Option<f64> {
    Some(match unit {
        "" => bare,
        "ms" | "msec" => 1e-3,
        "s" | "sec" | "secs" => 1.0,
        "us" | "µs" | "usec" => 1e-6,
        "ns" => 1e-9,
        "min" => 60.0,
        "h" => 3600.0,
        _ => return None,
    })
}

/// A duration in seconds (possibly zero or negative; callers check the range).
fn duration_secs(
    what: &'static str,
    input: &str,
    bare: f64,
    accepted: &'static str,
) -> Result<f64, ParseError> {
    let (v, unit) = split_number(what, input, accepted)?;
    let mult = time_unit(&unit, bare)
        .ok_or_else(|| err(what, input, format!("unknown unit '{unit}'"), accepted))?;
    Ok(v * mult)
}

const SECONDS_ACCEPTED: &str = "10, 2.5, 10s, 500ms, 2min; a bare number is seconds";
const MILLIS_ACCEPTED: &str = "5000, 5000ms, 5s, 1min; a bare number is milliseconds";

/// Parses a length of time where a bare number counts seconds, as iperf3's
/// `-t`, `-i` and `-O` do: `10`, `2.5`, `10s`, `500ms`, `2min`. Zero is
/// accepted (`-i 0` means no interval reports); a negative time is not.
pub fn parse_seconds(input: &str) -> Result<f64, ParseError> {
    let secs = duration_secs("time", input, 1.0, SECONDS_ACCEPTED)?;
    if secs < 0.0 {
        return Err(err("time", input, "is negative", SECONDS_ACCEPTED));
    }
    Ok(secs)
}

/// Parses a whole number of seconds (`--max-duration 60`, `1min`); a
/// fraction is refused rather than rounded.
pub fn parse_whole_seconds(input: &str) -> Result<u64, ParseError> {
    let secs = parse_seconds(input)?;
    if secs.fract() != 0.0 || secs > 1e12 {
        return Err(err(
            "time",
            input,
            "is not a whole number of seconds",
            SECONDS_ACCEPTED,
        ));
    }
    Ok(secs as u64)
}

/// Parses a timeout where a bare number counts milliseconds, as iperf3's
/// `--connect-timeout` and `--rcv-timeout` do: `5000`, `5s`, `1min`.
/// Rounded to whole milliseconds; zero and negative times are refused.
pub fn parse_millis(input: &str) -> Result<u64, ParseError> {
    let secs = duration_secs("timeout", input, 1e-3, MILLIS_ACCEPTED)?;
    let ms = (secs * 1e3).round();
    if ms < 1.0 {
        return Err(err(
            "timeout",
            input,
            "must be at least 1 ms",
            MILLIS_ACCEPTED,
        ));
    }
    if ms > 1e12 {
        return Err(err("timeout", input, "too large", MILLIS_ACCEPTED));
    }
    Ok(ms as u64)
}

/// A packet loss probability in (0, 1].
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct LossRate(f64);

impl LossRate {
    /// A probability, or `None` unless 0 < p ≤ 1.
    pub fn from_probability(p: f64) -> Option<LossRate> {
        (p.is_finite() && p > 0.0 && p <= 1.0).then_some(LossRate(p))
    }
    /// The probability p.
    pub fn probability(self) -> f64 {
        self.0
    }
    /// Parses `0.01%`, `1e-4`, `0.0001`. A bare number above 1 is refused rather
    /// than guessed to be a percentage.
    pub fn parse(input: &str) -> Result<LossRate, ParseError> {
        let (v, unit) = split_number("loss rate", input, LOSS_ACCEPTED)?;
        let p = match unit.as_str() {
            "%" => v / 100.0,
            "" => {
                if v > 1.0 {
                    return Err(err(
                        "loss rate",
                        input,
                        format!("a bare number is a probability and must be at most 1; did you mean {v}%?"),
                        LOSS_ACCEPTED,
                    ));
                }
                v
            }
            "ppm" => v / 1e6,
            _ => {
                return Err(err(
                    "loss rate",
                    input,
                    format!("unknown unit '{unit}'"),
                    LOSS_ACCEPTED,
                ))
            }
        };
        if p <= 0.0 {
            return Err(err(
                "loss rate",
                input,
                "must be greater than zero (leave out --loss for a lossless path)",
                LOSS_ACCEPTED,
            ));
        }
        if p > 1.0 {
            return Err(err("loss rate", input, "cannot exceed 100%", LOSS_ACCEPTED));
        }
        Ok(LossRate(p))
    }
}

impl fmt::Display for LossRate {
    /// Parseable percentage: `0.01%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.0 * 100.0)
    }
}

/// A one-way path length, in kilometres.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Distance(f64);

impl Distance {
    /// A distance of `km` kilometres, or `None` unless finite and > 0.
    pub fn from_km(km: f64) -> Option<Distance> {
        (km.is_finite() && km > 0.0).then_some(Distance(km))
    }
    /// Kilometres.
    pub fn km(self) -> f64 {
        self.0
    }
    /// Parses `1000km`, `1000` (km), `600mi`, `5000m`.
    pub fn parse(input: &str) -> Result<Distance, ParseError> {
        let (v, unit) = split_number("distance", input, DISTANCE_ACCEPTED)?;
        let mult = match unit.as_str() {
            "" | "km" => 1.0,
            "m" => 1e-3,
            "mi" | "miles" => 1.609_344,
            _ => {
                return Err(err(
                    "distance",
                    input,
                    format!("unknown unit '{unit}'"),
                    DISTANCE_ACCEPTED,
                ))
            }
        };
        Ok(Distance(positive(
            "distance",
            input,
            v * mult,
            DISTANCE_ACCEPTED,
        )?))
    }
}

impl fmt::Display for Distance {
    /// Parseable: `1000 km`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} km", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= a.abs().max(b.abs()) * 4.0 * f64::EPSILON
    }

    #[test]
    fn rates_people_type() {
        for (s, bps) in [
            ("1G", 1e9),
            ("1Gbit", 1e9),
            ("1gbit", 1e9),
            ("100Mbps", 100e6),
            ("10M", 10e6),
            ("1.5e9", 1.5e9),
            ("125MB/s", 1e9),
            ("1 Gbit/s", 1e9),
            ("9.344 Mbit/s", 9.344e6),
            ("200k", 200e3),
        ] {
            assert!(close(Rate::parse(s).expect(s).bps(), bps), "{s}");
        }
    }

    #[test]
    fn sizes_people_type() {
        for (s, n) in [
            ("17520", 17_520),
            ("17,520", 17_520),
            ("64K", 65_536),
            ("64KiB", 65_536),
            ("64k", 65_536),
            ("1.25MB", 1_250_000),
            ("2M", 2 << 20),
            ("1TB", 1_000_000_000_000),
            ("65535", 65_535),
            ("8Mbit", 1_000_000),
        ] {
            assert_eq!(Bytes::parse(s).expect(s).get(), n, "{s}");
        }
    }

    #[test]
    fn durations_losses_distances() {
        assert!(close(
            Rtt::parse("15ms").unwrap_or_else(|e| panic!("{e}")).secs(),
            0.015
        ));
        assert!(close(
            Rtt::parse("0.1s").unwrap_or_else(|e| panic!("{e}")).secs(),
            0.1
        ));
        assert!(close(
            Rtt::parse("15").unwrap_or_else(|e| panic!("{e}")).secs(),
            0.015
        ));
        assert!(close(
            Rtt::parse("250us").unwrap_or_else(|e| panic!("{e}")).secs(),
            250e-6
        ));
        assert!(close(
            LossRate::parse("0.01%")
                .unwrap_or_else(|e| panic!("{e}"))
                .probability(),
            1e-4
        ));
        assert!(close(
            LossRate::parse("1e-4")
                .unwrap_or_else(|e| panic!("{e}"))
                .probability(),
            1e-4
        ));
        assert!(close(
            Distance::parse("1000km")
                .unwrap_or_else(|e| panic!("{e}"))
                .km(),
            1000.0
        ));
        assert!(close(
            Distance::parse("5000m")
                .unwrap_or_else(|e| panic!("{e}"))
                .km(),
            5.0
        ));
    }

    #[test]
    fn bad_input_names_the_value() {
        for (r, needle) in [
            (
                Rate::parse("1Gbananas").map(|_| ()),
                "unknown unit 'Gbananas'",
            ),
            (Rate::parse("-1G").map(|_| ()), "greater than zero"),
            (Rate::parse("0").map(|_| ()), "greater than zero"),
            (Rate::parse("fast").map(|_| ()), "no number"),
            (Rate::parse("inf").map(|_| ()), "no number"),
            (Bytes::parse("0").map(|_| ()), "greater than zero"),
            (Bytes::parse("1,2").map(|_| ()), "comma"),
            (Rtt::parse("15 fortnights").map(|_| ()), "unknown unit"),
            (LossRate::parse("5").map(|_| ()), "did you mean 5%"),
            (LossRate::parse("0").map(|_| ()), "greater than zero"),
            (LossRate::parse("150%").map(|_| ()), "100%"),
            (Distance::parse("far").map(|_| ()), "no number"),
        ] {
            let e = r.expect_err(needle).to_string();
            assert!(e.contains(needle), "{e:?} lacks {needle:?}");
            assert!(e.contains("accepted:"), "{e}");
        }
    }

    #[test]
    fn seconds_and_millis_as_iperf3_counts_them() {
        assert_eq!(parse_seconds("10"), Ok(10.0));
        assert_eq!(parse_seconds("2.5s"), Ok(2.5));
        assert_eq!(parse_seconds("500ms"), Ok(0.5));
        assert_eq!(parse_seconds("2min"), Ok(120.0));
        assert_eq!(parse_seconds("0"), Ok(0.0));
        assert_eq!(parse_whole_seconds("1min"), Ok(60));
        assert_eq!(parse_millis("5000"), Ok(5000));
        assert_eq!(parse_millis("5s"), Ok(5000));
        assert_eq!(parse_millis("1.5ms"), Ok(2));
        for (r, needle) in [
            (parse_seconds("3x").map(|_| ()), "unknown unit 'x'"),
            (parse_seconds("-1").map(|_| ()), "negative"),
            (parse_seconds("").map(|_| ()), "no number"),
            (parse_whole_seconds("1.5").map(|_| ()), "whole number"),
            (parse_millis("0").map(|_| ()), "at least 1 ms"),
            (parse_millis("5 parsecs").map(|_| ()), "unknown unit"),
        ] {
            let e = r.expect_err(needle).to_string();
            assert!(e.contains(needle), "{e:?} lacks {needle:?}");
            assert!(
                e.contains("accepted:") && e.contains("a bare number is"),
                "{e}"
            );
        }
    }

    #[test]
    fn human_forms() {
        assert_eq!(
            Rate::from_bps(9_344_000.0).map(Rate::human).as_deref(),
            Some("9.344 Mbit/s")
        );
        assert_eq!(Bytes(1_875_000).human(), "1,875,000 B (1.875 MB)");
        assert_eq!(Bytes(17_520).human(), "17,520 B");
        assert_eq!(thousands(1_488_095), "1,488,095");
        assert_eq!(
            Rtt::from_secs(5000.0).map(Rtt::human).as_deref(),
            Some("1 h 23 min")
        );
        assert_eq!(
            Rtt::from_secs(856_164.0).map(Rtt::human).as_deref(),
            Some("9 d 22 h")
        );
        assert_eq!(Bytes(65_536).to_string(), "64 KiB");
        assert_eq!(Bytes(1_875_000).to_string(), "1875 kB");
        assert_eq!(Bytes(17_520).to_string(), "17520 B");
    }

    proptest! {
        #[test]
        fn printed_rates_parse_back(bps in 1e-3f64..1e15) {
            let r = Rate::from_bps(bps).expect("positive");
            let back = Rate::parse(&r.to_string()).expect("parses");
            prop_assert!(close(back.bps(), bps), "{} -> {}", bps, back.bps());
        }

        #[test]
        fn printed_sizes_parse_back(n in 1u64..(1u64 << 52)) {
            prop_assert_eq!(Bytes::parse(&Bytes(n).to_string()).expect("parses"), Bytes(n));
        }

        #[test]
        fn printed_durations_parse_back(s in 1e-9f64..1e6) {
            let d = Rtt::from_secs(s).expect("positive");
            let back = Rtt::parse(&d.to_string()).expect("parses");
            prop_assert!(close(back.secs(), s));
        }

        #[test]
        fn printed_losses_parse_back(p in 1e-12f64..=1.0) {
            let l = LossRate::from_probability(p).expect("in range");
            let back = LossRate::parse(&l.to_string()).expect("parses");
            prop_assert!(close(back.probability(), p));
        }

        #[test]
        fn printed_distances_parse_back(km in 1e-3f64..1e6) {
            let d = Distance::from_km(km).expect("positive");
            prop_assert!(close(Distance::parse(&d.to_string()).expect("parses").km(), km));
        }

        #[test]
        fn arbitrary_text_never_panics(s in ".{0,24}") {
            let _ = Rate::parse(&s);
            let _ = Bytes::parse(&s);
            let _ = Rtt::parse(&s);
            let _ = LossRate::parse(&s);
            let _ = Distance::parse(&s);
        }
    }
}
