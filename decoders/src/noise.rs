//! Seeded noise: code capacity ([`CodeCapacity`]: each qubit flips independently with
//! probability `p`) and circuit level ([`DemNoise`]: each mechanism of a detector error model
//! happens independently with its probability; [`RolledNoise`] the same for a model whose
//! long `repeat` is kept rolled, drawn without expanding it).
//!
//! Shots come from `xoshiro256++` seeded with [`Xoshiro256PlusPlus::seed_from_u64`], so a
//! `(seed, n, p)` triple (or `(seed, model)`) names the same sequence of errors on every
//! machine. A uniform draw is the top 53 bits of one 64-bit output scaled to [0, 1); a qubit
//! flips, or a mechanism happens, when it is below the probability.

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{RngCore, SeedableRng};

use crate::dem::{DemTarget, DetectorErrorModel, Instruction, InstructionKind, RolledModel};

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
        start_shot(
            detectors,
            observables,
            self.num_detectors,
            self.num_observables,
        );
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

/// Checks a shot's buffers against the model's sizes and clears them.
///
/// # Panics
/// If they are not `detectors` and `observables` long.
fn start_shot(d: &mut [u8], o: &mut [u8], detectors: usize, observables: usize) {
    assert_eq!(d.len(), detectors, "detection event buffer");
    assert_eq!(o.len(), observables, "observable buffer");
    d.fill(0);
    o.fill(0);
}

/// Seeded shots of a [`RolledModel`]: every `error` instruction the text executes happens
/// independently with its probability — what [`DemNoise`] draws for the expanded model, in
/// distribution (not draw for draw: equal mechanisms are not merged, and the draws differ) —
/// without expanding the long block. Each top-level block is one segment, its body unrolled
/// once; a segment's slots (iterations × errors) are skipped through geometrically at the
/// segment's largest probability and each landing kept with `p / p_max`, so a shot costs
/// time in proportion to the mechanisms that happen, not to the experiment's length.
#[derive(Debug, Clone)]
pub struct RolledNoise {
    uniform: CodeCapacity,
    segments: Vec<Segment>,
    /// Error `k` of a segment flips `dets[det_start[k]..det_start[k + 1]]` (relative to its
    /// iteration's offset), and likewise for the observables.
    det_start: Vec<u32>,
    dets: Vec<u32>,
    obs_start: Vec<u32>,
    obs: Vec<u32>,
    p: Vec<f64>,
    num_detectors: usize,
    num_observables: usize,
}

/// A run of errors repeated `repeat` times, each iteration `shift` detectors on.
#[derive(Debug, Clone)]
struct Segment {
    base: u64,
    repeat: u64,
    shift: u64,
    errors: std::ops::Range<usize>,
    p_max: f64,
}

impl RolledNoise {
    /// A sampler of `model`'s shots (`num_observables` of them: the model's short copies
    /// name them) from `seed`.
    pub fn new(model: &RolledModel, num_observables: usize, seed: u64) -> RolledNoise {
        let mut n = RolledNoise {
            uniform: CodeCapacity::new(0.0, seed),
            segments: Vec::new(),
            det_start: vec![0],
            dets: Vec::new(),
            obs_start: vec![0],
            obs: Vec::new(),
            p: Vec::new(),
            num_detectors: model.num_detectors() as usize,
            num_observables,
        };
        let mut base = 0u64;
        let mut open: Option<(u64, usize)> = None;
        for ins in model.instructions() {
            match &ins.kind {
                InstructionKind::Repeat { count, body } => {
                    if let Some((b, first)) = open.take() {
                        n.close(b, 1, 0, first);
                    }
                    let first = n.p.len();
                    let shift = n.unroll(body, 0);
                    n.close(base, *count, shift, first);
                    base = base.saturating_add(count.saturating_mul(shift));
                }
                _ => {
                    let (b, _) = *open.get_or_insert((base, n.p.len()));
                    base = b + n.unroll(std::slice::from_ref(ins), base - b);
                }
            }
        }
        if let Some((b, first)) = open {
            n.close(b, 1, 0, first);
        }
        n
    }

    /// Appends `body`'s errors (nested blocks unrolled) at detector offset `offset` relative
    /// to the segment; returns the offset after it.
    fn unroll(&mut self, body: &[Instruction], mut offset: u64) -> u64 {
        for ins in body {
            match &ins.kind {
                InstructionKind::Error { p, targets } => {
                    for t in targets.iter() {
                        match *t {
                            DemTarget::Detector(d) => self.dets.push((offset + d) as u32),
                            DemTarget::Observable(l) => self.obs.push(l as u32),
                            DemTarget::Separator => {}
                        }
                    }
                    self.p.push(*p);
                    self.det_start.push(self.dets.len() as u32);
                    self.obs_start.push(self.obs.len() as u32);
                }
                InstructionKind::ShiftDetectors { count, .. } => offset += count,
                InstructionKind::Repeat { count, body } => {
                    for _ in 0..*count {
                        offset = self.unroll(body, offset);
                    }
                }
                InstructionKind::Detector { .. } | InstructionKind::LogicalObservable { .. } => {}
            }
        }
        offset
    }

    fn close(&mut self, base: u64, repeat: u64, shift: u64, first: usize) {
        let errors = first..self.p.len();
        let p_max = self.p[errors.clone()].iter().fold(0.0f64, |a, &b| a.max(b));
        if !errors.is_empty() && p_max > 0.0 {
            self.segments.push(Segment {
                base,
                repeat,
                shift,
                errors,
                p_max,
            });
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

    /// Draws one shot, as [`DemNoise::sample`] does; returns how many errors happened.
    ///
    /// # Panics
    /// If the buffers are not `num_detectors()` and `num_observables()` long.
    pub fn sample(&mut self, detectors: &mut [u8], observables: &mut [u8]) -> usize {
        start_shot(
            detectors,
            observables,
            self.num_detectors,
            self.num_observables,
        );
        let mut happened = 0;
        for s in 0..self.segments.len() {
            let seg = self.segments[s].clone();
            let len = seg.errors.len() as u64;
            let total = len.saturating_mul(seg.repeat);
            // Slots happen at p_max; the gap to the next is geometric.
            let log_q = (-seg.p_max).ln_1p();
            let mut i = 0u64;
            loop {
                if seg.p_max < 1.0 {
                    let gap = (-self.uniform.uniform()).ln_1p() / log_q;
                    // `gap` is finite and non-negative (`ln(1 − u) ≤ 0`, `log_q < 0`).
                    if gap >= (total - i) as f64 {
                        break;
                    }
                    i += gap as u64;
                }
                if i >= total {
                    break;
                }
                let k = seg.errors.start + (i % len) as usize;
                let p = self.p[k];
                if p >= seg.p_max || self.uniform.uniform() * seg.p_max < p {
                    happened += 1;
                    let at = seg.base + (i / len) * seg.shift;
                    for &d in &self.dets[self.det_start[k] as usize..self.det_start[k + 1] as usize]
                    {
                        detectors[(at + u64::from(d)) as usize] ^= 1;
                    }
                    for &l in &self.obs[self.obs_start[k] as usize..self.obs_start[k + 1] as usize]
                    {
                        observables[l as usize] ^= 1;
                    }
                }
                i += 1;
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
    fn rolled_shots_flip_what_the_expanded_model_flips() {
        // Probabilities 0 and 1: one shot each way, the same flips.
        let text = "error(1) D0 D1\nrepeat 50 {\n    error(1) D0 D2 L0\n    error(0) D1\n    \
                    repeat 2 {\n        error(1) D3 ^ D1\n        shift_detectors 1\n    }\n}\n\
                    error(1) D0 L1\n";
        let limits = crate::dem::DemLimits::DEFAULT;
        let rolled = RolledModel::parse_with(text, "t.dem", &limits)
            .unwrap()
            .unwrap();
        let whole = DetectorErrorModel::parse(text, "t.dem").unwrap();
        let mut r = RolledNoise::new(&rolled, whole.num_observables(), 1);
        let mut d = DemNoise::new(&whole, 1);
        assert_eq!(r.num_detectors(), whole.num_detectors());
        let n = whole.num_detectors();
        let (mut ra, mut ro, mut da, mut dob) = (vec![0; n], vec![0; 2], vec![0; n], vec![0; 2]);
        r.sample(&mut ra, &mut ro);
        d.sample(&mut da, &mut dob);
        assert_eq!((ra, ro), (da, dob));

        // stim's d = 3 memory, 40 iterations: each detector fires as often either way.
        let text = include_str!("../tests/data/dem/surface_d3_r8_p0.01.dem").replacen(
            "repeat 2 {",
            "repeat 40 {",
            1,
        );
        let rolled = RolledModel::parse_with(&text, "s.dem", &limits)
            .unwrap()
            .unwrap();
        let whole = DetectorErrorModel::parse(&text, "s.dem").unwrap();
        let mut r = RolledNoise::new(&rolled, whole.num_observables(), 5);
        let mut d = DemNoise::new(&whole, 6);
        let (n, k, shots) = (whole.num_detectors(), whole.num_observables(), 4_000);
        let (mut a, mut b) = (vec![0u32; n + k], vec![0u32; n + k]);
        let (mut e, mut o) = (vec![0u8; n], vec![0u8; k]);
        for _ in 0..shots {
            r.sample(&mut e, &mut o);
            for (c, &x) in a.iter_mut().zip(e.iter().chain(&o)) {
                *c += u32::from(x);
            }
            d.sample(&mut e, &mut o);
            for (c, &x) in b.iter_mut().zip(e.iter().chain(&o)) {
                *c += u32::from(x);
            }
        }
        for (i, (&x, &y)) in a.iter().zip(&b).enumerate() {
            // Two binomial counts of one rate: their difference within 5 standard deviations.
            let sd = ((x + y) as f64).sqrt().max(1.0);
            assert!(
                (x as f64 - y as f64).abs() < 5.0 * sd + 3.0,
                "detector {i}: {x} against {y}"
            );
        }
        assert!(a.iter().sum::<u32>() > 10_000, "the shots fire");
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
