//! The server's operator limits and both ends' authentication flags,
//! checked and turned into [`ServerConfig`] / [`ClientAuth`] fields.
//! Reading the key and users files happens here, once, at start-up.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use plumb_model::Rate;
use plumb_net::config::auth::{self, Padding};
use plumb_net::config::{ClientAuth, IpPrefix, ServerAuth, ServerConfig};

/// Environment variable holding the client's password, as for iperf3.
pub const PASSWORD_ENV: &str = "IPERF3_PASSWORD";

/// Server limits and authentication flags (iperf3's names where it has them).
#[derive(Debug, Args, Clone, Default)]
pub struct HardenArgs {
    /// Server: tests that may run at the same time (1 = iperf3: others are "busy")
    #[arg(long = "max-tests", value_name = "N", value_parser = crate::args::whole::<usize>)]
    pub max_tests: Option<usize>,
    /// Server: longest test a client may ask for, seconds (time + omit; caps -n/-k tests too)
    #[arg(
        long = "max-duration",
        alias = "server-max-duration",
        value_name = "SECS",
        value_parser = crate::args::whole_seconds
    )]
    pub max_duration: Option<u64>,
    /// Server: most parallel streams a client may ask for
    #[arg(long = "max-parallel", value_name = "N", value_parser = crate::args::whole::<u32>)]
    pub max_parallel: Option<u32>,
    /// Server: most bit/s one test may ask for and use, all streams together (clients must give -b)
    #[arg(
        long = "max-bitrate",
        value_name = "RATE",
        value_parser = crate::args::valid(crate::args::rate)
    )]
    pub max_bitrate: Option<String>,
    /// Server: listen anew after SECS with no client (with -1: exit) (iperf3's)
    #[arg(long = "idle-timeout", value_name = "SECS", value_parser = crate::args::whole_seconds)]
    pub idle_timeout: Option<u64>,
    /// Server: end a test averaging over RATE bit/s over SECS [default: 5] (iperf3's)
    #[arg(long = "server-bitrate-limit", value_name = "RATE[/SECS]", value_parser = crate::args::valid(parse_cap))]
    pub server_bitrate_limit: Option<String>,
    /// Server: most bit/s all running tests together may ask for
    #[arg(long = "max-total-bitrate", value_name = "RATE", value_parser = crate::args::valid(crate::args::rate))]
    pub max_total_bitrate: Option<String>,
    /// Server: largest request or response a --rr/--crr test may ask for, bytes [default: 1M]
    #[arg(long = "max-rr-size", value_name = "BYTES", value_parser = crate::args::valid(crate::args::bytes))]
    pub max_rr_size: Option<String>,
    /// Server: most request/response transactions in flight per stream (--rr-burst) [default: 1024]
    #[arg(long = "max-rr-burst", value_name = "N", value_parser = crate::args::whole::<u32>)]
    pub max_rr_burst: Option<u32>,
    /// Server: accept clients only from these prefixes (repeatable, or comma-separated)
    #[arg(long = "allow", value_name = "PREFIX", value_delimiter = ',')]
    pub allow: Vec<String>,
    /// Server: refuse clients from these prefixes (wins over --allow)
    #[arg(long = "deny", value_name = "PREFIX", value_delimiter = ',')]
    pub deny: Vec<String>,
    /// Server: drop a connection that has not sent its cookie and parameters within this many ms [default: 10000]
    #[arg(long = "handshake-timeout", value_name = "MS", value_parser = crate::args::millis)]
    pub handshake_timeout: Option<u64>,
    /// Server: connections that may be mid-handshake at once; the oldest is dropped past it [default: 256]
    #[arg(long = "max-handshakes", value_name = "N", value_parser = crate::args::whole::<usize>)]
    pub max_handshakes: Option<usize>,
    /// Server: RSA private key (PEM, unencrypted) for authentication
    #[arg(long = "rsa-private-key-path", value_name = "FILE")]
    pub rsa_private_key_path: Option<PathBuf>,
    /// Server: authorized users, lines of user,sha256("{user}password") in hex
    #[arg(long = "authorized-users-path", value_name = "FILE")]
    pub authorized_users_path: Option<PathBuf>,
    /// Server: refuse tokens whose time differs from the server's by more than this, seconds [default: 10]
    #[arg(long = "time-skew-threshold", value_name = "SECS", value_parser = crate::args::whole_seconds)]
    pub time_skew_threshold: Option<u64>,
    /// Client: user name to authenticate with (password from IPERF3_PASSWORD)
    #[arg(long = "username", value_name = "NAME")]
    pub username: Option<String>,
    /// Client: the server's RSA public key (PEM) for authentication
    #[arg(long = "rsa-public-key-path", value_name = "FILE")]
    pub rsa_public_key_path: Option<PathBuf>,
    /// Client: PKCS#1 v1.5 padding for the token (iperf3 servers up to 3.16, e.g. Debian's 3.12)
    #[arg(long = "use-pkcs1-padding")]
    pub use_pkcs1_padding: bool,
}

fn parse_rate(flag: &str, s: &str) -> Result<u64, String> {
    let bps = Rate::parse(s)
        .map_err(|e| format!("invalid {flag} '{s}': {e}"))?
        .bps()
        .round();
    if bps < 1.0 {
        return Err(format!("invalid {flag} '{s}': must be above 0"));
    }
    Ok(bps as u64)
}

fn read(flag: &str, path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {flag} {}: {e}", path.display()))
}

impl HardenArgs {
    /// The first server-only flag given, by name.
    pub fn server_flags_given(&self) -> Option<&'static str> {
        [
            (self.max_tests.is_some(), "--max-tests"),
            (self.max_duration.is_some(), "--max-duration"),
            (self.max_parallel.is_some(), "--max-parallel"),
            (self.max_bitrate.is_some(), "--max-bitrate"),
            (
                self.server_bitrate_limit.is_some(),
                "--server-bitrate-limit",
            ),
            (self.max_total_bitrate.is_some(), "--max-total-bitrate"),
            (self.max_rr_size.is_some(), "--max-rr-size"),
            (self.max_rr_burst.is_some(), "--max-rr-burst"),
            (!self.allow.is_empty(), "--allow"),
            (!self.deny.is_empty(), "--deny"),
            (self.handshake_timeout.is_some(), "--handshake-timeout"),
            (self.max_handshakes.is_some(), "--max-handshakes"),
            (
                self.rsa_private_key_path.is_some(),
                "--rsa-private-key-path",
            ),
            (
                self.authorized_users_path.is_some(),
                "--authorized-users-path",
            ),
            (self.time_skew_threshold.is_some(), "--time-skew-threshold"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name))
    }

    fn client_flags_given(&self) -> Option<&'static str> {
        [
            (self.username.is_some(), "--username"),
            (self.rsa_public_key_path.is_some(), "--rsa-public-key-path"),
            (self.use_pkcs1_padding, "--use-pkcs1-padding"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name))
    }

    /// Applies the server flags to `cfg`, reading the key and users files.
    pub fn apply_server(&self, cfg: &mut ServerConfig) -> Result<(), String> {
        if let Some(f) = self.client_flags_given() {
            return Err(format!("{f} is a client option (use it with -c)"));
        }
        self.apply_admission(cfg)?;
        self.apply_limits(cfg)?;
        for p in &self.allow {
            cfg.access.allow.push(IpPrefix::parse(p)?);
        }
        for p in &self.deny {
            cfg.access.deny.push(IpPrefix::parse(p)?);
        }
        cfg.auth = self.server_auth()?;
        Ok(())
    }

    /// How many tests and handshakes the server takes, and for how long it
    /// waits on a handshake or an idle client.
    fn apply_admission(&self, cfg: &mut ServerConfig) -> Result<(), String> {
        if let Some(n) = self.max_tests {
            cfg.max_tests = ranged("--max-tests", n, 1, 1024, "")?;
        }
        if let Some(n) = self.max_handshakes {
            cfg.max_pending = ranged("--max-handshakes", n, 1, 65_536, "")?;
        }
        if let Some(ms) = self.handshake_timeout {
            let ms = ranged("--handshake-timeout", ms, 100, 600_000, " ms")?;
            cfg.handshake_timeout = Duration::from_millis(ms);
        }
        if let Some(s) = self.idle_timeout {
            let s = ranged("--idle-timeout", s, 1, 86_400, " seconds")?;
            cfg.idle_timeout = Some(Duration::from_secs(s));
        }
        Ok(())
    }

    /// What one test may ask for: its length, streams, rates and
    /// request/response sizes.
    fn apply_limits(&self, cfg: &mut ServerConfig) -> Result<(), String> {
        let l = &mut cfg.limits;
        if let Some(s) = self.max_duration {
            let s = ranged("--max-duration", s, 1, 86_400, " seconds")?;
            l.max_duration = Some(Duration::from_secs(s));
        }
        if let Some(n) = self.max_parallel {
            l.max_parallel = Some(ranged("--max-parallel", n, 1, 128, "")?);
        }
        if let Some(r) = &self.max_bitrate {
            l.max_bitrate = Some(parse_rate("--max-bitrate", r)?);
        }
        if let Some(c) = &self.server_bitrate_limit {
            l.bitrate_cap = Some(parse_cap(c)?);
        }
        if let Some(r) = &self.max_total_bitrate {
            l.max_total_bitrate = Some(parse_rate("--max-total-bitrate", r)?);
        }
        if let Some(b) = &self.max_rr_size {
            let max = plumb_net::rr::MAX_TCP_MESSAGE;
            let n = crate::args::bytes(b)
                .map_err(|e| format!("invalid --max-rr-size '{b}': {e}"))?
                .get();
            if !(1..=u64::from(max)).contains(&n) {
                return Err(format!(
                    "invalid --max-rr-size '{b}': expected 1 to {max} bytes"
                ));
            }
            l.max_rr_size = u32::try_from(n).ok();
        }
        if let Some(n) = self.max_rr_burst {
            let max = plumb_net::rr::MAX_BURST;
            l.max_rr_burst = Some(ranged("--max-rr-burst", n, 1, max, "")?);
        }
        Ok(())
    }

    /// The server's authentication, from the key and users files: both
    /// flags or neither.
    fn server_auth(&self) -> Result<Option<Arc<ServerAuth>>, String> {
        match (&self.rsa_private_key_path, &self.authorized_users_path) {
            (None, None) => {
                if self.time_skew_threshold.is_some() {
                    return Err("--time-skew-threshold needs --rsa-private-key-path and --authorized-users-path".into());
                }
                Ok(None)
            }
            (Some(k), Some(u)) => {
                let private_key = auth::private_key_from_pem(&read("--rsa-private-key-path", k)?)
                    .map_err(|e| format!("{}: {e}", k.display()))?;
                let users = auth::UsersFile::parse(&read("--authorized-users-path", u)?)
                    .map_err(|e| format!("{}: {e}", u.display()))?;
                if users.is_empty() {
                    return Err(format!("{}: lists no user", u.display()));
                }
                Ok(Some(Arc::new(ServerAuth {
                    private_key,
                    users,
                    skew_secs: self.time_skew_threshold.unwrap_or(auth::DEFAULT_SKEW_SECS),
                })))
            }
            _ => Err(
                "authentication needs both --rsa-private-key-path and --authorized-users-path"
                    .into(),
            ),
        }
    }

    /// The client's credentials, if it is to authenticate; `password` is
    /// the value of [`PASSWORD_ENV`].
    pub fn client_auth(&self, password: Option<String>) -> Result<Option<ClientAuth>, String> {
        if let Some(f) = self.server_flags_given() {
            return Err(format!("{f} is a server option (use it with -s)"));
        }
        let (user, key) = match (&self.username, &self.rsa_public_key_path) {
            (None, None) => {
                if self.use_pkcs1_padding {
                    return Err(
                        "--use-pkcs1-padding needs --username and --rsa-public-key-path".into(),
                    );
                }
                return Ok(None);
            }
            (Some(u), Some(k)) => (u, k),
            _ => {
                return Err("authentication needs both --username and --rsa-public-key-path".into())
            }
        };
        if user.is_empty() || user.chars().any(|c| c.is_whitespace() || c == ',') {
            return Err(format!("invalid --username '{user}': no spaces or commas"));
        }
        let Some(password) = password.filter(|p| !p.is_empty()) else {
            return Err(format!(
                "--username needs the password in the environment variable {PASSWORD_ENV}"
            ));
        };
        if password.chars().any(char::is_whitespace) {
            return Err(format!(
                "{PASSWORD_ENV} must not contain spaces (iperf3 cannot carry them)"
            ));
        }
        let public_key = auth::public_key_from_pem(&read("--rsa-public-key-path", key)?)
            .map_err(|e| format!("{}: {e}", key.display()))?;
        Ok(Some(ClientAuth {
            username: user.clone(),
            password,
            public_key,
            padding: if self.use_pkcs1_padding {
                Padding::Pkcs1v15
            } else {
                Padding::Oaep
            },
        }))
    }
}

/// iperf3's `--server-bitrate-limit RATE[/SECS]`: the rate, and the window
/// it is averaged over (5 s unless given, 1 to 3600).
fn parse_cap(s: &str) -> Result<(u64, Duration), String> {
    let (rate, secs) = s.split_once('/').unwrap_or((s, "5"));
    let bps = crate::args::rate(rate).map(|r| r.bps().round() as u64)?;
    if bps == 0 {
        return Err(format!("invalid rate '{rate}': give a rate above 0"));
    }
    match secs.trim().parse::<u64>() {
        Ok(n @ 1..=3600) => Ok((bps, Duration::from_secs(n))),
        _ => Err(format!(
            "invalid averaging time '{secs}' in '{s}' (accepted: 1 to 3600 seconds)"
        )),
    }
}

/// `v` if it lies in `lo..=hi`, else the flag's one-line error
/// ("invalid --max-tests 0: expected 1 to 1024", `unit` after the range).
fn ranged<T: PartialOrd + std::fmt::Display + Copy>(
    flag: &str,
    v: T,
    lo: T,
    hi: T,
    unit: &str,
) -> Result<T, String> {
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(format!("invalid {flag} {v}: expected {lo} to {hi}{unit}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_limits_are_checked() {
        let mut cfg = ServerConfig::default();
        let h = HardenArgs {
            max_tests: Some(4),
            max_duration: Some(60),
            max_parallel: Some(8),
            max_bitrate: Some("1G".into()),
            allow: vec!["127.0.0.0/8".into(), "::1".into()],
            deny: vec!["127.0.0.2".into()],
            handshake_timeout: Some(2000),
            ..HardenArgs::default()
        };
        h.apply_server(&mut cfg).expect("valid");
        assert_eq!(cfg.max_tests, 4);
        assert_eq!(cfg.limits.max_bitrate, Some(1_000_000_000));
        assert_eq!(cfg.access.allow.len(), 2);
        assert_eq!(cfg.handshake_timeout, Duration::from_millis(2000));
        for bad in [
            HardenArgs {
                max_tests: Some(0),
                ..HardenArgs::default()
            },
            HardenArgs {
                max_bitrate: Some("fast".into()),
                ..HardenArgs::default()
            },
            HardenArgs {
                max_bitrate: Some("0".into()),
                ..HardenArgs::default()
            },
            HardenArgs {
                allow: vec!["10.0.0.1/8".into()],
                ..HardenArgs::default()
            },
            HardenArgs {
                handshake_timeout: Some(5),
                ..HardenArgs::default()
            },
            HardenArgs {
                username: Some("u".into()),
                ..HardenArgs::default()
            },
            HardenArgs {
                rsa_private_key_path: Some("k".into()),
                ..HardenArgs::default()
            },
            HardenArgs {
                time_skew_threshold: Some(3),
                ..HardenArgs::default()
            },
        ] {
            assert!(
                bad.apply_server(&mut ServerConfig::default()).is_err(),
                "{bad:?}"
            );
        }
        // Each range check names its flag, the value and the range.
        let said = |h: HardenArgs| h.apply_server(&mut ServerConfig::default()).err();
        let tests = said(HardenArgs {
            max_tests: Some(0),
            ..HardenArgs::default()
        });
        assert_eq!(
            tests.as_deref(),
            Some("invalid --max-tests 0: expected 1 to 1024")
        );
        let wait = said(HardenArgs {
            handshake_timeout: Some(5),
            ..HardenArgs::default()
        });
        assert_eq!(
            wait.as_deref(),
            Some("invalid --handshake-timeout 5: expected 100 to 600000 ms")
        );
        let idle = said(HardenArgs {
            idle_timeout: Some(0),
            ..HardenArgs::default()
        });
        assert_eq!(
            idle.as_deref(),
            Some("invalid --idle-timeout 0: expected 1 to 86400 seconds")
        );
    }

    #[test]
    fn client_auth_needs_user_key_and_password() {
        assert_eq!(HardenArgs::default().client_auth(None), Ok(None));
        let h = HardenArgs {
            username: Some("mario".into()),
            rsa_public_key_path: Some("/nonexistent.pem".into()),
            ..HardenArgs::default()
        };
        let e = h.client_auth(None).expect_err("no password");
        assert!(e.contains("IPERF3_PASSWORD"), "{e}");
        let e = h.client_auth(Some("pw".into())).expect_err("no key file");
        assert!(e.contains("/nonexistent.pem"), "{e}");
        let server_flag = HardenArgs {
            max_tests: Some(2),
            ..HardenArgs::default()
        };
        assert!(server_flag.client_auth(None).is_err());
    }

    #[test]
    fn server_bitrate_limit_reads_rate_and_window() {
        assert_eq!(parse_cap("100M"), Ok((100_000_000, Duration::from_secs(5))));
        assert_eq!(
            parse_cap("1G/2"),
            Ok((1_000_000_000, Duration::from_secs(2)))
        );
        assert!(parse_cap("1G/0").is_err_and(|e| e.contains("'0'")));
        assert!(parse_cap("0").is_err());
        assert!(parse_cap("fast/5").is_err());
    }
}
