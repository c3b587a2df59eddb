//! What a live capture is asked for ([`CaptureSpec`]) and what it gives
//! back ([`LiveCapture`]), with the snap length's bounds.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Bytes kept of each packet by default: Ethernet (14) + IPv6 (40) + TCP
/// with every option (60) = 114 fit; payload is not kept.
pub const DEFAULT_SNAPLEN: u32 = 128;
/// The shortest snap length taken: Ethernet + IPv4 + a TCP header with
/// the options plumb reads (timestamps, SACK) fit.
pub const MIN_SNAPLEN: u32 = 96;

/// What to capture, where, and for how long.
#[derive(Debug, Clone)]
pub struct CaptureSpec {
    /// The interface's name (`eth0`, `lo`).
    pub iface: String,
    /// Only these TCP ports, at either end (all when empty).
    pub ports: Vec<u16>,
    /// Only these addresses, at either end (all when empty).
    pub peers: Vec<IpAddr>,
    /// How long to read; zero reads until the stop flag is set.
    pub duration: Duration,
    /// Bytes kept of each packet (headers only: see [`DEFAULT_SNAPLEN`]).
    pub snaplen: u32,
    /// Also save what was read here, as pcapng.
    pub write: Option<PathBuf>,
    /// Bounds of the analysis.
    pub limits: plumb_record::capture::Limits,
}

impl CaptureSpec {
    /// Every TCP packet of `iface` for `duration`, headers only.
    pub fn new(iface: &str, duration: Duration) -> CaptureSpec {
        CaptureSpec {
            iface: iface.to_string(),
            ports: Vec::new(),
            peers: Vec::new(),
            duration,
            snaplen: DEFAULT_SNAPLEN,
            write: None,
            limits: plumb_record::capture::Limits::default(),
        }
    }
}

/// What a live capture read.
#[derive(Debug, Clone)]
pub struct LiveCapture {
    /// The per-connection evidence.
    pub analysis: plumb_capture::Analysis,
    /// Packets the kernel's filter passed (those dropped included).
    pub received: u64,
    /// Packets the kernel dropped for want of room in the ring: the
    /// analysis misses them (they look like losses it cannot tell apart).
    pub dropped: u64,
    /// Packets read and analysed.
    pub read: u64,
    /// The link type recorded (LINKTYPE_ETHERNET or LINKTYPE_RAW).
    pub linktype: u32,
    /// The interface took promiscuous mode.
    pub promiscuous: bool,
    /// How long the capture ran.
    pub elapsed: Duration,
    /// The pcapng file written, if asked.
    pub written: Option<PathBuf>,
}
