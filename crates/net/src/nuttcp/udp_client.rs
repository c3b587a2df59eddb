//! plumb's client's UDP test against a nuttcp server.

use std::net::SocketAddr;

use plumb_proto::nuttcp::request::Request;
use plumb_record::Sink;

use super::control::Control;
use crate::config::ClientConfig;
use crate::errors::TestError;

/// Runs the UDP data of an accepted request.
///
/// # Errors
/// Always, for now.
pub fn run(
    _cfg: &ClientConfig,
    _req: &Request,
    _ctl: &mut Control,
    _server: SocketAddr,
    _sink: &mut dyn Sink,
) -> Result<(), TestError> {
    Err(TestError::Ended("UDP against nuttcp is not built".into()))
}
