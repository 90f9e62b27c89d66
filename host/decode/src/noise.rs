//! Seeded code-capacity noise: each qubit flips independently with probability `p`.
//!
//! Shots come from `xoshiro256++` seeded with [`Xoshiro256PlusPlus::seed_from_u64`], so a
//! `(seed, n, p)` triple names the same sequence of errors on every machine. A uniform draw is
//! the top 53 bits of one 64-bit output scaled to [0, 1); a qubit flips when it is below `p`.

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{RngCore, SeedableRng};

/// A seeded sampler of independent bit flips.
#[derive(Debug, Clone)]
pub struct CodeCapacity {
    rng: Xoshiro256PlusPlus,
    p: f64,
}

impl CodeCapacity {
    /// Flips with probability `p` per bit, from `seed`.
    pub fn new(p: f64, seed: u64) -> CodeCapacity {
        CodeCapacity {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            p,
        }
    }

    /// The flip probability.
    pub fn p(&self) -> f64 {
        self.p
    }

    /// A uniform draw from [0, 1) with 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Fills `error` with one shot (0/1 per bit).
    pub fn sample(&mut self, error: &mut [u8]) {
        for e in error.iter_mut() {
            *e = (self.uniform() < self.p) as u8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_shots_and_rate_close_to_p() {
        let mut a = CodeCapacity::new(0.1, 7);
        let mut b = CodeCapacity::new(0.1, 7);
        let (mut ea, mut eb) = ([0u8; 100], [0u8; 100]);
        let mut ones = 0usize;
        for _ in 0..200 {
            a.sample(&mut ea);
            b.sample(&mut eb);
            assert_eq!(ea, eb);
            ones += ea.iter().filter(|&&x| x == 1).count();
        }
        // 20000 draws at p = 0.1: mean 2000, standard deviation ~42.
        assert!((1800..2200).contains(&ones), "{ones}");
        let mut c = CodeCapacity::new(0.1, 8);
        c.sample(&mut eb);
        a.sample(&mut ea);
        assert_ne!(ea, eb);
    }
}
