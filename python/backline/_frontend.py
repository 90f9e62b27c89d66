"""A PennyLane tape as the op list of the native compiler, and the samples of a run as
PennyLane results.

The tape must already be in the device's form (see ``Backline.preprocess_transforms``):
terminal observables diagonal (Z-type), no broadcasting. Mid-circuit measurements, their
conditions (any boolean function of outcomes: parities natively, others through a lookup
table of up to six inputs), decodes and runtime calls are translated in tape order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pennylane as qml
from pennylane.measurements import (
    CountsMP,
    ExpectationMP,
    ProbabilityMP,
    SampleMeasurement,
    SampleMP,
    VarianceMP,
)
from pennylane.ops.mid_measure import MeasurementValue, MidMeasure
from pennylane.ops.mid_measure.pauli_measure import PauliMeasure
from pennylane.wires import Wires

from . import _clifford
from .errors import CompileError, RuntimeCallError, UnsupportedMeasurementError
from .qec import COLLECT, GET_SESSION, POST, STAGE_PAYLOAD, Decode, IndexCorrection, ReplyBit, RuntimeCallOp

SUPPORTED_MPS = (SampleMP, CountsMP, ExpectationMP, VarianceMP, ProbabilityMP)
NOISE = {"BitFlip": "bit_flip", "PhaseFlip": "phase_flip", "DepolarizingChannel": "depolarize"}
PAULIS = {"PauliX": "x", "PauliY": "y", "PauliZ": "z"}
#: Most inputs of a condition that is not a parity (the VM's lookup tables).
LUT_INPUTS = 6
#: Most measurements one condition may depend on.
MAX_CONDITION_INPUTS = 16


@dataclass
class Translation:
    """What the native compiler gets, and how to read the samples back."""

    header: tuple
    ops: list
    width: int
    #: Column of each terminally measured wire (by label).
    wire_cols: dict
    #: Column of each mid-circuit measurement or reply bit the results use.
    mcm_cols: dict
    #: ``(column, value)`` of every postselected mid-circuit measurement.
    postselect: list = field(default_factory=list)
    #: ``(coprocessor, decoder_id)`` the program sends requests to.
    requests: set = field(default_factory=set)


def _truth_table(mv: MeasurementValue) -> list[bool]:
    k = len(mv.measurements)
    if k > MAX_CONDITION_INPUTS:
        raise CompileError(
            f"a condition on {k} measurement outcomes (at most {MAX_CONDITION_INPUTS})"
        )
    table = []
    for i in range(1 << k):
        bits = [(i >> j) & 1 for j in range(k)]
        table.append(bool(mv.processing_fn(*bits)))
    return table


def _affine(table: list[bool], k: int):
    """``(constant, [j…])`` with ``f(x) = constant ⊕ x_j ⊕ …``, or None."""
    c = table[0]
    s = [j for j in range(k) if table[1 << j] != c]
    for i, v in enumerate(table):
        p = c
        for j in s:
            p ^= bool((i >> j) & 1)
        if p != v:
            return None
    return c, s


class _Builder:
    def __init__(self, wires: list, qec_code, coprocessors: list[str], name: str, keys=None):
        self.index = {w: i for i, w in enumerate(wires)}
        self.wires = wires
        self.qec_code = qec_code
        self.coprocessors = coprocessors
        #: The names each coprocessor answers to in runtime_call(GET_SESSION, role, key).
        self.keys = keys if keys is not None else [[] for _ in coprocessors]
        self.name = name
        #: A bit never written: zero in every shot (the padding of sized payloads).
        self.zero_bit = None
        self.ops: list = []
        self.bits = 0
        self.words = 0
        self.mcm_bit: dict = {}
        self.reply_bit: dict = {}
        self.word_of: dict = {}
        self.postselect: list = []
        self.requests: set = set()
        self.sessions: dict = {}

    def bit(self) -> int:
        self.bits += 1
        return self.bits - 1

    def word(self) -> int:
        self.words += 1
        return self.words - 1

    def emit(self, tag: str, ints, p: float = 0.0):
        self.ops.append((tag, [int(i) for i in ints], float(p)))

    def q(self, w) -> int:
        return self.index[w]

    # ---- classical bits of measurement values ----

    def source_bit(self, m) -> int:
        if isinstance(m, (MidMeasure, PauliMeasure)):
            if m not in self.mcm_bit:
                raise CompileError(f"{m!r} is used before it is measured")
            return self.mcm_bit[m]
        if isinstance(m, ReplyBit):
            key = (m.round, m.index)
            if key not in self.reply_bit:
                if m.round not in self.word_of:
                    raise CompileError(f"bit {m.index} of {m.source!r} is used before that round is made")
                b = self.bit()
                self.emit("word_bit", [b, self.word_of[m.round], m.index])
                self.reply_bit[key] = b
            return self.reply_bit[key]
        raise CompileError(
            f"{m!r} in a condition: backline.qubit conditions on mid-circuit measurements "
            "(qml.measure) and decoder replies only"
        )

    def bit_of(self, mv: MeasurementValue) -> int:
        """A classical bit holding the truth value of ``mv``."""
        k = len(mv.measurements)
        table = _truth_table(mv)
        src = [self.source_bit(m) for m in mv.measurements]
        aff = _affine(table, k)
        if aff is not None and not aff[0]:
            c, s = aff
            if len(s) == 1:
                return src[s[0]]
            b = self.bit()
            self.emit("parity", [b, *[src[j] for j in s]])
            return b
        if k <= LUT_INPUTS:
            b = self.bit()
            t = sum(1 << i for i, v in enumerate(table) if v)
            self.emit("lut", [b, t, *src])
            return b
        if aff is not None:
            p = self.bit()
            self.emit("parity", [p, *[src[j] for j in aff[1]]])
            b = self.bit()
            self.emit("lut", [b, 0b01, p])
            return b
        raise CompileError(
            f"a condition on {k} measurement outcomes that is not a parity: the VM's lookup "
            f"tables take at most {LUT_INPUTS} inputs"
        )

    def condition(self, mv: MeasurementValue):
        """``(bits, negate)`` for a conditioned Pauli, or None when it never applies."""
        k = len(mv.measurements)
        table = _truth_table(mv)
        aff = _affine(table, k)
        if aff is not None:
            c, s = aff
            if not s and not c:
                return None
            return [self.source_bit(mv.measurements[j]) for j in s], bool(c)
        return [self.bit_of(mv)], False

    # ---- operations ----

    def op(self, op):
        name = op.name
        if isinstance(op, MidMeasure):
            w = op.wires[0]
            b = self.bit()
            self.emit("measure", [self.q(w), b])
            self.mcm_bit[op] = b
            if op.reset:
                self.emit("reset", [self.q(w)])
            if op.postselect is not None:
                self.postselect.append((op, int(op.postselect)))
            return
        if isinstance(op, PauliMeasure):
            self._pauli_measure(op)
            return
        if isinstance(op, qml.ops.Conditional):
            base = op.base
            if base.name == "Identity":
                return
            if base.name not in PAULIS:
                raise CompileError(
                    f"qml.cond of {base.name}: backline.qubit conditions Pauli gates (X, Y, Z) "
                    "on measurement outcomes"
                )
            c = self.condition(op.meas_val)
            if c is None:
                return
            bits, negate = c
            self.emit(f"cond_{PAULIS[base.name]}", [self.q(base.wires[0]), int(negate), *bits])
            return
        if isinstance(op, Decode):
            h = op.hyperparameters
            self._check_coprocessor(h["coprocessor"], "decode")
            bits = [self.bit_of(mv) for mv in h["syndrome"]]
            w = self.word()
            self.emit("decode", [w, h["decoder_id"], h["coprocessor"], *bits])
            self.word_of[h["uid"]] = w
            self.requests.add((h["coprocessor"], h["decoder_id"]))
            return
        if isinstance(op, RuntimeCallOp):
            self._runtime_call(op)
            return
        if isinstance(op, IndexCorrection):
            src = op.hyperparameters["source"]
            if src not in self.word_of:
                raise CompileError("apply_correction of a round that is not made before it")
            p = op.hyperparameters["pauli"].lower()
            self.emit(f"correct_{p}", [self.word_of[src], *[self.q(w) for w in op.wires]])
            return
        if name in NOISE:
            p = float(qml.math.toarray(op.parameters[0]))
            self.emit(NOISE[name], [self.q(op.wires[0])], p)
            return
        for tag, ws in _clifford.sequence(op):
            self.emit(tag, [self.q(w) for w in ws])

    def _pauli_measure(self, op):
        """A Pauli-product measurement: each factor rotated to Z (X: H; Y: S†, H), the
        parity gathered onto the last qubit by CNOTs, measured there, and everything undone —
        which projects onto the product's eigenspace, as the measurement does."""
        word = op.hyperparameters["pauli_word"]
        qs = [self.q(w) for w in op.wires]
        rotate = []
        for p, q in zip(word, qs):
            if p == "X":
                rotate.append(("h", [q]))
            elif p == "Y":
                rotate += [("sdg", [q]), ("h", [q])]
        chain = [("cnot", [q, qs[-1]]) for q in qs[:-1]]
        for tag, ws in rotate + chain:
            self.emit(tag, ws)
        b = self.bit()
        self.emit("measure", [qs[-1], b])
        for tag, ws in reversed(rotate + chain):
            self.emit(_clifford.INVERSE.get(tag, tag), ws)
        self.mcm_bit[op] = b
        if op.hyperparameters.get("postselect") is not None:
            self.postselect.append((op, int(op.hyperparameters["postselect"])))

    def _check_coprocessor(self, c: int, what: str):
        if c >= len(self.coprocessors):
            raise CompileError(
                f"{what} on coprocessor {c}, but the placement has {len(self.coprocessors)} "
                f"coprocessor{'s' if len(self.coprocessors) != 1 else ''}"
            )

    def _session(self, key, call) -> int:
        """The coprocessor index of a session key: an index, or a coprocessor's name."""
        if not isinstance(key, str):
            self._check_coprocessor(key, f"runtime_call({call.name})")
            return key
        found = [i for i, names in enumerate(self.keys) if key in names]
        if len(found) != 1:
            known = ", ".join(f"{i}: {'/'.join(n) or '-'}" for i, n in enumerate(self.keys)) or "none"
            why = "names no coprocessor" if not found else "names several coprocessors"
            raise RuntimeCallError(
                f"runtime_call({call.name}): session key {key!r} {why} of the placement "
                f"(index: names — {known}); name one with Coprocessor(name=...)"
            )
        return found[0]

    def _zero(self) -> int:
        if self.zero_bit is None:
            self.zero_bit = self.bit()
        return self.zero_bit

    def _runtime_call(self, op):
        h = op.hyperparameters
        call = h["call"]
        s = self._session(h["session"], call)
        state = self.sessions.get(s, "none")
        bad = lambda why: RuntimeCallError(f"runtime_call({call.name}) on the session to coprocessor {s}: {why}")  # noqa: E731
        if call is GET_SESSION:
            self.emit("get_session", [s])
            if state == "none":
                self.sessions[s] = "idle"
            return
        if state == "none":
            raise bad("call runtime_call(GET_SESSION, ...) first")
        if call is STAGE_PAYLOAD:
            if state != "idle":
                raise bad("a payload is already staged or posted; collect its reply first")
            bits = [self.bit_of(mv) for mv in h["payload"]]
            if h.get("payload_bytes"):
                # A sized payload (the reference's PACKED_BYTES): zeros after the bits.
                bits += [self._zero()] * (8 * h["payload_bytes"] - len(bits))
            self.emit("stage", [s, h["decoder_id"], *bits])
            self.requests.add((s, h["decoder_id"]))
            self.sessions[s] = "staged"
        elif call is POST:
            if state != "staged":
                raise bad("nothing staged: call STAGE_PAYLOAD first")
            self.emit("post", [s])
            self.sessions[s] = "posted"
        elif call is COLLECT:
            if state != "posted":
                raise bad("nothing posted: call POST first")
            w = self.word()
            self.emit("collect", [s, w])
            self.word_of[h["uid"]] = w
            self.sessions[s] = "idle"

    def finish(self):
        for s, state in self.sessions.items():
            if state != "idle":
                raise RuntimeCallError(
                    f"the session to coprocessor {s} ends with a round {state} but never collected"
                )


def measured_wires(tape, device_wires: list) -> list:
    """Wires the terminal measurements read, in device order."""
    need = set()
    for mp in tape.measurements:
        # Anything computed from samples (a SampleMeasurement) works on wires; of
        # mid-circuit measurement values, the five standard ones.
        ok = isinstance(mp, SUPPORTED_MPS) if mp.mv is not None else isinstance(mp, SampleMeasurement)
        if not ok:
            raise UnsupportedMeasurementError(
                f"{type(mp).__name__} is not accepted with finite shots: backline.qubit gives what sampling shots gives — "
                "qml.sample, qml.counts, qml.expval, qml.var and qml.probs — not states or "
                "entropies of the simulated qubits"
            )
        if mp.mv is not None:
            continue
        ws = mp.wires if len(mp.wires) else Wires(device_wires)
        need.update(ws)
    return [w for w in device_wires if w in need]


def translate(tape, device_wires: list, qec_code, coprocessors: list[str], name: str = "circuit",
              keys=None) -> Translation:
    """The native compiler's header and ops for ``tape``; ``keys``: the names each
    coprocessor answers to as a session key."""
    b = _Builder(device_wires, qec_code, coprocessors, name, keys)
    for op in tape.operations:
        b.op(op)
    b.finish()
    cols_wires = measured_wires(tape, device_wires)
    terminal = []
    for w in cols_wires:
        bit = b.bit()
        b.emit("measure", [b.q(w), bit])
        terminal.append(bit)
    outputs = list(terminal)
    wire_cols = {w: i for i, w in enumerate(cols_wires)}
    mcm_cols = {}
    # Every mid-circuit measurement, and the reply bits the results read.
    used = []
    for mp in tape.measurements:
        if mp.mv is not None:
            mvs = mp.mv if isinstance(mp.mv, list) else [mp.mv]
            for mv in mvs:
                used.extend(mv.measurements)
    for m in list(b.mcm_bit) + [m for m in used if isinstance(m, ReplyBit)]:
        if m in mcm_cols:
            continue
        bit = b.mcm_bit[m] if m in b.mcm_bit else b.source_bit(m)
        mcm_cols[m] = len(outputs)
        outputs.append(bit)
    b.emit("output", outputs)
    header = (name, len(device_wires), b.bits, b.words, qec_code, list(coprocessors))
    post = [(mcm_cols[m], v) for m, v in b.postselect]
    return Translation(header, b.ops, len(outputs), wire_cols, mcm_cols, post, b.requests)


# ---- results ----


def _mv_values(mv: MeasurementValue, rows: np.ndarray, tr: Translation) -> np.ndarray:
    cols = [tr.mcm_cols[m] for m in mv.measurements]
    sub = rows[:, cols] if cols else np.zeros((len(rows), 0), dtype=np.uint8)
    if len(sub) == 0:
        return np.zeros(0)
    uniq, inverse = np.unique(sub, axis=0, return_inverse=True)
    vals = np.array([mv.processing_fn(*[int(x) for x in u]) for u in uniq])
    return vals[inverse.reshape(-1)]


def _mcm_result(mp, rows: np.ndarray, tr: Translation):
    mvs = mp.mv if isinstance(mp.mv, list) else [mp.mv]
    values = [_mv_values(mv, rows, tr) for mv in mvs]
    if isinstance(mp, SampleMP):
        return values[0] if not isinstance(mp.mv, list) else np.stack(values, axis=-1)
    if isinstance(mp, CountsMP):
        if isinstance(mp.mv, list):
            keys = ["".join(str(int(v)) for v in row) for row in np.stack(values, axis=-1)]
        else:
            # As default.qubit reports them: outcome values as floats.
            keys = [float(v) if isinstance(v, (int, float, np.number, np.bool_)) else v for v in values[0]]
        out: dict = {}
        if mp.all_outcomes and not isinstance(mp.mv, list):
            for _, v in mp.mv.items():
                out.setdefault(float(v) if isinstance(v, (int, float, np.number, np.bool_)) else v, 0)
        for k in keys:
            out[k] = out.get(k, 0) + 1
        return dict(sorted(out.items()))
    if isinstance(mp, ExpectationMP):
        return np.mean(values[0].astype(float)) if len(values[0]) else np.nan
    if isinstance(mp, VarianceMP):
        return np.var(values[0].astype(float)) if len(values[0]) else np.nan
    if isinstance(mp, ProbabilityMP):
        # Over the branches of the measured values, as PennyLane orders them.
        ms = [m for mv in mvs for m in mv.measurements]
        n = len(mvs)
        idx = np.zeros(len(rows), dtype=np.int64)
        for v in values:
            idx = idx * 2 + v.astype(np.int64)
        counts = np.bincount(idx, minlength=1 << n).astype(float)
        del ms
        return counts / max(len(rows), 1)
    raise UnsupportedMeasurementError(f"{type(mp).__name__} of mid-circuit measurements")


def results(tape, bits: bytes, width: int, shots: int, tr: Translation):
    """PennyLane results of ``tape`` from the samples of a run."""
    all_rows = np.frombuffer(bits, dtype=np.uint8).reshape(shots, width)
    cols_wires = list(tr.wire_cols)
    out_bins = []
    bins = list(tape.shots.bins()) if tape.shots.has_partitioned_shots else [(0, shots)]
    for lo, hi in bins:
        rows = all_rows[lo:hi]
        for col, v in tr.postselect:
            rows = rows[rows[:, col] == v]
        res = []
        for mp in tape.measurements:
            if mp.mv is not None:
                res.append(_mcm_result(mp, rows, tr))
                continue
            if len(mp.wires):
                order = [w for w in cols_wires if w in mp.wires]
            else:
                order = cols_wires
            sub = rows[:, [tr.wire_cols[w] for w in order]].astype(np.int64)
            if len(sub) == 0:
                res.append(np.nan if isinstance(mp, (ExpectationMP, VarianceMP)) else
                           ({} if isinstance(mp, CountsMP) else np.zeros((0, len(order)))))
                continue
            res.append(mp.process_samples(sub, wire_order=Wires(order)))
        out_bins.append(res[0] if len(res) == 1 else tuple(res))
    return tuple(out_bins) if tape.shots.has_partitioned_shots else out_bins[0]
