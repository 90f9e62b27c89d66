"""backline's decoders in the shape of the libraries researchers already use.

Switching is the import line::

    from backline.decoders import Matching                    # was: from pymatching import Matching
    from backline.decoders import BpOsdDecoder, BpDecoder     # was: from ldpc import BpOsdDecoder, BpDecoder
    from backline.decoders import RelayDecoderF32             # was: from relay_bp import RelayDecoderF32
    from backline.decoders import ObservableDecoderRunner     # was: from relay_bp import ObservableDecoderRunner
    from backline.decoders import compile_decoder_for_dem     # was: from chromobius import compile_decoder_for_dem
    from backline.decoders import sinter_decoders             # was: from chromobius import sinter_decoders

- :class:`Matching` as PyMatching 2.4's ``pymatching.Matching`` (exact minimum-weight perfect
  matching, sparse blossom).
- :class:`BpOsdDecoder` and :class:`BpDecoder` as ldpc 2.4's (BP+OSD, BP).
- :class:`RelayDecoderF32` (also :class:`RelayDecoder`) and :class:`ObservableDecoderRunner` as
  relay-bp 0.2.2's.
- :func:`compile_decoder_for_dem`, :class:`CompiledDecoder` and :func:`sinter_decoders` as
  Chromobius 1.1.1's (the Möbius decoder of colour codes, on detectors annotated with colour
  and basis in their 4th coordinate); ``sinter_decoders()`` keeps Chromobius's name
  ``"chromobius"``.

The same names, argument names and defaults, input types (numpy arrays, scipy sparse matrices,
lists), output shapes and dtypes and exception types as the originals. An argument or method we
do not have raises ``NotImplementedError`` naming it; nothing is silently ignored, except where
docs/decoders.md ("From PyMatching / ldpc / relay-bp") says so (relay-bp's ``progress_bar``
draws no bar). The decoders' settings are the decoder registry's (``_native.decoder_registry()``:
the same parser and ranges as ``backline decode`` and the sinter decoders); every decode runs in
Rust with the interpreter released; batches run on threads where the original offers them
(relay-bp's ``parallel=True``; ldpc's ``omp_thread_count`` for :meth:`BpOsdDecoder.decode_batch`).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from . import _native
from .limits import U32_MAX, check_int

__all__ = [
    "BpDecoder",
    "BpOsdDecoder",
    "CompiledDecoder",
    "DecodeResult",
    "Matching",
    "MinSumBPDecoderF32",
    "MinSumBPDecoderF64",
    "MinSumBPDecoderFixed",
    "MinSumBPDecoderI8",
    "MinSumBPDecoderI16",
    "MinSumBPDecoderI32",
    "MinSumBPDecoderI64",
    "ObservableDecodeResult",
    "ObservableDecoderRunner",
    "RelayDecoder",
    "RelayDecoderF32",
    "RelayDecoderF64",
    "compile_decoder_for_dem",
    "sinter_decoders",
]


def _registry_keys(kind: str) -> set[str]:
    """The setting names of the registered decoder ``kind``."""
    for name, _title, settings in _native.decoder_registry():
        if name == kind:
            return {row[0] for row in settings}
    raise RuntimeError(f"the decoder registry has no {kind!r}")


def _text(value: Any) -> str:
    """A setting's value as the text the registry's parser reads."""
    if value is None:
        return "none"
    if isinstance(value, (tuple, list)):
        return ",".join(repr(float(v)) for v in value)
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return str(value)


def _settings(kind: str, values: dict[str, Any]) -> list[tuple[str, str]]:
    keys = _registry_keys(kind)
    for k in values:
        if k not in keys:  # a name this module passes that the registry lost: a bug here
            raise RuntimeError(f"{kind}: the registry has no setting {k!r}")
    return [(k, _text(v)) for k, v in values.items()]


def _unsupported(what: str, why: str = "") -> NotImplementedError:
    return NotImplementedError(f"backline.decoders: {what} is not supported{': ' + why if why else ''}")


def _check_matrix(h: Any, what: str = "check matrix") -> Any:
    """``h`` (numpy, scipy.sparse or nested lists) as a binary scipy CSC matrix, sorted, without
    explicit zeros; ``TypeError`` for what cannot be one, ``ValueError`` for entries other than
    0/1 or a shape that is not 2-D."""
    import scipy.sparse as sp

    if sp.issparse(h):
        m = sp.csc_matrix(h)
    else:
        try:
            arr = np.asarray(h)
        except Exception as e:  # ragged lists and the like
            raise TypeError(f"{what}: expected a numpy array or scipy sparse matrix, got {type(h).__name__}") from e
        if arr.dtype == object or arr.dtype.kind not in "biuf":
            raise TypeError(f"{what}: expected a numpy array or scipy sparse matrix of 0/1, got dtype {arr.dtype}")
        if arr.ndim != 2:
            raise ValueError(f"{what}: expected a 2-D matrix, got shape {arr.shape}")
        m = sp.csc_matrix(arr)
    m.sum_duplicates()
    m.eliminate_zeros()
    if m.nnz and not np.all((m.data == 1) | (m.data == True)):  # noqa: E712
        bad = m.data[(m.data != 1)][0]
        raise ValueError(f"{what}: entries must be 0 or 1, found {bad!r}")
    m.sort_indices()
    return m


def _is_sparse(m: Any) -> bool:
    import scipy.sparse as sp

    return bool(sp.issparse(m))


def _csc_parts(m: Any) -> tuple[int, int, list[int], list[int]]:
    return int(m.shape[0]), int(m.shape[1]), m.indptr.astype(np.uint64).tolist(), m.indices.astype(np.uint32).tolist()


def _bits(v: Any, length: int, what: str, exc: type = ValueError) -> bytes:
    """A 1-D 0/1 vector of ``length`` as bytes; ``exc`` (ValueError) for another length."""
    arr = np.asarray(v)
    if arr.ndim != 1 or arr.shape[0] != length:
        raise exc(f"{what} must have length {length}. Not {arr.shape[0] if arr.ndim == 1 else arr.shape}.")
    return (arr != 0).astype(np.uint8).tobytes()


# ---------------------------------------------------------------------------------------------
# Matching (PyMatching 2.4)
# ---------------------------------------------------------------------------------------------


def _correlations_on_check_matrix() -> None:
    """Correlated matching needs a stim model's decomposed errors (which parts of one error go
    together); a check matrix has no such thing."""
    raise NotImplementedError(
        "backline.decoders.Matching: enable_correlations=True needs a graph built from a stim "
        "DetectorErrorModel or Circuit (its decomposed errors); a check-matrix graph has none"
    )


#: A node of a matching graph: the native graph's nodes are ``u32`` and ``u32::MAX`` is its
#: boundary (``BOUNDARY`` in ``decoders/src/matching/graph.rs``).
NODE = (0, U32_MAX - 1)

#: The largest ``|weight|`` of an edge (PyMatching's maximum edge weight, 2^24 − 1): a heavier
#: edge is not added, with a ``UserWarning``, as PyMatching does.
MAX_EDGE_WEIGHT = (1 << 24) - 1

#: A fault id: ``u32`` in the native graph (``GraphMatching``'s fault ids), so at most 2^32.
FAULT_ID = (0, U32_MAX)
NUM_FAULT_IDS = (0, U32_MAX + 1)


def _syndrome_u8(z: Any) -> np.ndarray:
    """A syndrome (or a batch of them) as uint8, by PyMatching's rule for :meth:`Matching.decode`
    and :meth:`Matching.decode_batch` alike: each entry cast to uint8 as numpy casts (floats
    toward zero, integers modulo 256, bools 0/1), non-zero an event. ``ValueError`` for what
    numpy cannot convert (NaN, ragged lists); ``OverflowError`` for a Python int out of uint8's
    range in a list, as PyMatching's ``decode``."""
    try:
        return np.asarray(z, dtype=np.uint8)
    except (ValueError, TypeError):
        shown = repr(z) if len(repr(z)) <= 80 else repr(z)[:80] + "…"
        raise ValueError(f"Syndrome must be of type numpy.ndarray or convertible to numpy.ndarray, not {shown}") from None


class _EmptyGraph:
    """The matching graph of a model from which nothing can be inferred: no edges, every
    prediction 0 (PyMatching's answer); a detection event raises, as on a detector without
    edges."""

    num_edges = 0

    def __init__(self, nodes: int, fault_ids: int):
        self.num_nodes, self.num_fault_ids = nodes, fault_ids

    def _none_fired(self, fired: bytes) -> None:
        if fired:
            d = int(np.frombuffer(fired, dtype=np.uint32)[0])
            raise ValueError(f"detector D{d} fired, and no error of the model flips it")

    def decode(self, fired: bytes, correlations: bool = False):
        self._none_fired(fired)
        return bytes(self.num_fault_ids), 0.0

    def decode_to_edges(self, fired: bytes, correlations: bool = False):
        self._none_fired(fired)
        return []

    def decode_batch(self, data: bytes, shots: int, width: int, packed: bool, correlations: bool = False):
        if any(data):
            raise ValueError("a detection event on a model without edges: no error of the model flips it")
        return bytes(shots * self.num_fault_ids), [0.0] * shots

    def edges(self):
        return []


#: Syndrome dtypes the native decoder reads in place (one byte per detector, non-zero fired).
_BYTE_DTYPES = (np.dtype(np.uint8), np.dtype(np.bool_))

_MERGE = ("disallow", "independent", "smallest-weight", "keep-original", "replace")


class Matching:
    """Minimum-weight perfect matching as ``pymatching.Matching`` (PyMatching 2.4).

    Built from a ``stim.DetectorErrorModel`` or ``stim.Circuit`` (its fault ids are the model's
    observables), a check matrix (numpy, scipy.sparse or lists; a column is an edge, its fault id
    its index, or the faults of ``faults_matrix``), or edge by edge (:meth:`add_edge`,
    :meth:`add_boundary_edge`). ``enable_correlations=True`` (built from a stim model, then asked
    of each decode, as PyMatching's) is correlated matching; asked of a decode on a graph built
    without it, ``ValueError``. Not supported (``NotImplementedError``): correlations on a
    check-matrix graph, ``repetitions`` > 1 with its time-like arguments, networkx/rustworkx graphs, drawing, noise.
    """

    def __init__(
        self,
        graph: Any = None,
        weights: Any = None,
        error_probabilities: Any = None,
        repetitions: int | None = None,
        timelike_weights: Any = None,
        measurement_error_probabilities: Any = None,
        *,
        enable_correlations: bool = False,
        **kwargs: Any,
    ):
        self._native = None
        self._edges: dict[tuple[int, int], tuple[float, set[int], float]] | None = {}
        self._nodes = 0
        self._boundary: set[int] = set()
        self._min_fault_ids = 0
        if graph is None:
            graph = kwargs.pop("H", None)  # PyMatching's old keyword for the check matrix
        if graph is None:
            if enable_correlations:
                _correlations_on_check_matrix()
            return
        try:
            import stim
        except ImportError:  # pragma: no cover - stim is a dependency of the sinter front
            stim = None
        if stim is not None and isinstance(graph, stim.DetectorErrorModel):
            self._load_dem(graph, enable_correlations)
        elif stim is not None and isinstance(graph, stim.Circuit):
            self._load_dem(graph.detector_error_model(decompose_errors=True), enable_correlations)
        elif enable_correlations:
            _correlations_on_check_matrix()
        elif type(graph).__module__.split(".")[0] in ("networkx", "retworkx", "rustworkx"):
            raise _unsupported("a networkx/rustworkx graph", "build from a check matrix or a stim model")
        else:
            self.load_from_check_matrix(
                graph, weights, error_probabilities, repetitions, timelike_weights,
                measurement_error_probabilities, **kwargs,
            )

    # -- construction ----------------------------------------------------------------------

    def _load_dem(self, model: Any, correlations: bool = False) -> None:
        # The native parser reads the model under its limits (DetectorErrorModelError, a
        # ValueError, past them: refused once, never flattened here); None when nothing is to
        # be matched (no error with p > 0 flips a detector): PyMatching's empty graph, every
        # prediction 0.
        native = _native.GraphMatching.from_dem(str(model), bool(correlations))
        if native is None:
            native = _EmptyGraph(model.num_detectors, model.num_observables)
        self._native = native
        self._edges = None
        self._nodes = self._native.num_nodes
        self._boundary = set()
        self._sizes = (self._nodes, self._nodes)

    @staticmethod
    def from_detector_error_model(model: Any, *, enable_correlations: bool = False) -> Matching:
        """The matching graph of a ``stim.DetectorErrorModel`` (its errors decomposed)."""
        import stim

        if not isinstance(model, stim.DetectorErrorModel):
            raise TypeError(f"'model' must be `stim.DetectorErrorModel`. Instead, got: {type(model)}")
        m = Matching()
        m._load_dem(model, enable_correlations)
        return m

    @staticmethod
    def from_detector_error_model_file(dem_path: str, *, enable_correlations: bool = False) -> Matching:
        """The matching graph of a ``.dem`` file."""
        import stim

        return Matching.from_detector_error_model(
            stim.DetectorErrorModel.from_file(dem_path), enable_correlations=enable_correlations
        )

    @staticmethod
    def from_stim_circuit(circuit: Any, *, enable_correlations: bool = False) -> Matching:
        """The matching graph of a ``stim.Circuit``'s model, its errors decomposed."""
        import stim

        if not isinstance(circuit, stim.Circuit):
            raise TypeError(f"`circuit` must be a `stim.Circuit`. Instead, got {type(circuit)}")
        return Matching.from_detector_error_model(
            circuit.detector_error_model(decompose_errors=True), enable_correlations=enable_correlations
        )

    @staticmethod
    def from_stim_circuit_file(stim_circuit_path: str, *, enable_correlations: bool = False) -> Matching:
        """The matching graph of a ``.stim`` file's circuit."""
        import stim

        return Matching.from_stim_circuit(
            stim.Circuit.from_file(stim_circuit_path), enable_correlations=enable_correlations
        )

    @staticmethod
    def from_check_matrix(
        check_matrix: Any,
        weights: Any = None,
        error_probabilities: Any = None,
        repetitions: int | None = None,
        timelike_weights: Any = None,
        measurement_error_probabilities: Any = None,
        *,
        faults_matrix: Any = None,
        merge_strategy: str = "smallest-weight",
        use_virtual_boundary_node: bool = False,
        **kwargs: Any,
    ) -> Matching:
        """The matching graph of a check matrix: column ``j`` is an edge between the one or two
        checks it touches (to the boundary for one), of weight ``weights[j]`` (default 1) or
        ``log((1 - p)/p)`` for ``error_probabilities[j]``, flipping fault id ``j`` (or the
        fault ids of column ``j`` of ``faults_matrix``)."""
        m = Matching()
        m.load_from_check_matrix(
            check_matrix, weights, error_probabilities, repetitions, timelike_weights,
            measurement_error_probabilities, faults_matrix=faults_matrix,
            merge_strategy=merge_strategy, use_virtual_boundary_node=use_virtual_boundary_node, **kwargs,
        )
        return m

    def load_from_check_matrix(
        self,
        H: Any = None,
        weights: Any = None,
        error_probabilities: Any = None,
        repetitions: int | None = None,
        timelike_weights: Any = None,
        measurement_error_probabilities: Any = None,
        *,
        faults_matrix: Any = None,
        merge_strategy: str = "smallest-weight",
        use_virtual_boundary_node: bool = False,
        **kwargs: Any,
    ) -> None:
        """:meth:`from_check_matrix` into this object."""
        for k in kwargs:
            if k not in ("check_matrix", "spacelike_weights", "measurement_error_probability"):
                raise TypeError(f"load_from_check_matrix() got an unexpected keyword argument {k!r}")
        if H is None:
            H = kwargs.get("check_matrix")
            if H is None:
                raise ValueError("No check_matrix provided")
        if kwargs.get("spacelike_weights") is not None:
            if weights is not None:
                raise ValueError("Both `weights` and `spacelike_weights` were provided as arguments, but these two "
                                 "arguments are equivalent: give only `weights` (`spacelike_weights` is its old name).")
            weights = kwargs["spacelike_weights"]
        if repetitions not in (None, 1):
            raise _unsupported(f"repetitions={repetitions!r}", "only repetitions=1 (one round of checks)")
        if timelike_weights is not None:
            raise _unsupported("timelike_weights", "it needs repetitions > 1")
        if measurement_error_probabilities is not None or kwargs.get("measurement_error_probability") is not None:
            raise _unsupported("measurement_error_probabilities", "it needs repetitions > 1")
        if merge_strategy not in _MERGE:
            raise ValueError(f"merge_strategy {merge_strategy!r} not recognised: expected one of {', '.join(_MERGE)}")
        h = _check_matrix(H)
        rows, cols = h.shape
        w = np.ones(cols) if weights is None else np.asarray(weights, dtype=float)
        if w.ndim == 0:
            w = np.full(cols, float(w))
        if w.shape != (cols,):
            raise ValueError(f"weights has shape {w.shape}: expected ({cols},), one per column of the check matrix")
        for j in np.flatnonzero(~np.isfinite(w)):
            raise ValueError(f"weights[{j}] = {w[j]!r} is not a finite number")
        if error_probabilities is None:
            p = np.full(cols, -1.0)
        else:
            p = np.asarray(error_probabilities, dtype=float)
            if p.ndim == 0:
                p = np.full(cols, float(p))
            if p.shape != (cols,):
                raise ValueError(f"error_probabilities has shape {p.shape}: expected ({cols},)")
        if faults_matrix is not None:
            f = _check_matrix(faults_matrix, "faults_matrix")
            if f.shape[1] != cols:
                raise ValueError(f"faults_matrix has {f.shape[1]} columns: the check matrix has {cols}")
            faults = [set(f.indices[f.indptr[j]:f.indptr[j + 1]].tolist()) for j in range(cols)]
            num_faults = f.shape[0]
        else:
            faults = [{j} for j in range(cols)]
            num_faults = cols
        self._native = None
        self._edges = {}
        self._nodes = rows
        self._boundary = set()
        self._min_fault_ids = num_faults
        boundary = None if use_virtual_boundary_node else rows
        for j in range(cols):
            dets = h.indices[h.indptr[j]:h.indptr[j + 1]].tolist()
            if len(dets) == 0:
                continue
            if len(dets) > 2:
                raise ValueError(
                    f"`check_matrix` must contain at most two ones per column, but column {j} has {len(dets)} ones."
                )
            # An edge to the boundary node (node `rows`, listed so by `edges()`, as PyMatching's)
            # or, with a virtual boundary, a boundary edge. A column heavier than PyMatching's
            # largest weight is kept, and the first decode raises (PyMatching's rule for a
            # check matrix; `add_edge` warns and leaves such an edge out).
            b = dets[1] if len(dets) == 2 else -1 if boundary is None else boundary
            self._add(dets[0], b, faults[j], float(w[j]), float(p[j]), merge_strategy, {}, heavy=True)
        if boundary is not None:
            self._boundary = {boundary}
            self._nodes = rows + 1

    def add_edge(
        self, node1: int, node2: int, fault_ids: Any = None, weight: float = 1.0,
        error_probability: float | None = None, *, merge_strategy: str = "disallow", **kwargs: Any,
    ) -> None:
        """An edge between two detectors (PyMatching's ``add_edge``)."""
        self._add(check_int("node1", node1, NODE, "a matching graph's nodes are 32-bit"),
                  check_int("node2", node2, NODE, "a matching graph's nodes are 32-bit"),
                  fault_ids, weight, error_probability, merge_strategy, kwargs)

    def add_boundary_edge(
        self, node: int, fault_ids: Any = None, weight: float = 1.0,
        error_probability: float | None = None, *, merge_strategy: str = "disallow", **kwargs: Any,
    ) -> None:
        """An edge from a detector to the boundary (PyMatching's ``add_boundary_edge``)."""
        self._add(check_int("node", node, NODE, "a matching graph's nodes are 32-bit"), -1,
                  fault_ids, weight, error_probability, merge_strategy, kwargs)

    def _add(self, a: int, b: int, fault_ids: Any, weight: float, p: float | None, merge: str, kwargs: dict,
             heavy: bool = False) -> None:
        if self._edges is None:
            raise _unsupported("adding edges to a graph built from a stim model")
        if "qubit_id" in kwargs:
            if fault_ids is not None:
                raise ValueError("Both `fault_ids` and `qubit_id` were provided as arguments.")
            fault_ids = kwargs.pop("qubit_id")
        if kwargs:
            raise TypeError(f"unexpected keyword argument {next(iter(kwargs))!r}")
        if merge not in _MERGE:
            raise ValueError(f"merge_strategy {merge!r} not recognised: expected one of {', '.join(_MERGE)}")
        if merge == "independent":
            raise _unsupported("merge_strategy='independent'")
        weight = float(weight)
        if math.isnan(weight):
            raise ValueError(f"edge ({a}, {b}): weight {weight} is not a number")
        if a < 0 or b < -1:
            raise ValueError(f"edge ({a}, {b}): nodes must be non-negative integers")
        if abs(weight) > MAX_EDGE_WEIGHT and not heavy:
            # PyMatching's rule: an edge heavier than its largest weight (±inf included) is not
            # added, with a warning.
            shown = f"({a}, {'None' if b < 0 else b})"
            warnings.warn(f"Weight {weight} of edge {shown} exceeds maximum edge weight {MAX_EDGE_WEIGHT} and has "
                          "not been added to the matching graph.", UserWarning, stacklevel=3)
            return
        raw = () if fault_ids is None else ((fault_ids,) if np.isscalar(fault_ids) else fault_ids)
        ids = {check_int(f"edge ({a}, {b}): fault id", f, FAULT_ID, "fault ids are 32-bit") for f in raw}
        key = (min(a, b), max(a, b)) if b >= 0 else (a, -1)
        old = self._edges.get(key)
        ends = (a, b)
        if old is not None:
            if merge == "disallow":
                raise ValueError(
                    f"Edge ({a}, {b}) already exists in the graph. Parallel edges are not allowed with "
                    "merge_strategy='disallow'."
                )
            if merge == "keep-original" or (merge == "smallest-weight" and old[0] <= weight):
                return
            ends = old[3]  # a merged edge keeps its place and the orientation it was added with
        self._edges[key] = (weight, ids, -1.0 if p is None else float(p), ends)
        self._nodes = max(self._nodes, a + 1, b + 1)
        self._native = None

    def _graph(self) -> Any:
        if self._native is None:
            if not self._edges:
                raise ValueError("the matching graph has no edges")
            num_faults = max([self._min_fault_ids] + [max(ids) + 1 for _, ids, _, _ in self._edges.values() if ids])
            merged: dict[tuple[int, int], tuple[int, int, float, list[int]]] = {}
            for (a, b), (w, ids, _p, _ends) in self._edges.items():
                if b in self._boundary and a != b:
                    b = -1
                if a in self._boundary:
                    if b < 0 or a == b:
                        continue  # an edge within the boundary: no detector sees it
                    a, b = b, -1
                # An edge to the boundary node and a boundary edge of the same node are one edge
                # of the native graph: the lighter is the one a matching takes.
                if (a, b) not in merged or w < merged[(a, b)][2]:
                    merged[(a, b)] = (a, b, w, sorted(ids))
            edges = list(merged.values())
            self._native = _native.GraphMatching.from_edges(self._nodes, num_faults, edges)
            self._sizes = (self.num_detectors, self.num_nodes)
        return self._native

    # -- sizes -----------------------------------------------------------------------------

    @property
    def num_nodes(self) -> int:
        """Nodes of the graph (detectors and boundary nodes)."""
        return self._nodes if self._edges is not None else self._graph().num_nodes

    @property
    def num_detectors(self) -> int:
        """Nodes that are not boundary nodes."""
        return self.num_nodes - len(self._boundary)

    @property
    def num_edges(self) -> int:
        """Edges (parallel ones merged)."""
        return len(self._edges) if self._edges is not None else self._graph().num_edges

    @property
    def num_fault_ids(self) -> int:
        """Fault ids (a model's observables)."""
        if self._edges is not None and not self._edges:
            return self._min_fault_ids
        return self._graph().num_fault_ids

    @property
    def boundary(self) -> set[int]:
        """The boundary nodes (a copy)."""
        return set(self._boundary)

    def ensure_num_fault_ids(self, min_num_fault_ids: int) -> None:
        """At least ``min_num_fault_ids`` fault ids."""
        if self._edges is None:
            raise _unsupported("ensure_num_fault_ids on a graph built from a stim model")
        n = check_int("min_num_fault_ids", min_num_fault_ids, NUM_FAULT_IDS, "fault ids are 32-bit")
        self._min_fault_ids = max(self._min_fault_ids, n)
        self._native = None

    def edges(self) -> list[tuple[int, int | None, dict]]:
        """The edges ``(a, b or None, {"fault_ids", "weight", "error_probability"})``, in the order
        they were added, each as it was first added (PyMatching's order)."""
        if self._edges is None:
            return [(a, None if b < 0 else b, {"fault_ids": set(ids)}) for a, b, ids in self._graph().edges()]
        return [
            (a, None if b < 0 else b, {"fault_ids": set(ids), "weight": w, "error_probability": p})
            for (w, ids, p, (a, b)) in self._edges.values()
        ]

    def __repr__(self) -> str:
        return (f"<backline.decoders.Matching object with {self.num_detectors} detectors, "
                f"{len(self._boundary)} boundary node{'s' if len(self._boundary) != 1 else ''}, "
                f"and {self.num_edges} edges>")

    # -- decoding --------------------------------------------------------------------------

    def _events(self, z: Any) -> bytes:
        """The detection events of syndrome ``z`` as the native decoder's uint32 bytes."""
        g = self._graph()
        z = _syndrome_u8(z)
        nd, nn = self._sizes
        if z.ndim == 1 and nd <= z.shape[0] <= nn:
            ev = np.flatnonzero(z)
        elif z.ndim == 2 and z.shape[0] * z.shape[1] == nd:
            times, checks = z.T.nonzero()
            ev = times * z.shape[0] + checks
        else:
            raise ValueError(f"The shape ({z.shape}) of the syndrome vector z is not valid: expected "
                             f"({nd},), one entry per detector")
        if self._boundary:
            ev = ev[~np.isin(ev, sorted(self._boundary))]
        ev = ev[ev < g.num_nodes] if nn > g.num_nodes else ev
        return ev.astype(np.uint32).tobytes()

    def decode(self, z: Any, *, return_weight: bool = False, enable_correlations: bool = False, **kwargs: Any):
        """The fault ids flipped by a minimum-weight correction of syndrome ``z`` (uint8, one per
        fault id), and with ``return_weight`` the correction's weight."""
        for k in kwargs:
            raise _unsupported(f"decode({k}=...)")
        g = self._graph()
        fast = getattr(g, "decode_into", None)
        if fast is not None and not self._boundary and type(z) is np.ndarray and z.ndim == 1 \
                and z.dtype in _BYTE_DTYPES and z.shape[0] == self._sizes[0] == g.num_nodes:
            # The caller's array read in place by the native decoder, the answer written into
            # the array returned.
            pred = np.empty(g.num_fault_ids, dtype=np.uint8)
            zz = z.view(np.uint8) if z.dtype == np.bool_ else z
            weight = fast(zz if zz.flags.c_contiguous else np.ascontiguousarray(zz), pred, enable_correlations)
            return (pred, weight) if return_weight else pred
        out, weight = g.decode(self._events(z), bool(enable_correlations))
        pred = np.frombuffer(out, dtype=np.uint8).copy()
        return (pred, weight) if return_weight else pred

    def decode_batch(
        self,
        shots: np.ndarray,
        *,
        return_weights: bool = False,
        bit_packed_shots: bool = False,
        bit_packed_predictions: bool = False,
        enable_correlations: bool = False,
    ):
        """Predictions for a batch: uint8 ``[num_shots, num_fault_ids]`` (bit-packed
        ``[num_shots, ceil(num_fault_ids/8)]`` with ``bit_packed_predictions``), and with
        ``return_weights`` a float64 array of the solutions' weights."""
        g = self._graph()
        shots = np.asarray(shots)
        if bit_packed_shots and shots.dtype != np.uint8:
            raise ValueError(f"bit-packed shots must have dtype uint8, got {shots.dtype}")
        if shots.dtype == np.bool_:
            shots = shots.view(np.uint8)  # the same bytes: no copy
        elif shots.dtype != np.uint8:
            shots = _syndrome_u8(shots)  # the rule decode() reads a syndrome by
        if shots.ndim != 2:
            raise ValueError(f"`shots` must be a 2D array, got shape {shots.shape}")
        nodes = g.num_nodes
        nd, nn = self._sizes
        if bit_packed_shots:
            width = shots.shape[1]
            lo, hi = (nd + 7) // 8, (nn + 7) // 8
            if not lo <= width <= hi:
                raise ValueError(f"bit-packed shots have {width} bytes per shot: expected ceil(num_detectors/8) = {lo}")
        elif not nd <= shots.shape[1] <= nn:
            raise ValueError(f"shots have {shots.shape[1]} columns: expected num_detectors = {nd}")
        narrow = shots.shape[1] < ((nodes + 7) // 8 if bit_packed_shots else nodes)
        if self._boundary or narrow:
            # Boundary nodes' events dropped, records widened to the graph's nodes.
            bits = np.unpackbits(shots, axis=1, bitorder="little") if bit_packed_shots else shots != 0
            bits = np.array(bits[:, :nodes], dtype=np.uint8)
            for b in self._boundary:
                if b < bits.shape[1]:
                    bits[:, b] = 0
            shots = np.pad(bits, ((0, 0), (0, nodes - bits.shape[1])))
            bit_packed_shots = False
        data = np.ascontiguousarray(shots)  # no copy when the caller's array is already so
        n = data.shape[0]
        fast = getattr(g, "decode_batch_into", None)
        if fast is not None:
            # The shots read in place and the answers written into the arrays returned, the
            # whole batch in one native call with the interpreter released.
            pred = np.empty((n, g.num_fault_ids), dtype=np.uint8)
            weights = np.empty(n, dtype=np.float64) if return_weights else None
            fast(data, n, data.shape[1], bool(bit_packed_shots), pred, weights, bool(enable_correlations))
        else:  # _EmptyGraph
            out, w = g.decode_batch(data.tobytes() if data.size else b"", n, data.shape[1],
                                    bool(bit_packed_shots), bool(enable_correlations))
            pred = np.frombuffer(out, dtype=np.uint8).reshape(n, g.num_fault_ids).copy()
            weights = np.asarray(w, dtype=np.float64)
        if bit_packed_predictions:
            pred = np.packbits(pred, axis=1, bitorder="little")
        return (pred, weights) if return_weights else pred

    def decode_to_edges_array(self, syndrome: Any, *, enable_correlations: bool = False) -> np.ndarray:
        """The correction's edges as an int64 array ``[num_edges, 2]`` of detector pairs, ``-1``
        for the boundary (always in the second column)."""
        pairs = self._graph().decode_to_edges(self._events(syndrome), bool(enable_correlations))
        return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def _not_offered(name: str):
    def method(self, *args: Any, **kwargs: Any):
        raise _unsupported(f"Matching.{name}")

    method.__name__ = name
    method.__doc__ = f"Not supported: raises ``NotImplementedError`` (PyMatching's ``{name}``)."
    return method


for _name in (
    "add_noise", "draw", "decode_to_matched_dets_array", "decode_to_matched_dets_dict", "has_edge",
    "has_boundary_edge", "get_edge_data", "get_boundary_edge_data", "set_boundary_nodes", "to_networkx",
    "to_retworkx", "to_rustworkx", "load_from_networkx", "load_from_retworkx", "load_from_rustworkx",
):
    setattr(Matching, _name, _not_offered(_name))


def _from_networkx(*args: Any, **kwargs: Any) -> Matching:
    """Not supported: raises ``NotImplementedError`` (PyMatching's ``from_networkx``)."""
    raise _unsupported("Matching.from_networkx")


Matching.from_networkx = staticmethod(_from_networkx)  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------
# BpOsdDecoder, BpDecoder (ldpc 2.4)
# ---------------------------------------------------------------------------------------------


def _osd_method(method: Any) -> str:
    m = str(method).lower()
    if m in ("osd_0", "0", "osd0"):
        return "osd0"
    if m in ("osd_cs", "1", "cs", "combination_sweep"):
        return "osd_cs"
    if m in ("off", "osd_off", "deactivated", "-1"):
        return "off"
    if m in ("osd_e", "e", "exhaustive"):
        raise _unsupported("osd_method='OSD_E' (exhaustive OSD)", "use 'OSD_CS'")
    raise ValueError(f"ERROR: OSD method '{method}' invalid. Please choose from the following methods: "
                     "'OSD_0', 'OSD_E' or 'OSD_CS'.")


def _bp_method(value: Any) -> str:
    v = str(value).lower()
    if v in ("prod_sum", "product_sum", "ps", "0", "prod sum"):
        return "product_sum"
    if v in ("min_sum", "minimum_sum", "ms", "1", "minimum sum", "min sum"):
        return "minimum_sum"
    raise ValueError(f"BP method '{value}' is invalid. Please choose from the following methods: "
                     "'product_sum', 'minimum_sum'")


def _schedule(value: Any) -> str:
    v = str(value).lower()
    if v in ("parallel", "p", "0"):
        return "parallel"
    if v in ("serial", "s", "1"):
        return "serial"
    if v in ("serial_relative", "sr", "2"):
        raise _unsupported("schedule='serial_relative'")
    raise ValueError(f"The BP schedule method '{value}' is invalid. Please choose from the following methods: "
                     "'parallel', 'serial'")


#: ldpc 2.4's effective default check-node rule: its signature says 'minimum_sum', but a
#: decoder built without ``bp_method`` runs product-sum (the Cython base class reads the
#: keyword with default 0, product-sum). The drop-in follows what ldpc does.
_LDPC_DEFAULT_BP_METHOD = "product_sum"


#: The probability a channel entry of 0 is run with: ldpc takes 0 (an infinite prior, the bit
#: never flips); the native decoder takes probabilities in (0, ½), so 0 runs as 1e-300, a prior
#: log-likelihood ratio of 690.8, which no message of a decode outweighs.
_P_ZERO = 1e-300


class _BpBase:
    """The shared half of :class:`BpOsdDecoder` and :class:`BpDecoder`.

    ldpc lets a user change a built decoder's settings (``error_rate``, ``error_channel``,
    ``max_iter``, ``bp_method``, ``schedule``, ``serial_schedule_order``, ``ms_scaling_factor``,
    ...): each setter here checks the value as ldpc does and rebuilds the native decoder (one
    pass over the check matrix) before the next decode. A serial order other than ``0 .. n-1``
    is run as the native serial schedule (bits in column order) on the matrix's columns
    permuted into that order, the outputs permuted back.
    """

    _osd = False

    def __init__(
        self,
        pcm: Any,
        error_rate: float | None = None,
        error_channel: Any = None,
        max_iter: int = 0,
        bp_method: str = _LDPC_DEFAULT_BP_METHOD,
        ms_scaling_factor: float = 1.0,
        schedule: str = "parallel",
        omp_thread_count: int = 1,
        random_schedule_seed: int = 0,
        serial_schedule_order: Any = None,
        osd_method: Any = 0,
        osd_order: int = 0,
        input_vector_type: str = "auto",
        random_serial_schedule: bool = False,
        osd_init: str = "soft",
        osd_on_converged: bool = False,
        **kwargs: Any,
    ):
        channel_probs = kwargs.pop("channel_probs", None)  # ldpc v1's name, as ldpc 2 accepts it
        for k in kwargs:
            raise ValueError(f"Unknown parameter '{k}' passed to the {type(self).__name__} constructor.")
        if channel_probs is not None and error_channel is None and len(channel_probs) and channel_probs[0] is not None:
            error_channel = channel_probs
        if not self._osd and (osd_init != "soft" or osd_on_converged):
            raise ValueError(f"osd_init and osd_on_converged are BpOsdDecoder's; {type(self).__name__} runs no OSD")
        if input_vector_type not in ("auto", "syndrome", "received_vector"):
            raise ValueError(f"The input vector type '{input_vector_type}' is invalid. Please choose from: "
                             "'input_vector_type=syndrome', 'input_vector_type=received_vector'")
        if input_vector_type == "received_vector":
            raise _unsupported("input_vector_type='received_vector'")
        if not (isinstance(pcm, np.ndarray) or _is_sparse(pcm)):
            raise TypeError(f"The input matrix is of an invalid type. Please input a np.ndarray or "
                            f"scipy.sparse.spmatrix object, not {type(pcm)}")
        for name, value in (("max_iter", max_iter), ("random_schedule_seed", random_schedule_seed)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{name} must be an int, not {type(value).__name__}")
        h = _check_matrix(pcm, "pcm")
        self._h = h
        self._m, self._n = h.shape
        self._native = None
        # The settings, each set through its ldpc-shaped setter (checked there).
        self.max_iter = max_iter
        self.bp_method = bp_method
        self.ms_scaling_factor = ms_scaling_factor
        self.schedule = schedule
        self.omp_thread_count = omp_thread_count
        self.random_schedule_seed = random_schedule_seed
        self.serial_schedule_order = serial_schedule_order
        self.random_serial_schedule = random_serial_schedule
        if error_channel is not None:
            self.error_channel = error_channel
        elif error_rate is not None:
            self.error_rate = error_rate
        else:
            raise ValueError("Please specify the error channel. Either: 1) error_rate: float or 2) error_channel: "
                             "list of floats of length equal to the block length of the code.")
        method = _osd_method(osd_method) if self._osd else "off"
        if self._osd and method == "osd0" and int(osd_order) != 0:
            raise ValueError(f"ERROR: OSD order '{osd_order}' invalid. The 'osd_method' is set to 'OSD_0'. "
                             "The osd order must therefore be set to 0.")
        self._osd_method = method
        self._osd_order = int(osd_order)
        self._osd_extra = {"osd_init": osd_init, "osd_on_converged": int(bool(osd_on_converged))}
        self._input_type = input_vector_type
        self._converge = False
        self._iter = 0
        self._decoding = np.zeros(self._n, dtype=np.uint8)
        self._build()

    # -- the native decoder ----------------------------------------------------------------

    def _build(self) -> None:
        """(Re)builds the native decoder from the settings in force."""
        bp = {"bp_method": self._bp_method, "schedule": self._schedule,
              "max_iter": self._max_iter, "ms_scaling_factor": self._ms}
        if self._osd:
            bp.update({"osd_method": self._osd_method, "osd_order": self._osd_order, **self._osd_extra})
        perm = self._perm()
        h = self._h if perm is None else self._h[:, perm]
        channel = None
        if self._channel is not None:
            ch = self._channel if perm is None else self._channel[perm]
            channel = np.where(ch == 0.0, _P_ZERO, ch).tolist()
        rows, cols, indptr, indices = _csc_parts(h)
        rate = _P_ZERO if self._rate == 0.0 else self._rate
        self._native = _native.CheckBpOsd(rows, cols, indptr, indices, rate, channel,
                                          _settings("bposd", bp), self._osd)
        self._native_perm = perm
        self._inverse = None if perm is None else np.argsort(perm)

    def _perm(self) -> np.ndarray | None:
        """The column order the native decoder is built in: the serial order when it is not
        the identity (and the schedule is serial), else None."""
        if self._schedule != "serial" or self._order is None:
            return None
        if np.array_equal(self._order, np.arange(self._n)):
            return None
        return self._order

    def _rebuild(self) -> None:
        if getattr(self, "_native", None) is not None:
            self._build()

    def _unpermute(self, v: np.ndarray) -> np.ndarray:
        """A native per-bit vector (or ``[shots, bits]`` batch) in the matrix's column order."""
        return v if self._inverse is None else v[..., self._inverse]

    # -- ldpc's properties -----------------------------------------------------------------

    check_count = property(lambda self: self._m, doc="Checks (syndrome bits).")
    bit_count = property(lambda self: self._n, doc="Bits (the code's length).")
    converge = property(lambda self: self._converge, doc="Whether BP's hard decision met the last syndrome.")
    iter = property(lambda self: self._iter, doc="BP iterations of the last decode.")
    decoding = property(lambda self: self._decoding.copy(), doc="The last decode's output.")
    input_vector_type = property(lambda self: self._input_type, doc="'syndrome' (or 'auto').")

    @property
    def max_iter(self) -> int:
        """The iteration limit in force (the code's length when set to 0)."""
        return self._max_iter if self._max_iter else self._n

    @max_iter.setter
    def max_iter(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ValueError("max_iter input parameter is invalid. This must be specified as a positive int.")
        if value < 0:
            raise ValueError(f"max_iter input parameter must be a positive int. Not {value}.")
        self._max_iter = int(value)
        self._rebuild()

    @property
    def bp_method(self) -> str:
        """'minimum_sum' or 'product_sum'."""
        return self._bp_method

    @bp_method.setter
    def bp_method(self, value: Any) -> None:
        self._bp_method = _bp_method(value)
        self._rebuild()

    @property
    def schedule(self) -> str:
        """'parallel' or 'serial'."""
        return self._schedule

    @schedule.setter
    def schedule(self, value: Any) -> None:
        self._schedule = _schedule(value)
        self._rebuild()

    @property
    def ms_scaling_factor(self) -> float:
        """The min-sum scaling factor."""
        return self._ms

    @ms_scaling_factor.setter
    def ms_scaling_factor(self, value: float) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError("The ms_scaling factor must be specified as a float")
        self._ms = float(value)
        self._rebuild()

    @property
    def omp_thread_count(self) -> int:
        """Threads of :meth:`decode_batch`."""
        return self._omp

    @omp_thread_count.setter
    def omp_thread_count(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise TypeError("The omp_thread_count must be specified as a positive integer.")
        self._omp = int(value)

    @property
    def random_schedule_seed(self) -> int:
        """The seed of the random serial schedule (numpy's generator, not ldpc's)."""
        return self._seed

    @random_schedule_seed.setter
    def random_schedule_seed(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < -2:
            raise ValueError("The value of random_schedule_seed must be a positive integer. Set as -1 to disable "
                             "to the random schedule. Set as 0 to use the system clock.")
        self._seed = int(value)
        self._rng = np.random.default_rng(max(self._seed, 0))

    @property
    def serial_schedule_order(self) -> np.ndarray:
        """The order the serial schedule visits the bits in (``0 .. n-1`` unless set)."""
        return (np.arange(self._n) if self._order is None else self._order).copy()

    @serial_schedule_order.setter
    def serial_schedule_order(self, value: Any) -> None:
        if value is None:
            self._order = None
        else:
            if len(value) != self._n:
                raise ValueError("Input error. The `serial_schedule_order` input parameter must have length equal "
                                 "to the length of the code.")
            order = np.asarray(value)
            if order.dtype.kind not in "iu" or (order.size and (order.min() < 0 or order.max() >= self._n)):
                raise ValueError(f"serial_schedule_order: every entry must be an integer in 0 .. {self._n - 1}")
            if np.unique(order).size != self._n:
                raise ValueError("serial_schedule_order must visit every bit once (a permutation of 0 .. n-1)")
            self._order = order.astype(np.int64)
        self._random_serial = False
        self._rebuild()

    @property
    def random_serial_schedule(self) -> bool:
        """Whether each decode draws a new serial order (from ``random_schedule_seed``)."""
        return self._random_serial

    @random_serial_schedule.setter
    def random_serial_schedule(self, value: bool) -> None:
        self._random_serial = bool(value)

    @property
    def error_rate(self) -> np.ndarray:
        """The per-bit error probabilities (as ldpc: the channel, whichever was given)."""
        return self.error_channel

    @error_rate.setter
    def error_rate(self, value: float | None) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValueError("The `error_rate` parameter must be specified as a single float value.")
        self._rate, self._channel = float(value), None
        self._rebuild()

    @property
    def error_channel(self) -> np.ndarray:
        """The per-bit error probabilities."""
        if self._channel is None:
            return np.full(self._n, self._rate, dtype=np.float64)
        return self._channel.copy()

    @error_channel.setter
    def error_channel(self, value: Any) -> None:
        if value is None:
            return
        if len(value) != self._n:
            raise ValueError(f"The error channel vector must have length {self._n}, not {len(value)}.")
        ch = np.array(value, dtype=np.float64)
        if ch.shape != (self._n,):
            raise ValueError(f"The error channel vector must have length {self._n}, not {ch.size}.")
        self._channel, self._rate = ch, float(ch[0]) if self._n else 0.01
        self._rebuild()

    channel_probs = error_channel

    def update_channel_probs(self, value: Any) -> None:
        """Sets :attr:`error_channel` (ldpc's name)."""
        self.error_channel = value

    @property
    def log_prob_ratios(self) -> np.ndarray:
        """BP's soft output of the last decode, ``ln(P(0)/P(1))`` per bit."""
        return self._unpermute(np.array(self._native.log_prob_ratios(), dtype=np.float64))

    # -- decoding --------------------------------------------------------------------------

    def _syndrome(self, syndrome: Any) -> bytes:
        s = np.asarray(syndrome)
        m, n = self._m, self._n
        if s.ndim != 1:
            raise ValueError(f"The input_vector must have length {m} (for syndrome decoding). Not shape {s.shape}.")
        if s.shape[0] != m:
            if s.shape[0] == n and self._input_type == "auto":
                raise _unsupported("decoding a received vector (input of length n)")
            raise ValueError(f"The syndrome must have length {m}. Not {s.shape[0]}.")
        return (s != 0).astype(np.uint8).tobytes()

    def _next_random_order(self) -> None:
        """A random serial schedule: a fresh order before each decode."""
        if self._random_serial and self._schedule == "serial":
            self._order = self._rng.permutation(self._n)
            self._build()

    def decode(self, syndrome: Any) -> np.ndarray:
        """The correction of ``syndrome`` (uint8, one per bit)."""
        data = self._syndrome(syndrome)
        self._next_random_order()
        out, self._converge, self._iter, _osd = self._native.decode(data)
        self._decoding = self._unpermute(np.frombuffer(out, dtype=np.uint8)).copy()
        return self._decoding.copy()

    def decode_batch(self, syndromes: Any) -> np.ndarray:
        """An extension (ldpc has none): the corrections of a batch of syndromes, uint8
        ``[shots, bits]``, on ``omp_thread_count`` threads."""
        s = np.asarray(syndromes)
        if s.ndim != 2 or s.shape[1] != self._m:
            raise ValueError(f"syndromes of shape {s.shape}: expected [shots, {self._m}]")
        if self._random_serial and self._schedule == "serial":
            raise _unsupported("decode_batch with random_serial_schedule=True", "decode one syndrome at a time")
        data = np.ascontiguousarray(s != 0, dtype=np.uint8)
        out = self._native.decode_batch(data.tobytes(), s.shape[0], self._omp)
        return self._unpermute(np.frombuffer(out, dtype=np.uint8).reshape(s.shape[0], self._n)).copy()


class BpOsdDecoder(_BpBase):
    """BP+OSD as ldpc 2.4's ``ldpc.BpOsdDecoder``: BP (min-sum or product-sum, parallel or
    serial, in ``serial_schedule_order`` or a random order per decode), then OSD-0 or OSD-CS of
    order ``osd_order`` when BP does not converge; its settings can be changed after it is built,
    as ldpc's. Not supported (``NotImplementedError``): ``osd_method='OSD_E'``,
    ``schedule='serial_relative'``, ``input_vector_type='received_vector'``.
    Two backline-only keywords (not ldpc's): ``osd_init`` (``'soft'``, the default: BP's last
    soft output; ``'min_llr'``: each bit's least LLR over its prior and BP's iterations, NVIDIA's
    ordering) and ``osd_on_converged`` (``True``: run OSD on converged shots too)."""

    _osd = True

    def __init__(
        self,
        pcm: Any,
        error_rate: float | None = None,
        error_channel: Any = None,
        max_iter: int = 0,
        bp_method: str = _LDPC_DEFAULT_BP_METHOD,
        ms_scaling_factor: float = 1.0,
        schedule: str = "parallel",
        omp_thread_count: int = 1,
        random_schedule_seed: int = 0,
        serial_schedule_order: Any = None,
        osd_method: Any = 0,
        osd_order: int = 0,
        input_vector_type: str = "syndrome",
        **kwargs: Any,
    ):
        super().__init__(pcm, error_rate, error_channel, max_iter, bp_method, ms_scaling_factor, schedule,
                         omp_thread_count, random_schedule_seed, serial_schedule_order, osd_method, osd_order,
                         input_vector_type, **kwargs)
        self._bp = np.zeros(self.bit_count, dtype=np.uint8)

    def decode(self, syndrome: Any) -> np.ndarray:
        out = super().decode(syndrome)
        self._bp = self._unpermute(np.frombuffer(self._native.bp_decoding(), dtype=np.uint8)).copy()
        return out

    @property
    def osd_method(self) -> str | None:
        """'OSD_0', 'OSD_CS' or None (off)."""
        return {"osd0": "OSD_0", "osd_cs": "OSD_CS"}.get(self._osd_method)

    @osd_method.setter
    def osd_method(self, value: Any) -> None:
        method = _osd_method(value)
        if method == "osd0":
            self._osd_order = 0
        self._osd_method = method
        self._build()

    @property
    def osd_order(self) -> int:
        """The OSD order in force."""
        return self._native.osd_order

    @osd_order.setter
    def osd_order(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"ERROR: OSD order '{value}' invalid. Please choose a positive integer.")
        if self._osd_method == "osd0" and value != 0:
            raise ValueError(f"ERROR: OSD order '{value}' invalid. The 'osd_method' is set to 'OSD_0'. "
                             "The osd order must therefore be set to 0.")
        self._osd_order = int(value)
        self._build()

    @property
    def bp_decoding(self) -> np.ndarray:
        """BP's hard decision of the last decode."""
        return self._bp.copy()

    @property
    def osdw_decoding(self) -> np.ndarray:
        """The last decode's output (BP's when it converged, OSD's otherwise)."""
        return self._decoding.copy()

    @property
    def osd0_decoding(self) -> np.ndarray:
        """OSD-0's output: the last output with ``osd_method='OSD_0'``."""
        if self._osd_method != "osd0":
            raise _unsupported("osd0_decoding with osd_method='OSD_CS'")
        return self._decoding.copy()


class BpDecoder(_BpBase):
    """Belief propagation as ldpc 2.4's ``ldpc.BpDecoder`` (no OSD)."""

    def __init__(
        self,
        pcm: Any,
        error_rate: float | None = None,
        error_channel: Any = None,
        max_iter: int = 0,
        bp_method: str = _LDPC_DEFAULT_BP_METHOD,
        ms_scaling_factor: float = 1.0,
        schedule: str = "parallel",
        omp_thread_count: int = 1,
        random_schedule_seed: int = 0,
        serial_schedule_order: Any = None,
        input_vector_type: str = "auto",
        random_serial_schedule: bool = False,
        **kwargs: Any,
    ):
        super().__init__(pcm, error_rate, error_channel, max_iter, bp_method, ms_scaling_factor, schedule,
                         omp_thread_count, random_schedule_seed, serial_schedule_order, 0, 0,
                         input_vector_type, random_serial_schedule, **kwargs)


# ---------------------------------------------------------------------------------------------
# Relay-BP (relay-bp 0.2.2)
# ---------------------------------------------------------------------------------------------


class DecodeResult:
    """What one decode did (relay-bp's ``DecodeResult``): ``decoding``, ``decoded_detectors``,
    ``success``, ``iterations`` (all legs' together, or the first leg's when it alone decided,
    as relay-bp counts), ``max_iter`` (the iteration limit of the leg whose decision is the
    answer: ``pre_iter`` for the first leg, ``set_max_iter`` for a relay leg, ``max_iter`` for
    the min-sum decoders) and ``decoding_quality`` (the sum of the flipped errors' log prior
    ratios ``ln((1 - p)/p)``)."""

    def __init__(self, decoding: np.ndarray, decoded_detectors: np.ndarray, success: bool, iterations: int,
                 max_iter: int, decoding_quality: float = 0.0):
        self.decoding = decoding
        self.decoded_detectors = decoded_detectors
        self.success = success
        self.iterations = iterations
        self.max_iter = max_iter
        self.decoding_quality = decoding_quality

    @property
    def posterior_ratios(self) -> np.ndarray:
        raise _unsupported("DecodeResult.posterior_ratios")


def _detectors(d: Any, m: int, ndim: int) -> np.ndarray:
    if not isinstance(d, np.ndarray) or d.dtype != np.uint8:
        raise TypeError(f"detectors: expected a numpy.ndarray of dtype uint8, got "
                        f"{type(d).__name__}{' of dtype ' + str(d.dtype) if isinstance(d, np.ndarray) else ''}")
    if d.ndim != ndim or d.shape[-1] != m:
        want = f"[{m}]" if ndim == 1 else f"[shots, {m}]"
        raise ValueError(f"detectors of shape {d.shape}: expected {want}")
    return np.ascontiguousarray(d != 0, dtype=np.uint8)


class _RelayBase:
    """The shared half of the relay-bp-shaped decoders: one native Relay-BP decoder (its
    32-bit float kernel) with the relay-bp settings given."""

    def _setup(self, check_matrix: Any, error_priors: Any, settings: dict[str, Any]) -> None:
        if not isinstance(error_priors, np.ndarray) or error_priors.dtype != np.float64:
            raise TypeError("error_priors: expected a numpy.ndarray of dtype float64")
        h = _check_matrix(check_matrix, "check_matrix")
        if error_priors.shape != (h.shape[1],):
            raise ValueError(f"error_priors of shape {error_priors.shape}: expected ({h.shape[1]},)")
        rows, cols, indptr, indices = _csc_parts(h)
        self._h = h
        with np.errstate(divide="ignore", invalid="ignore"):
            self._llr = np.log((1.0 - error_priors) / error_priors)
        self._native = _native.CheckRelay(rows, cols, indptr, indices, error_priors.tolist(),
                                          _settings("relay-bp", settings))

    @property
    def check_matrix(self):
        return self._h

    def _leg_limit(self, leg: int) -> int:
        raise NotImplementedError  # pragma: no cover - each subclass says

    def _result(self, dec: np.ndarray, ok: bool, iters: int, leg: int) -> DecodeResult:
        det = (self._h @ dec.astype(np.int64)) % 2
        quality = float(self._llr[dec != 0].sum())
        return DecodeResult(dec, det.astype(np.uint8), bool(ok), int(iters), self._leg_limit(leg), quality)

    def decode(self, detectors: np.ndarray) -> np.ndarray:
        """The decoding (uint8, one per error) of one detector vector (uint8)."""
        out, _ok, _it, _leg = self._native.decode(_detectors(detectors, self._native.checks, 1).tobytes())
        return np.frombuffer(out, dtype=np.uint8).copy()

    def decode_detailed(self, detectors: np.ndarray) -> DecodeResult:
        """The decoding with what the decode did."""
        out, ok, it, leg = self._native.decode(_detectors(detectors, self._native.checks, 1).tobytes())
        return self._result(np.frombuffer(out, dtype=np.uint8).copy(), ok, it, leg)

    def _batch(self, detectors: np.ndarray, threads: int, flags: bool) -> np.ndarray:
        d = _detectors(detectors, self._native.checks, 2)
        out = self._native.decode_batch(d.tobytes(), d.shape[0], threads, flags)
        return np.frombuffer(out, dtype=np.uint8).reshape(d.shape[0], self._native.bits + flags).copy()

    def decode_batch(self, detectors: np.ndarray) -> np.ndarray:
        """Decodings ``[shots, errors]`` (uint8) of a batch ``[shots, detectors]`` (uint8)."""
        return self._batch(detectors, 1, False)

    def par_decode_batch(self, detectors: np.ndarray) -> np.ndarray:
        """:meth:`decode_batch` on every core."""
        return self._batch(detectors, 0, False)

    def decode_detailed_batch(self, detectors: np.ndarray) -> list[DecodeResult]:
        """:meth:`decode_detailed` for each shot of a batch."""
        d = _detectors(detectors, self._native.checks, 2)
        return [self.decode_detailed(row) for row in d]

    def par_decode_detailed_batch(self, detectors: np.ndarray) -> list[DecodeResult]:
        """:meth:`decode_detailed_batch` (one thread here)."""
        return self.decode_detailed_batch(detectors)


class RelayDecoderF32(_RelayBase):
    """Relay-BP as relay-bp 0.2.2's ``RelayDecoderF32``: its arguments and defaults. Messages are
    32-bit floats (so :class:`RelayDecoderF64` is the same decoder). Not supported
    (``NotImplementedError``): ``data_scale_value``, ``max_data_value``, ``explicit_gammas``,
    ``stopping_criterion`` other than ``'nconv'``, ``logging=True``, ``posterior_ratios``. The
    relay legs' memory strengths are drawn per shot from ``seed`` (docs/decoders.md)."""

    def __init__(
        self,
        check_matrix: Any,
        error_priors: np.ndarray,
        alpha: float | None = None,
        alpha_iteration_scaling_factor: float = 1.0,
        gamma0: float | None = 0.1,
        data_scale_value: float | None = None,
        max_data_value: float | None = None,
        pre_iter: int = 80,
        num_sets: int = 300,
        set_max_iter: int = 60,
        gamma_dist_interval: tuple[float, float] = (-0.24, 0.66),
        explicit_gammas: Any = None,
        stop_nconv: int = 1,
        stopping_criterion: str = "nconv",
        logging: bool = False,
        seed: int = 0,
    ):
        for name, value in (("data_scale_value", data_scale_value), ("max_data_value", max_data_value),
                            ("explicit_gammas", explicit_gammas)):
            if value is not None:
                raise _unsupported(name)
        if stopping_criterion != "nconv":
            raise _unsupported(f"stopping_criterion={stopping_criterion!r}", "only 'nconv'")
        if logging:
            raise _unsupported("logging=True")
        self._pre_iter, self._set_max_iter = int(pre_iter), int(set_max_iter)
        self._setup(check_matrix, error_priors, {
            "gamma0": 0.0 if gamma0 is None else gamma0, "pre_iter": pre_iter, "num_sets": num_sets,
            "set_max_iter": set_max_iter, "gamma_dist_interval": tuple(gamma_dist_interval),
            "stop_nconv": stop_nconv, "alpha": alpha,
            "alpha_iteration_scaling_factor": alpha_iteration_scaling_factor, "seed": seed,
        })

    def _leg_limit(self, leg: int) -> int:
        return self._pre_iter if leg == 0 else self._set_max_iter


RelayDecoderF64 = RelayDecoderF32
RelayDecoder = RelayDecoderF32


class MinSumBPDecoderF32(_RelayBase):
    """Min-sum BP as relay-bp 0.2.2's ``MinSumBPDecoderF32`` (its arguments and defaults):
    Relay-BP's first leg alone (``max_iter`` iterations, memory strength ``gamma0``, none when
    None), on the same 32-bit float kernel as :class:`RelayDecoderF32`. The integer and
    fixed-point names (:class:`MinSumBPDecoderI8` … ``I64``, :class:`MinSumBPDecoderFixed`)
    check and keep their quantisation arguments (``data_scale_value``, ``max_data_value``,
    ``int_bits``, ``frac_bits``) but run this float kernel: their messages are not quantised
    (docs/decoders.md)."""

    _quantised = False

    def __init__(
        self,
        check_matrix: Any,
        error_priors: np.ndarray,
        max_iter: int = 200,
        alpha: float | None = None,
        alpha_iteration_scaling_factor: float = 1.0,
        gamma0: float | None = None,
        data_scale_value: float | None = None,
        max_data_value: float | None = None,
        int_bits: int | None = None,
        frac_bits: int | None = None,
    ):
        for name, value in (("data_scale_value", data_scale_value), ("max_data_value", max_data_value)):
            if value is not None and (not self._quantised or not float(value) > 0):
                raise _unsupported(name, "a float decoder's messages are not quantised") if not self._quantised \
                    else ValueError(f"{name} must be positive, got {value!r}")
        for name, value in (("int_bits", int_bits), ("frac_bits", frac_bits)):
            if value is not None and (type(self) is not MinSumBPDecoderFixed or int(value) < 0):
                raise _unsupported(name, "only MinSumBPDecoderFixed has fixed-point bits") \
                    if type(self) is not MinSumBPDecoderFixed else ValueError(f"{name} must be >= 0, got {value!r}")
        self.data_scale_value, self.max_data_value = data_scale_value, max_data_value
        self.int_bits, self.frac_bits = int_bits, frac_bits
        self._max_iter = int(max_iter)
        self._setup(check_matrix, error_priors, {
            "gamma0": 0.0 if gamma0 is None else gamma0, "pre_iter": max_iter, "num_sets": 0,
            "stop_nconv": 1, "alpha": alpha, "alpha_iteration_scaling_factor": alpha_iteration_scaling_factor,
        })

    def _leg_limit(self, leg: int) -> int:
        return self._max_iter


MinSumBPDecoderF64 = MinSumBPDecoderF32


class MinSumBPDecoderI8(MinSumBPDecoderF32):
    """relay-bp's ``MinSumBPDecoderI8``: :class:`MinSumBPDecoderF32`'s float kernel (messages not
    quantised; ``data_scale_value`` and ``max_data_value`` checked and kept)."""

    _quantised = True


class MinSumBPDecoderI16(MinSumBPDecoderI8):
    """relay-bp's ``MinSumBPDecoderI16``: as :class:`MinSumBPDecoderI8`."""


class MinSumBPDecoderI32(MinSumBPDecoderI8):
    """relay-bp's ``MinSumBPDecoderI32``: as :class:`MinSumBPDecoderI8`."""


class MinSumBPDecoderI64(MinSumBPDecoderI8):
    """relay-bp's ``MinSumBPDecoderI64``: as :class:`MinSumBPDecoderI8`."""


class MinSumBPDecoderFixed(MinSumBPDecoderF32):
    """relay-bp's ``MinSumBPDecoderFixed``: :class:`MinSumBPDecoderF32`'s float kernel (messages
    not quantised; ``int_bits`` and ``frac_bits`` checked and kept)."""


class ObservableDecodeResult:
    """What one observable decode did (relay-bp's ``ObservableDecodeResult``). From errors
    (``from_errors_…``): ``error_detected`` (the decoded observables differ from the errors'),
    ``error_mismatch_detected`` (the decoding differs from the errors), ``unconverged_no_error``,
    ``better_decoding_quality_error``, ``worse_decoding_quality_error``; from detectors these are
    None."""

    def __init__(self, observables: np.ndarray, converged: bool, iterations: int,
                 truth: dict[str, bool] | None = None, physical_decode_result: DecodeResult | None = None):
        self.observables = observables
        self.converged = converged
        self.iterations = iterations
        self.physical_decode_result = physical_decode_result
        t = truth or {}
        for k in ("error_detected", "error_mismatch_detected", "unconverged_no_error",
                  "better_decoding_quality_error", "worse_decoding_quality_error"):
            setattr(self, k, t.get(k))


class ObservableDecoderRunner:
    """relay-bp's ``ObservableDecoderRunner``: a decoder of errors (:class:`RelayDecoderF32` or a
    min-sum decoder) and the observable matrix (observables × errors); decodes detectors (or
    the detectors of given errors) into observables. ``parallel=True`` decodes a batch on every
    core; ``progress_bar`` draws no bar here."""

    def __init__(self, decoder: _RelayBase, observable_error_matrix: Any, include_decode_result: bool = False):
        if not isinstance(decoder, _RelayBase):
            raise TypeError(f"decoder: expected a backline.decoders.RelayDecoderF32 or MinSumBPDecoder…, got "
                            f"{type(decoder).__name__}")
        self._d = decoder
        self._obs = _check_matrix(observable_error_matrix, "observable_error_matrix")
        if self._obs.shape[1] != decoder._native.bits:
            raise ValueError(f"observable_error_matrix has {self._obs.shape[1]} columns: the decoder has "
                             f"{decoder._native.bits} errors")
        self._include = include_decode_result

    def compute_observables(self, errors: np.ndarray) -> np.ndarray:
        """The observables ``errors`` flip (uint8)."""
        return ((self._obs @ np.asarray(errors, dtype=np.int64)) % 2).astype(np.uint8)

    def decode(self, detectors: np.ndarray) -> np.ndarray:
        """The errors' decoding of one shot."""
        return self._d.decode(detectors)

    def decode_detailed(self, detectors: np.ndarray) -> DecodeResult:
        return self._d.decode_detailed(detectors)

    def decode_observables(self, detectors: np.ndarray) -> np.ndarray:
        """The observables the decoding of one shot flips (uint8)."""
        return self.compute_observables(self._d.decode(detectors))

    def decode_batch(self, detectors: np.ndarray, parallel: bool = False, progress_bar: bool = True,
                     leave_progress_bar_on_finish: bool = False) -> np.ndarray:
        return self._d._batch(detectors, 0 if parallel else 1, False)

    def decode_detailed_batch(self, detectors: np.ndarray, parallel: bool = False, progress_bar: bool = True,
                              leave_progress_bar_on_finish: bool = False) -> list[DecodeResult]:
        return self._d.decode_detailed_batch(detectors)

    def decode_observables_batch(self, detectors: np.ndarray, parallel: bool = False, progress_bar: bool = True,
                                 leave_progress_bar_on_finish: bool = False) -> np.ndarray:
        """Observables ``[shots, observables]`` (uint8) of a batch."""
        errors = self._d._batch(detectors, 0 if parallel else 1, False)
        return self._observables_of(errors)

    def _observables_of(self, errors: np.ndarray) -> np.ndarray:
        if not errors.shape[0]:
            return np.zeros((0, self._obs.shape[0]), dtype=np.uint8)
        return ((errors.astype(np.int64) @ self._obs.T.toarray().astype(np.int64)) % 2).astype(np.uint8)

    def _detectors_of(self, errors: Any, ndim: int) -> np.ndarray:
        e = np.asarray(errors)
        if e.ndim != ndim or e.shape[-1] != self._obs.shape[1]:
            raise ValueError(f"errors of shape {e.shape}: expected {'[' if ndim == 1 else '[shots, '}"
                             f"{self._obs.shape[1]}]")
        e = (e != 0).astype(np.int64)
        return ((e @ self._d._h.T.toarray().astype(np.int64)) % 2).astype(np.uint8) if ndim == 2 \
            else ((self._d._h @ e) % 2).astype(np.uint8)

    def decode_observables_detailed(self, detectors: np.ndarray) -> ObservableDecodeResult:
        r = self._d.decode_detailed(detectors)
        return ObservableDecodeResult(self.compute_observables(r.decoding), r.success, r.iterations, None,
                                      r if self._include else None)

    def decode_observables_detailed_batch(self, detectors: np.ndarray, parallel: bool = False,
                                          progress_bar: bool = True, leave_progress_bar_on_finish: bool = False):
        d = _detectors(detectors, self._d._native.checks, 2)
        return [self.decode_observables_detailed(row) for row in d]

    def from_errors_decode_observables(self, errors: np.ndarray) -> np.ndarray:
        """The observables the decoding of the detectors ``errors`` set flips (uint8)."""
        return self.compute_observables(self._d.decode(self._detectors_of(errors, 1)))

    def from_errors_decode_observables_batch(self, errors: np.ndarray, parallel: bool = False,
                                             progress_bar: bool = True,
                                             leave_progress_bar_on_finish: bool = False) -> np.ndarray:
        """:meth:`from_errors_decode_observables` for each row of ``errors``."""
        return self._observables_of(self._d._batch(self._detectors_of(errors, 2), 0 if parallel else 1, False))

    def from_errors_decode_observables_detailed(self, errors: np.ndarray) -> ObservableDecodeResult:
        """Decodes the detectors ``errors`` set and compares the answer with ``errors``."""
        e = (np.asarray(errors) != 0).astype(np.uint8)
        r = self._d.decode_detailed(self._detectors_of(e, 1))
        observables = self.compute_observables(e)
        detected = bool(np.any(observables != self.compute_observables(r.decoding)))
        better = r.decoding_quality < float(self._d._llr[e != 0].sum())
        truth = {
            "error_detected": detected,
            "error_mismatch_detected": bool(np.any(e != r.decoding)),
            "unconverged_no_error": not detected and not r.success,
            "better_decoding_quality_error": detected and better,
            "worse_decoding_quality_error": detected and not better,
        }
        return ObservableDecodeResult(observables, r.success, r.iterations, truth, r if self._include else None)

    def from_errors_decode_observables_detailed_batch(self, errors: np.ndarray, parallel: bool = False,
                                                      progress_bar: bool = True,
                                                      leave_progress_bar_on_finish: bool = False):
        """:meth:`from_errors_decode_observables_detailed` for each row of ``errors``."""
        e = np.asarray(errors)
        if e.ndim != 2:
            raise ValueError(f"errors of shape {e.shape}: expected [shots, {self._obs.shape[1]}]")
        return [self.from_errors_decode_observables_detailed(row) for row in e]


# ---------------------------------------------------------------------------------------------
# CompiledDecoder, compile_decoder_for_dem, sinter_decoders (Chromobius 1.1.1)
# ---------------------------------------------------------------------------------------------


class _ShotLengthError(ValueError, IndexError):
    """A single shot (a 1-D array) of the wrong number of bytes. Both a ``ValueError``, as every
    other refused input of :class:`CompiledDecoder`, and an ``IndexError``, what Chromobius
    raises for it, so that an ``except`` written for either catches it."""


def _chromobius_dets(dets: Any, num_detectors: int) -> tuple[np.ndarray, bool]:
    """``dets`` (Chromobius's input: bit-packed ``numpy.uint8``, 1-D one shot or 2-D shots ×
    bytes) as a C-contiguous 2-D array, and whether it was one shot. ``ValueError`` for what
    Chromobius refuses with one (not a ``numpy.uint8`` array, another number of dimensions,
    rows of the wrong width); :class:`_ShotLengthError` for one shot of the wrong length."""
    width = (num_detectors + 7) // 8
    layout = (f"bit-packed detection events, numpy.uint8 [shots, ceil(num_detectors/8)] = [shots, {width}] "
              f"or one shot [{width}] (np.packbits(..., bitorder='little') packs bools)")
    if not isinstance(dets, np.ndarray) or dets.dtype != np.uint8:
        got = f"dtype {dets.dtype}" if isinstance(dets, np.ndarray) else type(dets).__name__
        raise ValueError(f"detection events of {got}: expected {layout}; nothing is cast")
    if dets.ndim == 1:
        if dets.shape[0] != width:
            raise _ShotLengthError(f"one shot of {dets.shape[0]} bytes: expected {layout}")
        return np.ascontiguousarray(dets).reshape(1, width), True
    if dets.ndim != 2:
        raise ValueError(f"detection events of shape {_excerpt_text(str(dets.shape))}: expected {layout}")
    if dets.shape[1] != width:
        raise ValueError(f"detection events of shape {dets.shape}: expected {layout}")
    return np.ascontiguousarray(dets), False


def _excerpt_text(text: str) -> str:
    """At most 80 characters of ``text``, then ``…``."""
    return text if len(text) <= 80 else text[:80] + "…"


class CompiledDecoder:
    """Chromobius 1.1.1's ``CompiledDecoder``: the Möbius decoder of a colour-code model, built
    with :meth:`from_dem` (or :func:`compile_decoder_for_dem`), decoding bit-packed detection
    events into bit-packed observable flips in Rust with the interpreter released.

    The model is read as Chromobius reads it: each detector's 4th coordinate is its colour and
    basis (0, 1, 2 = red, green, blue X; 3, 4, 5 = red, green, blue Z; -1 = ignored). A model
    it cannot use raises :class:`~backline.errors.DetectorErrorModelError` (a ``ValueError``,
    as Chromobius's) naming the detector or the line: a detector with a bad or missing 4th
    coordinate, an error that does not split into one detector, two, or a rainbow triplet of
    one basis, an error of ``p = 1``, an observable past ``L63``. An error of ``p > 0.5`` is
    taken as flipped in advance.

    Where it differs from Chromobius: a model whose 4th coordinates name fewer than two colours
    (none at all, or sinter's post-selection flag) is decoded as a matchable code of one colour
    (Chromobius refuses it); zero shots, and shots of a model
    without detectors, decode (to no flips) where Chromobius refuses the empty array; padding
    bits past the last detector are ignored (Chromobius refuses a set one); it pickles (rebuilt
    from the model's text). A shot the model cannot explain (a detection event no error flips,
    a matching the colours cannot lift) raises ``ValueError`` naming the shot and detectors,
    as Chromobius raises ``ValueError``.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        raise TypeError(
            "backline.decoders.CompiledDecoder: no constructor; use CompiledDecoder.from_dem(dem) "
            "or compile_decoder_for_dem(dem)"
        )

    @classmethod
    def _from_text(cls, dem_text: str) -> CompiledDecoder:
        self = object.__new__(cls)
        self._dem_text = dem_text
        self._native = _native.MobiusDecoder(dem_text)
        self._num_detectors = int(self._native.num_detectors)
        self._num_observables = int(self._native.num_observables)
        return self

    @staticmethod
    def from_dem(dem: Any) -> CompiledDecoder:
        """The decoder of ``dem``, a ``stim.DetectorErrorModel`` annotated as Chromobius reads
        it. ``ValueError`` for anything else (a circuit, a model's text), as Chromobius;
        :class:`~backline.errors.DetectorErrorModelError` (a ``ValueError``) for a model it
        cannot use."""
        try:
            import stim
        except ImportError:  # pragma: no cover - stim is a dependency of the sinter front
            stim = None
        if stim is None or not isinstance(dem, stim.DetectorErrorModel):
            raise ValueError(
                f"dem must be a stim.DetectorErrorModel, got {type(dem).__name__} "
                "(a circuit's is circuit.detector_error_model())"
            )
        return CompiledDecoder._from_text(str(dem))

    def _decode(self, dets: Any) -> tuple[np.ndarray, np.ndarray, bool]:
        shots, single = _chromobius_dets(dets, self._num_detectors)
        n = shots.shape[0]
        out, weights = self._native.decode_batch(shots.tobytes(), n)
        obs = np.frombuffer(out, dtype=np.uint8).reshape(n, (self._num_observables + 7) // 8).copy()
        w = np.frombuffer(weights, dtype="<f8").astype(np.float32)
        return obs, w, single

    def predict_obs_flips_from_dets_bit_packed(self, dets: np.ndarray) -> np.ndarray:
        """Observable flips, bit-packed ``numpy.uint8``: ``[shots, ceil(num_obs/8)]`` for
        detection events ``[shots, ceil(num_dets/8)]``, ``[ceil(num_obs/8)]`` for one shot
        ``[ceil(num_dets/8)]``; bit ``k % 8`` of byte ``k // 8`` is observable ``k``."""
        obs, _w, single = self._decode(dets)
        return obs[0] if single else obs

    def predict_weighted_obs_flips_from_dets_bit_packed(self, dets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(obs, weights)``: the flips of :meth:`predict_obs_flips_from_dets_bit_packed` and
        each shot's matching weight as ``numpy.float32`` (``Σ ln((1 − p)/p)`` over the matched
        edges of the Möbius graph, before the lift; 0 without detection events): shape
        ``[shots]``, or ``()`` for one shot."""
        obs, w, single = self._decode(dets)
        if single:
            return obs[0], w.reshape(())
        return obs, w

    def __reduce__(self):
        return (CompiledDecoder._from_text, (self._dem_text,))

    def __repr__(self) -> str:
        return (f"backline.decoders.CompiledDecoder(<{self._num_detectors} detectors, "
                f"{self._num_observables} observables>)")


def compile_decoder_for_dem(dem: Any) -> CompiledDecoder:
    """Chromobius's ``compile_decoder_for_dem``: :meth:`CompiledDecoder.from_dem`."""
    return CompiledDecoder.from_dem(dem)


def sinter_decoders() -> dict[str, Any]:
    """Chromobius's ``sinter_decoders``: ``{"chromobius": <a sinter.Decoder>}`` for
    ``sinter.collect(custom_decoders=...)``, decoding with backline's Möbius decoder
    (:class:`backline.sinter.MobiusSinterDecoder`), under Chromobius's name so that
    ``decoders=["chromobius"]`` (``--decoders chromobius``) stays as it was. On the command line:
    ``--custom_decoders_module_function 'backline.decoders:sinter_decoders'``."""
    from .sinter import MobiusSinterDecoder

    return {"chromobius": MobiusSinterDecoder()}
