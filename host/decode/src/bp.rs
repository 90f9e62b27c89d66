//! Belief propagation on the Tanner graph of a parity-check matrix, in the log-likelihood
//! domain: product-sum and (scaled) min-sum, flooding ("parallel") and serial schedules.
//!
//! The update rules, their order and their floating-point operations follow `ldpc` 2.x (Roffe's
//! `BpDecoder`), so that with the same settings the messages, the soft output and therefore the
//! hard decision come out bit for bit the same:
//!
//! - every decode starts from the channel log-likelihood ratios `ln((1 − p)/p)` on every edge;
//! - iteration `it` (1-based) updates every check (flooding) or every bit in index order
//!   (serial), then makes the hard decision `llr ≤ 0 → 1`;
//! - it stops as soon as the hard decision reproduces the syndrome (`converged`), or after
//!   `max_iter` iterations;
//! - min-sum with `ms_scaling_factor = 0` uses the adaptive factor `1 − 2^−it`.
//!
//! The graph is stored as flat index arrays (row-major edges, plus each column's edges in row
//! order) and the messages as flat `f64` vectors, all allocated at construction.

use std::fmt;
use std::str::FromStr;

use crate::bitmat::BitMatrix;
use crate::error::DecoderError;

/// The check-node rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BpMethod {
    /// Product-sum (sum-product): exact marginals on a tree, `tanh` rule.
    ProductSum,
    /// Min-sum, scaled by `ms_scaling_factor` (`ldpc`'s default method).
    #[default]
    MinimumSum,
}

impl FromStr for BpMethod {
    type Err = String;

    /// Accepts `ldpc`'s spellings: `product_sum`, `prod_sum`, `ps`, `minimum_sum`, `min_sum`,
    /// `ms` (any case).
    fn from_str(s: &str) -> Result<BpMethod, String> {
        match s.to_ascii_lowercase().as_str() {
            "product_sum" | "prod_sum" | "ps" | "0" => Ok(BpMethod::ProductSum),
            "minimum_sum" | "min_sum" | "ms" | "1" => Ok(BpMethod::MinimumSum),
            _ => Err(format!(
                "unknown BP method {s:?} (expected minimum_sum or product_sum)"
            )),
        }
    }
}

impl fmt::Display for BpMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BpMethod::ProductSum => "product_sum",
            BpMethod::MinimumSum => "minimum_sum",
        })
    }
}

/// The order of message updates within an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Schedule {
    /// Flooding: all checks, then all bits.
    #[default]
    Parallel,
    /// Bit by bit in index order; each bit's incoming messages are computed from the latest
    /// outgoing messages of its neighbours.
    Serial,
}

impl FromStr for Schedule {
    type Err = String;

    /// Accepts `parallel`, `p`, `serial`, `s` (any case).
    fn from_str(s: &str) -> Result<Schedule, String> {
        match s.to_ascii_lowercase().as_str() {
            "parallel" | "p" | "flooding" | "0" => Ok(Schedule::Parallel),
            "serial" | "s" | "1" => Ok(Schedule::Serial),
            _ => Err(format!(
                "unknown BP schedule {s:?} (expected parallel or serial)"
            )),
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Schedule::Parallel => "parallel",
            Schedule::Serial => "serial",
        })
    }
}

/// Per-bit error probabilities: checked to lie in (0, 0.5), turned into weights.
pub(crate) fn validate_channel(
    n: usize,
    error_rate: f64,
    error_channel: Option<&[f64]>,
) -> Result<Vec<f64>, DecoderError> {
    match error_channel {
        Some(ch) => {
            if ch.len() != n {
                return Err(DecoderError::ChannelLength {
                    expected: n,
                    found: ch.len(),
                });
            }
            for (bit, &p) in ch.iter().enumerate() {
                if !(p > 0.0 && p < 0.5) {
                    return Err(DecoderError::ChannelRate { bit, p });
                }
            }
            Ok(ch.to_vec())
        }
        None => {
            if !(error_rate > 0.0 && error_rate < 0.5) {
                return Err(DecoderError::ErrorRate(error_rate));
            }
            Ok(vec![error_rate; n])
        }
    }
}

/// The Tanner graph as flat index arrays.
///
/// Edges are numbered row-major: row `r` owns edges `row_start[r]..row_start[r + 1]`, in
/// ascending column order. Column `c`'s edges, in ascending row order, are
/// `col_edges[col_start[c]..col_start[c + 1]]`.
#[derive(Debug, Clone)]
pub(crate) struct TannerGraph {
    pub(crate) m: usize,
    pub(crate) n: usize,
    pub(crate) row_start: Vec<u32>,
    pub(crate) edge_col: Vec<u32>,
    pub(crate) edge_row: Vec<u32>,
    pub(crate) col_start: Vec<u32>,
    pub(crate) col_edges: Vec<u32>,
}

impl TannerGraph {
    pub(crate) fn new(h: &BitMatrix) -> Result<TannerGraph, DecoderError> {
        let (m, n) = (h.rows(), h.cols());
        if n == 0 {
            return Err(DecoderError::Matrix("the checks have no columns".into()));
        }
        let edges = h.count_ones();
        if edges >= u32::MAX as usize || n >= u32::MAX as usize {
            return Err(DecoderError::Matrix(format!(
                "{edges} entries do not fit 32-bit edge indices"
            )));
        }
        let mut row_start = Vec::with_capacity(m + 1);
        let mut edge_col = Vec::with_capacity(edges);
        let mut edge_row = Vec::with_capacity(edges);
        row_start.push(0);
        for r in 0..m {
            for c in h.row_ones(r) {
                edge_col.push(c as u32);
                edge_row.push(r as u32);
            }
            row_start.push(edge_col.len() as u32);
        }
        let mut col_count = vec![0u32; n];
        for &c in &edge_col {
            col_count[c as usize] += 1;
        }
        let mut col_start = Vec::with_capacity(n + 1);
        col_start.push(0u32);
        for c in 0..n {
            col_start.push(col_start[c] + col_count[c]);
        }
        let mut fill = col_start.clone();
        let mut col_edges = vec![0u32; edges];
        // Row-major traversal visits each column's edges in ascending row order.
        for (e, &c) in edge_col.iter().enumerate() {
            col_edges[fill[c as usize] as usize] = e as u32;
            fill[c as usize] += 1;
        }
        Ok(TannerGraph {
            m,
            n,
            row_start,
            edge_col,
            edge_row,
            col_start,
            col_edges,
        })
    }

    #[inline]
    pub(crate) fn row(&self, r: usize) -> std::ops::Range<usize> {
        self.row_start[r] as usize..self.row_start[r + 1] as usize
    }

    #[inline]
    pub(crate) fn col(&self, c: usize) -> &[u32] {
        &self.col_edges[self.col_start[c] as usize..self.col_start[c + 1] as usize]
    }

    pub(crate) fn edges(&self) -> usize {
        self.edge_col.len()
    }
}

/// Settings of belief propagation, named as in `ldpc`.
#[derive(Debug, Clone, PartialEq)]
pub struct BpSettings {
    /// Check-node rule.
    pub bp_method: BpMethod,
    /// Maximum iterations; 0 means `n` (the number of bits), as in `ldpc`.
    pub max_iter: usize,
    /// Min-sum scaling factor α (messages are multiplied by α); 0 selects `1 − 2^−it`.
    pub ms_scaling_factor: f64,
    /// Update schedule.
    pub schedule: Schedule,
}

impl Default for BpSettings {
    /// `ldpc`'s `BpOsdDecoder` defaults: min-sum, α = 1.0, parallel, `max_iter` = n.
    fn default() -> BpSettings {
        BpSettings {
            bp_method: BpMethod::MinimumSum,
            max_iter: 0,
            ms_scaling_factor: 1.0,
            schedule: Schedule::Parallel,
        }
    }
}

/// A belief-propagation decoder for one parity-check matrix. Built once; [`BpDecoder::decode`]
/// does not allocate.
#[derive(Debug, Clone)]
pub struct BpDecoder {
    graph: TannerGraph,
    settings: BpSettings,
    max_iter: usize,
    channel: Vec<f64>,
    prior_llr: Vec<f64>,
    check_to_bit: Vec<f64>,
    bit_to_check: Vec<f64>,
    /// Per-edge `tanh(bit_to_check / 2)` (product-sum only).
    tanh_half: Vec<f64>,
    llr: Vec<f64>,
    decoding: Vec<u8>,
    syndrome: Vec<u8>,
    converged: bool,
    iterations: usize,
}

impl BpDecoder {
    /// A decoder for checks `h` with every bit's error probability `error_rate`, or the per-bit
    /// `error_channel` when given (it takes precedence, as in `ldpc`).
    pub fn new(
        h: &BitMatrix,
        error_rate: f64,
        error_channel: Option<&[f64]>,
        settings: BpSettings,
    ) -> Result<BpDecoder, DecoderError> {
        let graph = TannerGraph::new(h)?;
        let channel = validate_channel(graph.n, error_rate, error_channel)?;
        if !(settings.ms_scaling_factor.is_finite() && settings.ms_scaling_factor >= 0.0) {
            return Err(DecoderError::ScalingFactor(settings.ms_scaling_factor));
        }
        let prior_llr = channel.iter().map(|&p| ((1.0 - p) / p).ln()).collect();
        let e = graph.edges();
        let (m, n) = (graph.m, graph.n);
        let max_iter = if settings.max_iter == 0 {
            n
        } else {
            settings.max_iter
        };
        Ok(BpDecoder {
            graph,
            settings,
            max_iter,
            channel,
            prior_llr,
            check_to_bit: vec![0.0; e],
            bit_to_check: vec![0.0; e],
            tanh_half: vec![0.0; e],
            llr: vec![0.0; n],
            decoding: vec![0; n],
            syndrome: vec![0; m],
            converged: false,
            iterations: 0,
        })
    }

    /// Number of checks (rows).
    pub fn checks(&self) -> usize {
        self.graph.m
    }

    /// Number of bits (columns).
    pub fn bits(&self) -> usize {
        self.graph.n
    }

    /// The settings.
    pub fn settings(&self) -> &BpSettings {
        &self.settings
    }

    /// The iteration limit in force (`max_iter`, or `n` when it was 0).
    pub fn max_iter(&self) -> usize {
        self.max_iter
    }

    /// The per-bit error probabilities.
    pub fn channel(&self) -> &[f64] {
        &self.channel
    }

    /// Whether the last decode's hard decision reproduced its syndrome.
    pub fn converged(&self) -> bool {
        self.converged
    }

    /// Iterations run by the last decode.
    pub fn iterations(&self) -> usize {
        self.iterations
    }

    /// The soft output of the last decode: per-bit log-likelihood ratios `ln(P(0)/P(1))`.
    pub fn log_prob_ratios(&self) -> &[f64] {
        &self.llr
    }

    /// The hard decision of the last decode (0/1 per bit).
    pub fn decoding(&self) -> &[u8] {
        &self.decoding
    }

    /// Runs BP on a syndrome (0/1 per check; any non-zero byte is 1) and returns the hard
    /// decision. Check [`BpDecoder::converged`] to see whether it satisfies the syndrome.
    pub fn decode(&mut self, syndrome: &[u8]) -> Result<&[u8], DecoderError> {
        if syndrome.len() != self.graph.m {
            return Err(DecoderError::SyndromeLength {
                expected: self.graph.m,
                found: syndrome.len(),
            });
        }
        for (d, &s) in self.syndrome.iter_mut().zip(syndrome) {
            *d = (s != 0) as u8;
        }
        match self.settings.schedule {
            Schedule::Parallel => self.run_parallel(),
            Schedule::Serial => self.run_serial(),
        }
        Ok(&self.decoding)
    }

    /// `α` for iteration `it` (1-based).
    #[inline]
    fn alpha(&self, it: usize) -> f64 {
        if self.settings.ms_scaling_factor == 0.0 {
            1.0 - 2f64.powf(-(it as f64))
        } else {
            self.settings.ms_scaling_factor
        }
    }

    /// Every edge's bit-to-check message starts at its bit's prior.
    fn initialise(&mut self) {
        for c in 0..self.graph.n {
            let prior = self.prior_llr[c];
            for &e in self.graph.col(c) {
                self.bit_to_check[e as usize] = prior;
            }
        }
        self.converged = false;
        self.iterations = 0;
    }

    /// Whether the hard decision reproduces the syndrome.
    fn satisfies_syndrome(&self) -> bool {
        let g = &self.graph;
        (0..g.m).all(|r| {
            let mut parity = self.syndrome[r];
            for e in g.row(r) {
                parity ^= self.decoding[g.edge_col[e] as usize];
            }
            parity == 0
        })
    }

    fn run_parallel(&mut self) {
        self.initialise();
        for it in 1..=self.max_iter {
            match self.settings.bp_method {
                BpMethod::MinimumSum => self.checks_min_sum(self.alpha(it)),
                BpMethod::ProductSum => self.checks_product_sum(),
            }
            self.bits_parallel();
            self.iterations = it;
            if self.satisfies_syndrome() {
                self.converged = true;
                return;
            }
        }
    }

    /// Min-sum check update: each edge gets α·(−1)^(s + #{other inputs ≤ 0})·min|other
    /// inputs| (`f64::MAX` when the check has no other edge).
    fn checks_min_sum(&mut self, alpha: f64) {
        let g = &self.graph;
        let b2c = &self.bit_to_check;
        let c2b = &mut self.check_to_bit;
        for r in 0..g.m {
            let range = g.row(r);
            let mut parity = self.syndrome[r] as u32;
            let (mut min1, mut min2, mut arg) = (f64::MAX, f64::MAX, usize::MAX);
            for e in range.clone() {
                let v = b2c[e];
                parity ^= (v <= 0.0) as u32;
                let a = v.abs();
                if a < min1 {
                    min2 = min1;
                    min1 = a;
                    arg = e;
                } else if a < min2 {
                    min2 = a;
                }
            }
            for e in range {
                let sign = parity ^ (b2c[e] <= 0.0) as u32;
                let mag = if e == arg { min2 } else { min1 };
                c2b[e] = mag * if sign == 1 { -alpha } else { alpha };
            }
        }
    }

    /// Product-sum check update: `(−1)^s · ln((1 + x)/(1 − x))`, `x` the product of the other
    /// inputs' `tanh(v/2)` taken as (product before) × (product after, accumulated backwards).
    fn checks_product_sum(&mut self) {
        let g = &self.graph;
        let b2c = &self.bit_to_check;
        let t = &mut self.tanh_half;
        let c2b = &mut self.check_to_bit;
        for r in 0..g.m {
            let range = g.row(r);
            let mut acc = 1.0f64;
            for e in range.clone() {
                t[e] = (b2c[e] / 2.0).tanh();
                c2b[e] = acc;
                acc *= t[e];
            }
            let sign = if self.syndrome[r] != 0 { -1.0 } else { 1.0 };
            let mut acc = 1.0f64;
            for e in range.rev() {
                let x = c2b[e] * acc;
                c2b[e] = sign * ((1.0 + x) / (1.0 - x)).ln();
                acc *= t[e];
            }
        }
    }

    /// Bit update of the flooding schedule: soft output, hard decision, and the next
    /// bit-to-check messages (prior + all other incoming, summed forwards then backwards).
    fn bits_parallel(&mut self) {
        let g = &self.graph;
        let c2b = &self.check_to_bit;
        let b2c = &mut self.bit_to_check;
        for c in 0..g.n {
            let edges = g.col(c);
            let mut acc = self.prior_llr[c];
            for &e in edges {
                b2c[e as usize] = acc;
                acc += c2b[e as usize];
            }
            self.llr[c] = acc;
            self.decoding[c] = (acc <= 0.0) as u8;
            let mut acc = 0.0f64;
            for &e in edges.iter().rev() {
                b2c[e as usize] += acc;
                acc += c2b[e as usize];
            }
        }
    }

    fn run_serial(&mut self) {
        self.initialise();
        if self.settings.bp_method == BpMethod::ProductSum {
            for e in 0..self.graph.edges() {
                self.tanh_half[e] = (self.bit_to_check[e] / 2.0).tanh();
            }
        }
        for it in 1..=self.max_iter {
            let alpha = self.alpha(it);
            for c in 0..self.graph.n {
                self.serial_bit(c, alpha);
            }
            self.iterations = it;
            if self.satisfies_syndrome() {
                self.converged = true;
                return;
            }
        }
    }

    /// Serial update of bit `c`: fresh check-to-bit messages on each of its edges from the
    /// checks' other current inputs, then its soft output and outgoing messages.
    fn serial_bit(&mut self, c: usize, alpha: f64) {
        let g = &self.graph;
        let edges = g.col(c);
        let mut acc = self.prior_llr[c];
        for &e in edges {
            let e = e as usize;
            let r = g.edge_row[e] as usize;
            let msg = match self.settings.bp_method {
                BpMethod::MinimumSum => {
                    let mut parity = self.syndrome[r] as u32;
                    let mut min = f64::MAX;
                    for o in g.row(r) {
                        if o != e {
                            let v = self.bit_to_check[o];
                            let a = v.abs();
                            if a < min {
                                min = a;
                            }
                            parity ^= (v <= 0.0) as u32;
                        }
                    }
                    let sign = if parity == 1 { -1.0 } else { 1.0 };
                    alpha * sign * min
                }
                BpMethod::ProductSum => {
                    let mut x = 1.0f64;
                    for o in g.row(r) {
                        if o != e {
                            x *= self.tanh_half[o];
                        }
                    }
                    let sign = if self.syndrome[r] != 0 { -1.0 } else { 1.0 };
                    sign * ((1.0 + x) / (1.0 - x)).ln()
                }
            };
            self.check_to_bit[e] = msg;
            self.bit_to_check[e] = acc;
            acc += msg;
        }
        self.llr[c] = acc;
        self.decoding[c] = (acc <= 0.0) as u8;
        let mut acc = 0.0f64;
        for &e in edges.iter().rev() {
            let e = e as usize;
            self.bit_to_check[e] += acc;
            acc += self.check_to_bit[e];
        }
        if self.settings.bp_method == BpMethod::ProductSum {
            for &e in edges {
                let e = e as usize;
                self.tanh_half[e] = (self.bit_to_check[e] / 2.0).tanh();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hamming() -> BitMatrix {
        BitMatrix::from_picture("1.1.1.1\n.11..11\n...1111").unwrap()
    }

    #[test]
    fn graph_layout() {
        let g = TannerGraph::new(&BitMatrix::from_picture("11.\n.11").unwrap()).unwrap();
        assert_eq!(g.row_start, vec![0, 2, 4]);
        assert_eq!(g.edge_col, vec![0, 1, 1, 2]);
        assert_eq!(g.col_start, vec![0, 1, 3, 4]);
        assert_eq!(g.col_edges, vec![0, 1, 2, 3]);
    }

    fn all_settings() -> Vec<BpSettings> {
        let mut v = Vec::new();
        for bp_method in [BpMethod::MinimumSum, BpMethod::ProductSum] {
            for schedule in [Schedule::Parallel, Schedule::Serial] {
                v.push(BpSettings {
                    bp_method,
                    schedule,
                    max_iter: 10,
                    ms_scaling_factor: 0.625,
                });
            }
        }
        v
    }

    #[test]
    fn tree_graph_decodes_single_errors_exactly() {
        // The repetition code's Tanner graph is a path, so BP is exact there.
        let h = crate::codes::repetition(5);
        for settings in all_settings() {
            let mut bp = BpDecoder::new(&h, 0.05, None, settings.clone()).unwrap();
            for q in 0..5 {
                let mut e = [0u8; 5];
                e[q] = 1;
                let mut s = [0u8; 4];
                h.mul_bytes(&e, &mut s);
                let d = bp.decode(&s).unwrap().to_vec();
                assert!(bp.converged(), "{settings:?} q={q}");
                assert_eq!(d, e, "{settings:?} q={q}");
            }
        }
    }

    #[test]
    fn converged_decisions_satisfy_the_syndrome() {
        let h = hamming();
        for settings in all_settings() {
            let mut bp = BpDecoder::new(&h, 0.05, None, settings.clone()).unwrap();
            for s in 1u8..8 {
                let syn = [s & 1, s >> 1 & 1, s >> 2 & 1];
                let d = bp.decode(&syn).unwrap().to_vec();
                let mut check = [0u8; 3];
                h.mul_bytes(&d, &mut check);
                assert_eq!(bp.converged(), check == syn, "{settings:?} s={s}");
                assert!(bp.iterations() >= 1 && bp.iterations() <= 10);
            }
        }
    }

    #[test]
    fn zero_syndrome_converges_in_one_iteration() {
        let mut bp = BpDecoder::new(&hamming(), 0.1, None, BpSettings::default()).unwrap();
        assert_eq!(bp.decode(&[0, 0, 0]).unwrap(), &[0u8; 7]);
        assert!(bp.converged());
        assert_eq!(bp.iterations(), 1);
        assert_eq!(bp.max_iter(), 7);
        // Without any check message the soft output is the prior.
        let prior = (0.9f64 / 0.1).ln();
        assert!(bp.log_prob_ratios().iter().all(|&l| l > prior));
    }

    #[test]
    fn bad_settings_are_errors() {
        let h = hamming();
        for p in [0.0, 0.5, -0.1, 0.7, f64::NAN] {
            assert!(matches!(
                BpDecoder::new(&h, p, None, BpSettings::default()),
                Err(DecoderError::ErrorRate(_))
            ));
        }
        assert_eq!(
            BpDecoder::new(&h, 0.1, Some(&[0.1; 6]), BpSettings::default()).unwrap_err(),
            DecoderError::ChannelLength {
                expected: 7,
                found: 6
            }
        );
        let mut ch = [0.1; 7];
        ch[3] = 0.6;
        assert_eq!(
            BpDecoder::new(&h, 0.1, Some(&ch), BpSettings::default()).unwrap_err(),
            DecoderError::ChannelRate { bit: 3, p: 0.6 }
        );
        let s = BpSettings {
            ms_scaling_factor: -1.0,
            ..BpSettings::default()
        };
        assert!(BpDecoder::new(&h, 0.1, None, s).is_err());
        let mut bp = BpDecoder::new(&h, 0.1, None, BpSettings::default()).unwrap();
        assert_eq!(
            bp.decode(&[0, 1]).unwrap_err(),
            DecoderError::SyndromeLength {
                expected: 3,
                found: 2
            }
        );
    }

    #[test]
    fn method_and_schedule_names() {
        assert_eq!("minimum_sum".parse(), Ok(BpMethod::MinimumSum));
        assert_eq!("PS".parse(), Ok(BpMethod::ProductSum));
        assert_eq!("serial".parse(), Ok(Schedule::Serial));
        assert!("fast".parse::<BpMethod>().is_err());
        assert_eq!(BpMethod::ProductSum.to_string(), "product_sum");
    }
}
