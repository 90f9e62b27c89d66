//! `Display`: a model printed back as stim's text, from its instruction tree.

use std::fmt;

use super::DetectorErrorModel;
use super::syntax::{DemTarget, Instruction, InstructionKind};

/// Writes a number in the shortest form that reads back to the same `f64`: positional for
/// magnitudes from 10^-4 up to 10^16 (and zero), with an exponent otherwise (`1e-7`, not
/// seven zeros; `1e300`, not three hundred digits).
fn number(f: &mut fmt::Formatter<'_>, v: f64) -> fmt::Result {
    let a = v.abs();
    if a == 0.0 || (1e-4..1e16).contains(&a) {
        write!(f, "{v}")
    } else {
        write!(f, "{v:e}")
    }
}

/// Writes `(a, b, …)`, or nothing when there are no arguments.
fn arguments(f: &mut fmt::Formatter<'_>, args: &[f64]) -> fmt::Result {
    if args.is_empty() {
        return Ok(());
    }
    f.write_str("(")?;
    for (i, &a) in args.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        number(f, a)?;
    }
    f.write_str(")")
}

/// Writes `depth` levels of indentation, four spaces each.
fn indent(f: &mut fmt::Formatter<'_>, depth: usize) -> fmt::Result {
    for _ in 0..depth {
        f.write_str("    ")?;
    }
    Ok(())
}

/// Writes one instruction at `depth` without a line break after it (a `repeat` with its body,
/// each line of which is indented one level more, and its closing `}`).
fn instruction(f: &mut fmt::Formatter<'_>, ins: &Instruction, depth: usize) -> fmt::Result {
    indent(f, depth)?;
    f.write_str(ins.kind.name())?;
    if !ins.tag.is_empty() {
        write!(f, "[{}]", ins.tag)?;
    }
    match &ins.kind {
        InstructionKind::Error { p, targets } => {
            arguments(f, &[*p])?;
            for t in targets {
                write!(f, " {t}")?;
            }
        }
        InstructionKind::Detector { coords, targets } => {
            arguments(f, coords)?;
            for d in targets {
                write!(f, " D{d}")?;
            }
        }
        InstructionKind::LogicalObservable { targets } => {
            for l in targets {
                write!(f, " L{l}")?;
            }
        }
        InstructionKind::ShiftDetectors { coords, count } => {
            arguments(f, coords)?;
            write!(f, " {count}")?;
        }
        InstructionKind::Repeat { count, body } => {
            writeln!(f, " {count} {{")?;
            for b in body {
                instruction(f, b, depth + 1)?;
                f.write_str("\n")?;
            }
            indent(f, depth)?;
            f.write_str("}")?;
        }
    }
    Ok(())
}

/// `D#`, `L#` or `^`.
impl fmt::Display for DemTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DemTarget::Detector(d) => write!(f, "D{d}"),
            DemTarget::Observable(l) => write!(f, "L{l}"),
            DemTarget::Separator => f.write_str("^"),
        }
    }
}

/// The instruction as stim writes it, without a line break after it; a `repeat` spans the
/// lines of its body, indented four spaces, and its closing `}`.
impl fmt::Display for Instruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        instruction(f, self, 0)
    }
}

/// The model as stim's text, one instruction a line, each line ending in a line break (see
/// [the module docs](super)): what [`DetectorErrorModel::parse`] reads back to the same model.
///
/// A window's model ([`DetectorErrorModel::window`]) has no instructions (it was cut, not
/// read): it prints flat, one `error` a mechanism and then a `detector` for each declared
/// detector, with its absolute coordinates. That text reads back to the window's mechanisms
/// unless two of them flip the same detectors and observables inside the window (they are
/// merged), and its detector and observable counts stop at the last one it names.
impl fmt::Display for DetectorErrorModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.instructions.is_empty() {
            return self.flat(f);
        }
        for ins in &self.instructions {
            instruction(f, ins, 0)?;
            f.write_str("\n")?;
        }
        Ok(())
    }
}

impl DetectorErrorModel {
    /// Writes the model without a tree: its mechanisms, then its declared detectors.
    fn flat(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for k in 0..self.num_mechanisms() {
            let m = self.mechanism(k);
            f.write_str("error")?;
            arguments(f, &[m.p])?;
            for d in m.detectors {
                write!(f, " D{d}")?;
            }
            for l in m.observables {
                write!(f, " L{l}")?;
            }
            f.write_str("\n")?;
        }
        for d in 0..self.num_detectors() {
            if let Some(c) = self.detector_coords(d) {
                f.write_str("detector")?;
                arguments(f, c)?;
                writeln!(f, " D{d}")?;
            }
        }
        Ok(())
    }
}
