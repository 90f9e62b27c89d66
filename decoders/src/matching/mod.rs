//! Minimum-weight perfect matching on a detector error model: the decoder of the surface code.
//!
//! # The algorithm
//!
//! Sparse blossom (Higgott & Gidney, arXiv 2303.15933; PyMatching 2): Edmonds' blossom
//! algorithm run directly on the detector graph instead of on a complete graph of detection
//! events. Every detection event starts a *region* that grows over the graph's edges at unit
//! speed; regions that meet are matched to each other, to the boundary, or join an
//! *alternating tree* (inner regions shrink while outer ones grow); a tree that closes a cycle
//! makes the cycle a *blossom*, which grows and shrinks as one region; an inner blossom that
//! shrinks to nothing splits again. The primal-dual argument of the blossom algorithm makes
//! the final matching one of minimum weight, and no shortest path between detection events is
//! computed unless two regions touch, so the work follows the detection events, not the graph.
//! Events are queued in PyMatching's order (its radix heap's: by time, the newest first among
//! events due at once; [`queue`](self)), and the matcher takes its steps in PyMatching's
//! order, so that among equally light matchings the one found is PyMatching's; everything is
//! flat arrays of `u32` indices, sized when the decoder is built, so a decode allocates
//! nothing.
//!
//! # The graph
//!
//! [`MatchingGraph`] reads a model's graphlike parts
//! ([`crate::dem::DetectorErrorModel::graphlike_edges`]: stim's `^` decomposition, parallel
//! parts merged), weighs each `ln((1 − p)/p)`, and makes the weights integers as PyMatching
//! does (see [`graph`]). A part with more than two detectors is refused, naming its line
//! ([`MatchingBuildError::Hyperedge`]). Edges with `p > ½` have negative weight and are
//! handled by flipping them in advance; `p = 1` is refused.
//!
//! # Correlations
//!
//! A decoder built with correlations ([`MatchingDecoder::new_correlated`],
//! `matching;correlations=1`) matches twice, as PyMatching ≥ 2.3 does with
//! `enable_correlations=True`: a first matching; the edges of its paths (shortest paths
//! between the matched detection events, each edge counted once per path, an edge used twice
//! cancels); the weights those edges' rewrite rules lower ([`graph`]'s doc), written into the
//! decoder's own copy of the weights; a second matching, whose answer is the decode's. The
//! weights are put back when the next decode starts, so the answer's paths
//! ([`MatchingDecoder::decode_to_edges`], a window's cut) follow the weights it came from. It needs the model's errors decomposed (stim's
//! `decompose_errors=True`): an error's parts are what the rules connect. Allocation-free
//! after construction, like the plain decoder; about 2.5× its time.
//!
//! # Decoding
//!
//! [`MatchingDecoder::decode_packed`] takes one shot in stim's `b8` layout and writes the
//! predicted observable flips; [`MatchingDecoder::decode_mask`] returns them as a mask with
//! the matching's weight. A detection event on a detector without edges, and a set of
//! detection events that no perfect matching explains (an odd number in a part of the graph
//! without a boundary), are [`MatchFault`]s naming a detector, never a hang.
//!
//! ```
//! use backline_decoders::dem::DetectorErrorModel;
//! use backline_decoders::matching::MatchingDecoder;
//! // A repetition code of 3 detectors with boundaries at both ends; L0 on the left edge.
//! let dem = DetectorErrorModel::parse(
//!     "error(0.1) D0 L0\nerror(0.1) D0 D1\nerror(0.1) D1 D2\nerror(0.1) D2\n",
//!     "rep.dem",
//! )
//! .unwrap();
//! let mut dec = MatchingDecoder::new(&dem).unwrap();
//! // D0 alone: the left boundary edge (flips L0) is the lightest explanation.
//! let m = dec.decode_mask(&[0b001]).unwrap();
//! assert_eq!(m.observables, 1);
//! // D0 and D1: the edge between them.
//! assert_eq!(dec.decode_mask(&[0b011]).unwrap().observables, 0);
//! ```

mod blossom;
pub mod checks;
pub mod errors;
pub mod graph;
mod path;
mod queue;
mod window;

use std::sync::Arc;

use crate::decoder::{ObservableDecoder, ShotInfo};
use crate::dem::DetectorErrorModel;
use crate::error::{DecoderError, SettingError};
use crate::registry::{DecoderConfig, Entry, Profile, Setting, ValueType, WindowKind, config_any};
pub use checks::{CheckMatching, ChecksError};
pub use errors::{CorrelationsError, MatchFault};
pub use graph::{
    BOUNDARY, Edge, MAX_MATCHING_OBSERVABLES, MIN_WEIGHABLE_P, MatchingBuildError, MatchingGraph,
};
pub use window::{WindowCommit, WindowSpec};

use blossom::{Blossom, Failure};

/// A matching's answer: the observables its paths flip and its weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Matched {
    /// Bit `l` set when observable `l` is predicted flipped.
    pub observables: u64,
    /// The matching's weight in the graph's integer units (divide by
    /// [`MatchingGraph::scale`] for `Σ ln((1 − p)/p)`), negative edges included.
    pub weight: i64,
}

/// Exact minimum-weight perfect matching on a model's graph. Built once; decodes without
/// allocating. Cloning shares the graph and copies the scratch (one clone per thread), which
/// keeps its room: a clone does not allocate when it decodes either.
#[derive(Debug)]
pub struct MatchingDecoder {
    graph: Arc<MatchingGraph>,
    engine: Blossom,
    /// The shot's detection events (capacity: every detector).
    events: Vec<u32>,
    /// The detectors that fired, before the negative edges' toggles (same capacity).
    fired: Vec<u32>,
    /// Toggle marks, when the graph has negative edges.
    marks: Vec<bool>,
    /// Path searches for windows' commits.
    paths: path::PathSearch,
    /// Paths chosen as PyMatching chooses them: correlated matching's first pass and
    /// [`MatchingDecoder::decode_to_edges`].
    flood: path::FloodSearch,
    /// Per edge: the parity [`MatchingDecoder::decode_to_edge_list`] keeps (all zero between
    /// calls; empty until its first call).
    listed: Vec<u8>,
    /// Correlated matching's state, when the graph has rules.
    corr: Option<Box<Correlated>>,
    /// Shortest paths between matched pairs for [`MatchingDecoder::decode_to_path_edges`],
    /// made on its first call.
    pair: Option<path::PairSearch>,
}

/// Correlated matching's scratch: the weights the second pass matches on (lowered until the
/// next decode puts them back), and the first pass's edges. Sized when built: a decode
/// allocates nothing.
#[derive(Debug)]
struct Correlated {
    /// The graph with the weights of the pass under way (the rules lower them; the original
    /// graph's restore them).
    graph: MatchingGraph,
    rules: Arc<graph::Rules>,
    /// Per edge: [`ODD`] when the first matching's paths crossed it an odd number of times,
    /// [`LISTED`] once it is in `used_list`.
    used: Vec<u8>,
    /// The edges `used` was set for (some may have been cleared again).
    used_list: Vec<u32>,
    /// Per edge: whether its weight is lowered.
    lowered: Vec<bool>,
    lowered_list: Vec<u32>,
    /// Whether decodes use the rules (a decoder built with them may match plainly).
    on: bool,
}

/// [`Correlated::used`]: crossed an odd number of times.
const ODD: u8 = 1;
/// [`Correlated::used`]: listed in `used_list`.
const LISTED: u8 = 2;

impl Clone for Correlated {
    fn clone(&self) -> Correlated {
        Correlated {
            graph: self.graph.clone(),
            rules: self.rules.clone(),
            used: self.used.clone(),
            used_list: blossom::room_of(&self.used_list),
            lowered: self.lowered.clone(),
            // The weights lowered by the last decode are copied with the graph: so are their
            // names, for the next decode to put back.
            lowered_list: {
                let mut l = Vec::with_capacity(self.lowered_list.capacity());
                l.extend_from_slice(&self.lowered_list);
                l
            },
            on: self.on,
        }
    }
}

impl Correlated {
    fn new(graph: &MatchingGraph, rules: Arc<graph::Rules>) -> Correlated {
        let m = graph.edges().len();
        Correlated {
            graph: graph.clone(),
            rules,
            used: vec![0; m],
            used_list: Vec::with_capacity(m),
            lowered: vec![false; m],
            lowered_list: Vec::with_capacity(m),
            on: true,
        }
    }

    /// Lowers the weights the rules of the used edges name (the lighter weight wins).
    fn apply_rules(&mut self) {
        for &e in &self.used_list {
            if std::mem::take(&mut self.used[e as usize]) & ODD == 0 {
                continue;
            }
            for (a, w) in self.rules.of(e) {
                let [s0, s1] = self.rules.slots[a as usize];
                if w < self.graph.adj[s0 as usize].weight {
                    if !std::mem::replace(&mut self.lowered[a as usize], true) {
                        self.lowered_list.push(a);
                    }
                    self.graph.adj[s0 as usize].weight = w;
                    if s1 != u32::MAX {
                        self.graph.adj[s1 as usize].weight = w;
                    }
                }
            }
        }
        self.used_list.clear();
    }

    /// Puts back the weights of `original`.
    fn restore(&mut self, original: &MatchingGraph) {
        for &a in &self.lowered_list {
            self.lowered[a as usize] = false;
            for s in self.rules.slots[a as usize] {
                if s != u32::MAX {
                    self.graph.adj[s as usize].weight = original.adj[s as usize].weight;
                }
            }
        }
        self.lowered_list.clear();
    }
}

impl Clone for MatchingDecoder {
    fn clone(&self) -> MatchingDecoder {
        MatchingDecoder {
            graph: self.graph.clone(),
            engine: self.engine.clone(),
            events: blossom::room_of(&self.events),
            fired: blossom::room_of(&self.fired),
            marks: self.marks.clone(),
            paths: self.paths.clone(),
            flood: self.flood.clone(),
            listed: self.listed.clone(),
            corr: self.corr.clone(),
            pair: self.pair.clone(),
        }
    }
}

/// Bytes a matching decoder holds per node of its graph, the graph's own arrays included
/// (measured: about 530 for the blossom's nodes, regions and alternating-tree entries, the
/// flooder's queue and the path searches; rounded up).
pub const BYTES_PER_NODE: usize = 576;

/// Bytes a matching decoder holds per edge (adjacency slots, their observables and edge
/// numbers, the path search's heap; rounded up).
pub const BYTES_PER_EDGE: usize = 128;

/// Checks that a matching decoder of `nodes` nodes and `edges` edges fits in memory before
/// anything is built for it: the space ([`BYTES_PER_NODE`], [`BYTES_PER_EDGE`]) is reserved
/// once and given back, so that a graph too large for the address space (a raised
/// `detectors` bound, a hand-built graph of 2^31 nodes) is [`MatchingBuildError::Memory`],
/// never an abort in the middle of building it.
pub fn check_fits(nodes: usize, edges: usize) -> Result<(), MatchingBuildError> {
    let bytes = nodes
        .checked_mul(BYTES_PER_NODE)
        .and_then(|n| n.checked_add(edges.checked_mul(BYTES_PER_EDGE)?));
    if bytes.is_some_and(|b| Vec::<u8>::new().try_reserve_exact(b).is_ok()) {
        return Ok(());
    }
    Err(MatchingBuildError::Memory {
        nodes,
        edges,
        mb: bytes.map_or(u64::MAX, |b| b as u64 / 1_000_000),
    })
}

impl MatchingDecoder {
    /// The decoder of `dem`'s graphlike decomposition.
    pub fn new(dem: &DetectorErrorModel) -> Result<MatchingDecoder, MatchingBuildError> {
        check_fits(dem.num_detectors() + 1, dem.graphlike_edges().len())?;
        Ok(MatchingDecoder::from_graph(Arc::new(
            MatchingGraph::from_dem(dem)?,
        )))
    }

    /// The decoder of `dem`'s graphlike decomposition with correlated matching (the module
    /// doc; [`MatchingGraph::from_dem_correlated`] says what it refuses).
    pub fn new_correlated(dem: &DetectorErrorModel) -> Result<MatchingDecoder, MatchingBuildError> {
        check_fits(dem.num_detectors() + 1, dem.graphlike_edges().len())?;
        Ok(MatchingDecoder::from_graph(Arc::new(
            MatchingGraph::from_dem_correlated(dem)?,
        )))
    }

    /// The decoder of a graph already built (shared, e.g. between threads); with
    /// correlations when the graph has them.
    pub fn from_graph(graph: Arc<MatchingGraph>) -> MatchingDecoder {
        let n = graph.num_nodes();
        MatchingDecoder {
            corr: graph
                .rules
                .clone()
                .map(|rules| Box::new(Correlated::new(&graph, rules))),
            engine: Blossom::new(&graph),
            paths: path::PathSearch::new(&graph),
            flood: path::FloodSearch::new(&graph),
            listed: Vec::new(),
            pair: None,
            events: Vec::with_capacity(n + graph.negative_events().len()),
            fired: Vec::with_capacity(n + graph.negative_events().len()),
            marks: if graph.negative_events().is_empty() {
                Vec::new()
            } else {
                vec![false; n]
            },
            graph,
        }
    }

    /// The graph.
    pub fn graph(&self) -> &Arc<MatchingGraph> {
        &self.graph
    }

    /// Whether decodes match twice with correlations (module doc).
    pub fn correlations(&self) -> bool {
        self.corr.as_ref().is_some_and(|c| c.on)
    }

    /// Makes the following decodes match with correlations or plainly (PyMatching's
    /// `enable_correlations` argument of `decode`). Correlations need a decoder built with
    /// them.
    pub fn set_correlations(&mut self, on: bool) -> Result<(), CorrelationsError> {
        match (&mut self.corr, on) {
            (Some(c), _) => {
                c.on = on;
                Ok(())
            }
            (None, false) => Ok(()),
            (None, true) => Err(CorrelationsError::NotBuilt),
        }
    }

    /// Detectors (bits per detection-event record).
    pub fn num_detectors(&self) -> usize {
        self.graph.num_nodes()
    }

    /// Observables (bits per prediction).
    pub fn num_observables(&self) -> usize {
        self.graph.num_observables()
    }

    /// Matches one shot given as the detectors that fired (each listed once; a detector
    /// listed twice cancels).
    pub fn decode_events(&mut self, fired: &[u32]) -> Result<Matched, MatchFault> {
        self.load_events(fired)?;
        self.run()
    }

    /// Matches one shot given as the detectors that fired (as
    /// [`MatchingDecoder::decode_events`]) and toggles `parity[k]` for every edge `k` of
    /// [`MatchingGraph::edges`] that the matching's paths take an odd number of times, the
    /// negative edges included (taken unless a path crosses one again): the edges of the
    /// correction. `parity`, one byte per edge, is XORed into, not cleared. Allocates nothing.
    pub fn decode_to_edges(
        &mut self,
        fired: &[u32],
        parity: &mut [u8],
    ) -> Result<Matched, MatchFault> {
        let edges = self.graph.edges().len();
        if parity.len() != edges {
            return Err(MatchFault::Length {
                what: "edge parities",
                expected: edges as u32,
                found: parity.len() as u32,
            });
        }
        let m = self.run_collecting(fired)?;
        self.toggle_paths(parity);
        for &k in self.graph.negative_edges() {
            parity[k as usize] ^= 1;
        }
        Ok(m)
    }

    /// Matches one shot given as the detectors that fired (as
    /// [`MatchingDecoder::decode_events`]) and appends to `path` the edges (indices into
    /// [`MatchingGraph::edges`]) of a shortest path between the two ends of each match, match
    /// after match, an edge once for every path that takes it (none cancel): for a caller that
    /// follows the paths (the Möbius decoder lifts them). The graph's negative edges are not
    /// listed. Allocates only to grow `path`, and the first time (the pair search's room).
    pub fn decode_to_path_edges(
        &mut self,
        fired: &[u32],
        path: &mut Vec<u32>,
    ) -> Result<Matched, MatchFault> {
        let m = self.run_collecting(fired)?;
        let span = self.engine.span();
        // The weights the last matching ran on (a correlated decode's second pass).
        let g = match self.corr.as_deref() {
            Some(c) if c.on => &c.graph,
            _ => &*self.graph,
        };
        let pairs = self.pair.get_or_insert_with(|| path::PairSearch::new(g));
        for e in &self.engine.matches {
            if e.to == blossom::NONE {
                if self.paths.search(g, span, e.from, BOUNDARY) {
                    path.extend(self.paths.slots.iter().map(|&s| g.adj_edge[s as usize]));
                }
            } else if pairs.search(g, span, e.from, e.to) {
                path.extend_from_slice(&pairs.edges);
            }
        }
        Ok(m)
    }

    /// Matches `fired` over the whole graph with the engine keeping its matches (for the
    /// paths a caller follows), then stops it keeping them.
    fn run_collecting(&mut self, fired: &[u32]) -> Result<Matched, MatchFault> {
        self.load_events(fired)?;
        let n = self.graph.num_nodes() as u32;
        self.engine.set_window(0, n, false, false, true);
        let r = self.run();
        self.engine.set_window(0, n, false, false, false);
        r
    }

    /// Toggles the parity of every edge on a shortest path of each match the engine collected.
    fn toggle_paths(&mut self, parity: &mut [u8]) {
        let g = &*self.graph;
        let span = path::Span {
            lo: 0,
            hi: g.num_nodes() as u32,
            past_is_boundary: false,
            future_is_boundary: false,
        };
        // The weights the last matching ran on (a correlated decode's second pass).
        let g = match self.corr.as_deref() {
            Some(c) if c.on => &c.graph,
            _ => g,
        };
        for e in &self.engine.matches {
            if self.flood.search(g, span, e.from, e.to) {
                for &(_, slot) in &self.flood.path {
                    parity[g.adj_edge[slot as usize] as usize] ^= 1;
                }
            }
        }
    }

    /// Matches one shot given as the detectors that fired (as
    /// [`MatchingDecoder::decode_events`]) and appends to `edges` the edges of the correction
    /// as PyMatching's `decode_to_edges_array` lists them: each as `(node, node or
    /// BOUNDARY)`, in its order and orientation — the negative edges (its order: edges
    /// between detectors by model order, then edges to the boundary by detector), then the
    /// edges of each match's path ([`path::FloodSearch`]), match after match; then every edge
    /// taken an even number of times is removed, and each other is kept once, where it was
    /// first listed, the list's last entry taking the place of each removed one. Self-loops
    /// are not listed. Allocates only to grow `edges`, and the first time (one byte per edge).
    pub fn decode_to_edge_list(
        &mut self,
        fired: &[u32],
        edges: &mut Vec<(u32, u32)>,
    ) -> Result<Matched, MatchFault> {
        let m = self.run_collecting(fired)?;
        let g = match self.corr.as_deref() {
            Some(c) if c.on => &c.graph,
            _ => &*self.graph,
        };
        if self.listed.len() != g.edges().len() {
            self.listed = vec![0; g.edges().len()];
        }
        let base = edges.len();
        for &k in &g.neg_listed {
            let e = g.edges()[k as usize];
            self.listed[k as usize] ^= 1;
            edges.push((e.a, e.b));
        }
        let span = self.engine.span();
        for e in &self.engine.matches {
            if self.flood.search(g, span, e.from, e.to) {
                for &(x, slot) in &self.flood.path {
                    self.listed[g.adj_edge[slot as usize] as usize] ^= 1;
                    edges.push((x, g.adj[slot as usize].to));
                }
            }
        }
        // Keep each edge taken an odd number of times where it was first listed.
        let mut i = base;
        while i < edges.len() {
            let (a, b) = edges[i];
            let k = g.edge_between(a, b) as usize;
            if self.listed[k] == 0 {
                edges.swap_remove(i);
            } else {
                self.listed[k] = 0;
                i += 1;
            }
        }
        Ok(m)
    }

    /// `fired` as the engine's events (negative edges' toggles applied).
    fn load_events(&mut self, fired: &[u32]) -> Result<(), MatchFault> {
        let n = self.graph.num_nodes() as u32;
        self.events.clear();
        if let Some(&bad) = fired.iter().find(|&&d| d >= n) {
            return Err(MatchFault::Detector {
                index: bad,
                detectors: n,
            });
        }
        if self.marks.is_empty() {
            // Without negative edges a toggle only matters for repeats, which are rare:
            // sort a copy only when one is present.
            self.events.extend_from_slice(fired);
            if fired.windows(2).any(|w| w[0] >= w[1]) {
                self.events.sort_unstable();
                dedup_pairs(&mut self.events);
            }
        } else {
            for &d in fired {
                self.marks[d as usize] ^= true;
            }
            self.collect_marked(fired.iter().copied());
        }
        Ok(())
    }

    /// Matches one shot in stim's `b8` layout (`⌈detectors/8⌉` bytes, bit `i` of byte `i/8`
    /// for detector `8·(i/8) + i%8`; padding bits are ignored).
    pub fn decode_mask(&mut self, dets: &[u8]) -> Result<Matched, MatchFault> {
        let n = self.graph.num_nodes();
        if dets.len() != n.div_ceil(8) {
            return Err(MatchFault::Length {
                what: "detection events",
                expected: n.div_ceil(8) as u32,
                found: dets.len() as u32,
            });
        }
        let mut fired = std::mem::take(&mut self.fired);
        fired.clear();
        // Eight bytes at a time: most of a shot's bytes are zero.
        let mut words = dets.chunks_exact(8);
        let mut base = 0u32;
        for w in words.by_ref() {
            let mut x = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
            while x != 0 {
                fired.push(base + x.trailing_zeros());
                x &= x - 1;
            }
            base += 64;
        }
        for (i, &byte) in words.remainder().iter().enumerate() {
            let mut b = byte;
            while b != 0 {
                fired.push(base + 8 * i as u32 + b.trailing_zeros());
                b &= b - 1;
            }
        }
        // Padding bits past the last detector are ignored.
        while fired.last().is_some_and(|&d| d as usize >= n) {
            fired.pop();
        }
        if self.marks.is_empty() {
            std::mem::swap(&mut fired, &mut self.events);
        } else {
            for &d in &fired {
                self.marks[d as usize] ^= true;
            }
            self.collect_marked(fired.iter().copied());
        }
        self.fired = fired;
        self.run()
    }

    /// [`MatchingDecoder::decode_mask`], writing the prediction in the `b8` layout
    /// (`⌈observables/8⌉` bytes, padding bits zero).
    pub fn decode_packed(&mut self, dets: &[u8], obs: &mut [u8]) -> Result<Matched, MatchFault> {
        let k = self.graph.num_observables();
        if obs.len() != k.div_ceil(8) {
            return Err(MatchFault::Length {
                what: "observable flips",
                expected: k.div_ceil(8) as u32,
                found: obs.len() as u32,
            });
        }
        let m = self.decode_mask(dets)?;
        for (i, o) in obs.iter_mut().enumerate() {
            *o = (m.observables >> (8 * i)) as u8;
        }
        Ok(m)
    }

    /// Marks set by the caller for `fired`, XORed with the negative edges' toggles, become
    /// the events (ascending order is not needed); every mark is cleared.
    fn collect_marked(&mut self, fired: impl Iterator<Item = u32>) {
        for &d in &self.graph.neg_events {
            self.marks[d as usize] ^= true;
        }
        self.events.clear();
        for d in fired.chain(self.graph.neg_events.iter().copied()) {
            if std::mem::replace(&mut self.marks[d as usize], false) {
                self.events.push(d);
            }
        }
    }

    fn run(&mut self) -> Result<Matched, MatchFault> {
        let t = self.run_engine()?;
        Ok(Matched {
            observables: t.obs ^ self.graph.neg_obs,
            weight: t.weight + self.graph.neg_weight,
        })
    }

    /// Matches `self.events` with the engine as it is set (whole graph or a window), twice
    /// when correlations are on.
    fn run_engine(&mut self) -> Result<blossom::Totals, MatchFault> {
        let g = &*self.graph;
        for &d in &self.events {
            if g.start[d as usize] == g.start[d as usize + 1] {
                return Err(MatchFault::IsolatedDetector(d));
            }
        }
        let fault = |f| match f {
            Failure::Unmatched(d) => MatchFault::NoPerfectMatching(d),
            Failure::Budget => MatchFault::Budget,
        };
        let Some(c) = self.corr.as_deref_mut().filter(|c| c.on) else {
            return self.engine.decode(g, &self.events).map_err(fault);
        };
        // The last decode's lowered weights stay until now (paths after a decode follow the
        // weights its answer came from).
        c.restore(g);
        // The first matching, its matches kept; the edges of their shortest paths.
        let collect = self.engine.collects();
        self.engine.set_collect(true);
        let first = self.engine.decode(&c.graph, &self.events);
        self.engine.set_collect(collect);
        let first = first.map_err(fault)?;
        let span = self.engine.span();
        for m in &self.engine.matches {
            let target = if m.to == blossom::NONE {
                BOUNDARY
            } else {
                m.to
            };
            // The path PyMatching takes: its weights lowered are the ones PyMatching lowers.
            self.flood.search(&c.graph, span, m.from, target);
            for &(_, slot) in &self.flood.path {
                let e = c.graph.adj_edge[slot as usize];
                let u = &mut c.used[e as usize];
                if *u & LISTED == 0 {
                    c.used_list.push(e);
                }
                *u = (*u ^ ODD) | LISTED;
            }
        }
        // The second matching on the lowered weights; then the weights put back. When no
        // weight was lowered it would be the first again (same graph, same events): the
        // first's answer (and matches) stand.
        c.apply_rules();
        if c.lowered_list.is_empty() {
            if !collect {
                self.engine.matches.clear();
            }
            return Ok(first);
        }
        self.engine.matches.clear();
        self.engine.decode(&c.graph, &self.events).map_err(fault)
    }
}

impl ObservableDecoder for MatchingDecoder {
    fn num_detectors(&self) -> usize {
        self.graph.num_nodes()
    }

    fn num_observables(&self) -> usize {
        self.graph.num_observables()
    }

    fn decode_packed(
        &mut self,
        detectors: &[u8],
        observables: &mut [u8],
    ) -> Result<ShotInfo, DecoderError> {
        MatchingDecoder::decode_packed(self, detectors, observables)?;
        Ok(MATCHED)
    }

    fn clone_box(&self) -> Box<dyn ObservableDecoder> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// What a matching decode reports: a matching always explains the detection events.
const MATCHED: ShotInfo = ShotInfo {
    converged: true,
    iterations: 0,
    osd_used: false,
    legs: 0,
    deadline_hit: false,
};

/// The settings of the matching decoder: PyMatching's weights, exact matching, and whether
/// to match twice with correlations (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MatchingConfig {
    /// Correlated matching (PyMatching's `enable_correlations`).
    pub correlations: bool,
}

impl MatchingConfig {
    /// The setting names, as errors list them.
    pub const KEYS: &'static str = "correlations";
}

/// Sets the one setting of a decoder whose settings are `correlations` alone (matching, the
/// Möbius decoder).
pub(crate) fn set_correlations(
    flag: &mut bool,
    key: &str,
    value: &str,
) -> Result<(), SettingError> {
    match key.trim() {
        "correlations" => *flag = crate::error::parse_flag(key, value)?,
        other => return Err(SettingError::unknown(other, MatchingConfig::KEYS)),
    }
    Ok(())
}

/// The value of `key` of such a decoder.
pub(crate) fn get_correlations(flag: bool, key: &str) -> Option<String> {
    (key == "correlations").then(|| u8::from(flag).to_string())
}

impl DecoderConfig for MatchingConfig {
    fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        set_correlations(&mut self.correlations, key, value)
    }

    fn get(&self, key: &str) -> Option<String> {
        get_correlations(self.correlations, key)
    }

    fn build(&self, dem: &DetectorErrorModel) -> Result<Box<dyn ObservableDecoder>, DecoderError> {
        Ok(Box::new(if self.correlations {
            MatchingDecoder::new_correlated(dem)?
        } else {
            MatchingDecoder::new(dem)?
        }))
    }

    fn windows(&self) -> WindowKind {
        WindowKind::Masked
    }

    config_any!();
}

impl From<MatchingConfig> for crate::registry::DecoderSettings {
    /// These settings as the registry's entry of their decoder.
    fn from(c: MatchingConfig) -> crate::registry::DecoderSettings {
        crate::registry::DecoderSettings::of(&ENTRY, Box::new(c))
    }
}

fn matching_config(_: Profile) -> Box<dyn DecoderConfig> {
    Box::new(MatchingConfig::default())
}

/// Matching in the decoder registry.
pub static ENTRY: Entry = Entry {
    name: "matching",
    title: "matching",
    summary: "exact minimum-weight perfect matching (sparse blossom) on the model's graphlike \
              decomposition, with PyMatching's edge weights",
    settings: &[Setting {
        key: "correlations",
        value: ValueType::Flag,
        range: "0 or 1",
        offline: "0",
        realtime: "0",
        help: "match twice, the second time with the weights the first matching's edges imply \
               (PyMatching's enable_correlations; needs a model with decomposed errors)",
    }],
    config: matching_config,
};

/// Removes pairs of equal neighbours from a sorted list (a detector listed twice cancels).
pub(crate) fn dedup_pairs(v: &mut Vec<u32>) {
    let mut w = 0;
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j < v.len() && v[j] == v[i] {
            j += 1;
        }
        if (j - i) % 2 == 1 {
            v[w] = v[i];
            w += 1;
        }
        i = j;
    }
    v.truncate(w);
}

#[cfg(test)]
mod tests;
