//! Sequence gaps a direction has not shown yet: when a segment starts past
//! the highest sequence seen, the bytes between were sent but not captured
//! (yet). A later segment filling a gap soon after it opened is one the
//! capture point saw late (out of order), not a retransmission; one filling
//! it later, or after duplicate ACKs, is a retransmission of data lost before
//! the capture point. A few gaps are kept per direction (the oldest is
//! forgotten), so memory stays fixed.

use crate::seq::seq_gt;

/// Gaps kept per direction.
const MAX: usize = 4;

/// One gap: sequence `[start, end)`, opened at `since` (ns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Gap {
    start: u32,
    end: u32,
    since: u64,
}

/// The open gaps of one direction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Holes {
    gaps: [Gap; MAX],
    n: usize,
}

/// `x` in `[a, b)` in sequence space.
fn within(x: u32, a: u32, b: u32) -> bool {
    x.wrapping_sub(a) < b.wrapping_sub(a)
}

impl Holes {
    /// Records the gap `[start, end)` opened at `ts`.
    pub fn open(&mut self, start: u32, end: u32, ts: u64) {
        if self.n == MAX {
            self.gaps.rotate_left(1);
            self.n -= 1;
        }
        self.gaps[self.n] = Gap {
            start,
            end,
            since: ts,
        };
        self.n += 1;
    }

    /// Removes `[seq, end)` from the gaps it overlaps; returns when the
    /// earliest of them opened, if any did.
    pub fn fill(&mut self, seq: u32, end: u32) -> Option<u64> {
        let mut opened = None;
        let mut i = 0;
        while i < self.n {
            let g = self.gaps[i];
            if !(within(seq, g.start, g.end) || within(g.start, seq, end)) {
                i += 1;
                continue;
            }
            opened = Some(opened.map_or(g.since, |o: u64| o.min(g.since)));
            let covers_start = !seq_gt(seq, g.start);
            let covers_end = !seq_gt(g.end, end);
            match (covers_start, covers_end) {
                (true, true) => {
                    self.remove(i);
                    continue;
                }
                (true, false) => self.gaps[i].start = end,
                (false, true) => self.gaps[i].end = seq,
                (false, false) => {
                    self.gaps[i].end = seq;
                    if self.n < MAX {
                        self.gaps[self.n] = Gap { start: end, ..g };
                        self.n += 1;
                    }
                }
            }
            i += 1;
        }
        opened
    }

    fn remove(&mut self, i: usize) {
        self.gaps.copy_within(i + 1..self.n, i);
        self.n -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_trim_split_and_forget() {
        let mut h = Holes::default();
        h.open(100, 200, 7);
        assert_eq!(h.fill(0, 100), None); // before the gap
        assert_eq!(h.fill(100, 120), Some(7)); // its front
        assert_eq!(h.fill(150, 160), Some(7)); // its middle: split
        assert_eq!(h.n, 2);
        assert_eq!(h.fill(120, 150), Some(7));
        assert_eq!(h.fill(160, 250), Some(7)); // past its end
        assert_eq!(h.n, 0);
        // Across the wrap of sequence space.
        h.open(u32::MAX - 10, 10, 1);
        assert_eq!(h.fill(u32::MAX - 5, 5), Some(1));
        assert_eq!(h.n, 2);
        // Only the newest four are kept.
        for i in 0..6 {
            h.open(1000 * i, 1000 * i + 10, i as u64);
        }
        assert_eq!(h.n, MAX);
        assert_eq!(h.fill(0, 10), None);
        assert_eq!(h.fill(5000, 5010), Some(5));
    }
}
