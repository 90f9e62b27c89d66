//! stim's detector error models (`.dem` text): a list of independent error mechanisms, each
//! with a probability, the detectors it flips and the logical observables it flips.
//!
//! [`DetectorErrorModel::parse`] reads the text format of stim 1.15+ — `error(p)` with `D`/`L`
//! targets and `^` separators, `detector(coords…) D#` and `logical_observable L#`
//! declarations, `shift_detectors(coords…) N`, nested `repeat N { … }` blocks, instruction tags
//! (`error[tag](p) …`), comments and any letter case — into
//!
//! - the **check matrix** `H`, detectors × mechanisms ([`DetectorErrorModel::check_matrix`]),
//! - the **observable matrix** `A`, observables × mechanisms
//!   ([`DetectorErrorModel::observable_matrix`]),
//! - the **priors** `p` ([`DetectorErrorModel::priors`]), and each detector's coordinates.
//!
//! A mechanism's symptoms are the XOR of its `^`-separated parts (stim's suggested
//! decomposition is not kept): `error(0.1) D0 L0 ^ D1 L0` flips D0 and D1 and no observable.
//! Mechanisms with the same symptoms and frame changes are merged into one column with
//! `p = p1(1 − p2) + p2(1 − p1)` (the probability that exactly one of them happens), in the
//! order of first appearance; a mechanism that flips nothing is dropped. Tags are kept in the
//! instruction tree and otherwise ignored.
//!
//! Every error names the file and the 1-based line: `model.dem:7: probability 1.5 is outside
//! [0, 1]`, and quotes at most an excerpt of the input ([`crate::io::excerpt`]). Bad input
//! never panics and never hangs: `repeat` counts multiply into at most [`MAX_EXPANDED`]
//! executed instructions, detector indices stay below [`MAX_DETECTORS`], and observables below
//! [`MAX_OBSERVABLES`], and blocks nest at most [`MAX_NESTING`] deep.
//!
//! # Resource bounds
//!
//! A small text can expand to a huge model: `repeat 20000 { error(0.1) D0 … D99999
//! shift_detectors 1 }` is 689 KB and names two billion targets. [`DemLimits`] bounds what a
//! model may expand to — its targets, its coordinates and its mechanisms, counted over every
//! executed instruction, `repeat` blocks unrolled, and its detectors (the largest index named,
//! offsets included: `error(0.1) D11100000` is 22 bytes) — and the parser checks the bounds twice
//! before allocating: while it reads the text (a line's targets are counted before they are
//! stored) and once the text is read (the expansion's totals, computed from the blocks'
//! counts without expanding them). A model past a bound is
//! [`DemErrorKind::Limit`], naming the line at which the running total crosses it and the
//! bound: `big.dem:2: the model expands to more than 16777216 targets (limit `targets`;
//! BACKLINE_DEM_LIMITS=targets=N raises it)`. [`DetectorErrorModel::parse`] applies
//! [`DemLimits::DEFAULT`]; [`DetectorErrorModel::parse_with`] takes other bounds, and
//! [`DemLimits::from_env`] reads the `BACKLINE_DEM_LIMITS` variable every front end honours
//! (`backline decode --dem-limits`, `stream:` functions, Python's `dem_limits=`).
//!
//! ```
//! use backline_decoders::dem::DetectorErrorModel;
//! let dem = DetectorErrorModel::parse(
//!     "error(0.1) D0 D1\n\
//!      repeat 2 {\n    error(0.1) D1 D2 L0\n    shift_detectors(0, 1) 1\n}\n\
//!      detector(1, 0) D0\n",
//!     "example.dem",
//! )
//! .unwrap();
//! assert_eq!((dem.num_detectors(), dem.num_observables(), dem.num_mechanisms()), (4, 1, 3));
//! assert_eq!(dem.check_matrix().col(2), &[2, 3]);
//! assert_eq!(dem.detector_coords(2), Some(&[1.0, 2.0][..]));
//! ```
//!
//! # Windows
//!
//! For decoders that slide over time (decode W rounds, commit C, slide),
//! [`DetectorErrorModel::window`] cuts the model down to a range of detectors: every mechanism
//! that flips at least one of them, restricted to them, renumbered from 0, with the global
//! mechanism ids beside it. [`DetectorErrorModel::detectors_up_to_time`] finds the range for a
//! time coordinate, and [`DetectorErrorModel::apply_mechanisms`] removes committed mechanisms'
//! effect from the detection events and the observables. All three cost time in proportion to
//! the entries they touch (the detector → mechanism index is built once, at parse time).
//!
//! # The instruction tree, printed back
//!
//! The model keeps the text's instructions as a tree ([`DetectorErrorModel::instructions`]):
//! each [`Instruction`] with its [`InstructionKind`], its tag and its line, `repeat` blocks
//! stored once with their bodies, not unrolled. `Display` prints the tree back as stim's text
//! — one instruction a line, a block's body indented four spaces a level, numbers in the
//! shortest form that reads back to the same `f64` — so that a model printed and read again
//! is the same model: the same tree (line numbers, comments, spacing and letter case apart),
//! the same mechanisms, matrices, priors, coordinates and graphlike edges
//! ([`DetectorErrorModel::without_lines`] compares them).
//!
//! ```
//! use backline_decoders::dem::DetectorErrorModel;
//! let text = "error(0.1) D0 D1 ^ D2  # a comment\nREPEAT 2 {\n  error(1e-7) D1 L0\n}\n";
//! let dem = DetectorErrorModel::parse(text, "m.dem").unwrap();
//! let printed = dem.to_string();
//! assert_eq!(printed, "error(0.1) D0 D1 ^ D2\nrepeat 2 {\n    error(1e-7) D1 L0\n}\n");
//! let again = DetectorErrorModel::parse(&printed, "m.dem").unwrap();
//! assert_eq!(again.without_lines(), dem.without_lines());
//! ```
//!
//! The module is split by job: `syntax` (the tree and its parser), `limits` ([`DemLimits`]
//! and the checks against them), `matrices` (executing the tree into the matrices and the
//! graphlike edges), `window` ([`DemWindow`]), `print` (`Display`) and `rolled`
//! ([`RolledModel`]: a model whose rounds repeat, its long `repeat` kept unexecuted).

mod limits;
mod matrices;
mod print;
mod rolled;
mod syntax;
#[cfg(test)]
mod tests;
mod window;

pub use limits::DemLimits;
pub use matrices::{DecomposedErrors, GraphlikeEdge, Hyperedge, Mechanism};
pub use rolled::{MAX_ROLLED_DETECTORS, RolledModel};
pub use syntax::{DemError, DemErrorKind, DemTarget, Instruction, InstructionKind};
pub use window::DemWindow;

use crate::sparse::SparseMatrix;

/// Detector indices must be below this (2^24).
pub const MAX_DETECTORS: u64 = 1 << 24;
/// Observable indices must be below this (2^20).
pub const MAX_OBSERVABLES: u64 = 1 << 20;
/// At most this many instructions are executed once `repeat` blocks are unrolled (2^27).
pub const MAX_EXPANDED: u64 = 1 << 27;
/// `repeat` blocks nest at most this deep.
pub const MAX_NESTING: usize = 64;

/// A detector error model: checks, observables and priors, with each detector's coordinates,
/// and the instruction tree it was read from.
///
/// Invariants: `checks` is `num_detectors × n`, `observables` is `num_observables × n`,
/// `priors` and `lines` have `n` entries, no two columns of `(checks; observables)` are equal
/// and none is zero; `coord_start` has `num_detectors + 1` entries; `instructions` is what
/// the matrices were executed from (empty for a window's model, which was cut, not read).
/// The tree costs memory in proportion to the text (a `repeat` body is stored once), no more
/// than the parser held for it before it was kept.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectorErrorModel {
    name: String,
    /// The text's instructions, `repeat` blocks kept.
    instructions: Vec<Instruction>,
    checks: SparseMatrix,
    observables: SparseMatrix,
    priors: Vec<f64>,
    lines: Vec<u32>,
    /// Detector `d`'s coordinates are `coords[coord_start[d]..coord_start[d + 1]]`.
    coord_start: Vec<u32>,
    coords: Vec<f64>,
    /// Whether detector `d` was declared by a `detector` instruction.
    declared: Vec<bool>,
    /// Detector → mechanisms (CSR of `checks`).
    det_start: Vec<u32>,
    det_mechs: Vec<u32>,
    /// stim's suggested decomposition into edges of one or two detectors.
    graphlike: Vec<GraphlikeEdge>,
    /// The first `^`-separated part that flips more than two detectors.
    hyperedge: Option<Hyperedge>,
    /// The errors split into several of those edges.
    decomposed: matrices::DecomposedErrors,
}

impl DetectorErrorModel {
    /// Parses a model's text within [`DemLimits::DEFAULT`]; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<DetectorErrorModel, DemError> {
        DetectorErrorModel::parse_with(text, file, &DemLimits::DEFAULT)
    }

    /// Parses a model's text within `limits` (see the module docs); `file` names it in
    /// errors.
    pub fn parse_with(
        text: &str,
        file: &str,
        limits: &DemLimits,
    ) -> Result<DetectorErrorModel, DemError> {
        let err = |(line, kind): (usize, DemErrorKind)| DemError {
            file: file.to_string(),
            line,
            kind,
        };
        let tree = syntax::parse_tree(text, limits).map_err(err)?;
        limits::check_size(&tree).map_err(err)?;
        limits::check_limits(&tree, &mut limits::Cost::default(), limits).map_err(err)?;
        limits::check_detectors(&tree, 0, limits).map_err(err)?;
        let mut model = matrices::execute(&tree, file).map_err(err)?;
        model.instructions = tree;
        Ok(model)
    }

    /// The instructions the model was read from, as a tree: `repeat` blocks kept with their
    /// bodies (not unrolled), each instruction with its tag and line. Empty for a window's
    /// model ([`DetectorErrorModel::window`]), which was cut, not read.
    pub fn instructions(&self) -> &[Instruction] {
        &self.instructions
    }

    /// A copy with every line number 0 — the instructions', the mechanisms', the graphlike
    /// edges', the hyperedge's and the split errors': two models read from texts that differ only in comments,
    /// blank lines, spacing, letter case or number spelling compare equal this way (given the
    /// same name).
    pub fn without_lines(&self) -> DetectorErrorModel {
        fn clear(tree: &mut [Instruction]) {
            for ins in tree {
                ins.line = 0;
                if let InstructionKind::Repeat { body, .. } = &mut ins.kind {
                    clear(body);
                }
            }
        }
        let mut m = self.clone();
        clear(&mut m.instructions);
        m.lines.iter_mut().for_each(|l| *l = 0);
        m.graphlike.iter_mut().for_each(|e| e.line = 0);
        if let Some(h) = &mut m.hyperedge {
            h.line = 0;
        }
        m.decomposed.clear_lines();
        m
    }

    /// The name given to [`DetectorErrorModel::parse`] (a file name, usually).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Detectors: one more than the largest index declared or mentioned.
    pub fn num_detectors(&self) -> usize {
        self.checks.rows()
    }

    /// Observables: one more than the largest index declared or mentioned.
    pub fn num_observables(&self) -> usize {
        self.observables.rows()
    }

    /// Error mechanisms (after merging).
    pub fn num_mechanisms(&self) -> usize {
        self.priors.len()
    }

    /// Detector `d`'s absolute coordinates, `None` when no `detector` instruction declared it.
    pub fn detector_coords(&self, d: usize) -> Option<&[f64]> {
        self.declared[d]
            .then(|| &self.coords[self.coord_start[d] as usize..self.coord_start[d + 1] as usize])
    }

    /// Detector `d`'s time: its last coordinate (stim's circuits put time last), if it has one.
    pub fn detector_time(&self, d: usize) -> Option<f64> {
        self.detector_coords(d).and_then(|c| c.last().copied())
    }

    /// Checks that no detector index reaches `count` (the number of detectors the caller's
    /// shots have): [`DemErrorKind::DetectorRange`] naming the line of the first mechanism that
    /// mentions one, or line 0 when only a declaration does.
    pub fn expect_detectors(&self, count: usize) -> Result<(), DemError> {
        if self.num_detectors() <= count {
            return Ok(());
        }
        let d = self.num_detectors() - 1;
        let line = self
            .mechanisms_of(d)
            .first()
            .map_or(0, |&k| self.lines[k as usize] as usize);
        Err(DemError {
            file: self.name.clone(),
            line,
            kind: DemErrorKind::DetectorRange {
                index: d as u64,
                limit: count as u64,
                what: "declared",
            },
        })
    }
}
