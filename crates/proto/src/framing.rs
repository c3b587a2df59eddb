//! Length-prefixed JSON messages (spec §2.3) and the limits on them.
//!
//! This module owns the `u32` big-endian length prefix, the limits that keep
//! a hostile peer cheap (a length cap checked as soon as the prefix arrives
//! and a nesting-depth cap checked by a byte scan before any parser
//! recursion), and the number style iperf3's JSON library prints: integral
//! values without a decimal point, others with 15 significant digits when
//! that reads back exactly and 17 otherwise. Which message is expected when
//! belongs to [`crate::client`] and [`crate::server`].

use std::io;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::ProtoError;

/// Default cap on one JSON message, in bytes. iperf3 3.18+ itself refuses
/// parameters over 8 KiB; results with a server's `-J` report can be larger.
pub const MAX_JSON_LEN: usize = 64 * 1024;

/// Default cap on JSON nesting. Real messages nest at most about 8 deep;
/// serde_json's own guard (128) would allow far more recursion than needed.
pub const MAX_JSON_DEPTH: usize = 32;

/// Size of the length prefix.
pub const PREFIX_LEN: usize = 4;

/// Limits applied to every JSON message a machine reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonLimits {
    /// Largest accepted length prefix, in bytes.
    pub max_len: usize,
    /// Deepest accepted nesting of arrays and objects.
    pub max_depth: usize,
}

impl Default for JsonLimits {
    fn default() -> JsonLimits {
        JsonLimits {
            max_len: MAX_JSON_LEN,
            max_depth: MAX_JSON_DEPTH,
        }
    }
}

/// Finds one complete frame at the start of `buf`.
///
/// Returns `Ok(None)` while more bytes are needed, or the JSON body and the
/// number of bytes the frame occupies. The length is checked against
/// `max_len` as soon as the prefix is complete, so an oversized frame is
/// refused before any of its body is buffered.
pub fn split_frame(buf: &[u8], max_len: usize) -> Result<Option<(&[u8], usize)>, ProtoError> {
    let Some(prefix) = buf.first_chunk::<PREFIX_LEN>() else {
        return Ok(None);
    };
    let len = u32::from_be_bytes(*prefix);
    let body_len = match usize::try_from(len) {
        Ok(n) if n <= max_len => n,
        _ => {
            return Err(ProtoError::FrameTooLong {
                len: u64::from(len),
                max: max_len,
            })
        }
    };
    let total = PREFIX_LEN + body_len;
    Ok(buf.get(PREFIX_LEN..total).map(|body| (body, total)))
}

/// Bytes a partial frame at the start of `buf` needs in all.
pub(crate) fn frame_need(buf: &[u8]) -> usize {
    match buf.first_chunk::<PREFIX_LEN>() {
        Some(prefix) => (u32::from_be_bytes(*prefix) as usize).saturating_add(PREFIX_LEN),
        None => 4,
    }
}

/// Fails if `json` nests arrays/objects deeper than `max_depth`.
///
/// A linear byte scan that skips string contents (including escaped quotes),
/// so arbitrarily deep input costs no recursion. Unbalanced brackets are left
/// for the parser to reject.
pub fn check_depth(json: &[u8], max_depth: usize) -> Result<(), ProtoError> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (offset, &byte) in json.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max_depth {
                    return Err(ProtoError::JsonTooDeep {
                        max: max_depth,
                        offset,
                    });
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Parses one message body after checking it against `limits`.
///
/// `what` names the message in errors ("parameters", "results").
pub fn decode_json<T: DeserializeOwned>(
    json: &[u8],
    limits: &JsonLimits,
    what: &'static str,
) -> Result<T, ProtoError> {
    if json.len() > limits.max_len {
        return Err(ProtoError::FrameTooLong {
            len: json.len() as u64,
            max: limits.max_len,
        });
    }
    check_depth(json, limits.max_depth)?;
    serde_json::from_slice(json).map_err(|e| ProtoError::InvalidJson {
        what,
        detail: e.to_string(),
    })
}

/// The frame at the start of `buf` decoded as `what` ([`split_frame`],
/// then [`decode_json`]), with the bytes it occupies; `Ok(None)` while more
/// bytes are needed.
pub(crate) fn read_frame<T: DeserializeOwned>(
    buf: &[u8],
    limits: &JsonLimits,
    what: &'static str,
) -> Result<Option<(T, usize)>, ProtoError> {
    let Some((body, len)) = split_frame(buf, limits.max_len)? else {
        return Ok(None);
    };
    Ok(Some((decode_json(body, limits, what)?, len)))
}

/// Serializes `value` as compact JSON with iperf3's number style.
pub fn encode_json<T: Serialize>(value: &T, what: &'static str) -> Result<Vec<u8>, ProtoError> {
    let mut out = Vec::with_capacity(256);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, IperfFormatter);
    value.serialize(&mut ser).map_err(|e| ProtoError::Encode {
        what,
        detail: e.to_string(),
    })?;
    Ok(out)
}

/// Appends `value` to `out` as one frame: length prefix, then [`encode_json`].
///
/// On error `out` is left as it was.
pub fn write_frame<T: Serialize>(
    value: &T,
    what: &'static str,
    out: &mut Vec<u8>,
) -> Result<(), ProtoError> {
    let json = encode_json(value, what)?;
    let len = u32::try_from(json.len()).map_err(|_| ProtoError::Encode {
        what,
        detail: format!("{} bytes do not fit the 32-bit length prefix", json.len()),
    })?;
    out.reserve(PREFIX_LEN + json.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&json);
    Ok(())
}

/// serde_json's compact output, except for how floating-point numbers look.
struct IperfFormatter;

impl serde_json::ser::Formatter for IperfFormatter {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(format_number(value).as_bytes())
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        self.write_f64(writer, f64::from(value))
    }
}

/// A number as iperf3's JSON printer writes it.
///
/// Integral values in `i64` range print as integers (`0`, not `0.0`). Others
/// use C's `%.15g` if that parses back to the same value, else `%.17g`.
/// iperf3 accepts 15 digits when they are merely within an epsilon; we demand
/// an exact read-back so nothing is lost. Non-finite values cannot be written
/// in JSON at all (serde_json would write `null`, which iperf3 3.18+ rejects
/// as a wrongly typed number); callers map them to 0 before they get here.
pub(crate) fn format_number(value: f64) -> String {
    if !value.is_finite() {
        return "0".to_owned();
    }
    // `as` saturates, mirroring the C library's clamped integer copy; the
    // comparison then fails for anything outside i64 range.
    let integral = value as i64;
    if integral as f64 == value {
        return integral.to_string();
    }
    let short = format_g(value, 15);
    if short.parse::<f64>() == Ok(value) {
        short
    } else {
        format_g(value, 17)
    }
}

/// C's `%.{precision}g` for a finite value.
fn format_g(value: f64, precision: usize) -> String {
    let precision = precision.max(1);
    let scientific = format!("{:.*e}", precision - 1, value);
    // Rust's `{:e}` always writes an `e`; the fallback only keeps this total.
    let Some((mantissa, exponent)) = scientific.split_once('e') else {
        return scientific;
    };
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let p = i32::try_from(precision).unwrap_or(i32::MAX);
    if exponent < -4 || exponent >= p {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{}e{}{:02}",
            trim_fraction(mantissa),
            sign,
            exponent.unsigned_abs()
        )
    } else {
        let decimals = usize::try_from(p - 1 - exponent).unwrap_or(0);
        trim_fraction(&format!("{value:.decimals$}")).to_owned()
    }
}

/// Drops trailing zeros after a decimal point, and the point if nothing is left.
fn trim_fraction(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn frame_needs_prefix_then_body() {
        let frame = [0, 0, 0, 2, b'{', b'}', 9];
        for cut in 0..6 {
            assert_eq!(split_frame(&frame[..cut], 10), Ok(None), "cut {cut}");
        }
        assert_eq!(split_frame(&frame, 10), Ok(Some((&b"{}"[..], 6))));
    }

    #[test]
    fn oversized_prefix_is_refused_before_the_body() {
        let err = split_frame(&[0xFF, 0xFF, 0xFF, 0xFF], MAX_JSON_LEN)
            .expect_err("4 GiB frame must be refused");
        assert_eq!(
            err.to_string(),
            "JSON length 4294967295 exceeds the 65536-byte limit"
        );
        // Exactly at the limit is fine.
        let at_limit = u32::try_from(MAX_JSON_LEN).expect("fits").to_be_bytes();
        assert_eq!(split_frame(&at_limit, MAX_JSON_LEN), Ok(None));
        let over = u32::try_from(MAX_JSON_LEN + 1).expect("fits").to_be_bytes();
        assert!(split_frame(&over, MAX_JSON_LEN).is_err());
    }

    #[test]
    fn depth_counts_brackets_outside_strings() {
        assert!(check_depth(br#"{"a":[{"b":[]}]}"#, 4).is_ok());
        assert_eq!(
            check_depth(br#"{"a":[{"b":[]}]}"#, 3),
            Err(ProtoError::JsonTooDeep { max: 3, offset: 11 })
        );
        // Brackets inside strings, including after an escaped quote, do not count.
        assert!(check_depth(br#"{"a":"[[[[\"[[[{{{"}"#, 1).is_ok());
        assert!(check_depth(br#"{"a":"\\","b":[[]]}"#, 2).is_err());
    }

    #[test]
    fn ten_thousand_levels_are_refused_by_the_scan() {
        let deep = vec![b'['; 10_000];
        let err = decode_json::<serde_json::Value>(&deep, &JsonLimits::default(), "results")
            .expect_err("too deep");
        assert_eq!(
            err,
            ProtoError::JsonTooDeep {
                max: MAX_JSON_DEPTH,
                offset: MAX_JSON_DEPTH
            }
        );
    }

    #[test]
    fn invalid_json_names_the_message() {
        let err = decode_json::<serde_json::Value>(b"{\"a\":", &JsonLimits::default(), "results")
            .expect_err("truncated");
        assert!(
            err.to_string().starts_with("invalid results JSON: EOF"),
            "{err}"
        );
    }

    #[test]
    // The literals are iperf3's printed digits, 17 significant ones.
    #[allow(clippy::excessive_precision)]
    fn numbers_look_like_iperf3s() {
        let cases = [
            (0.0, "0"),
            (-0.0, "0"),
            (2.0, "2"),
            (-1.0, "-1"),
            (2.000107, "2.000107"),
            (4.7310405731833773, "4.7310405731833773"),
            (0.99875517904982836, "0.99875517904982836"),
            (0.38708884303612379, "0.38708884303612379"),
            (2.4152191404253245e-05, "2.4152191404253245e-05"),
            (0.0001, "0.0001"),
            (1.5e-5, "1.5e-05"),
            (1e20, "1e+20"),
            (-2.5e300, "-2.5e+300"),
            (123456.75, "123456.75"),
            (f64::NAN, "0"),
            (f64::INFINITY, "0"),
        ];
        for (value, text) in cases {
            assert_eq!(format_number(value), text, "{value:e}");
        }
    }

    #[test]
    fn write_frame_prefixes_the_length() {
        let mut out = vec![0x0E];
        write_frame(&serde_json::json!({"a": 1.5}), "test", &mut out).expect("encodes");
        assert_eq!(out, b"\x0e\x00\x00\x00\x09{\"a\":1.5}");
    }

    proptest! {
        #[test]
        fn finite_numbers_read_back_exactly(value in any::<f64>().prop_filter("finite", |v| v.is_finite())) {
            let text = format_number(value);
            let back: f64 = text.parse().expect("valid number text");
            prop_assert_eq!(back, value, "{}", text);
            // It is also valid JSON.
            let via_json: f64 = serde_json::from_str(&text).expect("valid JSON number");
            prop_assert_eq!(via_json, value);
        }

        #[test]
        fn depth_scan_is_consistent(bytes in proptest::collection::vec(
            prop_oneof![Just(b'['), Just(b'{'), Just(b']'), Just(b'"'), Just(b'\\'), any::<u8>()], 0..512),
            max in 0usize..40,
        ) {
            match check_depth(&bytes, max) {
                Ok(()) => prop_assert!(check_depth(&bytes, max + 1).is_ok()),
                Err(ProtoError::JsonTooDeep { max: m, offset }) => {
                    prop_assert_eq!(m, max);
                    let opener = matches!(bytes[offset], b'[' | b'{');
                    prop_assert!(opener);
                    // The first byte over the limit is reported.
                    prop_assert!(check_depth(&bytes[..offset], max).is_ok());
                }
                Err(other) => prop_assert!(false, "unexpected {other}"),
            }
        }
    }
}
