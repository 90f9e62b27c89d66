//! The detector graph a matching decoder floods: one node per detector, an edge per graphlike
//! part of the model, integer weights, negative weights turned positive.
//!
//! # Weights
//!
//! An edge of probability `p` weighs `ln((1 − p)/p)`. Parallel parts were merged by the model
//! ([`crate::dem::DetectorErrorModel::graphlike_edges`]). Weights are then made integers the way
//! PyMatching 2 does (`num_distinct_weights` = 2^24): with `W` the largest `|ln((1 − p)/p)|`,
//! every weight is multiplied by `(2^24 − 1)/W` (by 1 when all are integers already), rounded
//! half away from zero, and doubled — even weights put every collision of two growing regions
//! at an integer time. [`MatchingGraph::scale`] is the factor from `ln((1 − p)/p)` to the
//! integer weight (the doubling included).
//!
//! A probability so small that `(1 − p)/p` overflows (`p` < [`MIN_WEIGHABLE_P`] ≈ 5.6e-309,
//! subnormal numbers) has no finite weight; one infinite weight would make `W` infinite and
//! every integer weight 0, so such a model is refused ([`MatchingBuildError::TooSmall`]), as
//! PyMatching refuses it. The smallest normal `p` (`f64::MIN_POSITIVE`) weighs ≈ 708 and is
//! matched as any other.
//!
//! # Correlations
//!
//! Built with correlations ([`MatchingGraph::from_dem_correlated`]), the graph also holds
//! PyMatching's *rewrite rules* (its two-pass "correlated matching", PyMatching ≥ 2.3): for
//! every `error(p)` that stim split into parts `c₀ ^ c₁ ^ …`, every pair of its parts happened
//! together with probability `p` (pairs of parts of several errors combine as independent
//! events), and `P(c)` is edge `c`'s own probability. After a first matching uses edge `c`,
//! every edge `a` that shares an error with it is taken to have happened with probability
//! `min(½, P(c ∧ a)/P(c))` and weighs `ln((1 − q)/q)` in the second matching, when that is
//! lighter than its weight. Rule weights are made integers with the edges' factor and count
//! in `W`, as PyMatching does. Edges with `p > ½` (below) have no rules: PyMatching refuses
//! them with correlations; sinter's contract needs them decoded.
//!
//! # Negative weights
//!
//! An edge with `p > ½` weighs less than nothing: it is taken as already flipped. Its detectors
//! are toggled in every shot's detection events, its observables in every prediction, its
//! weight is added to every matching's weight, and the graph keeps it with `|w|` (PyMatching's
//! rule). `p = ½` is a free edge (weight 0); `p = 1` is refused.

use crate::dem::{DecomposedErrors, DetectorErrorModel};
pub use crate::matching::errors::{MAX_MATCHING_OBSERVABLES, MIN_WEIGHABLE_P, MatchingBuildError};

/// The node an edge to the boundary leads to.
pub const BOUNDARY: u32 = u32::MAX;

/// The largest half-edge weight, PyMatching's `NUM_DISTINCT_WEIGHTS − 1`.
const MAX_HALF_WEIGHT: f64 = ((1u32 << 24) - 1) as f64;

/// The largest `|weight|` [`MatchingGraph::from_edges`] takes (16,777,215, PyMatching's
/// "maximum absolute edge weight"): all-integer weights up to it are kept as they are, and
/// doubled they still fit the integer weights.
pub(crate) const MAX_EDGE_WEIGHT: f64 = MAX_HALF_WEIGHT;

/// One undirected edge, as built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    /// One end.
    pub a: u32,
    /// The other end, or [`BOUNDARY`].
    pub b: u32,
    /// Its integer weight (even, ≥ 0; negative edges are stored flipped).
    pub weight: u32,
    /// The observables it flips, bit `l` for observable `l`.
    pub obs: u64,
}

/// A neighbour entry: where the edge leads and what it weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Adj {
    pub(crate) to: u32,
    pub(crate) weight: u32,
}

/// Correlated matching's rewrite rules (module doc): for each edge, the edges whose weight a
/// first matching that uses it lowers, and to what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rules {
    /// Edge `e`'s rules are `to[start[e]..start[e + 1]]`, with `weight` beside.
    pub(crate) start: Vec<u32>,
    /// The edge rewritten.
    pub(crate) to: Vec<u32>,
    /// Its integer weight after a first matching used the causing edge.
    pub(crate) weight: Vec<u32>,
    /// Each edge's adjacency slots (the second is `u32::MAX` for an edge to the boundary).
    pub(crate) slots: Vec<[u32; 2]>,
}

impl Rules {
    /// The rules of edge `e`: `(edge rewritten, its new weight)`.
    #[inline]
    pub(crate) fn of(&self, e: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        let r = self.start[e as usize] as usize..self.start[e as usize + 1] as usize;
        self.to[r.clone()]
            .iter()
            .copied()
            .zip(self.weight[r].iter().copied())
    }
}

/// The matching graph of a model. Built once; read-only while decoding.
///
/// Layout: node `n`'s neighbours are `adj[start[n]..start[n + 1]]` (with `adj_obs` beside), an
/// edge to the boundary first when it has one; every other edge appears at both ends.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchingGraph {
    name: String,
    num_nodes: usize,
    num_observables: usize,
    pub(crate) start: Vec<u32>,
    pub(crate) adj: Vec<Adj>,
    pub(crate) adj_obs: Vec<u64>,
    /// The edge (index into `edges`) of each adjacency slot.
    pub(crate) adj_edge: Vec<u32>,
    edges: Vec<Edge>,
    /// Detectors toggled in every shot by the negative edges, ascending.
    pub(crate) neg_events: Vec<u32>,
    /// Observables flipped by the negative edges.
    pub(crate) neg_obs: u64,
    /// The negative edges' total (integer) weight, ≤ 0.
    pub(crate) neg_weight: i64,
    /// The negative edges (indices into `edges`), ascending.
    neg_edges: Vec<u32>,
    /// The negative edges but self-loops, in the order PyMatching's search graph lists them
    /// (edges between detectors by model order, then edges to the boundary by detector).
    pub(crate) neg_listed: Vec<u32>,
    scale: f64,
    /// Correlated matching's rules, when built with correlations.
    pub(crate) rules: Option<std::sync::Arc<Rules>>,
}

impl MatchingGraph {
    /// The graph of `dem`'s graphlike decomposition.
    pub fn from_dem(dem: &DetectorErrorModel) -> Result<MatchingGraph, MatchingBuildError> {
        MatchingGraph::from_dem_with(dem, false)
    }

    /// The graph of `dem`'s graphlike decomposition with the rewrite rules of correlated
    /// matching (module doc). A split error with a part that flips no detector is refused, as
    /// PyMatching refuses it. An edge with `p > ½` is taken (PyMatching refuses it): flipped
    /// in advance as in plain matching, with no rule to or from it.
    pub fn from_dem_correlated(
        dem: &DetectorErrorModel,
    ) -> Result<MatchingGraph, MatchingBuildError> {
        MatchingGraph::from_dem_with(dem, true)
    }

    fn from_dem_with(
        dem: &DetectorErrorModel,
        correlated: bool,
    ) -> Result<MatchingGraph, MatchingBuildError> {
        let file = || dem.name().to_string();
        if let Some(h) = dem.first_hyperedge() {
            let mut dets: Vec<String> = h
                .detectors
                .iter()
                .take(8)
                .map(|d| format!("D{d}"))
                .collect();
            if h.detectors.len() > 8 {
                dets.push("…".into());
            }
            return Err(MatchingBuildError::Hyperedge {
                file: file(),
                line: h.line,
                count: h.detectors.len(),
                dets: dets.join(" "),
            });
        }
        if dem.num_observables() > MAX_MATCHING_OBSERVABLES {
            return Err(MatchingBuildError::TooManyObservables {
                file: file(),
                count: dem.num_observables(),
            });
        }
        let mut raw = Vec::with_capacity(dem.graphlike_edges().len());
        for e in dem.graphlike_edges() {
            if e.p >= 1.0 {
                return Err(MatchingBuildError::Certain {
                    file: file(),
                    line: e.line,
                    p: e.p,
                });
            }
            let w = ((1.0 - e.p) / e.p).ln();
            if !w.is_finite() {
                return Err(MatchingBuildError::TooSmall {
                    file: file(),
                    line: e.line,
                    p: e.p,
                });
            }
            let obs = e.observables.iter().fold(0u64, |m, &l| m | 1 << l);
            raw.push((e.detectors.0, e.detectors.1, w, obs));
        }
        if raw.is_empty() {
            return Err(MatchingBuildError::NoEdges(file()));
        }
        let implied = if correlated {
            let split = dem.decomposed_errors();
            if let Some(line) = split.undetectable_part() {
                return Err(MatchingBuildError::CorrelatedUndetectablePart { file: file(), line });
            }
            let marginal: Vec<f64> = dem.graphlike_edges().iter().map(|e| e.p).collect();
            Some(implied_weights(split, &marginal))
        } else {
            None
        };
        Ok(MatchingGraph::build(
            dem.name(),
            dem.num_detectors(),
            dem.num_observables(),
            &raw,
            implied.as_deref(),
        ))
    }

    /// A graph of `nodes` nodes from edges `(a, b or BOUNDARY, weight, observable mask)` given
    /// by weight (a check matrix's columns, PyMatching's `from_check_matrix`): weights are
    /// discretised as the module says, a negative one is taken as already flipped. A
    /// self-loop (`a == b`, PyMatching's `add_edge(n, n)`) can never be in a matching: it is
    /// kept in [`MatchingGraph::edges`] and its weight counts in the discretisation, but no
    /// node's neighbours list it; a negative one is taken in every matching (its weight and
    /// observables, no detector toggled), as PyMatching does. Refused
    /// ([`MatchingBuildError::BadEdge`]): a node at or past `nodes`, a weight
    /// that is NaN or infinite or larger in magnitude than 16,777,215 (PyMatching's
    /// limit: an integer weight past it would overflow the discretisation), an observable at
    /// or past `observables` (at most [`MAX_MATCHING_OBSERVABLES`]); no edge at all is
    /// [`MatchingBuildError::NoEdges`].
    pub fn from_edges(
        name: &str,
        nodes: usize,
        observables: usize,
        edges: &[(u32, u32, f64, u64)],
    ) -> Result<MatchingGraph, MatchingBuildError> {
        check_edges(name, nodes, observables, edges)?;
        Ok(MatchingGraph::from_weights(name, nodes, observables, edges))
    }

    /// [`MatchingGraph::from_edges`]'s graph (the edges checked by it first) with correlated
    /// matching's rules for `pairs` `(edge, edge, p)` (indices into `edges`; each pair listed
    /// both ways) of edges that happen together with probability `p`, every edge's own
    /// probability in `marginal`: a first matching that uses one lowers the other's weight
    /// (module doc).
    pub(crate) fn from_edges_correlated(
        name: &str,
        nodes: usize,
        observables: usize,
        edges: &[(u32, u32, f64, u64)],
        pairs: Vec<(u32, u32, f64)>,
        marginal: &[f64],
    ) -> Result<MatchingGraph, MatchingBuildError> {
        check_edges(name, nodes, observables, edges)?;
        let rules = rules_of_pairs(pairs, marginal);
        Ok(MatchingGraph::build(
            name,
            nodes,
            observables,
            edges,
            Some(&rules),
        ))
    }

    /// A graph from edges `(a, b or BOUNDARY, weight, observable mask)` with real weights,
    /// discretised as the module says. Nodes must be below `nodes`.
    pub(crate) fn from_weights(
        name: &str,
        nodes: usize,
        observables: usize,
        raw: &[(u32, u32, f64, u64)],
    ) -> MatchingGraph {
        MatchingGraph::build(name, nodes, observables, raw, None)
    }

    /// [`MatchingGraph::from_weights`], with correlated matching's rules `(causing edge, edge
    /// rewritten, real weight)` (sorted by causing edge) when given: their weights count in
    /// the discretisation.
    fn build(
        name: &str,
        nodes: usize,
        observables: usize,
        raw: &[(u32, u32, f64, u64)],
        implied: Option<&[(u32, u32, f64)]>,
    ) -> MatchingGraph {
        let rule_weights = implied.unwrap_or(&[]).iter().map(|r| r.2);
        let weights = raw.iter().map(|e| e.2).chain(rule_weights);
        let max_abs = weights.clone().fold(0.0f64, |m, w| m.max(w.abs()));
        let integral = weights.clone().all(|w| w.round() == w);
        let half_scale = if integral || max_abs == 0.0 {
            1.0
        } else {
            MAX_HALF_WEIGHT / max_abs
        };
        let mut edges = Vec::with_capacity(raw.len());
        let mut toggled = vec![false; nodes];
        let (mut neg_obs, mut neg_weight) = (0u64, 0i64);
        let mut neg_edges = Vec::new();
        for (k, &(a, b, w, obs)) in raw.iter().enumerate() {
            let iw = (w * half_scale).round() as i64 * 2;
            if iw < 0 {
                neg_edges.push(k as u32);
                toggled[a as usize] ^= true;
                if b != BOUNDARY {
                    toggled[b as usize] ^= true;
                }
                neg_obs ^= obs;
                neg_weight += iw;
            }
            edges.push(Edge {
                a,
                b,
                weight: iw.unsigned_abs() as u32,
                obs,
            });
        }
        let mut degree = vec![0u32; nodes + 1];
        // A self-loop (only [`MatchingGraph::from_edges`] makes one) has no adjacency slot.
        for e in edges.iter().filter(|e| e.a != e.b) {
            degree[e.a as usize] += 1;
            if e.b != BOUNDARY {
                degree[e.b as usize] += 1;
            }
        }
        let mut start = vec![0u32; nodes + 1];
        for n in 0..nodes {
            start[n + 1] = start[n] + degree[n];
        }
        let total = start[nodes] as usize;
        let mut adj = vec![Adj { to: 0, weight: 0 }; total];
        let mut adj_obs = vec![0u64; total];
        let mut adj_edge = vec![0u32; total];
        // Boundary edges first, so the flooder finds them at the start of the range.
        let mut fill: Vec<u32> = start[..nodes].to_vec();
        let mut slots = vec![[u32::MAX; 2]; edges.len()];
        for pass_boundary in [true, false] {
            for (k, e) in edges
                .iter()
                .enumerate()
                .filter(|(_, e)| (e.b == BOUNDARY) == pass_boundary && e.a != e.b)
            {
                for (side, (from, to)) in [(e.a, e.b), (e.b, e.a)].into_iter().enumerate() {
                    if from == BOUNDARY {
                        continue;
                    }
                    let slot = fill[from as usize] as usize;
                    slots[k][side] = slot as u32;
                    fill[from as usize] += 1;
                    adj[slot] = Adj {
                        to,
                        weight: e.weight,
                    };
                    adj_obs[slot] = e.obs;
                    adj_edge[slot] = k as u32;
                }
            }
        }
        let neg_events = (0..nodes as u32).filter(|&n| toggled[n as usize]).collect();
        let mut neg_listed: Vec<u32> = neg_edges
            .iter()
            .copied()
            .filter(|&k| edges[k as usize].a != edges[k as usize].b)
            .collect();
        // Stable: edges between detectors keep model order, ahead of the boundary's.
        neg_listed.sort_by_key(|&k| {
            let e = edges[k as usize];
            if e.b == BOUNDARY { (1, e.a) } else { (0, 0) }
        });
        let rules = implied.map(|implied| {
            let mut start = vec![0u32; edges.len() + 1];
            for &(c, _, _) in implied {
                start[c as usize + 1] += 1;
            }
            for e in 0..edges.len() {
                start[e + 1] += start[e];
            }
            std::sync::Arc::new(Rules {
                start,
                to: implied.iter().map(|r| r.1).collect(),
                weight: implied
                    .iter()
                    .map(|r| ((r.2 * half_scale).round() as i64 * 2).unsigned_abs() as u32)
                    .collect(),
                slots,
            })
        });
        MatchingGraph {
            name: name.to_string(),
            num_nodes: nodes,
            num_observables: observables,
            start,
            adj,
            adj_obs,
            adj_edge,
            edges,
            neg_events,
            neg_obs,
            neg_weight,
            neg_edges,
            neg_listed,
            scale: half_scale * 2.0,
            rules,
        }
    }

    /// Whether the graph holds correlated matching's rules.
    pub fn has_correlations(&self) -> bool {
        self.rules.is_some()
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Nodes: the model's detectors.
    pub fn num_nodes(&self) -> usize {
        self.num_nodes
    }

    /// Observables of the model.
    pub fn num_observables(&self) -> usize {
        self.num_observables
    }

    /// The edges, in the model's order (negative ones with their weight made positive).
    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }

    /// Integer weight per unit of `ln((1 − p)/p)`.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// Whether node `n` has an edge to the boundary.
    pub fn has_boundary(&self, n: usize) -> bool {
        let s = self.start[n] as usize;
        s < self.start[n + 1] as usize && self.adj[s].to == BOUNDARY
    }

    /// Node `n`'s edges: `(neighbour or BOUNDARY, weight, observables)`.
    pub fn neighbours(&self, n: usize) -> impl Iterator<Item = (u32, u32, u64)> + '_ {
        let r = self.start[n] as usize..self.start[n + 1] as usize;
        self.adj[r.clone()]
            .iter()
            .zip(&self.adj_obs[r])
            .map(|(a, &o)| (a.to, a.weight, o))
    }

    /// The detectors every shot's events are XORed with (the negative edges' ends).
    pub fn negative_events(&self) -> &[u32] {
        &self.neg_events
    }

    /// The observables every prediction is XORed with (the negative edges').
    pub fn negative_observables(&self) -> u64 {
        self.neg_obs
    }

    /// The negative edges (indices into [`MatchingGraph::edges`]), ascending: every matching
    /// takes them, unless a path of it crosses one again.
    pub fn negative_edges(&self) -> &[u32] {
        &self.neg_edges
    }

    /// The edge (index into [`MatchingGraph::edges`]) between node `a` and node `b` (or
    /// [`BOUNDARY`]); `u32::MAX` when there is none.
    pub(crate) fn edge_between(&self, a: u32, b: u32) -> u32 {
        let (lo, hi) = (self.start[a as usize], self.start[a as usize + 1]);
        (lo..hi)
            .find(|&s| self.adj[s as usize].to == b)
            .map_or(u32::MAX, |s| self.adj_edge[s as usize])
    }

    /// The negative edges' total integer weight (≤ 0), added to every matching's weight.
    pub fn negative_weight(&self) -> i64 {
        self.neg_weight
    }
}

/// [`MatchingGraph::from_edges`]'s checks of its edges.
fn check_edges(
    name: &str,
    nodes: usize,
    observables: usize,
    edges: &[(u32, u32, f64, u64)],
) -> Result<(), MatchingBuildError> {
    if observables > MAX_MATCHING_OBSERVABLES {
        return Err(MatchingBuildError::TooManyObservables {
            file: name.to_string(),
            count: observables,
        });
    }
    let allowed = if observables == 64 {
        u64::MAX
    } else {
        (1u64 << observables) - 1
    };
    for (index, &(a, b, w, obs)) in edges.iter().enumerate() {
        let why = if a as usize >= nodes || (b != BOUNDARY && b as usize >= nodes) {
            let past = if a as usize >= nodes { a } else { b };
            format!("node {past} is past the graph's {nodes} nodes")
        } else if !w.is_finite() {
            format!("weight {w} is not a finite number")
        } else if w.abs() > MAX_EDGE_WEIGHT {
            format!(
                "weight {w:?} is larger in magnitude than {MAX_EDGE_WEIGHT}, the largest \
                 weight a matching graph holds (PyMatching's maximum absolute edge weight)"
            )
        } else if obs & !allowed != 0 {
            format!("it flips an observable past the graph's {observables}")
        } else {
            continue;
        };
        return Err(MatchingBuildError::BadEdge {
            file: name.to_string(),
            index,
            why,
        });
    }
    if edges.is_empty() {
        return Err(MatchingBuildError::NoEdges(name.to_string()));
    }
    Ok(())
}

/// Correlated matching's rules as real weights `(causing edge, edge rewritten, weight)`, sorted
/// by causing edge then edge rewritten: every pair of parts of a split error happened together
/// with its `p` (combined over errors as independent events); the rewritten edge's
/// probability is `min(½, P(c ∧ a)/P(c))` with `P(c)` the causing edge's own probability.
fn implied_weights(split: &DecomposedErrors, marginal: &[f64]) -> Vec<(u32, u32, f64)> {
    rules_of(split.iter(), marginal)
}

/// The rewrite rules (module doc) of errors given as `(p, the edges of its parts)`, with each
/// edge's own probability in `marginal`: `(causing edge, edge rewritten, real weight)`,
/// sorted by causing edge.
pub(crate) fn rules_of<'a>(
    errors: impl Iterator<Item = (f64, &'a [u32])>,
    marginal: &[f64],
) -> Vec<(u32, u32, f64)> {
    let mut pairs: Vec<(u32, u32, f64)> = Vec::new();
    for (p, parts) in errors {
        for (i, &c) in parts.iter().enumerate() {
            for &a in &parts[i + 1..] {
                if a != c {
                    pairs.push((c, a, p));
                    pairs.push((a, c, p));
                }
            }
        }
    }
    rules_of_pairs(pairs, marginal)
}

/// The rewrite rules of `pairs` `(edge, edge, p)`: both edges happened together with
/// probability `p` (each pair listed both ways; repeated pairs combine as independent
/// events), with each edge's own probability in `marginal`.
pub(crate) fn rules_of_pairs(
    mut pairs: Vec<(u32, u32, f64)>,
    marginal: &[f64],
) -> Vec<(u32, u32, f64)> {
    pairs.sort_unstable_by_key(|&(c, a, _)| (c, a));
    let mut rules: Vec<(u32, u32, f64)> = Vec::with_capacity(pairs.len());
    for (c, a, p) in pairs {
        match rules.last_mut() {
            Some(last) if (last.0, last.1) == (c, a) => {
                last.2 = last.2 * (1.0 - p) + p * (1.0 - last.2);
            }
            _ => rules.push((c, a, p)),
        }
    }
    rules.retain_mut(|r| {
        let m = marginal[r.0 as usize];
        // An edge with p > ½ is taken as flipped in advance (negative weights): no rule
        // lowers it or follows from it.
        if m <= 0.0 || m > 0.5 || marginal[r.1 as usize] > 0.5 {
            return false;
        }
        let q = (r.2 / m).min(0.5);
        r.2 = ((1.0 - q) / q).ln();
        r.2.is_finite()
    });
    rules
}
