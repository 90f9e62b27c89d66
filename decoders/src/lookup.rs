//! A minimum-weight lookup-table decoder for small codes: for every reachable syndrome, the
//! lightest error that produces it (the first in lexicographic order of qubit indices among
//! equally light ones).
//!
//! The table has `2^m` entries for `m` checks, so `m` is limited to
//! [`LookupDecoder::MAX_CHECKS`]. Building it tries errors by increasing weight until every
//! syndrome in the column space is covered.

use crate::bitmat::{BitMatrix, Ones, set_bit, words_for};
use crate::error::DecoderError;
use crate::gf2;

/// A minimum-weight decoder by table lookup. [`LookupDecoder::decode`] does not allocate.
#[derive(Debug, Clone)]
pub struct LookupDecoder {
    m: usize,
    n: usize,
    words: usize,
    /// `2^m` entries of `words` words each: the correction for syndrome value `s` (bit `i` of
    /// `s` = check `i`).
    table: Vec<u64>,
    /// Whether syndrome value `s` is reachable.
    known: Vec<bool>,
}

impl LookupDecoder {
    /// The largest number of checks a table is built for (`2^20` entries).
    pub const MAX_CHECKS: usize = 20;

    /// Builds the table for checks `h`.
    pub fn new(h: &BitMatrix) -> Result<LookupDecoder, DecoderError> {
        let (m, n) = (h.rows(), h.cols());
        if m > Self::MAX_CHECKS {
            return Err(DecoderError::LookupTooLarge {
                checks: m,
                max: Self::MAX_CHECKS,
            });
        }
        let words = words_for(n).max(1);
        let size = 1usize << m;
        let mut table = vec![0u64; size * words];
        let mut known = vec![false; size];
        // Syndrome value of each column.
        let t = h.transpose();
        let col_syn: Vec<usize> = (0..n)
            .map(|c| t.row_ones(c).fold(0usize, |acc, r| acc | 1 << r))
            .collect();
        let reachable = 1usize << gf2::rank(h);
        known[0] = true;
        let mut filled = 1usize;
        let mut idx: Vec<usize> = Vec::with_capacity(n);
        let mut w = 1;
        while filled < reachable && w <= n {
            // Enumerate w-subsets of 0..n in lexicographic order.
            idx.clear();
            idx.extend(0..w);
            loop {
                let s = idx.iter().fold(0usize, |acc, &c| acc ^ col_syn[c]);
                if !known[s] {
                    known[s] = true;
                    filled += 1;
                    let entry = &mut table[s * words..(s + 1) * words];
                    for &c in &idx {
                        set_bit(entry, c, true);
                    }
                }
                // Advance to the next subset.
                let mut i = w;
                while i > 0 && idx[i - 1] == n - w + i - 1 {
                    i -= 1;
                }
                if i == 0 {
                    break;
                }
                idx[i - 1] += 1;
                for k in i..w {
                    idx[k] = idx[k - 1] + 1;
                }
            }
            w += 1;
        }
        Ok(LookupDecoder {
            m,
            n,
            words,
            table,
            known,
        })
    }

    /// Number of checks.
    pub fn checks(&self) -> usize {
        self.m
    }

    /// Number of bits.
    pub fn bits(&self) -> usize {
        self.n
    }

    /// The packed correction for a syndrome value (bit `i` = check `i`), or `None` when no
    /// error produces that syndrome.
    pub fn lookup(&self, syndrome: usize) -> Option<&[u64]> {
        let s = syndrome & ((1usize << self.m) - 1);
        self.known[s].then(|| &self.table[s * self.words..(s + 1) * self.words])
    }

    /// Decodes a syndrome (0/1 per check) into `correction` (0/1 per bit). Returns whether the
    /// syndrome is reachable; when it is not, `correction` is all zeros.
    pub fn decode(&self, syndrome: &[u8], correction: &mut [u8]) -> Result<bool, DecoderError> {
        crate::error::check_lengths(syndrome.len(), self.m, correction.len(), self.n)?;
        let s = syndrome
            .iter()
            .enumerate()
            .fold(0usize, |acc, (i, &b)| acc | ((b != 0) as usize) << i);
        correction.fill(0);
        match self.lookup(s) {
            Some(words) => {
                for c in Ones::new(words) {
                    correction[c] = 1;
                }
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steane;

    #[test]
    fn matches_the_steane_lookup_on_every_syndrome() {
        let code = crate::codes::CssCode::steane();
        let dec = LookupDecoder::new(&code.hz).unwrap();
        for s in 0u8..8 {
            let words = dec.lookup(s as usize).unwrap();
            assert_eq!(words[0], steane::correction(s) as u64, "syndrome {s}");
        }
    }

    #[test]
    fn minimum_weight_on_hgp13() {
        let code = crate::codes::CssCode::hgp13();
        let h = &code.hz;
        let dec = LookupDecoder::new(h).unwrap();
        // Exhaustive: the best weight for each syndrome over all 2^13 errors.
        let mut best = vec![usize::MAX; 1 << h.rows()];
        let mut syn = vec![0u8; h.rows()];
        for e in 0u32..(1 << 13) {
            let bits: Vec<u8> = (0..13).map(|i| (e >> i & 1) as u8).collect();
            h.mul_bytes(&bits, &mut syn);
            let s = syn
                .iter()
                .enumerate()
                .fold(0, |a, (i, &b)| a | (b as usize) << i);
            best[s] = best[s].min(e.count_ones() as usize);
        }
        let mut corr = vec![0u8; 13];
        for (s, &b) in best.iter().enumerate() {
            let bits: Vec<u8> = (0..h.rows()).map(|i| (s >> i & 1) as u8).collect();
            let reachable = dec.decode(&bits, &mut corr).unwrap();
            assert_eq!(reachable, b != usize::MAX);
            if reachable {
                assert_eq!(corr.iter().filter(|&&x| x == 1).count(), b);
                h.mul_bytes(&corr, &mut syn);
                assert_eq!(syn, bits);
            }
        }
    }

    #[test]
    fn too_many_checks_is_an_error() {
        let h = BitMatrix::zeros(21, 3);
        assert!(matches!(
            LookupDecoder::new(&h),
            Err(DecoderError::LookupTooLarge { checks: 21, .. })
        ));
    }
}
