//! What a model may expand to: [`DemLimits`], and the checks that hold a model's text and its
//! unrolled `repeat` blocks to them — before anything is allocated for them.

use super::MAX_EXPANDED;
use super::syntax::{DemErrorKind, DemTarget, Instruction, InstructionKind, Res};
use crate::error::SettingError;

/// What a model may expand to, counted over every executed instruction with `repeat` blocks
/// unrolled (see [the module docs](super)). The defaults fit a machine of a few GB with room
/// to spare: a model at every bound parses in well under 2 GB, and the largest circuit-level
/// models in use (a distance-31 surface code over 31 rounds: about 250,000 mechanisms and a
/// million targets) are far inside them.
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
    /// Detectors: one more than the largest absolute detector index an `error` or `detector`
    /// names, `shift_detectors` offsets included (default 2^22 = 4,194,304; never above
    /// [`MAX_DETECTORS`](super::MAX_DETECTORS)). A model's text does not bound its indices —
    /// `error(0.125) D11100000` is 23 bytes — and what parsing and every decoder build cost
    /// grows with the detector count, so the count is bounded before anything is built for it.
    pub detectors: u64,
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
        detectors: 1 << 22,
    };

    /// The environment variable [`DemLimits::from_env`] reads: `key=N` pairs separated by `,`
    /// or `;`, e.g. `targets=100000000,mechanisms=10000000`.
    pub const ENV: &'static str = "BACKLINE_DEM_LIMITS";

    /// The names [`DemLimits::set`] takes.
    pub const KEYS: &'static str = "targets, coords, mechanisms, detectors";

    /// Sets one bound by name from text (a positive integer).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        let field = match key.trim() {
            "targets" => &mut self.targets,
            "coords" => &mut self.coords,
            "mechanisms" => &mut self.mechanisms,
            "detectors" => &mut self.detectors,
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
pub(super) struct Cost {
    pub(super) targets: u64,
    pub(super) coords: u64,
    pub(super) mechanisms: u64,
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

/// Adds `cost` to `seen`, the model's cost so far as read (before `repeat` blocks are
/// unrolled): an error when that alone is past a bound. Called before what it counts is
/// stored, so a line of a hundred million targets is refused before its list is allocated.
pub(super) fn charge(seen: &mut Cost, cost: Cost, limits: &DemLimits) -> Res<()> {
    *seen = seen.plus(cost);
    limits.exceeded(*seen).map_or(Ok(()), Err)
}

/// What one instruction (not a `repeat`) costs each time it runs.
fn cost_of(kind: &InstructionKind) -> Cost {
    let (targets, coords, mechanisms) = match kind {
        InstructionKind::Error { targets, .. } => (targets.len() as u64, 1, 1),
        InstructionKind::Detector { coords, targets } => (
            targets.len() as u64,
            (coords.len() as u64).saturating_mul(targets.len() as u64),
            0,
        ),
        InstructionKind::LogicalObservable { targets } => (targets.len() as u64, 0, 0),
        InstructionKind::ShiftDetectors { coords, .. } => (1, coords.len() as u64, 0),
        InstructionKind::Repeat { .. } => (1, 0, 0),
    };
    Cost {
        targets: targets + 1,
        coords,
        mechanisms,
    }
}

/// What a block costs once its repeats are unrolled, saturating.
fn expanded_cost(body: &[Instruction]) -> Cost {
    body.iter().fold(Cost::default(), |acc, i| {
        acc.plus(match &i.kind {
            InstructionKind::Repeat { count, body } => {
                expanded_cost(body).times(*count).plus(cost_of(&i.kind))
            }
            kind => cost_of(kind),
        })
    })
}

/// Adds what `body` costs unrolled to `total`, refusing it past `limits` with the line of the
/// instruction at which the running total crosses a bound. A `repeat` whose iterations all fit
/// costs one multiplication; one that does not is walked through once, after the iterations
/// that fit, to find the instruction.
pub(super) fn check_limits(
    body: &[Instruction],
    total: &mut Cost,
    limits: &DemLimits,
) -> Result<(), (usize, DemErrorKind)> {
    for ins in body {
        let line = ins.line as usize;
        *total = total.plus(cost_of(&ins.kind));
        if let Some(k) = limits.exceeded(*total) {
            return Err((line, k));
        }
        let InstructionKind::Repeat { count: n, body: b } = &ins.kind else {
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

/// The total `shift_detectors` offset of a block once its repeats are unrolled, saturating.
fn expanded_shift(body: &[Instruction]) -> u64 {
    body.iter().fold(0u64, |acc, i| {
        acc.saturating_add(match &i.kind {
            InstructionKind::ShiftDetectors { count, .. } => *count,
            InstructionKind::Repeat { count, body } => count.saturating_mul(expanded_shift(body)),
            _ => 0,
        })
    })
}

/// Checks every absolute detector index `body` names, starting at offset `base`, against
/// `limits.detectors` (and [`MAX_DETECTORS`](super::MAX_DETECTORS)), without unrolling: the
/// offsets only grow, so a `repeat`'s largest indices are those of its last iteration, and its
/// body is walked once at that iteration's offset. Returns the offset after the block; an
/// error names the line of the first index past the bound.
pub(super) fn check_detectors(
    body: &[Instruction],
    base: u64,
    limits: &DemLimits,
) -> Result<u64, (usize, DemErrorKind)> {
    let bound = limits.detectors.min(super::MAX_DETECTORS);
    let mut offset = base;
    let check = |line: u32, offset: u64, d: u64| {
        if offset.saturating_add(d) < bound {
            return Ok(());
        }
        let kind = if bound == limits.detectors {
            DemErrorKind::Limit {
                what: "detectors",
                key: "detectors",
                limit: limits.detectors,
            }
        } else {
            DemErrorKind::DetectorRange {
                index: offset.saturating_add(d),
                limit: super::MAX_DETECTORS,
                what: "supported",
            }
        };
        Err((line as usize, kind))
    };
    for ins in body {
        match &ins.kind {
            InstructionKind::Error { targets, .. } => {
                for t in targets {
                    if let DemTarget::Detector(d) = *t {
                        check(ins.line, offset, d)?;
                    }
                }
            }
            InstructionKind::Detector { targets, .. } => {
                for &d in targets {
                    check(ins.line, offset, d)?;
                }
            }
            InstructionKind::ShiftDetectors { count, .. } => {
                offset = offset.saturating_add(*count);
            }
            InstructionKind::LogicalObservable { .. } => {}
            InstructionKind::Repeat { count: 0, .. } => {}
            InstructionKind::Repeat { count, body } => {
                let per = expanded_shift(body);
                let last = offset.saturating_add(per.saturating_mul(count - 1));
                check_detectors(body, last, limits)?;
                offset = offset.saturating_add(per.saturating_mul(*count));
            }
        }
    }
    Ok(offset)
}

/// Instructions executed by a block once its repeats are unrolled, saturating.
pub(super) fn expanded_size(body: &[Instruction]) -> u64 {
    body.iter().fold(0u64, |acc, i| {
        acc.saturating_add(match &i.kind {
            InstructionKind::Repeat { count, body } => count.saturating_mul(expanded_size(body)),
            _ => 1,
        })
    })
}

/// Refuses trees that would execute more than [`MAX_EXPANDED`] instructions, naming the
/// outermost `repeat` that crosses the limit.
pub(super) fn check_size(tree: &[Instruction]) -> Result<(), (usize, DemErrorKind)> {
    let mut total = 0u64;
    for ins in tree {
        let size = match &ins.kind {
            InstructionKind::Repeat { count, body } => count.saturating_mul(expanded_size(body)),
            _ => 1,
        };
        total = total.saturating_add(size);
        if total > MAX_EXPANDED {
            return Err((ins.line as usize, DemErrorKind::TooLarge));
        }
    }
    Ok(())
}
