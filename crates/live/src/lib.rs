//! Live evidence: what the kernel knows about the TCP connections running
//! on this host, as typed snapshots, deltas between snapshots, and the
//! diagnosis evidence those deltas give.
//!
//! [`diag`] builds the sock_diag dump and lookup requests and parses the
//! answers' bytes (pure; `plumb-tcpinfo` decodes TCP_INFO); [`track`] follows connections
//! across dumps and computes deltas; [`filter`] picks connections;
//! [`scan`] decides when a monitor walks the whole socket table and when it
//! looks up only the busy connections;
//! [`class`] names a connection's class from the period's counters;
//! [`evidence`] turns a delta into `plumb-diagnose` evidence and explains
//! it (a connection that is not bulk by its class's own answer). [`sys`] is the only part that touches the host: the netlink socket
//! and `/proc`; [`owners`] keeps its scan of socket owners as seldom as a
//! monitor can afford; [`cpu_mark`] reads a process's CPU (its threads and its
//! cgroup's quota) at two moments; [`link`] finds the link rate a diagnosis
//! weighs a connection or a test against; [`watch`] is `plumb top`'s loop,
//! handing each interval's rows to a sink; [`sample`] is `plumb why`'s
//! sampling of running connections for a while, [`sampled`] their
//! explanation one by one, and [`connection_row`] a
//! tracked connection's row in its document. Nothing here prints.

pub mod class;
pub mod connection_row;
pub mod cpu_mark;
pub mod diag;
pub mod evidence;
pub mod filter;
pub mod link;
pub mod owners;
pub mod sample;
pub mod sampled;
pub mod scan;
pub mod sys;
pub mod track;
pub mod watch;

pub use diag::{CcName, Conn, SkMem};
pub use filter::Filter;
pub use track::{Delta, Role, Track, Tracker};
