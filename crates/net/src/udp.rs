//! Batched UDP: many datagrams per system call with `sendmmsg` /
//! `recvmmsg`, optionally with GSO (`UDP_SEGMENT`) on send and GRO
//! (`UDP_GRO`) on receive.
//!
//! This module owns [`UdpBatch`], a set of equally sized slots allocated
//! once. The caller fills slots and sends them, or receives into them and
//! reads them back; the per-batch calls allocate nothing. With GSO one
//! slot carries several datagrams that the kernel splits; with GRO one slot
//! may come back holding several datagrams that the kernel coalesced, and
//! [`Received::datagrams`] splits them again so per-datagram sequence
//! numbers can still be counted.
//!
//! Sockets are expected to be connected (as iperf3's UDP sockets are);
//! [`UdpBatch::send_to`] exists for unconnected senders. Source addresses
//! of received datagrams are not reported.

use std::io;
use std::os::fd::BorrowedFd;

use crate::buf::PageBuf;
use crate::sys::{self, MmsgScratch, RecvMeta};

/// Most messages one `sendmmsg`/`recvmmsg` call takes (`UIO_MAXIOV`).
pub const MAX_SLOTS: usize = 1024;
/// Largest slot, and the size a receiver with `UDP_GRO` on must use: one
/// coalesced read can hold up to 64 KiB of payload (a whole GSO message on
/// loopback, 128 segments of 64 B on Linux 6.x), whatever the datagram length.
pub const MAX_SLOT_SIZE: usize = 65_536;

/// Why a [`UdpBatch`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UdpBatchError {
    /// Slot count outside `1..=MAX_SLOTS`.
    #[error("UDP batch needs 1..={MAX_SLOTS} slots, got {0}")]
    Slots(usize),
    /// Slot size outside `1..=MAX_SLOT_SIZE`.
    #[error("UDP batch slot size must be 1..={MAX_SLOT_SIZE} bytes, got {0}")]
    SlotSize(usize),
}

/// Preallocated slots for batched UDP send and receive.
#[derive(Debug)]
pub struct UdpBatch {
    buf: PageBuf,
    slot_size: usize,
    meta: Vec<RecvMeta>,
    received: usize,
    scratch: MmsgScratch,
}

/// One received slot: its bytes and how the kernel packed them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received<'a> {
    /// The bytes received into the slot.
    pub data: &'a [u8],
    /// GRO segment size if the kernel coalesced datagrams into this slot:
    /// every datagram is this long except possibly the last.
    pub segment_size: Option<u16>,
    /// The datagram did not fit the slot and was cut (`MSG_TRUNC`).
    pub truncated: bool,
    /// The kernel's receive time (realtime clock), when the socket has
    /// `SO_TIMESTAMPNS` on: one per message, so one per coalesced GRO read.
    pub stamp: Option<std::time::Duration>,
}

impl<'a> Received<'a> {
    /// The individual datagrams in the slot: one, or several when GRO
    /// coalesced them. Allocation-free.
    pub fn datagrams(&self) -> std::slice::Chunks<'a, u8> {
        let seg = match self.segment_size {
            Some(s) => usize::from(s),
            // chunks() needs a non-zero size; an empty datagram yields none.
            None => self.data.len().max(1),
        };
        self.data.chunks(seg)
    }

    /// How many datagrams the slot holds (what [`datagrams`](Self::datagrams) yields).
    pub fn datagram_count(&self) -> usize {
        match self.segment_size {
            Some(s) => self.data.len().div_ceil(usize::from(s)),
            None => usize::from(!self.data.is_empty()),
        }
    }
}

impl UdpBatch {
    /// Allocates `slots` slots of `slot_size` bytes each (the only
    /// allocation). For GSO sends or GRO receives use 65 536-byte slots.
    pub fn new(slots: usize, slot_size: usize) -> Result<Self, UdpBatchError> {
        if !(1..=MAX_SLOTS).contains(&slots) {
            return Err(UdpBatchError::Slots(slots));
        }
        if !(1..=MAX_SLOT_SIZE).contains(&slot_size) {
            return Err(UdpBatchError::SlotSize(slot_size));
        }
        Ok(Self {
            buf: PageBuf::zeroed(slots * slot_size),
            slot_size,
            meta: vec![RecvMeta::default(); slots],
            received: 0,
            scratch: MmsgScratch::new(slots),
        })
    }

    /// Number of slots.
    pub fn slots(&self) -> usize {
        self.meta.len()
    }

    /// Size of each slot, bytes.
    pub fn slot_size(&self) -> usize {
        self.slot_size
    }

    /// Slot `i` for filling before a send.
    ///
    /// # Panics
    /// If `i >= self.slots()`.
    pub fn slot_mut(&mut self, i: usize) -> &mut [u8] {
        &mut self.buf[i * self.slot_size..(i + 1) * self.slot_size]
    }

    /// Sends slot `i`'s first `lens[i]` bytes as one message, for each
    /// `i < lens.len()`, with one `sendmmsg` on a connected socket.
    ///
    /// With `gso_segment = Some(s)` each message is split by the kernel into
    /// datagrams of `s` bytes (the last may be shorter); a message may then
    /// hold at most 64 segments on older kernels (`UDP_MAX_SEGMENTS`) and
    /// must stay under 64 KiB. Returns how many *messages* were sent, which
    /// can be fewer than `lens.len()`; resend the rest.
    pub fn send(
        &mut self,
        fd: BorrowedFd<'_>,
        lens: &[usize],
        gso_segment: Option<u16>,
    ) -> io::Result<usize> {
        sys::sendmmsg(
            fd,
            &mut self.scratch,
            &self.buf,
            self.slot_size,
            lens,
            gso_segment,
            None,
        )
    }

    /// [`send`](Self::send) to an explicit destination (unconnected socket).
    pub fn send_to(
        &mut self,
        fd: BorrowedFd<'_>,
        lens: &[usize],
        gso_segment: Option<u16>,
        to: &socket2::SockAddr,
    ) -> io::Result<usize> {
        sys::sendmmsg(
            fd,
            &mut self.scratch,
            &self.buf,
            self.slot_size,
            lens,
            gso_segment,
            Some(to),
        )
    }

    /// Receives into the slots with one `recvmmsg(MSG_WAITFORONE)`: waits
    /// for the first message (up to the socket's `SO_RCVTIMEO`, so set one;
    /// or use a non-blocking socket), then takes whatever else is queued.
    /// Returns the number of slots filled; read them with [`received`](Self::received).
    pub fn recv(&mut self, fd: BorrowedFd<'_>) -> io::Result<usize> {
        self.recv_flags(fd, libc::MSG_WAITFORONE)
    }

    /// Like [`recv`](Self::recv) but never blocks (`MSG_DONTWAIT`).
    pub fn try_recv(&mut self, fd: BorrowedFd<'_>) -> io::Result<usize> {
        self.recv_flags(fd, libc::MSG_DONTWAIT)
    }

    fn recv_flags(&mut self, fd: BorrowedFd<'_>, flags: libc::c_int) -> io::Result<usize> {
        self.received = 0;
        let n = sys::recvmmsg(
            fd,
            &mut self.scratch,
            &mut self.buf,
            self.slot_size,
            &mut self.meta,
            flags,
        )?;
        self.received = n;
        Ok(n)
    }

    /// Slots filled by the last receive.
    pub fn received_count(&self) -> usize {
        self.received
    }

    /// Slot `i` of the last receive, or `None` if `i` was not filled.
    pub fn received(&self, i: usize) -> Option<Received<'_>> {
        if i >= self.received {
            return None;
        }
        let m = self.meta[i];
        let start = i * self.slot_size;
        Some(Received {
            data: &self.buf[start..start + m.len],
            segment_size: m.gro_segment,
            truncated: m.truncated,
            stamp: m.stamp,
        })
    }

    /// All slots of the last receive, in order.
    pub fn iter_received(&self) -> impl Iterator<Item = Received<'_>> + '_ {
        (0..self.received).filter_map(move |i| self.received(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sockopt;
    use crate::testutil::udp_pair;
    use std::collections::BTreeMap;
    use std::net::UdpSocket;
    use std::os::fd::AsFd;

    /// Datagram `seq` of length `len`: a big-endian sequence number then a
    /// pattern derived from it, so any mix-up or cut is detectable.
    fn fill(dst: &mut [u8], seq: u32) {
        dst[..4].copy_from_slice(&seq.to_be_bytes());
        for (i, b) in dst[4..].iter_mut().enumerate() {
            *b = (seq as usize * 7 + i) as u8;
        }
    }

    /// Checks a datagram against [`fill`]; returns its sequence number.
    fn check(d: &[u8]) -> u32 {
        assert!(d.len() >= 4, "runt datagram of {} bytes", d.len());
        let seq = u32::from_be_bytes([d[0], d[1], d[2], d[3]]);
        for (i, &b) in d[4..].iter().enumerate() {
            assert_eq!(b, (seq as usize * 7 + i) as u8, "seq {seq} byte {}", i + 4);
        }
        seq
    }

    /// Receives until `want` datagrams arrived (bounded by `want` calls, each
    /// bounded by the socket's read timeout); returns seq -> (length, gro size).
    fn receive_all(
        rx: &UdpSocket,
        batch: &mut UdpBatch,
        want: usize,
    ) -> BTreeMap<u32, (usize, Option<u16>)> {
        let mut seen = BTreeMap::new();
        for _ in 0..want {
            if seen.len() >= want {
                break;
            }
            batch.recv(rx.as_fd()).expect("recvmmsg");
            for slot in batch.iter_received() {
                assert!(!slot.truncated);
                for d in slot.datagrams() {
                    let seq = check(d);
                    let dup = seen.insert(seq, (d.len(), slot.segment_size));
                    assert!(dup.is_none(), "duplicate seq {seq}");
                }
            }
        }
        seen
    }

    #[test]
    fn config_is_validated() {
        assert_eq!(UdpBatch::new(0, 100).err(), Some(UdpBatchError::Slots(0)));
        assert_eq!(
            UdpBatch::new(4, 70_000).err(),
            Some(UdpBatchError::SlotSize(70_000))
        );
        let mut b = UdpBatch::new(2, 16).expect("batch");
        let (tx, _rx) = udp_pair();
        let err = b.send(tx.as_fd(), &[17], None).expect_err("too long");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        let err = b.send(tx.as_fd(), &[1, 1, 1], None).expect_err("too many");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn sendmmsg_recvmmsg_deliver_every_datagram_intact() {
        const K: usize = 48;
        let (tx, rx) = udp_pair();
        let mut out = UdpBatch::new(K, 1_500).expect("batch");
        let mut lens = [0usize; K];
        for (i, len) in lens.iter_mut().enumerate() {
            *len = 100 + i * 25; // distinct lengths too
            fill(&mut out.slot_mut(i)[..*len], i as u32);
        }
        // A blocking UDP sendmmsg on loopback takes the whole batch.
        assert_eq!(out.send(tx.as_fd(), &lens, None).expect("sendmmsg"), K);
        let mut inb = UdpBatch::new(16, 2_048).expect("batch");
        let seen = receive_all(&rx, &mut inb, K);
        assert_eq!(seen.len(), K);
        for (seq, (len, seg)) in seen {
            assert_eq!(len, lens[seq as usize]);
            assert_eq!(seg, None);
        }
    }

    #[test]
    fn gso_send_arrives_as_individual_datagrams_without_gro() {
        const SEG: usize = 1_000;
        const K: usize = 40; // 39 full segments + a short last one
        let (tx, rx) = udp_pair();
        let mut out = UdpBatch::new(1, MAX_SLOT_SIZE).expect("batch");
        let total = (K - 1) * SEG + 321;
        let slot = out.slot_mut(0);
        for (seq, chunk) in slot[..total].chunks_mut(SEG).enumerate() {
            fill(chunk, seq as u32);
        }
        assert_eq!(
            out.send(tx.as_fd(), &[total], Some(SEG as u16))
                .expect("gso send"),
            1
        );
        let mut inb = UdpBatch::new(64, 2_048).expect("batch");
        let seen = receive_all(&rx, &mut inb, K);
        assert_eq!(seen.len(), K);
        for (seq, (len, seg)) in seen {
            let expect = if seq as usize == K - 1 { 321 } else { SEG };
            assert_eq!(len, expect, "seq {seq}");
            assert_eq!(seg, None);
        }
    }

    #[test]
    fn gso_send_is_coalesced_for_a_gro_receiver_and_split_back() {
        const SEG: usize = 1_200;
        const K: usize = 2 * 30; // two GSO messages of 30 segments
        let (tx, rx) = udp_pair();
        sockopt::set_udp_gro(rx.as_fd(), true).expect("enable GRO");
        let mut out = UdpBatch::new(2, MAX_SLOT_SIZE).expect("batch");
        let mut lens = [0usize; 2];
        for (m, len) in lens.iter_mut().enumerate() {
            // Second message ends in a short segment.
            *len = if m == 0 { 30 * SEG } else { 29 * SEG + 77 };
            let slot = out.slot_mut(m);
            for (j, chunk) in slot[..*len].chunks_mut(SEG).enumerate() {
                fill(chunk, (m * 30 + j) as u32);
            }
        }
        assert_eq!(
            out.send(tx.as_fd(), &lens, Some(SEG as u16)).expect("send"),
            2
        );
        let mut inb = UdpBatch::new(8, MAX_SLOT_SIZE).expect("batch");
        let seen = receive_all(&rx, &mut inb, K);
        assert_eq!(seen.len(), K);
        let mut coalesced = 0;
        for (seq, (len, seg)) in seen {
            let expect = if seq as usize == K - 1 { 77 } else { SEG };
            assert_eq!(len, expect, "seq {seq}");
            if let Some(s) = seg {
                assert_eq!(usize::from(s), SEG);
                coalesced += 1;
            }
        }
        // Loopback keeps a GSO packet whole for a GRO socket.
        assert_eq!(coalesced, K, "every datagram should have come coalesced");
    }

    #[test]
    fn udp_segment_socket_option_applies_to_plain_sends() {
        const SEG: usize = 500;
        const K: usize = 10;
        let (tx, rx) = udp_pair();
        sockopt::set_udp_segment(tx.as_fd(), SEG as u16).expect("UDP_SEGMENT");
        let mut out = UdpBatch::new(1, MAX_SLOT_SIZE).expect("batch");
        let slot = out.slot_mut(0);
        for (seq, chunk) in slot[..K * SEG].chunks_mut(SEG).enumerate() {
            fill(chunk, seq as u32);
        }
        assert_eq!(out.send(tx.as_fd(), &[K * SEG], None).expect("send"), 1);
        let mut inb = UdpBatch::new(16, 2_048).expect("batch");
        let seen = receive_all(&rx, &mut inb, K);
        assert_eq!(seen.len(), K);
        assert!(seen.values().all(|&(len, _)| len == SEG));
    }

    #[test]
    fn oversize_datagram_is_reported_truncated() {
        let (tx, rx) = udp_pair();
        let mut out = UdpBatch::new(1, 3_000).expect("batch");
        fill(out.slot_mut(0), 9);
        assert_eq!(out.send(tx.as_fd(), &[3_000], None).expect("send"), 1);
        let mut inb = UdpBatch::new(2, 1_000).expect("batch");
        assert_eq!(inb.recv(rx.as_fd()).expect("recv"), 1);
        let slot = inb.received(0).expect("slot 0");
        assert!(slot.truncated);
        assert_eq!(slot.data.len(), 1_000);
        assert_eq!(check(slot.data), 9, "the prefix is still intact");
        assert_eq!(inb.received(1), None);
    }

    #[test]
    fn a_receive_into_the_same_slots_forgets_the_last_ones_flags_and_lengths() {
        // One batch receives again and again (a truncated 3000-byte
        // datagram, then short ones), sends once, and receives again: each
        // receive reports only its own messages' lengths and flags.
        let (tx, rx) = udp_pair();
        let mut out = UdpBatch::new(3, 3_000).expect("batch");
        let mut inb = UdpBatch::new(4, 1_000).expect("batch");
        fill(out.slot_mut(0), 1);
        assert_eq!(out.send(tx.as_fd(), &[3_000], None).expect("send"), 1);
        assert_eq!(inb.recv(rx.as_fd()).expect("recv"), 1);
        assert!(inb.received(0).expect("slot 0").truncated);
        for round in 0..3u32 {
            for i in 0..3 {
                fill(&mut out.slot_mut(i)[..40 + i], 10 * round + i as u32);
            }
            assert_eq!(out.send(tx.as_fd(), &[40, 41, 42], None).expect("send"), 3);
            let mut got = 0;
            for _ in 0..3 {
                if got == 3 {
                    break;
                }
                let n = inb.recv(rx.as_fd()).expect("recv");
                for k in 0..n {
                    let slot = inb.received(k).expect("slot");
                    assert!(!slot.truncated, "round {round}: stale MSG_TRUNC");
                    assert_eq!(slot.data.len(), 40 + got, "round {round}");
                    assert_eq!(check(slot.data), 10 * round + got as u32);
                    assert_eq!(slot.segment_size, None);
                    got += 1;
                }
            }
            assert_eq!(got, 3, "round {round}");
        }
        // The receiving batch sends once (headers rewritten), then receives.
        fill(&mut inb.slot_mut(0)[..50], 77);
        let (tx2, rx2) = udp_pair();
        assert_eq!(inb.send(tx2.as_fd(), &[50], None).expect("send"), 1);
        fill(out.slot_mut(0), 5);
        assert_eq!(out.send(tx.as_fd(), &[3_000], None).expect("send"), 1);
        assert_eq!(inb.recv(rx.as_fd()).expect("recv"), 1);
        let slot = inb.received(0).expect("slot 0");
        assert!(slot.truncated);
        assert_eq!(check(slot.data), 5);
        let mut other = UdpBatch::new(1, 100).expect("batch");
        assert_eq!(other.recv(rx2.as_fd()).expect("recv"), 1);
        assert_eq!(check(other.received(0).expect("slot").data), 77);
    }

    #[test]
    fn recv_times_out_instead_of_hanging() {
        let (_tx, rx) = udp_pair();
        rx.set_read_timeout(Some(std::time::Duration::from_millis(50)))
            .expect("timeout");
        let mut inb = UdpBatch::new(4, 2_048).expect("batch");
        let err = inb.recv(rx.as_fd()).expect_err("nothing was sent");
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        assert_eq!(inb.received_count(), 0);
        let err = inb.try_recv(rx.as_fd()).expect_err("nothing was sent");
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    }
}
