//! [`Real`]: a JSON number that is a double in iperf3's schema but is
//! written as an integer where its value is integral.
//!
//! iperf3 prints its doubles with cJSON, which writes `0` and `10` for 0.0
//! and 10.0, while plumb writes some figures as floats (`0.0`) and others as
//! integers (`"start": 0` in `end`). A reader comparing documents as
//! `serde_json::Value`s tells `0` from `0.0`, so a `Real` remembers which of
//! the two it was read as, and writes it back the same way.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A number iperf3 defines as a double, with the JSON form it was read as
/// (or built with): an integer, or a float.
///
/// A `null` where a number belongs reads as a NaN float, which writes as
/// `null` again: `serde_json` writes a non-finite float as `null`, so a
/// document carrying a NaN figure round-trips.
///
/// Two `Real`s are equal when they would be written the same: `0` is not
/// `0.0`, as in `serde_json::Value`. Compare [`Real::get`] for the value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Real(Repr);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Repr {
    /// Written as a non-negative integer.
    Unsigned(u64),
    /// Written as a negative integer.
    Negative(i64),
    /// Written as a float (`null` when not finite).
    Float(f64),
}

impl Real {
    /// A value written as a float: `1.0` prints as `1.0`.
    pub fn float(v: f64) -> Self {
        Real(Repr::Float(v))
    }

    /// A value written as an integer: `1` prints as `1`.
    pub fn int(v: i64) -> Self {
        match u64::try_from(v) {
            Ok(u) => Real(Repr::Unsigned(u)),
            Err(_) => Real(Repr::Negative(v)),
        }
    }

    /// The value.
    pub fn get(self) -> f64 {
        match self.0 {
            Repr::Unsigned(u) => u as f64,
            Repr::Negative(i) => i as f64,
            Repr::Float(f) => f,
        }
    }

    /// Whether it is written as an integer.
    pub fn is_integer(self) -> bool {
        !matches!(self.0, Repr::Float(_))
    }
}

impl From<f64> for Real {
    fn from(v: f64) -> Self {
        Real::float(v)
    }
}

impl From<u64> for Real {
    fn from(v: u64) -> Self {
        Real(Repr::Unsigned(v))
    }
}

impl From<i64> for Real {
    fn from(v: i64) -> Self {
        Real::int(v)
    }
}

impl From<Real> for f64 {
    fn from(r: Real) -> f64 {
        r.get()
    }
}

impl fmt::Display for Real {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Repr::Unsigned(u) => write!(f, "{u}"),
            Repr::Negative(i) => write!(f, "{i}"),
            Repr::Float(x) => write!(f, "{x:?}"),
        }
    }
}

impl Serialize for Real {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Repr::Unsigned(u) => s.serialize_u64(u),
            Repr::Negative(i) => s.serialize_i64(i),
            Repr::Float(f) => s.serialize_f64(f),
        }
    }
}

impl<'de> Deserialize<'de> for Real {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RealVisitor)
    }
}

struct RealVisitor;

impl Visitor<'_> for RealVisitor {
    type Value = Real;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number or null")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Real, E> {
        Ok(Real(Repr::Unsigned(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Real, E> {
        Ok(Real::int(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Real, E> {
        Ok(Real::float(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Real, E> {
        Ok(Real::float(f64::NAN))
    }
    fn visit_none<E: de::Error>(self) -> Result<Real, E> {
        Ok(Real::float(f64::NAN))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn round(v: Value) -> Value {
        let r: Real = serde_json::from_value(v).expect("a number");
        serde_json::to_value(r).expect("serializes")
    }

    #[test]
    fn integers_stay_integers_and_floats_floats() {
        for v in [
            json!(0),
            json!(0.0),
            json!(10),
            json!(1.000042),
            json!(-3),
            json!(null),
        ] {
            assert_eq!(round(v.clone()), v);
        }
        assert_ne!(json!(0), json!(0.0), "the distinction this type keeps");
    }

    #[test]
    fn non_finite_writes_null_like_json_macro() {
        assert_eq!(
            serde_json::to_value(Real::float(f64::INFINITY)).expect("serializes"),
            json!(f64::INFINITY)
        );
        assert_eq!(Real::int(7).get(), 7.0);
        assert!(Real::from(3u64).is_integer());
    }
}
