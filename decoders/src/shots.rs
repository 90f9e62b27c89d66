//! Shot data in stim's `01` and `b8` formats: detection events (one bit per detector) or
//! observable flips (one bit per observable), one record per shot.
//!
//! - **`01`**: one line per shot, one character `0` or `1` per bit, then `\n` (a `\r\n` ending
//!   reads too). Every line must have exactly the record's number of bits. Records of zero
//!   bits (the observables of a model that has none) are empty lines, one per shot, as stim
//!   writes them.
//! - **`b8`**: each shot is `⌈bits/8⌉` bytes, bit `i` of the shot is bit `i % 8` of byte `i / 8`
//!   (little-endian bit order); padding bits are written zero and ignored on reading. The
//!   file's length must be a whole number of shots. Records of zero bits are zero bytes: a
//!   `b8` file of them is empty (as stim writes it) and does not say how many shots it holds;
//!   [`ShotTable::read`] reads it as zero shots, [`ShotTable::zeros`] makes any number.
//!
//! In memory, a [`ShotTable`] keeps every shot in the `b8` layout — the layout sinter hands to
//! `decode_shots_bit_packed` — so a row is a byte slice a decoder reads directly.
//!
//! ```
//! use backline_decoders::shots::{ShotFormat, ShotTable};
//! let t = ShotTable::read(b"0110\n1000\n", ShotFormat::Ascii01, 4, "dets.01").unwrap();
//! assert_eq!((t.shots(), t.row(0)), (2, &[0b0110][..]));
//! assert_eq!(t.to_bytes(ShotFormat::B8), vec![0b0110, 0b0001]);
//! ```

use std::fmt;
use std::str::FromStr;

/// A shot file's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShotFormat {
    /// `01`: a line of `0`/`1` characters per shot.
    Ascii01,
    /// `b8`: `⌈bits/8⌉` bytes per shot, little-endian bit order.
    B8,
}

impl FromStr for ShotFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<ShotFormat, String> {
        match s {
            "01" => Ok(ShotFormat::Ascii01),
            "b8" => Ok(ShotFormat::B8),
            _ => Err(format!(
                "unknown shot format \"{}\" (expected 01 or b8)",
                crate::io::excerpt(s)
            )),
        }
    }
}

impl fmt::Display for ShotFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShotFormat::Ascii01 => "01",
            ShotFormat::B8 => "b8",
        })
    }
}

/// A shot file that does not match its format or its record width: `file:line: what` for
/// `01` (line 0 when not about one line), `file: what` for `b8`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ShotError {
    /// The file's name.
    pub file: String,
    /// 1-based line of a `01` file, else 0.
    pub line: usize,
    /// What is wrong.
    pub kind: ShotErrorKind,
}

impl fmt::Display for ShotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::io::write_at(f, &self.file, self.line, &self.kind)
    }
}

/// What is wrong with a shot file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShotErrorKind {
    /// A `01` line whose length is not the record width.
    #[error("shot has {found} bits, expected {expected}")]
    Width {
        /// The record width.
        expected: usize,
        /// This line's.
        found: usize,
    },
    /// A character other than `0` and `1` in a `01` line.
    #[error("character {col}: {ch:?} is not 0 or 1")]
    BadChar {
        /// 1-based column.
        col: usize,
        /// The character.
        ch: char,
    },
    /// A `01` file whose last line has no `\n`.
    #[error("the last line has no line end (the file may be cut short)")]
    Unterminated,
    /// A `b8` file whose length is not a whole number of shots.
    #[error("{len} bytes is not a whole number of {per_shot}-byte shots ({bits} bits each)")]
    Length {
        /// The file's length.
        len: usize,
        /// Bytes per shot.
        per_shot: usize,
        /// Bits per shot.
        bits: usize,
    },
    /// `b8` records of zero bits (the shot count would be unknowable).
    #[error("b8 records of 0 bits cannot be counted")]
    ZeroWidth,
    /// The table would not fit in memory (or in the address space).
    #[error("{shots} shots of {bits} bits do not fit in memory")]
    TooLarge {
        /// Shots.
        shots: usize,
        /// Bits per shot.
        bits: usize,
    },
}

/// Shots of a fixed number of bits, each stored as `⌈bits/8⌉` bytes in the `b8` layout with
/// padding bits zero.
///
/// Invariant: `data.len() == shots * bytes_per_shot` (the shot count is kept apart, so that
/// records of zero bits still have one).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShotTable {
    bits: usize,
    bytes_per_shot: usize,
    shots: usize,
    data: Vec<u8>,
}

impl ShotTable {
    /// An all-zero table of `shots` records of `bits` bits.
    ///
    /// # Panics
    /// When it does not fit in memory: see [`ShotTable::try_zeros`].
    pub fn zeros(shots: usize, bits: usize) -> ShotTable {
        ShotTable::try_zeros(shots, bits).unwrap_or_else(|e| panic!("{e}"))
    }

    /// An all-zero table of `shots` records of `bits` bits, or
    /// [`ShotErrorKind::TooLarge`] when it does not fit in memory (the allocation is
    /// fallible: sizes that come from input use this).
    pub fn try_zeros(shots: usize, bits: usize) -> Result<ShotTable, ShotErrorKind> {
        let bytes_per_shot = bits.div_ceil(8);
        let too_large = ShotErrorKind::TooLarge { shots, bits };
        let len = shots.checked_mul(bytes_per_shot).ok_or(too_large.clone())?;
        let mut data = Vec::new();
        data.try_reserve_exact(len).map_err(|_| too_large)?;
        data.resize(len, 0);
        Ok(ShotTable {
            bits,
            bytes_per_shot,
            shots,
            data,
        })
    }

    /// A table from packed rows laid out back to back (`⌈bits/8⌉` bytes each); padding bits
    /// are cleared. `None` when the length is not a whole number of rows (or `bits` is 0 and
    /// `data` is not empty: such a table is [`ShotTable::zeros`]).
    pub fn from_packed(data: Vec<u8>, bits: usize) -> Option<ShotTable> {
        let bytes_per_shot = bits.div_ceil(8);
        if bytes_per_shot == 0 {
            return data.is_empty().then(|| ShotTable::zeros(0, bits));
        }
        if !data.len().is_multiple_of(bytes_per_shot) {
            return None;
        }
        let mut t = ShotTable {
            bits,
            bytes_per_shot,
            shots: data.len() / bytes_per_shot,
            data,
        };
        t.clear_padding();
        Some(t)
    }

    fn clear_padding(&mut self) {
        if !self.bits.is_multiple_of(8) {
            let mask = (1u8 << (self.bits % 8)) - 1;
            for row in self.data.chunks_exact_mut(self.bytes_per_shot) {
                *row.last_mut().expect("non-empty row") &= mask;
            }
        }
    }

    /// Reads a file's contents in `format`, each record `bits` wide; `file` names it in errors.
    pub fn read(
        bytes: &[u8],
        format: ShotFormat,
        bits: usize,
        file: &str,
    ) -> Result<ShotTable, ShotError> {
        let err = |line: usize, kind: ShotErrorKind| ShotError {
            file: file.to_string(),
            line,
            kind,
        };
        match format {
            ShotFormat::B8 => {
                let per_shot = bits.div_ceil(8);
                if per_shot == 0 {
                    return if bytes.is_empty() {
                        Ok(ShotTable::zeros(0, bits))
                    } else {
                        Err(err(0, ShotErrorKind::ZeroWidth))
                    };
                }
                if !bytes.len().is_multiple_of(per_shot) {
                    return Err(err(
                        0,
                        ShotErrorKind::Length {
                            len: bytes.len(),
                            per_shot,
                            bits,
                        },
                    ));
                }
                let mut data = Vec::new();
                data.try_reserve_exact(bytes.len()).map_err(|_| {
                    let shots = bytes.len() / per_shot;
                    err(0, ShotErrorKind::TooLarge { shots, bits })
                })?;
                data.extend_from_slice(bytes);
                Ok(ShotTable::from_packed(data, bits).expect("a whole number of shots"))
            }
            ShotFormat::Ascii01 => {
                let per_shot = bits.div_ceil(8);
                let mut t = ShotTable {
                    bits,
                    bytes_per_shot: per_shot,
                    shots: 0,
                    data: Vec::new(),
                };
                // Each shot takes `bits + 1` bytes of text at least: that bounds the table.
                let most = bytes.len() / (bits + 1) * per_shot;
                t.data.try_reserve_exact(most).map_err(|_| {
                    let shots = bytes.len() / (bits + 1);
                    err(0, ShotErrorKind::TooLarge { shots, bits })
                })?;
                let mut rest = bytes;
                let mut line = 0;
                while !rest.is_empty() {
                    line += 1;
                    let Some(end) = rest.iter().position(|&b| b == b'\n') else {
                        return Err(err(line, ShotErrorKind::Unterminated));
                    };
                    let mut text = &rest[..end];
                    rest = &rest[end + 1..];
                    if let Some(t) = text.strip_suffix(b"\r") {
                        text = t;
                    }
                    if text.len() != bits {
                        // Name a bad character before a bad width: it says more.
                        if let Some(col) = text.iter().position(|&b| b != b'0' && b != b'1') {
                            let ch = String::from_utf8_lossy(&text[col..])
                                .chars()
                                .next()
                                .unwrap_or('?');
                            return Err(err(line, ShotErrorKind::BadChar { col: col + 1, ch }));
                        }
                        return Err(err(
                            line,
                            ShotErrorKind::Width {
                                expected: bits,
                                found: text.len(),
                            },
                        ));
                    }
                    let at = t.data.len();
                    t.data.resize(at + per_shot, 0);
                    t.shots += 1;
                    let row = &mut t.data[at..];
                    for (i, &b) in text.iter().enumerate() {
                        match b {
                            b'0' => {}
                            b'1' => row[i / 8] |= 1 << (i % 8),
                            _ => {
                                let ch = String::from_utf8_lossy(&text[i..])
                                    .chars()
                                    .next()
                                    .unwrap_or('?');
                                return Err(err(line, ShotErrorKind::BadChar { col: i + 1, ch }));
                            }
                        }
                    }
                }
                Ok(t)
            }
        }
    }

    /// The table in `format` (records of zero bits: an empty line per shot in `01`, nothing
    /// in `b8`, as stim writes them).
    pub fn to_bytes(&self, format: ShotFormat) -> Vec<u8> {
        match format {
            ShotFormat::B8 => self.data.clone(),
            ShotFormat::Ascii01 => {
                let mut out = Vec::with_capacity(self.shots() * (self.bits + 1));
                for s in 0..self.shots() {
                    let row = self.row(s);
                    out.extend((0..self.bits).map(|i| b'0' + (row[i / 8] >> (i % 8) & 1)));
                    out.push(b'\n');
                }
                out
            }
        }
    }

    /// Number of shots.
    pub fn shots(&self) -> usize {
        self.shots
    }

    /// Bits per shot.
    pub fn bits(&self) -> usize {
        self.bits
    }

    /// Bytes per shot, `⌈bits/8⌉`.
    pub fn bytes_per_shot(&self) -> usize {
        self.bytes_per_shot
    }

    /// Shot `s`, packed.
    pub fn row(&self, s: usize) -> &[u8] {
        &self.data[s * self.bytes_per_shot..(s + 1) * self.bytes_per_shot]
    }

    /// Shot `s`, packed, to write. Callers keep the padding bits zero.
    pub fn row_mut(&mut self, s: usize) -> &mut [u8] {
        &mut self.data[s * self.bytes_per_shot..(s + 1) * self.bytes_per_shot]
    }

    /// Bit `i` of shot `s`.
    pub fn get(&self, s: usize, i: usize) -> bool {
        self.row(s)[i / 8] >> (i % 8) & 1 == 1
    }

    /// The packed rows back to back.
    pub fn as_bytes(&self) -> &[u8] {
        &self.data
    }

    /// The packed rows back to back, to write. Callers keep the padding bits zero.
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        &mut self.data
    }

    /// Keeps the first `shots` shots.
    pub fn truncate(&mut self, shots: usize) {
        self.shots = self.shots.min(shots);
        self.data.truncate(self.shots * self.bytes_per_shot);
    }
}

/// Unpacks a `b8` row into one 0/1 byte per bit (`out.len()` bits).
#[inline]
pub fn unpack_into(row: &[u8], out: &mut [u8]) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = row[i / 8] >> (i % 8) & 1;
    }
}

/// Packs 0/1 bytes (any non-zero byte is 1) into a `b8` row, which it overwrites.
#[inline]
pub fn pack_into(bits: &[u8], row: &mut [u8]) {
    row.fill(0);
    for (i, &b) in bits.iter().enumerate() {
        row[i / 8] |= ((b != 0) as u8) << (i % 8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_round_trip() {
        let text = b"000000001\n111111111\n010000000\n";
        let t = ShotTable::read(text, ShotFormat::Ascii01, 9, "x.01").unwrap();
        assert_eq!(t.shots(), 3);
        assert_eq!(t.row(0), &[0, 1]);
        assert_eq!(t.row(1), &[0xff, 1]);
        assert!(t.get(2, 1) && !t.get(2, 0));
        assert_eq!(t.to_bytes(ShotFormat::Ascii01), text.to_vec());
        let b8 = t.to_bytes(ShotFormat::B8);
        assert_eq!(b8, vec![0, 1, 0xff, 1, 2, 0]);
        assert_eq!(ShotTable::read(&b8, ShotFormat::B8, 9, "x.b8").unwrap(), t);
        // Padding bits read as zero.
        let t2 = ShotTable::read(&[0, 0xff], ShotFormat::B8, 9, "x.b8").unwrap();
        assert_eq!(t2.row(0), &[0, 1]);
        // CRLF line ends.
        let t3 = ShotTable::read(b"01\r\n10\r\n", ShotFormat::Ascii01, 2, "x.01").unwrap();
        assert_eq!(t3.as_bytes(), &[2, 1]);
        let mut bits = [0u8; 9];
        unpack_into(t.row(2), &mut bits);
        assert_eq!(bits, [0, 1, 0, 0, 0, 0, 0, 0, 0]);
        let mut row = [0xAAu8; 2];
        pack_into(&bits, &mut row);
        assert_eq!(row, [2, 0]);
        assert_eq!(
            ShotTable::read(b"", ShotFormat::Ascii01, 4, "e")
                .unwrap()
                .shots(),
            0
        );
    }

    #[test]
    fn records_of_zero_bits_are_counted_as_stim_writes_them() {
        // stim's observable file of a model with no observables: an empty line per shot.
        let t = ShotTable::read(b"\n\n\n", ShotFormat::Ascii01, 0, "o.01").unwrap();
        assert_eq!((t.shots(), t.bits(), t.row(2)), (3, 0, &[][..]));
        assert_eq!(t.to_bytes(ShotFormat::Ascii01), b"\n\n\n");
        assert!(t.to_bytes(ShotFormat::B8).is_empty());
        let z = ShotTable::zeros(5, 0);
        assert_eq!(z.shots(), 5);
        assert_eq!(z.to_bytes(ShotFormat::Ascii01), b"\n\n\n\n\n");
        let mut c = z.clone();
        c.truncate(2);
        assert_eq!(c.shots(), 2);
        // b8 of zero bits: empty, zero shots; a byte in it is an error.
        let e = ShotTable::read(b"", ShotFormat::B8, 0, "o.b8").unwrap();
        assert_eq!(e.shots(), 0);
        assert!(ShotTable::read(b"1\n", ShotFormat::Ascii01, 0, "o.01").is_err());
        // Tables too large for memory are errors, not aborts.
        assert!(matches!(
            ShotTable::try_zeros(usize::MAX / 2, 64),
            Err(ShotErrorKind::TooLarge { .. })
        ));
        assert!(ShotTable::try_zeros(1 << 50, 8).is_err());
    }

    #[test]
    fn bad_files_are_errors() {
        for (bytes, format, bits, want) in [
            (
                &b"0101\n011\n"[..],
                ShotFormat::Ascii01,
                4,
                "x:2: shot has 3 bits, expected 4",
            ),
            (
                b"0101\n01x1\n",
                ShotFormat::Ascii01,
                4,
                "x:2: character 3: 'x' is not 0 or 1",
            ),
            (
                b"0101\n0111",
                ShotFormat::Ascii01,
                4,
                "x:2: the last line has no line end",
            ),
            (
                b"\x00\x01\x02",
                ShotFormat::B8,
                9,
                "x: 3 bytes is not a whole number of 2-byte",
            ),
            (b"\x00", ShotFormat::B8, 0, "cannot be counted"),
        ] {
            let e = ShotTable::read(bytes, format, bits, "x")
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{e}");
        }
        assert!(ShotTable::from_packed(vec![1, 2, 3], 16).is_none());
        assert_eq!(
            "b9".parse::<ShotFormat>().unwrap_err(),
            "unknown shot format \"b9\" (expected 01 or b8)"
        );
    }
}
