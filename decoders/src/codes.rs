//! A library of CSS codes: the Steane code, hypergraph products of classical codes, rotated
//! surface codes and bivariate-bicycle codes, each with its logical operators.
//!
//! Conventions: `hx` holds the X-type checks (they detect Z errors), `hz` the Z-type checks
//! (they detect X errors); columns are qubits. For an X error `e`, the syndrome is `hz · e` and
//! a correction `c` fails when the residual `e + c` anticommutes with a Z logical:
//! `lz · (e + c) ≠ 0` ([`CssCode::is_logical_x_error`]).
//!
//! ```
//! use backline_decoders::codes::CssCode;
//! let code = CssCode::bivariate_bicycle(6, 6, "x^3+y+y^2", "y^3+x+x^2").unwrap();
//! assert_eq!((code.n(), code.k()), (72, 12));
//! ```

use std::fmt;
use std::str::FromStr;

use crate::bitmat::BitMatrix;
use crate::gf2;

/// Why a code could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodeError {
    /// `hx` and `hz` have different numbers of columns.
    #[error("hx has {hx} columns but hz has {hz}")]
    LengthMismatch {
        /// Columns of `hx`.
        hx: usize,
        /// Columns of `hz`.
        hz: usize,
    },
    /// `hx · hzᵀ ≠ 0`: some X check anticommutes with some Z check.
    #[error("X check {x} and Z check {z} anticommute (hx · hzᵀ ≠ 0)")]
    NotCommuting {
        /// Row of `hx`.
        x: usize,
        /// Row of `hz`.
        z: usize,
    },
    /// A parameter out of range (distance < 2, l or m of 0, ...).
    #[error("{0}")]
    BadParameter(String),
    /// A polynomial that does not parse.
    #[error("polynomial {text:?}: {why}")]
    BadPolynomial {
        /// The input.
        text: String,
        /// What is wrong.
        why: String,
    },
    /// A code name that is not in the library.
    #[error(
        "unknown code {0:?} (known: steane, hgp13, surface<d>, bb72, bb144, \
         bb:<l>,<m>,<A>,<B>)"
    )]
    UnknownName(String),
    /// Parameters whose check matrices would not fit in memory.
    #[error("{code}: {source}")]
    TooLarge {
        /// The code asked for.
        code: String,
        /// The matrix that would not fit.
        source: crate::bitmat::TooLarge,
    },
}

/// A CSS code with its checks and logical operators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CssCode {
    /// A short name (`steane`, `hgp13`, `surface5`, `bb72`, ...).
    pub name: String,
    /// X-type checks, `mx × n`.
    pub hx: BitMatrix,
    /// Z-type checks, `mz × n`.
    pub hz: BitMatrix,
    /// X logicals, `k × n`: a basis of `ker(hz) / rowspace(hx)`.
    pub lx: BitMatrix,
    /// Z logicals, `k × n`: a basis of `ker(hx) / rowspace(hz)`.
    pub lz: BitMatrix,
}

/// Checks that `hx` and `hz` are the checks of one CSS code: the same number of columns, and
/// every X check commutes with every Z check (`hx · hzᵀ = 0`).
pub(crate) fn check_css(hx: &BitMatrix, hz: &BitMatrix) -> Result<(), CodeError> {
    if hx.cols() != hz.cols() {
        return Err(CodeError::LengthMismatch {
            hx: hx.cols(),
            hz: hz.cols(),
        });
    }
    let prod = hx.mul(&hz.transpose());
    for x in 0..prod.rows() {
        if let Some(z) = prod.row_ones(x).next() {
            return Err(CodeError::NotCommuting { x, z });
        }
    }
    Ok(())
}

impl CssCode {
    /// A code from its check matrices; computes the logical operators.
    pub fn new(
        name: impl Into<String>,
        hx: BitMatrix,
        hz: BitMatrix,
    ) -> Result<CssCode, CodeError> {
        check_css(&hx, &hz)?;
        let (lx, lz) = gf2::css_logicals(&hx, &hz);
        Ok(CssCode {
            name: name.into(),
            hx,
            hz,
            lx,
            lz,
        })
    }

    /// Number of physical qubits.
    pub fn n(&self) -> usize {
        self.hx.cols()
    }

    /// Number of logical qubits.
    pub fn k(&self) -> usize {
        self.lz.rows()
    }

    /// Whether the X-error residual `e + c` (0/1 bytes, length `n`) is a logical error: it
    /// anticommutes with some Z logical. Meaningful when the residual has zero Z syndrome.
    pub fn is_logical_x_error(&self, residual: &[u8]) -> bool {
        anticommutes_with_any(&self.lz, residual)
    }

    /// Whether the Z-error residual is a logical error (anticommutes with some X logical).
    pub fn is_logical_z_error(&self, residual: &[u8]) -> bool {
        anticommutes_with_any(&self.lx, residual)
    }

    /// The Steane [[7,1,3]] code: `hx = hz =` the [7,4,3] Hamming checks of
    /// [`crate::steane::H`].
    pub fn steane() -> CssCode {
        let mut h = BitMatrix::zeros(3, 7);
        for (i, row) in crate::steane::H.iter().enumerate() {
            for j in 0..7 {
                if row >> j & 1 == 1 {
                    h.set(i, j, true);
                }
            }
        }
        CssCode::new("steane", h.clone(), h).expect("the Steane code is a CSS code")
    }

    /// The hypergraph product of classical codes with checks `h1` (`m1 × n1`) and `h2`
    /// (`m2 × n2`): `n = n1·n2 + m1·m2`,
    /// `hx = [h1 ⊗ I(n2) | I(m1) ⊗ h2ᵀ]`, `hz = [I(n1) ⊗ h2 | h1ᵀ ⊗ I(m2)]`.
    pub fn hypergraph_product(name: impl Into<String>, h1: &BitMatrix, h2: &BitMatrix) -> CssCode {
        let (m1, n1) = (h1.rows(), h1.cols());
        let (m2, n2) = (h2.rows(), h2.cols());
        let hx = h1
            .kron(&BitMatrix::identity(n2))
            .hstack(&BitMatrix::identity(m1).kron(&h2.transpose()));
        let hz = BitMatrix::identity(n1)
            .kron(h2)
            .hstack(&h1.transpose().kron(&BitMatrix::identity(m2)));
        CssCode::new(name, hx, hz).expect("a hypergraph product always commutes")
    }

    /// The [[13,1,3]] hypergraph product of two [3,1,3] repetition codes.
    pub fn hgp13() -> CssCode {
        let rep = repetition(3);
        CssCode::hypergraph_product("hgp13", &rep, &rep)
    }

    /// The rotated surface code of distance `d ≥ 2`: `d²` data qubits on a grid (qubit
    /// `r·d + c` at row `r`, column `c`), `(d² − 1)/2` checks of each type for odd `d`.
    ///
    /// Face `(i, j)` for `0 ≤ i, j ≤ d` touches the qubits `(i−1, j−1), (i−1, j), (i, j−1),
    /// (i, j)` that exist; it is an X check when `i + j` is even and a Z check otherwise.
    /// Interior faces are all kept; on the top and bottom edges only X faces are kept, on the
    /// left and right edges only Z faces; corners are dropped. X logicals run down a column,
    /// Z logicals along a row.
    pub fn rotated_surface(d: usize) -> Result<CssCode, CodeError> {
        if d < 2 {
            return Err(CodeError::BadParameter(format!(
                "surface code distance must be at least 2, got {d}"
            )));
        }
        // Each check matrix is about (d² / 2) × d² bits: refuse what would not fit before
        // the faces are even listed.
        let n = d.saturating_mul(d);
        BitMatrix::try_zeros(n / 2, n).map_err(|source| CodeError::TooLarge {
            code: format!("surface{d}"),
            source,
        })?;
        let mut xs: Vec<Vec<usize>> = Vec::new();
        let mut zs: Vec<Vec<usize>> = Vec::new();
        for i in 0..=d {
            for j in 0..=d {
                let is_x = (i + j) % 2 == 0;
                let top_bottom = i == 0 || i == d;
                let left_right = j == 0 || j == d;
                let keep = match (top_bottom, left_right) {
                    (true, true) => false,
                    (true, false) => is_x,
                    (false, true) => !is_x,
                    (false, false) => true,
                };
                if !keep {
                    continue;
                }
                let mut qubits = Vec::with_capacity(4);
                for (r, c) in [(i, j), (i, j + 1), (i + 1, j), (i + 1, j + 1)] {
                    // (r − 1, c − 1) in qubit coordinates, skipping the grid's outside.
                    if (1..=d).contains(&r) && (1..=d).contains(&c) {
                        qubits.push((r - 1) * d + (c - 1));
                    }
                }
                if is_x {
                    xs.push(qubits)
                } else {
                    zs.push(qubits)
                }
            }
        }
        let build = |checks: &[Vec<usize>]| {
            let mut h = BitMatrix::try_zeros(checks.len(), d * d).map_err(|source| {
                CodeError::TooLarge {
                    code: format!("surface{d}"),
                    source,
                }
            })?;
            for (row, qs) in checks.iter().enumerate() {
                for &q in qs {
                    h.set(row, q, true);
                }
            }
            Ok::<BitMatrix, CodeError>(h)
        };
        CssCode::new(format!("surface{d}"), build(&xs)?, build(&zs)?)
    }

    /// The bivariate-bicycle code (Nature 627, 778, 2024) for `l, m ≥ 1` and polynomials `A`,
    /// `B` in `x, y` (with `x^l = y^m = 1`): `n = 2·l·m`, `hx = [A | B]`, `hz = [Bᵀ | Aᵀ]`,
    /// where `x = S_l ⊗ I_m` and `y = I_l ⊗ S_m` with `S` the cyclic shift
    /// (`S e_i = e_{i+1}`). Qubit `i·m + j` of each half is the monomial `x^i y^j`.
    ///
    /// `[[72,12,6]]`: `(6, 6, "x^3+y+y^2", "y^3+x+x^2")`; `[[144,12,12]]`: `(12, 6, same)`.
    pub fn bivariate_bicycle(l: usize, m: usize, a: &str, b: &str) -> Result<CssCode, CodeError> {
        if l == 0 || m == 0 {
            return Err(CodeError::BadParameter(format!(
                "bivariate-bicycle l and m must be at least 1, got l={l}, m={m}"
            )));
        }
        let pa: Polynomial = a.parse()?;
        let pb: Polynomial = b.parse()?;
        let too_large = |source| CodeError::TooLarge {
            code: format!("bb:{l},{m},{a},{b}"),
            source,
        };
        // hx and hz are lm × 2lm: refuse what would not fit before building anything.
        let lm = l.saturating_mul(m);
        BitMatrix::try_zeros(lm, lm.saturating_mul(2)).map_err(too_large)?;
        let ma = pa.try_matrix(l, m).map_err(too_large)?;
        let mb = pb.try_matrix(l, m).map_err(too_large)?;
        let hx = ma.hstack(&mb);
        let hz = mb.transpose().hstack(&ma.transpose());
        CssCode::new(format!("bb{}", 2 * l * m), hx, hz)
    }

    /// The [[72,12,6]] bivariate-bicycle code.
    pub fn bb72() -> CssCode {
        CssCode::bivariate_bicycle(6, 6, "x^3+y+y^2", "y^3+x+x^2").expect("valid parameters")
    }

    /// The [[144,12,12]] bivariate-bicycle ("gross") code.
    pub fn bb144() -> CssCode {
        CssCode::bivariate_bicycle(12, 6, "x^3+y+y^2", "y^3+x+x^2").expect("valid parameters")
    }

    /// A code by name: `steane`, `hgp13`, `surface<d>` (e.g. `surface5`), `bb72`, `bb144`, or
    /// `bb:<l>,<m>,<A>,<B>` (e.g. `bb:6,6,x^3+y+y^2,y^3+x+x^2`).
    pub fn by_name(name: &str) -> Result<CssCode, CodeError> {
        let unknown = || CodeError::UnknownName(name.to_owned());
        match name {
            "steane" => Ok(CssCode::steane()),
            "hgp13" => Ok(CssCode::hgp13()),
            "bb72" => Ok(CssCode::bb72()),
            "bb144" => Ok(CssCode::bb144()),
            _ => {
                if let Some(d) = name.strip_prefix("surface") {
                    let d: usize = d.parse().map_err(|_| unknown())?;
                    CssCode::rotated_surface(d)
                } else if let Some(spec) = name.strip_prefix("bb:") {
                    let parts: Vec<&str> = spec.split(',').collect();
                    let [l, m, a, b] = parts[..] else {
                        return Err(unknown());
                    };
                    let l = l.trim().parse().map_err(|_| unknown())?;
                    let m = m.trim().parse().map_err(|_| unknown())?;
                    CssCode::bivariate_bicycle(l, m, a, b)
                } else {
                    Err(unknown())
                }
            }
        }
    }
}

fn anticommutes_with_any(logicals: &BitMatrix, residual: &[u8]) -> bool {
    assert_eq!(
        residual.len(),
        logicals.cols(),
        "residual has the wrong length"
    );
    (0..logicals.rows()).any(|i| {
        logicals
            .row_ones(i)
            .filter(|&j| residual[j] & 1 == 1)
            .count()
            % 2
            == 1
    })
}

/// The checks of the length-`n` repetition code: `(n−1) × n`, row `i` joins bits `i`, `i+1`.
pub fn repetition(n: usize) -> BitMatrix {
    let mut h = BitMatrix::zeros(n.saturating_sub(1), n);
    for i in 0..n.saturating_sub(1) {
        h.set(i, i, true);
        h.set(i, i + 1, true);
    }
    h
}

/// A polynomial over GF(2) in commuting variables `x` and `y`: a set of monomials
/// `x^a y^b`. Parses from text such as `x^3+y+y^2`, `1+x*y^2`, `x^2y`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Polynomial {
    /// The monomials `(a, b)` for `x^a y^b`, each at most once (GF(2): a repeated term
    /// cancels).
    pub terms: Vec<(usize, usize)>,
}

impl Polynomial {
    /// The `lm × lm` matrix of the polynomial with `x = S_l ⊗ I_m`, `y = I_l ⊗ S_m`.
    ///
    /// # Panics
    /// If it is larger than [`crate::bitmat::MAX_DENSE_BITS`]; see [`Polynomial::try_matrix`].
    pub fn matrix(&self, l: usize, m: usize) -> BitMatrix {
        self.try_matrix(l, m).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Polynomial::matrix`], or an error when it would not fit.
    pub fn try_matrix(&self, l: usize, m: usize) -> Result<BitMatrix, crate::bitmat::TooLarge> {
        let lm = l.checked_mul(m).ok_or(crate::bitmat::TooLarge {
            rows: usize::MAX,
            cols: usize::MAX,
            out_of_memory: false,
        })?;
        let mut out = BitMatrix::try_zeros(lm, lm)?;
        for &(a, b) in &self.terms {
            for i in 0..l {
                for j in 0..m {
                    // x^a y^b maps basis vector (i, j) to (i + a, j + b).
                    // (Exponents are reduced first: a huge one cannot overflow the sum.)
                    let row = ((i + a % l) % l) * m + (j + b % m) % m;
                    out.flip(row, i * m + j);
                }
            }
        }
        Ok(out)
    }
}

impl FromStr for Polynomial {
    type Err = CodeError;

    fn from_str(text: &str) -> Result<Polynomial, CodeError> {
        let bad = |why: &str| CodeError::BadPolynomial {
            text: text.to_owned(),
            why: why.to_owned(),
        };
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        if compact.is_empty() {
            return Err(bad("empty"));
        }
        let mut terms: Vec<(usize, usize)> = Vec::new();
        for term in compact.split('+') {
            if term.is_empty() {
                return Err(bad("empty term"));
            }
            let (mut a, mut b) = (0usize, 0usize);
            if term != "1" {
                let mut chars = term.chars().peekable();
                let mut seen_var = false;
                while let Some(c) = chars.next() {
                    let slot = match c {
                        'x' => &mut a,
                        'y' => &mut b,
                        '*' if seen_var => continue,
                        c => return Err(bad(&format!("unexpected {c:?} in term {term:?}"))),
                    };
                    seen_var = true;
                    let mut exp = 1usize;
                    if chars.peek() == Some(&'^') {
                        chars.next();
                        let mut digits = String::new();
                        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                            digits.push(*d);
                            chars.next();
                        }
                        exp = digits
                            .parse()
                            .map_err(|_| bad(&format!("missing exponent in term {term:?}")))?;
                    }
                    *slot += exp;
                }
            }
            if let Some(pos) = terms.iter().position(|&t| t == (a, b)) {
                terms.remove(pos);
            } else {
                terms.push((a, b));
            }
        }
        Ok(Polynomial { terms })
    }
}

impl fmt::Display for Polynomial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.terms.is_empty() {
            return f.write_str("0");
        }
        for (k, &(a, b)) in self.terms.iter().enumerate() {
            if k > 0 {
                f.write_str("+")?;
            }
            let var = |v: &str, e: usize| match e {
                0 => String::new(),
                1 => v.to_owned(),
                e => format!("{v}^{e}"),
            };
            match (a, b) {
                (0, 0) => f.write_str("1")?,
                (a, 0) => f.write_str(&var("x", a))?,
                (0, b) => f.write_str(&var("y", b))?,
                (a, b) => write!(f, "{}*{}", var("x", a), var("y", b))?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest weight of an X logical (an error with zero Z syndrome that is a logical
    /// failure), by trying every error of weight up to `max_w`; `None` if none is found.
    fn x_distance_up_to(code: &CssCode, max_w: usize) -> Option<usize> {
        let n = code.n();
        let mut e = vec![0u8; n];
        let mut syn = vec![0u8; code.hz.rows()];
        fn rec(
            code: &CssCode,
            e: &mut Vec<u8>,
            syn: &mut Vec<u8>,
            start: usize,
            left: usize,
        ) -> bool {
            if left == 0 {
                code.hz.mul_bytes(e, syn);
                return syn.iter().all(|&s| s == 0) && code.is_logical_x_error(e);
            }
            for q in start..e.len() {
                e[q] = 1;
                if rec(code, e, syn, q + 1, left - 1) {
                    return true;
                }
                e[q] = 0;
            }
            false
        }
        (1..=max_w).find(|&w| rec(code, &mut e, &mut syn, 0, w))
    }

    fn params(code: &CssCode) -> (usize, usize, usize, usize) {
        (code.n(), code.k(), code.hx.rows(), code.hz.rows())
    }

    #[test]
    fn steane_parameters() {
        let c = CssCode::steane();
        assert_eq!(params(&c), (7, 1, 3, 3));
        assert_eq!(x_distance_up_to(&c, 3), Some(3));
        assert_eq!(c.hx.to_picture(), "1.1.1.1\n.11..11\n...1111\n");
    }

    #[test]
    fn hgp13_parameters_and_picture() {
        let c = CssCode::hgp13();
        assert_eq!(params(&c), (13, 1, 6, 6));
        assert_eq!(x_distance_up_to(&c, 3), Some(3));
        assert_eq!(
            c.hx.to_picture(),
            "\
1..1.....1...
.1..1....11..
..1..1....1..
...1..1....1.
....1..1...11
.....1..1...1
"
        );
        assert_eq!(
            c.hz.to_picture(),
            "\
11.......1...
.11.......1..
...11....1.1.
....11....1.1
......11...1.
.......11...1
"
        );
    }

    #[test]
    fn surface_code_parameters() {
        for d in [2usize, 3, 4, 5, 7, 9] {
            let c = CssCode::rotated_surface(d).unwrap();
            assert_eq!(c.n(), d * d);
            assert_eq!(c.k(), 1, "d={d}");
            assert_eq!(c.hx.rows() + c.hz.rows(), d * d - 1, "d={d}");
        }
        let c3 = CssCode::rotated_surface(3).unwrap();
        assert_eq!(
            c3.hx.to_picture(),
            "\
.11......
11.11....
....11.11
......11.
"
        );
        assert_eq!(
            c3.hz.to_picture(),
            "\
1..1.....
.11.11...
...11.11.
.....1..1
"
        );
        assert_eq!(x_distance_up_to(&c3, 3), Some(3));
        let c5 = CssCode::rotated_surface(5).unwrap();
        assert_eq!(x_distance_up_to(&c5, 4), None);
        assert!(CssCode::rotated_surface(1).is_err());
    }

    #[test]
    fn bivariate_bicycle_parameters() {
        let c = CssCode::bb72();
        assert_eq!(params(&c), (72, 12, 36, 36));
        for i in 0..36 {
            assert_eq!(c.hx.row_weight(i), 6);
            assert_eq!(c.hz.row_weight(i), 6);
        }
        let c = CssCode::bb144();
        assert_eq!(params(&c), (144, 12, 72, 72));
        assert_eq!(
            CssCode::by_name("bb:6,6,x^3+y+y^2,y^3+x+x^2").unwrap(),
            CssCode::bb72()
        );
    }

    #[test]
    fn polynomial_parsing() {
        let p: Polynomial = "x^3 + y + y^2".parse().unwrap();
        assert_eq!(p.terms, vec![(3, 0), (0, 1), (0, 2)]);
        assert_eq!(p.to_string(), "x^3+y+y^2");
        let q: Polynomial = "1+x*y^2+x^2y+x+x".parse().unwrap();
        assert_eq!(q.terms, vec![(0, 0), (1, 2), (2, 1)]);
        assert!("x^".parse::<Polynomial>().is_err());
        assert!("x+z".parse::<Polynomial>().is_err());
        assert!("".parse::<Polynomial>().is_err());
    }

    #[test]
    fn names_and_errors() {
        assert_eq!(CssCode::by_name("surface3").unwrap().n(), 9);
        assert_eq!(CssCode::by_name("hgp13").unwrap().n(), 13);
        assert!(matches!(
            CssCode::by_name("toric"),
            Err(CodeError::UnknownName(_))
        ));
        let h = BitMatrix::from_picture("11").unwrap();
        let g = BitMatrix::from_picture("1.").unwrap();
        assert_eq!(
            CssCode::new("bad", h, g),
            Err(CodeError::NotCommuting { x: 0, z: 0 })
        );
    }
}
