//! The model's matrices: executing the instruction tree (blocks unrolled, offsets applied)
//! into the check matrix, the observable matrix and the priors, merged mechanisms, the
//! detectors' coordinates, and the graphlike decomposition matching decoders read.

use std::collections::HashMap;

use super::syntax::{DemErrorKind, DemTarget, Instruction, InstructionKind, Res};
use super::{DetectorErrorModel, MAX_DETECTORS, MAX_OBSERVABLES, limits};
use crate::sparse::SparseMatrix;

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

/// The `error`s that stim's decomposition split into several graphlike parts (`D0 D1 ^ D7`),
/// in execution order: what correlated matching conditions one part's weight on another's
/// ([`DetectorErrorModel::decomposed_errors`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DecomposedErrors {
    /// Each error's probability.
    p: Vec<f64>,
    /// Error `k`'s parts are `parts[start[k]..start[k + 1]]` (`start` has one more entry).
    start: Vec<u32>,
    /// Indices into [`DetectorErrorModel::graphlike_edges`].
    parts: Vec<u32>,
    /// The line of the first split `error` with a part that flips no detector.
    undetectable_part: Option<u32>,
}

impl DecomposedErrors {
    /// The split errors: `(p, the graphlike edges of its parts)`, two parts or more each.
    pub fn iter(&self) -> impl Iterator<Item = (f64, &[u32])> + '_ {
        self.p.iter().enumerate().map(|(k, &p)| {
            (
                p,
                &self.parts[self.start[k] as usize..self.start[k + 1] as usize],
            )
        })
    }

    /// How many split errors.
    pub fn len(&self) -> usize {
        self.p.len()
    }

    /// Whether no error was split.
    pub fn is_empty(&self) -> bool {
        self.p.is_empty()
    }

    /// The 1-based line of the first split `error` with a part that flips no detector
    /// (`D0 D1 ^ L0`): correlated matching cannot condition on a part it cannot see.
    pub fn undetectable_part(&self) -> Option<u32> {
        self.undetectable_part
    }

    /// Sets the line it names to 0 ([`DetectorErrorModel::without_lines`]).
    pub(super) fn clear_lines(&mut self) {
        if let Some(line) = &mut self.undetectable_part {
            *line = 0;
        }
    }

    fn push(&mut self, p: f64, parts: &[u32]) {
        if self.start.is_empty() {
            self.start.push(0);
        }
        self.p.push(p);
        self.parts.extend_from_slice(parts);
        self.start.push(self.parts.len() as u32);
    }

    /// The errors with their parts renumbered by `map` (`u32::MAX`: the part is gone); an
    /// error left with fewer than two parts is dropped.
    pub(super) fn renumbered(&self, map: &[u32]) -> DecomposedErrors {
        let mut out = DecomposedErrors {
            undetectable_part: self.undetectable_part,
            ..DecomposedErrors::default()
        };
        let mut kept = Vec::new();
        for (p, parts) in self.iter() {
            kept.clear();
            kept.extend(
                parts
                    .iter()
                    .map(|&e| map[e as usize])
                    .filter(|&e| e != u32::MAX),
            );
            if kept.len() >= 2 {
                out.push(p, &kept);
            }
        }
        out
    }
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
    /// The errors split into several edges, and the current error's edges.
    decomposed: DecomposedErrors,
    parts: Vec<u32>,
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

    fn run(&mut self, body: &[Instruction]) -> Result<(), (usize, DemErrorKind)> {
        for ins in body {
            let at = |k: DemErrorKind| (ins.line as usize, k);
            match &ins.kind {
                InstructionKind::Error { p, targets } => {
                    self.error(*p, targets, ins.line).map_err(at)?;
                }
                InstructionKind::Detector {
                    coords: args,
                    targets: ds,
                } => {
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
                InstructionKind::LogicalObservable { targets: ls } => {
                    for &l in ls {
                        if l >= MAX_OBSERVABLES {
                            return Err(at(DemErrorKind::ObservableRange(l)));
                        }
                        self.num_observables = self.num_observables.max(l + 1);
                    }
                }
                InstructionKind::ShiftDetectors {
                    coords: args,
                    count: n,
                } => {
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
                InstructionKind::Repeat { body, .. } if limits::expanded_size(body) == 0 => {}
                InstructionKind::Repeat { count, body } => {
                    for _ in 0..*count {
                        self.run(body)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn error(&mut self, p: f64, targets: &[DemTarget], line: u32) -> Res<()> {
        self.dets.clear();
        self.obs.clear();
        for t in targets {
            match *t {
                DemTarget::Detector(d) => {
                    let abs = self.detector(d)?;
                    self.num_detectors = self.num_detectors.max(abs + 1);
                    self.dets.push(abs);
                }
                DemTarget::Observable(l) => {
                    if l >= MAX_OBSERVABLES {
                        return Err(DemErrorKind::ObservableRange(l));
                    }
                    self.num_observables = self.num_observables.max(l + 1);
                    self.obs.push(l);
                }
                DemTarget::Separator => {}
            }
        }
        if p > 0.0 {
            let split = targets.contains(&DemTarget::Separator);
            self.parts.clear();
            for part in targets.split(|t| *t == DemTarget::Separator) {
                match self.component(p, part, line) {
                    Some(k) => self.parts.push(k),
                    None if split
                        && self.decomposed.undetectable_part.is_none()
                        && !part.iter().any(|t| matches!(t, DemTarget::Detector(_))) =>
                    {
                        self.decomposed.undetectable_part = Some(line);
                    }
                    None => {}
                }
            }
            if self.parts.len() >= 2 {
                self.decomposed.push(p, &self.parts);
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
    /// (merged with an earlier edge on the same detectors; its index is returned), a part of
    /// more detectors is remembered if it is the first, a part of none is ignored.
    fn component(&mut self, p: f64, targets: &[DemTarget], line: u32) -> Option<u32> {
        let (mut dets, mut obs) = (Vec::new(), Vec::new());
        for t in targets {
            match *t {
                DemTarget::Detector(d) => dets.push(self.det_offset.saturating_add(d)),
                DemTarget::Observable(l) => obs.push(l),
                DemTarget::Separator => {}
            }
        }
        let (mut d, mut o) = (Vec::new(), Vec::new());
        xor_sorted(&mut dets, &mut d);
        xor_sorted(&mut obs, &mut o);
        let key = match d[..] {
            [] => return None,
            [a] => (a, u32::MAX),
            [a, b] => (a, b),
            _ => {
                self.hyperedge
                    .get_or_insert(Hyperedge { line, detectors: d });
                return None;
            }
        };
        match self.edge_index.get(&key) {
            // stim's rule, as for mechanisms; the first part's observables are kept (parts
            // on the same detectors that flip other observables mean a distance-2 code).
            Some(&k) => {
                let q = &mut self.edges[k as usize].p;
                *q = *q * (1.0 - p) + p * (1.0 - *q);
                Some(k)
            }
            None => {
                let k = self.edges.len() as u32;
                self.edge_index.insert(key, k);
                self.edges.push(GraphlikeEdge {
                    detectors: key,
                    observables: o,
                    p,
                    line,
                });
                Some(k)
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

/// Executes a parsed tree (already checked against its limits) into a model named `name`
/// whose instruction list is still empty.
pub(super) fn execute(
    tree: &[Instruction],
    name: &str,
) -> Result<DetectorErrorModel, (usize, DemErrorKind)> {
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
        decomposed: DecomposedErrors::default(),
        parts: Vec::new(),
    };
    // A model with no mechanism (an empty circuit's) is a model: it predicts nothing, and the
    // decoders answer it with constant predictions (sinter's contract).
    ex.run(tree)?;
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
        name: name.to_string(),
        instructions: Vec::new(),
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
        decomposed: ex.decomposed,
    })
}

impl DetectorErrorModel {
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

    /// The `error`s whose `^`-separated parts became two edges or more of
    /// [`DetectorErrorModel::graphlike_edges`] (a Y error's X and Z halves): the joint
    /// probabilities correlated matching reads.
    pub fn decomposed_errors(&self) -> &DecomposedErrors {
        &self.decomposed
    }
}
