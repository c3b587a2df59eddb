//! The receive loop: retired ring blocks walked into the analyzer (and the
//! pcapng writer), bounded by the duration and the stop flag; `poll` with
//! a timeout between blocks, so the loop never waits longer than
//! [`WAKE_MS`] without looking at either.

use std::fs::File;
use std::io::{self, BufWriter};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use plumb_capture::{Analyzer, Record};
use plumb_record::capture::ReadStats;

use crate::bpf::Selection;
use crate::error::Error;
use crate::pcapng::PcapngWriter;
use crate::ring;
use crate::socket::PacketSocket;
use crate::spec::{CaptureSpec, LiveCapture, MIN_SNAPLEN};
use crate::sys;

/// The longest the loop sleeps before looking at the clock and the flag.
const WAKE_MS: u64 = 100;

/// Captures on `spec.iface` until `spec.duration` has passed or `stop` is
/// set, and analyses what it read.
pub fn capture(spec: &CaptureSpec, stop: &AtomicBool) -> Result<LiveCapture, Error> {
    capture_with(spec, stop, || {})
}

/// [`capture`], calling `ready` once the socket receives (filter and ring
/// in place): a caller that starts traffic then misses none of it.
pub fn capture_with(
    spec: &CaptureSpec,
    stop: &AtomicBool,
    ready: impl FnOnce(),
) -> Result<LiveCapture, Error> {
    if spec.snaplen < MIN_SNAPLEN {
        return Err(Error::Snaplen(spec.snaplen));
    }
    // The file first: a path that cannot be written fails before any packet.
    let file = match &spec.write {
        Some(path) => Some(File::create(path).map_err(|source| Error::Write {
            path: path.clone(),
            source,
        })?),
        None => None,
    };
    let sel = Selection {
        ports: spec.ports.clone(),
        peers: spec.peers.clone(),
        snaplen: spec.snaplen,
        skip_outgoing: false,
    };
    let sock = PacketSocket::open(&spec.iface, &sel)?;
    let write_error = |source: io::Error| Error::Write {
        path: spec.write.clone().unwrap_or_default(),
        source,
    };
    let mut writer = match file {
        Some(f) => Some(
            PcapngWriter::new(
                BufWriter::with_capacity(1 << 20, f),
                &spec.iface,
                sock.link.linktype,
                spec.snaplen,
            )
            .map_err(write_error)?,
        ),
        None => None,
    };
    let mut analyzer = Analyzer::new(spec.limits);
    ready();
    let started = Instant::now();
    let read = receive(&sock, spec, stop, &mut analyzer, &mut writer).map_err(|e| match e {
        Failure::Write(e) => write_error(e),
        Failure::Poll(e) => Error::Socket {
            what: "waiting for packets",
            source: e,
        },
    })?;
    let elapsed = started.elapsed();
    let counters = sock.counters()?;
    if let Some(w) = writer {
        w.finish(now_ns(), counters.received, counters.dropped)
            .map_err(write_error)?;
    }
    let stats = ReadStats {
        format: "live".into(),
        records: read,
        interfaces: 1,
        ..ReadStats::default()
    };
    Ok(LiveCapture {
        analysis: analyzer.finish(stats),
        received: counters.received,
        dropped: counters.dropped,
        read,
        linktype: sock.link.linktype,
        promiscuous: sock.promiscuous,
        elapsed,
        written: spec.write.clone(),
    })
}

enum Failure {
    Write(io::Error),
    Poll(io::Error),
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The ring's reader: the next block to look at, and where packets go.
struct Reader<'a> {
    sock: &'a PacketSocket,
    analyzer: &'a mut Analyzer,
    writer: &'a mut Option<PcapngWriter<BufWriter<File>>>,
    block: usize,
    read: u64,
}

impl Reader<'_> {
    /// Reads the next block if the kernel has handed it over; whether it had.
    fn next_block(&mut self) -> Result<bool, Failure> {
        let linktype = self.sock.link.linktype;
        let ring = self.sock.ring();
        let (analyzer, writer) = (&mut *self.analyzer, &mut *self.writer);
        let mut failed: Option<io::Error> = None;
        let walked = ring.with_block(self.block, |bytes| {
            ring::walk(bytes, |p| {
                analyzer.record(&Record {
                    ts_ns: p.ts_ns,
                    linktype,
                    data: p.data,
                    orig_len: p.orig_len,
                    interface: 0,
                });
                if let (Some(w), None) = (writer.as_mut(), &failed) {
                    failed = w.packet(p.ts_ns, p.data, p.orig_len).err();
                }
            })
        });
        if let Some(e) = failed {
            return Err(Failure::Write(e));
        }
        let Some(n) = walked else { return Ok(false) };
        self.read += u64::from(n);
        self.block = (self.block + 1) % ring.blocks();
        Ok(true)
    }
}

/// Reads blocks until the deadline or the flag, then the blocks already
/// handed over (at most the ring's); the packets read.
fn receive(
    sock: &PacketSocket,
    spec: &CaptureSpec,
    stop: &AtomicBool,
    analyzer: &mut Analyzer,
    writer: &mut Option<PcapngWriter<BufWriter<File>>>,
) -> Result<u64, Failure> {
    let deadline = (!spec.duration.is_zero()).then(|| Instant::now() + spec.duration);
    let mut r = Reader {
        sock,
        analyzer,
        writer,
        block: 0,
        read: 0,
    };
    loop {
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if stop.load(Ordering::Relaxed) || left == Some(Duration::ZERO) {
            for _ in 0..sock.ring().blocks() {
                if !r.next_block()? {
                    break;
                }
            }
            return Ok(r.read);
        }
        if r.next_block()? {
            continue;
        }
        let wait = left.map_or(WAKE_MS, |l| (l.as_millis() as u64).clamp(1, WAKE_MS));
        match sys::poll_one(sock.fd(), libc::POLLIN | libc::POLLERR, wait as i32) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Failure::Poll(e)),
        }
    }
}
