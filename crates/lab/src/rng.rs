//! A small seeded PRNG (xoshiro256++), so emulator runs repeat bit for bit.
//!
//! Owns: random bits and the few distributions the emulator draws from.
//! Not cryptographic; chosen for speed (a handful of ns per draw) and because
//! its output for a seed is fixed by the published algorithm, unlike `rand`'s
//! `StdRng`, whose algorithm may change between versions.

/// xoshiro256++ by Blackman and Vigna (<https://prng.di.unimi.it/>),
/// seeded through SplitMix64 so that any `u64` (including 0) is a good seed.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// Creates a generator whose whole output is determined by `seed`.
    pub fn new(seed: u64) -> Self {
        let mut sm = seed;
        let mut s = [0u64; 4];
        for word in &mut s {
            *word = splitmix64(&mut sm);
        }
        Rng { s }
    }

    /// Next 64 uniformly distributed bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `[0, 1)` with 53 bits of precision.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in `[0, bound]` (inclusive). The bias of the
    /// multiply-shift reduction is below 2^-64 × bound, far below anything a
    /// network emulation could observe.
    #[inline]
    pub fn up_to(&mut self, bound: u64) -> u64 {
        if bound == u64::MAX {
            return self.next_u64();
        }
        ((u128::from(self.next_u64()) * u128::from(bound + 1)) >> 64) as u64
    }

    /// True with probability `threshold / 2^64`; see [`Chance`].
    #[inline]
    pub fn chance(&mut self, chance: Chance) -> bool {
        match chance.0 {
            0 => false,
            // Probability 1 cannot be expressed as a threshold below 2^64.
            u64::MAX => true,
            t => self.next_u64() < t,
        }
    }
}

/// A probability pre-scaled to a 64-bit threshold, so a Bernoulli draw is one
/// integer comparison instead of a float conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Chance(u64);

impl Chance {
    /// Never.
    pub const NEVER: Chance = Chance(0);

    /// `p` is clamped to `[0, 1]`; NaN counts as 0.
    pub fn new(p: f64) -> Self {
        if p.is_nan() || p <= 0.0 {
            Chance(0)
        } else if p >= 1.0 {
            Chance(u64::MAX)
        } else {
            // 2^64 as f64 is exact; the product is < 2^64 so the cast cannot saturate
            // except by rounding right at 1.0, which is then treated as "always".
            Chance((p * 18_446_744_073_709_551_616.0) as u64)
        }
    }

    /// Whether this can ever fire (lets callers skip drawing a number).
    pub fn is_never(self) -> bool {
        self.0 == 0
    }
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let mut c = Rng::new(8);
        let xs: Vec<u64> = (0..100).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..100).map(|_| b.next_u64()).collect();
        let zs: Vec<u64> = (0..100).map(|_| c.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
    }

    #[test]
    fn unit_interval_and_bounds() {
        let mut r = Rng::new(1);
        for _ in 0..10_000 {
            let x = r.next_f64();
            assert!((0.0..1.0).contains(&x));
            assert!(r.up_to(10) <= 10);
        }
        assert_eq!(r.up_to(0), 0);
    }

    #[test]
    fn chance_extremes() {
        let mut r = Rng::new(3);
        assert!((0..1000).all(|_| !r.chance(Chance::new(0.0))));
        assert!((0..1000).all(|_| r.chance(Chance::new(1.0))));
        let hits = (0..100_000).filter(|_| r.chance(Chance::new(0.25))).count();
        assert!((24_000..26_000).contains(&hits), "{hits}");
    }
}
