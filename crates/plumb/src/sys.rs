//! The one foreign definition the binary makes: OpenSSL's `OPENSSL_init_ssl`,
//! so that no libssl code is linked in.
//!
//! Why: plumb uses libcrypto alone (RSA, AES and digests for iperf3's
//! authentication), but the `openssl` crate's one-time set-up calls
//! `OPENSSL_init_ssl`, libssl's entry point. OpenSSL is built from source
//! and linked statically (the crate's `vendored` feature), so that one call
//! would pull libssl's set-up out of `libssl.a`, and with it the TLS
//! methods, their error strings and what they reference: code and
//! relocated data that every start maps and the loader fixes up, which
//! `bench/run`'s start-up and memory rows count against iperf3, which
//! loads no TLS at all to make its tokens. The executable's own definition
//! takes the call; with nothing else of libssl referenced, the linker takes
//! no member of `libssl.a`.
//!
//! This holds only while nothing uses libssl. If a dependency ever needs it,
//! this definition would replace libssl's own set-up for libssl's callers too
//! (TLS would start without its cipher lists and error strings): remove it
//! then. The authentication interop test (`crates/plumb/tests/hostile.rs`)
//! checks that libssl's own set-up is not in the binary.
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};

// OpenSSL 3's option bits (`openssl/crypto.h`).
const LOAD_CRYPTO_STRINGS: u64 = 0x0000_0002;
const ADD_ALL_CIPHERS: u64 = 0x0000_0004;
const ADD_ALL_DIGESTS: u64 = 0x0000_0008;
const LOAD_CONFIG: u64 = 0x0000_0040;
const NO_LOAD_CONFIG: u64 = 0x0000_0080;
/// libssl's own bit (`openssl/ssl.h`); libcrypto has no TLS strings to load.
const LOAD_SSL_STRINGS: u64 = 0x0020_0000;

extern "C" {
    fn OPENSSL_init_crypto(opts: u64, settings: *const c_void) -> c_int;
}

/// Does what libssl's `OPENSSL_init_ssl` does for libcrypto — the same
/// options, with every cipher and digest and the configuration file loaded
/// as libssl asks for them — and leaves out its TLS part (the TLS methods
/// and their error strings), which plumb never uses. Error strings of
/// libcrypto are loaded so that a bad key's error names its reason.
///
/// # Safety
/// As OpenSSL's: `settings` is null or points to settings made by
/// `OPENSSL_INIT_new`.
#[no_mangle]
pub unsafe extern "C" fn OPENSSL_init_ssl(opts: u64, settings: *const c_void) -> c_int {
    let mut opts = (opts & !LOAD_SSL_STRINGS) | LOAD_CRYPTO_STRINGS;
    opts |= ADD_ALL_CIPHERS | ADD_ALL_DIGESTS;
    if opts & NO_LOAD_CONFIG == 0 {
        opts |= LOAD_CONFIG;
    }
    // SAFETY: the caller's contract is OpenSSL's, passed on unchanged.
    unsafe { OPENSSL_init_crypto(opts, settings) }
}
