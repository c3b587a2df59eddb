//! Lenient field types for the objects the record crate leaves untyped
//! (`diagnosis`, `plumb live`'s `live` and `connections`): a key that is
//! missing, `null` or of the wrong type reads as absent rather than failing
//! the whole object, and the readers that need to tell these apart can.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A key read as a `T` if it is one: absent, `null`, a `T`, or something
/// else.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Loose<T> {
    /// The key is not there.
    #[default]
    Absent,
    /// `null`.
    Null,
    /// A `T`.
    Is(T),
    /// Something that is not a `T`.
    Wrong,
}

impl<T> Loose<T> {
    /// The value, if it is a `T`.
    pub fn ok(self) -> Option<T> {
        match self {
            Loose::Is(v) => Some(v),
            _ => None,
        }
    }

    /// The value by reference, if it is a `T`.
    pub fn get(&self) -> Option<&T> {
        match self {
            Loose::Is(v) => Some(v),
            _ => None,
        }
    }
}

impl<'de, T: for<'a> Deserialize<'a>> Deserialize<'de> for Loose<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Null => Loose::Null,
            v => T::deserialize(v).map_or(Loose::Wrong, Loose::Is),
        })
    }
}

/// An object read as a `T`; anything else (an array, a number) reads as
/// `T::default()`, as an object without keys would.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Obj<T>(pub T);

impl<'de, T: for<'a> Deserialize<'a> + Default> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Obj(match Value::deserialize(d)? {
            v @ Value::Object(_) => T::deserialize(v).unwrap_or_default(),
            _ => T::default(),
        }))
    }
}

/// A scalar as the document wrote it (`"cubic"`, `5201`, `true`); nothing
/// for `null`, an array or an object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scalar {
    /// The scalar's text.
    pub text: Option<String>,
    /// The scalar, when it is a whole number of 0 or more.
    pub count: Option<u64>,
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(Scalar {
            text: match &v {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                Value::Bool(b) => Some(b.to_string()),
                _ => None,
            },
            count: v.as_u64(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, Deserialize)]
    #[serde(default)]
    struct T {
        n: Loose<f64>,
        o: Obj<Inner>,
        s: Scalar,
    }

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(default)]
    struct Inner {
        a: Loose<String>,
    }

    fn t(text: &str) -> T {
        serde_json::from_str(text).expect("an object")
    }

    #[test]
    fn absent_null_wrong_and_right() {
        assert_eq!(t("{}").n, Loose::Absent);
        assert_eq!(t(r#"{"n": null}"#).n, Loose::Null);
        assert_eq!(t(r#"{"n": "x"}"#).n, Loose::Wrong);
        assert_eq!(t(r#"{"n": 3}"#).n.ok(), Some(3.0));
        assert_eq!(t(r#"{"o": [1]}"#).o.0, Inner::default());
        assert_eq!(t(r#"{"o": {"a": "x"}}"#).o.0.a.ok().as_deref(), Some("x"));
        let s = t(r#"{"s": 5201}"#).s;
        assert_eq!((s.text.as_deref(), s.count), (Some("5201"), Some(5201)));
        assert_eq!(t(r#"{"s": true}"#).s.text.as_deref(), Some("true"));
        assert_eq!(t(r#"{"s": {"a": 1}}"#).s, Scalar::default());
    }
}
