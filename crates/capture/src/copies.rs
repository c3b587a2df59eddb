//! Capture duplicates: the same packet recorded twice or more, by a
//! capture taken on two interfaces, or on a mirror port that copies a
//! packet both where it enters the switch and where it leaves. A copy
//! repeats every header field of the first: the IPv4 identification (which
//! a sender changes with every packet it sends, retransmissions included;
//! 0 or absent in IPv6 and from some stacks), the TCP options (a resend
//! carries a later timestamp, another SACK block), the sequence and
//! acknowledgement numbers, the flags, the window, the length and the
//! checksum, and it arrives less than half the connection's smallest round
//! trip after the first — or, with the same non-zero IPv4 ID, less than
//! [`ID_WINDOW_NS`] after it (a sender gives a resend a new ID). A
//! retransmission cannot: a sender resends only after a timeout or
//! duplicate ACKs, at least a round trip after the first copy, and half of
//! it leaves room for the first copy to have waited in a queue before the
//! capture point that the resend did not.
//!
//! Each direction keeps the last [`RECENT`] segments it sent (not copies)
//! in a small ring, so the cost is the same for every connection whatever
//! the capture's length: a copy from a mirror port or a second interface
//! arrives microseconds after the first, a few segments later at most.
//! editcap -D looks back 4 frames of the whole capture by default; 4 of one
//! direction cover at least those. Every segment is compared with the ring
//! by its sequence and acknowledgement numbers first, one word per slot;
//! the rest only when those match.

use serde::Serialize;

use crate::segment::{Segment, Stamp};

/// Segments each direction remembers.
pub const RECENT: usize = 4;
/// The window when no round trip is known yet (the handshake missed and
/// nothing acknowledged so far): a copy arrives within microseconds. A
/// resend comes a round trip after the first at least (a fast retransmit
/// waits for duplicate ACKs, by which time an ACK has usually given a
/// round trip; a timeout is 200 ms on Linux; a SYN is resent after a
/// second): on a path under 2 ms, one seen before any round trip is known
/// and without an IP ID or timestamps to tell it apart would count as a
/// copy.
pub const UNKNOWN_RTT_WINDOW_NS: u64 = 1_000_000;

/// The window for a copy with the same non-zero IPv4 ID: Linux's minimum
/// retransmission timeout. A sender gives a resend a new ID, so the ID
/// alone tells a copy; the window only bounds how far back it is sought.
pub const ID_WINDOW_NS: u64 = 200_000_000;

/// Copies of packets already seen, counted once.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Duplicates {
    /// Packets that were copies of one seen just before.
    pub packets: u64,
    /// Of them, those recorded on another pcapng interface than the first
    /// copy.
    pub other_interface: u64,
}

/// What a copy repeats, in three words: the sequence and acknowledgement
/// numbers (the key: they differ between nearly any two segments of a
/// direction, so a miss is one comparison per slot), then the length, the
/// options' digest, the IP ID, the checksum, the window and the flags.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Print {
    key: u64,
    rest: [u64; 2],
}

impl Print {
    /// The IPv4 ID it carries (0 when none).
    fn ip_id(&self) -> u16 {
        (self.rest[1] >> 48) as u16
    }

    /// The print of `seg`.
    pub(crate) fn of(seg: &Segment) -> Print {
        let s: &Stamp = &seg.stamp;
        Print {
            key: (u64::from(seg.seq) << 32) | u64::from(seg.ack_no),
            rest: [
                (u64::from(seg.payload_len) << 32) | u64::from(s.options),
                (u64::from(s.ip_id) << 48)
                    | (u64::from(s.checksum) << 32)
                    | (u64::from(seg.window) << 16)
                    | u64::from(s.flags),
            ],
        }
    }
}

/// The last [`RECENT`] segments of one direction: their prints, times
/// and interfaces, field by field (the keys side by side, compared first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Recent {
    keys: [u64; RECENT],
    rests: [[u64; 2]; RECENT],
    times: [u64; RECENT],
    interfaces: [u32; RECENT],
    /// Slots filled so far (up to RECENT; slots fill in order).
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
    /// Whether a slot's key is `print`'s: the one test every segment takes
    /// (an empty slot's key is 0, and [`Recent::copy_of`] passes it by).
    pub(crate) fn may_hold(&self, print: &Print) -> bool {
        self.keys.contains(&print.key)
    }

    /// Whether a segment with the print `print`, seen at `ts` on
    /// `interface`, copies one remembered less than `window_ns` before (or
    /// after: a merged capture's times may run backwards).
    pub(crate) fn copy_of(
        &self,
        print: &Print,
        ts: u64,
        interface: u32,
        window_ns: u64,
    ) -> Option<Copied> {
        // A sender gives every packet it sends, a resend too, a new IPv4
        // ID: the same one (not 0) marks the same packet, seen again up to
        // a retransmission timeout later (a capture across several hops of
        // a path sees a copy after more than half its round trip).
        let window_ns = if print.ip_id() != 0 {
            window_ns.max(ID_WINDOW_NS)
        } else {
            window_ns
        };
        (0..usize::from(self.filled))
            .find(|&i| {
                self.keys[i] == print.key
                    && self.rests[i] == print.rest
                    && self.times[i].abs_diff(ts) < window_ns
            })
            .map(|i| Copied {
                other_interface: self.interfaces[i] != interface,
            })
    }

    /// Remembers a segment that was not a copy, in place of the oldest.
    /// Copies are not remembered: the first stays the one later copies
    /// are matched with.
    pub(crate) fn remember(&mut self, print: &Print, ts: u64, interface: u32) {
        let at = usize::from(self.next) % RECENT;
        self.keys[at] = print.key;
        self.rests[at] = print.rest;
        self.times[at] = ts;
        self.interfaces[at] = interface;
        self.next = ((at + 1) % RECENT) as u8;
        if usize::from(self.filled) < RECENT {
            self.filled += 1;
        }
    }
}
