//! Tolerant serde helpers for numbers written by any iperf3 version.
//!
//! iperf3 does not distinguish integers from floats, and 3.12/3.13 print a
//! signed −1 as the unsigned `18446744073709551615` (spec §6.3). These
//! helpers accept every such spelling; other JSON types are still errors.

use std::fmt;

use serde::de::{self, DeserializeOwned, Visitor};
use serde::{Deserialize, Deserializer, Serializer};

/// An integer from any JSON number: floats truncate toward zero (saturating),
/// and unsigned values of 2^63 or more are the −1 quirk.
pub(crate) fn int_from_u64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(-1)
}

/// Truncates like C's cast from double, but saturating instead of undefined.
pub(crate) fn int_from_f64(v: f64) -> i64 {
    v as i64
}

struct SignedVisitor;

impl Visitor<'_> for SignedVisitor {
    type Value = i64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        Ok(int_from_u64(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<i64, E> {
        Ok(int_from_f64(v))
    }
}

struct UnsignedVisitor;

impl Visitor<'_> for UnsignedVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a non-negative number")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        if v < 0.0 {
            return Err(E::invalid_value(de::Unexpected::Float(v), &self));
        }
        Ok(v as u64)
    }
}

/// `i64` from any JSON number (see [`int_from_u64`]).
pub(crate) fn signed<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    d.deserialize_any(SignedVisitor)
}

/// Optional `i64` from any JSON number; `null` reads as absent.
pub(crate) fn opt_signed<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    struct Wrap(i64);
    impl<'de> Deserialize<'de> for Wrap {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Wrap, D::Error> {
            signed(d).map(Wrap)
        }
    }
    Ok(Option::<Wrap>::deserialize(d)?.map(|w| w.0))
}

/// `u64` from any non-negative JSON number.
pub(crate) fn unsigned<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    d.deserialize_any(UnsignedVisitor)
}

/// `u32` from any non-negative JSON number that fits.
pub(crate) fn unsigned32<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let v = unsigned(d)?;
    u32::try_from(v)
        .map_err(|_| de::Error::invalid_value(de::Unexpected::Unsigned(v), &"a 32-bit number"))
}

/// Writes a float, replacing NaN and infinities by 0 (JSON cannot carry
/// them, and iperf3 would reject the `null` serde_json writes instead).
pub(crate) fn finite<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(if v.is_finite() { *v } else { 0.0 })
}

/// An optional extension object that is dropped, not fatal, when it does not
/// parse — so a newer or buggy peer's extras never fail the iperf3 exchange.
pub(crate) fn ignore_invalid<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let value = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(value).ok())
}

/// The longest text plumb keeps from a peer's extension field, bytes: a
/// `uname` line is well under it, and a hostile peer cannot make a `-J`
/// document or a report line arbitrarily long.
pub(crate) const MAX_PEER_TEXT: usize = 512;

/// The most sysctl entries plumb keeps from a peer (it sends about a dozen).
pub(crate) const MAX_PEER_SYSCTLS: usize = 64;

/// A peer's free text made safe to print: control characters (terminal
/// escapes, newlines) become spaces and the text is cut to at most `max`
/// bytes on a character boundary.
pub(crate) fn bounded_text(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max));
    for c in s.chars() {
        let c = if c.is_control() { ' ' } else { c };
        if out.len() + c.len_utf8() > max {
            break;
        }
        out.push(c);
    }
    out
}

/// An optional string field of a peer's extension: anything but a string
/// (a number, an object, `null`) reads as absent without failing the rest of
/// the object, and a string is bounded by [`bounded_text`].
pub(crate) fn opt_peer_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Some(bounded_text(&s, MAX_PEER_TEXT)),
        _ => None,
    })
}

/// A string-to-string map from a peer (its sysctls): entries whose value is
/// not a string are dropped, keys and values are bounded by [`bounded_text`],
/// and at most [`MAX_PEER_SYSCTLS`] entries are kept (the first by key
/// order); anything but an object reads as empty.
pub(crate) fn peer_text_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<std::collections::BTreeMap<String, String>, D::Error> {
    let serde_json::Value::Object(m) = serde_json::Value::deserialize(d)? else {
        return Ok(Default::default());
    };
    let mut out = std::collections::BTreeMap::new();
    for (k, v) in m {
        if let serde_json::Value::String(v) = v {
            out.insert(
                bounded_text(&k, MAX_PEER_TEXT),
                bounded_text(&v, MAX_PEER_TEXT),
            );
        }
    }
    while out.len() > MAX_PEER_SYSCTLS {
        out.pop_last();
    }
    Ok(out)
}
