//! A nuttcp test's data endpoints on plumb's server, made ready before
//! the server answers the request: a data port it cannot have (in use by
//! another program, say) is refused with its reason, where an `OK`
//! followed by a failure would leave a stock client reporting an empty
//! test (and a TCP client connecting to whatever holds the port).

use std::net::{SocketAddr, TcpListener, UdpSocket};

use plumb_proto::nuttcp::request::Request;

use super::control::Control;
use super::data::{self, client_listens};
use super::params::params_of;
use super::udp;
use crate::handoff::Expected;
use crate::sockets::DataOptions;

/// The endpoints a test's data runs on.
pub enum Ready {
    /// TCP: the listeners this end opened, with their ports (none when it
    /// connects to the client, or when another tool's listener hands every
    /// connection over).
    Tcp(Vec<(u16, TcpListener)>),
    /// UDP: one socket per stream, bound on the data ports when this end
    /// receives, connected to them when it sends.
    Udp(Vec<UdpSocket>),
}

/// Opens what the request's data needs; the reason in one line when a
/// port cannot be had.
///
/// # Errors
/// A data port that cannot be bound or listened on.
pub fn prepare(
    ctl: &Control,
    peer: SocketAddr,
    req: &Request,
    handed: &[Expected],
) -> Result<Ready, String> {
    let local = ctl
        .stream
        .local_addr()
        .map_err(|e| format!("control connection: {e}"))?
        .ip();
    let sends = !req.client_sends;
    if req.udp {
        let socks = if sends {
            udp::connected(local, peer.ip(), req)
        } else {
            udp::bound(local, req)
        };
        return socks
            .map(Ready::Udp)
            .map_err(|e| format!("cannot use UDP data port {} and up: {e}", req.port));
    }
    if client_listens(req) {
        return Ok(Ready::Tcp(Vec::new()));
    }
    let opts = DataOptions::of(&params_of(req));
    data::listen_own(local, req, handed, &opts, sends)
        .map(Ready::Tcp)
        .map_err(|e| e.to_string())
}
