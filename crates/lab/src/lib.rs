//! plumb-lab: a userspace long-fat-network emulator.
//!
//! Two network namespaces, *near* (198.18.0.1) and *far* (198.18.0.2), each
//! with a TUN device; two threads of this process read packets from one device,
//! pass them through an emulated link and write them into the other. Programs
//! and sockets in the namespaces see a plain fixed-rate link with a drop-tail
//! queue, propagation delay and optional random loss — like mahimahi's shells,
//! but with TUN offloads so 64 KiB TCP segments cross whole, which is what lets
//! one flow reach several Gbit/s.
//!
//! # A tour, bottom up
//!
//! - [`emu`] — the link itself, one direction: queue, serialisation at the
//!   link rate per wire-sized segment, delay, loss (Bernoulli or
//!   Gilbert–Elliott), jitter, reordering, duplication. Pure: time is an
//!   argument, randomness comes from a seeded [`rng::Rng`], so runs repeat.
//! - [`wire`] — the `virtio_net_hdr` and just enough IPv4/IPv6/TCP/UDP to
//!   count segments and to cut a GSO packet when only part of it is dropped.
//! - [`packet`] — owned, pooled packet buffers (no allocation per packet).
//! - [`sys`] — the only `unsafe` code: TUN ioctls, `setns`, `ppoll`, socket
//!   options, the signal pipe, `kill`, joining a cgroup between fork and exec.
//! - [`forward`] — the per-direction driver loop around an [`emu::Link`].
//! - [`cgroup`] — the groups that hold each side's processes, so a lab ends
//!   every process it started.
//! - [`Lab`] — namespaces, devices, forwarders, cleanup. Start with
//!   [`Lab::start`]`(`[`LabConfig::new`]`(rate, rtt))`.
//! - [`measure`] — the lab measuring itself: [`Lab::probe`] (RTT and rate) and
//!   [`Lab::tcp_transfer`] (one bulk TCP flow, goodput and `TCP_INFO`).
//! - [`hist`] — the histogram behind the release-time error statistics.
//! - [`programs`] — a plumb server and client (or any program) run across a
//!   lab, with a deferred Ctrl-C passed on to them.
//! - [`asked`] — the link as the command line asks for it, checked into a
//!   [`LabConfig`].
//! - [`document`] — what a lab adds to a test's `-J` document: the `lab`
//!   object (the link asked for, as probed, how the emulator kept up) and
//!   the `model` object (the prediction beside what was measured), with
//!   their lines.
//!
//! # Not here
//!
//! - Variable-rate links (mahimahi's trace-driven shells), AQM (CoDel, RED),
//!   ECN marking, policers: the queue is drop-tail only.
//! - More than one hop, or more than two namespaces.
//! - Multi-queue TUN: one thread per direction carries everything.
//! - Splitting GSO packets that nothing dropped: an intact 64 KiB packet is
//!   released when its last segment has crossed the link, as a GRO receiver
//!   would see it; at low rates that bunches segments a sender sent together.
//! - Loss/reorder/duplication of packets the emulator cannot parse (not
//!   IPv4/IPv6 TCP/UDP GSO) is per packet, not per segment.

pub mod asked;
pub mod cgroup;
pub mod document;
pub mod emu;
pub mod forward;
pub mod hist;
pub mod lab;
pub mod measure;
pub mod packet;
pub mod programs;
pub mod rng;
pub mod sys;
pub mod wire;

pub use forward::DirectionStats;
pub use lab::{
    DeviceCounters, Direction, Lab, LabConfig, LabError, LabStats, Side, SignalDeferral, FAR_ADDR,
    FAR_CPU_PERIOD, NEAR_ADDR,
};
pub use measure::{Probe, TransferOptions, TransferReport};
