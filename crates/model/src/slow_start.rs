//! Slow start's arithmetic: how many round trips a transfer of S bytes
//! needs when the sender's window starts at an initial window and doubles
//! every round trip (RFC 5681 slow start, without loss and with no other
//! limit), and how much the first k rounds carry.
//!
//! Linux starts at 10 segments (RFC 6928, since 2.6.39); old stacks at 2
//! to 4. A transfer within a few such rounds is bound by round trips, not
//! by bandwidth: only fewer round trips (a larger initial window, a
//! connection already open) make it faster.

/// Linux's initial congestion window, segments (RFC 6928).
pub const LINUX_INITIAL_WINDOW: u64 = 10;

/// Bytes the first `rounds` rounds carry from an initial window of
/// `initial` bytes: initial × (2^rounds − 1).
pub fn slow_start_bytes(initial: u64, rounds: u32) -> u64 {
    let factor = (1u128 << rounds.min(64)) - 1;
    u64::try_from(u128::from(initial).saturating_mul(factor)).unwrap_or(u64::MAX)
}

/// The rounds slow start needs to send `bytes` from an initial window of
/// `initial` bytes: the least k with initial × (2^k − 1) ≥ bytes, i.e.
/// ⌈log2(bytes / initial + 1)⌉; 0 for no bytes.
pub fn slow_start_rounds(bytes: u64, initial: u64) -> u32 {
    if bytes == 0 {
        return 0;
    }
    let initial = initial.max(1);
    (1..64)
        .find(|k| slow_start_bytes(initial, *k) >= bytes)
        .unwrap_or(64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 58,923 B from 10 segments of 1,460 B: 14,600 + 29,200 + 58,400
    /// cumulative is 102,200 B after three rounds, 43,800 after two.
    #[test]
    fn an_http_response_of_58923_bytes_needs_three_rounds() {
        let iw = LINUX_INITIAL_WINDOW * 1460;
        assert_eq!(slow_start_bytes(iw, 2), 43_800);
        assert_eq!(slow_start_bytes(iw, 3), 102_200);
        assert_eq!(slow_start_rounds(58_923, iw), 3);
    }

    /// docs/classes.md: six round trips of Linux's slow start carry 630
    /// segments, 912,240 B at 1,448 B; twenty segments of 1,460 B carry
    /// 29,200 B, then 87,600 B.
    #[test]
    fn six_round_trips_carry_630_segments() {
        assert_eq!(slow_start_bytes(LINUX_INITIAL_WINDOW, 6), 630);
        assert_eq!(slow_start_bytes(LINUX_INITIAL_WINDOW * 1448, 6), 912_240);
        assert_eq!(slow_start_bytes(20 * 1460, 1), 29_200);
        assert_eq!(slow_start_bytes(20 * 1460, 2), 87_600);
        assert_eq!(slow_start_rounds(58_923, 20 * 1460), 2);
    }

    #[test]
    fn the_edges_are_exact() {
        assert_eq!(slow_start_rounds(0, 14_480), 0);
        assert_eq!(slow_start_rounds(1, 14_480), 1);
        assert_eq!(slow_start_rounds(14_480, 14_480), 1);
        assert_eq!(slow_start_rounds(14_481, 14_480), 2);
        // A doubled initial window saves one round at most.
        assert_eq!(slow_start_rounds(60_000, 14_480), 3);
        assert_eq!(slow_start_rounds(60_000, 28_960), 2);
        assert_eq!(slow_start_rounds(u64::MAX, 1), 64);
        assert_eq!(slow_start_bytes(1, 200), u64::MAX);
        assert_eq!(slow_start_bytes(2, 63), u64::MAX - 1);
    }
}
