//! GF(2) linear algebra on [`BitMatrix`]: reduced row echelon form, rank, kernel, and the
//! logical operators of a CSS code.
//!
//! These run at construction time (codes, decoders), not on the decode path; the decode-path
//! elimination of OSD lives in [`crate::osd`] and works in place on preallocated words.

use crate::bitmat::{BitMatrix, get_bit, xor_into};

/// Brings `m` to reduced row echelon form in place, eliminating columns left to right, and
/// returns the pivot column of each of the first `rank` rows (ascending). Rows past the rank
/// are zero afterwards.
pub fn rref(m: &mut BitMatrix) -> Vec<usize> {
    let rows = m.rows();
    let mut pivots = Vec::new();
    let mut rank = 0;
    for j in 0..m.cols() {
        if rank == rows {
            break;
        }
        let Some(p) = (rank..rows).find(|&i| m.get(i, j)) else {
            continue;
        };
        m.swap_rows(p, rank);
        for i in 0..rows {
            if i != rank && m.get(i, j) {
                m.xor_row(i, rank);
            }
        }
        pivots.push(j);
        rank += 1;
    }
    pivots
}

/// The rank of `m` over GF(2).
pub fn rank(m: &BitMatrix) -> usize {
    rref(&mut m.clone()).len()
}

/// A basis of the null space `{ v : m v = 0 }`, one vector per row (`cols − rank` rows).
pub fn kernel(m: &BitMatrix) -> BitMatrix {
    let mut r = m.clone();
    let pivots = rref(&mut r);
    let n = m.cols();
    let mut is_pivot = vec![false; n];
    for &p in &pivots {
        is_pivot[p] = true;
    }
    let free: Vec<usize> = (0..n).filter(|&j| !is_pivot[j]).collect();
    let mut k = BitMatrix::zeros(free.len(), n);
    for (row, &f) in free.iter().enumerate() {
        k.set(row, f, true);
        // Pivot variable of row i equals the sum of its row's free entries.
        for (i, &p) in pivots.iter().enumerate() {
            if r.get(i, f) {
                k.set(row, p, true);
            }
        }
    }
    k
}

/// The rows of `extra` that, taken in order, extend the row space of `base` by one dimension
/// each: a basis of `rowspace(base) + rowspace(extra)` modulo `rowspace(base)`.
pub fn independent_rows_modulo(base: &BitMatrix, extra: &BitMatrix) -> BitMatrix {
    assert_eq!(base.cols(), extra.cols(), "column counts differ");
    // Columns of the transpose are the candidate rows; pivot columns past `base.rows()` are
    // the rows of `extra` that are independent of everything before them.
    let stacked = base.vstack(extra);
    let mut t = stacked.transpose();
    let pivots = rref(&mut t);
    let picked: Vec<usize> = pivots.into_iter().filter(|&p| p >= base.rows()).collect();
    stacked.select_rows(&picked)
}

/// Whether the packed vector `v` lies in the row space of `m`.
pub fn in_row_space(m: &BitMatrix, v: &[u64]) -> bool {
    let mut r = m.clone();
    let pivots = rref(&mut r);
    let mut v = v.to_vec();
    for (i, &p) in pivots.iter().enumerate() {
        if get_bit(&v, p) {
            xor_into(&mut v, r.row(i));
        }
    }
    v.iter().all(|&w| w == 0)
}

/// The logical operators of the CSS code with X checks `hx` and Z checks `hz` (which must
/// commute: `hx · hzᵀ = 0`). Returns `(lx, lz)`, each with `k = n − rank(hx) − rank(hz)` rows:
/// `lx` spans `ker(hz) / rowspace(hx)` (X logicals), `lz` spans `ker(hx) / rowspace(hz)` (Z
/// logicals).
///
/// An X error `e` with zero Z syndrome (`hz e = 0`) is a logical error exactly when `lz e ≠ 0`;
/// likewise a Z error and `lx`.
pub fn css_logicals(hx: &BitMatrix, hz: &BitMatrix) -> (BitMatrix, BitMatrix) {
    let lx = independent_rows_modulo(hx, &kernel(hz));
    let lz = independent_rows_modulo(hz, &kernel(hx));
    (lx, lz)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pic(s: &str) -> BitMatrix {
        BitMatrix::from_picture(s).unwrap()
    }

    #[test]
    fn rref_picture() {
        let mut m = pic("11.1\n1.11\n.11.");
        let pivots = rref(&mut m);
        assert_eq!(pivots, vec![0, 1]);
        assert_eq!(m.to_picture(), "1.11\n.11.\n....\n");
        assert_eq!(rank(&pic("11.1\n1.11\n.11.")), 2);
        assert_eq!(rank(&pic("11.1\n1.11\n.111")), 3);
    }

    #[test]
    fn kernel_is_orthogonal_and_complete() {
        let h = pic("1.1.1.1\n.11..11\n...1111");
        let k = kernel(&h);
        assert_eq!(k.rows(), 4);
        assert!(h.mul(&k.transpose()).is_zero());
        assert_eq!(rank(&k), 4);
    }

    #[test]
    fn repetition_code_logicals() {
        // The 3-bit repetition code as a CSS code with no X checks: one logical qubit.
        let hz = pic("11.\n.11");
        let hx = BitMatrix::zeros(0, 3);
        let (lx, lz) = css_logicals(&hx, &hz);
        assert_eq!(lx.to_picture(), "111\n");
        // Any single-qubit Z is a logical (no X checks see it); the first basis vector of the
        // kernel that is independent of the Z checks is picked.
        assert_eq!(lz.to_picture(), "1..\n");
        assert!(crate::bitmat::dot(lx.row(0), lz.row(0)));
    }

    #[test]
    fn in_row_space_detects_membership() {
        let m = pic("11..\n..11");
        let mut v = vec![0u64; 1];
        v[0] = 0b1111;
        assert!(in_row_space(&m, &v));
        v[0] = 0b0111;
        assert!(!in_row_space(&m, &v));
    }
}
