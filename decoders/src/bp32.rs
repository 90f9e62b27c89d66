//! Min-sum belief propagation in `f32`, flooding schedule, laid out for SIMD: the fast kernel
//! behind `precision = f32` ([`crate::bp::Precision`]).
//!
//! It computes the same rule as [`crate::bp`]'s min-sum — a check sends
//! `α·(−1)^(s + #{other inputs ≤ 0})·min|other inputs|`, a bit sends its prior plus the other
//! incoming messages, the hard decision is `llr ≤ 0`, BP stops when it reproduces the
//! syndrome — in single precision and in another order of operations, so its messages are not
//! `ldpc`'s bit for bit (the `f64` path keeps that promise); its logical error rate is the
//! `f64` path's within statistics (docs/decoders.md, "precision").
//!
//! # Layout
//!
//! Every edge of the Tanner graph is one message *slot*, numbered **bit-major**: the bits are
//! grouped by degree, and within a group of `count` bits of degree `d` slot `j` of the group's
//! bit `i` is `base + j·count + i`. The bit pass therefore runs over contiguous memory, one
//! slot index of a whole group at a time — the prior plus `d` rows of messages, then each
//! outgoing message as the total less its own incoming one — with no index at all: plain
//! vertical adds that the compiler vectorises at the width the CPU has.
//!
//! The check pass runs **eight checks at once**, one per lane: the checks sorted by weight
//! (heaviest first), cut into blocks of eight, each block padded to its heaviest check's
//! weight with the *neutral slot* (slot `E`, past the real ones), whose bit-to-check message is
//! always [`BIG`] — never below a running minimum, never `≤ 0`. For each input position of the
//! block the eight lanes gather their input's message, update their two smallest magnitudes
//! (compared as IEEE bit patterns: for non-negative floats the unsigned order is the float
//! order) and their sign parity, all vertically; then every lane scatters its messages. What
//! is scattered for a padding input lands on the neutral slot's check-to-bit message, which
//! no bit reads.
//!
//! **Bounded messages.** A check with one input sends `α·BIG`; a bit's outgoing message is
//! its total less its own incoming one, and in `f32` a total holding such a message loses its
//! small terms. Outgoing check messages are therefore capped at [`MAX_MESSAGE`] (an LLR of
//! 10⁴, certainty many times over): the cap changes no message of a check with two or more
//! inputs below it, and keeps every subtraction exact to ~10⁻³.
//!
//! All arrays are allocated at construction; [`MinSum32::decode`] does not allocate.

use crate::error::DecoderError;
use crate::sparse::SparseMatrix;

/// Lanes of the check pass: checks processed together.
pub const LANES: usize = 8;

/// The neutral slot's bit-to-check message: above every real magnitude, never `≤ 0`.
pub const BIG: f32 = 1.0e30;

/// The largest magnitude a check sends (see the module docs).
pub const MAX_MESSAGE: f32 = 1.0e4;

/// Mask of an `f32`'s magnitude bits.
const ABS: u32 = 0x7FFF_FFFF;

/// A group of bits of one degree, laid out slot-major.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Group {
    /// Slots per bit.
    pub(crate) degree: u32,
    /// Bits in the group.
    pub(crate) count: u32,
    /// First slot of the group.
    pub(crate) base: u32,
    /// First bit position of the group (positions index `prior`, `llr` and `column`).
    pub(crate) pos: u32,
}

/// One instruction-set level's compiled passes ([`crate::simd`] makes them; the portable
/// level is here).
#[derive(Debug, Clone, Copy)]
pub struct Kernel {
    /// `portable` or `avx2`.
    pub(crate) name: &'static str,
    pub(crate) checks: fn(&mut MinSum32, f32),
    pub(crate) bits: fn(&mut MinSum32),
}

impl Kernel {
    /// The level's name: `portable` or `avx2`.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

fn checks_portable(k: &mut MinSum32, alpha: f32) {
    checks_pass(k, alpha)
}

fn bits_portable(k: &mut MinSum32) {
    bits_pass(k)
}

/// The portable passes (SSE2 on x86-64, NEON on aarch64, as the compiler vectorises them).
pub const PORTABLE: Kernel = Kernel {
    name: "portable",
    checks: checks_portable,
    bits: bits_portable,
};

/// The graph and the scratch of one decoder (see the module docs).
#[derive(Debug, Clone)]
pub struct MinSum32 {
    pub(crate) m: usize,
    pub(crate) n: usize,
    /// Real slots (edges); slot `edges` is the neutral one.
    pub(crate) edges: usize,
    pub(crate) groups: Vec<Group>,
    /// Bit position → matrix column, and the inverse.
    pub(crate) column: Vec<u32>,
    pub(crate) position: Vec<u32>,
    /// Rows of each position (CSR by position), for the hard decision's syndrome.
    pub(crate) pos_row_start: Vec<u32>,
    pub(crate) pos_rows: Vec<u32>,
    /// Check blocks: block `b`'s inputs are `block_slots[block_start[b]..][..width·LANES]`,
    /// input `k` of lane `l` at `k·LANES + l`; its rows are `block_rows[b·LANES..][..LANES]`
    /// (`m` for a padding lane).
    pub(crate) block_start: Vec<u32>,
    pub(crate) block_width: Vec<u32>,
    pub(crate) block_slots: Vec<u32>,
    pub(crate) block_rows: Vec<u32>,
    /// Per-position priors (`ln((1 − p)/p)`).
    pub(crate) prior: Vec<f32>,
    /// The priors the bit pass adds: `prior` for plain BP; Relay-BP's memory priors
    /// `(1 − γ)·Λ + γ·M` (from `coef`, `gamma` and the last marginals) in a memory leg.
    pub(crate) eff: Vec<f32>,
    pub(crate) coef: Vec<f32>,
    pub(crate) gamma: Vec<f32>,
    /// Bit-to-check messages per slot: `mask + 1` entries, a power of two above `edges` (the
    /// check pass indexes them with `slot & mask`, which the compiler knows is in bounds, so
    /// its gathers carry no bounds checks; the entries past the neutral slot are unused).
    pub(crate) mask: usize,
    pub(crate) b2c: Vec<f32>,
    /// Check-to-bit messages in block order (`block_slots`' positions, written contiguously by
    /// the check pass): `cmask + 1` entries, a power of two, as for `b2c`; and each slot's
    /// position there, which the bit pass gathers through.
    pub(crate) cmask: usize,
    pub(crate) c2b: Vec<f32>,
    pub(crate) slot_block: Vec<u32>,
    /// The bit pass's gathered incoming messages, slot-major (`edges`).
    pub(crate) incoming: Vec<f32>,
    /// Soft output per position, and each position's least soft output so far (when tracked).
    pub(crate) llr: Vec<f32>,
    pub(crate) min_llr: Vec<f32>,
    /// The syndrome (0/1 per row, entry `m` 0) and the hard decision's (entry `m` collects).
    pub(crate) syndrome: Vec<u8>,
    pub(crate) candidate: Vec<u8>,
    /// Per-lane scratch of one block: magnitudes and sign bits of its inputs.
    pub(crate) mags: Vec<u32>,
    pub(crate) negs: Vec<u32>,
    /// The passes, of the level chosen at construction.
    pub(crate) kernel: Kernel,
}

impl MinSum32 {
    /// The kernel for checks `h` and per-column priors `prior_llr` (`ln((1 − p)/p)`, in matrix
    /// column order), its passes those of `kernel` (the level in force: `crate::simd::kernel()`).
    pub fn new(
        h: &SparseMatrix,
        prior_llr: &[f64],
        kernel: Kernel,
    ) -> Result<MinSum32, DecoderError> {
        let (m, n) = (h.rows(), h.cols());
        assert_eq!(prior_llr.len(), n, "priors");
        let edges = h.nnz();
        // Slots and block positions are gathered through as signed 32-bit indices (AVX2):
        // both stay below 2^31 (a block pads at most LANES - 1 lanes per input).
        if edges.saturating_mul(LANES) >= i32::MAX as usize || m >= i32::MAX as usize {
            return Err(DecoderError::Matrix(format!(
                "{edges} edges overflow the f32 kernel's 31-bit slot indices"
            )));
        }
        // Bits by degree, heaviest first, then by column.
        let mut column: Vec<u32> = (0..n as u32).collect();
        column.sort_by_key(|&c| (std::cmp::Reverse(h.col_weight(c as usize)), c));
        let mut position = vec![0u32; n];
        for (p, &c) in column.iter().enumerate() {
            position[c as usize] = p as u32;
        }
        let mut groups = Vec::new();
        // Slot of the k-th entry of column c (entries ascending by row).
        let mut col_slot = vec![0u32; edges];
        let col_start: Vec<usize> = {
            let mut s = Vec::with_capacity(n + 1);
            let mut acc = 0usize;
            s.push(0);
            for c in 0..n {
                acc += h.col_weight(c);
                s.push(acc);
            }
            s
        };
        let (mut p, mut base) = (0usize, 0usize);
        while p < n {
            let degree = h.col_weight(column[p] as usize);
            let end = (p..n)
                .find(|&q| h.col_weight(column[q] as usize) != degree)
                .unwrap_or(n);
            let count = end - p;
            for (i, &c) in column[p..end].iter().enumerate() {
                for k in 0..degree {
                    col_slot[col_start[c as usize] + k] = (base + k * count + i) as u32;
                }
            }
            groups.push(Group {
                degree: degree as u32,
                count: count as u32,
                base: base as u32,
                pos: p as u32,
            });
            base += degree * count;
            p = end;
        }
        debug_assert_eq!(base, edges);
        let mut pos_row_start = Vec::with_capacity(n + 1);
        let mut pos_rows = Vec::with_capacity(edges);
        pos_row_start.push(0u32);
        for &c in &column {
            pos_rows.extend_from_slice(h.col(c as usize));
            pos_row_start.push(pos_rows.len() as u32);
        }
        // Rows: their slots in column order, then blocks of LANES rows by weight.
        let mut row_slots: Vec<Vec<u32>> = vec![Vec::new(); m];
        for c in 0..n {
            for (k, &r) in h.col(c).iter().enumerate() {
                row_slots[r as usize].push(col_slot[col_start[c] + k]);
            }
        }
        let mut rows: Vec<u32> = (0..m as u32).collect();
        rows.sort_by_key(|&r| (std::cmp::Reverse(row_slots[r as usize].len()), r));
        let neutral = edges as u32;
        let (mut block_start, mut block_width) = (Vec::new(), Vec::new());
        let (mut block_slots, mut block_rows) = (Vec::new(), Vec::new());
        for chunk in rows.chunks(LANES) {
            let width = row_slots[chunk[0] as usize].len();
            block_start.push(block_slots.len() as u32);
            block_width.push(width as u32);
            for k in 0..width {
                for l in 0..LANES {
                    let s = chunk
                        .get(l)
                        .and_then(|&r| row_slots[r as usize].get(k).copied())
                        .unwrap_or(neutral);
                    block_slots.push(s);
                }
            }
            for l in 0..LANES {
                block_rows.push(chunk.get(l).copied().unwrap_or(m as u32));
            }
        }
        let max_width = block_width.first().copied().unwrap_or(0) as usize;
        let mut slot_block = vec![0u32; edges];
        for (i, &s) in block_slots.iter().enumerate() {
            if s != neutral {
                slot_block[s as usize] = i as u32;
            }
        }
        let cmask = block_slots.len().max(1).next_power_of_two() - 1;
        let prior: Vec<f32> = column
            .iter()
            .map(|&c| prior_llr[c as usize] as f32)
            .collect();
        Ok(MinSum32 {
            m,
            n,
            edges,
            groups,
            column,
            position,
            pos_row_start,
            pos_rows,
            block_start,
            block_width,
            block_slots,
            block_rows,
            eff: prior.clone(),
            coef: vec![0.0; n],
            gamma: vec![0.0; n],
            prior,
            mask: (edges + 1).next_power_of_two() - 1,
            b2c: vec![0.0; (edges + 1).next_power_of_two()],
            cmask,
            c2b: vec![0.0; cmask + 1],
            slot_block,
            incoming: vec![0.0; edges],
            llr: vec![0.0; n],
            min_llr: Vec::new(),
            syndrome: vec![0; m + 1],
            candidate: vec![0; m + 1],
            mags: vec![0; max_width * LANES],
            negs: vec![0; max_width * LANES],
            kernel,
        })
    }

    /// Edges of the graph (message slots).
    pub fn edges(&self) -> usize {
        self.edges
    }

    /// Keep each bit's least soft output over its prior and every iteration (OSD's
    /// `min_llr` order) from the next decode on.
    pub fn track_min_llr(&mut self, on: bool) {
        self.min_llr = if on { vec![0.0; self.n] } else { Vec::new() };
    }

    /// Runs at most `max_iter` iterations on `syndrome` (0/1 per check; any non-zero byte is
    /// 1), with the scaling factor `alpha(it)` at iteration `it` (1-based), stopping early when
    /// the hard decision reproduces the syndrome or when `stop(it)` says so before iteration
    /// `it > 1`. Returns `(converged, iterations run)`.
    pub fn decode(
        &mut self,
        syndrome: &[u8],
        max_iter: usize,
        alpha: impl Fn(usize) -> f32,
        stop: impl FnMut(usize) -> bool,
    ) -> (bool, usize) {
        let mut stop = stop;
        let kernel = self.kernel;
        debug_assert_eq!(syndrome.len(), self.m);
        for (d, &s) in self.syndrome.iter_mut().zip(syndrome) {
            *d = (s != 0) as u8;
        }
        self.reset_messages();
        self.eff.copy_from_slice(&self.prior);
        self.llr.copy_from_slice(&self.prior);
        if !self.min_llr.is_empty() {
            self.min_llr.copy_from_slice(&self.prior);
        }
        for it in 1..=max_iter {
            if it > 1 && stop(it) {
                return (false, it - 1);
            }
            let a = alpha(it);
            (kernel.checks)(self, a);
            (kernel.bits)(self);
            if !self.min_llr.is_empty() {
                for (m, &l) in self.min_llr.iter_mut().zip(&self.llr) {
                    *m = m.min(l);
                }
            }
            if self.decision_matches() {
                return (true, it);
            }
        }
        (false, max_iter)
    }

    /// Every real slot's bit-to-check message back at its bit's prior; the neutral one BIG.
    fn reset_messages(&mut self) {
        for g in &self.groups {
            let (base, count, pos) = (g.base as usize, g.count as usize, g.pos as usize);
            let prior = &self.prior[pos..pos + count];
            for j in 0..g.degree as usize {
                self.b2c[base + j * count..base + (j + 1) * count].copy_from_slice(prior);
            }
        }
        self.b2c[self.edges] = BIG;
    }

    /// Starts a Relay-BP decode of `syndrome` ([`crate::relay`]): the marginals start at the
    /// priors; the legs follow ([`MinSum32::memory_leg`]).
    pub fn start_memory(&mut self, syndrome: &[u8]) {
        debug_assert_eq!(syndrome.len(), self.m);
        for (d, &s) in self.syndrome.iter_mut().zip(syndrome) {
            *d = (s != 0) as u8;
        }
        self.llr.copy_from_slice(&self.prior);
    }

    /// One leg of Relay-BP's memory BP ([`crate::relay`]'s rule and order of operations): the
    /// bit-to-check messages back at the priors, the marginals kept from the leg before; each
    /// bit's memory strength `gamma_of(column)`; then at most `max_iter` flooding iterations,
    /// each bit's prior replaced by `(1 − γ)·Λ + γ·M` (`M` its marginal of the iteration
    /// before), stopping when the hard decision reproduces the syndrome or `stop(it)` says so
    /// before iteration `it > 1`. Returns `(converged, iterations run)`.
    pub fn memory_leg(
        &mut self,
        gamma_of: impl Fn(usize) -> f32,
        max_iter: usize,
        alpha: impl Fn(usize) -> f32,
        mut stop: impl FnMut(usize) -> bool,
    ) -> (bool, usize) {
        for (p, &c) in self.column.iter().enumerate() {
            let g = gamma_of(c as usize);
            self.gamma[p] = g;
            self.coef[p] = (1.0 - g) * self.prior[p];
        }
        self.reset_messages();
        let kernel = self.kernel;
        for it in 1..=max_iter {
            if it > 1 && stop(it) {
                return (false, it - 1);
            }
            (kernel.checks)(self, alpha(it));
            for (((e, &c), &g), &m) in self
                .eff
                .iter_mut()
                .zip(&self.coef)
                .zip(&self.gamma)
                .zip(&self.llr)
            {
                *e = c + g * m;
            }
            (kernel.bits)(self);
            if self.decision_matches() {
                return (true, it);
            }
        }
        (false, max_iter)
    }

    /// The hard decision (`llr ≤ 0`) of matrix column `c`.
    pub fn flipped(&self, c: usize) -> bool {
        self.llr[self.position[c] as usize] <= 0.0
    }

    /// Whether the hard decision's syndrome is the syndrome.
    fn decision_matches(&mut self) -> bool {
        self.candidate.fill(0);
        // Most soft outputs are positive: sixteen at a time are tested without a branch (the
        // compiler vectorises the fold), and only a block with a bit at or below zero is
        // walked.
        const SCAN: usize = 16;
        for (b, chunk) in self.llr.chunks(SCAN).enumerate() {
            if !chunk.iter().fold(false, |any, &l| any | (l <= 0.0)) {
                continue;
            }
            for (i, &l) in chunk.iter().enumerate() {
                if l <= 0.0 {
                    let p = b * SCAN + i;
                    let rows = &self.pos_rows
                        [self.pos_row_start[p] as usize..self.pos_row_start[p + 1] as usize];
                    for &r in rows {
                        self.candidate[r as usize] ^= 1;
                    }
                }
            }
        }
        self.candidate[..self.m] == self.syndrome[..self.m]
    }

    /// Writes the soft output in matrix column order into `out` (`n` entries).
    pub fn soft_output(&self, out: &mut [f64]) {
        for (&c, &l) in self.column.iter().zip(&self.llr) {
            out[c as usize] = f64::from(l);
        }
    }

    /// Writes each bit's least soft output (when tracked) in matrix column order into `out`.
    pub fn min_soft_output(&self, out: &mut [f64]) {
        for (&c, &l) in self.column.iter().zip(&self.min_llr) {
            out[c as usize] = f64::from(l);
        }
    }

    /// Matrix column `c`'s soft output.
    pub fn llr_of(&self, c: usize) -> f32 {
        self.llr[self.position[c] as usize]
    }
}

/// The check pass over every block (see the module docs), for any instruction set: the
/// portable level runs it as it is; `crate::simd` has the AVX2 version of it.
#[inline(always)]
pub(crate) fn checks_pass(k: &mut MinSum32, alpha: f32) {
    let big = BIG.to_bits();
    let mask = k.mask;
    let b2c = &k.b2c[..=mask];
    for (b, (&start, &width)) in k.block_start.iter().zip(&k.block_width).enumerate() {
        let (start, width) = (start as usize, width as usize);
        if width == 0 {
            continue;
        }
        let slots = &k.block_slots[start..start + width * LANES];
        let c2b = &mut k.c2b[start..start + width * LANES];
        let rows = &k.block_rows[b * LANES..(b + 1) * LANES];
        let mut min1 = [big; LANES];
        let mut min2 = [big; LANES];
        let mut parity = [0u32; LANES];
        for (l, &r) in rows.iter().enumerate() {
            parity[l] = u32::from(k.syndrome[r as usize]) << 31;
        }
        let mags = &mut k.mags[..width * LANES];
        let negs = &mut k.negs[..width * LANES];
        for ((idx, mag), neg) in slots
            .chunks_exact(LANES)
            .zip(mags.chunks_exact_mut(LANES))
            .zip(negs.chunks_exact_mut(LANES))
        {
            let mut v = [0u32; LANES];
            for (x, &s) in v.iter_mut().zip(idx) {
                *x = b2c[s as usize & mask].to_bits();
            }
            for l in 0..LANES {
                let a = v[l] & ABS;
                // The sign bit of `v ≤ 0`: set for a negative number, −0.0 and +0.0 alike
                // (`b − 1 | b` has its sign bit set exactly when `b` does or `b` is 0).
                let n = (v[l].wrapping_sub(1) | v[l]) & !ABS;
                mag[l] = a;
                neg[l] = n;
                parity[l] ^= n;
                min2[l] = min2[l].min(min1[l].max(a));
                min1[l] = min1[l].min(a);
            }
        }
        let mut m1 = [0u32; LANES];
        let mut m2 = [0u32; LANES];
        for l in 0..LANES {
            m1[l] = (f32::from_bits(min1[l]) * alpha).min(MAX_MESSAGE).to_bits();
            m2[l] = (f32::from_bits(min2[l]) * alpha).min(MAX_MESSAGE).to_bits();
        }
        for ((out, mag), neg) in c2b
            .chunks_exact_mut(LANES)
            .zip(mags.chunks_exact(LANES))
            .zip(negs.chunks_exact(LANES))
        {
            for l in 0..LANES {
                let m = if mag[l] == min1[l] { m2[l] } else { m1[l] };
                out[l] = f32::from_bits(m ^ parity[l] ^ neg[l]);
            }
        }
    }
}

/// The bit pass over every group (see the module docs): totals into `llr`, outgoing messages
/// into `b2c`.
#[inline(always)]
pub(crate) fn bits_pass(k: &mut MinSum32) {
    let cmask = k.cmask;
    let c2b = &k.c2b[..=cmask];
    for g in &k.groups {
        let (base, count, pos) = (g.base as usize, g.count as usize, g.pos as usize);
        let total = &mut k.llr[pos..pos + count];
        total.copy_from_slice(&k.eff[pos..pos + count]);
        for j in 0..g.degree as usize {
            let at = &k.slot_block[base + j * count..base + (j + 1) * count];
            let msg = &mut k.incoming[base + j * count..base + (j + 1) * count];
            for ((t, m), &i) in total.iter_mut().zip(msg.iter_mut()).zip(at) {
                *m = c2b[i as usize & cmask];
                *t += *m;
            }
        }
        for j in 0..g.degree as usize {
            let msg = &k.incoming[base + j * count..base + (j + 1) * count];
            let out = &mut k.b2c[base + j * count..base + (j + 1) * count];
            for ((o, &t), &m) in out.iter_mut().zip(total.iter()).zip(msg) {
                *o = t - m;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bitmat::BitMatrix;
    use crate::bp::{BpDecoder, BpSettings};

    fn priors(n: usize, p: f64) -> Vec<f64> {
        vec![((1.0 - p) / p).ln(); n]
    }

    #[test]
    fn the_layout_keeps_every_edge_once() {
        let h = BitMatrix::from_picture("11.1..\n.11.1.\n1..11.\n.....1").unwrap();
        let s = SparseMatrix::from_dense(&h);
        let k = MinSum32::new(&s, &priors(6, 0.1), PORTABLE).unwrap();
        assert_eq!(k.edges(), 10);
        let mut seen: Vec<u32> = k.block_slots.iter().copied().filter(|&s| s != 10).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..10).collect::<Vec<_>>());
        // Groups by degree, heaviest first, covering every position once.
        let degrees: Vec<u32> = k.groups.iter().map(|g| g.degree).collect();
        assert_eq!(degrees, [2, 1]);
        let covered: u32 = k.groups.iter().map(|g| g.count).sum();
        assert_eq!(covered, 6);
    }

    #[test]
    fn single_errors_decode_like_the_f64_path() {
        let code = crate::codes::CssCode::by_name("bb72").unwrap();
        let h = SparseMatrix::from_dense(&code.hz);
        let n = code.n();
        let mut k = MinSum32::new(&h, &priors(n, 0.05), PORTABLE).unwrap();
        let mut f64_bp = BpDecoder::from_sparse(
            &h,
            0.05,
            None,
            BpSettings {
                max_iter: 20,
                ms_scaling_factor: 0.625,
                ..BpSettings::default()
            },
        )
        .unwrap();
        let mut agree = 0;
        for j in 0..n {
            let mut e = vec![0u8; n];
            e[j] = 1;
            let mut syn = vec![0u8; code.hz.rows()];
            code.hz.mul_bytes(&e, &mut syn);
            let (ok, _) = k.decode(&syn, 20, |_| 0.625, |_| false);
            f64_bp.decode(&syn).unwrap();
            if ok {
                // A converged answer reproduces the syndrome.
                let dec: Vec<u8> = (0..n).map(|c| u8::from(k.llr_of(c) <= 0.0)).collect();
                let mut back = vec![0u8; code.hz.rows()];
                code.hz.mul_bytes(&dec, &mut back);
                assert_eq!(back, syn);
            }
            agree += usize::from(ok == f64_bp.converged());
        }
        assert!(agree >= n - 2, "{agree} of {n}");
    }
}
