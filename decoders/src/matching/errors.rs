//! Why a model cannot be matched, and why a shot was refused: the matching decoder's errors,
//! in a module of their own that imports nothing of the crate (the crate's `DecoderError`
//! wraps them).

/// Observables a matching decoder tracks (one `u64` mask per path).
pub const MAX_MATCHING_OBSERVABLES: usize = 64;

/// The smallest probability whose matching weight `ln((1 − p)/p)` is finite, rounded up to
/// three digits (below `1/f64::MAX` ≈ 5.56e-309, `(1 − p)/p` overflows to infinity).
pub const MIN_WEIGHABLE_P: f64 = 5.57e-309;

/// Why a model cannot be matched.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MatchingBuildError {
    /// A part of an `error` flips more than two detectors.
    #[error(
        "{file}:{line}: this error has a part that flips {count} detectors ({dets}); matching \
         needs edges of one or two detectors: decompose the model's errors (stim's \
         `decompose_errors=True` separates them with `^`)"
    )]
    Hyperedge {
        /// The model's name.
        file: String,
        /// The line of the `error`.
        line: u32,
        /// How many detectors the part flips.
        count: usize,
        /// Its first detectors, as `D3 D7 D9`.
        dets: String,
    },
    /// An edge of probability 1 (an infinitely negative weight).
    #[error("{file}:{line}: an error of probability {p} cannot be matched (it always happens)")]
    Certain {
        /// The model's name.
        file: String,
        /// The line of its first `error`.
        line: u32,
        /// Its probability.
        p: f64,
    },
    /// An edge so unlikely that its weight `ln((1 − p)/p)` is not a finite number (`p` below
    /// about 5.6e-309, where `(1 − p)/p` overflows): refused, as PyMatching refuses it, rather
    /// than letting one infinite weight make every other weight 0.
    #[error(
        "{file}:{line}: an error of probability {p:e} is too small to weigh (ln((1 − p)/p) is \
         not finite; matching needs p ≥ {MIN_WEIGHABLE_P:e}): leave it out or raise it"
    )]
    TooSmall {
        /// The model's name.
        file: String,
        /// The line of its first `error`.
        line: u32,
        /// Its probability.
        p: f64,
    },
    /// More observables than a matching decoder tracks.
    #[error("{file}: {count} observables; matching tracks at most {MAX_MATCHING_OBSERVABLES}")]
    TooManyObservables {
        /// The model's name.
        file: String,
        /// Observables of the model.
        count: usize,
    },
    /// An edge given by weight ([`crate::matching::MatchingGraph::from_edges`]) that cannot
    /// be one: a node past the graph's, or a weight that is not a finite number.
    #[error("{file}: edge {index}: {why}")]
    BadEdge {
        /// The graph's name.
        file: String,
        /// The edge's index in the list given.
        index: usize,
        /// What is wrong with it.
        why: String,
    },
    /// The decoder of a graph this large does not fit in memory (checked before it is built:
    /// [`crate::matching::check_fits`]).
    #[error(
        "a matching graph of {nodes} nodes and {edges} edges needs about {mb} MB for its \
         decoder, which does not fit in memory"
    )]
    Memory {
        /// Nodes of the graph.
        nodes: usize,
        /// Edges of the graph.
        edges: usize,
        /// The estimate, MB.
        mb: u64,
    },
    /// No graphlike part with `p > 0` flips a detector.
    #[error("{0}: no error with p > 0 flips one or two detectors; there is nothing to match")]
    NoEdges(String),
    /// Correlated matching was asked of a split `error` with a part that flips no detector.
    #[error(
        "{file}:{line}: this error has a `^`-separated part that flips no detector; correlated          matching cannot condition on it (PyMatching refuses it too): merge that part into          another"
    )]
    CorrelatedUndetectablePart {
        /// The model's name.
        file: String,
        /// The line of the `error`.
        line: u32,
    },
}

/// Why a decode with correlations was refused before it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CorrelationsError {
    /// The decoder was built without correlations (PyMatching's message says the same).
    #[error(
        "correlations were asked of a decoder built without them: build it with correlations          (`Matching.from_detector_error_model(dem, enable_correlations=True)`, `--correlations`,          `matching;correlations=1`)"
    )]
    NotBuilt,
}

/// Why a decode was refused. `Copy`, and returned without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MatchFault {
    /// A detection event on a detector that no edge touches: nothing can explain it.
    #[error("detector D{0} fired, and no error of the model flips it")]
    IsolatedDetector(u32),
    /// No perfect matching exists: the detection events of the part of the graph holding this
    /// detector are odd in number and the part has no boundary.
    #[error(
        "no matching explains the detection events: the connected part of the graph with \
         detector D{0} has an odd number of them and no boundary"
    )]
    NoPerfectMatching(u32),
    /// The flooding did not finish within its event budget (a decoder bug, reported instead
    /// of hanging).
    #[error("the matching did not finish within its event budget")]
    Budget,
    /// A detection-event record of the wrong length.
    #[error("{what} is {found} bytes, expected {expected}")]
    Length {
        /// Detection events or observable flips.
        what: &'static str,
        /// Bytes expected.
        expected: u32,
        /// Bytes given.
        found: u32,
    },
    /// A detector index past the model's.
    #[error("detector {index} is beyond the model's {detectors} detectors")]
    Detector {
        /// The index given.
        index: u32,
        /// Detectors of the model.
        detectors: u32,
    },
}
