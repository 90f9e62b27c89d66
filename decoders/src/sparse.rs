//! Sparse GF(2) matrices in compressed-column form (CSC), for the check and observable matrices
//! of a detector error model, where a dense matrix would be mostly zeros.
//!
//! Column `c` lists its rows in `rows[start[c]..start[c + 1]]`, strictly ascending (so no
//! entry appears twice). Indices are `u32`: the constructors refuse shapes that do not fit.
//! [`SparseMatrix::rows_of`] gives the compressed-row form (CSR) when a caller walks rows.
//!
//! ```
//! use backline_decoders::sparse::SparseMatrix;
//! let h = SparseMatrix::from_columns(2, &[vec![0], vec![0, 1], vec![1]]).unwrap();
//! assert_eq!(h.col(1), &[0, 1]);
//! assert_eq!(h.to_dense().to_picture(), "11.\n.11\n");
//! ```

use crate::bitmat::BitMatrix;
use crate::error::DecoderError;

/// A sparse `rows × cols` GF(2) matrix, column-compressed.
///
/// Invariants: `start.len() == cols + 1`, `start[0] == 0`, `start` non-decreasing,
/// `start[cols] == entries.len()`, and each column's rows strictly ascending and `< rows`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SparseMatrix {
    rows: usize,
    cols: usize,
    start: Vec<u32>,
    entries: Vec<u32>,
}

impl SparseMatrix {
    /// The matrix whose column `c` has ones in rows `columns[c]` (any order; a row listed twice
    /// cancels, as GF(2) addition does). Errors when a row is `≥ rows` or the shape does not
    /// fit 32-bit indices.
    pub fn from_columns<C: AsRef<[u32]>>(
        rows: usize,
        columns: &[C],
    ) -> Result<SparseMatrix, DecoderError> {
        let mut m = SparseMatrix {
            rows,
            cols: 0,
            start: vec![0],
            entries: Vec::new(),
        };
        let mut scratch = Vec::new();
        for col in columns {
            scratch.clear();
            scratch.extend_from_slice(col.as_ref());
            m.push_column(&mut scratch)?;
        }
        Ok(m)
    }

    /// An empty `rows × 0` matrix to which columns are appended with [`SparseMatrix::push_column`].
    pub fn with_rows(rows: usize) -> SparseMatrix {
        SparseMatrix {
            rows,
            cols: 0,
            start: vec![0],
            entries: Vec::new(),
        }
    }

    /// Appends a column with ones in `rows` (sorted in place; pairs cancel).
    pub fn push_column(&mut self, rows: &mut [u32]) -> Result<(), DecoderError> {
        rows.sort_unstable();
        let mut k = 0;
        while k < rows.len() {
            let r = rows[k];
            if r as usize >= self.rows {
                return Err(DecoderError::Matrix(format!(
                    "row {r} of column {} is outside the {} rows",
                    self.cols, self.rows
                )));
            }
            let mut j = k;
            while j < rows.len() && rows[j] == r {
                j += 1;
            }
            if (j - k) % 2 == 1 {
                self.entries.push(r);
            }
            k = j;
        }
        if self.entries.len() >= u32::MAX as usize || self.rows >= u32::MAX as usize {
            return Err(DecoderError::Matrix(
                "too many entries for 32-bit indices".into(),
            ));
        }
        self.start.push(self.entries.len() as u32);
        self.cols += 1;
        Ok(())
    }

    /// The sparse form of a dense matrix.
    pub fn from_dense(h: &BitMatrix) -> SparseMatrix {
        let t = h.transpose();
        let mut m = SparseMatrix::with_rows(h.rows());
        m.entries.reserve(h.count_ones());
        for c in 0..h.cols() {
            m.entries.extend(t.row_ones(c).map(|r| r as u32));
            m.start.push(m.entries.len() as u32);
            m.cols += 1;
        }
        m
    }

    /// The dense form.
    ///
    /// # Panics
    /// If it would be larger than [`crate::bitmat::MAX_DENSE_BITS`]: see
    /// [`SparseMatrix::try_to_dense`].
    pub fn to_dense(&self) -> BitMatrix {
        self.try_to_dense().unwrap_or_else(|e| panic!("{e}"))
    }

    /// The dense form, or an error when it would not fit.
    pub fn try_to_dense(&self) -> Result<BitMatrix, crate::bitmat::TooLarge> {
        let mut d = BitMatrix::try_zeros(self.rows, self.cols)?;
        for c in 0..self.cols {
            for &r in self.col(c) {
                d.set(r as usize, c, true);
            }
        }
        Ok(d)
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Number of ones.
    pub fn nnz(&self) -> usize {
        self.entries.len()
    }

    /// The rows of column `c`, ascending.
    #[inline]
    pub fn col(&self, c: usize) -> &[u32] {
        &self.entries[self.start[c] as usize..self.start[c + 1] as usize]
    }

    /// Ones in column `c`.
    #[inline]
    pub fn col_weight(&self, c: usize) -> usize {
        (self.start[c + 1] - self.start[c]) as usize
    }

    /// The compressed-row form: `(start, columns)` with row `r`'s columns, ascending, in
    /// `columns[start[r]..start[r + 1]]`.
    pub fn rows_of(&self) -> (Vec<u32>, Vec<u32>) {
        let mut start = vec![0u32; self.rows + 1];
        for &r in &self.entries {
            start[r as usize + 1] += 1;
        }
        for r in 0..self.rows {
            start[r + 1] += start[r];
        }
        let mut fill = start.clone();
        let mut cols = vec![0u32; self.entries.len()];
        for c in 0..self.cols {
            for &r in self.col(c) {
                cols[fill[r as usize] as usize] = c as u32;
                fill[r as usize] += 1;
            }
        }
        (start, cols)
    }

    /// Ones in each row.
    pub fn row_weights(&self) -> Vec<u32> {
        let mut w = vec![0u32; self.rows];
        for &r in &self.entries {
            w[r as usize] += 1;
        }
        w
    }

    /// The matrix of the columns `keep` (in that order).
    pub fn select_columns(&self, keep: &[u32]) -> SparseMatrix {
        let mut m = SparseMatrix::with_rows(self.rows);
        for &c in keep {
            m.entries.extend_from_slice(self.col(c as usize));
            m.start.push(m.entries.len() as u32);
            m.cols += 1;
        }
        m
    }

    /// `out ^= self · x` over GF(2) for a 0/1 byte vector `x` (one byte per column; any
    /// non-zero byte is 1) into a 0/1 byte vector `out` (one byte per row).
    pub fn mul_bytes_xor(&self, x: &[u8], out: &mut [u8]) {
        debug_assert_eq!(x.len(), self.cols);
        debug_assert_eq!(out.len(), self.rows);
        for (c, &v) in x.iter().enumerate() {
            if v != 0 {
                for &r in self.col(c) {
                    out[r as usize] ^= 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_sort_and_cancel() {
        let m = SparseMatrix::from_columns(4, &[vec![3, 1, 1, 1, 0], vec![], vec![2, 2]]).unwrap();
        assert_eq!(m.col(0), &[0, 1, 3]);
        assert_eq!(m.col(1), &[] as &[u32]);
        assert_eq!(m.col(2), &[] as &[u32]);
        assert_eq!(m.nnz(), 3);
        assert_eq!(m.to_dense().to_picture(), "1..\n1..\n...\n1..\n");
        assert!(SparseMatrix::from_columns(2, &[vec![2]]).is_err());
    }

    #[test]
    fn dense_round_trip_and_rows() {
        let d = BitMatrix::from_picture("1.1.\n.11.\n1..1").unwrap();
        let s = SparseMatrix::from_dense(&d);
        assert_eq!(s.to_dense(), d);
        let (start, cols) = s.rows_of();
        assert_eq!(start, vec![0, 2, 4, 6]);
        assert_eq!(cols, vec![0, 2, 1, 2, 0, 3]);
        assert_eq!(s.row_weights(), vec![2, 2, 2]);
        let sel = s.select_columns(&[3, 0]);
        assert_eq!(sel.to_dense().to_picture(), ".1\n..\n11\n");
        let mut out = vec![0u8; 3];
        s.mul_bytes_xor(&[1, 0, 1, 0], &mut out);
        assert_eq!(out, vec![0, 1, 1]);
    }
}
