//! Live capture: TCP headers read from an interface into plumb-capture's
//! per-connection analysis, for `plumb why --capture IFACE`.
//!
//! An `AF_PACKET` socket bound to the interface ([`socket`]) with a classic
//! BPF filter ([`bpf`]) that passes only TCP over IPv4/IPv6 (and ICMP's
//! "too big"), only the ports and peers asked for, each packet cut to the
//! snap length in the kernel; packets arrive in a `TPACKET_V3` ring
//! ([`ring`]) with nanosecond timestamps and their real lengths, block by
//! block. The receive loop (`run`) feeds each packet to a
//! [`plumb_capture::Analyzer`] and, with `write`, to a pcapng file
//! ([`pcapng`]); it ends after the duration or when the stop flag is set,
//! waking at least every 100 ms to look. The kernel's drop counter
//! (`PACKET_STATISTICS`) is reported. The link layer recorded follows the
//! interface's hardware type ([`link`]). All `unsafe` is in `sys`.
//!
//! A crate of its own beside `plumb-capture`, which reads capture files and
//! does no other I/O: the socket, the ring and the writer are this crate's,
//! the analysis of what they read is that crate's, as it is for a file.

pub mod bpf;
mod error;
pub mod link;
pub mod pcapng;
pub mod ring;
mod run;
pub mod socket;
mod spec;
mod sys;

pub use error::Error;
pub use run::{capture, capture_with};
pub use spec::{CaptureSpec, LiveCapture, DEFAULT_SNAPLEN, MIN_SNAPLEN};
