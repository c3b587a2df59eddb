//! plumb's command line as data: the flags of every command (clap's `Args`
//! structs), the value parsers they share, and the checks that turn them
//! into the library crates' typed configurations ([`measure::test_spec`],
//! [`measure::client_config`], [`lab_flags::lab_config`], …).
//!
//! The binary builds its command tree from these structs and runs what they
//! describe; nothing here opens a socket, reads a terminal or starts a
//! thread. The flags only read files they name at start-up (`-F`, the
//! authentication keys), so that a bad name is a usage error.

pub mod args;
pub mod calc;
pub mod demo;
pub mod exporter;
pub mod handshake;
pub mod lab_flags;
pub mod live_flags;
pub mod measure;
pub mod report;
pub mod top;
pub mod why;
