//! Models whose rounds repeat, kept rolled ([`RolledModel`]).
//!
//! stim writes a memory experiment of `T` rounds as a few rounds, a `repeat` block of the
//! middle rounds and a few more: a text the size of one round that expands to `T` rounds. A
//! stream of such a model needs only what one window of it holds, so [`RolledModel`] keeps the
//! text's tree with its longest top-level `repeat` unexecuted and executes shorter copies of
//! it on demand ([`RolledModel::short`]: the same model with the block run fewer times). The
//! bounds of [`DemLimits`] apply to what is executed; the whole experiment is bounded only by
//! [`MAX_ROLLED_DETECTORS`] (a stream holds a byte a detector of its shot).

use super::syntax::{DemErrorKind, DemTarget, Instruction, InstructionKind};
use super::{DemError, DemLimits, DetectorErrorModel, limits, matrices, syntax};

/// A rolled model's detectors, its long block's iterations included, stay below this (2^25:
/// a 100,000-round distance-13 memory has 16.8 M).
pub const MAX_ROLLED_DETECTORS: u64 = 1 << 25;

/// A model read with its longest top-level `repeat` block kept rolled: the tree, and where
/// the block sits. Invariant: the block is `tree[block]`, a `repeat` of `count ≥ 1` whose body
/// shifts the detector offset by `shift ≥ 1` an iteration.
#[derive(Debug, Clone, PartialEq)]
pub struct RolledModel {
    name: String,
    tree: Vec<Instruction>,
    block: usize,
    count: u64,
    shift: u64,
    /// The detector offset where the block starts.
    before: u64,
    num_detectors: u64,
}

impl RolledModel {
    /// Reads `text` keeping its longest top-level `repeat` (the one that executes the most
    /// instructions) rolled, when it has one whose body moves the detector offset; `None`
    /// when it has none (read it with [`DetectorErrorModel::parse_with`]). The text's lines
    /// are checked as [`DetectorErrorModel::parse_with`] checks them, and the model with its
    /// block run once is checked against `limits`; the whole experiment against
    /// [`MAX_ROLLED_DETECTORS`].
    pub fn parse_with(
        text: &str,
        file: &str,
        limits: &DemLimits,
    ) -> Result<Option<RolledModel>, DemError> {
        let err = |(line, kind): (usize, DemErrorKind)| DemError {
            file: file.to_string(),
            line,
            kind,
        };
        let tree = syntax::parse_tree(text, limits).map_err(err)?;
        let Some((block, count, shift)) = longest_block(&tree) else {
            return Ok(None);
        };
        let before = offset_of(&tree[..block]);
        let mut m = RolledModel {
            name: file.to_string(),
            tree,
            block,
            count,
            shift,
            before,
            num_detectors: 0,
        };
        // The short copies are checked against the limits; the whole against its own bound.
        m.check(1, limits)?;
        m.num_detectors = end_of(&m.tree, 0, 0);
        if m.num_detectors > MAX_ROLLED_DETECTORS {
            return Err(DemError {
                file: file.to_string(),
                line: m.tree[block].line as usize,
                kind: DemErrorKind::DetectorRange {
                    index: m.num_detectors - 1,
                    limit: MAX_ROLLED_DETECTORS,
                    what: "supported in a stream",
                },
            });
        }
        Ok(Some(m))
    }

    /// The model's name (the file given).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The instruction tree, the long block as written.
    pub fn instructions(&self) -> &[Instruction] {
        &self.tree
    }

    /// How many times the text runs the block.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Detectors an iteration of the block adds.
    pub fn shift(&self) -> u64 {
        self.shift
    }

    /// The detector offset where the block starts (detectors before it).
    pub fn before(&self) -> u64 {
        self.before
    }

    /// The smallest detector the block's first iteration declares (absolute), if it declares
    /// one: where the block's rounds start when its iterations hold whole rounds.
    pub fn first_declared(&self) -> Option<u64> {
        fn walk(body: &[Instruction], mut offset: u64, best: &mut Option<u64>) -> u64 {
            for ins in body {
                match &ins.kind {
                    InstructionKind::Detector { targets, .. } => {
                        for &d in targets.iter() {
                            let x = offset.saturating_add(d);
                            *best = Some(best.map_or(x, |b| b.min(x)));
                        }
                    }
                    InstructionKind::ShiftDetectors { count, .. } => {
                        offset = offset.saturating_add(*count)
                    }
                    InstructionKind::Repeat { count, body } if *count > 0 => {
                        walk(body, offset, best);
                        offset = offset.saturating_add(count.saturating_mul(offset_of(body)));
                    }
                    _ => {}
                }
            }
            offset
        }
        let InstructionKind::Repeat { body, .. } = &self.tree[self.block].kind else {
            return None;
        };
        let mut best = None;
        walk(body, self.before, &mut best);
        best
    }

    /// Detectors of the whole experiment.
    pub fn num_detectors(&self) -> u64 {
        self.num_detectors
    }

    /// The model with the block run `kept` times (`1..=count`) instead of `count`, executed
    /// within `limits`: detectors from the block's `kept`-th iteration on are those of the
    /// whole model less `(count − kept) · shift`.
    pub fn short(&self, kept: u64, limits: &DemLimits) -> Result<DetectorErrorModel, DemError> {
        let tree = self.checked(kept, limits)?;
        let mut model = matrices::execute(&tree, &self.name).map_err(|e| self.error(e))?;
        model.instructions = tree;
        Ok(model)
    }

    /// Whether the model with the block run `kept` times is within `limits`, without
    /// executing it (cheap: the tree's counts multiplied, not unrolled).
    pub fn check(&self, kept: u64, limits: &DemLimits) -> Result<(), DemError> {
        self.checked(kept, limits).map(drop)
    }

    /// The tree with the block run `kept` times, checked against `limits`.
    fn checked(&self, kept: u64, limits: &DemLimits) -> Result<Vec<Instruction>, DemError> {
        let err = |e| self.error(e);
        let mut tree = self.tree.clone();
        if let InstructionKind::Repeat { count, .. } = &mut tree[self.block].kind {
            *count = kept.clamp(1, self.count);
        }
        limits::check_size(&tree).map_err(err)?;
        limits::check_limits(&tree, &mut limits::Cost::default(), limits).map_err(err)?;
        limits::check_detectors(&tree, 0, limits).map_err(err)?;
        Ok(tree)
    }

    fn error(&self, (line, kind): (usize, DemErrorKind)) -> DemError {
        DemError {
            file: self.name.clone(),
            line,
            kind,
        }
    }
}

/// The top-level `repeat` that executes the most instructions, with its count and the
/// detector shift of an iteration, if one shifts the offset.
fn longest_block(tree: &[Instruction]) -> Option<(usize, u64, u64)> {
    tree.iter()
        .enumerate()
        .filter_map(|(i, ins)| match &ins.kind {
            InstructionKind::Repeat { count, body } if *count > 0 => {
                let shift = offset_of(body);
                let size = limits::expanded_size(body).saturating_mul(*count);
                (shift > 0).then_some((size, i, *count, shift))
            }
            _ => None,
        })
        .max_by_key(|b| (b.0, std::cmp::Reverse(b.1)))
        .map(|(_, i, count, shift)| (i, count, shift))
}

/// One more than the largest detector index `body` names from offset `base` (at least
/// `end`), without unrolling: offsets only grow, so a block's largest indices are those of its
/// last iteration (saturating).
fn end_of(body: &[Instruction], base: u64, mut end: u64) -> u64 {
    let mut offset = base;
    for ins in body {
        match &ins.kind {
            InstructionKind::Error { targets, .. } => {
                for t in targets.iter() {
                    if let DemTarget::Detector(d) = *t {
                        end = end.max(offset.saturating_add(d).saturating_add(1));
                    }
                }
            }
            InstructionKind::Detector { targets, .. } => {
                for &d in targets.iter() {
                    end = end.max(offset.saturating_add(d).saturating_add(1));
                }
            }
            InstructionKind::ShiftDetectors { count, .. } => offset = offset.saturating_add(*count),
            InstructionKind::Repeat { count, body } if *count > 0 => {
                let per = offset_of(body);
                let last = offset.saturating_add(per.saturating_mul(count - 1));
                end = end_of(body, last, end);
                offset = offset.saturating_add(per.saturating_mul(*count));
            }
            _ => {}
        }
    }
    end
}

/// The detector offset a block of instructions moves by, its repeats unrolled (saturating).
fn offset_of(body: &[Instruction]) -> u64 {
    body.iter().fold(0u64, |acc, i| {
        acc.saturating_add(match &i.kind {
            InstructionKind::ShiftDetectors { count, .. } => *count,
            InstructionKind::Repeat { count, body } => count.saturating_mul(offset_of(body)),
            _ => 0,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const REP: &str = "error(0.1) D0\ndetector(0, 0) D0\nrepeat 1000 {\n    error(0.1) D0 D1\n    \
                       error(0.05) D1 L0\n    detector(0, 1) D1\n    shift_detectors(0, 1) 1\n}\n\
                       error(0.1) D0 D1\ndetector(0, 1) D1\n";

    #[test]
    fn the_longest_block_is_kept_and_short_copies_are_the_model_with_fewer_rounds() {
        let r = RolledModel::parse_with(REP, "rep.dem", &DemLimits::DEFAULT)
            .unwrap()
            .unwrap();
        assert_eq!((r.count(), r.shift(), r.before()), (1000, 1, 0));
        assert_eq!(r.num_detectors(), 1002);
        let short = r.short(3, &DemLimits::DEFAULT).unwrap();
        let again = REP.replace("repeat 1000", "repeat 3");
        let want = DetectorErrorModel::parse(&again, "rep.dem").unwrap();
        assert_eq!(short.without_lines(), want.without_lines());
        assert_eq!(short.num_detectors(), 5);
    }

    #[test]
    fn a_model_past_the_limits_expanded_is_read_rolled_and_its_short_copy_checked() {
        let limits = DemLimits {
            mechanisms: 100,
            ..DemLimits::DEFAULT
        };
        let e = DetectorErrorModel::parse_with(REP, "rep.dem", &limits).unwrap_err();
        assert!(e.to_string().contains("mechanisms"), "{e}");
        let r = RolledModel::parse_with(REP, "rep.dem", &limits)
            .unwrap()
            .unwrap();
        assert!(r.short(10, &limits).is_ok());
        let e = r.short(60, &limits).unwrap_err();
        assert!(e.to_string().contains("mechanisms"), "{e}");
    }

    #[test]
    fn models_without_a_shifting_block_are_not_rolled_and_huge_ones_are_refused() {
        let flat = "error(0.1) D0 D1\nrepeat 5 {\n    error(0.1) D0\n}\n";
        assert!(
            RolledModel::parse_with(flat, "f.dem", &DemLimits::DEFAULT)
                .unwrap()
                .is_none()
        );
        let huge = "repeat 40000000 {\n    error(0.1) D0 D1\n    shift_detectors 1\n}\n";
        let e = RolledModel::parse_with(huge, "h.dem", &DemLimits::DEFAULT).unwrap_err();
        assert!(e.to_string().contains("h.dem:1"), "{e}");
    }
}
