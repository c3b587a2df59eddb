//! Live evidence: what the kernel knows about the TCP connections running
//! on this host, as typed snapshots, deltas between snapshots, and the
//! diagnosis evidence those deltas give.
//!
//! [`diag`] builds the sock_diag dump request and parses a dump's bytes
//! (pure; [`tcpinfo`] decodes TCP_INFO); [`track`] follows connections
//! across dumps and computes deltas; [`filter`] picks connections;
//! [`evidence`] turns a delta into `plumb-diagnose` evidence and explains
//! it. [`sys`] is the only part that touches the host: the netlink socket
//! and `/proc`. Nothing here prints.

pub mod diag;
pub mod evidence;
pub mod filter;
pub mod sys;
pub mod tcpinfo;
pub mod track;

pub use diag::{CcName, Conn, SkMem};
pub use filter::Filter;
pub use tcpinfo::TcpInfo;
pub use track::{Delta, Role, Track, Tracker};
