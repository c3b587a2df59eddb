//! One stream's counters, shared between the thread that moves its data
//! and the thread that reports intervals: bytes and datagrams as atomics,
//! a receiver's loss and jitter behind a lock taken once per datagram.
//! The bytes and datagrams are the shared data path's [`Counters`], so a
//! TCP stream can run on [`crate::datapath`]'s loops and be metered here.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use plumb_proto::UdpStats;

use crate::datathread::Counters;

/// Counters of one stream.
#[derive(Debug, Default)]
pub(crate) struct Flow {
    counters: Counters,
    udp: Mutex<UdpStats>,
    done: AtomicBool,
}

impl Flow {
    /// Counts `n` more bytes in one write or read (one datagram in UDP).
    pub(crate) fn add(&self, n: u64) {
        self.counters.bytes.fetch_add(n, Ordering::Relaxed);
        self.counters.packets.fetch_add(1, Ordering::Relaxed);
    }

    /// Bytes so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.counters.bytes.load(Ordering::Relaxed)
    }

    /// Writes or datagrams so far.
    pub(crate) fn packets(&self) -> u64 {
        self.counters.packets.load(Ordering::Relaxed)
    }

    /// The counters a [`crate::datapath`] loop adds its bytes to.
    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    /// A UDP receiver's counters after its latest datagram.
    pub(crate) fn set_udp(&self, s: UdpStats) {
        if let Ok(mut g) = self.udp.lock() {
            *g = s;
        }
    }

    /// The UDP receiver's counters.
    pub(crate) fn udp(&self) -> UdpStats {
        self.udp.lock().map(|g| *g).unwrap_or_default()
    }

    /// The stream's thread is over.
    pub(crate) fn finish(&self) {
        self.done.store(true, Ordering::Release);
    }

    /// Whether the stream's thread is over.
    pub(crate) fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }
}
