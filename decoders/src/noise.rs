//! Seeded noise: code capacity ([`CodeCapacity`]: each qubit flips independently with
//! probability `p`) and circuit level ([`DemNoise`]: each mechanism of a detector error model
//! happens independently with its probability).
//!
//! Shots come from `xoshiro256++` seeded with [`Xoshiro256PlusPlus::seed_from_u64`], so a
//! `(seed, n, p)` triple (or `(seed, model)`) names the same sequence of errors on every
//! machine. A uniform draw is the top 53 bits of one 64-bit output scaled to [0, 1); a qubit
//! flips, or a mechanism happens, when it is below the probability.

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{RngCore, SeedableRng};

use crate::dem::DetectorErrorModel;

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

/// Seeded shots of a detector error model: every mechanism happens independently with its
/// probability, and a shot's detection events and observable flips are the XOR of what the
/// mechanisms that happened flip (what stim's sampler computes for the same model).
#[derive(Debug, Clone)]
pub struct DemNoise {
    uniform: CodeCapacity,
    priors: Vec<f64>,
    /// Mechanism `k` flips `detectors[det_start[k]..det_start[k + 1]]`, and likewise for the
    /// observables.
    det_start: Vec<u32>,
    detectors: Vec<u32>,
    obs_start: Vec<u32>,
    observables: Vec<u32>,
    num_detectors: usize,
    num_observables: usize,
}

impl DemNoise {
    /// A sampler of `dem`'s shots from `seed`.
    pub fn new(dem: &DetectorErrorModel, seed: u64) -> DemNoise {
        let n = dem.num_mechanisms();
        let (mut det_start, mut obs_start) = (vec![0u32], vec![0u32]);
        let (mut detectors, mut observables) = (Vec::new(), Vec::new());
        for k in 0..n {
            let m = dem.mechanism(k);
            detectors.extend_from_slice(m.detectors);
            observables.extend_from_slice(m.observables);
            det_start.push(detectors.len() as u32);
            obs_start.push(observables.len() as u32);
        }
        DemNoise {
            uniform: CodeCapacity::new(0.0, seed),
            priors: dem.priors().to_vec(),
            det_start,
            detectors,
            obs_start,
            observables,
            num_detectors: dem.num_detectors(),
            num_observables: dem.num_observables(),
        }
    }

    /// Detectors per shot.
    pub fn num_detectors(&self) -> usize {
        self.num_detectors
    }

    /// Observables per shot.
    pub fn num_observables(&self) -> usize {
        self.num_observables
    }

    /// Draws one shot: `detectors` (one 0/1 byte per detector) and `observables` (one 0/1 byte
    /// per observable) are overwritten; returns how many mechanisms happened.
    ///
    /// # Panics
    /// If the buffers are not `num_detectors()` and `num_observables()` long.
    pub fn sample(&mut self, detectors: &mut [u8], observables: &mut [u8]) -> usize {
        assert_eq!(
            detectors.len(),
            self.num_detectors,
            "detection event buffer"
        );
        assert_eq!(observables.len(), self.num_observables, "observable buffer");
        detectors.fill(0);
        observables.fill(0);
        let mut happened = 0;
        for (k, &p) in self.priors.iter().enumerate() {
            if self.uniform.uniform() < p {
                happened += 1;
                let d = &self.detectors[self.det_start[k] as usize..self.det_start[k + 1] as usize];
                for &i in d {
                    detectors[i as usize] ^= 1;
                }
                let o =
                    &self.observables[self.obs_start[k] as usize..self.obs_start[k + 1] as usize];
                for &i in o {
                    observables[i as usize] ^= 1;
                }
            }
        }
        happened
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dem_shots_are_seeded_and_flip_what_the_mechanisms_flip() {
        let dem = DetectorErrorModel::parse(
            "error(0.5) D0 D1 L0\nerror(0.25) D1 D2\nerror(0) D3\n",
            "t.dem",
        )
        .unwrap();
        let mut a = DemNoise::new(&dem, 3);
        let mut b = DemNoise::new(&dem, 3);
        let (mut da, mut oa, mut db, mut ob) = ([0u8; 4], [0u8; 1], [0u8; 4], [0u8; 1]);
        let (mut first, mut second, shots) = (0u32, 0u32, 20_000);
        for _ in 0..shots {
            let n = a.sample(&mut da, &mut oa);
            b.sample(&mut db, &mut ob);
            assert_eq!((da, oa), (db, ob));
            // D3's mechanism never happens; the others show in their detectors.
            assert_eq!(da[3], 0);
            let m0 = da[0] == 1;
            assert_eq!(oa[0] == 1, m0);
            let m1 = (da[2] == 1) as u32;
            assert_eq!(n as u32, m0 as u32 + m1);
            assert_eq!(da[1], (m0 as u8) ^ da[2]);
            first += m0 as u32;
            second += m1;
        }
        // Binomial(20000, 0.5) and (20000, 0.25): standard deviations ~71 and ~61.
        assert!((9_700..10_300).contains(&first), "{first}");
        assert!((4_750..5_250).contains(&second), "{second}");
    }

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
