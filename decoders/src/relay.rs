//! Relay-BP (Müller et al., IBM, arXiv 2506.01779): memory belief propagation run as a chain
//! of legs with disordered memory strengths, for circuit-level decoding on a detector error
//! model. Settings carry the names of the `relay-bp` package (`gamma0`, `pre_iter`,
//! `num_sets`, `set_max_iter`, `gamma_dist_interval`, `stop_nconv`, `alpha`).
//!
//! # The algorithm
//!
//! Min-sum BP on the Tanner graph of the check matrix, where each mechanism `i`'s prior
//! log-likelihood ratio `Λᵢ = ln((1 − pᵢ)/pᵢ)` is replaced, in every iteration, by the
//! *memory prior* `(1 − γᵢ)·Λᵢ + γᵢ·Mᵢ`, `Mᵢ` being `i`'s marginal (posterior) of the previous
//! iteration. A check sends `α·(−1)^(s + #negative other inputs)·min |other inputs|`
//! (`α = 1` unless `alpha` is given; `alpha = 0` selects `1 − 2^(−t/alpha_iteration_scaling_factor)`
//! at leg iteration `t`); a mechanism's marginal is its memory prior plus all incoming
//! messages, its hard decision `Mᵢ ≤ 0`, and it sends its marginal minus the message it
//! answers.
//!
//! 1. **First leg**: every `γᵢ = gamma0`, the marginals start at the priors; at most
//!    `pre_iter` iterations, stopping when the hard decision reproduces the syndrome.
//! 2. **Relay legs** `1..=num_sets`: each draws new memory strengths `γᵢ` uniformly from
//!    `gamma_dist_interval` (some negative, which pushes a marginal away from where it was),
//!    resets the messages (bit-to-check to the priors) but keeps the marginals of the previous
//!    leg, and runs at most `set_max_iter` iterations.
//! 3. Every leg that converges is a solution; its weight is `Σ Λᵢ` over its flipped
//!    mechanisms. After `stop_nconv` solutions (counting the first leg's) the lightest one is
//!    returned (a strictly lighter one replaces the incumbent); with none, the first leg's
//!    hard decision (not converged).
//!
//! # Determinism
//!
//! Relay leg `l`'s memory strengths are a fixed function of `(seed, l, i)` (a SplitMix64
//! hash), so a shot's answer does not depend on the other shots, on their order, or on how many
//! threads decode them. (`relay-bp` draws from one generator per decoder, so its answers depend
//! on the order; the distribution per shot is the same uniform one.)
//!
//! # Layout
//!
//! Mechanisms are grouped by degree (detectors flipped) so that each group's inner loops run
//! over a fixed width without padding, and within a group ordered so that neighbours in the
//! pass share no check where possible. Messages are `f32`. As in [`crate::bp`], a check keeps
//! a 32-byte record — the two smallest input magnitudes as IEEE bit patterns, the parity of
//! negative inputs, and the parity of its mechanisms' hard decisions — and every message is
//! formed in the mechanism pass, so one pass over the edges makes an iteration. All arrays are
//! allocated at construction; [`RelayBpDecoder::decode`] does not allocate.
//!
//! That layout is the `scalar` kernel ([`RelayKernel::Scalar`]). The default, `simd`, runs the
//! same legs on the SIMD min-sum kernel of [`crate::bp32`] ([`crate::bp32::MinSum32::memory_leg`]):
//! a check pass, then each mechanism's memory prior `(1 − γᵢ)·Λᵢ + γᵢ·Mᵢ` formed as above and
//! the bit pass — the same rule, the same additions in the same order, the same legs, memory
//! strengths and choice of the answer. What differs is what `bp32` documents (a zero input
//! counts as `≤ 0`, a check's message is capped at an LLR of 10⁴), so a shot can rarely end
//! otherwise; on stim's d = 5 and 7 memory models (p = 0.004, 10,000 shots) and the gross code
//! (1,000) the logical failures were 68/67, 26/26 and 0/0, at about a third of the time.
//!
//! Batches ([`RelayBpDecoder::decode_many`], and so untimed `decode_batch` runs) go further on
//! the `simd` kernel: eight shots at a time on the lanes-across-shots kernel
//! ([`crate::bp32_lanes`], "Memory legs"), each lane a shot at its own leg and iteration, each
//! shot's legs, answer and [`RelayInfo`] bit for bit the one-shot kernel's (a test checks it
//! on a circuit model at every SIMD level). On stim's d = 7, r = 7, p = 0.004 memory model,
//! 1,000 shots on one thread took 1.14 s against 3.4 s one at a time, the same predictions.

use crate::bp::{MAX_ITER, message_bits, push_magnitude, scaling_factor};
use crate::decoder::{MechanismDecoder, MechanismsToObservables, ObservableDecoder, ShotInfo};
use crate::dem::DetectorErrorModel;
use crate::error::{DecoderError, SettingError, parse_value};
use crate::registry::{DecoderConfig, Entry, Profile, Setting, ValueType, config_any};
use crate::sparse::SparseMatrix;

/// Settings of [`RelayBpDecoder`], named and defaulted as `relay-bp`'s sinter decoder.
#[derive(Debug, Clone, PartialEq)]
pub struct RelayConfig {
    /// Memory strength of the first leg (default 0.1). Finite.
    pub gamma0: f64,
    /// Iteration limit of the first leg (default 60). At least 1. The legs together run at
    /// most [`MAX_ITER`] iterations: `pre_iter + num_sets · set_max_iter ≤ 1,048,576`.
    pub pre_iter: usize,
    /// Relay legs after the first (default 60).
    pub num_sets: usize,
    /// Iteration limit of each relay leg (default 60). At least 1 when `num_sets > 0`.
    pub set_max_iter: usize,
    /// The interval relay legs draw memory strengths from, `(low, high)` with `low ≤ high`,
    /// both finite (default (−0.24, 0.66)).
    pub gamma_dist_interval: (f64, f64),
    /// Solutions to find before stopping (default 5). At least 1.
    pub stop_nconv: usize,
    /// Check-message scaling: `None` (default) is 1, `Some(a)` with `a > 0` is `a`, and
    /// `Some(0.0)` the ramp `1 − 2^(−t/alpha_iteration_scaling_factor)`.
    pub alpha: Option<f64>,
    /// The ramp's scale (default 1). Positive and finite.
    pub alpha_iteration_scaling_factor: f64,
    /// Seed of the relay legs' memory strengths (default 0).
    pub seed: u64,
    /// The legs' kernel (default [`RelayKernel::Simd`]).
    pub kernel: RelayKernel,
}

/// Which code runs Relay-BP's legs: the same rule, the same legs and memory strengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RelayKernel {
    /// The SIMD min-sum kernel of [`crate::bp32`] with memory priors
    /// ([`crate::bp32::MinSum32::memory_leg`]): about 3× faster a leg iteration.
    #[default]
    Simd,
    /// This module's one-pass layout (the check records of the module docs), as before.
    Scalar,
}

impl std::str::FromStr for RelayKernel {
    type Err = String;

    fn from_str(s: &str) -> Result<RelayKernel, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "simd" => Ok(RelayKernel::Simd),
            "scalar" => Ok(RelayKernel::Scalar),
            _ => Err(format!(
                "unknown kernel \"{}\" (expected simd or scalar)",
                crate::io::excerpt(s)
            )),
        }
    }
}

impl std::fmt::Display for RelayKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RelayKernel::Simd => "simd",
            RelayKernel::Scalar => "scalar",
        })
    }
}

impl Default for RelayConfig {
    fn default() -> RelayConfig {
        RelayConfig {
            gamma0: 0.1,
            pre_iter: 60,
            num_sets: 60,
            set_max_iter: 60,
            gamma_dist_interval: (-0.24, 0.66),
            stop_nconv: 5,
            alpha: None,
            alpha_iteration_scaling_factor: 1.0,
            seed: 0,
            kernel: RelayKernel::Simd,
        }
    }
}

impl RelayConfig {
    /// The setting names [`RelayConfig::set`] takes (`relay-bp`'s).
    pub const KEYS: &'static str = "gamma0, pre_iter, num_sets, set_max_iter, \
                                    gamma_dist_interval, stop_nconv, alpha, \
                                    alpha_iteration_scaling_factor, seed, kernel";

    /// Sets one setting by its `relay-bp` name from text: numbers for `gamma0`,
    /// `alpha_iteration_scaling_factor`; non-negative integers for `pre_iter`, `num_sets`,
    /// `set_max_iter`, `stop_nconv`, `seed`; `LO,HI` for `gamma_dist_interval`; a number or
    /// `none` for `alpha`. Ranges are checked when the decoder is built.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        let int = "a non-negative integer";
        match key.trim() {
            "gamma0" => self.gamma0 = parse_value(key, value, "a number")?,
            "pre_iter" => self.pre_iter = parse_value(key, value, int)?,
            "num_sets" => self.num_sets = parse_value(key, value, int)?,
            "set_max_iter" => self.set_max_iter = parse_value(key, value, int)?,
            "stop_nconv" => self.stop_nconv = parse_value(key, value, int)?,
            "seed" => self.seed = parse_value(key, value, int)?,
            "alpha_iteration_scaling_factor" => {
                self.alpha_iteration_scaling_factor = parse_value(key, value, "a number")?
            }
            "alpha" => {
                self.alpha = match value.trim() {
                    "none" | "None" | "" => None,
                    v => Some(parse_value(key, v, "a number or none")?),
                }
            }
            "gamma_dist_interval" => {
                let v = value
                    .trim()
                    .trim_start_matches(['(', '['])
                    .trim_end_matches([')', ']']);
                // Exactly two numbers; any other value is quoted whole.
                let whole = || SettingError::value(key, value, "LO,HI (two numbers)");
                let (lo, hi) = v.split_once(',').ok_or_else(whole)?;
                let num = |t: &str| t.trim().parse::<f64>().map_err(|_| whole());
                self.gamma_dist_interval = (num(lo)?, num(hi)?);
            }
            "kernel" => {
                self.kernel = value
                    .parse()
                    .map_err(|_| SettingError::value(key, value, "simd or scalar"))?
            }
            other => return Err(SettingError::unknown(other, Self::KEYS)),
        }
        Ok(())
    }

    /// Checks every setting's range: [`DecoderError::Setting`] naming the first bad one.
    pub fn validate(&self) -> Result<(), DecoderError> {
        let bad = |name: &'static str, value: f64, expected: &'static str| {
            Err(DecoderError::Setting {
                name,
                value,
                expected,
            })
        };
        if !self.gamma0.is_finite() {
            return bad("gamma0", self.gamma0, "a finite number");
        }
        if self.pre_iter == 0 {
            return bad("pre_iter", 0.0, "at least 1");
        }
        if self.num_sets > 0 && self.set_max_iter == 0 {
            return bad("set_max_iter", 0.0, "at least 1 when num_sets > 0");
        }
        for (name, v) in [
            ("pre_iter", self.pre_iter),
            ("num_sets", self.num_sets),
            ("set_max_iter", self.set_max_iter),
        ] {
            if v > MAX_ITER {
                return bad(name, v as f64, "at most 1048576");
            }
        }
        let total = self.num_sets * self.set_max_iter + self.pre_iter;
        if total > MAX_ITER {
            return bad(
                "num_sets",
                self.num_sets as f64,
                "pre_iter + num_sets × set_max_iter (the legs' iterations together) at most 1048576",
            );
        }
        let (lo, hi) = self.gamma_dist_interval;
        if !(lo.is_finite() && hi.is_finite()) {
            return bad(
                "gamma_dist_interval",
                if lo.is_finite() { hi } else { lo },
                "finite ends",
            );
        }
        if lo > hi {
            return bad("gamma_dist_interval", lo, "low ≤ high");
        }
        if self.stop_nconv == 0 {
            return bad("stop_nconv", 0.0, "at least 1");
        }
        if let Some(a) = self.alpha
            && !(a.is_finite() && a >= 0.0)
        {
            return bad("alpha", a, "finite and ≥ 0 (0: the ramp)");
        }
        let s = self.alpha_iteration_scaling_factor;
        if !(s.is_finite() && s > 0.0) {
            return bad("alpha_iteration_scaling_factor", s, "finite and > 0");
        }
        Ok(())
    }

    /// `α` at leg iteration `t` (1-based).
    fn alpha(&self, t: usize) -> f32 {
        self.alpha.map_or(1.0, |a| {
            scaling_factor(a, t, self.alpha_iteration_scaling_factor) as f32
        })
    }
}

/// What one decode did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RelayInfo {
    /// A leg converged (the result reproduces the syndrome).
    pub converged: bool,
    /// Legs run, the first included.
    pub legs: u32,
    /// BP iterations over all legs.
    pub iterations: u32,
    /// Legs that converged.
    pub solutions: u32,
    /// The leg whose decision is the answer: 0 for the first leg (also when no leg
    /// converged), `k` for relay leg `k` (relay-bp reports that leg's iteration limit as its
    /// `DecodeResult.max_iter`).
    pub best_leg: u32,
}

const SIGN: u32 = 1 << 31;
const ABS: u32 = !SIGN;
/// `f32::MAX` as bits: the empty minimum.
const MAX_BITS: u32 = 0x7F7F_FFFF;

/// A check's summary for this iteration's messages and its accumulator for the next one
/// (see [`crate::bp`] for the idea): `min1` the smallest input magnitude's bits, `m1`/`m2` the
/// outgoing magnitudes `α·min1`, `α·min2`, `sign` the parity of the syndrome bit and the
/// negative inputs in bit 31; the accumulator's two minima, and in `par` the parity of the
/// negative inputs (bit 31) and of the hard decisions (bit 0).
#[derive(Debug, Clone, Copy)]
#[repr(C, align(32))]
struct Check {
    min1: u32,
    m1: f32,
    m2: f32,
    sign: u32,
    acc1: u32,
    acc2: u32,
    par: u32,
}

impl Check {
    const EMPTY: Check = Check {
        min1: 0,
        m1: 0.0,
        m2: 0.0,
        sign: 0,
        acc1: MAX_BITS,
        acc2: MAX_BITS,
        par: 0,
    };

    #[inline(always)]
    fn push(&mut self, v: f32, flip: u32) {
        let b = v.to_bits();
        self.par ^= (b & SIGN) | flip;
        push_magnitude(&mut self.acc1, &mut self.acc2, b & ABS);
    }

    /// Turns the accumulator into the summary; returns whether the hard decisions' parity
    /// differs from the syndrome bit.
    #[inline(always)]
    fn roll(&mut self, s: u32, alpha: f32) -> u32 {
        let mismatch = (self.par & 1) ^ s;
        self.min1 = self.acc1;
        self.m1 = f32::from_bits(self.acc1) * alpha;
        self.m2 = f32::from_bits(self.acc2) * alpha;
        self.sign = (self.par & SIGN) ^ (s << 31);
        self.acc1 = MAX_BITS;
        self.acc2 = MAX_BITS;
        self.par = 0;
        mismatch
    }
}

/// A run of mechanisms of one degree: internal columns `cols`, slots from `slot0`.
#[derive(Debug, Clone)]
struct Group {
    width: usize,
    cols: std::ops::Range<usize>,
    slot0: usize,
}

/// SplitMix64's finaliser.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Memory strength of mechanism `i` (original index) in relay leg `leg`: uniform in
/// `[lo, hi)` from 53 hashed bits.
#[inline]
fn leg_gamma(seed: u64, leg: u64, i: u64, lo: f64, hi: f64) -> f64 {
    let h = mix(seed ^ mix(leg.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i));
    let u = (h >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
    lo + (hi - lo) * u
}

/// Relay-BP for one check matrix and its priors. Built once; [`RelayBpDecoder::decode`] does
/// not allocate.
#[derive(Debug, Clone)]
pub struct RelayBpDecoder {
    config: RelayConfig,
    m: usize,
    n: usize,
    groups: Vec<Group>,
    /// Internal column → matrix column.
    order: Vec<u32>,
    /// Check of each slot.
    slot_row: Vec<u32>,
    /// `Λ` per internal column (f32 for the passes, f64 for solution weights).
    lam: Vec<f32>,
    lam64: Vec<f64>,
    /// The first iteration's summaries of every leg (inputs = the priors), before the sign.
    init_checks: Vec<Check>,
    /// Bit-to-check messages, and their values at a leg's start (the priors).
    b2c: Vec<f32>,
    b2c_init: Vec<f32>,
    /// Per leg: `(1 − γᵢ)Λᵢ` and `γᵢ`.
    coef: Vec<f32>,
    gamma: Vec<f32>,
    /// Marginals of the last iteration.
    post: Vec<f32>,
    decision: Vec<u8>,
    best: Vec<u8>,
    checks: Vec<Check>,
    syndrome: Vec<u32>,
    /// Matrix-order result of the last decode.
    result: Vec<u8>,
    /// Stop at this instant ([`RelayBpDecoder::set_deadline`]), and whether the last decode
    /// did.
    deadline: Option<std::time::Instant>,
    deadline_hit: bool,
    /// The SIMD kernel, with [`RelayKernel::Simd`], and the syndrome as it takes it.
    fast: Option<Box<crate::bp32::MinSum32>>,
    syndrome8: Vec<u8>,
    /// Its lanes-across-shots twin for batches ([`RelayBpDecoder::decode_many`]), made by
    /// the first batch that runs on it.
    lanes: Option<Box<crate::bp32_lanes::MinSum32Lanes>>,
}

impl RelayBpDecoder {
    /// A decoder for checks `h` (rows = detectors, columns = mechanisms) with per-mechanism
    /// probabilities `priors`, each in (0, 0.5).
    pub fn new(
        h: &SparseMatrix,
        priors: &[f64],
        config: &RelayConfig,
    ) -> Result<RelayBpDecoder, DecoderError> {
        config.validate()?;
        let (m, n) = (h.rows(), h.cols());
        if n == 0 {
            return Err(DecoderError::Matrix("the checks have no columns".into()));
        }
        if priors.len() != n {
            return Err(DecoderError::ChannelLength {
                expected: n,
                found: priors.len(),
            });
        }
        for (bit, &p) in priors.iter().enumerate() {
            if !(p > 0.0 && p < 0.5) {
                return Err(DecoderError::ChannelRate { bit, p });
            }
        }
        // Group by degree, ascending; inside a group, spread columns that share checks.
        let max_deg = (0..n).map(|c| h.col_weight(c)).max().unwrap_or(0);
        let mut order = Vec::with_capacity(n);
        let mut groups = Vec::new();
        let mut slot0 = 0;
        for width in 0..=max_deg {
            let cols: Vec<u32> = (0..n as u32)
                .filter(|&c| h.col_weight(c as usize) == width)
                .collect();
            if cols.is_empty() {
                continue;
            }
            let sub = h.select_columns(&cols);
            let start = order.len();
            order.extend(
                crate::bp::visiting_order(&sub)
                    .into_iter()
                    .map(|k| cols[k as usize]),
            );
            groups.push(Group {
                width,
                cols: start..order.len(),
                slot0,
            });
            slot0 += width * cols.len();
        }
        let mut slot_row = Vec::with_capacity(slot0);
        for &c in &order {
            slot_row.extend_from_slice(h.col(c as usize));
        }
        let lam64: Vec<f64> = order
            .iter()
            .map(|&c| {
                let p = priors[c as usize];
                ((1.0 - p) / p).ln()
            })
            .collect();
        let lam: Vec<f32> = lam64.iter().map(|&l| l as f32).collect();
        let mut b2c_init = Vec::with_capacity(slot0);
        for g in &groups {
            for i in g.cols.clone() {
                b2c_init.extend(std::iter::repeat_n(lam[i], g.width));
            }
        }
        let mut init_checks = vec![Check::EMPTY; m];
        for (&r, &v) in slot_row.iter().zip(&b2c_init) {
            init_checks[r as usize].push(v, 0);
        }
        Ok(RelayBpDecoder {
            config: config.clone(),
            m,
            n,
            groups,
            order,
            slot_row,
            lam,
            lam64,
            init_checks,
            b2c: b2c_init.clone(),
            b2c_init,
            coef: vec![0.0; n],
            gamma: vec![0.0; n],
            post: vec![0.0; n],
            decision: vec![0; n],
            best: vec![0; n],
            checks: vec![Check::EMPTY; m],
            syndrome: vec![0; m],
            result: vec![0; n],
            deadline: None,
            deadline_hit: false,
            fast: match config.kernel {
                RelayKernel::Simd => {
                    let llr: Vec<f64> = priors.iter().map(|&p| ((1.0 - p) / p).ln()).collect();
                    Some(Box::new(crate::bp32::MinSum32::new(
                        h,
                        &llr,
                        crate::simd::kernel(),
                    )?))
                }
                RelayKernel::Scalar => None,
            },
            syndrome8: vec![0; m],
            lanes: None,
        })
    }

    /// The settings.
    pub fn config(&self) -> &RelayConfig {
        &self.config
    }

    /// Checks (detectors).
    pub fn checks(&self) -> usize {
        self.m
    }

    /// Mechanisms.
    pub fn bits(&self) -> usize {
        self.n
    }

    /// The last decode's result, one 0/1 byte per mechanism (matrix order).
    pub fn decoding(&self) -> &[u8] {
        &self.result
    }

    /// A deadline for the following decodes (`None`: none): no leg starts, and no iteration
    /// of a leg after its first, once it has passed; the answer is the best so far (the
    /// lightest solution found, else the first leg's hard decision).
    pub fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.deadline = deadline;
    }

    /// Whether the last decode stopped at its deadline.
    pub fn deadline_hit(&self) -> bool {
        self.deadline_hit
    }

    #[inline]
    fn past_deadline(&mut self) -> bool {
        if let Some(d) = self.deadline
            && std::time::Instant::now() >= d
        {
            self.deadline_hit = true;
            return true;
        }
        false
    }

    /// Decodes a syndrome (0/1 per check; any non-zero byte is 1) into `correction` (0/1 per
    /// mechanism).
    pub fn decode(
        &mut self,
        syndrome: &[u8],
        correction: &mut [u8],
    ) -> Result<RelayInfo, DecoderError> {
        crate::error::check_lengths(syndrome.len(), self.m, correction.len(), self.n)?;
        for ((d, d8), &s) in self
            .syndrome
            .iter_mut()
            .zip(&mut self.syndrome8)
            .zip(syndrome)
        {
            *d = (s != 0) as u32;
            *d8 = (s != 0) as u8;
        }
        let info = self.run();
        for (&c, &b) in self.order.iter().zip(self.best.iter()) {
            self.result[c as usize] = b;
        }
        correction.copy_from_slice(&self.result);
        Ok(info)
    }

    fn run(&mut self) -> RelayInfo {
        let mut info = RelayInfo::default();
        self.deadline_hit = false;
        if self.syndrome.iter().all(|&s| s == 0) {
            self.decision.fill(0);
            self.best.fill(0);
            info.converged = true;
            info.solutions = 1;
            info.legs = 1;
            return info;
        }
        if self.fast.is_some() {
            return self.run_fast();
        }
        // First leg.
        let g0 = self.config.gamma0 as f32;
        for ((c, g), &l) in self.coef.iter_mut().zip(&mut self.gamma).zip(&self.lam) {
            *g = g0;
            *c = (1.0 - g0) * l;
        }
        self.post.copy_from_slice(&self.lam);
        let mut best_weight = f64::INFINITY;
        let (converged, its) = self.leg(self.config.pre_iter);
        info.legs = 1;
        info.iterations = its as u32;
        // The first leg's decision is the answer when nothing converges.
        self.best.copy_from_slice(&self.decision);
        if converged {
            info.solutions = 1;
            best_weight = self.weight();
        }
        let (lo, hi) = self.config.gamma_dist_interval;
        for leg in 1..=self.config.num_sets {
            if info.solutions as usize >= self.config.stop_nconv || self.past_deadline() {
                break;
            }
            let seed = self.config.seed;
            for (i, ((c, g), &l)) in self
                .coef
                .iter_mut()
                .zip(&mut self.gamma)
                .zip(&self.lam)
                .enumerate()
            {
                let gi = leg_gamma(seed, leg as u64, self.order[i] as u64, lo, hi) as f32;
                *g = gi;
                *c = (1.0 - gi) * l;
            }
            let (converged, its) = self.leg(self.config.set_max_iter);
            info.legs += 1;
            info.iterations += its as u32;
            if converged {
                info.solutions += 1;
                let w = self.weight();
                if w < best_weight {
                    best_weight = w;
                    self.best.copy_from_slice(&self.decision);
                    info.best_leg = leg as u32;
                }
            }
        }
        info.converged = info.solutions > 0;
        info
    }

    /// [`RelayBpDecoder::run`] on the SIMD kernel: the same legs, memory strengths, solutions
    /// and choice of the answer; the kernel's decisions read back into internal order.
    fn run_fast(&mut self) -> RelayInfo {
        let RelayBpDecoder {
            config,
            fast,
            syndrome8,
            decision,
            best,
            order,
            lam64,
            deadline,
            deadline_hit,
            ..
        } = self;
        let k = fast.as_deref_mut().expect("the SIMD kernel");
        let deadline = *deadline;
        let mut hit = false;
        let mut past = || {
            hit = hit || deadline.is_some_and(|d| std::time::Instant::now() >= d);
            hit
        };
        let alpha = |t: usize| config.alpha(t);
        let read = |k: &crate::bp32::MinSum32, decision: &mut [u8]| {
            for (d, &c) in decision.iter_mut().zip(order.iter()) {
                *d = u8::from(k.flipped(c as usize));
            }
        };
        let weight = |decision: &[u8]| weight_of(decision, lam64);
        let mut info = RelayInfo::default();
        k.start_memory(syndrome8);
        let g0 = config.gamma0 as f32;
        let (converged, its) = k.memory_leg(|_| g0, config.pre_iter, alpha, |_| past());
        info.legs = 1;
        info.iterations = its as u32;
        read(k, decision);
        // The first leg's decision is the answer when nothing converges.
        best.copy_from_slice(decision);
        let mut best_weight = f64::INFINITY;
        if converged {
            info.solutions = 1;
            best_weight = weight(decision);
        }
        let (lo, hi) = config.gamma_dist_interval;
        let seed = config.seed;
        for leg in 1..=config.num_sets {
            if info.solutions as usize >= config.stop_nconv || past() {
                break;
            }
            let gamma = |c: usize| leg_gamma(seed, leg as u64, c as u64, lo, hi) as f32;
            let (converged, its) = k.memory_leg(gamma, config.set_max_iter, alpha, |_| past());
            info.legs += 1;
            info.iterations += its as u32;
            if converged {
                info.solutions += 1;
                read(k, decision);
                let w = weight(decision);
                if w < best_weight {
                    best_weight = w;
                    best.copy_from_slice(decision);
                    info.best_leg = leg as u32;
                }
            }
        }
        *deadline_hit = hit;
        info.converged = info.solutions > 0;
        info
    }

    /// Decodes shots `0..shots` as [`RelayBpDecoder::decode`] decodes each, with the same
    /// corrections and [`RelayInfo`]: `syndrome(shot, buffer)` writes shot `shot`'s syndrome
    /// (0/1 per check; any non-zero byte is 1) into a buffer of [`RelayBpDecoder::checks`]
    /// bytes; `answer(shot, correction, info)` takes each shot's answer once, in the order the
    /// shots finish. The first error of a callback ends the call.
    ///
    /// With the `simd` kernel, no deadline and from [`crate::bp::MIN_LANES_BATCH`] shots, the
    /// shots run [`crate::bp32_lanes::SHOT_LANES`] at a time on the lanes kernel
    /// ([`crate::bp32_lanes`], "Memory legs"), each lane a shot at its own leg and iteration,
    /// each bit for bit the single-shot kernel's legs; a lane whose shot is answered takes
    /// the next. Otherwise they run one by one, in order. Memory is the model's whatever
    /// `shots` is.
    pub fn decode_many<E: From<DecoderError>>(
        &mut self,
        shots: usize,
        mut syndrome: impl FnMut(usize, &mut [u8]) -> Result<(), E>,
        mut answer: impl FnMut(usize, &[u8], RelayInfo) -> Result<(), E>,
    ) -> Result<(), E> {
        if let Some(mut lanes) = self.take_lanes(shots) {
            let r = self.run_lanes(&mut lanes, shots, &mut syndrome, &mut answer);
            self.lanes = Some(lanes);
            return r;
        }
        let mut s = vec![0u8; self.m];
        let mut c = vec![0u8; self.n];
        for shot in 0..shots {
            syndrome(shot, &mut s)?;
            let info = self.decode(&s, &mut c)?;
            answer(shot, &c, info)?;
        }
        Ok(())
    }

    /// The lanes kernel, out of `self` for a batch of `shots`, when the batch runs on it (see
    /// [`RelayBpDecoder::decode_many`]): made the first time; a model too large for it (or
    /// memory refused) leaves the batch to the one-shot path.
    fn take_lanes(&mut self, shots: usize) -> Option<Box<crate::bp32_lanes::MinSum32Lanes>> {
        let fast = self.fast.as_deref()?;
        if shots < crate::bp::MIN_LANES_BATCH || self.deadline.is_some() {
            return None;
        }
        if let Some(l) = self.lanes.take() {
            return Some(l);
        }
        let mut lanes =
            crate::bp32_lanes::MinSum32Lanes::like(fast, crate::simd::lanes_kernel()).ok()?;
        lanes.use_memory().ok()?;
        Some(Box::new(lanes))
    }

    /// [`RelayBpDecoder::run_fast`] for many shots on the lanes: each lane runs its shot's
    /// legs in turn — the same memory strengths, iteration limits and scaling factors, the
    /// same solutions, weights (summed in internal order) and choice of the answer.
    fn run_lanes<E: From<DecoderError>>(
        &mut self,
        k: &mut crate::bp32_lanes::MinSum32Lanes,
        shots: usize,
        syndrome: &mut impl FnMut(usize, &mut [u8]) -> Result<(), E>,
        answer: &mut impl FnMut(usize, &[u8], RelayInfo) -> Result<(), E>,
    ) -> Result<(), E> {
        use crate::bp32_lanes::SHOT_LANES as W;
        /// One lane's shot: its leg (0 the first), the leg's iterations so far, what the
        /// decode has done, its lightest solution's weight and its answer so far (internal
        /// order).
        struct Shot {
            shot: usize,
            leg: usize,
            it: usize,
            info: RelayInfo,
            best_weight: f64,
        }
        let n = self.n;
        let RelayBpDecoder {
            config,
            order,
            lam64,
            ..
        } = self;
        let (lo, hi) = config.gamma_dist_interval;
        let (seed, g0) = (config.seed, config.gamma0 as f32);
        let mut lane: [Option<Shot>; W] = Default::default();
        let mut best = vec![0u8; W * n];
        let mut decision = vec![0u8; n];
        let mut result = vec![0u8; n];
        let mut s = vec![0u8; self.m];
        let mut next = 0;
        loop {
            for (l, slot) in lane.iter_mut().enumerate() {
                while slot.is_none() && next < shots {
                    let shot = next;
                    next += 1;
                    syndrome(shot, &mut s)?;
                    if s.iter().all(|&x| x == 0) {
                        // As `run` answers a zero syndrome: nothing flipped, without a leg.
                        let info = RelayInfo {
                            converged: true,
                            solutions: 1,
                            legs: 1,
                            ..RelayInfo::default()
                        };
                        result.fill(0);
                        answer(shot, &result, info)?;
                        continue;
                    }
                    k.start_memory(l, &s);
                    k.start_leg(l, |_| g0);
                    *slot = Some(Shot {
                        shot,
                        leg: 0,
                        it: 0,
                        info: RelayInfo::default(),
                        best_weight: f64::INFINITY,
                    });
                }
            }
            if lane.iter().all(Option::is_none) {
                return Ok(());
            }
            let mut alpha = [1.0f32; W];
            for (a, sh) in alpha.iter_mut().zip(lane.iter_mut()) {
                if let Some(sh) = sh {
                    sh.it += 1;
                    *a = config.alpha(sh.it);
                }
            }
            let solved = k.memory_iteration(alpha);
            for (l, slot) in lane.iter_mut().enumerate() {
                let Some(sh) = slot else { continue };
                let converged = solved >> l & 1 == 1;
                let limit = if sh.leg == 0 {
                    config.pre_iter
                } else {
                    config.set_max_iter
                };
                if !converged && sh.it < limit {
                    continue;
                }
                // The leg ends.
                let best = &mut best[l * n..(l + 1) * n];
                let lane = k.lane(l);
                let read = |decision: &mut [u8]| {
                    for (d, &c) in decision.iter_mut().zip(order.iter()) {
                        *d = u8::from(lane.flipped(c as usize));
                    }
                };
                let weight = |decision: &[u8]| weight_of(decision, lam64);
                sh.info.legs += 1;
                sh.info.iterations += sh.it as u32;
                if sh.leg == 0 {
                    read(&mut decision);
                    // The first leg's decision is the answer when nothing converges.
                    best.copy_from_slice(&decision);
                    if converged {
                        sh.info.solutions = 1;
                        sh.best_weight = weight(&decision);
                    }
                } else if converged {
                    sh.info.solutions += 1;
                    read(&mut decision);
                    let w = weight(&decision);
                    if w < sh.best_weight {
                        sh.best_weight = w;
                        best.copy_from_slice(&decision);
                        sh.info.best_leg = sh.leg as u32;
                    }
                }
                let leg = sh.leg + 1;
                if leg <= config.num_sets && (sh.info.solutions as usize) < config.stop_nconv {
                    k.start_leg(l, |c| leg_gamma(seed, leg as u64, c as u64, lo, hi) as f32);
                    sh.leg = leg;
                    sh.it = 0;
                    continue;
                }
                sh.info.converged = sh.info.solutions > 0;
                for (&c, &b) in order.iter().zip(best.iter()) {
                    result[c as usize] = b;
                }
                let (shot, info) = (sh.shot, sh.info);
                *slot = None;
                answer(shot, &result, info)?;
            }
        }
    }

    /// `Σ Λᵢ` over the current hard decision's flipped mechanisms.
    fn weight(&self) -> f64 {
        weight_of(&self.decision, &self.lam64)
    }

    /// One leg of at most `max_iter` iterations from the priors' messages and the current
    /// marginals; returns whether it converged and the iterations run.
    fn leg(&mut self, max_iter: usize) -> (bool, usize) {
        self.b2c.copy_from_slice(&self.b2c_init);
        let a1 = self.config.alpha(1);
        for ((c, init), &s) in self
            .checks
            .iter_mut()
            .zip(&self.init_checks)
            .zip(&self.syndrome)
        {
            *c = *init;
            c.roll(s, a1);
        }
        for it in 1..=max_iter {
            if it > 1 && self.past_deadline() {
                return (false, it - 1);
            }
            for gi in 0..self.groups.len() {
                let g = self.groups[gi].clone();
                self.group_pass(&g);
            }
            let next = self.config.alpha(it + 1);
            let mut mismatch = 0u32;
            for (c, &s) in self.checks.iter_mut().zip(&self.syndrome) {
                mismatch |= c.roll(s, next);
            }
            if mismatch == 0 {
                return (true, it);
            }
        }
        (false, max_iter)
    }

    fn group_pass(&mut self, g: &Group) {
        macro_rules! widths {
            ($($w:literal)*) => {
                match g.width {
                    $($w => self.pass::<$w>(g),)*
                    _ => self.pass::<0>(g),
                }
            };
        }
        widths!(1 2 3 4 5 6 7 8 9 10 11 12)
    }

    /// The mechanism pass over one group (`W` its width, or 0 for the group's own width).
    fn pass<const W: usize>(&mut self, g: &Group) {
        let width = if W == 0 { g.width } else { W };
        let cols = g.cols.clone();
        let slots = g.slot0..g.slot0 + width * cols.len();
        if width == 0 {
            // Mechanisms that flip no detector: the memory prior alone.
            for i in cols {
                let sum = self.coef[i] + self.gamma[i] * self.post[i];
                self.post[i] = sum;
                self.decision[i] = (sum <= 0.0) as u8;
            }
            return;
        }
        let b2c = &mut self.b2c[slots.clone()];
        let rows = &self.slot_row[slots];
        let checks = &mut self.checks[..];
        let mut msg = [0f32; 64];
        let msg = &mut msg[..width.min(64)];
        for (((((b, r), coef), gamma), post), dec) in b2c
            .chunks_exact_mut(width)
            .zip(rows.chunks_exact(width))
            .zip(&self.coef[cols.clone()])
            .zip(&self.gamma[cols.clone()])
            .zip(&mut self.post[cols.clone()])
            .zip(&mut self.decision[cols])
        {
            let mut sum = coef + gamma * *post;
            if width <= 64 {
                for k in 0..width {
                    let m = message_of(b[k], &checks[r[k] as usize]);
                    msg[k] = m;
                    sum += m;
                }
            } else {
                // Degrees above 64: messages formed twice rather than stored.
                for k in 0..width {
                    sum += message_of(b[k], &checks[r[k] as usize]);
                }
            }
            *post = sum;
            let flip = (sum <= 0.0) as u32;
            *dec = flip as u8;
            for k in 0..width {
                let m = if width <= 64 {
                    msg[k]
                } else {
                    message_of(b[k], &checks[r[k] as usize])
                };
                let out = sum - m;
                b[k] = out;
                checks[r[k] as usize].push(out, flip);
            }
        }
    }
}

/// The message a check sends to the input `v`.
#[inline(always)]
fn message_of(v: f32, c: &Check) -> f32 {
    let vb = v.to_bits();
    f32::from_bits(message_bits(
        vb & ABS,
        c.min1,
        c.m1.to_bits(),
        c.m2.to_bits(),
        (c.sign ^ vb) & SIGN,
    ))
}

impl MechanismDecoder for RelayBpDecoder {
    fn checks(&self) -> usize {
        self.m
    }

    fn bits(&self) -> usize {
        self.n
    }

    fn decode_mechanisms(
        &mut self,
        syndrome: &[u8],
        correction: &mut [u8],
    ) -> Result<ShotInfo, DecoderError> {
        let i = self.decode(syndrome, correction)?;
        Ok(ShotInfo {
            converged: i.converged,
            iterations: i.iterations,
            osd_used: false,
            legs: i.legs,
            deadline_hit: self.deadline_hit,
        })
    }

    fn decode_mechanisms_many(
        &mut self,
        shots: usize,
        syndrome: &crate::decoder::SyndromeOf<'_>,
        answer: &mut dyn FnMut(usize, &[u8], ShotInfo),
    ) -> Result<(), DecoderError> {
        if self.deadline.is_some() {
            // Timed: one shot at a time, each saying whether it met the deadline.
            let mut s = vec![0u8; self.m];
            let mut c = vec![0u8; self.n];
            for shot in 0..shots {
                syndrome(shot, &mut s)?;
                let info = self.decode_mechanisms(&s, &mut c)?;
                answer(shot, &c, info);
            }
            return Ok(());
        }
        self.decode_many(shots, syndrome, |shot, correction, i| {
            let info = ShotInfo {
                converged: i.converged,
                iterations: i.iterations,
                osd_used: false,
                legs: i.legs,
                deadline_hit: false,
            };
            answer(shot, correction, info);
            Ok::<(), DecoderError>(())
        })
    }

    fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        RelayBpDecoder::set_deadline(self, deadline);
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl DecoderConfig for RelayConfig {
    fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        RelayConfig::set(self, key, value)
    }

    fn get(&self, key: &str) -> Option<String> {
        Some(match key {
            "gamma0" => self.gamma0.to_string(),
            "pre_iter" => self.pre_iter.to_string(),
            "num_sets" => self.num_sets.to_string(),
            "set_max_iter" => self.set_max_iter.to_string(),
            "gamma_dist_interval" => {
                format!(
                    "{},{}",
                    self.gamma_dist_interval.0, self.gamma_dist_interval.1
                )
            }
            "stop_nconv" => self.stop_nconv.to_string(),
            "alpha" => self
                .alpha
                .map_or_else(|| "none".to_string(), |a| a.to_string()),
            "alpha_iteration_scaling_factor" => self.alpha_iteration_scaling_factor.to_string(),
            "seed" => self.seed.to_string(),
            "kernel" => self.kernel.to_string(),
            _ => return None,
        })
    }

    fn build(&self, dem: &DetectorErrorModel) -> Result<Box<dyn ObservableDecoder>, DecoderError> {
        let d =
            MechanismsToObservables::new(dem, |h, priors| RelayBpDecoder::new(h, &priors, self))?;
        Ok(Box::new(d))
    }

    config_any!();
}

impl From<RelayConfig> for crate::registry::DecoderSettings {
    /// These settings as the registry's entry of their decoder.
    fn from(c: RelayConfig) -> crate::registry::DecoderSettings {
        crate::registry::DecoderSettings::of(&ENTRY, Box::new(c))
    }
}

fn relay_config(_: Profile) -> Box<dyn DecoderConfig> {
    Box::new(RelayConfig::default())
}

/// Relay-BP in the decoder registry, with `relay-bp`'s names and its sinter defaults (the same
/// in real time: the legs stop at `stop_nconv` solutions, and a stream's `deadline_us` bounds
/// a window's decode).
pub static ENTRY: Entry = Entry {
    name: "relay-bp",
    title: "Relay-BP",
    summary: "memory belief propagation in relay legs (arXiv 2506.01779); relay-bp's names and \
              its sinter defaults",
    settings: &[
        Setting {
            key: "gamma0",
            value: ValueType::Number,
            range: "a finite number",
            offline: "0.1",
            realtime: "0.1",
            help: "memory strength of the first leg",
        },
        Setting {
            key: "pre_iter",
            value: ValueType::Integer,
            range: "1..=1048576",
            offline: "60",
            realtime: "60",
            help: "iterations of the first leg at most",
        },
        Setting {
            key: "num_sets",
            value: ValueType::Integer,
            range: "0..=1048576 (pre_iter + num_sets × set_max_iter ≤ 1048576)",
            offline: "60",
            realtime: "60",
            help: "relay legs after the first",
        },
        Setting {
            key: "set_max_iter",
            value: ValueType::Integer,
            range: "1..=1048576 (0 only without relay legs)",
            offline: "60",
            realtime: "60",
            help: "iterations of each relay leg at most",
        },
        Setting {
            key: "gamma_dist_interval",
            value: ValueType::Interval,
            range: "finite LO ≤ HI",
            offline: "-0.24,0.66",
            realtime: "-0.24,0.66",
            help: "the interval relay legs draw memory strengths from",
        },
        Setting {
            key: "stop_nconv",
            value: ValueType::Integer,
            range: "at least 1",
            offline: "5",
            realtime: "5",
            help: "solutions to find before stopping",
        },
        Setting {
            key: "alpha",
            value: ValueType::OptionalNumber,
            range: "none (1), or finite and ≥ 0 (0: the ramp)",
            offline: "none",
            realtime: "none",
            help: "check-message scaling",
        },
        Setting {
            key: "alpha_iteration_scaling_factor",
            value: ValueType::Number,
            range: "finite and > 0",
            offline: "1",
            realtime: "1",
            help: "scale of the ramp 1 - 2^(-t/factor) when alpha = 0",
        },
        Setting {
            key: "seed",
            value: ValueType::Integer,
            range: "0..=18446744073709551615",
            offline: "0",
            realtime: "0",
            help: "seed of the relay legs' memory strengths",
        },
        Setting {
            key: "kernel",
            value: ValueType::Choice(&["simd", "scalar"]),
            range: "simd (the SIMD min-sum kernel with memory priors) or scalar (the one-pass \
                    layout)",
            offline: "simd",
            realtime: "simd",
            help: "the code that runs the legs (the same rule and legs)",
        },
    ],
    config: relay_config,
};

/// `Σ Λᵢ` over the mechanisms `decision` (0/1 per mechanism) flips, in mechanism order.
fn weight_of(decision: &[u8], lam: &[f64]) -> f64 {
    decision
        .iter()
        .zip(lam)
        .filter(|(d, _)| **d != 0)
        .map(|(_, l)| *l)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bitmat::BitMatrix;

    fn rep(n: usize) -> SparseMatrix {
        SparseMatrix::from_dense(&crate::codes::repetition(n))
    }

    #[test]
    fn single_errors_on_a_chain_are_found() {
        let h = rep(7);
        let mut dec = RelayBpDecoder::new(&h, &[0.01; 7], &RelayConfig::default()).unwrap();
        for q in 0..7 {
            let mut e = vec![0u8; 7];
            e[q] = 1;
            let mut s = vec![0u8; 6];
            h.mul_bytes_xor(&e, &mut s);
            let mut out = vec![0u8; 7];
            let info = dec.decode(&s, &mut out).unwrap();
            assert!(info.converged, "q={q}");
            assert_eq!(out, e, "q={q}");
        }
        let mut out = vec![1u8; 7];
        let info = dec.decode(&[0; 6], &mut out).unwrap();
        assert_eq!(
            (out, info.converged, info.iterations),
            (vec![0; 7], true, 0)
        );
    }

    /// The d = 5 circuit model's usable mechanisms: checks and priors.
    fn d5() -> (SparseMatrix, Vec<f64>) {
        let text = include_str!("../tests/data/dem/surface_d5_r5_p0.001.dem");
        let dem = DetectorErrorModel::parse(text, "surface_d5_r5_p0.001.dem").unwrap();
        let kept = crate::decoder::usable_mechanisms(&dem).unwrap();
        let h = dem.check_matrix().select_columns(&kept);
        let priors = kept
            .iter()
            .map(|&k| crate::decoder::bp_prior(dem.priors()[k as usize]))
            .collect();
        (h, priors)
    }

    #[test]
    fn a_batch_on_the_lanes_answers_each_shot_as_one_at_a_time() {
        let (h, priors) = d5();
        // Syndromes of 0..6 random mechanisms (some zero), and random bits (no leg converges
        // on most): lanes at different legs and iterations side by side.
        let mut x = 0x853c_49e6_748f_ea9bu64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let syns: Vec<Vec<u8>> = (0..90)
            .map(|i| {
                let mut s = vec![0u8; h.rows()];
                if i % 9 == 8 {
                    s.iter_mut().for_each(|b| *b = (next() % 5 == 0) as u8 * 7);
                } else {
                    for _ in 0..i % 7 {
                        for &r in h.col(next() as usize % h.cols()) {
                            s[r as usize] ^= 1;
                        }
                    }
                }
                s
            })
            .collect();
        let configs = [
            RelayConfig {
                pre_iter: 6,
                num_sets: 12,
                set_max_iter: 5,
                stop_nconv: 2,
                ..RelayConfig::default()
            },
            RelayConfig {
                pre_iter: 3,
                num_sets: 4,
                set_max_iter: 9,
                stop_nconv: 3,
                alpha: Some(0.0),
                seed: 5,
                ..RelayConfig::default()
            },
        ];
        for config in &configs {
            let mut one = RelayBpDecoder::new(&h, &priors, config).unwrap();
            let want: Vec<(Vec<u8>, RelayInfo)> = syns
                .iter()
                .map(|s| {
                    let mut c = vec![0u8; h.cols()];
                    let info = one.decode(s, &mut c).unwrap();
                    (c, info)
                })
                .collect();
            assert!(want.iter().any(|w| w.1.legs > 2 && w.1.converged));
            assert!(want.iter().any(|w| !w.1.converged));
            for level in crate::simd::lanes_levels() {
                let mut many = RelayBpDecoder::new(&h, &priors, config).unwrap();
                let fast = many.fast.as_deref().unwrap();
                let mut lanes = crate::bp32_lanes::MinSum32Lanes::like(fast, level).unwrap();
                lanes.use_memory().unwrap();
                many.lanes = Some(Box::new(lanes));
                // A batch of all, one of a size no multiple of the lanes, and one below
                // MIN_LANES_BATCH (one at a time).
                for batch in [90, 11, 3] {
                    let mut seen = vec![false; syns.len()];
                    for first in (0..syns.len()).step_by(batch) {
                        let count = batch.min(syns.len() - first);
                        many.decode_many(
                            count,
                            |shot, out: &mut [u8]| -> Result<(), DecoderError> {
                                out.copy_from_slice(&syns[first + shot]);
                                Ok(())
                            },
                            |shot, c, info| {
                                let i = first + shot;
                                assert!(!seen[i], "shot {i} answered twice");
                                seen[i] = true;
                                let name = level.name();
                                assert_eq!(info, want[i].1, "{name} {i}");
                                assert!(c == want[i].0, "{name} {i}: correction");
                                Ok(())
                            },
                        )
                        .unwrap();
                    }
                    assert!(seen.iter().all(|&x| x));
                    assert!(many.lanes.is_some(), "the lanes kept for the next batch");
                }
            }
        }
    }

    #[test]
    fn more_solutions_are_never_heavier() {
        // Hamming checks: short cycles, where plain BP struggles and relay legs help.
        let h = SparseMatrix::from_dense(
            &BitMatrix::from_picture("1.1.1.1\n.11..11\n...1111").unwrap(),
        );
        let one = RelayConfig {
            stop_nconv: 1,
            ..RelayConfig::default()
        };
        let five = RelayConfig {
            stop_nconv: 5,
            ..RelayConfig::default()
        };
        let mut a = RelayBpDecoder::new(&h, &[0.05; 7], &one).unwrap();
        let mut b = RelayBpDecoder::new(&h, &[0.05; 7], &five).unwrap();
        for s in 1u8..8 {
            let syn = [s & 1, s >> 1 & 1, s >> 2 & 1];
            let (mut oa, mut ob) = ([0u8; 7], [0u8; 7]);
            let ia = a.decode(&syn, &mut oa).unwrap();
            let ib = b.decode(&syn, &mut ob).unwrap();
            for (o, i) in [(&oa, ia), (&ob, ib)] {
                let mut check = vec![0u8; 3];
                h.mul_bytes_xor(o, &mut check);
                assert!(i.converged, "s={s}");
                assert_eq!(check, syn, "s={s}");
            }
            assert!(ib.solutions >= ia.solutions);
            let w = |o: &[u8; 7]| o.iter().filter(|&&x| x == 1).count();
            assert!(w(&ob) <= w(&oa), "s={s}: {ob:?} vs {oa:?}");
        }
    }

    #[test]
    fn same_answer_whatever_came_before() {
        let h = SparseMatrix::from_dense(&crate::codes::CssCode::bb72().hz);
        let cfg = RelayConfig {
            pre_iter: 5,
            num_sets: 20,
            set_max_iter: 10,
            stop_nconv: 2,
            ..RelayConfig::default()
        };
        let mut a = RelayBpDecoder::new(&h, &[0.06; 72], &cfg).unwrap();
        let mut noise = crate::noise::CodeCapacity::new(0.06, 3);
        let mut shots = Vec::new();
        for _ in 0..40 {
            let mut e = vec![0u8; 72];
            noise.sample(&mut e);
            let mut s = vec![0u8; 36];
            h.mul_bytes_xor(&e, &mut s);
            shots.push(s);
        }
        let first: Vec<Vec<u8>> = shots
            .iter()
            .map(|s| {
                let mut o = vec![0u8; 72];
                a.decode(s, &mut o).unwrap();
                o
            })
            .collect();
        let mut b = RelayBpDecoder::new(&h, &[0.06; 72], &cfg).unwrap();
        for (s, want) in shots.iter().zip(&first).rev() {
            let mut o = vec![0u8; 72];
            b.decode(s, &mut o).unwrap();
            assert_eq!(&o, want);
        }
    }

    #[test]
    fn bad_settings_are_errors() {
        let h = rep(3);
        for (cfg, name) in [
            (
                RelayConfig {
                    gamma0: f64::NAN,
                    ..Default::default()
                },
                "gamma0",
            ),
            (
                RelayConfig {
                    pre_iter: 0,
                    ..Default::default()
                },
                "pre_iter",
            ),
            (
                RelayConfig {
                    set_max_iter: 0,
                    ..Default::default()
                },
                "set_max_iter",
            ),
            (
                RelayConfig {
                    gamma_dist_interval: (0.5, 0.1),
                    ..Default::default()
                },
                "gamma_dist_interval",
            ),
            (
                RelayConfig {
                    gamma_dist_interval: (0.0, f64::INFINITY),
                    ..Default::default()
                },
                "gamma_dist_interval",
            ),
            (
                RelayConfig {
                    stop_nconv: 0,
                    ..Default::default()
                },
                "stop_nconv",
            ),
            (
                RelayConfig {
                    alpha: Some(-1.0),
                    ..Default::default()
                },
                "alpha",
            ),
            (
                RelayConfig {
                    alpha_iteration_scaling_factor: 0.0,
                    ..Default::default()
                },
                "alpha_iteration_scaling_factor",
            ),
        ] {
            match RelayBpDecoder::new(&h, &[0.1; 3], &cfg) {
                Err(DecoderError::Setting { name: n, .. }) => assert_eq!(n, name),
                other => panic!("{name}: {other:?}"),
            }
        }
        // No relay legs: set_max_iter may be 0.
        let cfg = RelayConfig {
            num_sets: 0,
            set_max_iter: 0,
            ..Default::default()
        };
        assert!(RelayBpDecoder::new(&h, &[0.1; 3], &cfg).is_ok());
        assert!(matches!(
            RelayBpDecoder::new(&h, &[0.1, 0.6, 0.1], &RelayConfig::default()),
            Err(DecoderError::ChannelRate { bit: 1, .. })
        ));
        let mut d = RelayBpDecoder::new(&h, &[0.1; 3], &RelayConfig::default()).unwrap();
        assert!(matches!(
            d.decode(&[0], &mut [0; 3]),
            Err(DecoderError::SyndromeLength {
                expected: 2,
                found: 1
            })
        ));
    }

    #[test]
    fn settings_by_name() {
        let mut c = RelayConfig::default();
        c.set("gamma0", "0.25").unwrap();
        c.set("gamma_dist_interval", "(-0.3, 0.7)").unwrap();
        c.set("alpha", "0.5").unwrap();
        c.set("stop_nconv", "1").unwrap();
        assert_eq!(
            (c.gamma0, c.gamma_dist_interval, c.alpha, c.stop_nconv),
            (0.25, (-0.3, 0.7), Some(0.5), 1)
        );
        c.set("alpha", "none").unwrap();
        assert_eq!(c.alpha, None);
        assert!(
            c.set("pre_iter", "-1")
                .unwrap_err()
                .to_string()
                .contains("non-negative integer")
        );
        assert!(
            c.set("gamma", "1")
                .unwrap_err()
                .to_string()
                .starts_with("unknown setting `gamma`")
        );
        assert!(c.set("gamma_dist_interval", "0.1").is_err());
    }

    #[test]
    fn gammas_are_uniform_in_the_interval() {
        let (mut lo, mut hi, mut sum) = (f64::MAX, f64::MIN, 0.0);
        for i in 0..10_000u64 {
            let g = leg_gamma(7, 3, i, -0.24, 0.66);
            lo = lo.min(g);
            hi = hi.max(g);
            sum += g;
        }
        assert!(lo >= -0.24 && hi < 0.66 && lo < -0.23 && hi > 0.65);
        assert!((sum / 10_000.0 - 0.21).abs() < 0.01);
        assert_ne!(leg_gamma(7, 3, 0, 0.0, 1.0), leg_gamma(7, 4, 0, 0.0, 1.0));
        assert_ne!(leg_gamma(7, 3, 0, 0.0, 1.0), leg_gamma(8, 3, 0, 0.0, 1.0));
    }
}
