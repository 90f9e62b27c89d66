//! The Möbius decoder of colour codes: one exact minimum-weight matching on a graph that
//! holds the three restricted lattices at once, lifted back to the observables.
//!
//! # The construction
//!
//! Colour-code models need annotated detectors, as Chromobius reads them: the 4th coordinate
//! is 0, 1, 2 for a red, green, blue X detector, 3, 4, 5 for Z, −1 for one to ignore. An
//! error of a colour code flips, in each basis, one detector (at a boundary), two, or three of
//! different colours (a *rainbow* triplet); the model's errors of those shapes are its
//! *atoms*, and every other error is split into atoms of the model.
//!
//! Each detector `d` has two nodes, `2d` and `2d + 1`: its copies in the two restricted
//! lattices its colour belongs to (a red detector is in the red-green and the red-blue
//! lattice). A rainbow triplet is one edge in each of the three lattices; a pair is an edge
//! copy to copy; a single detector joins its two copies. A detection event fires both
//! copies; one matching of the whole graph (the sparse blossom of [`crate::matching`], exact)
//! pairs them up (Sahay & Brown, arXiv 2108.11395; Gidney & Jones, arXiv 2312.08813, whose
//! Chromobius this follows).
//!
//! # The lift
//!
//! The matched paths and each event's edge between its copies make a graph in which every
//! node has even degree; each Euler circuit of it is a closed walk over detectors. A walk
//! carries a charge (none, red, green or blue): each step along an atom's edge changes it as
//! the tables built with the decoder say, at what cost in observables; each detection event
//! passed is discharged. The assignment of charges that closes the circuit gives its
//! observables; the shot's answer is their sum.
//!
//! # Correlations
//!
//! With `correlations=1` ([`MobiusDecoder::new_correlated`]) the graph is matched twice, as
//! PyMatching's correlated matching does on surface codes: an error of the model split into
//! several atoms (a Y error's X and Z halves; a hook error's pieces) gives every pair of
//! edges from *different* atoms a rule; once the first matching uses one edge, the other's
//! weight is lowered to `ln((1 − q)/q)`, `q = min(½, P(both)/P(used edge))`, and the second
//! matching's paths are lifted. Edges of one atom are not paired: they always happen
//! together, and the matching already takes them together. About twice the plain decode's
//! time; the logical error rates it reaches are in docs/decoders.md.
//!
//! ```
//! use backline_decoders::dem::DetectorErrorModel;
//! use backline_decoders::mobius::MobiusDecoder;
//! // One red, green and blue X detector; a rainbow error in the middle, one boundary error
//! // per detector (the red one flips L0).
//! let dem = DetectorErrorModel::parse(
//!     "detector(0, 0, 0, 0) D0\ndetector(1, 0, 0, 1) D1\ndetector(2, 0, 0, 2) D2\n\
//!      error(0.1) D0 D1 D2\nerror(0.01) D0 L0\nerror(0.01) D1\nerror(0.01) D2\n",
//!     "tri.dem",
//! )
//! .unwrap();
//! let mut dec = MobiusDecoder::new(&dem).unwrap();
//! assert_eq!(dec.decode_mask(&[0b111]).unwrap(), 0); // the rainbow error
//! assert_eq!(dec.decode_mask(&[0b001]).unwrap(), 1); // red's boundary error
//! ```

mod error;
mod lift;
mod model;
#[cfg(test)]
mod tests;
mod windows;

use std::collections::HashMap;
use std::sync::Arc;

use crate::decoder::{ObservableDecoder, ShotInfo};
use crate::dem::DetectorErrorModel;
use crate::error::{DecoderError, SettingError};
use crate::matching::{MatchFault, MatchingDecoder, MatchingGraph};
use crate::registry::{DecoderConfig, Entry, Profile, Setting, ValueType, WindowKind, config_any};
pub use error::MobiusError;
pub use windows::MobiusWindows;

/// The Möbius decoder of one model. Built once; decodes without allocating once its scratch
/// has grown to the largest shot. Cloning shares the tables.
#[derive(Debug, Clone)]
pub struct MobiusDecoder {
    num_detectors: usize,
    num_observables: usize,
    ignored: Arc<Vec<bool>>,
    lift: Arc<lift::Lift>,
    /// The matching of the Möbius graph (none when the model has no usable error).
    matcher: Option<MatchingDecoder>,
    /// The shot's Möbius nodes that fired, and detectors.
    events: Vec<u32>,
    fired: Vec<u32>,
    /// The matching's path edges.
    path: Vec<u32>,
    tours: lift::Tours,
    used: Vec<u32>,
}

impl MobiusDecoder {
    /// The decoder of an annotated colour-code model (module doc); what it refuses is a
    /// [`MobiusError`], or a [`crate::matching::MatchingBuildError`] for a graph matching
    /// cannot hold.
    pub fn new(dem: &DetectorErrorModel) -> Result<MobiusDecoder, DecoderError> {
        MobiusDecoder::build(dem, false)
    }

    /// [`MobiusDecoder::new`] with a second, correlated pass (module doc): the first
    /// matching's edges lower the weights of the edges that share an error of the model with
    /// them, and the graph is matched again.
    pub fn new_correlated(dem: &DetectorErrorModel) -> Result<MobiusDecoder, DecoderError> {
        MobiusDecoder::build(dem, true)
    }

    fn build(dem: &DetectorErrorModel, correlated: bool) -> Result<MobiusDecoder, DecoderError> {
        let split = model::split(dem).map_err(DecoderError::from)?;
        let n = dem.num_detectors();
        // The Möbius graph's edges, parallel ones merged as independent errors; each error's
        // edges, for the correlated pass.
        let mut index: HashMap<(u32, u32), u32> = HashMap::new();
        let mut marginal: Vec<f64> = Vec::new();
        let mut order = Vec::new();
        // Pairs of edges of one error from different atoms (correlated pass).
        let mut pairs: Vec<(u32, u32, f64)> = Vec::new();
        let mut edges = Vec::new();
        let mut atom_of_edge = Vec::new();
        let mut prob = Vec::new();
        // The errors (their edges weigh), then those kept for the correlated pass only.
        let all = split.errors.iter().map(|e| (e, true));
        let extra = split.correlated_only.iter().map(|e| (e, false));
        for (&(p, ref atoms), weighs) in all.chain(extra.filter(|_| correlated)) {
            edges.clear();
            atom_of_edge.clear();
            prob.clear();
            for (i, a) in atoms.iter().enumerate() {
                model::atom_edges(&split.colour, a, &mut edges);
                atom_of_edge.resize(edges.len(), i);
                // A boundary piece's edge joins a detector's two copies, which a matching of
                // each lattice alone would each take to the boundary: it costs both.
                let q = if a[1] == model::NONE { p * p } else { p };
                prob.resize(edges.len(), q);
            }
            let mut parts = Vec::with_capacity(edges.len());
            for (&(a, b), &q) in edges.iter().zip(&prob) {
                if !weighs {
                    // Its parts are edges of the errors before it.
                    parts.push(index.get(&(a, b)).copied().unwrap_or(u32::MAX));
                    continue;
                }
                let k = *index.entry((a, b)).or_insert_with(|| {
                    order.push((a, b));
                    marginal.push(0.0);
                    marginal.len() as u32 - 1
                });
                let m = &mut marginal[k as usize];
                *m = *m * (1.0 - q) + q * (1.0 - *m);
                parts.push(k);
            }
            if correlated && atoms.len() > 1 {
                for (i, &c) in parts.iter().enumerate() {
                    for (j, &a) in parts.iter().enumerate().skip(i + 1) {
                        let known = a != u32::MAX && c != u32::MAX;
                        if known && a != c && atom_of_edge[i] != atom_of_edge[j] {
                            let both = prob[i].min(prob[j]);
                            pairs.extend([(c, a, both), (a, c, both)]);
                        }
                    }
                }
            }
        }
        // Every probability is below 1 (the model's are), so every weight is finite; one
        // above ½ is negative, and the matching takes its edge as already flipped.
        let weighted: Vec<(u32, u32, f64, u64)> = order
            .iter()
            .zip(&marginal)
            .map(|(&(a, b), &p)| (a, b, ((1.0 - p) / p).ln(), 0))
            .collect();
        crate::matching::check_fits(2 * n + 1, weighted.len())?;
        let graph = if weighted.is_empty() {
            // No error the decoder can use: every event is unexplained.
            None
        } else if correlated {
            Some(MatchingGraph::from_edges_correlated(
                dem.name(),
                2 * n,
                0,
                &weighted,
                pairs,
                &marginal,
            )?)
        } else {
            Some(MatchingGraph::from_edges(dem.name(), 2 * n, 0, &weighted)?)
        };
        let lift = lift::Lift::new(&split, n);
        Ok(MobiusDecoder {
            num_detectors: n,
            num_observables: dem.num_observables(),
            ignored: Arc::new(split.ignored),
            lift: Arc::new(lift),
            matcher: graph.map(|g| MatchingDecoder::from_graph(Arc::new(g))),
            events: Vec::with_capacity(2 * n),
            fired: Vec::with_capacity(n),
            path: Vec::new(),
            tours: lift::Tours::new(2 * n),
            used: Vec::new(),
        })
    }

    /// Decodes one shot in stim's `b8` layout (`⌈detectors/8⌉` bytes), returning the
    /// predicted observable flips as a mask (bit `l` for observable `l`).
    pub fn decode_mask(&mut self, dets: &[u8]) -> Result<u64, DecoderError> {
        self.decode_weighted(dets).map(|(obs, _)| obs)
    }

    /// [`MobiusDecoder::decode_mask`] with the weight of the Möbius graph's matching,
    /// `Σ ln((1 − p)/p)` over its edges (0 for a shot without detection events): how unlikely
    /// the explanation is (Chromobius's `predict_weighted_obs_flips_from_dets_bit_packed`).
    pub fn decode_weighted(&mut self, dets: &[u8]) -> Result<(u64, f64), DecoderError> {
        let n = self.num_detectors;
        if dets.len() != n.div_ceil(8) {
            return Err(DecoderError::PackedLength {
                what: "detection events",
                expected: n.div_ceil(8),
                found: dets.len(),
            });
        }
        self.events.clear();
        self.fired.clear();
        for (i, &byte) in dets.iter().enumerate() {
            let mut b = byte;
            while b != 0 {
                let d = 8 * i as u32 + b.trailing_zeros();
                b &= b - 1;
                if (d as usize) < n && !self.ignored[d as usize] {
                    self.fired.push(d);
                    self.events.extend([2 * d, 2 * d + 1]);
                }
            }
        }
        let flipped = self
            .matcher
            .as_ref()
            .is_some_and(|m| !m.graph().negative_edges().is_empty());
        if self.fired.is_empty() && !flipped {
            return Ok((0, 0.0));
        }
        let Some(matcher) = self.matcher.as_mut() else {
            return Err(DecoderError::Unexplained(self.fired[0]));
        };
        // (With edges taken in advance, even a shot without events is matched.)
        self.path.clear();
        let matched = matcher
            .decode_to_path_edges(&self.events, &mut self.path)
            .map_err(|f| match f {
                MatchFault::IsolatedDetector(node) => DecoderError::Unexplained(node / 2),
                MatchFault::NoPerfectMatching(node) => {
                    MobiusError::NoMatching { detector: node / 2 }.into()
                }
                other => DecoderError::Match(other),
            })?;
        self.tours.clear();
        let graph = matcher.graph();
        let edges = graph.edges();
        // The matching's paths, and the edges it takes as flipped in advance (p > ½).
        for &k in self.path.iter().chain(graph.negative_edges()) {
            let e = edges[k as usize];
            self.tours.add(e.a, e.b);
        }
        for &d in &self.fired {
            self.tours.add(2 * d, 2 * d + 1);
        }
        let fired = |d: u32| dets[d as usize / 8] >> (d % 8) & 1 == 1;
        let obs = lift_tours(
            &self.lift,
            &mut self.tours,
            &mut self.used,
            fired,
            &self.fired,
        )?;
        Ok((obs, matched.weight as f64 / graph.scale()))
    }
}

/// The observables of the Euler circuits of `tours` (a matching's edges and each event's edge
/// between its copies): the sum of each circuit's lift. `fired` says which detectors had
/// events; `events` lists them, for the error of a part with no circuit.
pub(crate) fn lift_tours(
    lift: &lift::Lift,
    tours: &mut lift::Tours,
    used: &mut Vec<u32>,
    fired: impl Fn(u32) -> bool,
    events: &[u32],
) -> Result<u64, DecoderError> {
    let mut obs = 0u64;
    let mut failed: Option<Vec<u32>> = None;
    let closed = tours.each(|cycle| {
        if failed.is_some() {
            return;
        }
        match lift.discharge(cycle, &fired, used) {
            Some(f) => obs ^= f,
            None => failed = Some(cycle.iter().map(|&m| m / 2).collect()),
        }
    });
    if let Some(detectors) = failed {
        return Err(MobiusError::Lift { detectors }.into());
    }
    if !closed {
        return Err(MobiusError::Lift {
            detectors: events.to_vec(),
        }
        .into());
    }
    Ok(obs)
}

impl ObservableDecoder for MobiusDecoder {
    fn num_detectors(&self) -> usize {
        self.num_detectors
    }

    fn num_observables(&self) -> usize {
        self.num_observables
    }

    fn decode_packed(
        &mut self,
        detectors: &[u8],
        observables: &mut [u8],
    ) -> Result<ShotInfo, DecoderError> {
        let k = self.num_observables;
        if observables.len() != k.div_ceil(8) {
            return Err(DecoderError::PackedLength {
                what: "observable flips",
                expected: k.div_ceil(8),
                found: observables.len(),
            });
        }
        let m = self.decode_mask(detectors)?;
        for (i, o) in observables.iter_mut().enumerate() {
            *o = (m >> (8 * i)) as u8;
        }
        Ok(ShotInfo {
            converged: true,
            ..ShotInfo::default()
        })
    }

    fn clone_box(&self) -> Box<dyn ObservableDecoder> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The settings of the Möbius decoder: Chromobius's construction, and whether to match
/// twice with correlations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MobiusConfig {
    /// The correlated second pass ([`MobiusDecoder::new_correlated`]).
    pub correlations: bool,
}

impl DecoderConfig for MobiusConfig {
    fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        crate::matching::set_correlations(&mut self.correlations, key, value)
    }

    fn get(&self, key: &str) -> Option<String> {
        crate::matching::get_correlations(self.correlations, key)
    }

    fn build(&self, dem: &DetectorErrorModel) -> Result<Box<dyn ObservableDecoder>, DecoderError> {
        Ok(Box::new(if self.correlations {
            MobiusDecoder::new_correlated(dem)?
        } else {
            MobiusDecoder::new(dem)?
        }))
    }

    fn windows(&self) -> WindowKind {
        WindowKind::Lifted
    }

    config_any!();
}

fn mobius_config(_: Profile) -> Box<dyn DecoderConfig> {
    Box::new(MobiusConfig::default())
}

/// The Möbius decoder in the decoder registry.
pub static ENTRY: Entry = Entry {
    name: "mobius",
    title: "Möbius (colour codes)",
    summary: "colour codes: one exact matching over the three restricted lattices at once, \
              lifted back to the observables (Chromobius's construction; detectors annotated \
              with colour and basis in their 4th coordinate)",
    settings: &[Setting {
        key: "correlations",
        value: ValueType::Flag,
        range: "0 or 1",
        offline: "0",
        realtime: "0",
        help: "match twice, the second time with the edges that share an error of the model \
               with the first matching's edges made lighter (PyMatching's correlated matching \
               on the Möbius graph)",
    }],
    config: mobius_config,
};
