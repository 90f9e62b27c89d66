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
//! instead of slicing ragged ranges. Messages live in *slots*: column `c` owns slots
//! `c·dc .. c·dc + dc`, its real edges first (ascending row), then padding. Each row lists
//! `dr` slots, its real edges first (ascending column), then the shared padding slot `n·dc`.
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
}

/// An order to visit the columns in so that columns visited close together share no check
/// (within a window of `WINDOW` steps, when possible), taking the lowest eligible index each
/// step. In the flooding schedule every column's update is independent of the order, and
/// the per-check summaries it feeds are order-independent too; visiting neighbours apart
/// keeps consecutive read-modify-writes of one check's record out of each other's way.
fn visiting_order(h: &SparseMatrix) -> Vec<u32> {
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
    pub(crate) fn new(h: &SparseMatrix) -> Result<TannerGraph, DecoderError> {
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
        let order = visiting_order(h);
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
                let slot = i * dc + col_deg[i] as usize;
                slot_row[slot] = r as u32;
                col_deg[i] += 1;
                // Matrix columns are visited in ascending order, so each row's slots come out
                // in ascending column order (the order of `ldpc`'s row products).
                row_slots[r * dr + row_deg[r] as usize] = slot as u32;
                row_deg[r] += 1;
            }
        }
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
        })
    }

    /// Message slots, including the shared padding slot.
    pub(crate) fn slots(&self) -> usize {
        self.n * self.dc + 1
    }

    /// The real slots of internal column `c`.
    #[inline]
    pub(crate) fn col(&self, c: usize) -> std::ops::Range<usize> {
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

/// Mask of an `f64`'s magnitude bits.
const ABS: u64 = !(1u64 << 63);

/// Everything the min-sum passes keep per check, in one cache line: the summary that forms
/// this iteration's messages, and the accumulator of the next one's.
///
/// The summary: the smallest input magnitude `min1` as an `f64` bit pattern (for non-negative
/// floats the unsigned order of the bits is the float order, and a NaN magnitude sorts above
/// every number, so it never becomes a minimum — as NaN never passes `ldpc`'s `<` test); the
/// outgoing magnitudes `α·min1` and `α·min2` (`min2` the second smallest, equal to `min1` when
/// it occurs twice); and the parity of the syndrome bit plus the inputs `≤ 0`, as a sign bit.
///
/// The accumulator: the two smallest magnitudes and the parity of the inputs `≤ 0` as the bit
/// pass produces them (independent of their order), and the parity of the hard decisions on
/// the check's bits (the hard decision's syndrome).
#[derive(Debug, Clone, Copy)]
#[repr(align(64))]
struct Check {
    min1: u64,
    scaled1: f64,
    scaled2: f64,
    sign: u64,
    acc_min1: u64,
    acc_min2: u64,
    acc_parity: u64,
    flips: u64,
}

/// `f64::MAX` as bits: the empty minimum.
const MAX_BITS: u64 = 0x7FEF_FFFF_FFFF_FFFF;

impl Check {
    /// A check with a zero summary (its messages are `±0.0`: the padding row) and an empty
    /// accumulator.
    const PADDING: Check = Check {
        min1: 0,
        scaled1: 0.0,
        scaled2: 0.0,
        sign: 0,
        acc_min1: MAX_BITS,
        acc_min2: MAX_BITS,
        acc_parity: 0,
        flips: 0,
    };

    /// Adds one input to the accumulator.
    #[inline(always)]
    fn push(&mut self, v: f64) {
        self.acc_parity ^= (v <= 0.0) as u64;
        let a = v.to_bits() & ABS;
        self.acc_min2 = self.acc_min2.min(self.acc_min1.max(a));
        self.acc_min1 = self.acc_min1.min(a);
    }

    /// Turns the accumulator into the summary for factor `alpha` and empties it.
    #[inline(always)]
    fn roll(&mut self, syndrome_bit: u8, alpha: f64) {
        self.min1 = self.acc_min1;
        self.scaled1 = f64::from_bits(self.acc_min1) * alpha;
        self.scaled2 = f64::from_bits(self.acc_min2) * alpha;
        self.sign = (self.acc_parity ^ syndrome_bit as u64) << 63;
        self.acc_min1 = MAX_BITS;
        self.acc_min2 = MAX_BITS;
        self.acc_parity = 0;
        self.flips = 0;
    }
}

/// One bit's min-sum update over its slots: the incoming messages from the check summaries,
/// the soft output (returned), its hard decision's syndrome contribution, and the outgoing
/// messages, each also pushed into its check's accumulator. `changed` collects the bits that
/// differ between the old and new outgoing messages.
///
/// `ldpc` forms a message as `magnitude · (±α)`; IEEE multiplication rounds the magnitude of
/// a product independently of its sign, so `±(magnitude · α)` is the same number. Outgoing
/// message `k` is the forward partial sum before `k` plus the sum of the later incoming
/// messages accumulated backwards — `ldpc`'s order.
#[inline(always)]
fn bit_min_sum(
    prior: f64,
    b2c: &mut [f64],
    rows: &[u32],
    checks: &mut [Check],
    msg: &mut [f64],
    pre: &mut [f64],
    changed: &mut u64,
) -> f64 {
    let width = b2c.len();
    let mut sum = prior;
    for k in 0..width {
        let v = b2c[k];
        let c = &checks[rows[k] as usize];
        let sign = c.sign ^ ((v <= 0.0) as u64) << 63;
        let mag = if v.to_bits() & ABS == c.min1 {
            c.scaled2
        } else {
            c.scaled1
        };
        msg[k] = f64::from_bits(mag.to_bits() ^ sign);
        pre[k] = sum;
        sum += msg[k];
    }
    let flip = (sum <= 0.0) as u64;
    let mut suffix = 0.0f64;
    for k in (0..width).rev() {
        let out = pre[k] + suffix;
        suffix += msg[k];
        *changed |= out.to_bits() ^ b2c[k].to_bits();
        b2c[k] = out;
        let c = &mut checks[rows[k] as usize];
        c.flips ^= flip;
        c.push(out);
    }
    sum
}

/// One bit's flooding update from precomputed incoming messages: soft output (returned), its
/// syndrome contribution and the outgoing messages.
#[inline(always)]
fn bit_sum(
    prior: f64,
    b2c: &mut [f64],
    c2b: &[f64],
    rows: &[u32],
    candidate: &mut [u8],
    old: &mut [f64],
    changed: &mut u64,
) -> f64 {
    old.copy_from_slice(b2c);
    let mut acc = prior;
    for (b, &m) in b2c.iter_mut().zip(c2b) {
        *b = acc;
        acc += m;
    }
    finish_bit(acc, b2c, c2b, rows, candidate);
    for (b, o) in b2c.iter().zip(old.iter()) {
        *changed |= b.to_bits() ^ o.to_bits();
    }
    acc
}

/// The hard decision's syndrome contribution (branch-free) and the outgoing messages: each
/// slot's forward partial sum plus the sum of the later incoming messages, accumulated
/// backwards (`ldpc`'s order).
#[inline(always)]
fn finish_bit(llr: f64, b2c: &mut [f64], c2b: &[f64], rows: &[u32], candidate: &mut [u8]) {
    let flip = (llr <= 0.0) as u8;
    for &r in rows {
        candidate[r as usize] ^= flip;
    }
    let mut acc = 0.0f64;
    for (b, &m) in b2c.iter_mut().zip(c2b).rev() {
        *b += acc;
        acc += m;
    }
}

/// Product-sum check update: `(−1)^s · ln((1 + x)/(1 − x))`, `x` the product of the other
/// inputs' `tanh(v/2)` taken as (product before) × (product after, accumulated backwards).
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
    for (slots, &s) in g.row_slots.chunks_exact(g.dr).zip(syndrome) {
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

/// Pushes a check's inputs into its accumulator.
#[inline(always)]
fn push_row(c: &mut Check, slots: &[u32], b2c: &[f64]) {
    for &e in slots {
        c.push(b2c[e as usize]);
    }
}

/// The passes of the flooding schedule over the whole graph, for a fixed width `W` (the
/// inner loops unroll) or, with `W = 0`, the graph's own width.
struct Passes<'a> {
    g: &'a TannerGraph,
    prior: &'a [f64],
    syndrome: &'a [u8],
}

impl Passes<'_> {
    /// The first iteration's summaries, from the initial messages.
    fn checks_min_sum<const W: usize>(&self, b2c: &[f64], checks: &mut [Check], alpha: f64) {
        let rows = self.g.row_slots.chunks_exact(self.g.dr);
        for ((slots, c), &s) in rows.zip(checks.iter_mut()).zip(self.syndrome) {
            *c = Check::PADDING;
            if W == 0 {
                push_row(c, slots, b2c);
            } else {
                let slots: &[u32; W] = slots.try_into().expect("row width");
                push_row(c, slots, b2c);
            }
            c.roll(s, alpha);
        }
    }

    /// The min-sum bit pass over every column; returns whether any message changed.
    fn bits_min_sum<const W: usize>(
        &self,
        b2c: &mut [f64],
        checks: &mut [Check],
        llr: &mut [f64],
        scratch: &mut [f64],
    ) -> bool {
        let dc = self.g.dc;
        let mut changed = 0u64;
        let cols = b2c
            .chunks_exact_mut(dc)
            .zip(self.g.slot_row.chunks_exact(dc));
        for ((b, rows), (l, &prior)) in cols.zip(llr.iter_mut().zip(self.prior)) {
            *l = if W == 0 {
                let (msg, pre) = scratch.split_at_mut(dc);
                bit_min_sum(prior, b, rows, checks, msg, &mut pre[..dc], &mut changed)
            } else {
                let b: &mut [f64; W] = b.try_into().expect("column width");
                let rows: &[u32; W] = rows.try_into().expect("column width");
                let (mut msg, mut pre) = ([0.0f64; W], [0.0f64; W]);
                bit_min_sum(prior, b, rows, checks, &mut msg, &mut pre, &mut changed)
            };
        }
        changed != 0
    }

    fn bits_sum<const W: usize>(
        &self,
        b2c: &mut [f64],
        c2b: &[f64],
        llr: &mut [f64],
        candidate: &mut [u8],
        scratch: &mut [f64],
    ) -> bool {
        let dc = self.g.dc;
        let mut changed = 0u64;
        let cols = b2c
            .chunks_exact_mut(dc)
            .zip(c2b.chunks_exact(dc))
            .zip(self.g.slot_row.chunks_exact(dc));
        for (((b, m), rows), (l, &prior)) in cols.zip(llr.iter_mut().zip(self.prior)) {
            let out = if W == 0 {
                bit_sum(
                    prior,
                    b,
                    m,
                    rows,
                    candidate,
                    &mut scratch[..dc],
                    &mut changed,
                )
            } else {
                let b: &mut [f64; W] = b.try_into().expect("column width");
                let m: &[f64; W] = m.try_into().expect("column width");
                let rows: &[u32; W] = rows.try_into().expect("column width");
                bit_sum(prior, b, m, rows, candidate, &mut [0.0; W], &mut changed)
            };
            *l = out;
        }
        changed != 0
    }
}

/// Calls `$passes.$f::<W>(args)` with `W` the literal equal to `$width` when it is 1..=8, else
/// with `W = 0` (the graph's own width, not unrolled).
macro_rules! by_width {
    ($width:expr, $passes:expr, $f:ident($($arg:expr),* $(,)?)) => {
        match $width {
            1 => $passes.$f::<1>($($arg),*),
            2 => $passes.$f::<2>($($arg),*),
            3 => $passes.$f::<3>($($arg),*),
            4 => $passes.$f::<4>($($arg),*),
            5 => $passes.$f::<5>($($arg),*),
            6 => $passes.$f::<6>($($arg),*),
            7 => $passes.$f::<7>($($arg),*),
            8 => $passes.$f::<8>($($arg),*),
            _ => $passes.$f::<0>($($arg),*),
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
    /// Per-check min-sum state; entry `m` serves padding slots: its summary stays zero, so
    /// they receive `±0.0`.
    checks: Vec<Check>,
    /// Soft output and hard decision in internal column order (work), and in matrix order.
    llr_internal: Vec<f64>,
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
        let graph = TannerGraph::new(h)?;
        let channel = validate_channel(graph.n, error_rate, error_channel)?;
        if !(settings.ms_scaling_factor.is_finite() && settings.ms_scaling_factor >= 0.0) {
            return Err(DecoderError::ScalingFactor(settings.ms_scaling_factor));
        }
        // In internal column order.
        let prior_llr = graph
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
            n
        } else {
            settings.max_iter
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
            checks: vec![Check::PADDING; m + 1],
            memo: [Memo::new(tanh), Memo::new(log_ratio)],
            llr_internal: vec![0.0; n],
            decision_internal: vec![0; n],
            llr: vec![0.0; n],
            decoding: vec![0; n],
            syndrome: vec![0; m],
            candidate: vec![0; m + 1],
            converged: false,
            iterations: 0,
            fixed_point: false,
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
        for (&c, &l) in self.graph.order.iter().zip(&self.llr_internal) {
            self.llr[c as usize] = l;
            self.decoding[c as usize] = (l <= 0.0) as u8;
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

    /// Every real slot's bit-to-check message starts at its bit's prior; padding slots of
    /// columns carry zeros, the shared padding slot the neutral value of the check rule.
    fn initialise(&mut self) {
        let dc = self.graph.dc;
        for (c, (b2c, c2b)) in self
            .bit_to_check
            .chunks_exact_mut(dc)
            .zip(self.check_to_bit.chunks_exact_mut(dc))
            .enumerate()
        {
            let deg = self.graph.col_deg[c] as usize;
            b2c[..deg].fill(self.prior_llr[c]);
            b2c[deg..].fill(0.0);
            c2b[deg..].fill(0.0);
        }
        let pad = self.graph.slots() - 1;
        self.bit_to_check[pad] = match self.settings.bp_method {
            BpMethod::MinimumSum => f64::MAX,
            BpMethod::ProductSum => f64::INFINITY,
        };
        self.converged = false;
        self.iterations = 0;
        self.fixed_point = false;
    }

    /// Whether the hard decision's syndrome equals the syndrome.
    #[inline]
    fn candidate_matches(&self) -> bool {
        self.candidate[..self.graph.m] == self.syndrome[..]
    }

    fn run_parallel(&mut self) {
        self.initialise();
        let passes = Passes {
            g: &self.graph,
            prior: &self.prior_llr,
            syndrome: &self.syndrome,
        };
        let (dr, dc, m) = (self.graph.dr, self.graph.dc, self.graph.m);
        let ms = self.settings.ms_scaling_factor;
        let alpha = |it: usize| {
            if ms == 0.0 {
                1.0 - 2f64.powf(-(it as f64))
            } else {
                ms
            }
        };
        let min_sum = self.settings.bp_method == BpMethod::MinimumSum;
        if min_sum {
            let checks = &mut self.checks[..m];
            by_width!(
                dr,
                passes,
                checks_min_sum(&self.bit_to_check, checks, alpha(1))
            );
        }
        for it in 1..=self.max_iter {
            self.iterations = it;
            let changed = if min_sum {
                let changed = by_width!(
                    dc,
                    passes,
                    bits_min_sum(
                        &mut self.bit_to_check,
                        &mut self.checks,
                        &mut self.llr_internal,
                        &mut self.row_scratch,
                    )
                );
                // The hard decision's syndrome against the syndrome, and the summaries for the
                // next iteration.
                let next = alpha(it + 1);
                let mut mismatch = 0u64;
                for (c, &s) in self.checks.iter_mut().zip(passes.syndrome) {
                    mismatch |= c.flips ^ s as u64;
                    c.roll(s, next);
                }
                if mismatch == 0 {
                    self.converged = true;
                }
                changed
            } else {
                self.candidate.fill(0);
                checks_product_sum(
                    passes.g,
                    passes.syndrome,
                    &self.bit_to_check,
                    &mut self.check_to_bit,
                    &mut self.row_scratch,
                    &mut self.memo,
                );
                let changed = by_width!(
                    dc,
                    passes,
                    bits_sum(
                        &mut self.bit_to_check,
                        &self.check_to_bit,
                        &mut self.llr_internal,
                        &mut self.candidate,
                        &mut self.row_scratch,
                    )
                );
                if self.candidate[..m] == self.syndrome[..] {
                    self.converged = true;
                }
                changed
            };
            if self.converged {
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
            let alpha = self.alpha(it);
            // Bit by bit in matrix column order (`ldpc`'s serial order).
            for c in 0..self.graph.n {
                self.serial_bit(self.graph.position[c] as usize, alpha);
            }
            self.iterations = it;
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
        let g = TannerGraph::new(&SparseMatrix::from_dense(
            &BitMatrix::from_picture("11.\n.11").unwrap(),
        ))
        .unwrap();
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
        // When every column shares a check with every other, matrix order.
        let g = TannerGraph::new(&SparseMatrix::from_dense(
            &BitMatrix::from_picture("111").unwrap(),
        ))
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
