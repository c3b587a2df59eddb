//! A client's control connection: to the first of the server's addresses
//! that answers, with this end's own socket options on it; iperf3's client
//! and nuttcp's share it.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::config::ClientConfig;
use crate::errors::TestError;
use crate::sockets;

/// A control connection (with this end's `--bind-dev`, `--cntl-ka`, … on
/// it) to the first of `cfg.host`'s addresses on `cfg.port` that answers
/// within `timeout`.
pub fn connect_first(
    cfg: &ClientConfig,
    timeout: Option<Duration>,
) -> Result<(TcpStream, SocketAddr), TestError> {
    let addrs = sockets::resolve(&cfg.host, cfg.port, cfg.family).map_err(TestError::Connect)?;
    let mut last = None;
    for a in &addrs {
        match sockets::connect_tcp(*a, cfg.bind, None, timeout, |s| cfg.local.control(s)) {
            Ok(s) => return Ok((s, *a)),
            Err(e) => last = Some(e),
        }
    }
    Err(TestError::Connect(
        last.unwrap_or_else(|| std::io::Error::other("no address")),
    ))
}
