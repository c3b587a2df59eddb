//! plumb-capture reads a packet capture (pcap or pcapng, plain or gzip) and
//! gathers, per TCP connection and direction, the evidence `plumb why` needs
//! to explain a slow transfer: the handshake (options, RTT, initial TTL),
//! payload bytes, advertised windows (scaled), zero-window episodes,
//! retransmissions (fast, timeout-like, spurious), duplicate ACKs, flight
//! against the peer's window, super-segments, ICMP "too big" messages, and
//! a path-MTU black hole from either side of it.
//! [`explain_all`] turns each connection that carried data into a verdict:
//! its [`evidence`] weighed by `plumb-diagnose`'s rules, with what only a
//! capture shows (`Explanation::notes`). See docs/capture.md.
//!
//! It reads record by record (memory is bounded by the largest record and
//! the connection ceiling, `Limits`), and a broken container is a typed
//! [`Error`], never a panic; a broken packet is skipped and counted
//! (`DecodeStats`; these are `plumb-record`'s capture document types).
//!
//! Dependencies, each for what it does well:
//! - `pcap-parser`: the pcap and pcapng containers (both byte orders,
//!   several sections and interfaces, per-interface timestamp resolution),
//!   streaming over any `Read` with a bounded buffer, in safe code.
//! - `etherparse`: Ethernet with VLAN tags, IPv4/IPv6 (extension headers
//!   included) and TCP headers, leniently over frames cut by the snaplen.
//! - `flate2`: gzip-compressed captures (`tcpdump -w - | gzip`), decoded
//!   as a stream.
#![forbid(unsafe_code)]
// A function longer than clippy.toml's 150 lines is two functions.

mod analysis;
mod blackhole;
mod class;
mod connection;
mod continuity;
mod copies;
mod direction;
mod document;
mod error;
mod evidence;
mod explain;
mod farhole;
mod filter;
mod headline;
mod holes;
mod link;
mod notes;
mod opening;
mod options;
mod os;
mod pmtu;
mod position;
mod rounds;
mod segment;
mod seq;
mod series;
mod shape;
mod sniff;
mod source;
mod table;
mod timing;
mod window;

pub use analysis::{analyze, analyze_file, analyze_file_with_series, Analysis, Analyzer};
pub use blackhole::{BlackHole, LostRun, BLACK_HOLE_SENDS};
pub use class::{class_of, flow_shape};
pub use connection::{Connection, Handshake};
pub use copies::{BEHIND_MAX, ID_WINDOW_NS, RECENT, UNKNOWN_RTT_WINDOW_NS};
pub use direction::{initial_ttl, Direction, Flight, Retransmissions, Syn, ZeroWindow};
pub use document::{document, kernel_warning};
pub use error::Error;
pub use evidence::{data_direction, evidence, FlowEvidence};
pub use explain::{explain, explain_all, Explained};
pub use farhole::{FarHole, FarStall, Proof, FAR_SILENCE_MS, FAR_SILENCE_RTTS, MIN_FALLBACK};
pub use filter::CaptureFilters;
pub use notes::{offer, UNSCALED_MAX};
pub use options::SynOptions;
pub use os::OsGuess;
pub use rounds::Growth;
pub use series::{AckPoint, Binned, DataPoint, Merge, RttPoint, SeqRange, Series, MIN_BUDGET};
pub use shape::{Gaps, RunSeen, Shape};
pub use sniff::{file_is_capture, is_capture};
pub use source::{read_records, Record, MAX_RECORD};
pub use timing::{DataTiming, RttSamples};
pub use window::{WindowScale, WindowStats};
