//! Bit-packed GF(2) vectors and matrices.
//!
//! A row of `cols` bits is stored in `words_for(cols)` little-endian `u64` words: bit `j` of the
//! row is bit `j % 64` of word `j / 64`. The padding bits past `cols` in the last word are
//! always zero, so whole-word XOR, AND and popcount never need a tail case. The containers know
//! their real length; the word slices they hand out do not, so callers that write words
//! directly (for example through [`BitMatrix::row_mut`]) must keep the padding zero.
//!
//! Matrices print and parse as text pictures, one row per line, `1` for a set bit and `.`
//! for a clear one (`0` is accepted when parsing):
//!
//! ```
//! use backline_decoders::bitmat::BitMatrix;
//! let h = BitMatrix::from_picture("11.\n.11").unwrap();
//! assert_eq!(h.rows(), 2);
//! assert_eq!(h.to_picture(), "11.\n.11\n");
//! ```

use std::fmt;

/// Bits per storage word.
pub const WORD_BITS: usize = 64;

/// Number of `u64` words that hold `bits` bits.
#[inline]
pub const fn words_for(bits: usize) -> usize {
    bits.div_ceil(WORD_BITS)
}

/// Mask of the valid bits in the last word of a `bits`-bit vector (all ones when `bits` is a
/// multiple of 64, including 0).
#[inline]
const fn tail_mask(bits: usize) -> u64 {
    match bits % WORD_BITS {
        0 => u64::MAX,
        r => (1u64 << r) - 1,
    }
}

/// Bit `j` of a packed word slice.
#[inline]
pub fn get_bit(words: &[u64], j: usize) -> bool {
    words[j / WORD_BITS] >> (j % WORD_BITS) & 1 == 1
}

/// Sets bit `j` of a packed word slice to `value`.
#[inline]
pub fn set_bit(words: &mut [u64], j: usize, value: bool) {
    let mask = 1u64 << (j % WORD_BITS);
    if value {
        words[j / WORD_BITS] |= mask;
    } else {
        words[j / WORD_BITS] &= !mask;
    }
}

/// Flips bit `j` of a packed word slice.
#[inline]
pub fn flip_bit(words: &mut [u64], j: usize) {
    words[j / WORD_BITS] ^= 1u64 << (j % WORD_BITS);
}

/// `dst ^= src`, word by word (the slices must have equal length).
#[inline]
pub fn xor_into(dst: &mut [u64], src: &[u64]) {
    debug_assert_eq!(dst.len(), src.len());
    for (d, s) in dst.iter_mut().zip(src) {
        *d ^= s;
    }
}

/// Number of set bits.
#[inline]
pub fn popcount(words: &[u64]) -> u32 {
    words.iter().map(|w| w.count_ones()).sum()
}

/// Parity of the AND of two equal-length packed vectors (their GF(2) inner product).
#[inline]
pub fn dot(a: &[u64], b: &[u64]) -> bool {
    debug_assert_eq!(a.len(), b.len());
    let mut acc = 0u64;
    for (x, y) in a.iter().zip(b) {
        acc ^= x & y;
    }
    acc.count_ones() & 1 == 1
}

/// Iterator over the indices of the set bits of a packed vector, ascending.
#[derive(Debug, Clone)]
pub struct Ones<'a> {
    words: &'a [u64],
    index: usize,
    current: u64,
}

impl<'a> Ones<'a> {
    /// Iterates over the set bits of `words`.
    pub fn new(words: &'a [u64]) -> Ones<'a> {
        Ones {
            words,
            index: 0,
            current: words.first().copied().unwrap_or(0),
        }
    }
}

impl Iterator for Ones<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        loop {
            if self.current != 0 {
                let bit = self.current.trailing_zeros() as usize;
                self.current &= self.current - 1;
                return Some(self.index * WORD_BITS + bit);
            }
            self.index += 1;
            if self.index >= self.words.len() {
                return None;
            }
            self.current = self.words[self.index];
        }
    }
}

/// The most bits a dense matrix may hold: 2^32 (512 MiB). Sizes from input (a code's
/// parameters, a file's header) are checked against it before anything is allocated, so a
/// hostile or mistaken size is an error instead of an abort; a code this large is beyond what
/// the dense elimination of OSD could decode anyway.
pub const MAX_DENSE_BITS: u64 = 1 << 32;

/// A dense matrix that would be larger than [`MAX_DENSE_BITS`], or whose memory could not be
/// had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a dense {rows} × {cols} matrix is too large: {} bits, the limit is {MAX_DENSE_BITS} \
     (512 MiB){}",
    (*rows as u128) * (*cols as u128),
    if *out_of_memory { "; and its memory could not be allocated" } else { "" }
)]
pub struct TooLarge {
    /// Rows asked for.
    pub rows: usize,
    /// Columns asked for.
    pub cols: usize,
    /// The size was within the limit but the allocation failed.
    pub out_of_memory: bool,
}

/// A picture that is not a matrix: rows of different lengths, or a character other than
/// `1`, `.` and `0`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PictureError {
    /// A row's length differs from the first row's.
    #[error("picture row {row} has {found} columns, expected {expected}")]
    Ragged {
        /// 0-based row.
        row: usize,
        /// Columns of the first row.
        expected: usize,
        /// Columns of this row.
        found: usize,
    },
    /// A character other than `1`, `.` or `0`.
    #[error("picture row {row} column {col}: unexpected character {ch:?}")]
    BadChar {
        /// 0-based row.
        row: usize,
        /// 0-based column.
        col: usize,
        /// The character.
        ch: char,
    },
}

/// A dense GF(2) matrix with bit-packed rows.
///
/// Invariants: `data.len() == rows * words_per_row`, `words_per_row == words_for(cols)`, and
/// every padding bit (column index ≥ `cols` in a row's last word) is zero.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct BitMatrix {
    rows: usize,
    cols: usize,
    words_per_row: usize,
    data: Vec<u64>,
}

impl BitMatrix {
    /// The `rows × cols` zero matrix, for sizes the caller controls.
    ///
    /// # Panics
    /// If it would hold more than [`MAX_DENSE_BITS`] bits or cannot be allocated: sizes that
    /// come from input go through [`BitMatrix::try_zeros`].
    pub fn zeros(rows: usize, cols: usize) -> BitMatrix {
        BitMatrix::try_zeros(rows, cols).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The `rows × cols` zero matrix, or [`TooLarge`] when it would hold more than
    /// [`MAX_DENSE_BITS`] bits or its memory cannot be had (checked before allocating).
    pub fn try_zeros(rows: usize, cols: usize) -> Result<BitMatrix, TooLarge> {
        let words_per_row = words_for(cols);
        let too_large = |out_of_memory| TooLarge {
            rows,
            cols,
            out_of_memory,
        };
        let words = rows
            .checked_mul(words_per_row)
            .filter(|&w| (w as u64).saturating_mul(WORD_BITS as u64) <= MAX_DENSE_BITS)
            .ok_or(too_large(false))?;
        let mut data = Vec::new();
        data.try_reserve_exact(words).map_err(|_| too_large(true))?;
        data.resize(words, 0);
        Ok(BitMatrix {
            rows,
            cols,
            words_per_row,
            data,
        })
    }

    /// The `n × n` identity.
    pub fn identity(n: usize) -> BitMatrix {
        let mut m = BitMatrix::zeros(n, n);
        for i in 0..n {
            m.set(i, i, true);
        }
        m
    }

    /// A matrix from rows of 0/1 bytes (any non-zero byte counts as 1).
    ///
    /// # Panics
    /// If the rows have different lengths.
    pub fn from_rows<R: AsRef<[u8]>>(rows: &[R]) -> BitMatrix {
        let cols = rows.first().map_or(0, |r| r.as_ref().len());
        let mut m = BitMatrix::zeros(rows.len(), cols);
        for (i, r) in rows.iter().enumerate() {
            let r = r.as_ref();
            assert_eq!(
                r.len(),
                cols,
                "row {i} has {} columns, expected {cols}",
                r.len()
            );
            for (j, &b) in r.iter().enumerate() {
                if b != 0 {
                    m.set(i, j, true);
                }
            }
        }
        m
    }

    /// Parses a text picture: one row per line, `1` set, `.` or `0` clear. Blank lines and
    /// surrounding whitespace are ignored.
    pub fn from_picture(picture: &str) -> Result<BitMatrix, PictureError> {
        let lines: Vec<&str> = picture
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let cols = lines.first().map_or(0, |l| l.chars().count());
        let mut m = BitMatrix::zeros(lines.len(), cols);
        for (i, line) in lines.iter().enumerate() {
            let found = line.chars().count();
            if found != cols {
                return Err(PictureError::Ragged {
                    row: i,
                    expected: cols,
                    found,
                });
            }
            for (j, ch) in line.chars().enumerate() {
                match ch {
                    '1' => m.set(i, j, true),
                    '.' | '0' => {}
                    ch => return Err(PictureError::BadChar { row: i, col: j, ch }),
                }
            }
        }
        Ok(m)
    }

    /// The text picture: one line per row, `1` and `.`, each line ending in `\n`.
    pub fn to_picture(&self) -> String {
        let mut s = String::with_capacity(self.rows * (self.cols + 1));
        for i in 0..self.rows {
            for j in 0..self.cols {
                s.push(if self.get(i, j) { '1' } else { '.' });
            }
            s.push('\n');
        }
        s
    }

    /// Number of rows.
    #[inline]
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns.
    #[inline]
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Words per packed row (`words_for(cols)`).
    #[inline]
    pub fn words_per_row(&self) -> usize {
        self.words_per_row
    }

    /// Entry `(i, j)`.
    #[inline]
    pub fn get(&self, i: usize, j: usize) -> bool {
        debug_assert!(i < self.rows && j < self.cols);
        get_bit(self.row(i), j)
    }

    /// Sets entry `(i, j)`.
    #[inline]
    pub fn set(&mut self, i: usize, j: usize, value: bool) {
        assert!(j < self.cols, "column {j} out of range {}", self.cols);
        set_bit(self.row_mut(i), j, value);
    }

    /// Flips entry `(i, j)`.
    #[inline]
    pub fn flip(&mut self, i: usize, j: usize) {
        assert!(j < self.cols, "column {j} out of range {}", self.cols);
        flip_bit(self.row_mut(i), j);
    }

    /// Packed row `i`.
    #[inline]
    pub fn row(&self, i: usize) -> &[u64] {
        &self.data[i * self.words_per_row..(i + 1) * self.words_per_row]
    }

    /// Packed row `i`, writable. The caller keeps the padding bits zero.
    #[inline]
    pub fn row_mut(&mut self, i: usize) -> &mut [u64] {
        &mut self.data[i * self.words_per_row..(i + 1) * self.words_per_row]
    }

    /// Row `src` XORed into row `dst` (`dst != src`).
    #[inline]
    pub fn xor_row(&mut self, dst: usize, src: usize) {
        assert_ne!(dst, src, "xor_row of a row into itself");
        let w = self.words_per_row;
        let (d, s) = if dst < src {
            let (lo, hi) = self.data.split_at_mut(src * w);
            (&mut lo[dst * w..dst * w + w], &hi[..w])
        } else {
            let (lo, hi) = self.data.split_at_mut(dst * w);
            (&mut hi[..w], &lo[src * w..src * w + w])
        };
        xor_into(d, s);
    }

    /// Swaps rows `a` and `b`.
    pub fn swap_rows(&mut self, a: usize, b: usize) {
        if a == b {
            return;
        }
        let w = self.words_per_row;
        for k in 0..w {
            self.data.swap(a * w + k, b * w + k);
        }
    }

    /// Number of set bits in row `i`.
    pub fn row_weight(&self, i: usize) -> usize {
        popcount(self.row(i)) as usize
    }

    /// Number of set bits in column `j`.
    pub fn col_weight(&self, j: usize) -> usize {
        (0..self.rows).filter(|&i| self.get(i, j)).count()
    }

    /// Column indices of the set bits of row `i`, ascending.
    pub fn row_ones(&self, i: usize) -> Ones<'_> {
        Ones::new(self.row(i))
    }

    /// Number of set bits in the whole matrix.
    pub fn count_ones(&self) -> usize {
        popcount(&self.data) as usize
    }

    /// Whether every entry is zero.
    pub fn is_zero(&self) -> bool {
        self.data.iter().all(|&w| w == 0)
    }

    /// The transpose.
    pub fn transpose(&self) -> BitMatrix {
        let mut t = BitMatrix::zeros(self.cols, self.rows);
        for i in 0..self.rows {
            for j in self.row_ones(i) {
                t.set(j, i, true);
            }
        }
        t
    }

    /// The matrix product `self · other` over GF(2).
    ///
    /// # Panics
    /// If the inner dimensions differ.
    pub fn mul(&self, other: &BitMatrix) -> BitMatrix {
        assert_eq!(self.cols, other.rows, "inner dimensions differ");
        let mut out = BitMatrix::zeros(self.rows, other.cols);
        for i in 0..self.rows {
            for k in self.row_ones(i) {
                let w = other.words_per_row;
                let src = &other.data[k * w..k * w + w];
                xor_into(&mut out.data[i * w..i * w + w], src);
            }
        }
        out
    }

    /// `self · v` for a packed vector of `cols` bits, into a packed vector of `rows` bits.
    pub fn mul_vec(&self, v: &[u64], out: &mut [u64]) {
        assert_eq!(
            v.len(),
            self.words_per_row,
            "vector has the wrong word count"
        );
        assert_eq!(
            out.len(),
            words_for(self.rows),
            "output has the wrong word count"
        );
        out.fill(0);
        for i in 0..self.rows {
            if dot(self.row(i), v) {
                set_bit(out, i, true);
            }
        }
    }

    /// `self · v` for a 0/1 byte vector of `cols` entries, into a 0/1 byte vector of `rows`
    /// entries.
    pub fn mul_bytes(&self, v: &[u8], out: &mut [u8]) {
        assert_eq!(v.len(), self.cols, "vector has the wrong length");
        assert_eq!(out.len(), self.rows, "output has the wrong length");
        for (i, o) in out.iter_mut().enumerate() {
            let mut parity = 0u8;
            for j in self.row_ones(i) {
                parity ^= v[j] & 1;
            }
            *o = parity;
        }
    }

    /// The Kronecker product `self ⊗ other`.
    pub fn kron(&self, other: &BitMatrix) -> BitMatrix {
        let mut out = BitMatrix::zeros(self.rows * other.rows, self.cols * other.cols);
        for i in 0..self.rows {
            for j in self.row_ones(i) {
                for k in 0..other.rows {
                    for l in other.row_ones(k) {
                        out.set(i * other.rows + k, j * other.cols + l, true);
                    }
                }
            }
        }
        out
    }

    /// `[self | other]`.
    ///
    /// # Panics
    /// If the row counts differ.
    pub fn hstack(&self, other: &BitMatrix) -> BitMatrix {
        assert_eq!(self.rows, other.rows, "hstack of different row counts");
        let mut out = BitMatrix::zeros(self.rows, self.cols + other.cols);
        for i in 0..self.rows {
            for j in self.row_ones(i) {
                out.set(i, j, true);
            }
            for j in other.row_ones(i) {
                out.set(i, self.cols + j, true);
            }
        }
        out
    }

    /// `self` above `other`.
    ///
    /// # Panics
    /// If the column counts differ.
    pub fn vstack(&self, other: &BitMatrix) -> BitMatrix {
        assert_eq!(self.cols, other.cols, "vstack of different column counts");
        let mut data = Vec::with_capacity(self.data.len() + other.data.len());
        data.extend_from_slice(&self.data);
        data.extend_from_slice(&other.data);
        BitMatrix {
            rows: self.rows + other.rows,
            cols: self.cols,
            words_per_row: self.words_per_row,
            data,
        }
    }

    /// The matrix made of the listed rows, in that order.
    pub fn select_rows(&self, rows: &[usize]) -> BitMatrix {
        let mut out = BitMatrix::zeros(rows.len(), self.cols);
        for (k, &i) in rows.iter().enumerate() {
            out.row_mut(k).copy_from_slice(self.row(i));
        }
        out
    }

    /// Checks the padding invariant (used by tests and debug assertions).
    pub fn padding_is_zero(&self) -> bool {
        if self.words_per_row == 0 {
            return true;
        }
        let mask = tail_mask(self.cols);
        (0..self.rows).all(|i| self.row(i)[self.words_per_row - 1] & !mask == 0)
    }
}

impl fmt::Debug for BitMatrix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "BitMatrix {}x{}", self.rows, self.cols)?;
        f.write_str(&self.to_picture())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a test body once for each column count around the word boundaries.
    macro_rules! for_each_width {
        (|$cols:ident| $body:block) => {
            for $cols in [1usize, 2, 7, 63, 64, 65, 127, 128, 129, 191, 200] {
                $body
            }
        };
    }

    fn pseudo_random(rows: usize, cols: usize, seed: u64) -> BitMatrix {
        let mut x = seed | 1;
        let mut m = BitMatrix::zeros(rows, cols);
        for i in 0..rows {
            for j in 0..cols {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if x & 3 == 0 {
                    m.set(i, j, true);
                }
            }
        }
        m
    }

    #[test]
    fn picture_round_trip() {
        let pic = "1.1.\n.11.\n...1\n";
        let m = BitMatrix::from_picture(pic).unwrap();
        assert_eq!((m.rows(), m.cols()), (3, 4));
        assert_eq!(m.to_picture(), pic);
        assert!(m.get(0, 0) && !m.get(0, 1) && m.get(2, 3));
    }

    #[test]
    fn picture_errors() {
        assert_eq!(
            BitMatrix::from_picture("11\n1"),
            Err(PictureError::Ragged {
                row: 1,
                expected: 2,
                found: 1
            })
        );
        assert_eq!(
            BitMatrix::from_picture("1x"),
            Err(PictureError::BadChar {
                row: 0,
                col: 1,
                ch: 'x'
            })
        );
    }

    #[test]
    fn transpose_twice_is_identity_and_keeps_padding() {
        for_each_width!(|cols| {
            let m = pseudo_random(5, cols, cols as u64 + 3);
            let t = m.transpose();
            assert_eq!((t.rows(), t.cols()), (cols, 5));
            assert!(t.padding_is_zero() && m.padding_is_zero());
            assert_eq!(t.transpose(), m);
            for i in 0..5 {
                for j in 0..cols {
                    assert_eq!(m.get(i, j), t.get(j, i));
                }
            }
        });
    }

    #[test]
    fn ones_iterates_set_bits_in_order() {
        for_each_width!(|cols| {
            let m = pseudo_random(1, cols, 99 + cols as u64);
            let ones: Vec<usize> = m.row_ones(0).collect();
            let expected: Vec<usize> = (0..cols).filter(|&j| m.get(0, j)).collect();
            assert_eq!(ones, expected);
            assert_eq!(m.row_weight(0), expected.len());
        });
    }

    #[test]
    fn mul_matches_naive_product() {
        for_each_width!(|cols| {
            let a = pseudo_random(4, cols, 7 + cols as u64);
            let b = pseudo_random(cols, 3, 11 + cols as u64);
            let c = a.mul(&b);
            for i in 0..4 {
                for j in 0..3 {
                    let naive = (0..cols).filter(|&k| a.get(i, k) && b.get(k, j)).count() % 2 == 1;
                    assert_eq!(c.get(i, j), naive);
                }
            }
            // mul_vec and mul_bytes agree with mul against a single column.
            let v: Vec<u8> = (0..cols).map(|k| b.get(k, 0) as u8).collect();
            let mut packed = vec![0u64; words_for(cols)];
            for (k, &x) in v.iter().enumerate() {
                set_bit(&mut packed, k, x == 1);
            }
            let mut out = vec![0u64; 1];
            a.mul_vec(&packed, &mut out);
            let mut out_bytes = vec![0u8; 4];
            a.mul_bytes(&v, &mut out_bytes);
            for (i, &o) in out_bytes.iter().enumerate() {
                assert_eq!(get_bit(&out, i), c.get(i, 0));
                assert_eq!(o == 1, c.get(i, 0));
            }
        });
    }

    #[test]
    fn xor_and_swap_rows() {
        for_each_width!(|cols| {
            let mut m = pseudo_random(3, cols, 5 + cols as u64);
            let r0: Vec<bool> = (0..cols).map(|j| m.get(0, j)).collect();
            let r2: Vec<bool> = (0..cols).map(|j| m.get(2, j)).collect();
            m.xor_row(2, 0);
            for (j, (&a, &b)) in r0.iter().zip(&r2).enumerate() {
                assert_eq!(m.get(2, j), a ^ b);
            }
            m.xor_row(0, 2);
            for (j, &b) in r2.iter().enumerate() {
                assert_eq!(m.get(0, j), b);
            }
            m.swap_rows(0, 1);
            for (j, &b) in r2.iter().enumerate() {
                assert_eq!(m.get(1, j), b);
            }
            assert!(m.padding_is_zero());
        });
    }

    #[test]
    fn kron_hstack_vstack_pictures() {
        let a = BitMatrix::from_picture("11.\n.11").unwrap();
        let i2 = BitMatrix::identity(2);
        assert_eq!(a.kron(&i2).to_picture(), "1.1...\n.1.1..\n..1.1.\n...1.1\n");
        assert_eq!(a.hstack(&i2).to_picture(), "11.1.\n.11.1\n");
        assert_eq!(a.vstack(&a).to_picture(), "11.\n.11\n11.\n.11\n");
        assert_eq!(a.select_rows(&[1]).to_picture(), ".11\n");
    }
}
