//! Ordered-statistics decoding (OSD) after belief propagation: Gaussian elimination over
//! GF(2) on the columns ordered by BP's soft output, with bit-packed rows.
//!
//! Given a syndrome `s` and soft output `llr`:
//!
//! 1. order the columns by `llr` ascending (most likely flipped first; ties by index);
//! 2. eliminate the column-permuted checks augmented with `s`, left to right: the pivot columns
//!    are the first `rank` linearly independent columns in that order;
//! 3. **OSD-0**: the solution supported on the pivot columns. Elimination stops as soon as `s`
//!    lies in the span of the pivots found so far (the solution does not change);
//! 4. **OSD-CS of order w** (combination sweep): besides OSD-0, try flipping each single free
//!    (non-pivot) column, in order, and each pair among the first `w` free columns, solving for
//!    the pivots each time; keep the candidate of least weight `Σ ln(1/pᵢ)` (a strictly smaller
//!    weight replaces the incumbent). With one error rate for every bit this is the Hamming
//!    weight, which is what the fast path compares.
//!
//! This is the candidate set and tie rule of `ldpc` 2.x's `OSD_CS`, so given the same soft
//! output the answers are the same.
//!
//! **The effective order.** An order `w` larger than the number of free columns
//! `n − rank(H)` is clamped: the engine runs with order `min(w, n − rank(H))`
//! ([`Osd::order`]; the order asked for is [`Osd::requested_order`]), and the first clamp in a
//! process logs one warning (`log::warn!`). With `w ≥ n − rank(H)` every pair among the free
//! columns is already in the sweep, so the clamp removes only pairs that do not exist.
//! (`ldpc` 2.4.1 writes past its candidate vectors there.)
//!
//! All scratch is allocated at construction; [`Osd::decode`] does not allocate.

use std::fmt;
use std::str::FromStr;

use std::sync::atomic::{AtomicBool, Ordering};

use crate::bitmat::{
    BitMatrix, MAX_DENSE_BITS, Ones, TooLarge, WORD_BITS, get_bit, set_bit, words_for, xor_into,
};
use crate::error::DecoderError;
use crate::gf2;
use crate::sparse::SparseMatrix;

/// Set by the first clamped order in this process, so the warning is given once.
static CLAMP_WARNED: AtomicBool = AtomicBool::new(false);

/// Turns off the library's one log line about a clamped OSD order, for a caller that reports
/// the clamp itself (the CLI names the file the checks came from).
pub fn report_clamp_myself() {
    // Relaxed: as in `Osd::build`, the flag orders no other memory.
    CLAMP_WARNED.store(true, Ordering::Relaxed);
}

/// The largest OSD-CS order a decoder takes (1024): the sweep tries `w(w − 1)/2` pairs per
/// decode, so the order bounds a decode's time.
pub const MAX_OSD_ORDER: usize = 1 << 10;

/// `expected` of the error for an order above [`MAX_OSD_ORDER`].
pub const OSD_ORDER_RANGE: &str = "a non-negative integer in 0..=1024";

/// Checks an OSD-CS order against [`MAX_OSD_ORDER`].
pub(crate) fn check_order(order: usize) -> Result<(), DecoderError> {
    if order > MAX_OSD_ORDER {
        return Err(DecoderError::Setting {
            name: "osd_order",
            value: order as f64,
            expected: OSD_ORDER_RANGE,
        });
    }
    Ok(())
}

/// The order OSD-CS runs with when `order` is asked for on checks with `free_columns` free
/// (non-pivot) columns, `n − rank(H)`: `min(order, free_columns)`.
pub fn effective_order(order: usize, free_columns: usize) -> usize {
    order.min(free_columns)
}

/// The OSD post-processing method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OsdMethod {
    /// No post-processing: the result is BP's hard decision.
    Off,
    /// OSD-0 (`ldpc`'s default).
    #[default]
    Osd0,
    /// Combination sweep of order `osd_order`.
    OsdCs,
}

impl FromStr for OsdMethod {
    type Err = String;

    /// Accepts `ldpc`'s spellings: `osd0`, `osd_0`, `0`, `osd_cs`, `cs`, `combination_sweep`,
    /// `off`, `osd_off` (any case).
    fn from_str(s: &str) -> Result<OsdMethod, String> {
        match s.to_ascii_lowercase().as_str() {
            "osd0" | "osd_0" | "0" => Ok(OsdMethod::Osd0),
            "osd_cs" | "osdcs" | "cs" | "combination_sweep" => Ok(OsdMethod::OsdCs),
            "off" | "osd_off" | "none" => Ok(OsdMethod::Off),
            _ => Err(format!(
                "unknown OSD method \"{}\" (expected osd0, osd_cs or off)",
                crate::io::excerpt(s)
            )),
        }
    }
}

impl fmt::Display for OsdMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OsdMethod::Off => "off",
            OsdMethod::Osd0 => "osd0",
            OsdMethod::OsdCs => "osd_cs",
        })
    }
}

/// What OSD orders the columns by (step 1 of the module docs): which soft output of BP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OsdInit {
    /// BP's last soft output, the posterior log-likelihood ratios (`ldpc`'s, and ours before).
    #[default]
    Soft,
    /// Each bit's least LLR over the channel prior and every BP iteration's posterior
    /// ([`crate::bp::BpDecoder::min_log_prob_ratios`]): a bit that BP flipped at any point, or
    /// whose prior already made it likely, ranks as likely. NVIDIA's `osd_init_method =
    /// "min_llr"` (cudaq-qec 0.8, "BP10 + min-LLR OSD"); with BP's iterations at 0 it is the
    /// channel priors' order.
    MinLlr,
}

impl FromStr for OsdInit {
    type Err = String;

    /// Accepts `soft` (`posterior`) and `min_llr` (`minllr`), any case.
    fn from_str(s: &str) -> Result<OsdInit, String> {
        match s.to_ascii_lowercase().as_str() {
            "soft" | "posterior" => Ok(OsdInit::Soft),
            "min_llr" | "minllr" => Ok(OsdInit::MinLlr),
            _ => Err(format!(
                "unknown OSD initialisation \"{}\" (expected soft or min_llr)",
                crate::io::excerpt(s)
            )),
        }
    }
}

impl fmt::Display for OsdInit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OsdInit::Soft => "soft",
            OsdInit::MinLlr => "min_llr",
        })
    }
}

/// Which candidate of the combination sweep won.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    Osd0,
    Single(usize),
    Pair(usize, usize),
}

/// The OSD engine for one parity-check matrix: the checks in column-major form plus all the
/// scratch of one decode.
#[derive(Debug)]
pub struct Osd {
    m: usize,
    n: usize,
    rank: usize,
    order: usize,
    requested_order: usize,
    /// Rows of each column, ascending: `col_rows[col_start[c]..col_start[c + 1]]`.
    col_start: Vec<u32>,
    col_rows: Vec<u32>,
    /// `ln(1/pᵢ)` per bit, and whether they are all equal (Hamming-weight fast path).
    weight: Vec<f64>,
    uniform: bool,
    /// Words per row of the augmented, permuted matrix (`n` columns + the syndrome).
    wpr: usize,
    /// The augmented, permuted matrix, `m × wpr` words.
    a: Vec<u64>,
    /// Sort keys `(order-preserving soft output bits) << 32 | column` (no NaN present): all
    /// of them, or OSD-0's head and then its rest ([`Osd::osd0_by_columns`]).
    keys: Vec<u128>,
    /// `(soft output, column)` pairs being sorted, and the merge buffer (NaN present).
    order_buf: Vec<(f64, u32)>,
    order_tmp: Vec<(f64, u32)>,
    /// Position → column.
    perm: Vec<u32>,
    /// Pivot position of each reduced row.
    pivots: Vec<u32>,
    /// Free positions, in order.
    free: Vec<u32>,
    /// Position → index in `free` (only read for free positions).
    free_index: Vec<u32>,
    /// Weight change of flipping each free column (fast path).
    delta: Vec<i32>,
    /// Reduced syndrome over the pivot rows, and the first `order` free columns, packed.
    rwords: usize,
    s_packed: Vec<u64>,
    cols_packed: Vec<u64>,
    /// `(bit, pivot row)` of every pivot row, sorted by bit (general weights path).
    pivot_bits: Vec<(u32, u32)>,
    /// The OSD-0 path's basis of the columns taken so far ([`Basis`]).
    basis: Basis,
}

/// What OSD-0 needs, column by column: the pivot columns taken so far as a basis of column
/// vectors (`m` bits, `rw` words each; at most `rank(H)` of them, so the basis is sized by the
/// rank, never `m × m`: a tall matrix of few columns costs a few vectors), kept fully reduced — basis vector `k` has a 1 at its
/// pivot row and 0 at every other basis vector's — each with the set of taken columns it sums
/// (bits over basis slots), and the syndrome reduced the same way. A column joins when it
/// is not in the span of those before it (reducing it costs one XOR per pivot row it
/// touches); OSD-0 stops when the reduced syndrome is zero. The pivot columns and the stopping
/// point are those of the row elimination ([`Osd::eliminate`]), so the solution — the unique
/// one on those columns — is the same, at a cost that grows with the pivots taken rather than
/// with `m × n` per pivot.
#[derive(Debug, Clone)]
struct Basis {
    /// Words per vector (`⌈m/64⌉`, at least 1).
    rw: usize,
    /// Words per combination (`⌈rank/64⌉`, at least 1): a set of slots.
    cw: usize,
    /// Slot `k`'s vector, `vecs[k·rw..(k+1)·rw]`, and the slots (taken columns) it sums,
    /// `combos[k·cw..(k+1)·cw]`; `rank` slots.
    vecs: Vec<u64>,
    combos: Vec<u64>,
    /// Pivot row → slot (valid where `pivmask` is set); slot → column.
    row_slot: Vec<u32>,
    slot_col: Vec<u32>,
    /// The pivot rows taken.
    pivmask: Vec<u64>,
    /// The column being reduced and its combination; the reduced syndrome and its.
    v: Vec<u64>,
    vc: Vec<u64>,
    s: Vec<u64>,
    sc: Vec<u64>,
    /// Slots filled in this decode (pivot columns taken), at most the rank.
    taken: usize,
}

impl Basis {
    /// The basis for `m` checks of rank `rank`, its memory checked before it is taken.
    fn new(m: usize, rank: usize) -> Result<Basis, TooLarge> {
        let rw = words_for(m).max(1);
        let cw = words_for(rank).max(1);
        Ok(Basis {
            rw,
            cw,
            vecs: zeroed(rank, rw, m, rank)?,
            combos: zeroed(rank, cw, m, rank)?,
            row_slot: zeroed(m, 1, m, rank)?,
            slot_col: zeroed(rank, 1, m, rank)?,
            pivmask: vec![0; rw],
            v: vec![0; rw],
            vc: vec![0; cw],
            s: vec![0; rw],
            sc: vec![0; cw],
            taken: 0,
        })
    }

    /// Empties the basis and loads `syndrome` (0/1 per check) as the reduced syndrome;
    /// returns whether it is zero (nothing to explain).
    fn start(&mut self, syndrome: &[u8]) -> bool {
        self.taken = 0;
        self.pivmask.fill(0);
        self.s.fill(0);
        self.sc.fill(0);
        for (r, &x) in syndrome.iter().enumerate() {
            set_bit(&mut self.s, r, x != 0);
        }
        self.s.iter().all(|&w| w == 0)
    }

    /// Offers column `c`, whose ones are at `rows`: it joins as slot [`Basis::taken`] when it
    /// is not in the span of the columns taken before it (reducing it costs one XOR per pivot
    /// row it touches), and is left out (free) otherwise. Returns whether the reduced
    /// syndrome is zero after it: the syndrome then lies in the span of the columns taken.
    fn offer(&mut self, c: u32, rows: &[u32]) -> bool {
        let (rw, cw) = (self.rw, self.cw);
        self.v.fill(0);
        self.vc.fill(0);
        for &r in rows {
            set_bit(&mut self.v, r as usize, true);
        }
        // Reduce: one XOR per pivot row the column touches (the basis vectors are zero at
        // each other's pivot rows, so an XOR sets no pivot bit).
        for w in 0..rw {
            let mut t = self.v[w] & self.pivmask[w];
            while t != 0 {
                let r = w * WORD_BITS + t.trailing_zeros() as usize;
                t &= t - 1;
                let k = self.row_slot[r] as usize;
                xor_into(&mut self.v, &self.vecs[k * rw..(k + 1) * rw]);
                xor_into(&mut self.vc, &self.combos[k * cw..(k + 1) * cw]);
            }
        }
        let Some(w) = self.v.iter().position(|&x| x != 0) else {
            return false; // in the span of the columns before it: free
        };
        let p = w * WORD_BITS + self.v[w].trailing_zeros() as usize;
        let k = self.taken;
        set_bit(&mut self.vc, k, true);
        // Keep the basis fully reduced: clear the new pivot row from the others.
        for o in 0..k {
            if get_bit(&self.vecs[o * rw..(o + 1) * rw], p) {
                xor_into(&mut self.vecs[o * rw..(o + 1) * rw], &self.v);
                xor_into(&mut self.combos[o * cw..(o + 1) * cw], &self.vc);
            }
        }
        if get_bit(&self.s, p) {
            xor_into(&mut self.s, &self.v);
            xor_into(&mut self.sc, &self.vc);
        }
        self.vecs[k * rw..(k + 1) * rw].copy_from_slice(&self.v);
        self.combos[k * cw..(k + 1) * cw].copy_from_slice(&self.vc);
        self.row_slot[p] = k as u32;
        self.slot_col[k] = c;
        set_bit(&mut self.pivmask, p, true);
        self.taken += 1;
        self.s.iter().all(|&x| x == 0)
    }

    /// Writes the solution once the reduced syndrome is zero: a 1 on each taken column the
    /// syndrome sums (`out` zero elsewhere beforehand).
    fn solution(&self, out: &mut [u8]) {
        for k in Ones::new(&self.sc) {
            out[self.slot_col[k] as usize] = 1;
        }
    }
}

/// `rows × per` zeros, or [`TooLarge`] (naming the `m × n` checks it was for) when that many
/// elements are past [`MAX_DENSE_BITS`] bits' worth of words or cannot be allocated: OSD's
/// scratch is sized by the checks, so a hostile size is an error, never an abort.
fn zeroed<T: Copy + Default>(
    rows: usize,
    per: usize,
    m: usize,
    n: usize,
) -> Result<Vec<T>, TooLarge> {
    let len = rows.checked_mul(per);
    let bits = len.map(|l| (l as u64).saturating_mul(8 * std::mem::size_of::<T>() as u64));
    let too_large = |out_of_memory| TooLarge {
        rows: m,
        cols: n,
        out_of_memory,
    };
    let len = match (len, bits) {
        (Some(l), Some(b)) if b <= MAX_DENSE_BITS => l,
        _ => return Err(too_large(false)),
    };
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| too_large(true))?;
    v.resize(len, T::default());
    Ok(v)
}

impl Clone for Osd {
    /// A copy whose scratch keeps its room: a clone (one per thread, or the CUQR server's
    /// decoder) decodes without allocating, as the original does.
    fn clone(&self) -> Osd {
        Osd {
            m: self.m,
            n: self.n,
            rank: self.rank,
            order: self.order,
            requested_order: self.requested_order,
            col_start: self.col_start.clone(),
            col_rows: self.col_rows.clone(),
            weight: self.weight.clone(),
            uniform: self.uniform,
            wpr: self.wpr,
            a: self.a.clone(),
            keys: self.keys.clone(),
            order_buf: self.order_buf.clone(),
            order_tmp: self.order_tmp.clone(),
            perm: self.perm.clone(),
            pivots: self.pivots.clone(),
            free: Vec::with_capacity(self.free.capacity()),
            free_index: self.free_index.clone(),
            delta: self.delta.clone(),
            rwords: self.rwords,
            s_packed: self.s_packed.clone(),
            cols_packed: self.cols_packed.clone(),
            pivot_bits: Vec::with_capacity(self.pivot_bits.capacity()),
            basis: self.basis.clone(),
        }
    }
}

impl Osd {
    /// The OSD engine for checks `h`, per-bit error rates `channel`, and combination-sweep
    /// order `order` (0 for OSD-0), clamped to `n − rank(h)` (see the module docs).
    ///
    /// Never returns [`DecoderError::OsdOrderTooLarge`] (kept in the enum for compatibility).
    pub fn new(h: &BitMatrix, channel: &[f64], order: usize) -> Result<Osd, DecoderError> {
        check_order(order)?;
        Osd::build(&SparseMatrix::from_dense(h), gf2::rank(h), channel, order)
    }

    /// [`Osd::new`] for checks in sparse form.
    pub fn from_sparse(
        h: &SparseMatrix,
        channel: &[f64],
        order: usize,
    ) -> Result<Osd, DecoderError> {
        check_order(order)?;
        let dense = h.try_to_dense().map_err(DecoderError::TooLarge)?;
        Osd::build(h, gf2::rank(&dense), channel, order)
    }

    fn build(
        h: &SparseMatrix,
        rank: usize,
        channel: &[f64],
        requested_order: usize,
    ) -> Result<Osd, DecoderError> {
        let (m, n) = (h.rows(), h.cols());
        assert_eq!(channel.len(), n, "channel length");
        let free_columns = n - rank;
        let order = effective_order(requested_order, free_columns);
        if order < requested_order && !CLAMP_WARNED.swap(true, Ordering::Relaxed) {
            // Relaxed: the flag only dedupes a log line; it orders no other memory.
            log::warn!(
                "OSD order {requested_order} is above the {free_columns} free columns of the \
                 {m}x{n} checks (n - rank = {n} - {rank}): using order {order} \
                 (said once per process)"
            );
        }
        let mut col_start = Vec::with_capacity(n + 1);
        let mut col_rows = Vec::with_capacity(h.nnz());
        col_start.push(0u32);
        for c in 0..n {
            col_rows.extend_from_slice(h.col(c));
            col_start.push(col_rows.len() as u32);
        }
        let weight: Vec<f64> = channel.iter().map(|&p| (1.0 / p).ln()).collect();
        let uniform = channel.iter().all(|&p| p.to_bits() == channel[0].to_bits());
        let wpr = words_for(n + 1);
        let rwords = words_for(m).max(1);
        Ok(Osd {
            m,
            n,
            rank,
            order,
            requested_order,
            col_start,
            col_rows,
            weight,
            uniform,
            wpr,
            a: zeroed(m, wpr, m, n).map_err(DecoderError::TooLarge)?,
            keys: vec![0; n],
            order_buf: vec![(0.0, 0); n],
            order_tmp: vec![(0.0, 0); n],
            perm: vec![0; n],
            pivots: vec![0; m],
            free: Vec::with_capacity(n),
            free_index: vec![0; n],
            delta: vec![0; n],
            rwords,
            s_packed: vec![0; rwords],
            cols_packed: zeroed(order, rwords, m, n).map_err(DecoderError::TooLarge)?,
            pivot_bits: Vec::with_capacity(m),
            basis: Basis::new(m, rank).map_err(DecoderError::TooLarge)?,
        })
    }

    /// Rank of the checks.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The combination-sweep order in force (0: OSD-0): the order asked for, clamped to
    /// `n − rank(H)`.
    pub fn order(&self) -> usize {
        self.order
    }

    /// The order asked for at construction, before the clamp.
    pub fn requested_order(&self) -> usize {
        self.requested_order
    }

    /// Decodes `syndrome` (0/1 per check) given the soft output `llr` (per bit, lower = more
    /// likely flipped), writing the correction (0/1 per bit) to `out`.
    ///
    /// When the syndrome is not in the column space of the checks, no correction reproduces
    /// it; `out` then holds the OSD-0 solution of the consistent part.
    pub fn decode(&mut self, syndrome: &[u8], llr: &[f64], out: &mut [u8]) {
        assert_eq!(syndrome.len(), self.m);
        assert_eq!(llr.len(), self.n);
        assert_eq!(out.len(), self.n);
        if self.order == 0 {
            // The column path leaves the whole order in `perm` when it answers false.
            if self.osd0_by_columns(syndrome, llr, out) {
                return;
            }
        } else {
            self.sort_columns(llr);
        }
        self.fill(syndrome);
        let rank = self.eliminate(self.order == 0);
        let choice = if self.order == 0 {
            Choice::Osd0
        } else {
            self.sweep(rank)
        };
        self.solution(rank, choice, out);
    }

    /// OSD-0 column by column ([`Basis`]), the columns met in [`Osd::sort_columns`]'s order:
    /// writes the solution and returns true once the syndrome lies in the span of the pivot
    /// columns taken; false (`out` unspecified, `perm` the whole order) when every pivot is
    /// taken first — a syndrome outside the column space, which the row elimination answers
    /// with the solution of its consistent part.
    ///
    /// OSD-0 usually stops after a few columns (on stim's d = 7 circuit model after 5
    /// iterations: 4 at the median, 45 at P99.9, of 6,023), so the order is not sorted whole
    /// up front: the columns whose sort key is below a threshold sampled to leave about
    /// [`HEAD_COLUMNS`] of them are sorted and offered first, and only if they do not solve the
    /// syndrome are the others sorted and offered after them. The keys are unique, so the
    /// columns come in exactly the order of the full sort, and the answer is the same.
    fn osd0_by_columns(&mut self, syndrome: &[u8], llr: &[f64], out: &mut [u8]) -> bool {
        out.fill(0);
        if self.basis.start(syndrome) {
            return true;
        }
        let threshold = self.head_threshold(llr);
        let Some(head) = self.gather(llr, 0, |k| k < threshold) else {
            // NaN places as glibc's merge sort places it: the whole order, as before.
            self.sort_columns(llr);
            return self.offer_columns(0..self.n, out) == Some(true);
        };
        let first = self.offer_columns(0..head, out);
        if first == Some(true) {
            return true;
        }
        // The rest of the order (no NaN: the first pass found none): to offer next when the
        // head ran out, for the row path when every pivot was taken unsolved.
        let _ = self.gather(llr, head, |k| k >= threshold);
        first.is_none() && self.offer_columns(head..self.n, out) == Some(true)
    }

    /// Offers the columns at positions `positions` of `perm` to the basis in turn: `Some(true)`
    /// (solution written to `out`) once the syndrome is in the span of those taken,
    /// `Some(false)` when the rank is reached first, `None` when they run out before either.
    fn offer_columns(&mut self, positions: std::ops::Range<usize>, out: &mut [u8]) -> Option<bool> {
        let Osd {
            basis,
            perm,
            col_start,
            col_rows,
            rank,
            ..
        } = self;
        for &c in &perm[positions] {
            if basis.taken == *rank {
                return Some(false);
            }
            let rows =
                &col_rows[col_start[c as usize] as usize..col_start[c as usize + 1] as usize];
            if basis.offer(c, rows) {
                basis.solution(out);
                return Some(true);
            }
        }
        None
    }

    /// A sort key below which about [`HEAD_COLUMNS`] columns' keys fall (the `r`-th least of
    /// [`HEAD_SAMPLE`] keys taken at even strides, `r` scaled to the columns), or `u128::MAX`
    /// (every column) when there are few columns. Any threshold gives the same order; this one
    /// only sets how many columns the first sort takes (a NaN in `llr` gives some threshold;
    /// [`Osd::gather`] then finds the NaN).
    fn head_threshold(&self, llr: &[f64]) -> u128 {
        let n = self.n;
        if n <= 4 * HEAD_COLUMNS {
            return u128::MAX;
        }
        let mut sample = [0u128; HEAD_SAMPLE];
        for (j, key) in sample.iter_mut().enumerate() {
            let i = j * n / HEAD_SAMPLE;
            *key = column_key(llr[i], i);
        }
        // n > 4·HEAD_COLUMNS, so r ≤ HEAD_SAMPLE / 4: in range.
        let r = (HEAD_COLUMNS * HEAD_SAMPLE).div_ceil(n);
        *sample.select_nth_unstable(r).1
    }

    /// Sorts the keys of the columns that `take` selects and writes those columns, in that
    /// order, to `perm[at..]`; returns how many, or `None` (`perm` untouched) when `llr` holds
    /// a NaN, which has no key.
    fn gather(&mut self, llr: &[f64], at: usize, take: impl Fn(u128) -> bool) -> Option<usize> {
        let mut count = 0;
        let mut nan = false;
        for (i, &v) in llr.iter().enumerate() {
            // Branch-free compaction: `count ≤ i`, so the write is in bounds.
            let k = column_key(v, i);
            self.keys[count] = k;
            count += take(k) as usize;
            nan |= v.is_nan();
        }
        if nan {
            return None;
        }
        let keys = &mut self.keys[..count];
        keys.sort_unstable();
        for (p, &k) in self.perm[at..at + count].iter_mut().zip(keys.iter()) {
            *p = k as u32;
        }
        Some(count)
    }

    /// Orders the columns by soft output ascending, as `ldpc` does: glibc's `qsort` over
    /// `(value, index)` pairs with a comparator that answers "equal" unless one value is
    /// strictly greater — which glibc implements as the top-down merge sort below (split at
    /// `n/2`, take from the left half unless it compares greater). On numbers that is a stable
    /// sort (ties by index, `-0.0` with `0.0`); a NaN compares equal to everything, and the
    /// merge order then decides where it lands, exactly as in `ldpc`.
    fn sort_columns(&mut self, llr: &[f64]) {
        if llr.iter().any(|v| v.is_nan()) {
            for (i, (&v, slot)) in llr.iter().zip(self.order_buf.iter_mut()).enumerate() {
                *slot = (v, i as u32);
            }
            merge_sort(&mut self.order_buf, &mut self.order_tmp);
            for (p, &(_, c)) in self.perm.iter_mut().zip(&self.order_buf) {
                *p = c;
            }
            return;
        }
        // Without NaN the merge sort is a stable sort by value with -0.0 equal to 0.0: sort
        // unique keys (order-preserving value bits, then the index) instead, which is faster
        // and gives the same order.
        for (i, (&v, key)) in llr.iter().zip(self.keys.iter_mut()).enumerate() {
            *key = column_key(v, i);
        }
        self.keys.sort_unstable();
        for (p, &k) in self.perm.iter_mut().zip(&self.keys) {
            *p = k as u32;
        }
    }

    /// Builds the permuted checks, position `j` holding column `perm[j]`, augmented with the
    /// syndrome at position `n`.
    fn fill(&mut self, syndrome: &[u8]) {
        self.a.fill(0);
        let wpr = self.wpr;
        for (j, &c) in self.perm.iter().enumerate() {
            let (w, bit) = (j / WORD_BITS, 1u64 << (j % WORD_BITS));
            let c = c as usize;
            for &r in &self.col_rows[self.col_start[c] as usize..self.col_start[c + 1] as usize] {
                self.a[r as usize * wpr + w] |= bit;
            }
        }
        let (w, bit) = (self.n / WORD_BITS, 1u64 << (self.n % WORD_BITS));
        for (r, &s) in syndrome.iter().enumerate() {
            if s != 0 {
                self.a[r * wpr + w] |= bit;
            }
        }
    }

    /// Gauss–Jordan elimination over the positions left to right. Records pivots and free
    /// positions; returns the rank reached. With `stop_when_solved`, stops once the syndrome
    /// column is zero below the pivot rows.
    fn eliminate(&mut self, stop_when_solved: bool) -> usize {
        let (m, n, wpr) = (self.m, self.n, self.wpr);
        let (sw, sbit) = (n / WORD_BITS, 1u64 << (n % WORD_BITS));
        self.free.clear();
        let mut rank = 0usize;
        // Rows at or below the rank whose syndrome bit is set: the syndrome is in the span of
        // the pivots found so far exactly when there are none.
        let mut pending = (0..m).filter(|&r| self.a[r * wpr + sw] & sbit != 0).count();
        if stop_when_solved && pending == 0 {
            return 0;
        }
        for j in 0..n {
            if rank == self.rank {
                // No further pivots exist: every remaining position is free.
                self.free.extend(j as u32..n as u32);
                break;
            }
            let (w, bit) = (j / WORD_BITS, 1u64 << (j % WORD_BITS));
            let Some(p) = (rank..m).find(|&r| self.a[r * wpr + w] & bit != 0) else {
                self.free.push(j as u32);
                continue;
            };
            if p != rank {
                // Both rows are zero left of word `w` (rows at or below the rank always are).
                for k in w..wpr {
                    self.a.swap(p * wpr + k, rank * wpr + k);
                }
            }
            let (head, tail) = self.a.split_at_mut(rank * wpr);
            let (pivot_row, rest) = tail.split_at_mut(wpr);
            let pivot_row = &pivot_row[w..];
            let pivot_s = pivot_row[sw - w] & sbit != 0;
            pending -= pivot_s as usize;
            for row in head.chunks_exact_mut(wpr) {
                if row[w] & bit != 0 {
                    for (d, s) in row[w..].iter_mut().zip(pivot_row) {
                        *d ^= s;
                    }
                }
            }
            for row in rest.chunks_exact_mut(wpr) {
                if row[w] & bit != 0 {
                    for (d, s) in row[w..].iter_mut().zip(pivot_row) {
                        *d ^= s;
                    }
                    if pivot_s {
                        // The row's syndrome bit flipped.
                        if row[sw] & sbit != 0 {
                            pending += 1;
                        } else {
                            pending -= 1;
                        }
                    }
                }
            }
            self.pivots[rank] = j as u32;
            rank += 1;
            if stop_when_solved && pending == 0 {
                break;
            }
        }
        for (i, &j) in self.free.iter().enumerate() {
            self.free_index[j as usize] = i as u32;
        }
        rank
    }

    /// Reduced syndrome bit of pivot row `r`.
    #[inline]
    fn s_bit(&self, r: usize) -> bool {
        let n = self.n;
        self.a[r * self.wpr + n / WORD_BITS] >> (n % WORD_BITS) & 1 == 1
    }

    /// Entry of reduced row `r` at position `j`.
    #[inline]
    fn a_bit(&self, r: usize, j: usize) -> bool {
        self.a[r * self.wpr + j / WORD_BITS] >> (j % WORD_BITS) & 1 == 1
    }

    /// The combination sweep: the best of OSD-0, every single free flip, and every pair among
    /// the first `order` free positions, in that order, strictly smaller weight winning.
    fn sweep(&mut self, rank: usize) -> Choice {
        let k = self.free.len();
        let rw = self.rwords;
        // Pack the reduced syndrome and the first `order` free columns over the pivot rows.
        self.s_packed.fill(0);
        self.cols_packed.fill(0);
        for r in 0..rank {
            let (w, bit) = (r / WORD_BITS, 1u64 << (r % WORD_BITS));
            if self.s_bit(r) {
                self.s_packed[w] |= bit;
            }
            for i in 0..self.order.min(k) {
                if self.a_bit(r, self.free[i] as usize) {
                    self.cols_packed[i * rw + w] |= bit;
                }
            }
        }
        if !self.uniform {
            return self.sweep_weighted(rank);
        }
        // Hamming-weight path. Flipping free column i changes the weight of the pivot part by
        // Σ over rows with a 1 in that column of (1 − 2·sᵣ), and adds 1 for the flip itself.
        let base = self
            .s_packed
            .iter()
            .map(|w| w.count_ones() as i32)
            .sum::<i32>();
        self.delta[..k].fill(0);
        let (n, wpr) = (self.n, self.wpr);
        for r in 0..rank {
            let step = if self.s_bit(r) { -1 } else { 1 };
            let row = &self.a[r * wpr..(r + 1) * wpr];
            let own = self.pivots[r] as usize;
            for (wi, &word) in row.iter().enumerate() {
                let mut bits = word;
                while bits != 0 {
                    let j = wi * WORD_BITS + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    if j < n && j != own {
                        self.delta[self.free_index[j] as usize] += step;
                    }
                }
            }
        }
        let mut best = base;
        let mut choice = Choice::Osd0;
        for i in 0..k {
            let w = base + self.delta[i] + 1;
            if w < best {
                best = w;
                choice = Choice::Single(i);
            }
        }
        for i in 0..self.order {
            for j in i + 1..self.order {
                let ci = &self.cols_packed[i * rw..(i + 1) * rw];
                let cj = &self.cols_packed[j * rw..(j + 1) * rw];
                let mut w = 2i32;
                for t in 0..rw {
                    w += (self.s_packed[t] ^ ci[t] ^ cj[t]).count_ones() as i32;
                }
                if w < best {
                    best = w;
                    choice = Choice::Pair(i, j);
                }
            }
        }
        choice
    }

    /// The sweep with per-bit weights: each candidate's weight summed in bit-index order,
    /// exactly as `ldpc` sums it over the dense candidate.
    fn sweep_weighted(&mut self, rank: usize) -> Choice {
        // The pivot rows in ascending order of their bit: the order in which the sum over a
        // dense candidate meets them.
        self.pivot_bits.clear();
        for r in 0..rank {
            self.pivot_bits
                .push((self.perm[self.pivots[r] as usize], r as u32));
        }
        self.pivot_bits.sort_unstable();
        let k = self.free.len();
        let mut best = self.candidate_weight(Choice::Osd0);
        let mut choice = Choice::Osd0;
        for i in 0..k {
            let w = self.candidate_weight(Choice::Single(i));
            if w < best {
                best = w;
                choice = Choice::Single(i);
            }
        }
        for i in 0..self.order {
            for j in i + 1..self.order {
                let w = self.candidate_weight(Choice::Pair(i, j));
                if w < best {
                    best = w;
                    choice = Choice::Pair(i, j);
                }
            }
        }
        choice
    }

    /// `Σ ln(1/pᵢ)` over a candidate's bits, added in ascending bit order — the order and so
    /// the rounding of `ldpc`'s sum over the dense candidate — without writing it out: the
    /// pivot bits come from `pivot_bits` (ascending), the flipped free bits are merged in.
    fn candidate_weight(&self, choice: Choice) -> f64 {
        let (flips, mut extra): ([Option<usize>; 2], [u32; 2]) = match choice {
            Choice::Osd0 => ([None, None], [u32::MAX; 2]),
            Choice::Single(i) => (
                [Some(i), None],
                [self.perm[self.free[i] as usize], u32::MAX],
            ),
            Choice::Pair(i, j) => (
                [Some(i), Some(j)],
                [
                    self.perm[self.free[i] as usize],
                    self.perm[self.free[j] as usize],
                ],
            ),
        };
        extra.sort_unstable();
        let mut next = 0;
        let mut acc = 0.0f64;
        for &(bit, r) in &self.pivot_bits {
            while next < 2 && extra[next] < bit {
                acc += self.weight[extra[next] as usize];
                next += 1;
            }
            let r = r as usize;
            let mut v = self.s_bit(r);
            for i in flips.iter().flatten() {
                v ^= self.a_bit(r, self.free[*i] as usize);
            }
            if v {
                acc += self.weight[bit as usize];
            }
        }
        while next < 2 && extra[next] != u32::MAX {
            acc += self.weight[extra[next] as usize];
            next += 1;
        }
        acc
    }

    /// The dense solution for a candidate: flipped free columns, and each pivot solved from
    /// its reduced row.
    fn solution(&self, rank: usize, choice: Choice, out: &mut [u8]) {
        out.fill(0);
        let flips: [Option<usize>; 2] = match choice {
            Choice::Osd0 => [None, None],
            Choice::Single(i) => [Some(i), None],
            Choice::Pair(i, j) => [Some(i), Some(j)],
        };
        for r in 0..rank {
            let mut v = self.s_bit(r);
            for i in flips.iter().flatten() {
                v ^= self.a_bit(r, self.free[*i] as usize);
            }
            out[self.perm[self.pivots[r] as usize] as usize] = v as u8;
        }
        for i in flips.iter().flatten() {
            out[self.perm[self.free[*i] as usize] as usize] = 1;
        }
    }
}

/// About how many columns OSD-0's first sort takes ([`Osd::head_threshold`]): more than it
/// needs on nearly every decode, few enough that sorting them costs little.
const HEAD_COLUMNS: usize = 128;

/// How many keys [`Osd::head_threshold`] samples to place its threshold.
const HEAD_SAMPLE: usize = 128;

/// Column `i`'s sort key for soft output `v` (not NaN): the value's bits mapped so that
/// unsigned order is numeric order (`-0.0` as `0.0`), then the column, so keys are unique and
/// sorting them is the stable sort by value.
#[inline]
fn column_key(v: f64, i: usize) -> u128 {
    let bits = (v + 0.0).to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    };
    (ordered as u128) << 32 | i as u128
}

/// `qsort`'s comparator in `ldpc`: greater, smaller, else equal (so NaN equals everything).
#[inline]
fn compare(a: f64, b: f64) -> i32 {
    if a > b {
        1
    } else if a < b {
        -1
    } else {
        0
    }
}

/// glibc's `msort_with_tmp`: sorts `b` recursively (left half `n/2` elements), merging into
/// `tmp` and taking the left element unless it compares greater.
fn merge_sort(b: &mut [(f64, u32)], tmp: &mut [(f64, u32)]) {
    let n = b.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    let (left, right) = b.split_at_mut(n1);
    merge_sort(left, tmp);
    merge_sort(right, tmp);
    let (mut i, mut j, mut k) = (0, 0, 0);
    while i < left.len() && j < right.len() {
        if compare(left[i].0, right[j].0) <= 0 {
            tmp[k] = left[i];
            i += 1;
        } else {
            tmp[k] = right[j];
            j += 1;
        }
        k += 1;
    }
    // What is left of the left half follows; what is left of the right half is in place.
    let rest = left.len() - i;
    tmp[k..k + rest].copy_from_slice(&left[i..]);
    k += rest;
    b[..k].copy_from_slice(&tmp[..k]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_basis_is_sized_by_the_rank_not_by_the_checks() {
        // 20,000 × 2 checks with two ones (rank 2): a basis of `m × m` bits would be 100 MB;
        // 200,000 × 2 asked for 5 GB and aborted (issue 39).
        let m = 20_000;
        let mut h = SparseMatrix::with_rows(m);
        h.push_column(&mut [0]).unwrap();
        h.push_column(&mut [m as u32 - 1]).unwrap();
        let mut osd = Osd::from_sparse(&h, &[0.1, 0.2], 0).unwrap();
        assert_eq!(osd.rank(), 2);
        let b = &osd.basis;
        assert_eq!(b.vecs.len(), 2 * words_for(m));
        assert_eq!(b.combos.len(), 2);
        assert_eq!(b.slot_col.len(), 2);
        let mut syndrome = vec![0u8; m];
        syndrome[m - 1] = 1;
        let mut out = [0u8; 2];
        osd.decode(&syndrome, &[0.0, 0.0], &mut out);
        assert_eq!(out, [0, 1]);
        // A clone keeps the same small scratch.
        assert_eq!(osd.clone().basis.vecs.len(), 2 * words_for(m));
    }

    #[test]
    fn scratch_past_the_dense_bound_is_an_error_not_an_abort() {
        // 2^20 checks of 2^13 columns: the augmented matrix alone is 2^33 bits.
        let e = zeroed::<u64>(1 << 20, 1 << 7, 1 << 20, 1 << 13).unwrap_err();
        assert!(!e.out_of_memory);
        assert!(e.to_string().contains("1048576 × 8192"), "{e}");
        assert!(zeroed::<u64>(usize::MAX, 2, 1, 1).is_err());
    }

    fn hamming() -> BitMatrix {
        BitMatrix::from_picture("1.1.1.1\n.11..11\n...1111").unwrap()
    }

    fn syndrome(h: &BitMatrix, e: &[u8]) -> Vec<u8> {
        let mut s = vec![0u8; h.rows()];
        h.mul_bytes(e, &mut s);
        s
    }

    /// OSD-0 by the row elimination alone, as before the column path.
    fn osd0_by_rows(osd: &mut Osd, syndrome: &[u8], llr: &[f64], out: &mut [u8]) {
        osd.sort_columns(llr);
        osd.fill(syndrome);
        let rank = osd.eliminate(true);
        osd.solution(rank, Choice::Osd0, out);
    }

    #[test]
    fn osd0_by_columns_answers_as_the_row_elimination() {
        // Random sparse checks (some rank-deficient, some with repeated columns), soft outputs
        // with ties, and syndromes inside and outside the column space.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut by_columns, mut outside) = (0, 0);
        for case in 0..400 {
            let m = 1 + (next() % 40) as usize;
            let n = 1 + (next() % 90) as usize;
            let weight = 1 + (next() % 4) as usize;
            let mut pic = vec![vec![b'.'; n]; m];
            for k in 0..n * weight {
                // Up to `weight` ones in column k / weight.
                pic[(next() % m as u64) as usize][k / weight] = b'1';
            }
            if case % 5 == 0 && n > 1 {
                // A repeated column.
                for row in &mut pic {
                    row[n - 1] = row[0];
                }
            }
            let text: Vec<String> = pic
                .iter()
                .map(|r| String::from_utf8(r.clone()).unwrap())
                .collect();
            let h = BitMatrix::from_picture(&text.join("\n")).unwrap();
            let channel: Vec<f64> = (0..n)
                .map(|_| 0.01 + (next() % 40) as f64 / 100.0)
                .collect();
            let mut osd = Osd::new(&h, &channel, 0).unwrap();
            for _ in 0..8 {
                let llr: Vec<f64> = (0..n).map(|_| (next() % 7) as f64 - 3.0).collect();
                let syndrome: Vec<u8> = if next() % 3 == 0 {
                    (0..m).map(|_| (next() % 2) as u8).collect()
                } else {
                    let e: Vec<u8> = (0..n).map(|_| (next() % 4 == 0) as u8).collect();
                    syndrome(&h, &e)
                };
                let (mut a, mut b) = (vec![0u8; n], vec![9u8; n]);
                osd0_by_rows(&mut osd, &syndrome, &llr, &mut a);
                osd.decode(&syndrome, &llr, &mut b);
                assert_eq!(
                    a, b,
                    "case {case}: {m}x{n}, syndrome {syndrome:?}, llr {llr:?}"
                );
                if osd.osd0_by_columns(&syndrome, &llr, &mut b) {
                    by_columns += 1;
                    assert_eq!(super::tests::syndrome(&h, &b), syndrome);
                } else {
                    outside += 1;
                }
            }
        }
        // Both paths ran: most syndromes by columns, those outside the span by rows.
        assert!(by_columns > 1000 && outside > 50, "{by_columns} {outside}");
    }

    /// xorshift64: the tests' numbers.
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    #[test]
    fn the_order_in_two_sorts_is_the_whole_sort() {
        // The head below the sampled threshold, then the rest: the full sort's order, for
        // ties, ±0, ±inf, and values rising, falling or scattered along the columns.
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for (case, n) in [513, 600, 1000, 6023, 20_000].into_iter().enumerate() {
            let h = BitMatrix::zeros(1, n);
            let mut osd = Osd::new(&h, &vec![0.1; n], 0).unwrap();
            for shape in 0..5 {
                let llr: Vec<f64> = (0..n)
                    .map(|i| match shape {
                        0 => (next() % 9) as f64 - 4.0,
                        1 => i as f64 / 7.0,
                        2 => -(i as f64),
                        3 => [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, 6.9][i % 5],
                        _ => {
                            6.9 + (next() % 1000) as f64 / 100.0
                                - next().is_multiple_of(50) as u8 as f64 * 9.0
                        }
                    })
                    .collect();
                osd.sort_columns(&llr);
                let whole = osd.perm.clone();
                osd.perm.fill(u32::MAX);
                let t = osd.head_threshold(&llr);
                let head = osd.gather(&llr, 0, |k| k < t).unwrap();
                assert!(head < n, "case {case} shape {shape}: head {head} of {n}");
                assert_eq!(osd.gather(&llr, head, |k| k >= t), Some(n - head));
                assert_eq!(osd.perm, whole, "case {case} shape {shape}");
            }
            let mut llr = vec![1.0; n];
            llr[n / 2] = f64::NAN;
            let t = osd.head_threshold(&llr);
            assert_eq!(osd.gather(&llr, 0, |k| k < t), None);
        }
    }

    #[test]
    fn osd0_in_two_sorts_answers_as_the_row_elimination() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        // 600 checks of one column each (the identity) and 400 random weight-2 columns, plus a
        // check no column touches; soft output rising with the column, so column 599 lies past
        // the first sort's head.
        let (m, n) = (601, 1000);
        let mut h = SparseMatrix::with_rows(m);
        for c in 0..n {
            let mut rows = if c < 600 {
                vec![c as u32]
            } else {
                let a = (next() % 600) as u32;
                vec![a, (a + 1 + (next() % 599) as u32) % 600]
            };
            h.push_column(&mut rows).unwrap();
        }
        let dense = h.try_to_dense().unwrap();
        let mut osd = Osd::from_sparse(&h, &vec![0.01; n], 0).unwrap();
        let rising: Vec<f64> = (0..n).map(|i| i as f64 / 100.0).collect();
        let t = osd.head_threshold(&rising);
        let head = osd.gather(&rising, 0, |k| k < t).unwrap();
        assert!(head < 599, "{head}");
        let check = |osd: &mut Osd, syndrome: &[u8], llr: &[f64]| {
            let (mut a, mut b) = (vec![0u8; llr.len()], vec![9u8; llr.len()]);
            osd0_by_rows(osd, syndrome, llr, &mut a);
            osd.decode(syndrome, llr, &mut b);
            assert_eq!(a, b, "syndrome {syndrome:?}");
            b
        };
        // Solved only by column 599, in the second sort.
        let mut s = vec![0u8; m];
        s[599] = 1;
        let out = check(&mut osd, &s, &rising);
        assert_eq!(out.iter().position(|&x| x == 1), Some(599));
        // Outside the column space: every pivot taken in the second sort, then the rows.
        s[600] = 1;
        check(&mut osd, &s, &rising);
        for trial in 0..60 {
            let llr: Vec<f64> = if trial % 2 == 0 {
                rising.clone()
            } else {
                (0..n).map(|_| (next() % 13) as f64 - 4.0).collect()
            };
            let mut s: Vec<u8> = if trial % 3 == 0 {
                (0..m).map(|_| (next() % 2) as u8).collect()
            } else {
                let e: Vec<u8> = (0..n).map(|_| next().is_multiple_of(50) as u8).collect();
                syndrome(&dense, &e)
            };
            if trial % 5 == 0 {
                s[600] = 1;
            }
            check(&mut osd, &s, &llr);
        }
        // Few checks, many columns: the rank is reached within the head, outside the span.
        let (m, n) = (6, 900);
        let mut h = SparseMatrix::with_rows(m);
        for _ in 0..n {
            let a = (next() % 5) as u32;
            h.push_column(&mut [a, (a + 1 + (next() % 4) as u32) % 5])
                .unwrap();
        }
        let mut osd = Osd::from_sparse(&h, &vec![0.01; n], 0).unwrap();
        for trial in 0..40 {
            let llr: Vec<f64> = (0..n).map(|_| (next() % 13) as f64 - 4.0).collect();
            let mut s: Vec<u8> = (0..m).map(|_| (next() % 2) as u8).collect();
            s[5] = (trial % 2) as u8;
            check(&mut osd, &s, &llr);
        }
    }

    #[test]
    fn osd0_solves_on_the_most_likely_columns() {
        let h = hamming();
        let mut osd = Osd::new(&h, &[0.1; 7], 0).unwrap();
        let mut out = [0u8; 7];
        // Soft output says bit 6 is the likeliest flip: the solution is the weight-1 error on 6.
        let mut llr = [5.0; 7];
        llr[6] = -1.0;
        let e = [0, 0, 0, 0, 0, 0, 1];
        osd.decode(&syndrome(&h, &e), &llr, &mut out);
        assert_eq!(out, e);
        // With bits 0 and 1 ranked first, syndrome of bit 2 is explained by bits 0 + 1.
        let mut llr = [5.0; 7];
        llr[0] = -2.0;
        llr[1] = -1.0;
        osd.decode(&syndrome(&h, &[0, 0, 1, 0, 0, 0, 0]), &llr, &mut out);
        assert_eq!(out, [1, 1, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn osd_cs_finds_the_lighter_solution() {
        let h = hamming();
        let mut osd = Osd::new(&h, &[0.1; 7], 4).unwrap();
        let mut out = [0u8; 7];
        let mut llr = [5.0; 7];
        llr[0] = -2.0;
        llr[1] = -1.0;
        osd.decode(&syndrome(&h, &[0, 0, 1, 0, 0, 0, 0]), &llr, &mut out);
        assert_eq!(out, [0, 0, 1, 0, 0, 0, 0]);
        // Same with unequal (but all tiny-different) weights through the general path.
        let mut ch = [0.1; 7];
        ch[5] = 0.09;
        let mut osd = Osd::new(&h, &ch, 4).unwrap();
        osd.decode(&syndrome(&h, &[0, 0, 1, 0, 0, 0, 0]), &llr, &mut out);
        assert_eq!(out, [0, 0, 1, 0, 0, 0, 0]);
    }

    #[test]
    fn order_above_free_columns_is_clamped() {
        let h = hamming();
        let osd = Osd::new(&h, &[0.1; 7], 9).unwrap();
        assert_eq!((osd.order(), osd.requested_order(), osd.rank()), (4, 9, 3));
        assert_eq!(Osd::new(&h, &[0.1; 7], 4).unwrap().order(), 4);
        assert_eq!(effective_order(9, 4), 4);
        // The clamped engine decodes as the largest valid order does.
        let mut a = Osd::new(&h, &[0.1; 7], 9).unwrap();
        let mut b = Osd::new(&h, &[0.1; 7], 4).unwrap();
        let (mut oa, mut ob) = ([0u8; 7], [0u8; 7]);
        let mut llr = [5.0; 7];
        llr[0] = -2.0;
        llr[1] = -1.0;
        for s in 1u8..8 {
            let syn = [s & 1, s >> 1 & 1, s >> 2 & 1];
            a.decode(&syn, &llr, &mut oa);
            b.decode(&syn, &llr, &mut ob);
            assert_eq!(oa, ob);
        }
    }

    #[test]
    fn column_order_matches_glibc_qsort() {
        // Each line: soft outputs | the order glibc 2.36's `qsort` gives `ldpc`'s
        // `(value, index)` pairs under its comparator (generated by a C program calling
        // `qsort`; NaN, ±inf, ±0 and ties included).
        let data = include_str!("../tests/data/glibc_qsort_order.txt");
        let mut cases = 0;
        for line in data.lines() {
            let (values, order) = line.split_once('|').unwrap();
            let v: Vec<f64> = values
                .split_whitespace()
                .map(|t| t.parse().unwrap())
                .collect();
            let expected: Vec<u32> = order
                .split_whitespace()
                .map(|t| t.parse().unwrap())
                .collect();
            let h = BitMatrix::zeros(1, v.len());
            let mut osd = Osd::new(&h, &vec![0.1; v.len()], 0).unwrap();
            osd.sort_columns(&v);
            assert_eq!(osd.perm, expected, "{values}");
            cases += 1;
        }
        assert_eq!(cases, 40);
    }

    #[test]
    fn column_order_is_stable_and_places_nan_like_glibc() {
        let h = BitMatrix::from_picture("11111").unwrap();
        let mut osd = Osd::new(&h, &[0.1; 5], 0).unwrap();
        osd.sort_columns(&[0.5, -0.0, 7.0, -3.0, 0.0]);
        assert_eq!(osd.perm, vec![3, 1, 4, 0, 2]);
        // [0.5, -0.0] → [-0.0, 0.5]; [NaN, -3.0, 0.0] → [NaN] + ([-3.0] ⊕ [0.0]) =
        // [NaN, -3.0, 0.0] (NaN "equals" -3.0, so it stays first); merging the halves,
        // -0.0 vs NaN is "equal" → -0.0; 0.5 vs NaN → 0.5; then the right half as it is.
        osd.sort_columns(&[0.5, -0.0, f64::NAN, -3.0, 0.0]);
        assert_eq!(osd.perm, vec![1, 0, 2, 3, 4]);
        // Against a plain stable sort on numbers.
        let v: Vec<f64> = (0..97).map(|i| ((i * 37) % 11) as f64 - 5.0).collect();
        let h = BitMatrix::zeros(1, 97);
        let mut osd = Osd::new(&h, &[0.1; 97], 0).unwrap();
        osd.sort_columns(&v);
        let mut expected: Vec<u32> = (0..97).collect();
        expected.sort_by(|&a, &b| v[a as usize].total_cmp(&v[b as usize]));
        assert_eq!(osd.perm, expected);
    }
}
