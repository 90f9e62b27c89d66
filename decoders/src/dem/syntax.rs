//! The text of a model as a tree: the instructions as written, `repeat` blocks kept (not
//! unrolled), each with its 1-based line and its tag, and the parser that builds it, whose
//! errors name the line.

use std::fmt;

use super::limits::{Cost, DemLimits, charge};
use super::{MAX_EXPANDED, MAX_NESTING, MAX_OBSERVABLES};
use crate::io::excerpt;

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
    ///
    /// [`MAX_DETECTORS`]: super::MAX_DETECTORS
    /// [`DetectorErrorModel::expect_detectors`]: super::DetectorErrorModel::expect_detectors
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
        /// What: `targets`, `coordinates`, `mechanisms` or `detectors`.
        what: &'static str,
        /// The bound's name in [`DemLimits::set`].
        key: &'static str,
        /// The bound.
        limit: u64,
    },
    /// A `{` without its `}`, or a `}` without its `{`.
    #[error("{0}")]
    Block(String),
    /// No longer returned: a model without error mechanisms is read (the decoders answer it
    /// with constant predictions); kept so that matches on it still compile.
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

/// A target of an `error` instruction, as written (detector indices relative to the
/// `shift_detectors` offset at that point).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DemTarget {
    /// `D#`: a detector.
    Detector(u64),
    /// `L#`: a logical observable.
    Observable(u64),
    /// `^`: the separator between the parts of stim's suggested decomposition.
    Separator,
}

/// One instruction of a model's text, as written: its kind, its tag and its line.
#[derive(Debug, Clone, PartialEq)]
pub struct Instruction {
    /// What it is, with its arguments and targets.
    pub kind: InstructionKind,
    /// Its tag (`error[tag](p)`): the text between the brackets, empty when there is none.
    pub tag: Box<str>,
    /// The 1-based line it was read from (for a `repeat`, the line of its `repeat N {`).
    pub line: u32,
}

/// What an [`Instruction`] is. Indices are as written: relative to the `shift_detectors`
/// offset at that point of the text.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum InstructionKind {
    /// `error(p) targets…`: a mechanism.
    Error {
        /// Its probability, in [0, 1].
        p: f64,
        /// Its targets, separators included, in the order written.
        targets: Box<[DemTarget]>,
    },
    /// `detector(coords…) D#…`: declares detectors, with coordinates.
    Detector {
        /// The coordinates (relative to the coordinate offset), possibly none.
        coords: Box<[f64]>,
        /// The detectors it declares (the indices of its `D#` targets).
        targets: Box<[u64]>,
    },
    /// `logical_observable L#…`: declares observables.
    LogicalObservable {
        /// The observables it declares (the indices of its `L#` targets).
        targets: Box<[u64]>,
    },
    /// `shift_detectors(coords…) N`: moves the detector and coordinate offsets.
    ShiftDetectors {
        /// What it adds to the coordinate offset, possibly nothing.
        coords: Box<[f64]>,
        /// What it adds to the detector offset.
        count: u64,
    },
    /// `repeat N { … }`: a block run `count` times, stored once.
    Repeat {
        /// How many times the body runs (at least 1).
        count: u64,
        /// The block's instructions.
        body: Box<[Instruction]>,
    },
}

// The tree is kept with the model: an instruction costs no more than before it was kept.
const _: () = assert!(std::mem::size_of::<Instruction>() <= 64);

impl InstructionKind {
    /// The instruction's name as stim writes it: `error`, `detector`, `logical_observable`,
    /// `shift_detectors` or `repeat`.
    pub fn name(&self) -> &'static str {
        match self {
            InstructionKind::Error { .. } => "error",
            InstructionKind::Detector { .. } => "detector",
            InstructionKind::LogicalObservable { .. } => "logical_observable",
            InstructionKind::ShiftDetectors { .. } => "shift_detectors",
            InstructionKind::Repeat { .. } => "repeat",
        }
    }
}

/// A parsed target, before the instruction says which kinds it takes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Target {
    Detector(u64),
    Observable(u64),
    Number(u64),
    Separator,
}

/// One line, split: name, tag, arguments, targets, whether it opens a block.
struct Line<'a> {
    name: &'a str,
    tag: &'a str,
    args: Vec<f64>,
    targets: Vec<&'a str>,
    opens_block: bool,
}

pub(super) type Res<T> = Result<T, DemErrorKind>;

fn syntax<T>(msg: impl Into<String>) -> Res<T> {
    Err(DemErrorKind::Syntax(msg.into()))
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
    let mut tag = "";
    if let Some(tagged) = rest.strip_prefix('[') {
        // A tag runs to the first `]` (stim writes a `]` inside a tag as `\C`).
        let Some(end) = tagged.find(']') else {
            return syntax("tag `[` without its closing `]`");
        };
        tag = &tagged[..end];
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
        tag,
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
fn instruction(line: &Line<'_>) -> Res<InstructionKind> {
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
            let mut kept = Vec::with_capacity(targets.len());
            for (i, t) in targets.iter().enumerate() {
                kept.push(match *t {
                    Target::Detector(d) => DemTarget::Detector(d),
                    Target::Observable(l) => DemTarget::Observable(l),
                    Target::Separator => DemTarget::Separator,
                    Target::Number(_) => return Err(bad_target("error", i)),
                });
            }
            Ok(InstructionKind::Error {
                p,
                targets: kept.into(),
            })
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
            Ok(InstructionKind::Detector {
                coords: line.args.as_slice().into(),
                targets: ds.into(),
            })
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
            Ok(InstructionKind::LogicalObservable { targets: ls.into() })
        }
        "shift_detectors" => {
            no_block("shift_detectors")?;
            match targets[..] {
                [Target::Number(n)] => Ok(InstructionKind::ShiftDetectors {
                    coords: line.args.as_slice().into(),
                    count: n,
                }),
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
                [Target::Number(n)] => Ok(InstructionKind::Repeat {
                    count: n,
                    body: Box::default(),
                }),
                _ => syntax("`repeat` needs one number target, the count"),
            }
        }
        _ => Err(DemErrorKind::UnknownInstruction(excerpt(line.name))),
    }
}

/// An open `repeat` block while the text is read: its line, count, tag and body so far.
type Open = (u32, u64, Box<str>, Vec<Instruction>);

/// Parses the text into a tree of instructions, refusing text whose instructions alone (each
/// once) are past `limits`.
pub(super) fn parse_tree(
    text: &str,
    limits: &DemLimits,
) -> Result<Vec<Instruction>, (usize, DemErrorKind)> {
    let mut seen = Cost::default();
    // Stack of open blocks, the top level first.
    let mut stack: Vec<Open> = vec![(0, 1, Box::default(), Vec::new())];
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
            let (line, count, tag, body) = stack.pop().expect("an open block");
            stack
                .last_mut()
                .expect("the top level")
                .3
                .push(Instruction {
                    kind: InstructionKind::Repeat {
                        count,
                        body: body.into(),
                    },
                    tag,
                    line,
                });
            continue;
        }
        let Some(split) = split_line(code, &mut seen, limits).map_err(at)? else {
            continue;
        };
        let kind = instruction(&split).map_err(at)?;
        if let InstructionKind::Error { .. } = kind {
            let one = Cost {
                mechanisms: 1,
                ..Cost::default()
            };
            charge(&mut seen, one, limits).map_err(at)?;
        }
        let tag: Box<str> = split.tag.into();
        match kind {
            InstructionKind::Repeat { .. } if stack.len() > MAX_NESTING => {
                return Err(at(DemErrorKind::Block(format!(
                    "`repeat` blocks nested deeper than {MAX_NESTING}"
                ))));
            }
            InstructionKind::Repeat { count, .. } => {
                stack.push((lineno as u32, count, tag, Vec::new()));
            }
            kind => stack
                .last_mut()
                .expect("the top level")
                .3
                .push(Instruction {
                    kind,
                    tag,
                    line: lineno as u32,
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
    Ok(stack.pop().expect("the top level").3)
}
