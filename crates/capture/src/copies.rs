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
//! arrives microseconds after the first, a few segments later at most,
//! unless a queue lies between the two (below).
//! editcap -D looks back 4 frames of the whole capture by default; 4 of one
//! direction cover at least those. Every segment is compared with the ring
//! by its sequence and acknowledgement numbers first, one word per slot;
//! the rest only when those match.
//!
//! A capture taken on both sides of a queue (`tcpdump -i any` on a router
//! that is the path's bottleneck) sees a packet arrive, then every packet
//! queued ahead of it leave, then its copy leave: tens to thousands of
//! segments later. Once a capture has shown one copy, [`Behind`] also
//! remembers every segment file-wide, by connection, for
//! [`ID_WINDOW_NS`] and at most [`BEHIND_MAX`] segments, and a segment the
//! ring does not match is sought there by the same rule. A capture with
//! no copy pays one test per segment for it.

use std::collections::hash_map::{Entry, RandomState};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};

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

/// Segments [`Behind`] remembers at most: [`ID_WINDOW_NS`] of 327,680
/// packets a second (4 Gbit/s of 1500-byte packets); past that rate a copy
/// is sought this many segments back. At the ceiling its table holds
/// 65,536 entries of 56 bytes in 131,072 slots, and its queue 65,536 of
/// 48: about 11 MB.
pub const BEHIND_MAX: usize = 65_536;

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
    pub(crate) fn ip_id(&self) -> u16 {
        (self.rest[1] >> 48) as u16
    }

    /// Whether the segment carries SYN.
    fn syn(&self) -> bool {
        self.rest[1] & 0x02 != 0
    }

    /// How long after a segment a copy of it with this print may come:
    /// `window_ns`, the connection's half round trip, or with a non-zero
    /// IPv4 ID at least [`ID_WINDOW_NS`] (a sender gives a resend a new ID:
    /// the same one marks the same packet, seen again up to a
    /// retransmission timeout later, as a capture across several hops of a
    /// path or both sides of a queue sees it). A SYN or SYN-ACK too: it is
    /// resent only after its own timeout, a second at the least (RFC
    /// 6298's initial one), and Linux sends its SYN-ACK with ID 0 before
    /// any round trip is known, so a copy held up more than
    /// [`UNKNOWN_RTT_WINDOW_NS`] on a busy router would pass unseen. And
    /// an ID of 0 that is a number (`numbered`, [`near_wrap`]): a counting
    /// sender's counter passes through 0 once every 65,536 packets, and
    /// that packet's copy, held in a queue, comes more than half a round
    /// trip after it as often as any other's.
    fn window(&self, window_ns: u64, numbered: bool) -> u64 {
        if self.ip_id() != 0 || self.syn() || numbered {
            window_ns.max(ID_WINDOW_NS)
        } else {
            window_ns
        }
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

/// How close to the IPv4 ID counter's wrap an ID must be for a 0 after it
/// to be read as the counter passing through zero.
const WRAP_BAND: u16 = 4096;

/// Whether an ID of 0 that follows `previous` (the direction's last
/// segment's ID) is a number: `previous` lies within [`WRAP_BAND`] of the
/// wrap, just before it (the counter about to pass 0) or just after it
/// (a copy of the 0 arriving from behind a queue, after later packets).
/// A sender that sends no IDs has a previous ID of 0, and one whose
/// handshake carried IDs but whose data carries none shows 0 from its
/// second data segment on.
pub(crate) fn near_wrap(previous: u16) -> bool {
    previous != 0 && (previous > u16::MAX - WRAP_BAND || previous <= WRAP_BAND)
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
    /// after: a merged capture's times may run backwards); `numbered`: the
    /// direction's sender numbers its packets ([`Print::window`]).
    pub(crate) fn copy_of(
        &self,
        print: &Print,
        ts: u64,
        interface: u32,
        (window_ns, numbered): (u64, bool),
    ) -> Option<Copied> {
        let window_ns = print.window(window_ns, numbered);
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

/// A segment as [`Behind`] knows it: its connection's serial number and
/// direction, and its print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    /// The connection's serial number, shifted left, and 1 for the
    /// client's direction.
    flow: u64,
    print: Print,
}

/// A [`Seen`] with its keyed hash, worked out once per segment: looking it
/// up, remembering it and forgetting it then hash nothing more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sought {
    hash: u64,
    seen: Seen,
}

impl Hash for Sought {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// The hasher of [`Behind`]'s table: it passes on the hash [`Sought`]
/// carries.
#[derive(Debug, Default)]
struct PassOn(u64);

impl Hasher for PassOn {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is called (by `Sought`); any other write folds.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Every segment of the last [`ID_WINDOW_NS`] (at most [`BEHIND_MAX`] of
/// them), file-wide, once the capture has shown a copy: the copies that
/// come back more than [`RECENT`] segments later, from behind a queue.
#[derive(Debug, Default)]
pub(crate) struct Behind {
    /// The keyed hasher (SipHash, so a crafted capture cannot aim its
    /// segments at one bucket).
    keys: RandomState,
    /// When and on which interface each was seen.
    seen: HashMap<Sought, (u64, u32), BuildHasherDefault<PassOn>>,
    /// The same segments, oldest first, to forget them by age and count.
    order: VecDeque<(Sought, u64)>,
}

impl Behind {
    /// What a segment of connection `serial`'s direction (`client`) with
    /// `print` is sought and remembered by.
    pub(crate) fn key(&self, (serial, client): (u64, bool), print: &Print) -> Sought {
        let seen = Seen {
            flow: (serial << 1) | u64::from(client),
            print: *print,
        };
        // One write of the four words: the keyed hasher costs per call as
        // much as per byte (see `table::Key`).
        let mut bytes = [0u8; 32];
        let words = [seen.flow, print.key, print.rest[0], print.rest[1]];
        for (b, w) in bytes.chunks_exact_mut(8).zip(words) {
            b.copy_from_slice(&w.to_le_bytes());
        }
        let mut h = self.keys.build_hasher();
        h.write(&bytes);
        Sought {
            hash: h.finish(),
            seen,
        }
    }

    /// Whether the segment `key`, seen at `ts` on `interface`, copies one
    /// remembered, by [`Recent::copy_of`]'s rule.
    pub(crate) fn copy_of(
        &self,
        key: &Sought,
        ts: u64,
        interface: u32,
        (window_ns, numbered): (u64, bool),
    ) -> Option<Copied> {
        let &(t, i) = self.seen.get(key)?;
        let window_ns = key.seen.print.window(window_ns, numbered);
        (t.abs_diff(ts) < window_ns).then_some(Copied {
            other_interface: i != interface,
        })
    }

    /// Remembers a segment that was not a copy, and forgets those older
    /// than [`ID_WINDOW_NS`] before it, or past [`BEHIND_MAX`].
    pub(crate) fn remember(&mut self, key: Sought, ts: u64, interface: u32) {
        while let Some(&(old, t)) = self.order.front() {
            if self.order.len() < BEHIND_MAX && ts.saturating_sub(t) < ID_WINDOW_NS {
                break;
            }
            self.order.pop_front();
            // Unless a later segment with the same print (past the window:
            // not a copy) took its place.
            if let Entry::Occupied(e) = self.seen.entry(old) {
                if e.get().0 == t {
                    e.remove();
                }
            }
        }
        self.seen.insert(key, (ts, interface));
        self.order.push_back((key, ts));
    }

    /// Segments remembered now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn print(n: u64) -> Print {
        // A non-zero IPv4 ID: the 200 ms window applies.
        Print {
            key: n,
            rest: [0, 7 << 48],
        }
    }

    #[test]
    fn behind_forgets_by_age_and_count_and_keeps_connections_apart() {
        const MS: u64 = 1_000_000;
        let mut b = Behind::default();
        let flow = (3, true);
        let at = |b: &Behind, f, n, ts| b.copy_of(&b.key(f, &print(n)), ts, 1, (MS, false));
        b.remember(b.key(flow, &print(1)), 0, 0);
        b.remember(b.key(flow, &print(2)), 100 * MS, 1);
        assert_eq!(b.len(), 2);
        // Found on the other interface, not in the other direction or
        // connection, nor once its window is past.
        let found = at(&b, flow, 1, 150 * MS);
        assert_eq!(
            found,
            Some(Copied {
                other_interface: true
            })
        );
        assert_eq!(at(&b, (3, false), 1, 150 * MS), None);
        assert_eq!(at(&b, (4, true), 1, 150 * MS), None);
        assert_eq!(at(&b, flow, 1, 200 * MS), None);
        // A segment 200 ms after the first forgets it.
        b.remember(b.key(flow, &print(3)), 200 * MS, 0);
        assert_eq!(b.len(), 2);
        assert!(at(&b, flow, 2, 201 * MS).is_some());
        // Past BEHIND_MAX the oldest go, whatever their age.
        for n in 0..BEHIND_MAX as u64 {
            b.remember(b.key(flow, &print(10 + n)), 201 * MS, 0);
        }
        assert_eq!(b.len(), BEHIND_MAX);
        assert_eq!(at(&b, flow, 3, 201 * MS), None);
        assert!(at(&b, flow, 10, 201 * MS).is_some());
        assert_eq!(b.seen.len(), BEHIND_MAX);
        // The memory at the ceiling (BEHIND_MAX's doc): entries of 56
        // bytes in the table and 48 in the queue.
        let table = std::mem::size_of::<(Sought, (u64, u32))>();
        let queue = std::mem::size_of::<(Sought, u64)>();
        assert_eq!((table, queue), (56, 48));
    }

    #[test]
    fn a_syn_ack_without_an_ip_id_is_sought_as_far_as_one_with_one() {
        const MS: u64 = 1_000_000;
        let syn_ack = Print {
            key: 9,
            rest: [0, 0x12],
        };
        let ack = Print {
            key: 9,
            rest: [0, 0x10],
        };
        let mut r = Recent::default();
        r.remember(&syn_ack, 0, 1);
        // 5 ms later, no round trip known: still a copy.
        assert!(r
            .copy_of(&syn_ack, 5 * MS, 2, (UNKNOWN_RTT_WINDOW_NS, false))
            .is_some());
        assert!(r
            .copy_of(&syn_ack, ID_WINDOW_NS, 2, (UNKNOWN_RTT_WINDOW_NS, false))
            .is_none());
        let mut r = Recent::default();
        r.remember(&ack, 0, 1);
        assert!(r
            .copy_of(&ack, 5 * MS, 2, (UNKNOWN_RTT_WINDOW_NS, false))
            .is_none());
    }

    #[test]
    fn an_id_of_zero_from_a_sender_that_numbers_its_packets_is_a_number() {
        const MS: u64 = 1_000_000;
        // A data segment whose IPv4 ID counter passed through 0, its copy
        // 5 ms later (held in a queue), on a path of a 0.2 ms round trip.
        let zero = Print {
            key: 9,
            rest: [0, 0x10],
        };
        assert_eq!(zero.ip_id(), 0);
        let mut r = Recent::default();
        r.remember(&zero, 0, 1);
        let half_rtt = MS / 10;
        assert!(r.copy_of(&zero, 5 * MS, 2, (half_rtt, true)).is_some());
        assert!(r
            .copy_of(&zero, ID_WINDOW_NS, 2, (half_rtt, true))
            .is_none());
        // From a sender that sends no IDs, only within the half round trip.
        assert!(r.copy_of(&zero, 5 * MS, 2, (half_rtt, false)).is_none());
        // A 0 right after 65,535 (or a copy of it after 120 later packets)
        // is a number; after no ID, or one mid-range, it is none.
        assert!(near_wrap(u16::MAX) && near_wrap(120) && near_wrap(61_440));
        assert!(!near_wrap(0) && !near_wrap(30_000) && !near_wrap(61_439));
    }
}
