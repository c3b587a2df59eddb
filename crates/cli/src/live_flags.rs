//! The connection filters `plumb why` (live, and on a capture) and `plumb
//! top` share: `--peer`, `--pid`, `--conn`, with `-p` matching either end.

use clap::Args;
use plumb_live::filter::{parse_conn, parse_peer};
use plumb_live::Filter;

/// Connection filters shared by `plumb why` (live) and `plumb top`.
#[derive(Debug, Args, Clone, Default)]
pub struct LiveFilterArgs {
    /// Live: only connections with this peer, ADDR or ADDR:PORT ([V6]:PORT)
    #[arg(long, value_name = "ADDR[:PORT]")]
    pub peer: Option<String>,
    /// Live: only connections of this process
    #[arg(long, value_parser = crate::args::whole::<u32>)]
    pub pid: Option<u32>,
    /// Live: exactly this connection, SRC:SPORT,DST:DPORT (either way round)
    #[arg(long, value_name = "SRC:SPORT,DST:DPORT")]
    pub conn: Option<String>,
}

impl LiveFilterArgs {
    /// Any live filter given.
    pub fn any(&self) -> bool {
        self.peer.is_some() || self.pid.is_some() || self.conn.is_some()
    }

    /// The filter, with `port` (`-p`) matching either end.
    pub fn filter(&self, port: Option<u16>) -> Result<Filter, String> {
        Ok(Filter {
            port,
            peer: self.peer.as_deref().map(parse_peer).transpose()?,
            pid: self.pid,
            conn: self.conn.as_deref().map(parse_conn).transpose()?,
        })
    }
}
