//! Capture duplicates: the same packet recorded twice or more, by a
//! capture taken on two interfaces, or on a mirror port that copies a
//! packet both where it enters the switch and where it leaves. A copy
//! repeats every header field of the first: the IPv4 identification (which
//! a sender changes with every packet it sends, retransmissions included;
//! 0 or absent in IPv6 and from some stacks), the TCP options (a resend
//! carries a later timestamp, another SACK block), the sequence and
//! acknowledgement numbers, the flags, the window, the length and the
//! checksum, and it arrives less than half the connection's smallest round
//! trip after the first. A retransmission cannot: a sender resends only
//! after a timeout or duplicate ACKs, at least a round trip after the
//! first copy, and half of it leaves room for the first copy to have
//! waited in a queue before the capture point that the resend did not.
//!
//! Each direction keeps the last [`RECENT`] segments it sent (not copies)
//! in a small ring, so the cost is the same for every connection whatever
//! the capture's length: a copy from a mirror port or a second interface
//! arrives microseconds after the first, a few segments later at most.
//! editcap -D looks back 4 frames of the whole capture by default; 4 of one
//! direction cover at least those.

use serde::Serialize;

use crate::segment::{Segment, Stamp};

/// Segments each direction remembers.
pub const RECENT: usize = 4;
/// The window when no round trip is known yet (the handshake missed and
/// nothing acknowledged so far): a copy arrives within microseconds, and
/// no stack resends this soon (Linux's fastest resend, a tail loss probe,
/// waits 10 ms at least; a SYN is resent after a second).
pub const UNKNOWN_RTT_WINDOW_NS: u64 = 1_000_000;

/// Copies of packets already seen, counted once.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Duplicates {
    /// Packets that were copies of one seen just before.
    pub packets: u64,
    /// Of them, those recorded on another pcapng interface than the first
    /// copy.
    pub other_interface: u64,
}

/// What a copy repeats, laid out flat (no padding inside a nested
/// struct): a slot of the ring is 40 bytes with its time and interface.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Print {
    seq: u32,
    ack: u32,
    len: u32,
    options: u32,
    ip_id: u16,
    checksum: u16,
    window: u16,
    flags: u8,
}

impl Print {
    fn of(seg: &Segment) -> Print {
        let s: &Stamp = &seg.stamp;
        Print {
            seq: seg.seq,
            ack: seg.ack_no,
            len: seg.payload_len,
            options: s.options,
            ip_id: s.ip_id,
            checksum: s.checksum,
            window: seg.window,
            flags: s.flags,
        }
    }
}

/// A segment remembered: its print, its time and its interface.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Seen {
    ts: u64,
    print: Print,
    interface: u32,
}

/// The last [`RECENT`] segments of one direction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Recent {
    ring: [Seen; RECENT],
    /// Slots filled so far (up to RECENT).
    filled: u8,
    /// The slot the next segment goes to.
    next: u8,
}

/// How a copy was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Copied {
    /// On another interface than the first.
    pub other_interface: bool,
}

impl Recent {
    /// Whether `seg`, seen at `ts` on `interface`, copies one of the last
    /// segments, less than `window_ns` after it; if it does not, it is
    /// remembered. Copies are not remembered: the first stays the one
    /// later copies are matched with.
    pub(crate) fn copy_of(
        &mut self,
        seg: &Segment,
        ts: u64,
        interface: u32,
        window_ns: u64,
    ) -> Option<Copied> {
        let print = Print::of(seg);
        let seen = &self.ring[..usize::from(self.filled)];
        // The print compares its sequence number first: it differs between
        // nearly any two segments, so a miss costs one comparison per slot.
        if let Some(first) = seen
            .iter()
            .find(|s| s.print == print && s.ts.abs_diff(ts) < window_ns)
        {
            return Some(Copied {
                other_interface: first.interface != interface,
            });
        }
        self.ring[usize::from(self.next)] = Seen {
            print,
            ts,
            interface,
        };
        self.next = (self.next + 1) % RECENT as u8;
        self.filled = (self.filled + 1).min(RECENT as u8);
        None
    }
}
