//! Belief propagation on the Tanner graph of a parity-check matrix, in the log-likelihood
//! domain: product-sum and (scaled) min-sum, flooding ("parallel") and serial schedules.
//!
//! The update rules, their order and their floating-point operations follow `ldpc` 2.x (its
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
//! # Layout
//!
//! The graph is padded to a fixed width per column (`dc`, the largest column weight) and per
//! row (`dr`, the largest row weight), so each pass walks fixed-width chunks of flat arrays
//! instead of slicing ragged ranges. Messages live in *slots*: column `c` owns `dc` slots, its
//! real edges first (ascending row), then padding; each row lists `dr` slots, its real edges
//! first (ascending column), then the shared padding slot `n·dc`.
//!
//! - **Flooding** (parallel) lays the slots out slot-major — slot `k` of column `c` at
//!   `k·n + c` — and runs two passes per iteration: a check pass that gathers each row's
//!   inputs and scatters its messages, and a bit pass over contiguous memory, one slot index
//!   of every column at a time, so its adds run two columns at a time (SSE2; an IEEE add per
//!   lane is the scalar add).
//! - **Serial** lays them out column-major (`c·dc + k`) with the columns in an order that
//!   keeps neighbouring columns apart.
//!
//! The padding is chosen so that it changes no floating-point result:
//!
//! - a padding slot of a column receives the message `±0.0`, and `x + ±0.0 == x` (up to the
//!   sign of a zero sum, which neither `≤ 0` nor `abs` can see);
//! - the shared padding slot that rows read holds `f64::MAX` for min-sum (never below a
//!   running minimum, which starts at `f64::MAX`; never `≤ 0`) and `+∞` for product-sum
//!   (`tanh(+∞/2) = 1.0`, and `x · 1.0 == x`).
//!
//! All arrays are allocated at construction.

use std::fmt;
use std::ops::BitXor;
use std::str::FromStr;

use crate::bitmat::BitMatrix;
use crate::error::DecoderError;
use crate::sparse::SparseMatrix;

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
                "unknown BP method \"{}\" (expected minimum_sum or product_sum)",
                crate::io::excerpt(s)
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
                "unknown BP schedule \"{}\" (expected parallel or serial)",
                crate::io::excerpt(s)
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

/// A direct-mapped memo of a pure function of one `f64`, keyed on the argument's bits: a hit
/// returns exactly what the function returned for those bits. Every entry starts as the
/// function's value at `+0.0`, so there is no "empty" state to get wrong.
#[derive(Debug, Clone)]
struct Memo {
    keys: Vec<u64>,
    values: Vec<f64>,
}

impl Memo {
    const BITS: u32 = 10;

    fn new(f: fn(f64) -> f64) -> Memo {
        Memo {
            keys: vec![0; 1 << Self::BITS],
            values: vec![f(0.0); 1 << Self::BITS],
        }
    }

    #[inline(always)]
    fn get(&mut self, x: f64, f: fn(f64) -> f64) -> f64 {
        let bits = x.to_bits();
        let i = (bits.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - Self::BITS)) as usize;
        if self.keys[i] == bits {
            self.values[i]
        } else {
            let y = f(x);
            self.keys[i] = bits;
            self.values[i] = y;
            y
        }
    }
}

/// The Tanner graph, padded to fixed widths (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct TannerGraph {
    pub(crate) m: usize,
    pub(crate) n: usize,
    /// Slots per column: the largest column weight (at least 1).
    pub(crate) dc: usize,
    /// Slots per row: the largest row weight (at least 1).
    pub(crate) dr: usize,
    /// Real edges of each column.
    pub(crate) col_deg: Vec<u32>,
    /// Row of each column slot (`n·dc` entries); `m` for padding.
    pub(crate) slot_row: Vec<u32>,
    /// Column slots of each row (`m·dr` entries); the shared padding slot `n·dc` pads.
    pub(crate) row_slots: Vec<u32>,
    /// Real edges of each row.
    pub(crate) row_deg: Vec<u32>,
    /// Internal column `i` is column `order[i]` of the matrix; `position` is the inverse.
    pub(crate) order: Vec<u32>,
    pub(crate) position: Vec<u32>,
    /// Slot layout: slot `k` of internal column `c` is `k·n + c` (the flooding schedule's,
    /// "slot-major", so that a pass over one slot index of every column runs over contiguous
    /// memory) or `c·dc + k` (the serial schedule's, "column-major").
    pub(crate) slot_major: bool,
    /// The padding slots of the columns (slot `k ≥ col_deg[c]`), ascending.
    pub(crate) pad_slots: Vec<u32>,
}

/// An order to visit the columns in so that columns visited close together share no check
/// (within a window of `WINDOW` steps, when possible), taking the lowest eligible index each
/// step. In the flooding schedule every column's update is independent of the order, and
/// the per-check summaries it feeds are order-independent too; visiting neighbours apart
/// keeps consecutive read-modify-writes of one check's record out of each other's way.
pub(crate) fn visiting_order(h: &SparseMatrix) -> Vec<u32> {
    const WINDOW: usize = 4;
    const SCAN: usize = 64;
    let (m, n) = (h.rows(), h.cols());
    let mut last_used = vec![usize::MAX; m];
    let mut visited = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut first = 0;
    for step in 0..n {
        while visited[first] {
            first += 1;
        }
        let clear = |c: usize| {
            h.col(c).iter().all(|&r| {
                let r = r as usize;
                last_used[r] == usize::MAX || step - last_used[r] > WINDOW
            })
        };
        let pick = (first..n)
            .filter(|&c| !visited[c])
            .take(SCAN)
            .find(|&c| clear(c))
            .unwrap_or(first);
        visited[pick] = true;
        for &r in h.col(pick) {
            last_used[r as usize] = step;
        }
        order.push(pick as u32);
    }
    order
}

impl TannerGraph {
    /// The graph of `h`, in the slot-major layout of the flooding schedule (`slot_major`,
    /// columns in matrix order) or the column-major layout of the serial schedule (columns
    /// in [`visiting_order`]).
    pub(crate) fn new(h: &SparseMatrix, slot_major: bool) -> Result<TannerGraph, DecoderError> {
        let (m, n) = (h.rows(), h.cols());
        if n == 0 {
            return Err(DecoderError::Matrix("the checks have no columns".into()));
        }
        let dc = (0..n).map(|c| h.col_weight(c)).max().unwrap_or(0).max(1);
        let dr = h.row_weights().into_iter().max().unwrap_or(0).max(1) as usize;
        let slots = n
            .checked_mul(dc)
            .filter(|&s| s < u32::MAX as usize && m < u32::MAX as usize)
            .ok_or_else(|| {
                DecoderError::Matrix(format!("{n} columns of weight {dc} overflow 32-bit slots"))
            })?;
        let pad = slots as u32;
        let order = if slot_major {
            (0..n as u32).collect()
        } else {
            visiting_order(h)
        };
        let mut position = vec![0u32; n];
        for (i, &c) in order.iter().enumerate() {
            position[c as usize] = i as u32;
        }
        let mut col_deg = vec![0u32; n];
        let mut slot_row = vec![m as u32; slots];
        let mut row_slots = vec![pad; m * dr];
        let mut row_deg = vec![0u32; m];
        for (c, &i) in position.iter().enumerate() {
            let i = i as usize;
            for &r in h.col(c) {
                let r = r as usize;
                let k = col_deg[i] as usize;
                let slot = if slot_major { k * n + i } else { i * dc + k };
                slot_row[slot] = r as u32;
                col_deg[i] += 1;
                // Matrix columns are visited in ascending order, so each row's slots come out
                // in ascending column order (the order of `ldpc`'s row products).
                row_slots[r * dr + row_deg[r] as usize] = slot as u32;
                row_deg[r] += 1;
            }
        }
        let mut pad_slots: Vec<u32> = (0..n)
            .flat_map(|c| {
                let deg = col_deg[c] as usize;
                (deg..dc).map(move |k| if slot_major { k * n + c } else { c * dc + k } as u32)
            })
            .collect();
        pad_slots.sort_unstable();
        Ok(TannerGraph {
            m,
            n,
            dc,
            dr,
            col_deg,
            slot_row,
            row_slots,
            row_deg,
            order,
            position,
            slot_major,
            pad_slots,
        })
    }

    /// Slot `k` of internal column `c`.
    #[inline]
    pub(crate) fn slot(&self, c: usize, k: usize) -> usize {
        if self.slot_major {
            k * self.n + c
        } else {
            c * self.dc + k
        }
    }

    /// Message slots, including the shared padding slot.
    pub(crate) fn slots(&self) -> usize {
        self.n * self.dc + 1
    }

    /// The real slots of internal column `c` (column-major layout only).
    #[inline]
    pub(crate) fn col(&self, c: usize) -> std::ops::Range<usize> {
        debug_assert!(!self.slot_major);
        c * self.dc..c * self.dc + self.col_deg[c] as usize
    }

    /// The real slots of row `r`.
    #[inline]
    pub(crate) fn row(&self, r: usize) -> &[u32] {
        &self.row_slots[r * self.dr..r * self.dr + self.row_deg[r] as usize]
    }
}

/// `tanh(x)` as glibc computes it. For `|x| ≥ 22` glibc returns `±(1 − tiny)`, which rounds to
/// `±1.0`; answering that without the call gives the same bits and skips the costliest part of
/// product-sum when messages saturate.
#[inline]
fn tanh(x: f64) -> f64 {
    if x.abs() >= 22.0 {
        1.0f64.copysign(x)
    } else {
        x.tanh()
    }
}

/// `ln((1 + x)/(1 − x))`, with the saturated ends answered directly (`ln(2/0) = +∞`,
/// `ln(0/2) = −∞`, the values the division and `ln` produce).
#[inline]
fn log_ratio(x: f64) -> f64 {
    if x == 1.0 {
        f64::INFINITY
    } else if x == -1.0 {
        f64::NEG_INFINITY
    } else {
        ((1.0 + x) / (1.0 - x)).ln()
    }
}

/// The largest iteration limit a decoder takes (2^20 = 1,048,576): BP's `max_iter` (its
/// default, the number of bits, is capped here too) and Relay-BP's legs together
/// (`pre_iter + num_sets · set_max_iter`). A decode that does not converge therefore ends,
/// whatever a caller asks for.
pub const MAX_ITER: usize = 1 << 20;

/// `expected` of the [`DecoderError::Setting`] for a `max_iter` above [`MAX_ITER`].
pub const MAX_ITER_RANGE: &str = "0 (the number of bits) or 1..=1048576";

/// The fewest shots [`BpDecoder::decode_many`] runs on the lanes kernel: below, one by one is
/// faster (most lanes would idle).
pub const MIN_LANES_BATCH: usize = 4;

/// Checks a `max_iter` against [`MAX_ITER`].
pub(crate) fn check_max_iter(max_iter: usize) -> Result<(), DecoderError> {
    if max_iter > MAX_ITER {
        return Err(DecoderError::Setting {
            name: "max_iter",
            value: max_iter as f64,
            expected: MAX_ITER_RANGE,
        });
    }
    Ok(())
}

/// The arithmetic of BP's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// Double precision in `ldpc`'s order of operations: `ldpc`'s messages bit for bit (the
    /// drop-in's and the offline default).
    #[default]
    F64,
    /// Single precision in the SIMD layout of [`crate::bp32`] (min-sum, flooding; product-sum
    /// and the serial schedule run at `f64`): several times faster, its logical error rate the
    /// `f64` path's within statistics, its messages not `ldpc`'s bit for bit.
    F32,
}

impl FromStr for Precision {
    type Err = String;

    /// Accepts `f64` (`double`) and `f32` (`single`, `float`), any case.
    fn from_str(s: &str) -> Result<Precision, String> {
        match s.to_ascii_lowercase().as_str() {
            "f64" | "double" => Ok(Precision::F64),
            "f32" | "single" | "float" => Ok(Precision::F32),
            _ => Err(format!(
                "unknown precision \"{}\" (expected f64 or f32)",
                crate::io::excerpt(s)
            )),
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Precision::F64 => "f64",
            Precision::F32 => "f32",
        })
    }
}

/// Settings of belief propagation, named as in `ldpc`.
#[derive(Debug, Clone, PartialEq)]
pub struct BpSettings {
    /// Check-node rule.
    pub bp_method: BpMethod,
    /// Maximum iterations, at most [`MAX_ITER`]; 0 means `n` (the number of bits), as in
    /// `ldpc`, capped at [`MAX_ITER`].
    pub max_iter: usize,
    /// Min-sum scaling factor α (messages are multiplied by α); 0 selects `1 − 2^−it`.
    pub ms_scaling_factor: f64,
    /// Update schedule.
    pub schedule: Schedule,
    /// The messages' arithmetic (default `f64`, `ldpc`'s bit for bit). `f32` runs min-sum
    /// flooding on the SIMD kernel of [`crate::bp32`]; with product-sum or the serial
    /// schedule it has no effect.
    pub precision: Precision,
}

impl BpSettings {
    /// Whether these settings run on the `f32` kernel.
    pub fn runs_f32(&self) -> bool {
        self.precision == Precision::F32
            && self.bp_method == BpMethod::MinimumSum
            && self.schedule == Schedule::Parallel
    }
}

impl Default for BpSettings {
    /// `ldpc`'s `BpOsdDecoder` defaults: min-sum, α = 1.0, parallel, `max_iter` = n, `f64`.
    fn default() -> BpSettings {
        BpSettings {
            bp_method: BpMethod::MinimumSum,
            max_iter: 0,
            ms_scaling_factor: 1.0,
            schedule: Schedule::Parallel,
            precision: Precision::F64,
        }
    }
}

/// The min-sum scaling factor α at iteration `t` (1-based): `factor` itself, or for
/// `factor = 0` the ramp `1 − 2^(−t/ramp)` (`ldpc`'s adaptive factor with `ramp = 1`;
/// Relay-BP's `alpha_iteration_scaling_factor`). One rule for [`BpDecoder`] and
/// [`crate::relay::RelayBpDecoder`].
#[inline]
pub(crate) fn scaling_factor(factor: f64, t: usize, ramp: f64) -> f64 {
    if factor == 0.0 {
        1.0 - 2f64.powf(-(t as f64) / ramp)
    } else {
        factor
    }
}

/// Adds an input's magnitude, as IEEE bits `a`, to a check's two smallest: `min1 ≤ min2`, both
/// `min1` when it occurs twice. (For non-negative floats the unsigned order of the bits is the
/// float order.) Shared by the min-sum check pass here and Relay-BP's checks.
#[inline(always)]
pub(crate) fn push_magnitude<U: Ord + Copy>(min1: &mut U, min2: &mut U, a: U) {
    *min2 = (*min2).min((*min1).max(a));
    *min1 = (*min1).min(a);
}

/// The bits of the min-sum message a check sends to the input whose magnitude bits are `a`:
/// the scaled smallest magnitude of the *other* inputs — `m2` (α·min2) to the input that holds
/// `min1`, `m1` (α·min1) to the rest (either is right for a tie) — with the sign bits `sign`
/// (the parity of the syndrome bit and the other inputs) applied. Shared by the min-sum check
/// pass here and Relay-BP's mechanism pass.
#[inline(always)]
pub(crate) fn message_bits<U: Eq + Copy + BitXor<Output = U>>(
    a: U,
    min1: U,
    m1: U,
    m2: U,
    sign: U,
) -> U {
    (if a == min1 { m2 } else { m1 }) ^ sign
}

/// Mask of an `f64`'s magnitude bits.
const ABS: u64 = !(1u64 << 63);

/// `f64::MAX` as bits: the empty minimum.
const MAX_BITS: u64 = 0x7FEF_FFFF_FFFF_FFFF;

/// The min-sum check pass of the flooding schedule over every row, for a fixed row width `W`
/// (the inner loops unroll and the row's inputs stay in registers) or, with `W = 0`, the
/// graph's own width.
///
/// Each row gathers its inputs and keeps, as IEEE bit patterns of the magnitudes (for
/// non-negative floats the unsigned order of the bits is the float order, and a NaN magnitude
/// sorts above every number, so it never becomes a minimum — as NaN never passes `ldpc`'s `<`
/// test), the smallest `min1` and the second smallest `min2` (equal to `min1` when it occurs
/// twice), and the parity of the syndrome bit and the inputs `≤ 0`. It then scatters to each
/// input's slot `α·min` over the others — `α·min2` for the input whose magnitude is `min1`,
/// `α·min1` for the rest (either is right for a tie) — with the sign of the others' parity.
/// `ldpc` forms a message as `magnitude · (±α)`; IEEE multiplication rounds the magnitude of a
/// product independently of its sign, so `±(magnitude · α)` is the same number.
///
/// The shared padding slot that pads rows holds `f64::MAX`: never below a running minimum
/// (which starts at `f64::MAX`), never `≤ 0`, so it changes no summary; what is scattered to
/// it is never read.
fn checks_min_sum<const W: usize>(
    g: &TannerGraph,
    syndrome: &[u8],
    b2c: &[f64],
    c2b: &mut [f64],
    alpha: f64,
) {
    let width = if W == 0 { g.dr } else { W };
    // Per input of the row (unrolled widths): its magnitude's bits and the sign bit of
    // `v ≤ 0`.
    let mut mags = [0u64; 8];
    let mut negs = [0u64; 8];
    for ((slots, &s), &deg) in g
        .row_slots
        .chunks_exact(width)
        .zip(syndrome)
        .zip(&g.row_deg)
    {
        // Unrolled rows run over their padding too (the shared padding slot changes nothing);
        // the others stop at their real inputs.
        let slots = if W == 0 {
            &slots[..deg as usize]
        } else {
            slots
        };
        let (mut min1, mut min2, mut parity) = (MAX_BITS, MAX_BITS, (s as u64) << 63);
        if W == 0 {
            for &e in slots {
                let v = b2c[e as usize];
                parity ^= ((v <= 0.0) as u64) << 63;
                push_magnitude(&mut min1, &mut min2, v.to_bits() & ABS);
            }
        } else {
            for ((&e, mag), neg) in slots.iter().zip(&mut mags).zip(&mut negs) {
                let v = b2c[e as usize];
                *neg = ((v <= 0.0) as u64) << 63;
                parity ^= *neg;
                let a = v.to_bits() & ABS;
                *mag = a;
                push_magnitude(&mut min1, &mut min2, a);
            }
        }
        let (s1, s2) = (
            (f64::from_bits(min1) * alpha).to_bits(),
            (f64::from_bits(min2) * alpha).to_bits(),
        );
        if W == 0 {
            for &e in slots {
                let v = b2c[e as usize];
                let own = ((v <= 0.0) as u64) << 63;
                c2b[e as usize] =
                    f64::from_bits(message_bits(v.to_bits() & ABS, min1, s1, s2, parity ^ own));
            }
        } else {
            for ((&e, &a), &own) in slots.iter().zip(&mags).zip(&negs) {
                c2b[e as usize] = f64::from_bits(message_bits(a, min1, s1, s2, parity ^ own));
            }
        }
    }
    // A column's padding slot belongs to no row: it receives `±0.0`, the sign that of its own
    // outgoing message (what a row with no inputs and a zero summary sends), which changes
    // no sum except the sign of a zero one.
    for &e in &g.pad_slots {
        c2b[e as usize] = f64::from_bits(((b2c[e as usize] <= 0.0) as u64) << 63);
    }
}

/// Product-sum check update: `(−1)^s · ln((1 + x)/(1 − x))`, `x` the product of the other
/// inputs' `tanh(v/2)` taken as (product before) × (product after, accumulated backwards).
/// The shared padding slot holds `+∞` (`tanh(+∞/2) = 1.0`, and `x · 1.0 == x`).
fn checks_product_sum(
    g: &TannerGraph,
    syndrome: &[u8],
    b2c: &[f64],
    c2b: &mut [f64],
    scratch: &mut [f64],
    memo: &mut [Memo; 2],
) {
    let [tanh_memo, log_memo] = memo;
    let (ts, prefix) = scratch.split_at_mut(g.dr);
    for (r, &s) in syndrome.iter().enumerate() {
        // The real inputs only: the padding's factor is `tanh(+∞/2) = 1.0`, and `x · 1.0 == x`.
        let slots = g.row(r);
        let mut acc = 1.0f64;
        for ((&e, t), pre) in slots.iter().zip(ts.iter_mut()).zip(prefix.iter_mut()) {
            *t = tanh_memo.get(b2c[e as usize] / 2.0, tanh);
            *pre = acc;
            acc *= *t;
        }
        let sign = if s != 0 { -1.0 } else { 1.0 };
        let mut acc = 1.0f64;
        for ((&e, &t), &pre) in slots.iter().zip(ts.iter()).zip(prefix.iter()).rev() {
            c2b[e as usize] = sign * log_memo.get(pre * acc, log_ratio);
            acc *= t;
        }
    }
}

/// The bit pass of the flooding schedule over every column, slot-major, for a fixed column
/// width `W` (or the graph's own with `W = 0`): the soft output `llr = prior + Σ messages`
/// summed in slot order, and each outgoing message = the forward partial sum before its slot
/// plus the later incoming messages accumulated backwards (`ldpc`'s order). A column's
/// padding slots carry `±0.0` and are summed like the others (`x + ±0.0 == x` up to the sign
/// of a zero sum, which neither `≤ 0` nor `abs` can see). Every step runs over the columns of
/// one slot index, contiguous in memory, so the adds run two columns at a time. Returns
/// whether any outgoing message's bits changed.
fn bits_pass<const W: usize>(
    n: usize,
    prior: &[f64],
    b2c: &mut [f64],
    c2b: &[f64],
    llr: &mut [f64],
    pre: &mut [f64],
    suffix: &mut [f64],
) -> bool {
    // `b2c` holds `dc` slots per column and the shared padding slot.
    let width = if W == 0 { (b2c.len() - 1) / n } else { W };
    llr.copy_from_slice(prior);
    for k in 0..width {
        let msg = &c2b[k * n..(k + 1) * n];
        let p = &mut pre[k * n..(k + 1) * n];
        for ((p, l), &m) in p.iter_mut().zip(llr.iter_mut()).zip(msg) {
            *p = *l;
            *l += m;
        }
    }
    suffix.fill(0.0);
    let mut changed = 0u64;
    for k in (0..width).rev() {
        let msg = &c2b[k * n..(k + 1) * n];
        let p = &pre[k * n..(k + 1) * n];
        let out = &mut b2c[k * n..(k + 1) * n];
        for (((o, &p), sfx), &m) in out.iter_mut().zip(p).zip(suffix.iter_mut()).zip(msg) {
            let v = p + *sfx;
            *sfx += m;
            changed |= v.to_bits() ^ o.to_bits();
            *o = v;
        }
    }
    changed != 0
}

/// Calls `$f::<W>(args)` with `W` the literal equal to `$width` when it is 1..=8, else with
/// `W = 0` (the graph's own width, not unrolled).
macro_rules! by_width {
    ($width:expr, $f:ident($($arg:expr),* $(,)?)) => {
        match $width {
            1 => $f::<1>($($arg),*),
            2 => $f::<2>($($arg),*),
            3 => $f::<3>($($arg),*),
            4 => $f::<4>($($arg),*),
            5 => $f::<5>($($arg),*),
            6 => $f::<6>($($arg),*),
            7 => $f::<7>($($arg),*),
            8 => $f::<8>($($arg),*),
            _ => $f::<0>($($arg),*),
        }
    };
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
    /// Messages per slot.
    check_to_bit: Vec<f64>,
    bit_to_check: Vec<f64>,
    /// Per-slot `tanh(bit_to_check / 2)` (serial product-sum), and per-row scratch.
    tanh_half: Vec<f64>,
    row_scratch: Vec<f64>,
    /// Memos of `tanh` and of `ln((1 + x)/(1 − x))` (product-sum).
    memo: [Memo; 2],
    /// The bit-to-check messages every flooding decode starts from: the priors on real
    /// slots, `0.0` on padding slots, the check rule's neutral value on the shared one.
    initial_b2c: Vec<f64>,
    /// Forward partial sums per slot and backward sums per column (the flooding bit pass).
    pre: Vec<f64>,
    suffix: Vec<f64>,
    /// Soft output and hard decision in internal column order (work), and in matrix order.
    llr_internal: Vec<f64>,
    /// Each bit's least soft output so far, the prior included (internal order, work), and in
    /// matrix order; empty unless [`BpDecoder::track_min_llr`] turned it on.
    min_internal: Vec<f64>,
    min_llr: Vec<f64>,
    decision_internal: Vec<u8>,
    llr: Vec<f64>,
    decoding: Vec<u8>,
    syndrome: Vec<u8>,
    /// The hard decision's syndrome (0/1 per check; entry `m` collects padding).
    candidate: Vec<u8>,
    converged: bool,
    iterations: usize,
    /// The last decode stopped early at an exact fixed point (see [`BpDecoder::fixed_point`]).
    fixed_point: bool,
    /// Stop iterating at this instant ([`BpDecoder::set_deadline`]).
    deadline: Option<std::time::Instant>,
    /// The `f32` kernel, when the settings run on it ([`BpSettings::runs_f32`]).
    fast: Option<Box<crate::bp32::MinSum32>>,
    /// Its lanes-across-shots twin for [`BpDecoder::decode_many`], made at the first batch
    /// that uses it.
    lanes: Option<Box<crate::bp32_lanes::MinSum32Lanes>>,
    /// The last decode stopped at the deadline.
    deadline_hit: bool,
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
        BpDecoder::from_sparse(
            &SparseMatrix::from_dense(h),
            error_rate,
            error_channel,
            settings,
        )
    }

    /// [`BpDecoder::new`] for checks in sparse form (the same decoder, built without a dense
    /// matrix: for the check matrices of detector error models).
    pub fn from_sparse(
        h: &SparseMatrix,
        error_rate: f64,
        error_channel: Option<&[f64]>,
        settings: BpSettings,
    ) -> Result<BpDecoder, DecoderError> {
        check_max_iter(settings.max_iter)?;
        let graph = TannerGraph::new(h, settings.schedule == Schedule::Parallel)?;
        let channel = validate_channel(graph.n, error_rate, error_channel)?;
        if !(settings.ms_scaling_factor.is_finite() && settings.ms_scaling_factor >= 0.0) {
            return Err(DecoderError::ScalingFactor(settings.ms_scaling_factor));
        }
        // In internal column order.
        let prior_llr: Vec<f64> = graph
            .order
            .iter()
            .map(|&c| {
                let p = channel[c as usize];
                ((1.0 - p) / p).ln()
            })
            .collect();
        let slots = graph.slots();
        let (m, n) = (graph.m, graph.n);
        let max_iter = if settings.max_iter == 0 {
            n.min(MAX_ITER)
        } else {
            settings.max_iter
        };
        let mut initial_b2c = vec![0.0; slots];
        for c in 0..n {
            for k in 0..graph.col_deg[c] as usize {
                initial_b2c[graph.slot(c, k)] = prior_llr[c];
            }
        }
        let fast = if settings.runs_f32() {
            let priors: Vec<f64> = channel.iter().map(|&p| ((1.0 - p) / p).ln()).collect();
            Some(Box::new(crate::bp32::MinSum32::new(
                h,
                &priors,
                crate::simd::kernel(),
            )?))
        } else {
            None
        };
        initial_b2c[slots - 1] = match settings.bp_method {
            BpMethod::MinimumSum => f64::MAX,
            BpMethod::ProductSum => f64::INFINITY,
        };
        Ok(BpDecoder {
            row_scratch: vec![0.0; 2 * graph.dr.max(graph.dc)],
            graph,
            settings,
            max_iter,
            channel,
            prior_llr,
            check_to_bit: vec![0.0; slots],
            bit_to_check: vec![0.0; slots],
            tanh_half: vec![0.0; slots],
            initial_b2c,
            pre: vec![0.0; slots],
            suffix: vec![0.0; n],
            memo: [Memo::new(tanh), Memo::new(log_ratio)],
            llr_internal: vec![0.0; n],
            min_internal: Vec::new(),
            min_llr: Vec::new(),
            decision_internal: vec![0; n],
            llr: vec![0.0; n],
            decoding: vec![0; n],
            syndrome: vec![0; m],
            candidate: vec![0; m + 1],
            converged: false,
            iterations: 0,
            fixed_point: false,
            deadline: None,
            deadline_hit: false,
            fast,
            lanes: None,
        })
    }

    /// Stop the following decodes' iterations at `deadline` (`None`: run to `max_iter`): a
    /// decode that reaches it keeps the soft output and hard decision of its last complete
    /// iteration (at least one), and says so ([`BpDecoder::deadline_hit`]).
    pub fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.deadline = deadline;
    }

    /// Whether the last decode stopped at its deadline.
    pub fn deadline_hit(&self) -> bool {
        self.deadline_hit
    }

    /// Whether iteration `it` (1-based) must not start: past the first, at the deadline.
    #[inline]
    fn past_deadline(&mut self, it: usize) -> bool {
        if let Some(d) = self.deadline
            && it > 1
            && std::time::Instant::now() >= d
        {
            self.deadline_hit = true;
            return true;
        }
        false
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

    /// The iteration limit in force (`max_iter`, or `n` when it was 0, at most [`MAX_ITER`]).
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

    /// Whether the last decode, without converging, reached a state where every message was
    /// bit-for-bit the same as one iteration before. Every further iteration would repeat it,
    /// so the decoder stopped there and reports `max_iter` iterations with that iteration's
    /// soft output — exactly what running them all gives. (Not used with the adaptive
    /// min-sum factor, which changes every iteration.)
    pub fn fixed_point(&self) -> bool {
        self.fixed_point
    }

    /// The soft output of the last decode: per-bit log-likelihood ratios `ln(P(0)/P(1))`.
    pub fn log_prob_ratios(&self) -> &[f64] {
        &self.llr
    }

    /// The hard decision of the last decode (0/1 per bit).
    pub fn decoding(&self) -> &[u8] {
        &self.decoding
    }

    /// Keep, from the next decode on, each bit's least soft output over its channel prior and
    /// every iteration's ([`BpDecoder::min_log_prob_ratios`]); one comparison per bit and
    /// iteration. Off by default.
    pub fn track_min_llr(&mut self, on: bool) {
        let n = if on { self.graph.n } else { 0 };
        self.min_internal = vec![0.0; n];
        self.min_llr = vec![0.0; n];
        if let Some(k) = &mut self.fast {
            k.track_min_llr(on);
        }
    }

    /// Each bit's least log-likelihood ratio of the last decode: the minimum of its channel
    /// prior and the soft output after every iteration run (OSD's `min_llr` order). Empty unless
    /// [`BpDecoder::track_min_llr`] is on.
    pub fn min_log_prob_ratios(&self) -> &[f64] {
        &self.min_llr
    }

    /// Folds the soft output of the iteration just run into the running minimum.
    #[inline]
    fn fold_min(&mut self) {
        for (m, &l) in self.min_internal.iter_mut().zip(&self.llr_internal) {
            if l < *m {
                *m = l;
            }
        }
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
        if self.fast.is_some() {
            self.run_f32(syndrome);
            return Ok(&self.decoding);
        }
        for (d, &s) in self.syndrome.iter_mut().zip(syndrome) {
            *d = (s != 0) as u8;
        }
        match self.settings.schedule {
            Schedule::Parallel => self.run_parallel(),
            Schedule::Serial => self.run_serial(),
        }
        for (&c, &l) in self.graph.order.iter().zip(&self.llr_internal) {
            self.llr[c as usize] = l;
            self.decoding[c as usize] = (l <= 0.0) as u8;
        }
        for (&c, &l) in self.graph.order.iter().zip(&self.min_internal) {
            self.min_llr[c as usize] = l;
        }
        Ok(&self.decoding)
    }

    /// Decodes shots `0..shots` as [`BpDecoder::decode`] decodes each, with the same results.
    /// `load(shot, syndrome)` writes shot `shot`'s syndrome (0/1 per check; any non-zero byte
    /// is 1) and says whether to decode it; `done(shot, result)` takes every shot once: one
    /// not to be decoded at once with `None`, a decoded one with this decoder holding its
    /// results ([`BpDecoder::converged`], [`BpDecoder::iterations`], the soft output, the hard
    /// decision) and its syndrome (0/1 per check).
    ///
    /// At `precision = f32` (min-sum, flooding, no deadline) and from [`MIN_LANES_BATCH`]
    /// shots, the shots run [`crate::bp32_lanes::SHOT_LANES`] at a time on the lanes kernel
    /// ([`crate::bp32_lanes`]), and `done` takes them in the order they finish, each exactly
    /// as [`BpDecoder::decode`] would have left it. Otherwise they run one by one, in order.
    /// Memory is the model's whatever `shots` is. The first error of a callback ends the call.
    pub fn decode_many<E: From<DecoderError>>(
        &mut self,
        shots: usize,
        mut load: impl FnMut(usize, &mut [u8]) -> Result<bool, E>,
        mut done: impl FnMut(usize, Option<(&BpDecoder, &[u8])>) -> Result<(), E>,
    ) -> Result<(), E> {
        if let Some(mut lanes) = self.take_lanes(shots) {
            let ms = self.settings.ms_scaling_factor;
            let r = lanes.decode_many(
                shots,
                self.max_iter,
                |it| scaling_factor(ms, it, 1.0) as f32,
                &mut load,
                |shot, result| {
                    let Some((outcome, lane)) = result else {
                        return done(shot, None);
                    };
                    lane.soft_output(&mut self.llr);
                    if !self.min_llr.is_empty() {
                        lane.min_soft_output(&mut self.min_llr);
                    }
                    for (d, &l) in self.decoding.iter_mut().zip(&self.llr) {
                        *d = (l <= 0.0) as u8;
                    }
                    lane.syndrome(&mut self.syndrome);
                    self.converged = outcome.converged;
                    self.iterations = outcome.iterations;
                    self.deadline_hit = false;
                    self.fixed_point = false;
                    let syndrome = std::mem::take(&mut self.syndrome);
                    let r = done(shot, Some((&*self, &syndrome)));
                    self.syndrome = syndrome;
                    r
                },
            );
            self.lanes = Some(lanes);
            return r;
        }
        let mut syndrome = vec![0u8; self.graph.m];
        for shot in 0..shots {
            if load(shot, &mut syndrome)? {
                self.decode(&syndrome)?;
                done(shot, Some((&*self, &syndrome)))?;
            } else {
                done(shot, None)?;
            }
        }
        Ok(())
    }

    /// The lanes kernel, out of `self` for a batch of `shots`, when the batch runs on it (see
    /// [`BpDecoder::decode_many`]): made the first time; a model too large for it (or memory
    /// refused) leaves the batch to the one-shot path.
    fn take_lanes(&mut self, shots: usize) -> Option<Box<crate::bp32_lanes::MinSum32Lanes>> {
        let fast = self.fast.as_ref()?;
        if shots < MIN_LANES_BATCH || self.deadline.is_some() {
            return None;
        }
        let mut lanes = match self.lanes.take() {
            Some(l) => l,
            None => Box::new(
                crate::bp32_lanes::MinSum32Lanes::like(fast, crate::simd::lanes_kernel()).ok()?,
            ),
        };
        let track = !self.min_llr.is_empty();
        if lanes.min_llr.is_empty() == track {
            lanes.track_min_llr(track);
        }
        Some(lanes)
    }

    /// The `f32` kernel's decode: its soft output (and least soft output) widened into the
    /// `f64` outputs in matrix order, the hard decision from it.
    fn run_f32(&mut self, syndrome: &[u8]) {
        let ms = self.settings.ms_scaling_factor;
        let deadline = self.deadline;
        let mut hit = false;
        let k = self.fast.as_mut().expect("the f32 kernel");
        let (converged, iterations) = k.decode(
            syndrome,
            self.max_iter,
            |it| scaling_factor(ms, it, 1.0) as f32,
            |_| {
                hit = deadline.is_some_and(|d| std::time::Instant::now() >= d);
                hit
            },
        );
        k.soft_output(&mut self.llr);
        if !self.min_llr.is_empty() {
            k.min_soft_output(&mut self.min_llr);
        }
        for (d, &l) in self.decoding.iter_mut().zip(&self.llr) {
            *d = (l <= 0.0) as u8;
        }
        self.converged = converged;
        self.iterations = iterations;
        self.deadline_hit = hit;
        self.fixed_point = false;
    }

    /// `α` for iteration `it` (1-based).
    #[inline]
    fn alpha(&self, it: usize) -> f64 {
        scaling_factor(self.settings.ms_scaling_factor, it, 1.0)
    }

    /// Every real slot's bit-to-check message starts at its bit's prior; padding slots of
    /// columns carry zeros (and so do their check-to-bit messages, which the product-sum and
    /// serial passes never write), the shared padding slot the neutral value of the check rule.
    fn initialise(&mut self) {
        self.bit_to_check.copy_from_slice(&self.initial_b2c);
        if !self.graph.slot_major {
            for &e in &self.graph.pad_slots {
                self.check_to_bit[e as usize] = 0.0;
            }
        }
        self.converged = false;
        self.iterations = 0;
        self.deadline_hit = false;
        self.fixed_point = false;
        if !self.min_internal.is_empty() {
            self.min_internal.copy_from_slice(&self.prior_llr);
        }
    }

    /// Whether the hard decision's syndrome equals the syndrome.
    #[inline]
    fn candidate_matches(&self) -> bool {
        self.candidate[..self.graph.m] == self.syndrome[..]
    }

    /// The flooding schedule: per iteration a check pass (every check-to-bit message from the
    /// bit-to-check messages of the last), a bit pass (soft output and bit-to-check messages),
    /// then the hard decision's syndrome, from the columns whose soft output is `≤ 0`.
    fn run_parallel(&mut self) {
        self.initialise();
        let g = &self.graph;
        let (dr, dc, m, n) = (g.dr, g.dc, g.m, g.n);
        let ms = self.settings.ms_scaling_factor;
        let min_sum = self.settings.bp_method == BpMethod::MinimumSum;
        for it in 1..=self.max_iter {
            if self.past_deadline(it) {
                break;
            }
            let g = &self.graph;
            self.iterations = it;
            if min_sum {
                by_width!(
                    dr,
                    checks_min_sum(
                        g,
                        &self.syndrome,
                        &self.bit_to_check,
                        &mut self.check_to_bit,
                        scaling_factor(ms, it, 1.0)
                    )
                );
            } else {
                checks_product_sum(
                    g,
                    &self.syndrome,
                    &self.bit_to_check,
                    &mut self.check_to_bit,
                    &mut self.row_scratch,
                    &mut self.memo,
                );
            }
            let changed = by_width!(
                dc,
                bits_pass(
                    n,
                    &self.prior_llr,
                    &mut self.bit_to_check,
                    &self.check_to_bit,
                    &mut self.llr_internal,
                    &mut self.pre,
                    &mut self.suffix,
                )
            );
            self.fold_min();
            let g = &self.graph;
            self.candidate[..m].fill(0);
            for (c, &l) in self.llr_internal.iter().enumerate() {
                if l <= 0.0 {
                    for k in 0..g.col_deg[c] as usize {
                        self.candidate[g.slot_row[k * n + c] as usize] ^= 1;
                    }
                }
            }
            if self.candidate[..m] == self.syndrome[..] {
                self.converged = true;
                break;
            }
            if !changed && ms != 0.0 {
                // Every outgoing message is bit-for-bit what it was one iteration ago, and the
                // rule is the same (α fixed), so every later iteration repeats this one: its
                // soft output and hard decision are those of the last iteration.
                self.iterations = self.max_iter;
                self.fixed_point = true;
                break;
            }
        }
    }

    fn run_serial(&mut self) {
        self.initialise();
        if self.settings.bp_method == BpMethod::ProductSum {
            for (t, &b) in self.tanh_half.iter_mut().zip(&self.bit_to_check) {
                *t = tanh(b / 2.0);
            }
        }
        for it in 1..=self.max_iter {
            if self.past_deadline(it) {
                return;
            }
            let alpha = self.alpha(it);
            // Bit by bit in matrix column order (`ldpc`'s serial order).
            for c in 0..self.graph.n {
                self.serial_bit(self.graph.position[c] as usize, alpha);
            }
            self.iterations = it;
            self.fold_min();
            self.candidate.fill(0);
            for c in 0..self.graph.n {
                if self.decision_internal[c] == 1 {
                    for &r in &self.graph.slot_row[self.graph.col(c)] {
                        self.candidate[r as usize] ^= 1;
                    }
                }
            }
            if self.candidate_matches() {
                self.converged = true;
                return;
            }
        }
    }

    /// Serial update of internal column `c`: fresh check-to-bit messages on each of its edges from the
    /// checks' other current inputs, then its soft output and outgoing messages.
    fn serial_bit(&mut self, c: usize, alpha: f64) {
        let g = &self.graph;
        let range = g.col(c);
        let mut acc = self.prior_llr[c];
        for e in range.clone() {
            let r = g.slot_row[e] as usize;
            let msg = match self.settings.bp_method {
                BpMethod::MinimumSum => {
                    let mut parity = self.syndrome[r] as u32;
                    let mut min = f64::MAX;
                    for &o in g.row(r) {
                        if o as usize != e {
                            let v = self.bit_to_check[o as usize];
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
                    for &o in g.row(r) {
                        if o as usize != e {
                            x *= self.tanh_half[o as usize];
                        }
                    }
                    let sign = if self.syndrome[r] != 0 { -1.0 } else { 1.0 };
                    sign * log_ratio(x)
                }
            };
            self.check_to_bit[e] = msg;
            self.bit_to_check[e] = acc;
            acc += msg;
        }
        self.llr_internal[c] = acc;
        self.decision_internal[c] = (acc <= 0.0) as u8;
        let c2b = &self.check_to_bit[range.clone()];
        let b2c = &mut self.bit_to_check[range.clone()];
        let mut acc = 0.0f64;
        for (b, &m) in b2c.iter_mut().zip(c2b).rev() {
            *b += acc;
            acc += m;
        }
        if self.settings.bp_method == BpMethod::ProductSum {
            for (t, &b) in self.tanh_half[range].iter_mut().zip(b2c.iter()) {
                *t = tanh(b / 2.0);
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
        let h = SparseMatrix::from_dense(&BitMatrix::from_picture("11.\n.11").unwrap());
        // Column-major (serial schedule).
        let g = TannerGraph::new(&h, false).unwrap();
        assert_eq!((g.dc, g.dr, g.slots()), (2, 2, 7));
        // Column 1 shares check 0 with column 0, column 2 does not: visited 0, 2, 1.
        assert_eq!(g.order, vec![0, 2, 1]);
        assert_eq!(g.position, vec![0, 2, 1]);
        assert_eq!(g.col_deg, vec![1, 1, 2]);
        // Internal column slots: (column 0: row 0, pad), (column 2: row 1, pad),
        // (column 1: rows 0, 1).
        assert_eq!(g.slot_row, vec![0, 2, 1, 2, 0, 1]);
        // Each row's slots in matrix column order: row 1 = column 1 (slot 5), column 2 (slot 2).
        assert_eq!(g.row_slots, vec![0, 4, 5, 2]);
        assert_eq!(g.row(1), &[5, 2]);
        assert_eq!(g.col(2), 4..6);
        assert_eq!(g.pad_slots, vec![1, 3]);
        // Slot-major (flooding schedule): matrix order, slot k of column c at k·n + c.
        let g = TannerGraph::new(&h, true).unwrap();
        assert_eq!(g.order, vec![0, 1, 2]);
        assert_eq!(g.slot_row, vec![0, 0, 1, 2, 1, 2]);
        assert_eq!(g.row_slots, vec![0, 1, 4, 2]);
        assert_eq!(g.pad_slots, vec![3, 5]);
        assert_eq!((g.slot(1, 1), g.slot(2, 0)), (4, 2));
        // When every column shares a check with every other, matrix order.
        let g = TannerGraph::new(
            &SparseMatrix::from_dense(&BitMatrix::from_picture("111").unwrap()),
            false,
        )
        .unwrap();
        assert_eq!(g.order, vec![0, 1, 2]);
    }

    #[test]
    fn saturated_shortcuts_match_libm() {
        for x in [
            22.0,
            22.5,
            40.0,
            1e300,
            f64::INFINITY,
            21.999,
            19.5,
            3.0,
            1e-20,
        ] {
            assert_eq!(tanh(x).to_bits(), x.tanh().to_bits(), "{x}");
            assert_eq!(tanh(-x).to_bits(), (-x).tanh().to_bits(), "{x}");
        }
        assert!(tanh(f64::NAN).is_nan());
        for x in [1.0, -1.0, 0.5, -0.25, 0.0] {
            assert_eq!(
                log_ratio(x).to_bits(),
                ((1.0 + x) / (1.0 - x)).ln().to_bits(),
                "{x}"
            );
        }
    }

    fn all_settings() -> Vec<BpSettings> {
        let mut v = Vec::new();
        for bp_method in [BpMethod::MinimumSum, BpMethod::ProductSum] {
            for schedule in [Schedule::Parallel, Schedule::Serial] {
                for precision in [Precision::F64, Precision::F32] {
                    v.push(BpSettings {
                        bp_method,
                        schedule,
                        max_iter: 10,
                        ms_scaling_factor: 0.625,
                        precision,
                    });
                }
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
