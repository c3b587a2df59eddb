//! iperf3's authentication token (spec §10), sans I/O.
//!
//! This module owns the token's plaintext (`user: …` / `pwd:  …` / `ts:   …`),
//! its RSA encryption and Base64 wrapping, the authorized-users file, the
//! password hash and the clock-skew check. It reads no file, no clock and no
//! random device: keys and files come in as text, the time as a number of
//! Unix seconds, randomness as a caller's RNG — so every function here is
//! deterministic given its arguments and safe to fuzz.
//!
//! Padding: iperf3 up to 3.16 encrypts with PKCS#1 v1.5, 3.17+ with OAEP
//! (SHA-1, MGF1-SHA-1) unless `--use-pkcs1-padding`. A server here accepts
//! both: it tries OAEP, then PKCS#1 v1.5, and answers every failure alike.

use base64::Engine as _;
use rsa::pkcs1::{DecodeRsaPrivateKey, DecodeRsaPublicKey};
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rsa::rand_core::CryptoRngCore;
use rsa::{Oaep, Pkcs1v15Encrypt, RsaPrivateKey, RsaPublicKey};
use sha2::{Digest, Sha256};

pub use rsa::{RsaPrivateKey as PrivateKey, RsaPublicKey as PublicKey};

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
pub fn public_key_from_pem(pem: &str) -> Result<RsaPublicKey, AuthError> {
    let pem = pem.trim();
    RsaPublicKey::from_public_key_pem(pem)
        .or_else(|_| RsaPublicKey::from_pkcs1_pem(pem))
        .map_err(|e| AuthError::Key {
            what: "public",
            detail: e.to_string(),
        })
}

/// Reads an unencrypted PEM private key: `BEGIN PRIVATE KEY` (PKCS#8, what
/// OpenSSL 3 writes) or `BEGIN RSA PRIVATE KEY` (PKCS#1).
pub fn private_key_from_pem(pem: &str) -> Result<RsaPrivateKey, AuthError> {
    let pem = pem.trim();
    if pem.contains("ENCRYPTED") || pem.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(AuthError::Key {
            what: "private",
            detail: "the key is passphrase-protected; remove the passphrase (openssl rsa -in KEY -out PLAIN)".into(),
        });
    }
    RsaPrivateKey::from_pkcs8_pem(pem)
        .or_else(|_| RsaPrivateKey::from_pkcs1_pem(pem))
        .map_err(|e| AuthError::Key {
            what: "private",
            detail: e.to_string(),
        })
}

/// The `authtoken` parameter: the plaintext encrypted with the server's
/// public key, Base64 without line breaks.
pub fn encrypt_token(
    key: &RsaPublicKey,
    credentials: &Credentials,
    padding: Padding,
    rng: &mut impl CryptoRngCore,
) -> Result<String, AuthError> {
    let text = credentials.plaintext();
    let sealed = match padding {
        Padding::Oaep => key.encrypt(rng, Oaep::new::<sha1::Sha1>(), text.as_bytes()),
        Padding::Pkcs1v15 => key.encrypt(rng, Pkcs1v15Encrypt, text.as_bytes()),
    }
    .map_err(|e| AuthError::Encrypt(e.to_string()))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(sealed))
}

/// Decodes and decrypts a token (OAEP first, then PKCS#1 v1.5), with RSA
/// blinding from `rng`, and parses its plaintext.
pub fn decrypt_token(
    key: &RsaPrivateKey,
    token: &str,
    rng: &mut impl CryptoRngCore,
) -> Result<Credentials, AuthError> {
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
    let plain = key
        .decrypt_blinded(rng, Oaep::new::<sha1::Sha1>(), &sealed)
        .or_else(|_| key.decrypt_blinded(rng, Pkcs1v15Encrypt, &sealed))
        .map_err(|_| AuthError::Decrypt)?;
    Credentials::parse(&plain)
}

/// What a server with authentication configured checks: the token is
/// present, decrypts, is fresh, and names a known user with the right
/// password. Returns the user name.
pub fn authenticate(
    key: &RsaPrivateKey,
    users: &UsersFile,
    token: Option<&str>,
    now_secs: i64,
    skew_threshold_secs: u64,
    rng: &mut impl CryptoRngCore,
) -> Result<String, AuthError> {
    let token = token.ok_or(AuthError::Missing)?;
    let c = decrypt_token(key, token, rng)?;
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
    use rsa::rand_core::{CryptoRng, RngCore};

    /// A deterministic RNG: tests must not depend on the OS.
    struct Counter(u64);
    impl RngCore for Counter {
        fn next_u32(&mut self) -> u32 {
            self.next_u64() as u32
        }
        fn next_u64(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0
        }
        fn fill_bytes(&mut self, dest: &mut [u8]) {
            for b in dest {
                *b = (self.next_u64() >> 33) as u8;
            }
        }
        fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rsa::rand_core::Error> {
            self.fill_bytes(dest);
            Ok(())
        }
    }
    impl CryptoRng for Counter {}

    fn key() -> RsaPrivateKey {
        // 1024 bits keeps the test quick; iperf3 keys are usually 2048.
        RsaPrivateKey::new(&mut Counter(7), 1024).expect("key")
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
            let t = encrypt_token(&k.to_public_key(), &creds(1000), padding, &mut Counter(1))
                .expect("encrypts");
            assert!(!t.contains('\n'));
            assert_eq!(
                t.len(),
                172,
                "1024-bit ciphertext is 128 bytes = 172 Base64 chars"
            );
            let who = authenticate(&k, &users, Some(&t), 1005, 10, &mut Counter(2));
            assert_eq!(who, Ok("mario".to_string()));
            assert!(matches!(
                authenticate(&k, &users, Some(&t), 1011, 10, &mut Counter(2)),
                Err(AuthError::Skew { .. })
            ));
        }
        let wrong = Credentials {
            password: "verdi".into(),
            ..creds(1000)
        };
        let t = encrypt_token(&k.to_public_key(), &wrong, Padding::Oaep, &mut Counter(3))
            .expect("encrypts");
        assert_eq!(
            authenticate(&k, &users, Some(&t), 1000, 10, &mut Counter(4)),
            Err(AuthError::BadCredentials("mario".into()))
        );
        assert_eq!(
            authenticate(&k, &users, None, 1000, 10, &mut Counter(4)),
            Err(AuthError::Missing)
        );
        assert_eq!(
            authenticate(&k, &users, Some("AAAA"), 1000, 10, &mut Counter(4)),
            Err(AuthError::Decrypt)
        );
        assert!(matches!(
            authenticate(&k, &users, Some("!!"), 1000, 10, &mut Counter(4)),
            Err(AuthError::Base64(_))
        ));
    }

    #[test]
    fn pem_keys_in_both_forms() {
        use rsa::pkcs1::EncodeRsaPrivateKey;
        use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
        let k = key();
        let p8 = k.to_pkcs8_pem(LineEnding::LF).expect("pem");
        let p1 = k.to_pkcs1_pem(LineEnding::LF).expect("pem");
        assert_eq!(private_key_from_pem(&p8), Ok(k.clone()));
        assert_eq!(private_key_from_pem(&p1), Ok(k.clone()));
        let public = k
            .to_public_key()
            .to_public_key_pem(LineEnding::LF)
            .expect("pem");
        assert!(public.starts_with("-----BEGIN PUBLIC KEY-----"));
        assert_eq!(public_key_from_pem(&public), Ok(k.to_public_key()));
        assert!(public_key_from_pem("garbage").is_err());
        assert!(private_key_from_pem(&public).is_err());
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
