"""Annotated colour-code memory circuits, for testing and benchmarking colour-code decoders.

This module has one job: build ``stim.Circuit`` memory experiments on the triangular
(6.6.6) colour code whose detectors carry the colour/basis annotation that
Chromobius-style decoders read.  Every ``DETECTOR`` has the coordinates
``(x, y, t, c)``: ``(x, y)`` is the centre of its plaquette, ``t`` the round, and ``c``
encodes basis and colour: ``0, 1, 2`` = red, green, blue X checks and ``3, 4, 5`` = red,
green, blue Z checks.

Families (:data:`FAMILIES`), all with the logical observable in the chosen ``basis``:

``"phenom"``
    Phenomenological noise.  Each round depolarises every data qubit
    (``DEPOLARIZE1(p)``) and then measures every plaquette's X and Z operator with
    ``MPP`` whose results flip with probability ``p``.  The data are reset (noiselessly)
    at the start and measured (flip probability ``p``) at the end.

``"midout"``
    An ancilla-free circuit on a brick-wall embedding of the hexagonal lattice.  Each
    round folds the code state with three layers of CNOTs (one per edge class of the
    3-edge-colourable lattice), so that each plaquette's X or Z operator sits on a single
    qubit; those qubits are measured, reset and the fold is undone.  Rounds alternate the
    CNOT directions and which plaquettes give X and which give Z.  A few two-qubit "spur"
    plaquettes are added on the boundary so that every fold is clean.  One fault in the
    middle of a fold reaches several data qubits, so this family's circuit distance is
    ``distance // 2 + 1``, not ``distance``: that is the construction's known trade-off.

``"superdense"``
    Two ancillas per plaquette.  They are prepared as a Bell pair, one collects half of
    the plaquette's data qubits in each direction of CNOT, the other the other half, and
    the pair is un-entangled and read out: one ancilla gives the plaquette's X value, the
    other its Z value, in eight CNOT layers per round.

Both circuit-level families use uniform depolarising noise: ``DEPOLARIZE2(p)`` after each
two-qubit gate, ``X_ERROR(p)``/``Z_ERROR(p)`` after ``R``/``RX``, flip probability ``p`` on
every measurement, and ``DEPOLARIZE1(p)`` on each qubit idle during a layer.  Their first
round is fused with the initial data reset and their last round with the final data
measurement, so ``rounds`` counts the stabiliser measurement layers including those two.

No annotation is offered for stim's own ``color_code:memory_xyz`` circuits: they measure
in a basis that cycles X, Y, Z, so each detector spans three rounds, and Chromobius 1.1.1
rejects their error models (undecomposable errors, failed lifts) from distance 5 on.

Detectors are derived, not written by hand: each round's circuit is asked (with stim's
flow solver) which of its measurements reveal a plaquette operator's value on the way in
and which fix it on the way out; a detector compares consecutive values of the same
plaquette operator.  stim is an optional dependency: it is imported on first use.

Example::

    from backline.colour_circuits import colour_code_circuit
    circuit = colour_code_circuit("midout", distance=5, rounds=10, p=1e-3, basis="Z")
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import stim

__all__ = ["FAMILIES", "colour_code_circuit"]

#: The circuit families :func:`colour_code_circuit` builds.
FAMILIES: tuple[str, ...] = ("phenom", "midout", "superdense")

Coord = tuple[int, int]

# Fourth detector coordinate: colour (0 red, 1 green, 2 blue) plus 3 for Z checks.
_BASIS_OFFSET = {"X": 0, "Z": 3}


def _import_stim() -> Any:
    try:
        import stim
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "backline.colour_circuits needs the 'stim' package (pip install stim)"
        ) from exc
    return stim


# --------------------------------------------------------------------------------------
# Layouts


@dataclasses.dataclass(frozen=True)
class _Plaquette:
    """One face of the colour code.

    ``site`` is where the circuit reads the face out: for the midout circuit the data
    qubit onto which the fold gathers its value, for the superdense circuit the position
    of its X ancilla (the Z ancilla sits one step to the right).
    """

    qubits: tuple[Coord, ...]
    colour: int
    site: Coord | None = None

    @property
    def centre(self) -> tuple[float, float]:
        n = len(self.qubits)
        return (
            sum(q[0] for q in self.qubits) / n,
            sum(q[1] for q in self.qubits) / n,
        )


@dataclasses.dataclass(frozen=True)
class _Layout:
    data: tuple[Coord, ...]
    plaquettes: tuple[_Plaquette, ...]

    @functools.cached_property
    def data_set(self) -> frozenset[Coord]:
        return frozenset(self.data)


def _brickwall_triangle(distance: int, *, spurs: bool) -> _Layout:
    """The triangular colour code on a brick wall.

    Vertices are integer points ``(x, y)``.  Every vertex has vertical edges to
    ``(x, y ± 1)`` and a horizontal edge to ``(x + 1, y)`` when ``x + y`` is even (to
    ``(x - 1, y)`` otherwise), so the faces are the 2-wide, 3-tall rectangles whose top-left
    corner ``(x, y)`` has ``x + y`` even; a face's colour is ``y mod 3``.  Row 0 holds
    ``distance`` qubits and each row ``y`` spans ``ceil(y/3) <= x <= distance - 1 -
    floor((y + 1)/3)``, which cuts a triangle with one boundary of each colour.

    With ``spurs``, a vertical pair of qubits is hung outside the boundary every six rows
    (alternating right and left sides); the pair completes a boundary face to a hexagon and
    forms a weight-two face of its own.  The midout fold needs them.
    """
    last_row = 3 * (distance - 1) // 2

    def row_span(y: int) -> tuple[int, int]:
        return (y + 2) // 3, distance - 1 - (y + 1) // 3

    data = {(x, y) for y in range(last_row + 1) for x in range(row_span(y)[0], row_span(y)[1] + 1)}
    spur_pairs: list[frozenset[Coord]] = []
    if spurs:
        for y in range(last_row):
            lo, hi = row_span(y)
            if y % 6 == 2:
                x = hi + 1
            elif y % 6 == 4:
                x = lo - 1
            else:
                continue
            spur_pairs.append(frozenset({(x, y), (x, y + 1)}))
        assert len(spur_pairs) == (distance - 1) // 2
        for pair in spur_pairs:
            data |= pair

    plaquettes = []
    for y in range(-2, last_row + 1):
        for x in range(-1, distance + 1):
            if (x + y) % 2:
                continue
            face = [(x + dx, y + dy) for dy in range(3) for dx in range(2)]
            qubits = frozenset(q for q in face if q in data)
            is_spur = qubits in spur_pairs
            if len(qubits) < 4 and not is_spur:
                continue
            site: Coord | None = None
            if spurs:  # where the midout fold gathers the face's value
                if is_spur:
                    site = min(qubits, key=lambda q: q[1])  # the pair's upper qubit
                elif x % 2 == 0:
                    site = (x + 1, y)
                else:
                    site = (x, y + 2)
                assert site in qubits
            plaquettes.append(_Plaquette(qubits=tuple(sorted(qubits)), colour=y % 3, site=site))
    layout = _Layout(data=tuple(sorted(data)), plaquettes=tuple(plaquettes))
    _check_colour_code(layout, distance, extra=2 * len(spur_pairs))
    return layout


# Corners of a superdense hexagon around its X-ancilla site (x, y); the Z ancilla is at
# (x + 1, y).  Each ancilla owns the three corners on its side, listed top, side, bottom.
_LEFT_CORNERS: tuple[Coord, ...] = ((0, 1), (-1, 0), (0, -1))
_RIGHT_CORNERS: tuple[Coord, ...] = ((1, 1), (2, 0), (1, -1))


def _superdense_triangle(distance: int) -> _Layout:
    """The triangular colour code with room for two ancillas inside every face.

    Faces are flat hexagons of width 3 and height 2 on the integer grid; the two grid
    points inside a face host its ancillas.  Face sites ``(x, y)`` have ``x`` odd and
    ``y ≡ floor(x/2) (mod 2)`` and colour ``y mod 3``.  The data qubits are the hexagon
    corners inside the triangle with base ``0 <= x <= 2 * distance - 2`` on ``y = 0``
    and sides of slope ``±3/2``; faces that keep fewer than four corners are dropped.
    """
    width = 2 * distance - 1

    def inside(q: Coord) -> bool:
        x, y = q
        return 0 <= x < width and 0 <= y < width and 2 * y <= 3 * x and 2 * y <= 3 * (width - x)

    plaquettes = []
    for x in range(-1, width, 2):
        for y in range((x // 2) % 2, width, 2):
            corners = [(x + dx, y + dy) for dx, dy in _LEFT_CORNERS + _RIGHT_CORNERS]
            qubits = tuple(sorted(q for q in corners if inside(q)))
            if len(qubits) >= 4:
                plaquettes.append(_Plaquette(qubits=qubits, colour=y % 3, site=(x, y)))
    data = sorted({q for f in plaquettes for q in f.qubits})
    layout = _Layout(data=tuple(data), plaquettes=tuple(plaquettes))
    _check_colour_code(layout, distance, extra=0)
    return layout


def _check_colour_code(layout: _Layout, distance: int, *, extra: int) -> None:
    """Cheap structural checks: qubit and face counts, even overlaps, proper colouring."""
    n = (3 * distance * distance + 1) // 4 + extra
    assert len(layout.data) == n, (len(layout.data), n)
    assert len(layout.plaquettes) == (n - 1) // 2, (len(layout.plaquettes), n)
    sets = [frozenset(f.qubits) for f in layout.plaquettes]
    for i, a in enumerate(sets):
        for j in range(i + 1, len(sets)):
            shared = len(a & sets[j])
            assert shared % 2 == 0
            if shared:
                assert layout.plaquettes[i].colour != layout.plaquettes[j].colour


# --------------------------------------------------------------------------------------
# Chunks: a few layers of gates whose flows are solved together.


@dataclasses.dataclass(frozen=True)
class _Op:
    """One instruction of a layer.  ``targets`` are qubit positions; for ``MPP`` each
    target is a tuple of ``(pauli, position)`` factors; CX targets come in pairs."""

    name: str
    targets: tuple[Any, ...]


_Layer = tuple[_Op, ...]

_RESETS = {"R": "X_ERROR", "RX": "Z_ERROR"}
_MEASUREMENTS = {"M", "MX", "MPP"}
_TIME_REVERSE = {"R": "M", "RX": "MX", "M": "R", "MX": "RX"}


def _time_reversed(layers: Sequence[_Layer]) -> tuple[_Layer, ...]:
    """Run the layers backwards, turning resets into measurements in the same basis and
    vice versa (CNOTs are their own inverses)."""
    return tuple(
        tuple(_Op(_TIME_REVERSE.get(op.name, op.name), op.targets) for op in layer)
        for layer in reversed(layers)
    )


@dataclasses.dataclass(frozen=True)
class _Noise:
    """What noise the layers get.  Measurements always flip with probability ``p``;
    ``gates`` adds noise after resets and unitary gates; ``idle`` depolarises every qubit
    a layer leaves untouched."""

    p: float
    idle: bool
    gates: bool


class _CircuitWriter:
    """Appends layers to one ``stim.Circuit`` and keeps the measurement count."""

    def __init__(self, stim: Any, positions: Sequence[Coord], noise: _Noise) -> None:
        self.stim = stim
        self.index = {q: i for i, q in enumerate(positions)}
        self.noise = noise
        self.circuit = stim.Circuit()
        self.num_measurements = 0
        for q, i in self.index.items():
            self.circuit.append("QUBIT_COORDS", [i], [q[0], q[1]])

    def targets(self, op: _Op) -> list[Any]:
        if op.name == "MPP":
            out: list[Any] = []
            for product in op.targets:
                for k, (pauli, q) in enumerate(product):
                    if k:
                        out.append(self.stim.target_combiner())
                    out.append(self.stim.target_pauli(self.index[q], pauli))
            return out
        return [self.index[q] for q in op.targets]

    def append_layers(self, layers: Sequence[_Layer]) -> None:
        """Each layer is one time step: its gates, then their noise, then a TICK."""
        p = self.noise.p
        for layer in layers:
            touched: set[int] = set()
            after: list[tuple[str, list[int]]] = []
            for op in layer:
                if not op.targets:
                    continue
                targets = self.targets(op)
                if op.name == "DEPOLARIZE1":  # explicit (phenomenological) noise
                    if p > 0:
                        self.circuit.append("DEPOLARIZE1", targets, p)
                    continue
                if op.name in _MEASUREMENTS:
                    self.circuit.append(op.name, targets, [p] if p > 0 else [])
                    self.num_measurements += len(op.targets)
                else:
                    self.circuit.append(op.name, targets)
                if op.name == "MPP":
                    continue
                touched.update(targets)
                if op.name in _RESETS:
                    after.append((_RESETS[op.name], targets))
                elif op.name == "CX":
                    after.append(("DEPOLARIZE2", targets))
                elif op.name not in _MEASUREMENTS:
                    after.append(("DEPOLARIZE1", targets))
            if p > 0 and self.noise.gates:
                for name, targets in after:
                    self.circuit.append(name, targets, p)
                if self.noise.idle:
                    idle = sorted(set(self.index.values()) - touched)
                    if idle:
                        self.circuit.append("DEPOLARIZE1", idle, p)
            self.circuit.append("TICK")


# --------------------------------------------------------------------------------------
# Detector bookkeeping


@dataclasses.dataclass(frozen=True)
class _Check:
    """A plaquette operator tracked through the rounds."""

    plaquette: _Plaquette
    basis: str

    @property
    def annotation(self) -> int:
        return self.plaquette.colour + _BASIS_OFFSET[self.basis]


@dataclasses.dataclass(frozen=True)
class _ChunkFlows:
    """For each tracked operator, the chunk-local measurements that reveal its value at
    the chunk's start (``into``), fix its value at the end (``out_of``) or carry it
    through (``through``); ``None`` where no such measurements exist."""

    into: tuple[frozenset[int] | None, ...]
    out_of: tuple[frozenset[int] | None, ...]
    through: tuple[frozenset[int] | None, ...]


def _solve_chunk(
    stim: Any,
    layers: Sequence[_Layer],
    positions: Sequence[Coord],
    operators: Sequence[tuple[str, Iterable[Coord]]],
) -> _ChunkFlows:
    writer = _CircuitWriter(stim, positions, _Noise(0.0, idle=False, gates=False))
    writer.append_layers(layers)
    n = len(positions)
    flows = []
    for basis, support in operators:
        pauli = stim.PauliString(n)
        for q in support:
            pauli[writer.index[q]] = basis
        identity = stim.PauliString(n)
        flows += [
            stim.Flow(input=pauli, output=identity),
            stim.Flow(input=identity, output=pauli),
            stim.Flow(input=pauli, output=pauli),
        ]
    solved = writer.circuit.solve_flow_measurements(flows)
    # Solving many flows in one call has been seen to miss a solution that exists (stim
    # 1.16), so every unsolved flow gets a second, single-flow try.
    solved = [
        s if s is not None else writer.circuit.solve_flow_measurements([flow])[0]
        for flow, s in zip(flows, solved)
    ]
    sets = [None if s is None else frozenset(s) for s in solved]
    for k in range(0, len(sets), 3):
        into, out_of, through = sets[k : k + 3]
        # Any two of the three determine the third.
        if through is None and into is not None and out_of is not None:
            through = into ^ out_of
        if out_of is None and into is not None and through is not None:
            out_of = into ^ through
        if into is None and out_of is not None and through is not None:
            into = out_of ^ through
        sets[k : k + 3] = [into, out_of, through]
    for flow, found in zip(flows, sets):
        if found is not None:
            checked = stim.Flow(
                input=flow.input_copy(), output=flow.output_copy(), measurements=sorted(found)
            )
            if not writer.circuit.has_flow(checked, unsigned=True):  # pragma: no cover
                raise AssertionError(f"flow solution does not hold: {checked}")
    return _ChunkFlows(into=tuple(sets[0::3]), out_of=tuple(sets[1::3]), through=tuple(sets[2::3]))


@dataclasses.dataclass(frozen=True)
class _Chunk:
    """Layers whose flows are solved together.  With ``fuse_next`` the last layer shares
    its time step with the next chunk's first layer (e.g. a final data readout done at
    the same time as the last ancilla readout); flows are still solved per chunk, which
    is what exposes detectors that compare the two."""

    layers: tuple[_Layer, ...]
    fuse_next: bool = False


def _num_measurements(layers: Iterable[_Layer]) -> int:
    return sum(len(op.targets) for layer in layers for op in layer if op.name in _MEASUREMENTS)


def _assemble(
    stim: Any,
    *,
    positions: Sequence[Coord],
    checks: Sequence[_Check],
    observable: tuple[str, Sequence[Coord]],
    chunks: Sequence[_Chunk],
    noise: _Noise,
) -> Any:
    """Chain the chunks' flows into detectors and write the circuit.

    A check's current value is the XOR of the (absolute) measurements in ``pending``; a
    chunk that reveals it turns ``pending`` plus those measurements into a detector and
    restarts ``pending`` from the measurements that fix the new value; a chunk that only
    carries it adds its carrying measurements; any other chunk forgets it.  The observable
    gets the same bookkeeping and is written out as it grows.
    """
    operators = [(c.basis, c.plaquette.qubits) for c in checks] + [observable]
    solved: dict[tuple[_Layer, ...], _ChunkFlows] = {}
    pending: list[frozenset[int] | None] = [None] * len(operators)
    # Per chunk: (targets, coordinates) of detectors, coordinates None for the observable.
    notes: list[list[tuple[frozenset[int], list[float] | None]]] = []
    offset = 0
    for t, chunk in enumerate(chunks):
        if chunk.layers not in solved:
            solved[chunk.layers] = _solve_chunk(stim, chunk.layers, positions, operators)
        flows = solved[chunk.layers]
        here: list[tuple[frozenset[int], list[float] | None]] = []

        def absolute(local: frozenset[int], shift: int = offset) -> frozenset[int]:
            return frozenset(shift + m for m in local)

        for k, (into, out_of, through) in enumerate(zip(flows.into, flows.out_of, flows.through)):
            is_observable = k == len(checks)
            before = pending[k]
            if into is not None:
                if before is not None:
                    if is_observable:
                        here.append((before ^ absolute(into), None))
                    else:
                        x, y = checks[k].plaquette.centre
                        here.append((before ^ absolute(into), [x, y, t, checks[k].annotation]))
                pending[k] = None if out_of is None else absolute(out_of)
            elif through is not None:
                carried = None if before is None else before ^ absolute(through)
                if is_observable and carried:
                    here.append((carried, None))  # write it now, keeping rec offsets short
                    carried = frozenset()
                pending[k] = carried
            else:
                pending[k] = None if out_of is None else absolute(out_of)
        notes.append(here)
        offset += _num_measurements(chunk.layers)
    if not any(coords is None for here in notes for _, coords in here):  # pragma: no cover
        raise AssertionError("the logical observable is never measured")

    # Lay the chunks out in time, fusing layers where asked.
    plan: list[tuple[_Layer, list[int]]] = []
    carry: tuple[_Layer, list[int]] | None = None
    for k, chunk in enumerate(chunks):
        entries: list[tuple[_Layer, list[int]]] = [(layer, []) for layer in chunk.layers]
        if carry is not None:
            entries[0] = (carry[0] + entries[0][0], carry[1] + entries[0][1])
        entries[-1][1].append(k)
        carry = entries.pop() if chunk.fuse_next else None
        plan += entries
    assert carry is None

    writer = _CircuitWriter(stim, positions, noise)
    for layer, finished in plan:
        writer.append_layers([layer])
        total = writer.num_measurements
        for k in finished:
            for measurements, coords in notes[k]:
                targets = [stim.target_rec(m - total) for m in sorted(measurements)]
                if coords is None:
                    writer.circuit.append("OBSERVABLE_INCLUDE", targets, [0])
                else:
                    writer.circuit.append("DETECTOR", targets, coords)
    return writer.circuit


# --------------------------------------------------------------------------------------
# Families


def _checks(layout: _Layout) -> list[_Check]:
    return [_Check(f, basis) for basis in "XZ" for f in layout.plaquettes]


def _phenom(distance: int, rounds: int, p: float, basis: str, stim: Any) -> Any:
    layout = _brickwall_triangle(distance, spurs=False)
    data = layout.data
    products = tuple(
        tuple((b, q) for q in f.qubits) for b in "XZ" for f in layout.plaquettes
    )
    start = ((_Op("R" + ("X" if basis == "X" else ""), data),),)
    round_ = ((_Op("DEPOLARIZE1", data), _Op("MPP", products)),)
    end = ((_Op("M" + ("X" if basis == "X" else ""), data),),)
    return _assemble(
        stim,
        positions=data,
        checks=_checks(layout),
        observable=(basis, data),
        chunks=[_Chunk(start), *[_Chunk(round_)] * rounds, _Chunk(end)],
        noise=_Noise(p, idle=False, gates=False),
    )


def _midout(distance: int, rounds: int, p: float, basis: str, stim: Any) -> Any:
    layout = _brickwall_triangle(distance, spurs=True)
    data = layout.data_set

    def pairs(forward: bool, keep: Callable[[Coord], bool], step: Coord) -> _Op:
        targets: list[Coord] = []
        for q in sorted(data):
            other = (q[0] + step[0], q[1] + step[1])
            if keep(q) and other in data:
                targets += [q, other] if forward else [other, q]
        return _Op("CX", tuple(targets))

    def fold(parity: bool) -> list[_Layer]:
        """The three edge classes, in fold order, with the round's CNOT directions."""
        odd_rails = pairs(parity, lambda q: q[1] % 2 == 1, (0, 1))  # (x, y) -> (x, y + 1)
        even_rails = pairs(parity, lambda q: q[1] % 2 == 0, (0, 1))
        rungs = pairs(not parity, lambda q: (q[0] + q[1]) % 2 == 0, (1, 0))  # right -> left
        return [(odd_rails,), (even_rails,), (rungs,)]

    def sites(parity: bool) -> tuple[tuple[Coord, ...], tuple[Coord, ...]]:
        """(X-measured, Z-measured) sites of a round."""
        xs = tuple(sorted(f.site for f in layout.plaquettes if (f.site[1] % 2 == 0) == parity))
        zs = tuple(sorted(f.site for f in layout.plaquettes if (f.site[1] % 2 == 0) != parity))
        return xs, zs

    def start(parity: bool) -> list[_Layer]:
        xs, zs = sites(parity)
        rest = tuple(sorted(data - set(xs) - set(zs)))
        reset = (_Op("RX", xs), _Op("R", zs), _Op("RX" if basis == "X" else "R", rest))
        return [reset, *reversed(fold(parity))]

    def body(parity: bool) -> list[_Layer]:
        xs, zs = sites(parity)
        return [
            *fold(parity),
            (_Op("MX", xs), _Op("M", zs)),
            (_Op("RX", xs), _Op("R", zs)),
            *reversed(fold(parity)),
        ]

    chunks = [_Chunk(tuple(start(False)))]
    chunks += [_Chunk(tuple(body(k % 2 == 1))) for k in range(1, rounds)]
    chunks.append(_Chunk(_time_reversed(start(rounds % 2 == 1))))
    return _assemble(
        stim,
        positions=layout.data,
        checks=_checks(layout),
        observable=(basis, layout.data),
        chunks=chunks,
        noise=_Noise(p, idle=True, gates=True),
    )


def _superdense(distance: int, rounds: int, p: float, basis: str, stim: Any) -> Any:
    layout = _superdense_triangle(distance)
    data = layout.data_set
    x_ancillas = tuple(f.site for f in layout.plaquettes)
    z_ancillas = tuple((x + 1, y) for x, y in x_ancillas)
    positions = sorted(data | set(x_ancillas) | set(z_ancillas))

    def cx(pairs: Iterable[tuple[Coord, Coord]]) -> _Op:
        return _Op("CX", tuple(q for pair in pairs for q in pair))

    def corner_pairs(k: int) -> list[tuple[Coord, Coord]]:
        """(ancilla, data) pairs for corner ``k`` (top, side, bottom) of both sides."""
        out = []
        for xa, za in zip(x_ancillas, z_ancillas):
            for anc, corner in ((xa, _LEFT_CORNERS[k]), (za, _RIGHT_CORNERS[k])):
                q = (xa[0] + corner[0], xa[1] + corner[1])
                if q in data:
                    out.append((anc, q))
        return out

    def collect(k: int) -> _Op:
        """CNOTs from data corner ``k`` of each side into that side's ancilla."""
        return cx((q, anc) for anc, q in corner_pairs(k))

    def spread(k: int) -> _Op:
        """CNOTs from each ancilla onto data corner ``k`` of its side."""
        return cx(corner_pairs(k))

    bell = cx(zip(x_ancillas, z_ancillas))

    def round_() -> tuple[_Layer, ...]:
        return (
            (_Op("RX", x_ancillas), _Op("R", z_ancillas)),
            (bell,),
            *[(collect(k),) for k in range(3)],
            *[(spread(k),) for k in range(3)],
            (bell,),
            (_Op("MX", x_ancillas), _Op("M", z_ancillas)),
        )

    # The data reset shares a time step with the first ancilla reset, and the data readout
    # with the last ancilla readout; the last round runs the first round backwards.
    m = "MX" if basis == "X" else "M"
    chunks = [
        _Chunk(((_Op("RX" if basis == "X" else "R", tuple(sorted(data))),),), fuse_next=True),
        *[_Chunk(round_())] * (rounds - 1),
        _Chunk(_time_reversed(round_()), fuse_next=True),
        _Chunk(((_Op(m, tuple(sorted(data))),),)),
    ]
    return _assemble(
        stim,
        positions=positions,
        checks=_checks(layout),
        observable=(basis, layout.data),
        chunks=chunks,
        noise=_Noise(p, idle=True, gates=True),
    )


_BUILDERS: dict[str, Callable[[int, int, float, str, Any], Any]] = {
    "phenom": _phenom,
    "midout": _midout,
    "superdense": _superdense,
}


def _as_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return operator.index(value)  # type: ignore[call-overload]


def colour_code_circuit(
    family: str, *, distance: int, rounds: int, p: float, basis: str = "Z"
) -> stim.Circuit:
    """A noisy, annotated colour-code memory experiment.

    Args:
        family: one of :data:`FAMILIES` (see the module docstring for what each does).
        distance: code distance, odd and at least 3.
        rounds: stabiliser measurement rounds, at least 1.
        p: noise strength, ``0 <= p < 0.5``; ``0`` gives a noiseless circuit.
        basis: ``"X"`` or ``"Z"``, the basis of the remembered logical observable.

    Returns:
        A ``stim.Circuit`` whose detectors have coordinates ``(x, y, t, c)`` with ``c`` in
        ``0..5`` (red/green/blue X, then red/green/blue Z) and one observable.

    Raises:
        ValueError: a bad family, distance, round count, noise strength or basis.
        ImportError: stim is not installed.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; expected one of {', '.join(FAMILIES)}")
    distance = _as_int("distance", distance)
    if distance < 3 or distance % 2 == 0:
        raise ValueError(f"distance must be odd and at least 3, got {distance}")
    rounds = _as_int("rounds", rounds)
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p < 0.5:
        raise ValueError(f"p must be a probability in [0, 0.5), got {p!r}")
    if basis not in ("X", "Z"):
        raise ValueError(f"basis must be 'X' or 'Z', got {basis!r}")
    stim = _import_stim()
    return _BUILDERS[family](distance, rounds, float(p), basis, stim)
