//! The tests' random inputs: xorshift64* (Marsaglia's xorshift with a multiplication on the way
//! out; Vigna, "An experimental exploration of Marsaglia's xorshift generators, scrambled",
//! 2016), the same sequence for the same seed on every run and machine, so that a failure
//! reproduces. One copy for every crate's tests; not for anything that needs good randomness.

/// The generator's state: seed it with any non-zero value (a zero state stays zero).
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `[0, n)` (with the modulo's slight bias, no matter for a test); 0 when `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// A number in `[0, 1)`, from the top 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn a_seed_gives_the_same_sequence_and_two_seeds_differ() {
        let take = |seed| {
            let mut r = Rng(seed);
            (0..8).map(|_| r.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(take(1), take(1));
        assert_ne!(take(1), take(2));
    }

    #[test]
    fn draws_stay_in_their_ranges() {
        let mut r = Rng(0x5eed);
        for n in [1, 2, 3, 10, 1000] {
            for _ in 0..1000 {
                assert!(r.below(n) < n);
            }
        }
        assert_eq!(r.below(0), 0);
        for _ in 0..1000 {
            let u = r.unit();
            assert!((0.0..1.0).contains(&u), "{u}");
        }
    }
}
