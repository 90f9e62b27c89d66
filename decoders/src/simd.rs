//! The decoders' SIMD dispatch, and their one home of `unsafe`: each hot kernel is written
//! once as portable Rust over fixed-width lanes ([`crate::bp32`]; SSE2 is the baseline on
//! x86-64, NEON on aarch64, and the compiler vectorises what it can), and here again with
//! explicit AVX2 intrinsics — its gathers (`vpgatherdd`, `vgatherdps`) are what the compiler
//! would not emit on its own. The level is chosen once per process by run-time feature
//! detection; `BACKLINE_SIMD=portable` forces the portable one (the tests compare them). The
//! lanes-across-shots kernel of [`crate::bp32_lanes`] has its levels here too (no gathers
//! there: its AVX2 passes are plain loads, stores and lane-wise arithmetic).
//! (AVX-512 was tried: the compiler's 16-lane gathers and scatters of the same code ran
//! slower on this project's AMD EPYC than AVX2's, so it has no level of its own.)
//!
//! Every level runs the same IEEE operations in the same order (vertical lanes; Rust never
//! contracts a multiply and an add into an FMA on its own), so every level's results are bit
//! for bit the portable path's; a test checks it on every level this CPU has.
#![allow(unsafe_code)]

use std::sync::OnceLock;

use crate::bp32::{Kernel, PORTABLE};
use crate::bp32_lanes::{LanesKernel, PORTABLE_LANES};

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use crate::bp32::{Kernel, LANES, MinSum32};
    use crate::bp32_lanes::{ABS, LanesKernel, MinSum32Lanes, SHOT_LANES, STATE};

    const _: () = assert!(LANES == 8, "one AVX2 register of u32 lanes per block input");
    const _: () = assert!(SHOT_LANES == 8, "one AVX2 register of f32 lanes per slot");

    /// [`crate::bp32::checks_pass`] with AVX2: one block's eight lanes in one register, its
    /// inputs gathered (`vpgatherdd`), the two smallest magnitudes kept with unsigned min/max,
    /// the messages written contiguously. The same operations, in the same order, as the
    /// portable pass.
    ///
    /// # Safety
    /// The CPU has AVX2, and `k` keeps the invariants of [`MinSum32`]: every entry of
    /// `block_slots` is below `b2c.len()` and below 2^31, `mags` holds the widest block.
    #[target_feature(enable = "avx2")]
    unsafe fn checks_avx2_body(k: &mut MinSum32, alpha: f32) {
        let MinSum32 {
            b2c,
            c2b,
            block_start,
            block_width,
            block_slots,
            block_rows,
            syndrome,
            mags,
            ..
        } = k;
        let abs = _mm256_set1_epi32(0x7FFF_FFFF);
        let sign = _mm256_set1_epi32(i32::MIN);
        let one = _mm256_set1_epi32(1);
        let big = _mm256_set1_epi32(crate::bp32::BIG.to_bits() as i32);
        let alpha = _mm256_set1_ps(alpha);
        let cap = _mm256_set1_ps(crate::bp32::MAX_MESSAGE);
        for (b, (&start, &width)) in block_start.iter().zip(block_width.iter()).enumerate() {
            let (start, width) = (start as usize, width as usize);
            if width == 0 {
                continue;
            }
            let slots = &block_slots[start..start + width * LANES];
            let out = &mut c2b[start..start + width * LANES];
            let mags = &mut mags[..width * LANES];
            let mut p = [0u32; LANES];
            for (p, &r) in p.iter_mut().zip(&block_rows[b * LANES..(b + 1) * LANES]) {
                *p = u32::from(syndrome[r as usize]) << 31;
            }
            let mut min1 = big;
            let mut min2 = big;
            // SAFETY: `p` is LANES u32s.
            let mut parity = unsafe { _mm256_loadu_si256(p.as_ptr().cast()) };
            for kk in 0..width {
                let at = kk * LANES;
                // SAFETY: `slots` and `mags` hold `width · LANES` entries; every slot
                // is below `b2c.len()` and 2^31 (the invariants), so the gather reads inside
                // `b2c`.
                let v = unsafe {
                    let idx = _mm256_loadu_si256(slots.as_ptr().add(at).cast());
                    _mm256_i32gather_epi32::<4>(b2c.as_ptr().cast(), idx)
                };
                let a = _mm256_and_si256(v, abs);
                let n = _mm256_and_si256(_mm256_or_si256(_mm256_sub_epi32(v, one), v), sign);
                // The inputs are kept as they were read (`mags`); their magnitude and sign bit
                // are formed again for the messages, cheaper than keeping both.
                // SAFETY: as above, `at + LANES ≤ width · LANES`.
                unsafe { _mm256_storeu_si256(mags.as_mut_ptr().add(at).cast(), v) };
                parity = _mm256_xor_si256(parity, n);
                min2 = _mm256_min_epu32(min2, _mm256_max_epu32(min1, a));
                min1 = _mm256_min_epu32(min1, a);
            }
            let m1 = _mm256_castps_si256(_mm256_min_ps(
                _mm256_mul_ps(_mm256_castsi256_ps(min1), alpha),
                cap,
            ));
            let m2 = _mm256_castps_si256(_mm256_min_ps(
                _mm256_mul_ps(_mm256_castsi256_ps(min2), alpha),
                cap,
            ));
            for kk in 0..width {
                let at = kk * LANES;
                // SAFETY: `mags` and `out` hold `width · LANES` entries.
                unsafe {
                    let v = _mm256_loadu_si256(mags.as_ptr().add(at).cast());
                    let a = _mm256_and_si256(v, abs);
                    let n = _mm256_and_si256(_mm256_or_si256(_mm256_sub_epi32(v, one), v), sign);
                    let m = _mm256_blendv_epi8(m1, m2, _mm256_cmpeq_epi32(a, min1));
                    let o = _mm256_xor_si256(_mm256_xor_si256(m, parity), n);
                    _mm256_storeu_si256(out.as_mut_ptr().add(at).cast(), o);
                }
            }
        }
    }

    /// [`crate::bp32::bits_pass`] with AVX2: each slot row of a group gathered from the
    /// block-ordered messages (`vgatherdps`), the same adds in the same order.
    ///
    /// # Safety
    /// The CPU has AVX2, and `k` keeps the invariants of [`MinSum32`]: every entry of
    /// `slot_block` is below `c2b.len()` and below 2^31.
    #[target_feature(enable = "avx2")]
    unsafe fn bits_avx2_body(k: &mut MinSum32) {
        let MinSum32 {
            groups,
            eff,
            llr,
            b2c,
            c2b,
            slot_block,
            incoming,
            ..
        } = k;
        for g in groups.iter() {
            let (base, count, pos) = (g.base as usize, g.count as usize, g.pos as usize);
            let degree = g.degree as usize;
            let total = &mut llr[pos..pos + count];
            total.copy_from_slice(&eff[pos..pos + count]);
            let whole = count - count % LANES;
            if degree <= FUSED {
                // Eight bits at a time, all their messages held in registers: the total, then
                // each outgoing message, with no round trip through memory. The same adds in
                // the same order as the portable pass.
                let mut m = [_mm256_setzero_ps(); FUSED];
                let mut i = 0;
                while i < whole {
                    // SAFETY: `i + LANES ≤ count` for every row of the group's slots, for
                    // `total` and `b2c`; every index in `slot_block` is below `c2b.len()` and
                    // 2^31 (the invariants).
                    unsafe {
                        let mut t = _mm256_loadu_ps(total.as_ptr().add(i));
                        for (j, mj) in m.iter_mut().enumerate().take(degree) {
                            let at = slot_block.as_ptr().add(base + j * count + i);
                            let idx = _mm256_loadu_si256(at.cast());
                            *mj = _mm256_i32gather_ps::<4>(c2b.as_ptr(), idx);
                            t = _mm256_add_ps(t, *mj);
                        }
                        _mm256_storeu_ps(total.as_mut_ptr().add(i), t);
                        for (j, mj) in m.iter().enumerate().take(degree) {
                            let out = b2c.as_mut_ptr().add(base + j * count + i);
                            _mm256_storeu_ps(out, _mm256_sub_ps(t, *mj));
                        }
                    }
                    i += LANES;
                }
                for i in whole..count {
                    let mut msgs = [0f32; FUSED];
                    let mut t = total[i];
                    for (j, mj) in msgs.iter_mut().enumerate().take(degree) {
                        *mj = c2b[slot_block[base + j * count + i] as usize];
                        t += *mj;
                    }
                    total[i] = t;
                    for (j, mj) in msgs.iter().enumerate().take(degree) {
                        b2c[base + j * count + i] = t - mj;
                    }
                }
                continue;
            }
            for j in 0..degree {
                let at = &slot_block[base + j * count..base + (j + 1) * count];
                let msg = &mut incoming[base + j * count..base + (j + 1) * count];
                let mut i = 0;
                while i < whole {
                    // SAFETY: `i + LANES ≤ count` for `at`, `msg` and `total`; every index in
                    // `at` is below `c2b.len()` and 2^31 (the invariants).
                    unsafe {
                        let idx = _mm256_loadu_si256(at.as_ptr().add(i).cast());
                        let m = _mm256_i32gather_ps::<4>(c2b.as_ptr(), idx);
                        _mm256_storeu_ps(msg.as_mut_ptr().add(i), m);
                        let t = _mm256_loadu_ps(total.as_ptr().add(i));
                        _mm256_storeu_ps(total.as_mut_ptr().add(i), _mm256_add_ps(t, m));
                    }
                    i += LANES;
                }
                for i in whole..count {
                    let m = c2b[at[i] as usize];
                    msg[i] = m;
                    total[i] += m;
                }
            }
            for j in 0..degree {
                let msg = &incoming[base + j * count..base + (j + 1) * count];
                let out = &mut b2c[base + j * count..base + (j + 1) * count];
                for ((o, &t), &m) in out.iter_mut().zip(total.iter()).zip(msg) {
                    *o = t - m;
                }
            }
        }
    }

    /// The largest bit degree the bit pass keeps in registers (and a small stack array).
    const FUSED: usize = 16;

    fn checks_avx2(k: &mut MinSum32, alpha: f32) {
        // SAFETY: this kernel is installed only after `is_x86_feature_detected!("avx2")`
        // said the CPU has AVX2 (`available`), and `MinSum32::new` establishes the index
        // invariants, which nothing changes afterwards.
        unsafe { checks_avx2_body(k, alpha) }
    }

    fn bits_avx2(k: &mut MinSum32) {
        // SAFETY: as `checks_avx2`.
        unsafe { bits_avx2_body(k) }
    }

    /// [`crate::bp32_lanes::checks_pass`] with AVX2: a row's eight shots in one register, each
    /// input's messages one load, no gather. The same operations, in the same order, as the
    /// portable pass.
    ///
    /// # Safety
    /// The CPU has AVX2, and `k` keeps the invariants of [`MinSum32Lanes`]: every entry of
    /// `row_slots` is a slot (below `b2c.len() / SHOT_LANES`), `row_start` has `m + 1`
    /// ascending entries ending at `row_slots.len()`, `state` and `syn_sign` hold `m` rows.
    #[target_feature(enable = "avx2")]
    unsafe fn lanes_checks_body(k: &mut MinSum32Lanes) {
        const W: usize = SHOT_LANES;
        let MinSum32Lanes {
            m,
            row_start,
            row_slots,
            b2c,
            state,
            syn_sign,
            alpha,
            ..
        } = k;
        debug_assert_eq!(state.len(), *m * STATE * W);
        debug_assert_eq!(row_start.len(), *m + 1);
        let abs = _mm256_set1_epi32(ABS as i32);
        let sign = _mm256_set1_epi32(i32::MIN);
        let one = _mm256_set1_epi32(1);
        let big = _mm256_set1_epi32(crate::bp32::BIG.to_bits() as i32);
        let cap = _mm256_set1_ps(crate::bp32::MAX_MESSAGE);
        // SAFETY: `alpha` is W f32s.
        let alpha = unsafe { _mm256_loadu_ps(alpha.as_ptr()) };
        let b = b2c.as_ptr();
        for r in 0..*m {
            let slots = &row_slots[row_start[r] as usize..row_start[r + 1] as usize];
            let mut min1 = big;
            let mut min2 = big;
            // SAFETY: `syn_sign` holds W entries per row, `r < m`.
            let mut parity = unsafe { _mm256_loadu_si256(syn_sign.as_ptr().add(r * W).cast()) };
            for &s in slots {
                // SAFETY: `s` is a slot, so `s · W + W ≤ b2c.len()` (the invariants).
                let v = unsafe { _mm256_loadu_si256(b.add(s as usize * W).cast()) };
                let a = _mm256_and_si256(v, abs);
                let n = _mm256_and_si256(_mm256_or_si256(_mm256_sub_epi32(v, one), v), sign);
                parity = _mm256_xor_si256(parity, n);
                min2 = _mm256_min_epu32(min2, _mm256_max_epu32(min1, a));
                min1 = _mm256_min_epu32(min1, a);
            }
            let m1 = _mm256_castps_si256(_mm256_min_ps(
                _mm256_mul_ps(_mm256_castsi256_ps(min1), alpha),
                cap,
            ));
            let m2 = _mm256_castps_si256(_mm256_min_ps(
                _mm256_mul_ps(_mm256_castsi256_ps(min2), alpha),
                cap,
            ));
            // SAFETY: `state` holds STATE · W entries per row, `r < m`.
            unsafe {
                let st = state.as_mut_ptr().add(r * STATE * W);
                _mm256_storeu_si256(st.cast(), min1);
                _mm256_storeu_si256(st.add(W).cast(), _mm256_xor_si256(m1, parity));
                _mm256_storeu_si256(st.add(2 * W).cast(), _mm256_xor_si256(m2, parity));
            }
        }
    }

    /// The check-to-bit message of the slot at `v` (its bit-to-check message of the iteration
    /// before) from its row's state at `st`: [`crate::bp32_lanes`]'s `message`, eight lanes.
    ///
    /// # Safety
    /// The CPU has AVX2; `v` points to W readable `f32`s and `st` to STATE · W readable `u32`s.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn lanes_message(v: *const f32, st: *const u32) -> __m256 {
        let abs = _mm256_set1_epi32(ABS as i32);
        let sign = _mm256_set1_epi32(i32::MIN);
        let one = _mm256_set1_epi32(1);
        // SAFETY: the caller's promise.
        unsafe {
            let v = _mm256_loadu_si256(v.cast());
            let a = _mm256_and_si256(v, abs);
            let n = _mm256_and_si256(_mm256_or_si256(_mm256_sub_epi32(v, one), v), sign);
            let eq = _mm256_cmpeq_epi32(a, _mm256_loadu_si256(st.cast()));
            let m = _mm256_blendv_epi8(
                _mm256_loadu_si256(st.add(SHOT_LANES).cast()),
                _mm256_loadu_si256(st.add(2 * SHOT_LANES).cast()),
                eq,
            );
            _mm256_castsi256_ps(_mm256_xor_si256(m, n))
        }
    }

    /// [`crate::bp32_lanes::bits_pass`] with AVX2: a column's eight shots in one register, its
    /// messages formed from the rows' states. The columns run group by group, each group of
    /// up to eight slots a column with its degree fixed at compile time ([`lanes_group`]: the
    /// messages kept in registers); heavier columns form each message twice
    /// ([`lanes_heavy`]). The same adds in the same order as the portable pass.
    ///
    /// # Safety
    /// The CPU has AVX2, and `k` keeps the invariants of [`MinSum32Lanes`]: the groups cover
    /// the positions `0..n`, each position of a group has `degree` slots, `col_start` has
    /// `n + 1` ascending entries ending at `slot_row.len()`, every slot's row is below `m`,
    /// `b2c` holds W entries per slot, `state` STATE · W per row, `llr` W per position (and
    /// with `MEM`, `coef` and `gamma` W per position too).
    ///
    /// With `MEM` (Relay-BP's legs, [`MinSum32Lanes::memory_iteration`]) each column's total
    /// starts from its memory prior `coef + gamma · llr` ([`lanes_start`]), else from its prior.
    #[target_feature(enable = "avx2")]
    unsafe fn lanes_bits_body<const MEM: bool>(k: &mut MinSum32Lanes) {
        let MinSum32Lanes {
            n,
            groups,
            col_start,
            slot_row,
            prior,
            b2c,
            state,
            llr,
            candidate,
            coef,
            gamma,
            ..
        } = k;
        debug_assert!(!MEM || (coef.len() == *n * SHOT_LANES && gamma.len() == coef.len()));
        debug_assert_eq!(col_start.len(), *n + 1);
        debug_assert_eq!(b2c.len(), slot_row.len() * SHOT_LANES);
        let g = Graph {
            b: b2c.as_mut_ptr(),
            st: state.as_ptr(),
            llr: llr.as_mut_ptr(),
            prior,
            coef,
            gamma,
            col_start,
            slot_row,
        };
        for group in groups.iter() {
            let (start, end) = (group.start as usize, group.end as usize);
            // SAFETY: the invariants, for every position of the group.
            unsafe {
                match group.degree {
                    1 => lanes_group::<1, MEM>(&g, start, end, candidate),
                    2 => lanes_group::<2, MEM>(&g, start, end, candidate),
                    3 => lanes_group::<3, MEM>(&g, start, end, candidate),
                    4 => lanes_group::<4, MEM>(&g, start, end, candidate),
                    5 => lanes_group::<5, MEM>(&g, start, end, candidate),
                    6 => lanes_group::<6, MEM>(&g, start, end, candidate),
                    7 => lanes_group::<7, MEM>(&g, start, end, candidate),
                    8 => lanes_group::<8, MEM>(&g, start, end, candidate),
                    _ => lanes_heavy::<MEM>(&g, start, end, candidate),
                }
            }
        }
    }

    /// What the bit pass reads and writes, as [`MinSum32Lanes`] holds it.
    struct Graph<'a> {
        b: *mut f32,
        st: *const u32,
        llr: *mut f32,
        prior: &'a [f32],
        coef: &'a [f32],
        gamma: &'a [f32],
        col_start: &'a [u32],
        slot_row: &'a [u32],
    }

    /// Where position `p`'s total starts: with `MEM` its memory prior `coef + gamma · llr`
    /// (the lanes' soft output of the iteration before; the portable pass's `cf + g · m`, one
    /// multiply then one add), else its prior in every lane.
    ///
    /// # Safety
    /// The CPU has AVX2; `g` keeps the invariants of [`MinSum32Lanes`] and `p < n`.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn lanes_start<const MEM: bool>(g: &Graph<'_>, p: usize) -> __m256 {
        const W: usize = SHOT_LANES;
        if !MEM {
            return _mm256_set1_ps(g.prior[p]);
        }
        let (coef, gamma) = (&g.coef[p * W..(p + 1) * W], &g.gamma[p * W..(p + 1) * W]);
        // SAFETY: `coef` and `gamma` are W f32s (sliced above); `llr` holds W entries per
        // position, `p < n`.
        unsafe {
            let m = _mm256_loadu_ps(g.llr.add(p * W));
            _mm256_add_ps(
                _mm256_loadu_ps(coef.as_ptr()),
                _mm256_mul_ps(_mm256_loadu_ps(gamma.as_ptr()), m),
            )
        }
    }

    /// The end of one column's bit pass: its total `t` into `llr` at position `p`, and the
    /// lanes where it is `≤ 0` flipped in the hard decision's syndrome of each of its `rows`.
    ///
    /// # Safety
    /// The CPU has AVX2; `g` keeps the invariants of [`MinSum32Lanes`] and `p < n`.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn lanes_total(g: &Graph<'_>, p: usize, t: __m256, rows: &[u32], cand: &mut [u8]) {
        // SAFETY: `llr` holds W entries per position, `p < n`.
        unsafe { _mm256_storeu_ps(g.llr.add(p * SHOT_LANES), t) };
        let le = _mm256_cmp_ps::<_CMP_LE_OQ>(t, _mm256_setzero_ps());
        let flips = _mm256_movemask_ps(le) as u8;
        if flips != 0 {
            for &r in rows {
                cand[r as usize] ^= flips;
            }
        }
    }

    /// The bit pass over positions `start..end`, each of `D` slots: the messages formed once
    /// and held in registers.
    ///
    /// # Safety
    /// The CPU has AVX2; `g` keeps the invariants of [`MinSum32Lanes`], and positions
    /// `start..end` have `D` slots each.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn lanes_group<const D: usize, const MEM: bool>(
        g: &Graph<'_>,
        start: usize,
        end: usize,
        cand: &mut [u8],
    ) {
        const W: usize = SHOT_LANES;
        let mut s = g.col_start[start] as usize;
        for p in start..end {
            debug_assert_eq!(g.col_start[p + 1] as usize, s + D);
            let rows = &g.slot_row[s..s + D];
            // SAFETY: `p < n`.
            let mut t = unsafe { lanes_start::<MEM>(g, p) };
            let mut msg = [_mm256_setzero_ps(); D];
            for (j, (&r, mj)) in rows.iter().zip(msg.iter_mut()).enumerate() {
                // SAFETY: slot `s + j` and row `r` are in bounds (the invariants).
                *mj = unsafe {
                    lanes_message(g.b.add((s + j) * W), g.st.add(r as usize * STATE * W))
                };
                t = _mm256_add_ps(t, *mj);
            }
            for (j, mj) in msg.iter().enumerate() {
                // SAFETY: as above.
                unsafe { _mm256_storeu_ps(g.b.add((s + j) * W), _mm256_sub_ps(t, *mj)) };
            }
            // SAFETY: `p < n`.
            unsafe { lanes_total(g, p, t, rows, cand) };
            s += D;
        }
    }

    /// The bit pass over positions `start..end` of any degree: each message formed twice, the
    /// second time from the slot's old contents just before they are overwritten.
    ///
    /// # Safety
    /// The CPU has AVX2; `g` keeps the invariants of [`MinSum32Lanes`], `start ≤ end ≤ n`.
    #[target_feature(enable = "avx2")]
    unsafe fn lanes_heavy<const MEM: bool>(
        g: &Graph<'_>,
        start: usize,
        end: usize,
        cand: &mut [u8],
    ) {
        const W: usize = SHOT_LANES;
        for p in start..end {
            let lo = g.col_start[p] as usize;
            let rows = &g.slot_row[lo..g.col_start[p + 1] as usize];
            // SAFETY: `p < end ≤ n`.
            let mut t = unsafe { lanes_start::<MEM>(g, p) };
            for (j, &r) in rows.iter().enumerate() {
                // SAFETY: slot `lo + j` and row `r` are in bounds (the invariants).
                let mj = unsafe {
                    lanes_message(g.b.add((lo + j) * W), g.st.add(r as usize * STATE * W))
                };
                t = _mm256_add_ps(t, mj);
            }
            for (j, &r) in rows.iter().enumerate() {
                // SAFETY: as above.
                unsafe {
                    let at = g.b.add((lo + j) * W);
                    let mj = lanes_message(at, g.st.add(r as usize * STATE * W));
                    _mm256_storeu_ps(at, _mm256_sub_ps(t, mj));
                }
            }
            // SAFETY: `p < n`.
            unsafe { lanes_total(g, p, t, rows, cand) };
        }
    }

    fn lanes_checks_avx2(k: &mut MinSum32Lanes) {
        // SAFETY: installed only after `is_x86_feature_detected!("avx2")` (`lanes_available`);
        // `MinSum32Lanes::new` establishes the index invariants, which nothing changes.
        unsafe { lanes_checks_body(k) }
    }

    fn lanes_bits_avx2(k: &mut MinSum32Lanes) {
        // SAFETY: as `lanes_checks_avx2`; `use_memory` sizes `coef` and `gamma` (W per
        // position) before it sets `memory`.
        unsafe {
            if k.memory {
                lanes_bits_body::<true>(k)
            } else {
                lanes_bits_body::<false>(k)
            }
        }
    }

    /// The lanes levels this CPU has, best first.
    pub(super) fn lanes_available() -> Vec<LanesKernel> {
        let mut v = Vec::new();
        if std::arch::is_x86_feature_detected!("avx2") {
            v.push(LanesKernel {
                name: "avx2",
                checks: lanes_checks_avx2,
                bits: lanes_bits_avx2,
            });
        }
        v
    }

    /// The levels this CPU has, best first.
    pub(super) fn available() -> Vec<Kernel> {
        let mut v = Vec::new();
        if std::arch::is_x86_feature_detected!("avx2") {
            v.push(Kernel {
                name: "avx2",
                checks: checks_avx2,
                bits: bits_avx2,
            });
        }
        v
    }
}

/// Every level this CPU can run, best first, the portable one last.
pub fn levels() -> Vec<Kernel> {
    #[cfg(target_arch = "x86_64")]
    let mut v = x86::available();
    #[cfg(not(target_arch = "x86_64"))]
    let mut v = Vec::new();
    v.push(PORTABLE);
    v
}

/// Every level of the lanes-across-shots kernel ([`crate::bp32_lanes`]) this CPU can run, best
/// first, the portable one last.
pub fn lanes_levels() -> Vec<LanesKernel> {
    #[cfg(target_arch = "x86_64")]
    let mut v = x86::lanes_available();
    #[cfg(not(target_arch = "x86_64"))]
    let mut v = Vec::new();
    v.push(PORTABLE_LANES);
    v
}

/// The lanes kernel's level in force: the one of the same name as [`kernel`]'s.
pub fn lanes_kernel() -> LanesKernel {
    static CHOSEN: OnceLock<LanesKernel> = OnceLock::new();
    *CHOSEN.get_or_init(|| {
        lanes_levels()
            .into_iter()
            .find(|k| k.name == level())
            .unwrap_or(PORTABLE_LANES)
    })
}

/// The environment variable that picks a lower level: `portable` (or `avx2`).
pub const ENV: &str = "BACKLINE_SIMD";

/// The level in force: the best this CPU has, capped by [`ENV`] (an unknown value is ignored,
/// with one log line).
pub fn kernel() -> Kernel {
    *chosen()
}

fn chosen() -> &'static Kernel {
    static CHOSEN: OnceLock<Kernel> = OnceLock::new();
    CHOSEN.get_or_init(|| {
        let levels = levels();
        match std::env::var(ENV) {
            Ok(want) => levels
                .iter()
                .find(|k| k.name == want.trim())
                .copied()
                .unwrap_or_else(|| {
                    log::warn!(
                        "{ENV}={}: not a level this CPU runs (one of {}); using {}",
                        crate::io::excerpt(&want),
                        levels.iter().map(|k| k.name).collect::<Vec<_>>().join(", "),
                        levels[0].name
                    );
                    levels[0]
                }),
            Err(_) => levels[0],
        }
    })
}

/// The name of the level in force (`portable`, `avx2`), for reports.
pub fn level() -> &'static str {
    chosen().name()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bp32::MinSum32;
    use crate::sparse::SparseMatrix;

    #[test]
    fn every_simd_level_gives_the_portable_levels_messages_bit_for_bit() {
        let code = crate::codes::CssCode::by_name("bb144").unwrap();
        same_on_every_level(&code.hz);
        // Columns heavier than the bit pass keeps in registers (degree 20), and light ones.
        let (m, n) = (40, 90);
        let mut h = crate::bitmat::BitMatrix::zeros(m, n);
        for c in 0..n {
            let degree = if c % 9 == 0 { 20 } else { 1 + c % 4 };
            for k in 0..degree {
                h.set((c * 7 + k * 3) % m, c, true);
            }
        }
        same_on_every_level(&h);
    }

    /// Every level's messages on sampled syndromes of `hz` are the portable level's.
    fn same_on_every_level(hz: &crate::bitmat::BitMatrix) {
        let h = SparseMatrix::from_dense(hz);
        let n = hz.cols();
        // Per-bit priors of several rates, so that magnitudes tie and differ.
        let prior: Vec<f64> = (0..n)
            .map(|c| {
                let p: f64 = [0.01, 0.05, 0.05, 0.2][c % 4];
                ((1.0 - p) / p).ln()
            })
            .collect();
        let levels = levels();
        let mut noise = crate::noise::CodeCapacity::new(0.06, 3);
        let mut e = vec![0u8; n];
        let mut syn = vec![0u8; hz.rows()];
        for shot in 0..60 {
            noise.sample(&mut e);
            hz.mul_bytes(&e, &mut syn);
            let mut want: Option<(bool, usize, Vec<u32>, Vec<u32>)> = None;
            for level in &levels {
                let mut k = MinSum32::new(&h, &prior, *level).unwrap();
                k.track_min_llr(true);
                let (ok, it) = k.decode(&syn, 25, |t| 1.0 - 0.5f32.powi(t as i32), |_| false);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                let got = (ok, it, bits(&k.llr), bits(&k.min_llr));
                match &want {
                    None => want = Some(got),
                    Some(w) => assert!(*w == got, "shot {shot}: level {} differs", level.name()),
                }
            }
        }
        assert!(levels.iter().any(|l| l.name() == "portable"));
    }
}
