//! TCP sequence-number order: 32-bit serial-number arithmetic (RFC 1982),
//! where "after" wraps around.

/// `a` after `b` in sequence space.
pub(crate) fn seq_gt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}
