//! Keys that are written with `null` when their value is unknown, read so
//! that a `null` stays a `null` and an absent key stays absent.
//!
//! A field `Option<Option<T>>` with `#[serde(default, deserialize_with =
//! "nullable::de", skip_serializing_if = "Option::is_none")]` reads an absent
//! key as `None`, `null` as `Some(None)` and a value as `Some(Some(v))`, and
//! writes each back as it was read.

use serde::{Deserialize, Deserializer};

/// Reads a present key: `null` is `Some(None)`.
pub fn de<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}
