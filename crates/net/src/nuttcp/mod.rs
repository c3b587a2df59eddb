//! nuttcp's wire protocol (`--tool nuttcp`, `--tools nuttcp`): the client
//! against a stock `nuttcp -S`, and the server answering a stock nuttcp
//! client. The control text is `plumb_proto::nuttcp`'s; the data moves
//! through plumb's own session (TCP) or nuttcp's marked UDP datagrams.
//!
//! - [`control`]: the control connection, lines with caps and deadlines.
//! - [`data`]: the TCP data connections, either way round (`-F`).
//! - [`client`] / [`udp_client`]: plumb's client.
//! - [`params`]: the session's parameters from a request.
//! - [`udp`], [`udp_record`]: nuttcp's UDP data and its record.
//! - [`server`], [`ready`], [`answer`], [`udp_server`]: plumb's server for
//!   nuttcp clients: the listener, a test's data ports opened before the
//!   answer, one TCP test, one UDP test.

pub mod answer;
pub mod client;
pub mod control;
pub mod data;
pub mod params;
pub mod ready;
pub mod server;
pub mod udp;
pub mod udp_client;
pub mod udp_record;
pub mod udp_server;
