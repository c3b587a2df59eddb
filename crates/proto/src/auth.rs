//! iperf3's authentication token, sans I/O (`docs/protocol.md`,
//! "Authentication").
//!
//! This module owns the token's plaintext (`user: …` / `pwd:  …` / `ts:   …`),
//! its RSA encryption and Base64 wrapping, the authorized-users file, the
//! password hash and the clock-skew check. It reads no file and no clock:
//! keys and files come in as text, the time as a number of Unix seconds.
//! The RSA arithmetic is the system's OpenSSL (the library iperf3 itself
//! uses), whose decryption is constant-time and blinded; OpenSSL also draws
//! the padding's and the blinding's randomness from its own generator, so the
//! only non-determinism here is inside the ciphertext.
//!
//! Padding: iperf3 up to 3.16 encrypts with PKCS#1 v1.5, 3.17+ with OAEP
//! (SHA-1, MGF1-SHA-1) unless `--use-pkcs1-padding`. A server here accepts
//! both: it tries OAEP, then PKCS#1 v1.5, and answers every failure alike.

use base64::Engine as _;
use openssl::encrypt::{Decrypter, Encrypter};
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Private, Public};
use openssl::rsa::{Padding as RsaPadding, Rsa};
use sha2::{Digest, Sha256};

/// A server's RSA private key (`--rsa-private-key-path`).
#[derive(Clone)]
pub struct PrivateKey(PKey<Private>);

/// A server's RSA public key, as a client holds it (`--rsa-public-key-path`).
#[derive(Clone)]
pub struct PublicKey(PKey<Public>);

impl PrivateKey {
    /// A fresh key of `bits` bits (tests and the fuzz target; servers read
    /// theirs with [`private_key_from_pem`]).
    pub fn generate(bits: u32) -> Result<PrivateKey, AuthError> {
        Rsa::generate(bits)
            .and_then(PKey::from_rsa)
            .map(PrivateKey)
            .map_err(|e| AuthError::Key {
                what: "private",
                detail: e.to_string(),
            })
    }

    /// The matching public key.
    pub fn public_key(&self) -> PublicKey {
        let der = self
            .0
            .public_key_to_der()
            .and_then(|d| PKey::public_key_from_der(&d));
        // Re-reading the DER OpenSSL just wrote from a valid key cannot fail.
        PublicKey(der.unwrap_or_else(|e| unreachable!("public half of an RSA key: {e}")))
    }

    /// The key as PKCS#8 PEM (`BEGIN PRIVATE KEY`).
    pub fn to_pkcs8_pem(&self) -> String {
        pem_text(self.0.private_key_to_pem_pkcs8())
    }

    /// The key as PKCS#1 PEM (`BEGIN RSA PRIVATE KEY`).
    pub fn to_pkcs1_pem(&self) -> String {
        pem_text(self.0.rsa().and_then(|r| r.private_key_to_pem()))
    }

    /// The modulus size, bits.
    pub fn bits(&self) -> u32 {
        self.0.bits()
    }
}

impl PublicKey {
    /// The key as SubjectPublicKeyInfo PEM (`BEGIN PUBLIC KEY`).
    pub fn to_pem(&self) -> String {
        pem_text(self.0.public_key_to_pem())
    }

    /// The modulus size, bits.
    pub fn bits(&self) -> u32 {
        self.0.bits()
    }
}

fn pem_text(r: Result<Vec<u8>, openssl::error::ErrorStack>) -> String {
    // OpenSSL writes PEM as ASCII; an encoder failure on a valid key would
    // be an OpenSSL bug, so it shows as an empty text rather than a panic.
    r.map(|v| String::from_utf8_lossy(&v).into_owned())
        .unwrap_or_default()
}

impl PartialEq for PrivateKey {
    fn eq(&self, other: &Self) -> bool {
        // Same public half and same private exponent: the same key.
        self.0.public_eq(&other.0)
            && match (self.0.rsa(), other.0.rsa()) {
                (Ok(a), Ok(b)) => a.d() == b.d(),
                _ => false,
            }
    }
}

impl PartialEq for PublicKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.public_eq(&other.0)
    }
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key material.
        write!(f, "PrivateKey(RSA {} bits)", self.bits())
    }
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey(RSA {} bits)", self.bits())
    }
}

/// iperf3's default `--time-skew-threshold`, seconds.
pub const DEFAULT_SKEW_SECS: u64 = 10;

/// Longest Base64 token accepted: a 16384-bit key's ciphertext (2 KiB) is
/// 2732 characters; anything longer is not a token.
pub const MAX_TOKEN_LEN: usize = 4096;

/// Longest user name or password carried (the plaintext must fit one RSA
/// block anyway: 2048-bit PKCS#1 leaves 245 bytes).
pub const MAX_FIELD_LEN: usize = 512;

/// Why authentication failed or a key or users file could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The server requires a token and the parameters had none.
    #[error("no authentication token in the parameters")]
    Missing,
    /// The token was not Base64 or was too long.
    #[error("the authentication token is not Base64 ({0})")]
    Base64(String),
    /// Neither padding decrypted the token with the server's key.
    #[error("the authentication token does not decrypt with the server's key")]
    Decrypt,
    /// The decrypted text is not `user: …\npwd:  …\nts:   …`.
    #[error("the decrypted token is malformed: {0}")]
    Plaintext(&'static str),
    /// The token's time is too far from the server's.
    #[error("the token's time is {skew} s away from the server's (more than {threshold} s)")]
    Skew {
        /// |server time − token time|, seconds.
        skew: u64,
        /// The configured threshold, seconds.
        threshold: u64,
    },
    /// The user is unknown or the password does not match.
    #[error("user '{0}' is unknown or the password is wrong")]
    BadCredentials(String),
    /// Encrypting failed (plaintext longer than the key allows).
    #[error("cannot encrypt the credentials: {0}")]
    Encrypt(String),
    /// A key file could not be read as an RSA key.
    #[error("not an RSA {what} key in PEM form: {detail}")]
    Key {
        /// "public" or "private".
        what: &'static str,
        /// The parser's complaint.
        detail: String,
    },
    /// A line of the users file is not `user,sha256hex`.
    #[error("authorized users file, line {line}: {reason}")]
    UsersFile {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// RSA padding for the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Padding {
    /// OAEP with SHA-1 (iperf3 3.17+ default).
    #[default]
    Oaep,
    /// PKCS#1 v1.5 (iperf3 ≤3.16, or `--use-pkcs1-padding`).
    Pkcs1v15,
}

/// What the token carries.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The user name.
    pub username: String,
    /// The password, in clear.
    pub password: String,
    /// Unix seconds when the token was made.
    pub timestamp: i64,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the password, not even in a debug log.
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("timestamp", &self.timestamp)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// The plaintext iperf3 encrypts: one, two and three spaces after the
    /// colons, LF between lines, no trailing newline.
    pub fn plaintext(&self) -> String {
        format!(
            "user: {}\npwd:  {}\nts:   {}",
            self.username, self.password, self.timestamp
        )
    }

    /// Parses the plaintext. iperf3 reads it with `sscanf("%s")`, so names
    /// and passwords cannot hold whitespace; the same is required here.
    pub fn parse(text: &[u8]) -> Result<Credentials, AuthError> {
        let text = std::str::from_utf8(text).map_err(|_| AuthError::Plaintext("not UTF-8"))?;
        let mut lines = text.split('\n');
        let mut field = |prefix: &str, what: &'static str| -> Result<String, AuthError> {
            let line = lines.next().ok_or(AuthError::Plaintext(what))?;
            let value = line
                .strip_prefix(prefix)
                .ok_or(AuthError::Plaintext(what))?;
            if value.is_empty()
                || value.len() > MAX_FIELD_LEN
                || value.chars().any(|c| c.is_whitespace() || c.is_control())
            {
                return Err(AuthError::Plaintext(what));
            }
            Ok(value.to_string())
        };
        let username = field("user: ", "no 'user: ' line")?;
        let password = field("pwd:  ", "no 'pwd:  ' line")?;
        let ts = field("ts:   ", "no 'ts:   ' line")?;
        if lines.next().is_some() {
            return Err(AuthError::Plaintext("text after the 'ts:' line"));
        }
        let timestamp = ts
            .parse::<i64>()
            .map_err(|_| AuthError::Plaintext("the time is not an integer"))?;
        Ok(Credentials {
            username,
            password,
            timestamp,
        })
    }
}

/// The users-file hash: lowercase hex of SHA-256 over `{user}password`.
pub fn password_hash(username: &str, password: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"{");
    h.update(username.as_bytes());
    h.update(b"}");
    h.update(password.as_bytes());
    hex(&h.finalize())
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

/// The authorized-users file: `user,sha256hex` per line, `#` comments and
/// blank lines ignored.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct UsersFile {
    entries: Vec<(String, String)>,
}

impl std::fmt::Debug for UsersFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UsersFile")
            .field("users", &self.entries.len())
            .finish()
    }
}

impl UsersFile {
    /// Parses the file's text; a malformed line is an error naming it, so an
    /// operator's typo does not silently lock a user out.
    pub fn parse(text: &str) -> Result<UsersFile, AuthError> {
        let mut entries = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let err = |reason| AuthError::UsersFile {
                line: i + 1,
                reason,
            };
            let (user, hash) = line.split_once(',').ok_or(err("expected user,sha256hex"))?;
            let (user, hash) = (user.trim(), hash.trim().to_ascii_lowercase());
            if user.is_empty() || user.chars().any(char::is_whitespace) {
                return Err(err("the user name is empty or has spaces"));
            }
            if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(err("the hash is not 64 hex digits"));
            }
            entries.push((user.to_string(), hash));
        }
        Ok(UsersFile { entries })
    }

    /// How many users the file lists.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the file lists no user.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `password` is right for `username`. Every entry is compared
    /// in full, so the time taken does not tell which byte differed.
    pub fn check(&self, username: &str, password: &str) -> bool {
        let want = password_hash(username, password);
        let mut ok = false;
        for (user, hash) in &self.entries {
            let same_hash = hash
                .bytes()
                .zip(want.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
            ok |= user == username && same_hash;
        }
        ok
    }
}

/// Checks the token's time against the server's: iperf3 refuses when they
/// differ by more than the threshold, either way.
pub fn check_skew(token_secs: i64, now_secs: i64, threshold_secs: u64) -> Result<(), AuthError> {
    let skew = now_secs.abs_diff(token_secs);
    if skew > threshold_secs {
        return Err(AuthError::Skew {
            skew,
            threshold: threshold_secs,
        });
    }
    Ok(())
}

/// Reads a PEM public key: `BEGIN PUBLIC KEY` (what `openssl rsa -pubout`
/// writes and iperf3 reads) or `BEGIN RSA PUBLIC KEY`.
pub fn public_key_from_pem(pem: &str) -> Result<PublicKey, AuthError> {
    let pem = pem.trim().as_bytes();
    let key = match PKey::public_key_from_pem(pem) {
        Ok(k) => Ok(k),
        Err(_) => Rsa::public_key_from_pem_pkcs1(pem).and_then(PKey::from_rsa),
    };
    let err = |detail: String| AuthError::Key {
        what: "public",
        detail,
    };
    let key = key.map_err(|e| err(first_reason(&e)))?;
    if key.rsa().is_err() {
        return Err(err("the key is not an RSA key".into()));
    }
    Ok(PublicKey(key))
}

/// Reads an unencrypted PEM private key: `BEGIN PRIVATE KEY` (PKCS#8, what
/// OpenSSL 3 writes) or `BEGIN RSA PRIVATE KEY` (PKCS#1).
pub fn private_key_from_pem(pem: &str) -> Result<PrivateKey, AuthError> {
    let pem = pem.trim();
    let err = |detail: String| AuthError::Key {
        what: "private",
        detail,
    };
    if pem.contains("ENCRYPTED") {
        return Err(err("the key is passphrase-protected; remove the passphrase (openssl rsa -in KEY -out PLAIN)".into()));
    }
    // An empty passphrase from the callback: OpenSSL must never prompt on
    // the terminal for a key that turns out to be encrypted after all.
    let key = PKey::private_key_from_pem_callback(pem.as_bytes(), |_| Ok(0))
        .map_err(|e| err(first_reason(&e)))?;
    match key.rsa() {
        // Refuse a key whose numbers do not fit together (a corrupted file).
        Ok(rsa) if rsa.check_key().unwrap_or(false) => Ok(PrivateKey(key)),
        Ok(_) => Err(err("the RSA key's numbers are inconsistent".into())),
        Err(_) => Err(err("the key is not an RSA key".into())),
    }
}

/// OpenSSL's first complaint, for a one-line error.
fn first_reason(e: &openssl::error::ErrorStack) -> String {
    e.errors()
        .first()
        .and_then(openssl::error::Error::reason)
        .unwrap_or("not a PEM key")
        .to_string()
}

fn rsa_padding(padding: Padding) -> RsaPadding {
    match padding {
        Padding::Oaep => RsaPadding::PKCS1_OAEP,
        Padding::Pkcs1v15 => RsaPadding::PKCS1,
    }
}

/// The `authtoken` parameter: the plaintext encrypted with the server's
/// public key, Base64 without line breaks.
pub fn encrypt_token(
    key: &PublicKey,
    credentials: &Credentials,
    padding: Padding,
) -> Result<String, AuthError> {
    let text = credentials.plaintext();
    let sealed = (|| {
        let mut enc = Encrypter::new(&key.0)?;
        enc.set_rsa_padding(rsa_padding(padding))?;
        if padding == Padding::Oaep {
            enc.set_rsa_oaep_md(MessageDigest::sha1())?;
            enc.set_rsa_mgf1_md(MessageDigest::sha1())?;
        }
        let mut out = vec![0u8; enc.encrypt_len(text.as_bytes())?];
        let n = enc.encrypt(text.as_bytes(), &mut out)?;
        out.truncate(n);
        Ok::<_, openssl::error::ErrorStack>(out)
    })()
    .map_err(|e| {
        AuthError::Encrypt(format!(
            "{} ({} bytes of credentials for a {}-bit key)",
            first_reason(&e),
            text.len(),
            key.bits()
        ))
    })?;
    Ok(base64::engine::general_purpose::STANDARD.encode(sealed))
}

/// Decrypts with one padding; `None` on any failure (which failure is not
/// told apart, so no caller can answer differently).
fn decrypt_with(key: &PrivateKey, sealed: &[u8], padding: Padding) -> Option<Vec<u8>> {
    let run = || {
        let mut dec = Decrypter::new(&key.0)?;
        dec.set_rsa_padding(rsa_padding(padding))?;
        if padding == Padding::Oaep {
            dec.set_rsa_oaep_md(MessageDigest::sha1())?;
            dec.set_rsa_mgf1_md(MessageDigest::sha1())?;
        }
        let mut out = vec![0u8; dec.decrypt_len(sealed)?];
        let n = dec.decrypt(sealed, &mut out)?;
        out.truncate(n);
        Ok::<_, openssl::error::ErrorStack>(out)
    };
    run().ok()
}

/// Decodes and decrypts a token (OAEP first, then PKCS#1 v1.5) and parses
/// its plaintext.
pub fn decrypt_token(key: &PrivateKey, token: &str) -> Result<Credentials, AuthError> {
    if token.len() > MAX_TOKEN_LEN {
        return Err(AuthError::Base64(format!(
            "{} characters, more than {MAX_TOKEN_LEN}",
            token.len()
        )));
    }
    // Some encoders wrap lines; whitespace carries nothing in Base64.
    let compact: String = token.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let sealed = base64::engine::general_purpose::STANDARD
        .decode(compact.as_bytes())
        .map_err(|e| AuthError::Base64(e.to_string()))?;
    let plain = decrypt_with(key, &sealed, Padding::Oaep)
        .or_else(|| decrypt_with(key, &sealed, Padding::Pkcs1v15))
        .ok_or(AuthError::Decrypt)?;
    Credentials::parse(&plain)
}

/// What a server with authentication configured checks: the token is
/// present, decrypts, is fresh, and names a known user with the right
/// password. Returns the user name.
pub fn authenticate(
    key: &PrivateKey,
    users: &UsersFile,
    token: Option<&str>,
    now_secs: i64,
    skew_threshold_secs: u64,
) -> Result<String, AuthError> {
    let token = token.ok_or(AuthError::Missing)?;
    let c = decrypt_token(key, token)?;
    check_skew(c.timestamp, now_secs, skew_threshold_secs)?;
    if !users.check(&c.username, &c.password) {
        return Err(AuthError::BadCredentials(c.username));
    }
    Ok(c.username)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key() -> PrivateKey {
        // 1024 bits keeps the test quick; iperf3 keys are usually 2048.
        PrivateKey::generate(1024).expect("key")
    }

    fn creds(ts: i64) -> Credentials {
        Credentials {
            username: "mario".into(),
            password: "rossi".into(),
            timestamp: ts,
        }
    }

    #[test]
    fn plaintext_is_byte_exact() {
        assert_eq!(
            creds(1_700_000_000).plaintext(),
            "user: mario\npwd:  rossi\nts:   1700000000"
        );
        assert_eq!(
            Credentials::parse(b"user: mario\npwd:  rossi\nts:   1700000000"),
            Ok(creds(1_700_000_000))
        );
    }

    #[test]
    fn malformed_plaintext_is_refused() {
        for bad in [
            &b""[..],
            b"user: mario",
            b"user:  mario\npwd:  rossi\nts:   1",
            b"user: mario\npwd: rossi\nts:   1",
            b"user: mario\npwd:  rossi\nts:   x",
            b"user: mario\npwd:  rossi\nts:   1\n",
            b"user: ma rio\npwd:  rossi\nts:   1",
            b"user: \npwd:  rossi\nts:   1",
            b"\xff",
        ] {
            assert!(Credentials::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn hash_matches_iperf3_documentation_form() {
        // sha256("{mario}rossi"), as `echo -n "{mario}rossi" | sha256sum` prints.
        assert_eq!(
            password_hash("mario", "rossi"),
            "bf7a49a846d44b454a5d11e7acfaf13d138bbe0b7483aa3e050879700572709b"
        );
    }

    #[test]
    fn users_file() {
        let text = format!(
            "# comment\n\nmario,{}\n  luigi , {}  \n",
            password_hash("mario", "rossi"),
            password_hash("luigi", "verdi").to_uppercase()
        );
        let u = UsersFile::parse(&text).expect("parses");
        assert_eq!(u.len(), 2);
        assert!(u.check("mario", "rossi"));
        assert!(u.check("luigi", "verdi"));
        assert!(!u.check("mario", "verdi"));
        assert!(!u.check("peach", "rossi"));
        assert_eq!(
            UsersFile::parse("mario\n"),
            Err(AuthError::UsersFile {
                line: 1,
                reason: "expected user,sha256hex"
            })
        );
        assert!(UsersFile::parse("mario,abc\n").is_err());
    }

    #[test]
    fn skew() {
        assert!(check_skew(100, 110, 10).is_ok());
        assert!(check_skew(110, 100, 10).is_ok());
        assert_eq!(
            check_skew(100, 111, 10),
            Err(AuthError::Skew {
                skew: 11,
                threshold: 10
            })
        );
        assert!(check_skew(i64::MIN, i64::MAX, u64::MAX).is_ok());
    }

    #[test]
    fn round_trip_both_paddings() {
        let k = key();
        let users =
            UsersFile::parse(&format!("mario,{}", password_hash("mario", "rossi"))).expect("users");
        for padding in [Padding::Oaep, Padding::Pkcs1v15] {
            let t = encrypt_token(&k.public_key(), &creds(1000), padding).expect("encrypts");
            assert!(!t.contains('\n'));
            assert_eq!(
                t.len(),
                172,
                "1024-bit ciphertext is 128 bytes = 172 Base64 chars"
            );
            let who = authenticate(&k, &users, Some(&t), 1005, 10);
            assert_eq!(who, Ok("mario".to_string()));
            assert!(matches!(
                authenticate(&k, &users, Some(&t), 1011, 10,),
                Err(AuthError::Skew { .. })
            ));
        }
        let wrong = Credentials {
            password: "verdi".into(),
            ..creds(1000)
        };
        let t = encrypt_token(&k.public_key(), &wrong, Padding::Oaep).expect("encrypts");
        assert_eq!(
            authenticate(&k, &users, Some(&t), 1000, 10,),
            Err(AuthError::BadCredentials("mario".into()))
        );
        assert_eq!(
            authenticate(&k, &users, None, 1000, 10,),
            Err(AuthError::Missing)
        );
        // Not a ciphertext of this key: refused. OpenSSL 3.2 and later
        // answer a PKCS#1 v1.5 padding failure with a random plaintext
        // (implicit rejection, so that no padding oracle exists), which
        // then does not parse.
        assert!(matches!(
            authenticate(&k, &users, Some("AAAA"), 1000, 10,),
            Err(AuthError::Decrypt | AuthError::Plaintext(_))
        ));
        assert!(matches!(
            authenticate(&k, &users, Some("!!"), 1000, 10,),
            Err(AuthError::Base64(_))
        ));
    }

    #[test]
    fn pem_keys_in_both_forms() {
        let k = key();
        let p8 = k.to_pkcs8_pem();
        let p1 = k.to_pkcs1_pem();
        assert!(p8.starts_with("-----BEGIN PRIVATE KEY-----"), "{p8}");
        assert!(p1.starts_with("-----BEGIN RSA PRIVATE KEY-----"), "{p1}");
        assert_eq!(private_key_from_pem(&p8), Ok(k.clone()));
        assert_eq!(private_key_from_pem(&p1), Ok(k.clone()));
        assert_ne!(private_key_from_pem(&p8), Ok(key()), "another key differs");
        let public = k.public_key().to_pem();
        assert!(public.starts_with("-----BEGIN PUBLIC KEY-----"));
        assert_eq!(public_key_from_pem(&public), Ok(k.public_key()));
        let pkcs1_public = String::from_utf8(
            k.0.rsa()
                .and_then(|r| r.public_key_to_pem_pkcs1())
                .expect("pem"),
        )
        .expect("ascii");
        assert!(pkcs1_public.starts_with("-----BEGIN RSA PUBLIC KEY-----"));
        assert_eq!(public_key_from_pem(&pkcs1_public), Ok(k.public_key()));
        assert!(public_key_from_pem("garbage").is_err());
        assert!(private_key_from_pem(&public).is_err());
        assert!(private_key_from_pem("garbage").is_err());
        // An encrypted key is refused, never prompted for.
        let locked = String::from_utf8(
            k.0.private_key_to_pem_pkcs8_passphrase(
                openssl::symm::Cipher::aes_128_cbc(),
                b"secret",
            )
            .expect("pem"),
        )
        .expect("ascii");
        assert!(matches!(
            private_key_from_pem(&locked),
            Err(AuthError::Key {
                what: "private",
                ..
            })
        ));
    }

    /// iperf3 (3.17+) encrypts with OpenSSL's RSA_PKCS1_OAEP_PADDING and its
    /// defaults (SHA-1, MGF1-SHA-1), ≤3.16 with RSA_PKCS1_PADDING: tokens
    /// made that way decrypt here, and tokens made here decrypt that way.
    #[test]
    fn tokens_match_openssl_defaults_as_iperf3_uses_them() {
        let k = key();
        let rsa = k.0.rsa().expect("rsa");
        let text = creds(1).plaintext();
        for (padding, raw) in [
            (Padding::Oaep, RsaPadding::PKCS1_OAEP),
            (Padding::Pkcs1v15, RsaPadding::PKCS1),
        ] {
            let mut sealed = vec![0u8; rsa.size() as usize];
            let n = rsa
                .public_encrypt(text.as_bytes(), &mut sealed, raw)
                .expect("encrypts");
            let token = base64::engine::general_purpose::STANDARD.encode(&sealed[..n]);
            assert_eq!(decrypt_token(&k, &token), Ok(creds(1)), "{padding:?}");

            let ours = encrypt_token(&k.public_key(), &creds(1), padding).expect("encrypts");
            let ours = base64::engine::general_purpose::STANDARD
                .decode(ours)
                .expect("base64");
            let mut plain = vec![0u8; rsa.size() as usize];
            let n = rsa
                .private_decrypt(&ours, &mut plain, raw)
                .expect("decrypts");
            assert_eq!(&plain[..n], text.as_bytes(), "{padding:?}");
        }
    }

    #[test]
    fn a_token_too_long_for_the_key_is_an_error() {
        let long = Credentials {
            password: "p".repeat(200),
            ..creds(1)
        };
        assert!(matches!(
            encrypt_token(&key().public_key(), &long, Padding::Oaep),
            Err(AuthError::Encrypt(_))
        ));
    }

    #[test]
    fn a_token_for_another_key_does_not_decrypt() {
        let t = encrypt_token(&key().public_key(), &creds(1), Padding::Pkcs1v15).expect("enc");
        // (PKCS#1 v1.5 may, once in ~65,000 keys, unpad the wrong key's
        // output; its plaintext then fails to parse.)
        assert!(matches!(
            decrypt_token(&key(), &t),
            Err(AuthError::Decrypt | AuthError::Plaintext(_))
        ));
    }

    proptest! {
        #[test]
        fn plaintext_round_trips(
            user in "[!-~&&[^,]]{1,40}",
            pwd in "[!-~]{1,40}",
            ts in any::<i64>(),
        ) {
            let c = Credentials { username: user, password: pwd, timestamp: ts };
            prop_assert_eq!(Credentials::parse(c.plaintext().as_bytes()), Ok(c));
        }

        #[test]
        fn arbitrary_plaintext_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = Credentials::parse(&bytes);
        }

        #[test]
        fn arbitrary_users_file_never_panics(text in "\\PC{0,400}") {
            let _ = UsersFile::parse(&text);
        }
    }
}
