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
//! order of first appearance; a mechanism that flips nothing is dropped. Tags are read and
//! ignored.
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
//! executed instruction, `repeat` blocks unrolled — and the parser checks the bounds twice
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

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;

use crate::error::SettingError;
use crate::io::excerpt;
use crate::sparse::SparseMatrix;

/// Detector indices must be below this (2^24).
pub const MAX_DETECTORS: u64 = 1 << 24;
/// Observable indices must be below this (2^20).
pub const MAX_OBSERVABLES: u64 = 1 << 20;
/// At most this many instructions are executed once `repeat` blocks are unrolled (2^27).
pub const MAX_EXPANDED: u64 = 1 << 27;
/// `repeat` blocks nest at most this deep.
pub const MAX_NESTING: usize = 64;

/// What a model may expand to, counted over every executed instruction with `repeat` blocks
/// unrolled (see the module docs). The defaults fit a machine of a few GB with room to spare:
/// a model at every bound parses in well under 2 GB, and the largest circuit-level models in
/// use (a distance-31 surface code over 31 rounds: about 250,000 mechanisms and a million
/// targets) are far inside them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DemLimits {
    /// Targets (`D#`, `L#`, numbers, `^`), each instruction counting one more for itself
    /// (default 2^24 = 16,777,216).
    pub targets: u64,
    /// Coordinates and other parenthesised arguments: a `detector`'s arguments once per
    /// detector it declares, a `shift_detectors`' and an `error`'s once (default 2^24).
    pub coords: u64,
    /// Mechanisms: executed `error` instructions, before merging (default 2^22 = 4,194,304).
    pub mechanisms: u64,
}

impl Default for DemLimits {
    fn default() -> DemLimits {
        DemLimits::DEFAULT
    }
}

impl DemLimits {
    /// The defaults.
    pub const DEFAULT: DemLimits = DemLimits {
        targets: 1 << 24,
        coords: 1 << 24,
        mechanisms: 1 << 22,
    };

    /// The environment variable [`DemLimits::from_env`] reads: `key=N` pairs separated by `,`
    /// or `;`, e.g. `targets=100000000,mechanisms=10000000`.
    pub const ENV: &'static str = "BACKLINE_DEM_LIMITS";

    /// The names [`DemLimits::set`] takes.
    pub const KEYS: &'static str = "targets, coords, mechanisms";

    /// Sets one bound by name from text (a positive integer).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        let field = match key.trim() {
            "targets" => &mut self.targets,
            "coords" => &mut self.coords,
            "mechanisms" => &mut self.mechanisms,
            other => return Err(SettingError::unknown(other, Self::KEYS)),
        };
        *field = value
            .trim()
            .parse()
            .ok()
            .filter(|&n: &u64| n > 0)
            .ok_or_else(|| SettingError::value(key, value, "a positive integer"))?;
        Ok(())
    }

    /// The defaults with the `key=N` pairs of `spec` (separated by `,` or `;`) applied.
    pub fn parse(spec: &str) -> Result<DemLimits, SettingError> {
        let mut l = DemLimits::DEFAULT;
        for kv in spec
            .split([',', ';'])
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| SettingError::value("dem limits", kv, "key=N"))?;
            l.set(k, v)?;
        }
        Ok(l)
    }

    /// The defaults with `BACKLINE_DEM_LIMITS` applied (the defaults when it is unset).
    pub fn from_env() -> Result<DemLimits, SettingError> {
        match std::env::var(Self::ENV) {
            Ok(spec) => DemLimits::parse(&spec),
            Err(std::env::VarError::NotPresent) => Ok(DemLimits::DEFAULT),
            Err(std::env::VarError::NotUnicode(_)) => {
                Err(SettingError::value(Self::ENV, "(not UTF-8)", "key=N pairs"))
            }
        }
    }

    /// The first bound `c` is past, as the error for it.
    fn exceeded(&self, c: Cost) -> Option<DemErrorKind> {
        let limit = |what, key, limit| Some(DemErrorKind::Limit { what, key, limit });
        if c.targets > self.targets {
            return limit("targets", "targets", self.targets);
        }
        if c.coords > self.coords {
            return limit("coordinates", "coords", self.coords);
        }
        if c.mechanisms > self.mechanisms {
            return limit("mechanisms", "mechanisms", self.mechanisms);
        }
        None
    }

    /// How many more times `per` fits on top of `total` within every bound.
    fn times_fitting(&self, total: Cost, per: Cost) -> u64 {
        [
            (self.targets, total.targets, per.targets),
            (self.coords, total.coords, per.coords),
            (self.mechanisms, total.mechanisms, per.mechanisms),
        ]
        .into_iter()
        .filter(|&(_, _, p)| p > 0)
        .map(|(l, t, p)| l.saturating_sub(t) / p)
        .min()
        .unwrap_or(u64::MAX)
    }
}

/// What part of a model costs, against [`DemLimits`]; sums saturate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Cost {
    targets: u64,
    coords: u64,
    mechanisms: u64,
}

impl Cost {
    fn plus(self, o: Cost) -> Cost {
        Cost {
            targets: self.targets.saturating_add(o.targets),
            coords: self.coords.saturating_add(o.coords),
            mechanisms: self.mechanisms.saturating_add(o.mechanisms),
        }
    }

    fn times(self, n: u64) -> Cost {
        Cost {
            targets: self.targets.saturating_mul(n),
            coords: self.coords.saturating_mul(n),
            mechanisms: self.mechanisms.saturating_mul(n),
        }
    }
}

/// What is wrong with a model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DemErrorKind {
    /// An instruction name stim's DEM format does not have (an excerpt of it).
    #[error(
        "unknown instruction `{0}` (expected error, detector, logical_observable, \
         shift_detectors or repeat)"
    )]
    UnknownInstruction(String),
    /// A line that is not an instruction, a block start or a block end (what it quotes of the
    /// line is an excerpt).
    #[error("{0}")]
    Syntax(String),
    /// An `error` probability outside [0, 1] or not a number.
    #[error("probability {0} is outside [0, 1]")]
    Probability(f64),
    /// The wrong number of parenthesised arguments.
    #[error("`{name}` takes {expected} argument(s), found {found}")]
    Arguments {
        /// The instruction.
        name: &'static str,
        /// What it takes.
        expected: &'static str,
        /// What was given.
        found: usize,
    },
    /// A target the instruction does not take.
    #[error("`{name}` does not take the target `{target}`")]
    Target {
        /// The instruction.
        name: &'static str,
        /// The target as written (an excerpt of it).
        target: String,
    },
    /// A detector index at or past [`MAX_DETECTORS`] (after the `shift_detectors` offset), or
    /// past the count the caller declared ([`DetectorErrorModel::expect_detectors`]).
    #[error("detector {index} is beyond the {limit} detectors {what}")]
    DetectorRange {
        /// The absolute index.
        index: u64,
        /// The limit.
        limit: u64,
        /// Which limit.
        what: &'static str,
    },
    /// An observable index at or past [`MAX_OBSERVABLES`].
    #[error("observable L{0} is beyond the supported {MAX_OBSERVABLES} observables")]
    ObservableRange(u64),
    /// `repeat` counts multiply past [`MAX_EXPANDED`] instructions.
    #[error("the repeat blocks expand to more than {MAX_EXPANDED} instructions")]
    TooLarge,
    /// The model expands past one of its [`DemLimits`]; the line is where the running total
    /// crosses it.
    #[error(
        "the model expands to more than {limit} {what} (limit `{key}`; \
         BACKLINE_DEM_LIMITS={key}=N raises it)"
    )]
    Limit {
        /// What: `targets`, `coordinates` or `mechanisms`.
        what: &'static str,
        /// The bound's name in [`DemLimits::set`].
        key: &'static str,
        /// The bound.
        limit: u64,
    },
    /// A `{` without its `}`, or a `}` without its `{`.
    #[error("{0}")]
    Block(String),
    /// The model holds no error mechanism that flips anything.
    #[error("the model has no error mechanisms")]
    Empty,
}

/// A model that could not be read: `file:line: what` (line 0 when not about one line).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct DemError {
    /// The name of the model's file (or the name the caller gave the text).
    pub file: String,
    /// 1-based line, 0 when the error is not about one line.
    pub line: usize,
    /// What is wrong.
    pub kind: DemErrorKind,
}

impl fmt::Display for DemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::io::write_at(f, &self.file, self.line, &self.kind)
    }
}

/// One mechanism of a model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mechanism<'a> {
    /// Its probability, in [0, 1].
    pub p: f64,
    /// The detectors it flips, ascending.
    pub detectors: &'a [u32],
    /// The observables it flips, ascending.
    pub observables: &'a [u32],
    /// The 1-based line of the first `error` instruction that produced it.
    pub line: u32,
}

/// A detector error model: checks, observables and priors, with each detector's coordinates.
///
/// Invariants: `checks` is `num_detectors × n`, `observables` is `num_observables × n`,
/// `priors` and `lines` have `n` entries, no two columns of `(checks; observables)` are equal
/// and none is zero; `coord_start` has `num_detectors + 1` entries.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectorErrorModel {
    name: String,
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
}

/// One edge of a model's graphlike decomposition ([`DetectorErrorModel::graphlike_edges`]).
#[derive(Debug, Clone, PartialEq)]
pub struct GraphlikeEdge {
    /// Its detectors: `(a, b)` with `a < b`, or `(a, u32::MAX)` for an edge to the boundary.
    pub detectors: (u32, u32),
    /// The observables it flips, ascending (those of its first appearance).
    pub observables: Vec<u32>,
    /// The probability that an odd number of the `error` instructions with this part happen.
    pub p: f64,
    /// The 1-based line of the first `error` instruction with this part.
    pub line: u32,
}

/// A `^`-separated part of an `error` that flips more than two detectors: a hyperedge that
/// stim's decomposition did not split.
#[derive(Debug, Clone, PartialEq)]
pub struct Hyperedge {
    /// The 1-based line of its `error` instruction.
    pub line: u32,
    /// The detectors it flips, ascending.
    pub detectors: Vec<u32>,
}

/// A parsed target.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Target {
    Detector(u64),
    Observable(u64),
    Number(u64),
    Separator,
}

/// A parsed instruction, before execution.
#[derive(Debug, Clone)]
enum Op {
    Error(f64, Vec<Target>),
    Detector(Vec<f64>, Vec<u64>),
    Observable(Vec<u64>),
    Shift(Vec<f64>, u64),
    Repeat(u64, Vec<Instr>),
}

#[derive(Debug, Clone)]
struct Instr {
    line: u32,
    op: Op,
}

/// One line, split: name, arguments, targets, whether it opens a block.
struct Line<'a> {
    name: &'a str,
    args: Vec<f64>,
    targets: Vec<&'a str>,
    opens_block: bool,
}

type Res<T> = Result<T, DemErrorKind>;

fn syntax<T>(msg: impl Into<String>) -> Res<T> {
    Err(DemErrorKind::Syntax(msg.into()))
}

/// Adds `cost` to `seen`, the model's cost so far as read (before `repeat` blocks are
/// unrolled): an error when that alone is past a bound. Called before what it counts is
/// stored, so a line of a hundred million targets is refused before its list is allocated.
fn charge(seen: &mut Cost, cost: Cost, limits: &DemLimits) -> Res<()> {
    *seen = seen.plus(cost);
    limits.exceeded(*seen).map_or(Ok(()), Err)
}

/// Parses the parenthesised arguments of an instruction (the text between `(` and `)`).
fn parse_args(inner: &str, seen: &mut Cost, limits: &DemLimits) -> Res<Vec<f64>> {
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    let count = inner.split(',').count() as u64;
    let cost = Cost {
        coords: count,
        ..Cost::default()
    };
    charge(seen, cost, limits)?;
    let mut args = Vec::with_capacity(count as usize);
    for a in inner.split(',') {
        let a = a.trim();
        let numeric = a.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c));
        match a.parse::<f64>() {
            Ok(v) if v.is_finite() && numeric => args.push(v),
            // `1e999` parses to infinity: a coordinate or a probability must be finite.
            Ok(_) if numeric => {
                return syntax(format!("argument `{}` is not a finite number", excerpt(a)));
            }
            _ => return syntax(format!("argument `{}` is not a number", excerpt(a))),
        }
    }
    Ok(args)
}

/// Splits an instruction line (comment and indentation already allowed for), counting its
/// arguments and targets into `seen` before storing them.
fn split_line<'a>(text: &'a str, seen: &mut Cost, limits: &DemLimits) -> Res<Option<Line<'a>>> {
    let s = text.trim_start();
    if s.is_empty() || s.starts_with('#') {
        return Ok(None);
    }
    let name_len = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    let name = &s[..name_len];
    if name.is_empty() || !name.as_bytes()[0].is_ascii_alphabetic() {
        return syntax(format!(
            "expected an instruction, found `{}`",
            excerpt(s.split_whitespace().next().unwrap_or(s))
        ));
    }
    let mut rest = &s[name_len..];
    if let Some(tagged) = rest.strip_prefix('[') {
        // A tag runs to the first `]` (stim writes a `]` inside a tag as `\C`).
        let Some(end) = tagged.find(']') else {
            return syntax("tag `[` without its closing `]`");
        };
        rest = &tagged[end + 1..];
    }
    let mut args = Vec::new();
    if let Some(open) = rest.strip_prefix('(') {
        let Some(end) = open.find(')') else {
            return syntax("`(` without its closing `)`");
        };
        args = parse_args(&open[..end], seen, limits)?;
        rest = &open[end + 1..];
    }
    if !rest.is_empty() && !rest.starts_with([' ', '\t', '#', '{']) {
        return syntax(format!(
            "unexpected `{}` after `{}`",
            excerpt(rest),
            excerpt(name)
        ));
    }
    let body = match rest.find('#') {
        Some(i) => &rest[..i],
        None => rest,
    };
    let count = body.split_whitespace().count();
    let cost = Cost {
        targets: count as u64 + 1,
        ..Cost::default()
    };
    charge(seen, cost, limits)?;
    let mut targets: Vec<&str> = Vec::with_capacity(count);
    targets.extend(body.split_whitespace());
    let mut opens_block = false;
    if let Some(last) = targets.last_mut() {
        if *last == "{" {
            targets.pop();
            opens_block = true;
        } else if let Some(t) = last.strip_suffix('{') {
            *last = t;
            opens_block = true;
        }
    }
    if targets.iter().any(|t| t.contains(['{', '}'])) {
        return syntax("`{` must end the line and `}` must stand alone");
    }
    Ok(Some(Line {
        name,
        args,
        targets,
        opens_block,
    }))
}

fn parse_uint(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn parse_target(t: &str) -> Option<Target> {
    if t == "^" {
        return Some(Target::Separator);
    }
    if let Some(d) = t.strip_prefix(['D', 'd']) {
        return parse_uint(d).map(Target::Detector);
    }
    if let Some(l) = t.strip_prefix(['L', 'l']) {
        return parse_uint(l).map(Target::Observable);
    }
    parse_uint(t).map(Target::Number)
}

/// Builds one instruction from a split line (not a repeat's body).
fn instruction(line: &Line<'_>) -> Res<Op> {
    // The longest name is `logical_observable`: a longer one is unknown (and not copied).
    let lower = match line.name.len() {
        0..=18 => line.name.to_ascii_lowercase(),
        _ => String::new(),
    };
    let targets: Vec<Target> = line
        .targets
        .iter()
        .map(|t| {
            parse_target(t)
                .ok_or_else(|| DemErrorKind::Syntax(format!("bad target `{}`", excerpt(t))))
        })
        .collect::<Res<_>>()?;
    let bad_target = |name: &'static str, i: usize| DemErrorKind::Target {
        name,
        target: excerpt(line.targets[i]),
    };
    let no_block = |name: &str| -> Res<()> {
        if line.opens_block {
            syntax(format!("`{name}` does not open a block"))
        } else {
            Ok(())
        }
    };
    match lower.as_str() {
        "error" => {
            no_block("error")?;
            if line.args.len() != 1 {
                return Err(DemErrorKind::Arguments {
                    name: "error",
                    expected: "exactly 1",
                    found: line.args.len(),
                });
            }
            let p = line.args[0];
            if !(0.0..=1.0).contains(&p) {
                return Err(DemErrorKind::Probability(p));
            }
            if let Some(i) = targets.iter().position(|t| matches!(t, Target::Number(_))) {
                return Err(bad_target("error", i));
            }
            Ok(Op::Error(p, targets))
        }
        "detector" => {
            no_block("detector")?;
            let mut ds = Vec::with_capacity(targets.len());
            for (i, t) in targets.iter().enumerate() {
                match t {
                    Target::Detector(d) => ds.push(*d),
                    _ => return Err(bad_target("detector", i)),
                }
            }
            Ok(Op::Detector(line.args.clone(), ds))
        }
        "logical_observable" => {
            no_block("logical_observable")?;
            if !line.args.is_empty() {
                return Err(DemErrorKind::Arguments {
                    name: "logical_observable",
                    expected: "no",
                    found: line.args.len(),
                });
            }
            let mut ls = Vec::with_capacity(targets.len());
            for (i, t) in targets.iter().enumerate() {
                match t {
                    Target::Observable(l) => ls.push(*l),
                    _ => return Err(bad_target("logical_observable", i)),
                }
            }
            Ok(Op::Observable(ls))
        }
        "shift_detectors" => {
            no_block("shift_detectors")?;
            match targets[..] {
                [Target::Number(n)] => Ok(Op::Shift(line.args.clone(), n)),
                [] => syntax("`shift_detectors` needs one number target"),
                [Target::Number(_), ..] => Err(bad_target("shift_detectors", 1)),
                _ => Err(bad_target("shift_detectors", 0)),
            }
        }
        "repeat" => {
            if !line.args.is_empty() {
                return Err(DemErrorKind::Arguments {
                    name: "repeat",
                    expected: "no",
                    found: line.args.len(),
                });
            }
            if !line.opens_block {
                return syntax("`repeat N` must be followed by `{`");
            }
            match targets[..] {
                [Target::Number(0)] => syntax("repeat count must be at least 1"),
                [Target::Number(n)] => Ok(Op::Repeat(n, Vec::new())),
                _ => syntax("`repeat` needs one number target, the count"),
            }
        }
        _ => Err(DemErrorKind::UnknownInstruction(excerpt(line.name))),
    }
}

/// Parses the text into a tree of instructions, refusing text whose instructions alone (each
/// once) are past `limits`.
fn parse_tree(text: &str, limits: &DemLimits) -> Result<Vec<Instr>, (usize, DemErrorKind)> {
    let mut seen = Cost::default();
    // Stack of open blocks: (line of the repeat, count, body so far).
    let mut stack: Vec<(u32, u64, Vec<Instr>)> = vec![(0, 1, Vec::new())];
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let at = |k: DemErrorKind| (lineno, k);
        let trimmed = raw.trim();
        let code = match trimmed.find('#') {
            // A `#` inside a tag is not a comment; the splitter handles those lines.
            Some(p) if !trimmed[..p].contains('[') => trimmed[..p].trim_end(),
            _ => trimmed,
        };
        if code == "}" {
            if stack.len() == 1 {
                return Err(at(DemErrorKind::Block("`}` without a matching `{`".into())));
            }
            let (line, count, body) = stack.pop().expect("an open block");
            stack.last_mut().expect("the top level").2.push(Instr {
                line,
                op: Op::Repeat(count, body),
            });
            continue;
        }
        let Some(split) = split_line(code, &mut seen, limits).map_err(at)? else {
            continue;
        };
        let op = instruction(&split).map_err(at)?;
        if let Op::Error(..) = op {
            let one = Cost {
                mechanisms: 1,
                ..Cost::default()
            };
            charge(&mut seen, one, limits).map_err(at)?;
        }
        match op {
            Op::Repeat(_, _) if stack.len() > MAX_NESTING => {
                return Err(at(DemErrorKind::Block(format!(
                    "`repeat` blocks nested deeper than {MAX_NESTING}"
                ))));
            }
            Op::Repeat(count, _) => stack.push((lineno as u32, count, Vec::new())),
            op => stack.last_mut().expect("the top level").2.push(Instr {
                line: lineno as u32,
                op,
            }),
        }
    }
    if stack.len() > 1 {
        let line = stack.last().expect("an open block").0 as usize;
        return Err((
            line,
            DemErrorKind::Block("`repeat` block without its closing `}`".into()),
        ));
    }
    Ok(stack.pop().expect("the top level").2)
}

/// What one instruction (not a `repeat`) costs each time it runs.
fn cost_of(op: &Op) -> Cost {
    let (targets, coords, mechanisms) = match op {
        Op::Error(_, t) => (t.len() as u64, 1, 1),
        Op::Detector(args, ds) => (
            ds.len() as u64,
            (args.len() as u64).saturating_mul(ds.len() as u64),
            0,
        ),
        Op::Observable(ls) => (ls.len() as u64, 0, 0),
        Op::Shift(args, _) => (1, args.len() as u64, 0),
        Op::Repeat(..) => (1, 0, 0),
    };
    Cost {
        targets: targets + 1,
        coords,
        mechanisms,
    }
}

/// What a block costs once its repeats are unrolled, saturating.
fn expanded_cost(body: &[Instr]) -> Cost {
    body.iter().fold(Cost::default(), |acc, i| {
        acc.plus(match &i.op {
            Op::Repeat(n, b) => expanded_cost(b).times(*n).plus(cost_of(&i.op)),
            op => cost_of(op),
        })
    })
}

/// Adds what `body` costs unrolled to `total`, refusing it past `limits` with the line of the
/// instruction at which the running total crosses a bound. A `repeat` whose iterations all fit
/// costs one multiplication; one that does not is walked through once, after the iterations
/// that fit, to find the instruction.
fn check_limits(
    body: &[Instr],
    total: &mut Cost,
    limits: &DemLimits,
) -> Result<(), (usize, DemErrorKind)> {
    for ins in body {
        let line = ins.line as usize;
        *total = total.plus(cost_of(&ins.op));
        if let Some(k) = limits.exceeded(*total) {
            return Err((line, k));
        }
        let Op::Repeat(n, b) = &ins.op else {
            continue;
        };
        let per = expanded_cost(b);
        let all = total.plus(per.times(*n));
        if limits.exceeded(all).is_none() {
            *total = all;
            continue;
        }
        // Some iteration crosses a bound: skip those that fit, then find the instruction.
        let fit = limits.times_fitting(*total, per);
        *total = total.plus(per.times(fit));
        check_limits(b, total, limits)?;
        // Not reached (the next iteration crosses); the repeat is named if it were.
        let k = limits.exceeded(all).unwrap_or(DemErrorKind::TooLarge);
        return Err((line, k));
    }
    Ok(())
}

/// Instructions executed by a block once its repeats are unrolled, saturating.
fn expanded_size(body: &[Instr]) -> u64 {
    body.iter().fold(0u64, |acc, i| {
        acc.saturating_add(match &i.op {
            Op::Repeat(n, b) => n.saturating_mul(expanded_size(b)),
            _ => 1,
        })
    })
}

/// Interpreter state.
struct Exec {
    det_offset: u64,
    coord_offset: Vec<f64>,
    num_detectors: u64,
    num_observables: u64,
    /// Key (detectors, then `u32::MAX`, then observables) → mechanism.
    index: HashMap<Vec<u32>, u32>,
    keys: Vec<Vec<u32>>,
    priors: Vec<f64>,
    lines: Vec<u32>,
    coords: HashMap<u64, Vec<f64>>,
    dets: Vec<u64>,
    obs: Vec<u64>,
    /// The graphlike decomposition: (detector, detector or `u32::MAX`) → edge.
    edge_index: HashMap<(u32, u32), u32>,
    edges: Vec<GraphlikeEdge>,
    hyperedge: Option<Hyperedge>,
}

impl Exec {
    fn detector(&self, d: u64) -> Res<u64> {
        let abs = self.det_offset.saturating_add(d);
        if abs >= MAX_DETECTORS {
            return Err(DemErrorKind::DetectorRange {
                index: abs,
                limit: MAX_DETECTORS,
                what: "supported",
            });
        }
        Ok(abs)
    }

    fn run(&mut self, body: &[Instr]) -> Result<(), (usize, DemErrorKind)> {
        for ins in body {
            let at = |k: DemErrorKind| (ins.line as usize, k);
            match &ins.op {
                Op::Error(p, targets) => self.error(*p, targets, ins.line).map_err(at)?,
                Op::Detector(args, ds) => {
                    for &d in ds {
                        let abs = self.detector(d).map_err(at)?;
                        self.num_detectors = self.num_detectors.max(abs + 1);
                        let c: Vec<f64> = args
                            .iter()
                            .enumerate()
                            .map(|(i, a)| a + self.coord_offset.get(i).copied().unwrap_or(0.0))
                            .collect();
                        self.coords.insert(abs, c);
                    }
                }
                Op::Observable(ls) => {
                    for &l in ls {
                        if l >= MAX_OBSERVABLES {
                            return Err(at(DemErrorKind::ObservableRange(l)));
                        }
                        self.num_observables = self.num_observables.max(l + 1);
                    }
                }
                Op::Shift(args, n) => {
                    if self.coord_offset.len() < args.len() {
                        self.coord_offset.resize(args.len(), 0.0);
                    }
                    for (o, a) in self.coord_offset.iter_mut().zip(args) {
                        *o += a;
                    }
                    self.det_offset = self.det_offset.saturating_add(*n);
                }
                // A body that executes nothing (empty, comments, empty blocks) changes nothing
                // however often it repeats: not walked (AFL: `repeat 3333333333333333 { # … }`
                // ran for hours).
                Op::Repeat(_, b) if expanded_size(b) == 0 => {}
                Op::Repeat(n, b) => {
                    for _ in 0..*n {
                        self.run(b)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn error(&mut self, p: f64, targets: &[Target], line: u32) -> Res<()> {
        self.dets.clear();
        self.obs.clear();
        for t in targets {
            match *t {
                Target::Detector(d) => {
                    let abs = self.detector(d)?;
                    self.num_detectors = self.num_detectors.max(abs + 1);
                    self.dets.push(abs);
                }
                Target::Observable(l) => {
                    if l >= MAX_OBSERVABLES {
                        return Err(DemErrorKind::ObservableRange(l));
                    }
                    self.num_observables = self.num_observables.max(l + 1);
                    self.obs.push(l);
                }
                Target::Separator | Target::Number(_) => {}
            }
        }
        if p > 0.0 {
            for part in targets.split(|t| *t == Target::Separator) {
                self.component(p, part, line);
            }
        }
        let mut key: Vec<u32> = Vec::with_capacity(self.dets.len() + self.obs.len() + 1);
        xor_sorted(&mut self.dets, &mut key);
        key.push(u32::MAX);
        xor_sorted(&mut self.obs, &mut key);
        if key.len() == 1 {
            // Flips nothing: no effect on any shot.
            return Ok(());
        }
        match self.index.get(&key) {
            Some(&k) => {
                let q = &mut self.priors[k as usize];
                *q = *q * (1.0 - p) + p * (1.0 - *q);
            }
            None => {
                self.index.insert(key.clone(), self.priors.len() as u32);
                self.keys.push(key);
                self.priors.push(p);
                self.lines.push(line);
            }
        }
        Ok(())
    }
}

impl Exec {
    /// Books one `^`-separated part of an `error(p)` (targets already checked by
    /// [`Exec::error`]): an edge of one or two detectors joins the graphlike decomposition
    /// (merged with an earlier edge on the same detectors), a part of more detectors is
    /// remembered if it is the first, a part of none is ignored.
    fn component(&mut self, p: f64, targets: &[Target], line: u32) {
        let (mut dets, mut obs) = (Vec::new(), Vec::new());
        for t in targets {
            match *t {
                Target::Detector(d) => dets.push(self.det_offset.saturating_add(d)),
                Target::Observable(l) => obs.push(l),
                Target::Separator | Target::Number(_) => {}
            }
        }
        let (mut d, mut o) = (Vec::new(), Vec::new());
        xor_sorted(&mut dets, &mut d);
        xor_sorted(&mut obs, &mut o);
        let key = match d[..] {
            [] => return,
            [a] => (a, u32::MAX),
            [a, b] => (a, b),
            _ => {
                self.hyperedge
                    .get_or_insert(Hyperedge { line, detectors: d });
                return;
            }
        };
        match self.edge_index.get(&key) {
            // stim's rule, as for mechanisms; the first part's observables are kept (parts
            // on the same detectors that flip other observables mean a distance-2 code).
            Some(&k) => {
                let q = &mut self.edges[k as usize].p;
                *q = *q * (1.0 - p) + p * (1.0 - *q);
            }
            None => {
                self.edge_index.insert(key, self.edges.len() as u32);
                self.edges.push(GraphlikeEdge {
                    detectors: key,
                    observables: o,
                    p,
                    line,
                });
            }
        }
    }
}

/// Sorts `v` and appends the values that occur an odd number of times to `out`.
fn xor_sorted(v: &mut [u64], out: &mut Vec<u32>) {
    v.sort_unstable();
    let mut k = 0;
    while k < v.len() {
        let mut j = k;
        while j < v.len() && v[j] == v[k] {
            j += 1;
        }
        if (j - k) % 2 == 1 {
            out.push(v[k] as u32);
        }
        k = j;
    }
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
        let tree = parse_tree(text, limits).map_err(err)?;
        check_size(&tree).map_err(err)?;
        check_limits(&tree, &mut Cost::default(), limits).map_err(err)?;
        let mut ex = Exec {
            det_offset: 0,
            coord_offset: Vec::new(),
            num_detectors: 0,
            num_observables: 0,
            index: HashMap::new(),
            keys: Vec::new(),
            priors: Vec::new(),
            lines: Vec::new(),
            coords: HashMap::new(),
            dets: Vec::new(),
            obs: Vec::new(),
            edge_index: HashMap::new(),
            edges: Vec::new(),
            hyperedge: None,
        };
        ex.run(&tree).map_err(err)?;
        if ex.priors.is_empty() {
            return Err(err((0, DemErrorKind::Empty)));
        }
        let (nd, no) = (ex.num_detectors as usize, ex.num_observables as usize);
        let mut checks = SparseMatrix::with_rows(nd);
        let mut observables = SparseMatrix::with_rows(no);
        let mut col = Vec::new();
        for key in &ex.keys {
            let split = key.iter().position(|&x| x == u32::MAX).expect("separator");
            col.clear();
            col.extend_from_slice(&key[..split]);
            checks.push_column(&mut col).expect("rows in range");
            col.clear();
            col.extend_from_slice(&key[split + 1..]);
            observables.push_column(&mut col).expect("rows in range");
        }
        // The declared detectors in order, walked once beside every detector (a lookup per
        // detector would cost a hash of each of up to 2^24 detectors one target can name).
        let mut decl: Vec<(u64, Vec<f64>)> = ex.coords.drain().collect();
        decl.sort_unstable_by_key(|e| e.0);
        let mut decl = decl.into_iter().peekable();
        let mut coord_start = Vec::with_capacity(nd + 1);
        let mut coords = Vec::new();
        let mut declared = vec![false; nd];
        coord_start.push(0u32);
        for (d, dec) in declared.iter_mut().enumerate() {
            if let Some((_, c)) = decl.next_if(|e| e.0 == d as u64) {
                coords.extend_from_slice(&c);
                *dec = true;
            }
            coord_start.push(coords.len() as u32);
        }
        let (det_start, det_mechs) = checks.rows_of();
        Ok(DetectorErrorModel {
            name: file.to_string(),
            checks,
            observables,
            priors: ex.priors,
            lines: ex.lines,
            coord_start,
            coords,
            declared,
            det_start,
            det_mechs,
            graphlike: ex.edges,
            hyperedge: ex.hyperedge,
        })
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

    /// `H`: detectors × mechanisms.
    pub fn check_matrix(&self) -> &SparseMatrix {
        &self.checks
    }

    /// `A`: observables × mechanisms.
    pub fn observable_matrix(&self) -> &SparseMatrix {
        &self.observables
    }

    /// Each mechanism's probability.
    pub fn priors(&self) -> &[f64] {
        &self.priors
    }

    /// Mechanism `k`.
    pub fn mechanism(&self, k: usize) -> Mechanism<'_> {
        Mechanism {
            p: self.priors[k],
            detectors: self.checks.col(k),
            observables: self.observables.col(k),
            line: self.lines[k],
        }
    }

    /// The mechanisms that flip detector `d`, ascending.
    pub fn mechanisms_of(&self, d: usize) -> &[u32] {
        &self.det_mechs[self.det_start[d] as usize..self.det_start[d + 1] as usize]
    }

    /// The model as a graph, the way matching decoders read it (PyMatching's
    /// `Matching.from_detector_error_model`): every `^`-separated part of every `error(p)` with
    /// `p > 0` that flips one or two detectors is an edge (to the boundary, or between the
    /// two) with the instruction's probability; parts on the same detectors are merged as
    /// mechanisms are, in order of first appearance; parts that flip no detector are ignored.
    pub fn graphlike_edges(&self) -> &[GraphlikeEdge] {
        &self.graphlike
    }

    /// The first `^`-separated part (in file order) that flips more than two detectors, if
    /// any: a model a matching decoder cannot take as it is.
    pub fn first_hyperedge(&self) -> Option<&Hyperedge> {
        self.hyperedge.as_ref()
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

    /// The first detectors up to time `t`: `0..k` with `k` the first detector whose time is
    /// above `t` (detectors without coordinates count as time 0). For models whose detectors
    /// are numbered in time order, as stim's circuits number them.
    pub fn detectors_up_to_time(&self, t: f64) -> Range<usize> {
        let k = (0..self.num_detectors())
            .find(|&d| self.detector_time(d).unwrap_or(0.0) > t)
            .unwrap_or(self.num_detectors());
        0..k
    }

    /// The model cut down to `detectors`: every mechanism that flips at least one of them
    /// (ascending by id), with only those detectors (renumbered from `detectors.start`), the
    /// same observables and priors. Mechanisms that look the same inside the window stay
    /// apart, so each window column maps to one global mechanism ([`DemWindow::mechanisms`]).
    ///
    /// # Panics
    /// If `detectors` is not within `0..num_detectors()`.
    pub fn window(&self, detectors: Range<usize>) -> DemWindow {
        self.cut(detectors, |_| true)
    }

    /// [`DetectorErrorModel::window`] with only the mechanisms whose first (lowest) detector
    /// is in `detectors`: what a sliding window decides, once the windows before it have
    /// committed the mechanisms that start earlier. Models numbered in time order (stim's)
    /// have no mechanism that starts inside a window and reaches back before it.
    ///
    /// # Panics
    /// If `detectors` is not within `0..num_detectors()`.
    pub fn window_from(&self, detectors: Range<usize>) -> DemWindow {
        let start = detectors.start as u32;
        self.cut(detectors, |k| {
            self.checks
                .col(k as usize)
                .first()
                .is_some_and(|&d| d >= start)
        })
    }

    /// The cut of [`DetectorErrorModel::window`], keeping the mechanisms `keep` accepts.
    fn cut(&self, detectors: Range<usize>, keep: impl Fn(u32) -> bool) -> DemWindow {
        assert!(detectors.start <= detectors.end && detectors.end <= self.num_detectors());
        let mut ids: Vec<u32> = detectors
            .clone()
            .flat_map(|d| self.mechanisms_of(d).iter().copied())
            .filter(|&k| keep(k))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let rows = detectors.len();
        let mut checks = SparseMatrix::with_rows(rows);
        let mut col = Vec::new();
        for &k in &ids {
            col.clear();
            col.extend(
                self.checks
                    .col(k as usize)
                    .iter()
                    .filter(|&&d| detectors.contains(&(d as usize)))
                    .map(|&d| d - detectors.start as u32),
            );
            checks.push_column(&mut col).expect("rows in range");
        }
        let observables = self.observables.select_columns(&ids);
        let priors: Vec<f64> = ids.iter().map(|&k| self.priors[k as usize]).collect();
        let lines: Vec<u32> = ids.iter().map(|&k| self.lines[k as usize]).collect();
        let mut coord_start = vec![0u32];
        let mut coords = Vec::new();
        let mut declared = Vec::with_capacity(rows);
        for d in detectors.clone() {
            declared.push(self.declared[d]);
            if let Some(c) = self.detector_coords(d) {
                coords.extend_from_slice(c);
            }
            coord_start.push(coords.len() as u32);
        }
        let (det_start, det_mechs) = checks.rows_of();
        let inside = |d: u32| d == u32::MAX || detectors.contains(&(d as usize));
        let shift = |d: u32| {
            if d == u32::MAX {
                d
            } else {
                d - detectors.start as u32
            }
        };
        let graphlike = self
            .graphlike
            .iter()
            .filter(|e| inside(e.detectors.0) && inside(e.detectors.1))
            .map(|e| GraphlikeEdge {
                detectors: (shift(e.detectors.0), shift(e.detectors.1)),
                ..e.clone()
            })
            .collect();
        DemWindow {
            model: DetectorErrorModel {
                name: format!(
                    "{} (detectors {}..{})",
                    self.name, detectors.start, detectors.end
                ),
                checks,
                observables,
                priors,
                lines,
                coord_start,
                coords,
                declared,
                det_start,
                det_mechs,
                graphlike,
                hyperedge: None,
            },
            detectors,
            mechanisms: ids,
        }
    }

    /// XORs the effect of `mechanisms` into detection events (one 0/1 byte per detector) and
    /// observable flips (one 0/1 byte per observable): what removing committed mechanisms
    /// from a window's syndrome, and adding them to the prediction, takes.
    pub fn apply_mechanisms(
        &self,
        mechanisms: impl IntoIterator<Item = u32>,
        detectors: &mut [u8],
        observables: &mut [u8],
    ) {
        for k in mechanisms {
            for &d in self.checks.col(k as usize) {
                detectors[d as usize] ^= 1;
            }
            for &l in self.observables.col(k as usize) {
                observables[l as usize] ^= 1;
            }
        }
    }
}

/// Refuses trees that would execute more than [`MAX_EXPANDED`] instructions, naming the
/// outermost `repeat` that crosses the limit.
fn check_size(tree: &[Instr]) -> Result<(), (usize, DemErrorKind)> {
    let mut total = 0u64;
    for ins in tree {
        let size = match &ins.op {
            Op::Repeat(n, b) => n.saturating_mul(expanded_size(b)),
            _ => 1,
        };
        total = total.saturating_add(size);
        if total > MAX_EXPANDED {
            return Err((ins.line as usize, DemErrorKind::TooLarge));
        }
    }
    Ok(())
}

/// A model cut down to a range of detectors ([`DetectorErrorModel::window`]).
#[derive(Debug, Clone, PartialEq)]
pub struct DemWindow {
    /// The cut-down model: its detector `i` is detector `detectors.start + i` of the whole.
    pub model: DetectorErrorModel,
    /// The detectors of the whole model it covers.
    pub detectors: Range<usize>,
    /// Column `j` of the window is mechanism `mechanisms[j]` of the whole model.
    pub mechanisms: Vec<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> DetectorErrorModel {
        DetectorErrorModel::parse(text, "t.dem").unwrap()
    }

    fn err(text: &str) -> String {
        DetectorErrorModel::parse(text, "t.dem")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn targets_separators_and_merging() {
        let dem = parse(
            "# a comment\n\
             ERROR(0.1) D2 D0 L1 # trailing\n\
             error(0.02) D0 L0 ^ D1 L0\n\
             error(0.2) D0 D2 L1\n\
             error[some tag # with a hash](0.3) D1 D1 D3\n\
             error(0.5)\n\
             error(0.4) L0 ^ L0\n",
        );
        assert_eq!(dem.num_detectors(), 4);
        assert_eq!(dem.num_observables(), 2);
        assert_eq!(dem.num_mechanisms(), 3);
        // Merged: 0.1·0.8 + 0.2·0.9.
        assert!((dem.priors()[0] - 0.26).abs() < 1e-15);
        assert_eq!(dem.mechanism(0).detectors, &[0, 2]);
        assert_eq!(dem.mechanism(0).observables, &[1]);
        assert_eq!(dem.mechanism(0).line, 2);
        // D0 L0 ^ D1 L0: the L0s cancel.
        assert_eq!(dem.mechanism(1).detectors, &[0, 1]);
        assert!(dem.mechanism(1).observables.is_empty());
        // D1 D1 cancel.
        assert_eq!(dem.mechanism(2).detectors, &[3]);
        assert_eq!(dem.mechanisms_of(0), &[0, 1]);
        assert_eq!(
            dem.check_matrix().to_dense().to_picture(),
            "11.\n.1.\n1..\n..1\n"
        );
        assert_eq!(
            dem.observable_matrix().to_dense().to_picture(),
            "...\n1..\n"
        );
    }

    #[test]
    fn an_empty_block_repeated_almost_forever_is_read_at_once() {
        let t0 = std::time::Instant::now();
        let text = "repeat 3333333333333333 { # detector(0, 1) D0\n}\n\
                    error(0.1) D0 L0\ndetector(0, 0) D0\n";
        let dem = DetectorErrorModel::parse(text, "empty.dem").unwrap();
        assert_eq!(dem.num_detectors(), 1);
        assert!(t0.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn repeats_shifts_and_coordinates() {
        let dem = parse(
            "detector(0, 0) D0\n\
             repeat 3 {\n\
             \x20   detector(0.5, 0.5) D1\n\
             \x20   error(0.01) D0 D1\n\
             \x20   repeat 2 {\n\
             \x20       error(0.001) D1 L0\n\
             \x20       shift_detectors 0\n\
             \x20   }\n\
             \x20   shift_detectors(0.5, 0.5, 7) 1\n\
             }\n\
             detector(1) D0\n\
             logical_observable L4\n",
        );
        assert_eq!(dem.num_detectors(), 4);
        assert_eq!(dem.num_observables(), 5);
        // Per iteration: D(i) D(i+1), and D(i+1) L0 twice (merged).
        assert_eq!(dem.num_mechanisms(), 6);
        let merged = 2.0 * 0.001 * 0.999;
        assert!((dem.priors()[1] - merged).abs() < 1e-18);
        assert_eq!(dem.mechanism(4).detectors, &[2, 3]);
        assert_eq!(dem.detector_coords(0), Some(&[0.0, 0.0][..]));
        assert_eq!(dem.detector_coords(2), Some(&[1.0, 1.0][..]));
        // The offset after three shifts is (1.5, 1.5, 21); a 1-coordinate detector takes one.
        assert_eq!(dem.detector_coords(3), Some(&[2.5][..]));
        assert_eq!(dem.detector_time(1), Some(0.5));
        let none = parse("error(0.1) D0\n");
        assert_eq!(none.detector_coords(0), None);
    }

    #[test]
    fn bad_models_are_errors_with_lines() {
        for (text, want) in [
            (
                "error(0.1) D0\nflip(0.1) D1\n",
                "t.dem:2: unknown instruction `flip`",
            ),
            (
                "error(1.5) D0\n",
                "t.dem:1: probability 1.5 is outside [0, 1]",
            ),
            ("error(-0.1) D0\n", "outside [0, 1]"),
            ("error(nan) D0\n", "t.dem:1: argument `nan` is not a number"),
            (
                "error(0.1, 0.2) D0\n",
                "takes exactly 1 argument(s), found 2",
            ),
            ("error(0.1) D0 7\n", "does not take the target `7`"),
            ("error(0.1) X3\n", "bad target `X3`"),
            ("detector L0\n", "`detector` does not take the target `L0`"),
            ("", "t.dem: the model has no error mechanisms"),
            ("# only a comment\ndetector D3\n", "no error mechanisms"),
            (
                "repeat 2 {\nerror(0.1) D0\n",
                "t.dem:1: `repeat` block without its closing",
            ),
            ("error(0.1) D0\n}\n", "t.dem:2: `}` without a matching `{`"),
            ("repeat 0 {\n}\n", "at least 1"),
            ("repeat 2\nerror(0.1) D0\n", "must be followed by `{`"),
            (
                "error(0.1) D16777216\n",
                "detector 16777216 is beyond the 16777216",
            ),
            ("error(0.1 D0\n", "without its closing `)`"),
            ("error[tag(0.1) D0\n", "tag `[` without"),
            ("error(0.1)D0\n", "unexpected `D0`"),
            (
                "repeat 100000 {\nrepeat 100000 {\nerror(0.1) D0\n}\n}\n",
                "t.dem:1: the repeat blocks expand",
            ),
        ] {
            let e = err(text);
            assert!(e.contains(want), "{text:?}: {e}");
        }
        // Shifts that push an index past the limit inside a repeat.
        let e = err("repeat 20 {\nerror(0.1) D0\nshift_detectors 1000000\n}\n");
        assert!(e.starts_with("t.dem:2: detector 17000000 is beyond"), "{e}");
    }

    #[test]
    fn expected_detector_count() {
        let dem = parse("error(0.1) D0 D1\nerror(0.1) D4\ndetector D2\n");
        assert!(dem.expect_detectors(5).is_ok());
        assert_eq!(
            dem.expect_detectors(4).unwrap_err().to_string(),
            "t.dem:2: detector 4 is beyond the 4 detectors declared"
        );
    }

    #[test]
    fn windows_and_committed_mechanisms() {
        // A repetition chain over three rounds of two detectors each.
        let dem = parse(
            "repeat 3 {\n\
             \x20 error(0.1) D0 D1\n\
             \x20 error(0.1) D0 D2\n\
             \x20 error(0.05) D1 L0\n\
             \x20 detector(0, 0) D0\n\
             \x20 detector(1, 0) D1\n\
             \x20 shift_detectors(0, 1) 2\n\
             }\n",
        );
        assert_eq!(dem.num_detectors(), 7);
        assert_eq!(dem.detectors_up_to_time(1.0), 0..4);
        let w = dem.window(2..4);
        assert_eq!(w.mechanisms, vec![1, 3, 4, 5]);
        assert_eq!(w.model.num_detectors(), 2);
        assert_eq!(w.model.check_matrix().col(0), &[0]);
        assert_eq!(w.model.check_matrix().col(1), &[0, 1]);
        assert_eq!(w.model.observable_matrix().col(3), &[0]);
        assert_eq!(w.model.priors(), &[0.1, 0.1, 0.1, 0.05]);
        assert_eq!(w.model.detector_coords(1), Some(&[1.0, 1.0][..]));
        let mut dets = vec![0u8; 7];
        let mut obs = vec![0u8; 1];
        dem.apply_mechanisms([0, 2], &mut dets, &mut obs);
        assert_eq!(dets, vec![1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(obs, vec![1]);
        // Mechanism 1 (D0 D2) and 2 (D1 L0) start before detector 2: not in the window that
        // starts there.
        let w = dem.window_from(2..4);
        assert_eq!(w.mechanisms, vec![3, 4, 5]);
        assert_eq!(w.model.check_matrix().col(0), &[0, 1]);
        assert_eq!(dem.window_from(0..7).mechanisms.len(), dem.num_mechanisms());
    }
}
