//! Which connections a command looks at: `--port`, `--peer`, `--pid`,
//! `--conn`. Pure: the pid test takes the owner the caller found.

use std::net::{IpAddr, SocketAddr};

use crate::diag::Conn;

/// A connection filter; every given part must match.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// A port at either end.
    pub port: Option<u16>,
    /// The peer's address, and port when given.
    pub peer: Option<(IpAddr, Option<u16>)>,
    /// The owning process.
    pub pid: Option<u32>,
    /// Exactly this pair of ends, either way round.
    pub conn: Option<(SocketAddr, SocketAddr)>,
}

/// Parses `ADDR`, `ADDR:PORT` or `[V6]:PORT`.
pub fn parse_peer(s: &str) -> Result<(IpAddr, Option<u16>), String> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok((a.ip(), Some(a.port())));
    }
    let bare = s.trim_start_matches('[').trim_end_matches(']');
    bare.parse::<IpAddr>()
        .map(|ip| (ip, None))
        .map_err(|_| format!("--peer {s}: not an address or address:port"))
}

/// Parses `SRC:SPORT,DST:DPORT` (IPv6 as `[ADDR]:PORT`).
pub fn parse_conn(s: &str) -> Result<(SocketAddr, SocketAddr), String> {
    let bad = || format!("--conn {s}: expected SRC:SPORT,DST:DPORT");
    let (a, b) = s.split_once(',').ok_or_else(bad)?;
    Ok((
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    ))
}

impl Filter {
    /// Nothing given: everything matches.
    pub fn is_empty(&self) -> bool {
        *self == Filter::default()
    }

    /// A port every match has at one end or the other, when the filter
    /// implies one: the kernel can then skip the other sockets itself
    /// (`Dumper::port`).
    pub fn kernel_port(&self) -> Option<u16> {
        self.port
            .or(self.conn.map(|(a, _)| a.port()))
            .or(self.peer.and_then(|(_, p)| p))
    }

    /// Whether `c`, owned by `pid` when known, matches.
    pub fn matches(&self, c: &Conn, pid: Option<u32>) -> bool {
        if let Some(p) = self.port {
            if c.local.port() != p && c.remote.port() != p {
                return false;
            }
        }
        if let Some((ip, port)) = self.peer {
            if c.remote.ip() != ip || port.is_some_and(|p| p != c.remote.port()) {
                return false;
            }
        }
        if let Some(want) = self.pid {
            if pid != Some(want) {
                return false;
            }
        }
        if let Some((a, b)) = self.conn {
            let same = (c.local == a && c.remote == b) || (c.local == b && c.remote == a);
            if !same {
                return false;
            }
        }
        true
    }

    /// The filter in words, for messages: its flags, or `any connection`.
    pub fn describe(&self) -> String {
        let f = self;
        let mut v = Vec::new();
        if let Some(p) = f.port {
            v.push(format!("--port {p}"));
        }
        if let Some((ip, p)) = f.peer {
            v.push(match p {
                Some(p) => format!("--peer {}", std::net::SocketAddr::new(ip, p)),
                None => format!("--peer {ip}"),
            });
        }
        if let Some(p) = f.pid {
            v.push(format!("--pid {p}"));
        }
        if let Some((a, b)) = f.conn {
            v.push(format!("--conn {a},{b}"));
        }
        if v.is_empty() {
            "any connection".into()
        } else {
            v.join(" ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        assert_eq!(
            parse_peer("10.0.0.1").ok(),
            Some(("10.0.0.1".parse().expect("ip"), None))
        );
        assert_eq!(
            parse_peer("[::1]:80").ok(),
            Some(("::1".parse().expect("ip"), Some(80)))
        );
        assert!(parse_peer("nope").is_err());
        assert!(parse_conn("1.2.3.4:5,6.7.8.9:10").is_ok());
        assert!(parse_conn("1.2.3.4:5").is_err());
    }

    #[test]
    fn kernel_port_is_one_every_match_has() {
        assert_eq!(Filter::default().kernel_port(), None);
        let peer = Filter {
            peer: parse_peer("10.0.0.1:873").ok(),
            ..Filter::default()
        };
        assert_eq!(peer.kernel_port(), Some(873));
        let conn = Filter {
            conn: parse_conn("1.2.3.4:5,6.7.8.9:10").ok(),
            ..Filter::default()
        };
        assert_eq!(conn.kernel_port(), Some(5));
        let port = Filter {
            port: Some(22),
            ..conn
        };
        assert_eq!(port.kernel_port(), Some(22));
    }
}
