//! The contract every producer and every printer of plumb shares: the
//! [`Sink`] the measuring engine pushes a test's [`engine`] records into
//! (its start, intervals and end), and the one schema of plumb's `-J` test
//! document. It sits below both sides: the engine (`plumb-net`) builds
//! these types, the printers (`plumb-report`) implement [`Sink`] and read
//! them, and this crate depends on no crate of plumb's.
//!
//! The document:
//!
//! iperf3's `-J` JSON — `start`, `intervals`, `end` with iperf3's own key
//! names — plus what plumb adds: `end.plumb` (each end's CPU, cgroup quota,
//! CPU placement, sysctls, socket facts and TCP_INFO, the UDP path's
//! settings, latency), `intervals[].plumb`, and top-level objects beside
//! iperf3's: `lab` and `model`, the `diagnosis`, and the `live` and
//! `connections` of `plumb why` on running connections. This crate owns
//! these types; the JSON printer builds a [`Document`] and serializes it,
//! and readers deserialize one.
//!
//! Two rules make a document read and written back equal to the original,
//! compared as `serde_json::Value`s (the objects `plumb why` adds read into
//! today's types instead, an older plumb's keys with them):
//!
//! - every object carries the keys this version does not know in a
//!   flattened `extra` map (other iperf3 versions add keys), and optional
//!   keys are `Option`s that are left out when absent;
//! - a figure iperf3 defines as a double is a [`Real`], which remembers
//!   whether it was written as an integer (`0`) or a float (`0.0`); figures
//!   iperf3 always writes as integers are plain integers.
//!
//! `plumb top --json` writes one [`TopLine`] a line.
//!
//! `plumb handshake -J` writes a [`handshake::HandshakeDocument`], and
//! `plumb why -J` on a capture a [`capture::CaptureDocument`].
//!
//! A `--json-stream` log carries the same records one [`Event`] a line.
//!
//! A key that may be `null` is an `Option<Option<T>>` (see [`nullable`]):
//! absent, `null`, or a value.

pub mod capture;
pub mod class;
pub mod diagnosis;
mod document;
mod end;
pub mod engine;
mod event;
pub mod handshake;
mod interval;
mod lab;
mod latency;
mod live;
mod model;
pub mod nullable;
mod number;
mod plumb;
mod sink;
mod start;
mod top;

pub use document::Document;
pub use end::{CpuUtilization, End, EndStream, EndSum, TcpEndSide, TcpSum, UdpEndStream, UdpSum};
pub use event::{Event, LabEvent};
pub use interval::{Interval, IntervalPlumb, IntervalStream, IntervalSum, LimitedTime};
pub use lab::{Lab, LabConfigured, LabEmulator, LabMeasured};
pub use latency::{
    BucketMs, BucketUs, IntervalLatency, Latency, PercentilesUs, ProbeCost, ProbeInterval, Probes,
    Summary, Transactions,
};
pub use live::{ConnectionRow, LiveSampling};
pub use model::Model;
pub use number::Real;
pub use plumb::{
    CgroupCpu, CpuTimes, EndPlumb, PlumbSide, PlumbStream, PlumbUdp, TcpInfo, UdpSummary,
};
pub use sink::{Capture, ServerOutput, Sink, Tee};
pub use start::{Connected, HostPort, Start, TestStart, Timestamp};
pub use top::TopLine;
