//! The 37-byte test cookie (spec §2.1).
//!
//! This module owns making a cookie from random bytes, storing whatever a
//! peer sent, and comparing cookies the way iperf3 does: as C strings, i.e.
//! up to the first NUL. It does not produce randomness; the driver passes it in.

use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};

/// Length of a cookie on the wire, NUL included.
pub const COOKIE_LEN: usize = 37;

/// The 32 characters a fresh cookie is made of; each random byte picks one mod 32.
pub const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// A test cookie: the first 37 bytes on the control connection and on every
/// TCP data connection.
///
/// Equality, hashing and [`Cookie::as_str`] look only at the bytes before the
/// first NUL (all 37 if there is none), because iperf3 compares with `strcmp`.
#[derive(Clone, Copy)]
pub struct Cookie([u8; COOKIE_LEN]);

impl Cookie {
    /// A fresh cookie from 36 random bytes: each byte mod 32 indexes
    /// [`ALPHABET`], and a NUL ends it.
    pub fn from_random(random: &[u8; COOKIE_LEN - 1]) -> Cookie {
        let mut bytes = [0u8; COOKIE_LEN];
        for (out, r) in bytes.iter_mut().zip(random) {
            *out = ALPHABET[usize::from(r % 32)];
        }
        Cookie(bytes)
    }

    /// Whatever 37 bytes a peer sent; a server stores them unchecked.
    pub fn from_wire(bytes: &[u8; COOKIE_LEN]) -> Cookie {
        Cookie(*bytes)
    }

    /// The 37 bytes to send.
    pub fn as_bytes(&self) -> &[u8; COOKIE_LEN] {
        &self.0
    }

    /// The text up to the first NUL, with invalid UTF-8 replaced.
    pub fn as_str(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(c_str(&self.0))
    }

    /// Whether a data connection's 37 bytes carry this cookie (compared up to the NUL).
    pub fn matches(&self, received: &[u8; COOKIE_LEN]) -> bool {
        c_str(&self.0) == c_str(received)
    }
}

/// Whether a data connection's first 37 bytes carry `expected` — the server's
/// check before accepting a stream (a mismatch is answered with `FF`, spec §7).
pub fn matches(expected: &Cookie, received: &[u8; COOKIE_LEN]) -> bool {
    expected.matches(received)
}

/// The bytes before the first NUL, or all of them.
fn c_str(bytes: &[u8]) -> &[u8] {
    match bytes.iter().position(|&b| b == 0) {
        Some(end) => &bytes[..end],
        None => bytes,
    }
}

impl PartialEq for Cookie {
    fn eq(&self, other: &Cookie) -> bool {
        c_str(&self.0) == c_str(&other.0)
    }
}

impl Eq for Cookie {}

impl Hash for Cookie {
    fn hash<H: Hasher>(&self, state: &mut H) {
        c_str(&self.0).hash(state);
    }
}

impl fmt::Debug for Cookie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Cookie").field(&self.as_str()).finish()
    }
}

impl fmt::Display for Cookie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::COOKIE as CAPTURED;

    #[test]
    fn random_bytes_map_mod_32_onto_the_alphabet() {
        let mut random = [0u8; 36];
        for (i, r) in random.iter_mut().enumerate() {
            *r = (i as u8).wrapping_mul(37).wrapping_add(200);
        }
        random[0] = 0;
        random[1] = 31;
        random[2] = 32;
        random[3] = 255;
        let cookie = Cookie::from_random(&random);
        let bytes = cookie.as_bytes();
        assert_eq!(&bytes[..4], b"a7a7");
        assert_eq!(bytes[36], 0);
        for (b, r) in bytes[..36].iter().zip(random) {
            assert_eq!(*b, ALPHABET[usize::from(r % 32)]);
        }
        assert_eq!(cookie.as_str().len(), 36);
    }

    #[test]
    fn captured_cookie_reads_back() {
        let cookie = Cookie::from_wire(CAPTURED);
        assert_eq!(cookie.as_str(), "msxrfg3pyxzwys5sooc2raoot4nsd3dpnqdi");
        assert_eq!(cookie.as_bytes(), CAPTURED);
        assert_eq!(
            format!("{cookie:?}"),
            "Cookie(\"msxrfg3pyxzwys5sooc2raoot4nsd3dpnqdi\")"
        );
    }

    #[test]
    fn comparison_stops_at_the_nul() {
        let cookie = Cookie::from_wire(CAPTURED);
        let mut junk_after_nul = *CAPTURED;
        junk_after_nul[20] = 0;
        junk_after_nul[21] = b'!';
        let short = Cookie::from_wire(&junk_after_nul);
        let mut same_prefix = junk_after_nul;
        same_prefix[30] = b'?';
        assert!(!cookie.matches(&junk_after_nul));
        assert!(short.matches(&same_prefix));
        assert_eq!(short, Cookie::from_wire(&same_prefix));
        assert_ne!(short, cookie);
    }

    #[test]
    fn data_stream_check() {
        let cookie = Cookie::from_wire(CAPTURED);
        assert!(matches(&cookie, CAPTURED));
        let mut other = *CAPTURED;
        other[0] = b'n';
        assert!(!matches(&cookie, &other));
        // A cookie without any NUL compares all 37 bytes.
        let full = Cookie::from_wire(&[b'x'; COOKIE_LEN]);
        assert!(matches(&full, &[b'x'; COOKIE_LEN]));
        let mut last_differs = [b'x'; COOKIE_LEN];
        last_differs[36] = b'y';
        assert!(!matches(&full, &last_differs));
    }

    #[test]
    fn invalid_utf8_is_shown_lossily() {
        let mut bytes = [0u8; COOKIE_LEN];
        bytes[0] = 0xFF;
        bytes[1] = b'a';
        assert_eq!(Cookie::from_wire(&bytes).as_str(), "\u{FFFD}a");
    }
}
