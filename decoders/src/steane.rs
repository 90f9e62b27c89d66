//! The Steane [[7,1,3]] code's lookup decoder (SPEC §5): a 3-bit syndrome of the [7,4,3]
//! Hamming parity checks names the one qubit to flip.
//!
//! The parity-check matrix has column `j` (0-based) equal to the binary digits of `j + 1`,
//! row `i` holding bit `i`:
//!
//! ```text
//! row 0: 1.1.1.1
//! row 1: .11..11
//! row 2: ...1111
//! ```
//!
//! so a single flip on qubit `q` produces the syndrome value `q + 1`, with syndrome bit `i`
//! taken from row `i`.

/// Number of physical qubits.
pub const N: usize = 7;

/// What the lookup answers when the syndrome is zero.
pub const NO_ERROR: u8 = 0x0F;

/// The Hamming [7,4,3] parity-check matrix, one `u8` per row, bit `j` = column `j`.
pub const H: [u8; 3] = {
    let mut rows = [0u8; 3];
    let mut j = 0;
    while j < N {
        let col = (j + 1) as u8;
        let mut i = 0;
        while i < 3 {
            if col >> i & 1 == 1 {
                rows[i] |= 1 << j;
            }
            i += 1;
        }
        j += 1;
    }
    rows
};

/// The lookup table, derived from [`H`]: syndrome value → qubit index, or [`NO_ERROR`].
pub const TABLE: [u8; 8] = {
    let mut t = [NO_ERROR; 8];
    let mut q = 0;
    while q < N {
        t[syndrome_of(1 << q) as usize] = q as u8;
        q += 1;
    }
    t
};

/// The 3-bit syndrome of an error pattern (bit `j` = qubit `j`).
pub const fn syndrome_of(error: u8) -> u8 {
    let mut s = 0u8;
    let mut i = 0;
    while i < 3 {
        s |= (((H[i] & error).count_ones() & 1) as u8) << i;
        i += 1;
    }
    s
}

/// The qubit to flip for a syndrome (only its low 3 bits are read), or [`NO_ERROR`].
#[inline]
pub const fn decode(syndrome: u8) -> u8 {
    TABLE[(syndrome & 7) as usize]
}

/// The correction as an error pattern (bit `j` = qubit `j`), 0 when nothing is flipped.
#[inline]
pub const fn correction(syndrome: u8) -> u8 {
    match decode(syndrome) {
        NO_ERROR => 0,
        q => 1 << q,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_picture() {
        let pic: Vec<String> = H
            .iter()
            .map(|r| {
                (0..N)
                    .map(|j| if r >> j & 1 == 1 { '1' } else { '.' })
                    .collect()
            })
            .collect();
        assert_eq!(pic, ["1.1.1.1", ".11..11", "...1111"]);
    }

    #[test]
    fn every_single_error_is_corrected() {
        for q in 0..N {
            let s = syndrome_of(1 << q);
            assert_eq!(decode(s), q as u8);
            assert_eq!(syndrome_of(correction(s) ^ (1 << q)), 0);
        }
        assert_eq!(decode(0), NO_ERROR);
        assert_eq!(correction(0), 0);
    }

    #[test]
    fn lookup_is_minimum_weight_on_every_syndrome() {
        // Exhaustive: for each syndrome, the lightest error pattern with that syndrome has the
        // weight of the lookup's correction, and the correction has that syndrome.
        for s in 0u8..8 {
            let best = (0u8..128)
                .filter(|&e| syndrome_of(e) == s)
                .map(|e| e.count_ones())
                .min()
                .unwrap();
            let c = correction(s);
            assert_eq!(syndrome_of(c), s);
            assert_eq!(c.count_ones(), best);
        }
    }
}
