//! `plumb exporter`: a Prometheus exporter on the blackbox pattern. Each
//! `GET /probe?target=HOST…` runs one `plumb -c` test against HOST (a plumb,
//! iperf3, iperf 2 or nuttcp server, as `tool=` says), diagnoses it as
//! `plumb why` does, and answers with the
//! result and the limit as OpenMetrics text; `/metrics` has the exporter's own
//! counters, and with `--live-flows` the host's live TCP flows by limit.
//!
//! This crate owns the HTTP side and the safety rules (who may be probed,
//! how many at once, for how long): [`config`] checks the settings,
//! [`query`] turns a `/probe` URL into a checked client run, [`auto`] finds
//! the tool for `tool=auto`, [`gate`] lets
//! one probe per target and a few in all run, [`metrics`] writes the text,
//! [`live`] samples the host's flows, and [`serve()`] is the accept loop. A
//! probe's query is a second spelling of `plumb -c`'s flags: the caller hands
//! in the command line's own checks ([`query::ClientBuilder`]), so both
//! spellings are checked alike.

pub mod auto;
pub mod config;
pub mod gate;
pub mod live;
pub mod metrics;
pub mod query;
mod serve;

pub use config::{Config, Settings, DEFAULT_LISTEN};
pub use query::{Asked, ClientBuilder};
pub use serve::{serve, ServeError};
