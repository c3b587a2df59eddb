//! A path-MTU black hole as a capture *past* it sees one, beside the
//! receiver: the full-size copies die before they get there, so what
//! arrives is the handshake, the sender's small segments, and a silence.
//! A silence alone is an idle connection; what makes it a black hole is the
//! sender proving, after it, that it had sent more than arrived:
//!
//! - a segment of its (a pure ACK, a FIN, an RST, data) carries a sequence
//!   number at least one full segment past the highest data that arrived:
//!   it had sent those bytes, and they never came (a keep-alive carries
//!   the byte *below* what arrived, never past it);
//! - often the first data after the silence resends the next expected byte
//!   in a segment smaller than the agreed full size: a sender that gave up
//!   on the full size (Linux with `net.ipv4.tcp_mtu_probing=1` falls back
//!   to its `tcp_base_mss`, 1024 B). That size is noted, and the proof
//!   still has to follow within a few segments (an idle connection whose
//!   application writes less than a full segment after a pause looks the
//!   same until then).
//!
//! The silence counts only when no data segment at the full size (or
//! larger: GRO) had arrived before it, it lasted at least
//! [`FAR_SILENCE_MS`] and [`FAR_SILENCE_RTTS`] handshake RTTs, the sender
//! had not closed, and the receiver's window had room for a full segment.
//! A first data segment after it at the next expected byte and full size
//! ends the watch: the full size passes, the silence was loss or a pause.
//!
//! The state is a few numbers per direction, whatever the capture's length.

use serde::Serialize;

use crate::seq::seq_gt;

/// The shortest silence that can be a black hole's, ms: far longer than
/// Linux's first retransmission timeout (200 ms and up), so a sender that
/// had data in flight resent it at least once in it.
pub const FAR_SILENCE_MS: u64 = 1_000;
/// The shortest silence in handshake RTTs, for long paths.
pub const FAR_SILENCE_RTTS: u64 = 10;
/// The smallest segment taken as a fallback from the full size: IPv4's
/// default MSS (RFC 9293), the least any sender falls back to. An
/// application's short write after a pause (a keystroke, a small request)
/// is smaller and ends the watch.
pub const MIN_FALLBACK: u32 = 536;
/// The sender's segments after the silence the proof is looked for in.
const WATCHED: u8 = 4;

/// What carried the sender's proof.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Proof {
    /// A segment with data.
    Data,
    /// A pure ACK.
    Ack,
    /// A FIN.
    Fin,
    /// An RST.
    Rst,
}

/// A black hole seen from past it. Sequence numbers are relative to the
/// sender's initial sequence number (its SYN's), as Wireshark shows them.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct FarStall {
    /// The silence, ms.
    pub silence_ms: u32,
    /// Data that had arrived before it, bytes.
    pub arrived: u32,
    /// The agreed full segment size: the smaller MSS offered, less the
    /// timestamp option when both ends offered it, bytes.
    pub full: u32,
    /// The first data segment after the silence, at the next expected byte
    /// and smaller than `full`: the size the sender fell back to.
    pub fallback: Option<u32>,
    /// The sequence number of the segment that proved the sender had sent
    /// more.
    pub proof_seq: u32,
    /// What kind of segment it was.
    pub proof: Proof,
    /// Bytes it had sent past the highest data that arrived then.
    pub unseen: u32,
}

/// What one direction's segments say about a black hole before the
/// capture point.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct FarHole {
    /// The first black hole proved, if any.
    pub found: Option<FarStall>,
    /// The sender's initial sequence number.
    #[serde(skip)]
    isn: Option<u32>,
    /// The sender sent a FIN or an RST.
    #[serde(skip)]
    closed: bool,
    /// A silence that qualified, until the proof or the watch ends.
    #[serde(skip)]
    watch: Option<Watch>,
}

/// A qualifying silence being watched for the proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Watch {
    silence_ms: u32,
    arrived: u32,
    fallback: Option<u32>,
    /// A data segment at the next expected byte came after the silence.
    resumed: bool,
    left: u8,
}

/// A segment of this direction's sender, as the tracker takes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FarSeen {
    /// Its capture time, ns.
    pub ts: u64,
    /// The sender's previous segment's time, ns.
    pub prev_ts: u64,
    pub seq: u32,
    /// Its payload, bytes.
    pub len: u32,
    pub syn: bool,
    pub ack: bool,
    pub fin: bool,
    pub rst: bool,
    /// One past the highest sequence that arrived before it.
    pub high_end: Option<u32>,
    /// The largest data segment that arrived before it, bytes.
    pub largest: u32,
}

/// The connection's side of it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FarPath {
    /// The agreed full segment size (both SYNs captured).
    pub full: Option<u32>,
    /// The handshake RTT (the whole handshake captured).
    pub rtt_ns: Option<u64>,
    /// The receiver's last advertised window, bytes (scale known).
    pub window: Option<u64>,
}

impl FarHole {
    /// A segment sent by this direction's sender.
    pub(crate) fn seen(&mut self, s: &FarSeen, p: &FarPath) {
        if s.syn {
            self.isn.get_or_insert(s.seq);
            return;
        }
        if self.found.is_some() {
            return;
        }
        let was_closed = self.closed;
        self.closed |= s.fin || s.rst;
        let (Some(full), Some(end), Some(isn)) = (p.full, s.high_end, self.isn) else {
            return;
        };
        if self.watch.is_none() {
            if was_closed || s.largest >= full || p.window.is_none_or(|w| w < u64::from(full)) {
                return;
            }
            let Some(rtt) = p.rtt_ns else { return };
            let gap = s.ts.saturating_sub(s.prev_ts);
            let least = (FAR_SILENCE_MS * 1_000_000).max(rtt.saturating_mul(FAR_SILENCE_RTTS));
            if gap < least {
                return;
            }
            self.watch = Some(Watch {
                silence_ms: u32::try_from(gap / 1_000_000).unwrap_or(u32::MAX),
                // The SYN took one sequence number.
                arrived: end.wrapping_sub(isn).wrapping_sub(1),
                fallback: None,
                resumed: false,
                left: WATCHED,
            });
        }
        self.look(s, full, end, isn);
    }

    /// Looks for the proof in `s`, a segment after the silence; `end` is
    /// one past the highest sequence that arrived before it.
    fn look(&mut self, s: &FarSeen, full: u32, end: u32, isn: u32) {
        let Some(mut w) = self.watch.take() else {
            return;
        };
        let beyond = s.seq.wrapping_sub(end);
        if seq_gt(s.seq, end) && beyond >= full {
            let proof = match (s.len > 0, s.fin, s.rst) {
                (_, _, true) => Proof::Rst,
                (true, _, _) => Proof::Data,
                (false, true, _) => Proof::Fin,
                _ => Proof::Ack,
            };
            // An RST without ACK may carry any sequence number: no proof.
            if proof != Proof::Rst || s.ack {
                self.found = Some(FarStall {
                    silence_ms: w.silence_ms,
                    arrived: w.arrived,
                    full,
                    fallback: w.fallback,
                    proof_seq: s.seq.wrapping_sub(isn),
                    proof,
                    unseen: beyond,
                });
                return;
            }
        }
        if s.len > 0 && s.seq == end && !w.resumed {
            // The first data where the receiver waits decides: at the full
            // size it passes; below a fallback's size it is an
            // application's short write after a pause.
            if s.len >= full || s.len < MIN_FALLBACK {
                return;
            }
            w.resumed = true;
            w.fallback = Some(s.len);
        }
        w.left -= 1;
        if w.left > 0 {
            self.watch = Some(w);
        }
    }
}
