//! Min-sum belief propagation in `f32` with **lanes across shots**: [`crate::bp32`]'s kernel
//! for batches, decoding [`SHOT_LANES`] shots at once, one lane per shot, each lane's outcome
//! the single-shot kernel's bit for bit.
//!
//! [`crate::bp32`] puts eight *checks* of one shot in a register and so gathers every input.
//! Here every message slot holds the same edge's message for eight *shots*, side by side
//! (`slot · SHOT_LANES + lane`): a slot's messages are one contiguous register, read and
//! written whole, and nothing is gathered.
//!
//! # Layout
//!
//! The slots are numbered **column-major**: the columns are grouped by degree (heaviest first,
//! then by first row) into *positions*, and position `p`'s slots are
//! `col_start[p]..col_start[p + 1]`, one per row of its column, ascending. Each row lists its
//! slots (`row_start`, `row_slots`).
//!
//! - The **check pass** walks each row's slots, reading their bit-to-check messages, and keeps
//!   per lane the two smallest magnitudes (compared as IEEE bit patterns, as `bp32` does) and
//!   the sign parity. It writes no message: it keeps only the row's *state*, three registers —
//!   the smallest magnitude, and the two messages `α·min` the row can send with its parity
//!   folded into their sign bits.
//! - The **bit pass** walks the columns in order. For each slot it forms the check-to-bit
//!   message from the row's state and the slot's own bit-to-check message of the iteration
//!   before (still in place: the smallest magnitude names which of the two to send, its sign
//!   bit is taken out of the parity), adds it to the column's total in row order — `bp32`'s
//!   order — and then writes each outgoing message as the total less it. The lanes whose total
//!   is `≤ 0` flip their bit of each of the column's rows in the hard decision's syndrome, one
//!   byte per row with a bit per lane.
//!
//! The messages are formed from the same bits by the same IEEE operations as `bp32`'s, so each
//! lane's soft output, iteration count and hard decision are the single-shot kernel's; a test
//! checks it on a circuit model.
//!
//! # Shots come and go
//!
//! [`MinSum32Lanes::decode_many`] reads shots one at a time into free lanes and reports each
//! shot as soon as its lane is done: when its hard decision reproduces its syndrome, or after
//! `max_iter` iterations. Its lane then takes the next shot while the others keep iterating,
//! each lane at its own iteration (and scaling factor). A lane with no shot left runs idle
//! until the last lane is done. Memory is the model's (eight messages per edge, eight soft
//! outputs per bit), whatever the number of shots.
//!
//! # Memory legs
//!
//! Relay-BP ([`crate::relay`]) runs its legs on the lanes too, each lane a shot at its own leg:
//! [`MinSum32Lanes::use_memory`] turns on per-lane memory priors, [`MinSum32Lanes::start_memory`]
//! and [`MinSum32Lanes::start_leg`] set up one lane, [`MinSum32Lanes::memory_iteration`] runs
//! an iteration of every lane. The bit pass then starts each column's total from its memory
//! prior `(1 − γ)·Λ + γ·M` (`M` the lane's soft output of the iteration before) instead of
//! `Λ`, formed by the same two operations as
//! [`crate::bp32::MinSum32::memory_leg`]'s, so each lane's legs are the single-shot kernel's
//! bit for bit.

use crate::bp32::{BIG, MAX_MESSAGE, MinSum32};
use crate::error::DecoderError;
use crate::sparse::SparseMatrix;

/// Shots decoded together: lanes of one AVX2 register of `f32`.
pub const SHOT_LANES: usize = 8;

/// The most bytes of messages a lanes kernel allocates (1 GiB); a larger model is decoded one
/// shot at a time ([`MinSum32Lanes::new`] refuses it).
pub const MAX_LANE_BYTES: usize = 1 << 30;

/// Mask of an `f32`'s magnitude bits.
pub(crate) const ABS: u32 = 0x7FFF_FFFF;

/// Registers of a row's state: the smallest magnitude, and the two messages it can send
/// (parity in their sign bits).
pub(crate) const STATE: usize = 3;

/// `len` zeros, or [`DecoderError::Memory`] when they cannot be allocated.
fn zeros(len: usize) -> Result<Vec<f32>, DecoderError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| DecoderError::Memory(format!("{len} f32 messages do not fit in memory")))?;
    v.resize(len, 0.0);
    Ok(v)
}

/// How one shot's decode ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneOutcome {
    /// The hard decision reproduced the syndrome.
    pub converged: bool,
    /// Iterations run.
    pub iterations: usize,
}

/// Positions `start..end`, each with `degree` slots.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Group {
    pub(crate) degree: u32,
    pub(crate) start: u32,
    pub(crate) end: u32,
}

/// The graph and scratch of a lanes decoder (see the module docs).
#[derive(Debug, Clone)]
pub struct MinSum32Lanes {
    pub(crate) m: usize,
    pub(crate) n: usize,
    /// Bit position → matrix column (the columns by their first row), and the inverse.
    pub(crate) column: Vec<u32>,
    pub(crate) position: Vec<u32>,
    /// Runs of positions of one degree, heaviest first.
    pub(crate) groups: Vec<Group>,
    /// Position `p`'s slots: `col_start[p]..col_start[p + 1]`, one per row of its column,
    /// ascending; `slot_row[s]` is slot `s`'s row.
    pub(crate) col_start: Vec<u32>,
    pub(crate) slot_row: Vec<u32>,
    /// Row `r`'s slots: `row_slots[row_start[r]..row_start[r + 1]]`.
    pub(crate) row_start: Vec<u32>,
    pub(crate) row_slots: Vec<u32>,
    /// Per-position priors (`ln((1 − p)/p)`).
    pub(crate) prior: Vec<f32>,
    /// Bit-to-check messages: slot `s`, lane `l` at `s · SHOT_LANES + l`.
    pub(crate) b2c: Vec<f32>,
    /// Row `r`'s state: registers `r · STATE .. (r + 1) · STATE` of `SHOT_LANES` entries each.
    pub(crate) state: Vec<u32>,
    /// Each lane's syndrome: per row, the lane's bit at bit 31 (`syn_sign`, the parity the
    /// check pass starts from) and as bit `l` of one byte (`syn_bits`).
    pub(crate) syn_sign: Vec<u32>,
    pub(crate) syn_bits: Vec<u8>,
    /// The hard decision's syndrome of the iteration just run, as `syn_bits`.
    pub(crate) candidate: Vec<u8>,
    /// Soft output per position and lane (`p · SHOT_LANES + l`), and the least so far (when
    /// tracked).
    pub(crate) llr: Vec<f32>,
    pub(crate) min_llr: Vec<f32>,
    /// Each lane's scaling factor for the iteration being run.
    pub(crate) alpha: [f32; SHOT_LANES],
    /// With `memory`, the bit pass starts a column's total from its memory prior
    /// `coef + gamma · llr` (per position and lane, `p · SHOT_LANES + l`: `(1 − γ)·Λ` and `γ`
    /// of the lane's leg) instead of its prior; `coef` and `gamma` are empty without.
    pub(crate) memory: bool,
    pub(crate) coef: Vec<f32>,
    pub(crate) gamma: Vec<f32>,
    /// One shot's syndrome as the caller writes it.
    scratch: Vec<u8>,
    /// The passes, of the level chosen at construction.
    pub(crate) kernel: LanesKernel,
}

/// One instruction-set level's passes for [`MinSum32Lanes`] ([`crate::simd`] makes them; the
/// portable level is here).
#[derive(Debug, Clone, Copy)]
pub struct LanesKernel {
    /// `portable` or `avx2`.
    pub(crate) name: &'static str,
    pub(crate) checks: fn(&mut MinSum32Lanes),
    pub(crate) bits: fn(&mut MinSum32Lanes),
}

impl LanesKernel {
    /// The level's name: `portable` or `avx2`.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// The portable passes (SSE2 on x86-64, NEON on aarch64, as the compiler vectorises them).
pub const PORTABLE_LANES: LanesKernel = LanesKernel {
    name: "portable",
    checks: checks_pass,
    bits: bits_pass,
};

impl MinSum32Lanes {
    /// The kernel for checks `h` and per-column priors `prior_llr` (`ln((1 − p)/p)`, in matrix
    /// column order), its passes those of `kernel` (the level in force:
    /// `crate::simd::lanes_kernel()`).
    ///
    /// Errors: [`DecoderError::Memory`] when the messages would take more than
    /// [`MAX_LANE_BYTES`] or cannot be allocated; [`DecoderError::Matrix`] when the slot
    /// indices overflow 32 bits.
    pub fn new(
        h: &SparseMatrix,
        prior_llr: &[f64],
        kernel: LanesKernel,
    ) -> Result<MinSum32Lanes, DecoderError> {
        if prior_llr.len() != h.cols() {
            return Err(DecoderError::ChannelLength {
                expected: h.cols(),
                found: prior_llr.len(),
            });
        }
        let prior = prior_llr.iter().map(|&p| p as f32).collect();
        MinSum32Lanes::build(h.rows(), h.nnz(), |c| h.col(c), prior, kernel)
    }

    /// The lanes twin of the single-shot kernel `k`: its checks, its priors.
    ///
    /// Errors: as [`MinSum32Lanes::new`].
    pub fn like(k: &MinSum32, kernel: LanesKernel) -> Result<MinSum32Lanes, DecoderError> {
        let rows = |c: usize| {
            let p = k.position[c] as usize;
            &k.pos_rows[k.pos_row_start[p] as usize..k.pos_row_start[p + 1] as usize]
        };
        let prior = (0..k.n).map(|c| k.prior[k.position[c] as usize]).collect();
        MinSum32Lanes::build(k.m, k.edges, rows, prior, kernel)
    }

    /// The kernel of `m` checks, `prior.len()` columns, `edges` edges, column `c`'s rows
    /// `rows(c)` (ascending).
    fn build<'a>(
        m: usize,
        edges: usize,
        rows: impl Fn(usize) -> &'a [u32],
        prior: Vec<f32>,
        kernel: LanesKernel,
    ) -> Result<MinSum32Lanes, DecoderError> {
        let n = prior.len();
        // Slots are indexed as 32-bit integers times the lane count.
        if edges.saturating_mul(SHOT_LANES) >= i32::MAX as usize || m >= i32::MAX as usize {
            return Err(DecoderError::Matrix(format!(
                "{edges} edges overflow the f32 lanes kernel's 31-bit slot indices"
            )));
        }
        let bytes = (edges + n + m * (STATE + 1)).saturating_mul(SHOT_LANES * 4);
        if bytes > MAX_LANE_BYTES {
            return Err(DecoderError::Memory(format!(
                "the f32 lanes kernel's messages would take {bytes} bytes (at most \
                 {MAX_LANE_BYTES})"
            )));
        }
        let b2c = zeros(edges * SHOT_LANES)?;
        let llr = zeros(n * SHOT_LANES)?;
        // Columns by degree, heaviest first, then by their first row (so that a row's slots
        // lie close together).
        let mut column: Vec<u32> = (0..n as u32).collect();
        column.sort_by_key(|&c| {
            let rows = rows(c as usize);
            (std::cmp::Reverse(rows.len()), rows.first().copied(), c)
        });
        let mut groups: Vec<Group> = Vec::new();
        for (p, &c) in column.iter().enumerate() {
            let degree = rows(c as usize).len() as u32;
            match groups.last_mut() {
                Some(g) if g.degree == degree => g.end = p as u32 + 1,
                _ => groups.push(Group {
                    degree,
                    start: p as u32,
                    end: p as u32 + 1,
                }),
            }
        }
        let mut position = vec![0u32; n];
        for (p, &c) in column.iter().enumerate() {
            position[c as usize] = p as u32;
        }
        let prior: Vec<f32> = column.iter().map(|&c| prior[c as usize]).collect();
        let mut col_start = Vec::with_capacity(n + 1);
        let mut slot_row = Vec::with_capacity(edges);
        col_start.push(0u32);
        for &c in &column {
            slot_row.extend_from_slice(rows(c as usize));
            col_start.push(slot_row.len() as u32);
        }
        debug_assert_eq!(slot_row.len(), edges);
        let mut row_start = vec![0u32; m + 1];
        for &r in &slot_row {
            row_start[r as usize + 1] += 1;
        }
        for r in 0..m {
            row_start[r + 1] += row_start[r];
        }
        let mut fill = row_start.clone();
        let mut row_slots = vec![0u32; edges];
        for (s, &r) in slot_row.iter().enumerate() {
            row_slots[fill[r as usize] as usize] = s as u32;
            fill[r as usize] += 1;
        }
        Ok(MinSum32Lanes {
            m,
            n,
            column,
            position,
            groups,
            col_start,
            slot_row,
            row_start,
            row_slots,
            prior,
            b2c,
            state: vec![0; m * STATE * SHOT_LANES],
            syn_sign: vec![0; m * SHOT_LANES],
            syn_bits: vec![0; m],
            candidate: vec![0; m],
            llr,
            min_llr: Vec::new(),
            alpha: [1.0; SHOT_LANES],
            memory: false,
            coef: Vec::new(),
            gamma: Vec::new(),
            scratch: vec![0; m],
            kernel,
        })
    }

    /// Edges of the graph (message slots).
    pub fn edges(&self) -> usize {
        self.slot_row.len()
    }

    /// The passes' level: `portable` or `avx2`.
    pub fn level(&self) -> &'static str {
        self.kernel.name
    }

    /// Keep each bit's least soft output over its prior and every iteration (OSD's `min_llr`
    /// order) from the next decode on.
    pub fn track_min_llr(&mut self, on: bool) {
        self.min_llr = if on {
            vec![0.0; self.n * SHOT_LANES]
        } else {
            Vec::new()
        };
    }

    /// Decodes shots `0..shots`, [`SHOT_LANES`] at a time, each as
    /// [`crate::bp32::MinSum32::decode`] would with the same `max_iter` and `alpha(it)`
    /// (iteration `it`, 1-based) and no `stop`.
    ///
    /// `load(shot, syndrome)` writes shot `shot`'s syndrome (0/1 per check; any non-zero byte
    /// is 1) and says whether to decode it. `done(shot, result)` takes every shot once: one not
    /// to be decoded at once with `None`, a decoded one as its lane finishes — in the order the
    /// shots finish, not their order — with its outcome and the lane's soft output ([`Lane`]).
    /// Shots are loaded in order, each once; the first error of either callback ends the
    /// call.
    pub fn decode_many<E>(
        &mut self,
        shots: usize,
        max_iter: usize,
        alpha: impl Fn(usize) -> f32,
        mut load: impl FnMut(usize, &mut [u8]) -> Result<bool, E>,
        mut done: impl FnMut(usize, Option<(LaneOutcome, Lane<'_>)>) -> Result<(), E>,
    ) -> Result<(), E> {
        let kernel = self.kernel;
        // Each lane's shot (none: free) and the iterations it has run.
        let mut shot_of: [Option<usize>; SHOT_LANES] = [None; SHOT_LANES];
        let mut iteration = [0usize; SHOT_LANES];
        let mut next = 0;
        loop {
            // Free lanes take the next shots.
            let mut fresh = 0u8;
            for (l, (shot_of, it)) in shot_of.iter_mut().zip(&mut iteration).enumerate() {
                while shot_of.is_none() && next < shots {
                    let shot = next;
                    next += 1;
                    if load(shot, &mut self.scratch)? {
                        self.set_syndrome(l);
                        *shot_of = Some(shot);
                        *it = 0;
                        fresh |= 1 << l;
                    } else {
                        done(shot, None)?;
                    }
                }
            }
            if fresh != 0 {
                self.reset_lanes(fresh);
            }
            if shot_of.iter().all(Option::is_none) {
                return Ok(());
            }
            for (l, (shot_of, it)) in shot_of.iter_mut().zip(&mut iteration).enumerate() {
                if shot_of.is_some() {
                    *it += 1;
                    self.alpha[l] = alpha(*it);
                }
            }
            if max_iter > 0 {
                (kernel.checks)(self);
                self.candidate.fill(0);
                (kernel.bits)(self);
                if !self.min_llr.is_empty() {
                    for (m, &l) in self.min_llr.iter_mut().zip(&self.llr) {
                        *m = m.min(l);
                    }
                }
            }
            // With no iteration at all, no lane converges and the soft output is the prior,
            // as the single-shot kernel's.
            let wrong = if max_iter == 0 {
                u8::MAX
            } else {
                self.candidate
                    .iter()
                    .zip(&self.syn_bits)
                    .fold(0u8, |acc, (&c, &s)| acc | (c ^ s))
            };
            for (l, (shot_of, it)) in shot_of.iter_mut().zip(&mut iteration).enumerate() {
                let Some(shot) = *shot_of else { continue };
                let converged = wrong >> l & 1 == 0;
                if converged || *it >= max_iter {
                    let outcome = LaneOutcome {
                        converged,
                        iterations: (*it).min(max_iter),
                    };
                    done(shot, Some((outcome, Lane { k: self, lane: l })))?;
                    *shot_of = None;
                }
            }
        }
    }

    /// Turns on the memory priors of Relay-BP's legs ([`MinSum32Lanes::memory_iteration`];
    /// see the module docs), allocating two more `f32` per bit and lane. Plain decodes
    /// ([`MinSum32Lanes::decode_many`]) are not to follow.
    ///
    /// Errors: [`DecoderError::Memory`] when the kernel would pass [`MAX_LANE_BYTES`] or the
    /// memory cannot be allocated.
    pub fn use_memory(&mut self) -> Result<(), DecoderError> {
        if self.memory {
            return Ok(());
        }
        let bytes =
            (self.edges() + 3 * self.n + self.m * (STATE + 1)).saturating_mul(SHOT_LANES * 4);
        if bytes > MAX_LANE_BYTES {
            return Err(DecoderError::Memory(format!(
                "the f32 lanes kernel's messages and memory priors would take {bytes} bytes \
                 (at most {MAX_LANE_BYTES})"
            )));
        }
        self.coef = zeros(self.n * SHOT_LANES)?;
        self.gamma = zeros(self.n * SHOT_LANES)?;
        self.memory = true;
        Ok(())
    }

    /// Starts a Relay-BP decode of `syndrome` (0/1 per check; any non-zero byte is 1) in lane
    /// `l`: its syndrome, its soft output (the marginals) at the priors, as
    /// [`crate::bp32::MinSum32::start_memory`]. Its first leg follows
    /// ([`MinSum32Lanes::start_leg`]).
    pub fn start_memory(&mut self, l: usize, syndrome: &[u8]) {
        debug_assert!(l < SHOT_LANES && syndrome.len() == self.m);
        self.scratch.copy_from_slice(syndrome);
        self.set_syndrome(l);
        for (v, &p) in self
            .llr
            .iter_mut()
            .skip(l)
            .step_by(SHOT_LANES)
            .zip(&self.prior)
        {
            *v = p;
        }
    }

    /// Starts a leg in lane `l`, as [`crate::bp32::MinSum32::memory_leg`] starts one: memory
    /// strength `gamma_of(column)` for each matrix column, its bit-to-check messages back at
    /// the priors, its soft output (the marginals) kept. Needs [`MinSum32Lanes::use_memory`].
    pub fn start_leg(&mut self, l: usize, gamma_of: impl Fn(usize) -> f32) {
        const W: usize = SHOT_LANES;
        debug_assert!(l < W && self.memory);
        for (p, &c) in self.column.iter().enumerate() {
            let g = gamma_of(c as usize);
            let prior = self.prior[p];
            self.gamma[p * W + l] = g;
            self.coef[p * W + l] = (1.0 - g) * prior;
            let (lo, hi) = (self.col_start[p] as usize, self.col_start[p + 1] as usize);
            for v in self.b2c[lo * W..hi * W].iter_mut().skip(l).step_by(W) {
                *v = prior;
            }
        }
    }

    /// One memory-BP iteration of every lane, lane `l` with scaling factor `alpha[l]` (the
    /// lanes without a shot run too; their results mean nothing). Returns a bit per lane: set
    /// where the hard decision reproduces the lane's syndrome. Needs
    /// [`MinSum32Lanes::use_memory`].
    pub fn memory_iteration(&mut self, alpha: [f32; SHOT_LANES]) -> u8 {
        debug_assert!(self.memory);
        let kernel = self.kernel;
        self.alpha = alpha;
        (kernel.checks)(self);
        self.candidate.fill(0);
        (kernel.bits)(self);
        !self
            .candidate
            .iter()
            .zip(&self.syn_bits)
            .fold(0u8, |acc, (&c, &s)| acc | (c ^ s))
    }

    /// Lane `l`'s results: its soft output and hard decision.
    pub fn lane(&self, l: usize) -> Lane<'_> {
        debug_assert!(l < SHOT_LANES);
        Lane { k: self, lane: l }
    }

    /// Lane `l`'s syndrome from the scratch.
    fn set_syndrome(&mut self, l: usize) {
        for (r, &s) in self.scratch.iter().enumerate() {
            let bit = u8::from(s != 0);
            self.syn_sign[r * SHOT_LANES + l] = u32::from(bit) << 31;
            self.syn_bits[r] = self.syn_bits[r] & !(1 << l) | bit << l;
        }
    }

    /// The lanes of `fresh` (a bit per lane) back at the start of a decode: every message at
    /// its bit's prior, the soft output (and its least) the prior.
    fn reset_lanes(&mut self, fresh: u8) {
        const W: usize = SHOT_LANES;
        let mut on = [false; W];
        for (l, on) in on.iter_mut().enumerate() {
            *on = fresh >> l & 1 != 0;
        }
        let track = !self.min_llr.is_empty();
        for c in 0..self.n {
            let p = self.prior[c];
            let (lo, hi) = (self.col_start[c] as usize, self.col_start[c + 1] as usize);
            for v in self.b2c[lo * W..hi * W].chunks_exact_mut(W) {
                for (v, &on) in v.iter_mut().zip(&on) {
                    *v = if on { p } else { *v };
                }
            }
            for (v, &on) in self.llr[c * W..(c + 1) * W].iter_mut().zip(&on) {
                *v = if on { p } else { *v };
            }
            if track {
                for (v, &on) in self.min_llr[c * W..(c + 1) * W].iter_mut().zip(&on) {
                    *v = if on { p } else { *v };
                }
            }
        }
    }
}

/// One lane's result, as [`MinSum32Lanes::decode_many`] reports a shot.
#[derive(Debug, Clone, Copy)]
pub struct Lane<'a> {
    k: &'a MinSum32Lanes,
    lane: usize,
}

impl Lane<'_> {
    /// Matrix column `c`'s soft output.
    pub fn llr_of(&self, c: usize) -> f32 {
        self.k.llr[self.k.position[c] as usize * SHOT_LANES + self.lane]
    }

    /// The hard decision (`llr ≤ 0`) of matrix column `c`.
    pub fn flipped(&self, c: usize) -> bool {
        self.llr_of(c) <= 0.0
    }

    /// Writes the soft output in matrix column order into `out` (`n` entries).
    pub fn soft_output(&self, out: &mut [f64]) {
        let lanes = self.k.llr.iter().skip(self.lane).step_by(SHOT_LANES);
        for (&c, &l) in self.k.column.iter().zip(lanes) {
            out[c as usize] = f64::from(l);
        }
    }

    /// Writes each bit's least soft output (when tracked) in matrix column order into `out`.
    pub fn min_soft_output(&self, out: &mut [f64]) {
        let lanes = self.k.min_llr.iter().skip(self.lane).step_by(SHOT_LANES);
        for (&c, &l) in self.k.column.iter().zip(lanes) {
            out[c as usize] = f64::from(l);
        }
    }

    /// Writes the lane's syndrome (0/1 per check) into `out` (`m` entries).
    pub fn syndrome(&self, out: &mut [u8]) {
        for (o, &b) in out.iter_mut().zip(&self.k.syn_bits) {
            *o = b >> self.lane & 1;
        }
    }

    /// The soft output of every column, in matrix column order, as bits (for comparisons).
    pub fn llr_bits(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.k.n).map(|c| self.llr_of(c).to_bits())
    }
}

/// The check pass (see the module docs), for any instruction set: the portable level runs it
/// as it is; `crate::simd` has the AVX2 version of it.
pub(crate) fn checks_pass(k: &mut MinSum32Lanes) {
    const W: usize = SHOT_LANES;
    let big = BIG.to_bits();
    let alpha = k.alpha;
    for r in 0..k.m {
        let slots = &k.row_slots[k.row_start[r] as usize..k.row_start[r + 1] as usize];
        let mut min1 = [big; W];
        let mut min2 = [big; W];
        let mut parity = [0u32; W];
        parity.copy_from_slice(&k.syn_sign[r * W..(r + 1) * W]);
        for &s in slots {
            let v = &k.b2c[s as usize * W..(s as usize + 1) * W];
            for l in 0..W {
                let v = v[l].to_bits();
                let a = v & ABS;
                // The sign bit of `v ≤ 0` (see `bp32::checks_pass`).
                parity[l] ^= (v.wrapping_sub(1) | v) & !ABS;
                min2[l] = min2[l].min(min1[l].max(a));
                min1[l] = min1[l].min(a);
            }
        }
        let state = &mut k.state[r * STATE * W..(r + 1) * STATE * W];
        for l in 0..W {
            let m1 = (f32::from_bits(min1[l]) * alpha[l]).min(MAX_MESSAGE);
            let m2 = (f32::from_bits(min2[l]) * alpha[l]).min(MAX_MESSAGE);
            state[l] = min1[l];
            state[W + l] = m1.to_bits() ^ parity[l];
            state[2 * W + l] = m2.to_bits() ^ parity[l];
        }
    }
}

/// The check-to-bit message of a slot whose bit-to-check message of the iteration before is
/// `v`, from its row's state `st` (three registers): `bp32::checks_pass`'s message.
#[inline(always)]
fn message(v: f32, st: &[u32], l: usize) -> f32 {
    const W: usize = SHOT_LANES;
    let v = v.to_bits();
    let a = v & ABS;
    let neg = (v.wrapping_sub(1) | v) & !ABS;
    let m = if a == st[l] { st[2 * W + l] } else { st[W + l] };
    f32::from_bits(m ^ neg)
}

/// The bit pass (see the module docs): totals into `llr`, outgoing messages into `b2c`, the
/// hard decision's syndrome into `candidate` (zeroed by the caller).
pub(crate) fn bits_pass(k: &mut MinSum32Lanes) {
    if k.memory {
        bits_pass_of::<true>(k);
    } else {
        bits_pass_of::<false>(k);
    }
}

/// [`bits_pass`], each column's total starting from its memory prior with `MEMORY`
/// (`coef + gamma · llr`, the single-shot kernel's `c + g · m`), else from its prior.
fn bits_pass_of<const MEMORY: bool>(k: &mut MinSum32Lanes) {
    const W: usize = SHOT_LANES;
    for c in 0..k.n {
        let (lo, hi) = (k.col_start[c] as usize, k.col_start[c + 1] as usize);
        let mut t = [k.prior[c]; W];
        if MEMORY {
            let at = c * W..(c + 1) * W;
            for (((t, &cf), &g), &m) in t
                .iter_mut()
                .zip(&k.coef[at.clone()])
                .zip(&k.gamma[at.clone()])
                .zip(&k.llr[at])
            {
                *t = cf + g * m;
            }
        }
        for s in lo..hi {
            let r = k.slot_row[s] as usize;
            let st = &k.state[r * STATE * W..(r + 1) * STATE * W];
            let v = &k.b2c[s * W..(s + 1) * W];
            for l in 0..W {
                t[l] += message(v[l], st, l);
            }
        }
        k.llr[c * W..(c + 1) * W].copy_from_slice(&t);
        for s in lo..hi {
            let r = k.slot_row[s] as usize;
            let st = &k.state[r * STATE * W..(r + 1) * STATE * W];
            let v = &mut k.b2c[s * W..(s + 1) * W];
            for l in 0..W {
                v[l] = t[l] - message(v[l], st, l);
            }
        }
        let mut flips = 0u8;
        for (l, &t) in t.iter().enumerate() {
            flips |= u8::from(t <= 0.0) << l;
        }
        if flips != 0 {
            for s in lo..hi {
                k.candidate[k.slot_row[s] as usize] ^= flips;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dem::DetectorErrorModel;

    /// A circuit model's usable mechanisms: checks and priors (`ln((1 − p)/p)`).
    fn model(text: &str, name: &str) -> (SparseMatrix, Vec<f64>) {
        let dem = DetectorErrorModel::parse(text, name).unwrap();
        let kept = crate::decoder::usable_mechanisms(&dem).unwrap();
        let h = dem.check_matrix().select_columns(&kept);
        let priors = kept
            .iter()
            .map(|&k| {
                let p = crate::decoder::bp_prior(dem.priors()[k as usize]);
                ((1.0 - p) / p).ln()
            })
            .collect();
        (h, priors)
    }

    /// What the single-shot kernel gives for one syndrome: converged, iterations, soft output
    /// and least soft output as bits.
    type Single = (bool, usize, Vec<u32>, Vec<u32>);

    fn single(
        k: &mut MinSum32,
        syn: &[u8],
        max_iter: usize,
        alpha: &impl Fn(usize) -> f32,
    ) -> Single {
        let (ok, it) = k.decode(syn, max_iter, alpha, |_| false);
        let n = k.n;
        let bits = |f: &dyn Fn(usize) -> f32| (0..n).map(|c| f(c).to_bits()).collect();
        let min = if k.min_llr.is_empty() {
            Vec::new()
        } else {
            let mut out = vec![0.0; n];
            k.min_soft_output(&mut out);
            out.iter().map(|&x| (x as f32).to_bits()).collect()
        };
        (ok, it, bits(&|c| k.llr_of(c)), min)
    }

    /// Syndromes of `h`: sampled from `errors` random columns each (some zero), and random
    /// bits (BP runs all its iterations on most).
    fn syndromes(h: &SparseMatrix, count: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut state = seed;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state >> 33
        };
        (0..count)
            .map(|i| {
                let mut s = vec![0u8; h.rows()];
                if i % 5 == 4 {
                    for x in &mut s {
                        *x = (next() & 1) as u8 * (1 + (next() & 2) as u8);
                    }
                } else {
                    for _ in 0..i % 7 {
                        let c = next() as usize % h.cols();
                        for &r in h.col(c) {
                            s[r as usize] ^= 1;
                        }
                    }
                }
                s
            })
            .collect()
    }

    /// Every lane's outcome on `syns` in batches of `batch` is the single-shot kernel's.
    fn same_as_single(
        h: &SparseMatrix,
        priors: &[f64],
        syns: &[Vec<u8>],
        batch: usize,
        max_iter: usize,
        track: bool,
        lanes: LanesKernel,
    ) {
        let alpha = |it: usize| {
            if it.is_multiple_of(3) {
                0.625
            } else {
                1.0 - 0.5f32.powi(it as i32)
            }
        };
        let mut one = MinSum32::new(h, priors, crate::bp32::PORTABLE).unwrap();
        one.track_min_llr(track);
        let want: Vec<Single> = syns
            .iter()
            .map(|s| single(&mut one, s, max_iter, &alpha))
            .collect();
        let mut k = MinSum32Lanes::new(h, priors, lanes).unwrap();
        k.track_min_llr(track);
        let mut seen = vec![false; syns.len()];
        for first in (0..syns.len()).step_by(batch) {
            let count = batch.min(syns.len() - first);
            k.decode_many(
                count,
                max_iter,
                alpha,
                |s, out: &mut [u8]| -> Result<bool, ()> {
                    out.copy_from_slice(&syns[first + s]);
                    Ok(true)
                },
                |s, result| {
                    let (outcome, lane) = result.expect("every shot decoded");
                    let i = first + s;
                    assert!(!seen[i], "shot {i} reported twice");
                    seen[i] = true;
                    let w = &want[i];
                    let level = lanes.name();
                    let mut syn = vec![0u8; h.rows()];
                    lane.syndrome(&mut syn);
                    let given: Vec<u8> = syns[i].iter().map(|&x| u8::from(x != 0)).collect();
                    assert_eq!(syn, given, "{level} {i}: syndrome");
                    assert_eq!(
                        (outcome.converged, outcome.iterations),
                        (w.0, w.1),
                        "{level} {i}"
                    );
                    assert!(lane.llr_bits().eq(w.2.iter().copied()), "{level} {i}: soft");
                    if track {
                        let mut min = vec![0.0; h.cols()];
                        lane.min_soft_output(&mut min);
                        let min: Vec<u32> = min.iter().map(|&x| (x as f32).to_bits()).collect();
                        assert_eq!(min, w.3, "{level} {i}: least soft output");
                    }
                    Ok(())
                },
            )
            .unwrap();
        }
        assert!(seen.iter().all(|&x| x));
    }

    fn d5() -> (SparseMatrix, Vec<f64>) {
        model(
            include_str!("../tests/data/dem/surface_d5_r5_p0.001.dem"),
            "surface_d5_r5_p0.001.dem",
        )
    }

    #[test]
    fn every_lane_is_the_single_shot_kernel_bit_for_bit_on_a_circuit_model() {
        let (h, priors) = d5();
        let syns = syndromes(&h, 300, 11);
        let levels = crate::simd::lanes_levels();
        for lanes in &levels {
            // Batches of 8, of a size that is no multiple of 8, and of one; shots that converge
            // at once and shots that run every iteration side by side.
            for batch in [300, 13, 8, 1] {
                same_as_single(&h, &priors, &syns, batch, 30, batch == 13, *lanes);
            }
        }
        assert!(levels.iter().any(|l| l.name() == "portable"));
    }

    #[test]
    fn skipped_shots_and_zero_iterations_are_reported_as_the_single_shot_kernels() {
        let (h, priors) = d5();
        let syns = syndromes(&h, 40, 5);
        for lanes in crate::simd::lanes_levels() {
            same_as_single(&h, &priors, &syns, 40, 0, true, lanes);
            // Every third shot not to be decoded: reported at once, without a lane.
            let mut k = MinSum32Lanes::new(&h, &priors, lanes).unwrap();
            let mut reported = Vec::new();
            k.decode_many(
                syns.len(),
                10,
                |_| 0.625,
                |s, out: &mut [u8]| -> Result<bool, ()> {
                    out.copy_from_slice(&syns[s]);
                    Ok(s % 3 != 0)
                },
                |s, result| {
                    reported.push((s, result.is_some()));
                    Ok(())
                },
            )
            .unwrap();
            reported.sort_unstable();
            let want: Vec<(usize, bool)> = (0..40).map(|s| (s, s % 3 != 0)).collect();
            assert_eq!(reported, want);
            // No shot at all; an error of `load` ends the call.
            k.decode_many(0, 10, |_| 0.625, |_, _| Ok(true), |_, _| Err(()))
                .unwrap();
            let e = k.decode_many(5, 10, |_| 0.625, |s, _| Err(s), |_, _| Ok(()));
            assert_eq!(e, Err(0));
        }
    }

    #[test]
    fn a_column_heavier_than_the_registers_and_empty_rows_and_columns_decode_as_one_shot() {
        // Degree 40 and light columns; row 39 and column 0 empty.
        let (m, n) = (40, 90);
        let mut h = crate::bitmat::BitMatrix::zeros(m, n);
        for c in 1..n {
            let degree = if c % 9 == 0 { 39 } else { 1 + c % 10 };
            for k in 0..degree {
                h.set((c * 7 + k * 3) % (m - 1), c, true);
            }
        }
        let h = SparseMatrix::from_dense(&h);
        let priors: Vec<f64> = (0..n)
            .map(|c| {
                let p: f64 = [0.01, 0.05, 0.05, 0.2][c % 4];
                ((1.0 - p) / p).ln()
            })
            .collect();
        let syns = syndromes(&h, 60, 3);
        for lanes in crate::simd::lanes_levels() {
            same_as_single(&h, &priors, &syns, 11, 25, true, lanes);
        }
    }
}
