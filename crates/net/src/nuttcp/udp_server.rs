//! plumb's server's UDP test for a nuttcp client.

use std::net::SocketAddr;

use plumb_proto::nuttcp::request::Request;
use plumb_record::Sink;

use super::control::Control;
use crate::config::ServerConfig;
use crate::errors::TestError;

/// Runs the UDP data of an accepted request.
///
/// # Errors
/// Always, for now.
pub fn serve(
    _cfg: &ServerConfig,
    ctl: &mut Control,
    _peer: SocketAddr,
    _req: &Request,
    _sink: &mut dyn Sink,
) -> Result<(), TestError> {
    let _ = ctl.send(&plumb_proto::nuttcp::reply::refusal("UDP is not built"));
    Err(TestError::Ended("UDP is not built".into()))
}
