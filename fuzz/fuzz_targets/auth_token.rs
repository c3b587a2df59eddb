//! What an unauthenticated client controls in authentication: the token
//! (Base64, RSA with either padding, then the plaintext) and — for the
//! operator's own files — the users file and PEM parsers.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use plumb_proto::auth::{self, Credentials, PrivateKey, UsersFile};

/// A fixed key for the whole run (made once; 512 bits keeps decryption cheap).
fn key() -> &'static PrivateKey {
    static KEY: OnceLock<PrivateKey> = OnceLock::new();
    KEY.get_or_init(|| PrivateKey::generate(512).expect("key"))
}

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = Credentials::parse(data) {
        assert_eq!(Credentials::parse(c.plaintext().as_bytes()), Ok(c));
    }
    let text = String::from_utf8_lossy(data);
    let users = UsersFile::parse(&text).unwrap_or_default();
    let _ = auth::public_key_from_pem(&text);
    let _ = auth::private_key_from_pem(&text);
    let _ = auth::authenticate(key(), &users, Some(&text), 0, 10);
});
