//! Parity-check matrices and bit vectors in files: MacKay's alist format and dense 0/1 text.
//!
//! **Dense text**: one matrix row (or one vector) per line, written as the characters `0` and
//! `1`; spaces and tabs between them are ignored (so `numpy.savetxt(..., fmt="%d")` output
//! reads too). Blank lines and lines whose first non-blank character is `#` are skipped. Every
//! row must have the same length.
//!
//! **Alist** (MacKay): for an `M × N` matrix (M checks, N bits)
//!
//! ```text
//! N M
//! max_column_weight max_row_weight
//! N column weights
//! M row weights
//! N lines: the 1-based row indices of each column's ones
//! M lines: the 1-based column indices of each row's ones
//! ```
//!
//! Index lists may be padded with zeros up to the maximum weight (MacKay writes them that way;
//! so does [`write_alist`]). The reader checks every count and that the row lists and the
//! column lists describe the same matrix. Note that `ldpc`'s `alist.py` helpers write and read
//! the transpose of this layout (their first line is `M N`); pass matrices to `ldpc` as arrays.
//!
//! Every error names the file and the 1-based line: `checks.alist:7: column 3 lists 2 row
//! indices, its weight says 3`.

use std::fmt;
use std::path::Path;

use crate::bitmat::BitMatrix;

/// What is wrong with a file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The file could not be read or written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The file holds no rows.
    #[error("no rows")]
    Empty,
    /// A row's length differs from the first row's (or from the expected length).
    #[error("row has {found} bits, expected {expected}")]
    RaggedRow {
        /// The expected length.
        expected: usize,
        /// This row's length.
        found: usize,
    },
    /// A character other than `0`, `1`, space or tab in a dense row.
    #[error("column {col}: unexpected character {ch:?} (only 0 and 1 are allowed)")]
    BadChar {
        /// 1-based character column.
        col: usize,
        /// The character.
        ch: char,
    },
    /// A token that is not a non-negative integer.
    #[error("\"{token}\" is not a non-negative integer")]
    BadNumber {
        /// The token ([`excerpt`]).
        token: String,
    },
    /// A line holds the wrong number of values, or a count disagrees with the data.
    #[error("{0}")]
    WrongCount(String),
    /// The header's dimensions make a matrix too large to hold.
    #[error("{0}")]
    TooLarge(crate::bitmat::TooLarge),
    /// An index outside `1..=limit`.
    #[error("index {index} is out of range 1..={limit}")]
    IndexOutOfRange {
        /// The index.
        index: usize,
        /// Its largest allowed value.
        limit: usize,
    },
    /// An index listed twice in one list.
    #[error("index {0} is listed twice")]
    Duplicate(usize),
    /// The file ended before a section the header promised.
    #[error("file ends early: expected {0}")]
    Truncated(String),
    /// Lines after the last expected one.
    #[error("unexpected content after the last row list")]
    TrailingContent,
}

/// A file that could not be read, with where: `file:line: what`. Its message is complete
/// (it includes the kind's), so it reports no separate source.
#[derive(Debug, thiserror::Error)]
pub struct ParseError {
    /// The file's name as given.
    pub file: String,
    /// 1-based line, 0 when the error is not about one line.
    pub line: usize,
    /// What is wrong.
    pub kind: ParseErrorKind,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_at(f, &self.file, self.line, &self.kind)
    }
}

/// The most characters of input an error message quotes ([`excerpt`]).
pub const EXCERPT_CHARS: usize = 80;

/// At most [`EXCERPT_CHARS`] characters of `text`, then `…` when there was more: how every
/// error of this workspace quotes input (a token, a line, a spec, a flag's value), so that an
/// error about a 100 MB line is one short line. Control characters are escaped (`\n`, `\u{1b}`)
/// so that quoted input cannot break the message's line or drive a terminal.
///
/// ```
/// use backline_decoders::io::excerpt;
/// assert_eq!(excerpt("flip"), "flip");
/// assert_eq!(excerpt(&"a".repeat(1000)), format!("{}…", "a".repeat(80)));
/// assert_eq!(excerpt("a\nb"), "a\\nb");
/// // Escapes count as what they are written with: a line of control characters stays short.
/// assert!(excerpt(&"\u{1f}".repeat(1000)).len() <= 81 * 3);
/// ```
pub fn excerpt(text: &str) -> String {
    excerpt_to(text, EXCERPT_CHARS)
}

/// The most characters of a path an error quotes ([`excerpt_path`]): more than an ordinary
/// excerpt, as paths are long and their ends matter, and far below the 4 KB an error may take.
pub const PATH_EXCERPT_CHARS: usize = 512;

/// A path as an error quotes it: at most [`PATH_EXCERPT_CHARS`] characters, then `…`.
pub fn excerpt_path(path: &Path) -> String {
    excerpt_to(&path.display().to_string(), PATH_EXCERPT_CHARS)
}

/// The start of `text` in at most `max` characters, control characters escaped (an escape
/// counts as the characters it is written with: `\u{1f}` is seven), then `…` when there was
/// more: [`excerpt`] with another length.
pub fn excerpt_to(text: &str, max: usize) -> String {
    let mut out = String::new();
    let mut written = 0;
    for c in text.chars() {
        let escaped = c.is_control().then(|| c.escape_default());
        let len = escaped.clone().map_or(1, |e| e.count());
        if written + len > max {
            out.push('…');
            return out;
        }
        written += len;
        match escaped {
            Some(e) => out.extend(e),
            None => out.push(c),
        }
    }
    out
}

/// `file:line: what`, or `file: what` for line 0: how every file error of this crate reads.
pub(crate) fn write_at(
    f: &mut fmt::Formatter<'_>,
    file: &str,
    line: usize,
    what: &dyn fmt::Display,
) -> fmt::Result {
    if line == 0 {
        write!(f, "{file}: {what}")
    } else {
        write!(f, "{file}:{line}: {what}")
    }
}

impl ParseError {
    fn new(file: &str, line: usize, kind: ParseErrorKind) -> ParseError {
        ParseError {
            file: file.to_owned(),
            line,
            kind,
        }
    }
}

/// The layout of a matrix file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatrixFormat {
    /// MacKay alist.
    Alist,
    /// Dense 0/1 text, one row per line.
    Dense,
}

impl MatrixFormat {
    /// Guesses the format: `.alist` files are alist; otherwise a file whose first content line
    /// holds anything but `0`, `1` and blanks is alist, else dense.
    pub fn detect(path: &Path, text: &str) -> MatrixFormat {
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("alist"))
        {
            return MatrixFormat::Alist;
        }
        let first = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'));
        match first {
            Some(l) if l.chars().all(|c| matches!(c, '0' | '1' | ' ' | '\t')) => {
                MatrixFormat::Dense
            }
            Some(_) => MatrixFormat::Alist,
            None => MatrixFormat::Dense,
        }
    }
}

/// Content lines of a dense file: `(1-based line number, line)`, skipping blanks and comments.
fn content_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter_map(|(i, l)| {
        let t = l.trim();
        (!t.is_empty() && !t.starts_with('#')).then_some((i + 1, l))
    })
}

/// Parses one dense line into 0/1 bytes, appending to `out`.
fn parse_bits(file: &str, lineno: usize, line: &str, out: &mut Vec<u8>) -> Result<(), ParseError> {
    for (col, ch) in line.chars().enumerate() {
        match ch {
            '0' => out.push(0),
            '1' => out.push(1),
            ' ' | '\t' | '\r' => {}
            ch => {
                return Err(ParseError::new(
                    file,
                    lineno,
                    ParseErrorKind::BadChar { col: col + 1, ch },
                ));
            }
        }
    }
    Ok(())
}

/// Bit vectors in dense text, one per content line, as `(1-based line, 0/1 bytes)`. With
/// `expected_len`, every vector must have that length; otherwise all must match the first.
pub fn parse_bit_lines(
    text: &str,
    file: &str,
    expected_len: Option<usize>,
) -> Result<Vec<(usize, Vec<u8>)>, ParseError> {
    let mut out: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut expected = expected_len;
    for (lineno, line) in content_lines(text) {
        let mut bits = Vec::with_capacity(expected.unwrap_or(line.len()));
        parse_bits(file, lineno, line, &mut bits)?;
        match expected {
            Some(e) if e != bits.len() => {
                return Err(ParseError::new(
                    file,
                    lineno,
                    ParseErrorKind::RaggedRow {
                        expected: e,
                        found: bits.len(),
                    },
                ));
            }
            Some(_) => {}
            None => expected = Some(bits.len()),
        }
        out.push((lineno, bits));
    }
    Ok(out)
}

/// Parses a dense 0/1 matrix.
pub fn read_dense(text: &str, file: &str) -> Result<BitMatrix, ParseError> {
    let rows = parse_bit_lines(text, file, None)?;
    if rows.is_empty() {
        return Err(ParseError::new(file, 0, ParseErrorKind::Empty));
    }
    let bits: Vec<&Vec<u8>> = rows.iter().map(|(_, b)| b).collect();
    Ok(BitMatrix::from_rows(&bits))
}

/// Writes a matrix as dense 0/1 text, one row per line.
pub fn write_dense(m: &BitMatrix) -> String {
    let mut s = String::with_capacity(m.rows() * (m.cols() + 1));
    for i in 0..m.rows() {
        for j in 0..m.cols() {
            s.push(if m.get(i, j) { '1' } else { '0' });
        }
        s.push('\n');
    }
    s
}

/// A line-by-line reader of whitespace-separated integers that skips blank lines.
struct Numbers<'a> {
    file: &'a str,
    lines: std::iter::Enumerate<std::str::Lines<'a>>,
    last_line: usize,
}

impl<'a> Numbers<'a> {
    fn new(text: &'a str, file: &'a str) -> Numbers<'a> {
        Numbers {
            file,
            lines: text.lines().enumerate(),
            last_line: 0,
        }
    }

    fn err(&self, line: usize, kind: ParseErrorKind) -> ParseError {
        ParseError::new(self.file, line, kind)
    }

    /// The next non-blank line's numbers and its line number.
    fn line(&mut self, what: &str) -> Result<(usize, Vec<usize>), ParseError> {
        for (i, l) in self.lines.by_ref() {
            if l.trim().is_empty() {
                continue;
            }
            let lineno = i + 1;
            self.last_line = lineno;
            let mut nums = Vec::new();
            for tok in l.split_whitespace() {
                let v = tok.parse::<usize>().map_err(|_| {
                    ParseError::new(
                        self.file,
                        lineno,
                        ParseErrorKind::BadNumber {
                            token: excerpt(tok),
                        },
                    )
                })?;
                nums.push(v);
            }
            return Ok((lineno, nums));
        }
        Err(self.err(
            self.last_line + 1,
            ParseErrorKind::Truncated(what.to_owned()),
        ))
    }

    /// The next line, which must hold exactly `count` numbers.
    fn exact(&mut self, count: usize, what: &str) -> Result<(usize, Vec<usize>), ParseError> {
        let (lineno, nums) = self.line(what)?;
        if nums.len() != count {
            return Err(self.err(
                lineno,
                ParseErrorKind::WrongCount(format!(
                    "{what}: expected {count} values, found {}",
                    nums.len()
                )),
            ));
        }
        Ok((lineno, nums))
    }
}

/// Reads one index list of an alist: `weight` non-zero 1-based indices (zeros are padding, up
/// to `max_weight` entries in all), each at most `limit`, none twice.
fn alist_list(
    nums: &mut Numbers<'_>,
    what: &str,
    weight: usize,
    max_weight: usize,
    limit: usize,
) -> Result<(usize, Vec<usize>), ParseError> {
    let (lineno, list) = nums.line(what)?;
    if list.len() > max_weight.max(weight) {
        return Err(nums.err(
            lineno,
            ParseErrorKind::WrongCount(format!(
                "{what} has {} entries, more than the maximum weight {max_weight}",
                list.len()
            )),
        ));
    }
    // The weight comes from the file: the list's own length bounds the allocation.
    let mut idx: Vec<usize> = Vec::with_capacity(weight.min(list.len()));
    for &v in &list {
        if v == 0 {
            continue;
        }
        if v > limit {
            return Err(nums.err(lineno, ParseErrorKind::IndexOutOfRange { index: v, limit }));
        }
        if idx.contains(&v) {
            return Err(nums.err(lineno, ParseErrorKind::Duplicate(v)));
        }
        idx.push(v);
    }
    if idx.len() != weight {
        return Err(nums.err(
            lineno,
            ParseErrorKind::WrongCount(format!(
                "{what} lists {} indices, its weight says {weight}",
                idx.len()
            )),
        ));
    }
    Ok((lineno, idx))
}

/// Parses a MacKay alist.
pub fn read_alist(text: &str, file: &str) -> Result<BitMatrix, ParseError> {
    let mut nums = Numbers::new(text, file);
    let (_, dims) = nums.exact(2, "the header \"N M\" (columns, rows)")?;
    let (n, m) = (dims[0], dims[1]);
    let (wl, maxw) = nums.exact(2, "the maximum column and row weights")?;
    let (max_col, max_row) = (maxw[0], maxw[1]);
    let (cl, col_w) = nums.exact(n, "the column weights")?;
    let (rl, row_w) = nums.exact(m, "the row weights")?;
    if col_w.iter().copied().max().unwrap_or(0) != max_col {
        return Err(nums.err(
            wl,
            ParseErrorKind::WrongCount(format!(
                "maximum column weight {max_col} differs from the largest column weight {}",
                col_w.iter().copied().max().unwrap_or(0)
            )),
        ));
    }
    if row_w.iter().copied().max().unwrap_or(0) != max_row {
        return Err(nums.err(
            wl,
            ParseErrorKind::WrongCount(format!(
                "maximum row weight {max_row} differs from the largest row weight {}",
                row_w.iter().copied().max().unwrap_or(0)
            )),
        ));
    }
    let (sc, sr) = (col_w.iter().sum::<usize>(), row_w.iter().sum::<usize>());
    if sc != sr {
        return Err(nums.err(
            rl.max(cl),
            ParseErrorKind::WrongCount(format!("column weights sum to {sc}, row weights to {sr}")),
        ));
    }
    let mut h = BitMatrix::try_zeros(m, n).map_err(|e| nums.err(1, ParseErrorKind::TooLarge(e)))?;
    for (j, &w) in col_w.iter().enumerate() {
        let (_, rows) = alist_list(&mut nums, &format!("column {}", j + 1), w, max_col, m)?;
        for r in rows {
            h.set(r - 1, j, true);
        }
    }
    for (i, &w) in row_w.iter().enumerate() {
        let (lineno, cols) = alist_list(&mut nums, &format!("row {}", i + 1), w, max_row, n)?;
        for c in cols {
            if !h.get(i, c - 1) {
                return Err(nums.err(
                    lineno,
                    ParseErrorKind::WrongCount(format!(
                        "row {} lists column {c}, but column {c}'s list does not name row {}",
                        i + 1,
                        i + 1
                    )),
                ));
            }
        }
    }
    if let Some((i, _)) = nums.lines.find(|(_, l)| !l.trim().is_empty()) {
        return Err(nums.err(i + 1, ParseErrorKind::TrailingContent));
    }
    Ok(h)
}

/// Writes a matrix as a MacKay alist, index lists padded with zeros to the maximum weight.
pub fn write_alist(h: &BitMatrix) -> String {
    use std::fmt::Write as _;
    let t = h.transpose();
    let col_w: Vec<usize> = (0..t.rows()).map(|j| t.row_weight(j)).collect();
    let row_w: Vec<usize> = (0..h.rows()).map(|i| h.row_weight(i)).collect();
    let max_col = col_w.iter().copied().max().unwrap_or(0);
    let max_row = row_w.iter().copied().max().unwrap_or(0);
    let join = |v: &mut dyn Iterator<Item = usize>| -> String {
        v.map(|x| x.to_string()).collect::<Vec<_>>().join(" ")
    };
    let mut s = String::new();
    let _ = writeln!(s, "{} {}", h.cols(), h.rows());
    let _ = writeln!(s, "{max_col} {max_row}");
    let _ = writeln!(s, "{}", join(&mut col_w.iter().copied()));
    let _ = writeln!(s, "{}", join(&mut row_w.iter().copied()));
    for j in 0..t.rows() {
        let mut list = t.row_ones(j).map(|i| i + 1).chain(std::iter::repeat(0));
        let _ = writeln!(s, "{}", join(&mut list.by_ref().take(max_col)));
    }
    for i in 0..h.rows() {
        let mut list = h.row_ones(i).map(|j| j + 1).chain(std::iter::repeat(0));
        let _ = writeln!(s, "{}", join(&mut list.by_ref().take(max_row)));
    }
    s
}

/// Parses matrix text in the given format; `file` names it in errors.
pub fn parse_matrix(text: &str, file: &str, format: MatrixFormat) -> Result<BitMatrix, ParseError> {
    match format {
        MatrixFormat::Alist => read_alist(text, file),
        MatrixFormat::Dense => read_dense(text, file),
    }
}

/// The largest text file the readers take: 256 MiB. A dense matrix at the size limit
/// ([`crate::bitmat::MAX_DENSE_BITS`]) is larger as text, but no decoder is run on one; the cap
/// exists so that a path like `/dev/zero` or an endless pipe is an error, not a hang.
pub const MAX_FILE_BYTES: u64 = 1 << 28;

/// The largest shot file (`01` or `b8`) the readers take: 4 GiB, for the same reason.
pub const MAX_SHOT_FILE_BYTES: u64 = 1 << 32;

/// Reads a whole file of at most `max` bytes (a pipe or a device too, up to the cap): an
/// `InvalidData` error past it, an `OutOfMemory` error when its bytes do not fit in memory
/// (every allocation is fallible, so a huge file is an error, never an abort).
pub fn read_capped(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    const CHUNK: usize = 1 << 16;
    let mut f = std::fs::File::open(path)?;
    let mut bytes: Vec<u8> = Vec::new();
    let oom = |have: usize| {
        std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            format!("out of memory after reading {} MiB", have >> 20),
        )
    };
    // A regular file says its length: reserve it at once (a device or a pipe grows).
    if let Ok(m) = f.metadata()
        && m.is_file()
    {
        let len = m.len().min(max + 1) as usize;
        bytes.try_reserve_exact(len).map_err(|_| oom(0))?;
    }
    loop {
        if bytes.len() as u64 > max {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("larger than {} MiB, the limit of such files", max >> 20),
            ));
        }
        bytes.try_reserve(CHUNK).map_err(|_| oom(bytes.len()))?;
        let at = bytes.len();
        let room = (bytes.capacity() - at).min((max + 1 - at as u64) as usize);
        bytes.resize(at + room, 0);
        let n = loop {
            match f.read(&mut bytes[at..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        bytes.truncate(at + n);
        if n == 0 {
            return Ok(bytes);
        }
    }
}

/// Reads a whole text file of at most [`MAX_FILE_BYTES`] (a pipe or a device too, up to the
/// cap); an `InvalidData` error past it or for text that is not UTF-8, an `OutOfMemory`
/// error when it does not fit in memory.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    let bytes = read_capped(path, MAX_FILE_BYTES).map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidData {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "larger than {} MiB, the limit of input files",
                    MAX_FILE_BYTES >> 20
                ),
            )
        } else {
            e
        }
    })?;
    String::from_utf8(bytes)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()))
}

/// Reads a matrix file; `format` `None` detects it ([`MatrixFormat::detect`]).
pub fn load_matrix(path: &Path, format: Option<MatrixFormat>) -> Result<BitMatrix, ParseError> {
    let name = path.display().to_string();
    let text = read_text(path).map_err(|e| ParseError::new(&name, 0, e.into()))?;
    let format = format.unwrap_or_else(|| MatrixFormat::detect(path, &text));
    parse_matrix(&text, &name, format)
}

/// Writes a matrix file in the given format.
pub fn save_matrix(path: &Path, h: &BitMatrix, format: MatrixFormat) -> Result<(), ParseError> {
    let text = match format {
        MatrixFormat::Alist => write_alist(h),
        MatrixFormat::Dense => write_dense(h),
    };
    std::fs::write(path, text)
        .map_err(|e| ParseError::new(&path.display().to_string(), 0, e.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HAMMING: &str = "1.1.1.1\n.11..11\n...1111\n";

    fn hamming() -> BitMatrix {
        BitMatrix::from_picture(HAMMING).unwrap()
    }

    #[test]
    fn alist_of_hamming_code() {
        let text = write_alist(&hamming());
        assert_eq!(
            text,
            "7 3\n3 4\n1 1 2 1 2 2 3\n4 4 4\n1 0 0\n2 0 0\n1 2 0\n3 0 0\n1 3 0\n2 3 0\n\
             1 2 3\n1 3 5 7\n2 3 6 7\n4 5 6 7\n"
        );
        assert_eq!(read_alist(&text, "h.alist").unwrap(), hamming());
    }

    #[test]
    fn alist_without_padding_reads() {
        let text = "7 3\n3 4\n1 1 2 1 2 2 3\n4 4 4\n1\n2\n1 2\n3\n1 3\n2 3\n1 2 3\n\
                    1 3 5 7\n2 3 6 7\n4 5 6 7\n\n";
        assert_eq!(read_alist(text, "h.alist").unwrap(), hamming());
    }

    #[test]
    fn dense_round_trip_and_spaces() {
        let h = hamming();
        assert_eq!(read_dense(&write_dense(&h), "h.txt").unwrap(), h);
        let spaced = "# Hamming\n1 0 1 0 1 0 1\n\n0 1 1 0 0 1 1\n0 0 0 1 1 1 1\n";
        assert_eq!(read_dense(spaced, "h.txt").unwrap(), h);
    }

    fn err_text(r: Result<BitMatrix, ParseError>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn dense_errors_name_file_and_line() {
        assert_eq!(
            err_text(read_dense("101\n10\n", "h.txt")),
            "h.txt:2: row has 2 bits, expected 3"
        );
        assert_eq!(
            err_text(read_dense("# c\n101\n1x1\n", "h.txt")),
            "h.txt:3: column 2: unexpected character 'x' (only 0 and 1 are allowed)"
        );
        assert_eq!(
            err_text(read_dense("# only\n\n", "h.txt")),
            "h.txt: no rows"
        );
    }

    #[test]
    fn alist_errors_name_file_and_line() {
        let good = write_alist(&hamming());
        let mut lines: Vec<String> = good.lines().map(str::to_owned).collect();
        let with = |i: usize, s: &str, lines: &Vec<String>| {
            let mut l = lines.clone();
            l[i] = s.to_owned();
            l.join("\n")
        };
        // Wrong count of column weights.
        assert_eq!(
            err_text(read_alist(&with(2, "1 1 2 1 2 2", &lines), "h.alist")),
            "h.alist:3: the column weights: expected 7 values, found 6"
        );
        // A column list that disagrees with its weight.
        assert_eq!(
            err_text(read_alist(&with(6, "1 0", &lines), "h.alist")),
            "h.alist:7: column 3 lists 1 indices, its weight says 2"
        );
        // Out of range index.
        assert_eq!(
            err_text(read_alist(&with(4, "4 0", &lines), "h.alist")),
            "h.alist:5: index 4 is out of range 1..=3"
        );
        // Not a number.
        assert_eq!(
            err_text(read_alist(&with(0, "7 x", &lines), "h.alist")),
            "h.alist:1: \"x\" is not a non-negative integer"
        );
        // Row list that contradicts the columns.
        assert_eq!(
            err_text(read_alist(&with(11, "1 3 5 6", &lines), "h.alist")),
            "h.alist:12: row 1 lists column 6, but column 6's list does not name row 1"
        );
        // Truncated.
        lines.truncate(9);
        assert_eq!(
            err_text(read_alist(&lines.join("\n"), "h.alist")),
            "h.alist:10: file ends early: expected column 6"
        );
    }

    #[test]
    fn bit_lines_check_length() {
        let v = parse_bit_lines("101\n# x\n010\n", "s.txt", Some(3)).unwrap();
        assert_eq!(v, vec![(1, vec![1, 0, 1]), (3, vec![0, 1, 0])]);
        let e = parse_bit_lines("101\n0101\n", "s.txt", Some(3)).unwrap_err();
        assert_eq!(e.to_string(), "s.txt:2: row has 4 bits, expected 3");
    }

    #[test]
    fn detect_format() {
        let p = Path::new("h.txt");
        assert_eq!(MatrixFormat::detect(p, "101\n"), MatrixFormat::Dense);
        assert_eq!(MatrixFormat::detect(p, "7 3\n2 4\n"), MatrixFormat::Alist);
        assert_eq!(
            MatrixFormat::detect(Path::new("h.alist"), "1 1\n"),
            MatrixFormat::Alist
        );
    }

    #[test]
    fn files_round_trip() {
        let dir = std::env::temp_dir().join(format!("backline-decoders-io-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let h = hamming();
        for (name, fmt) in [
            ("h.alist", MatrixFormat::Alist),
            ("h.txt", MatrixFormat::Dense),
        ] {
            let path = dir.join(name);
            save_matrix(&path, &h, fmt).unwrap();
            assert_eq!(load_matrix(&path, None).unwrap(), h);
        }
        let missing = dir.join("missing.alist");
        let e = load_matrix(&missing, None).unwrap_err();
        assert!(e.to_string().starts_with(&missing.display().to_string()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
