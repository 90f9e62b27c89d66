"""PennyLane operations as sequences of the VM's Clifford gates.

The VM's gates: ``h s sdg x y z`` on one qubit, ``cnot cz swap`` on two. Besides those, this
maps ``SX``, ``CY``, ``Adjoint`` of anything mapped, and rotations whose angles are
multiples of π/2 (``RX RY RZ PhaseShift U1 Rot``), equal up to a global phase. Anything else
is tried through its PennyLane decomposition; an operation whose decomposition reaches a
non-Clifford gate is refused with :class:`~backline.errors.NonCliffordGateError`.
"""

from __future__ import annotations

import math

import numpy as np
import pennylane as qml

from .errors import NonCliffordGateError

NATIVE = {
    "Hadamard": "h",
    "S": "s",
    "PauliX": "x",
    "PauliY": "y",
    "PauliZ": "z",
    "CNOT": "cnot",
    "CZ": "cz",
    "SWAP": "swap",
}
INVERSE = {"s": "sdg", "sdg": "s"}
#: Operations with no effect on samples.
IGNORED = {"Identity", "GlobalPhase", "Barrier", "Snapshot"}

_TOL = 1e-9


def _quarter_turns(angle, op) -> int | None:
    """``k`` (mod 4) with ``angle == k·π/2``, or None."""
    try:
        a = float(qml.math.toarray(angle))
    except Exception:  # a tracer or a batch: not a fixed angle
        return None
    k = a / (math.pi / 2)
    r = round(k)
    if abs(k - r) > _TOL:
        return None
    return int(r) % 4


def _rz(k: int, w) -> list:
    return [("s", [w])] * k if k < 3 else [("sdg", [w])]


def _rotation(name: str, params, wires) -> list | None:
    if name in ("RZ", "PhaseShift", "U1"):
        k = _quarter_turns(params[0], name)
        return None if k is None else _rz(k, wires[0])
    if name == "RX":
        k = _quarter_turns(params[0], name)
        return None if k is None else [("h", [wires[0]]), *_rz(k, wires[0]), ("h", [wires[0]])]
    if name == "RY":
        # RY(θ) = S · RX(θ) · S† (as operators): S† first, then RX, then S.
        k = _quarter_turns(params[0], name)
        w = wires[0]
        return None if k is None else [("sdg", [w]), ("h", [w]), *_rz(k, w), ("h", [w]), ("s", [w])]
    if name == "Rot":
        # Rot(φ, θ, ω) = RZ(ω) RY(θ) RZ(φ).
        parts = [_rotation("RZ", [params[0]], wires), _rotation("RY", [params[1]], wires), _rotation("RZ", [params[2]], wires)]
        return None if any(p is None for p in parts) else [g for p in parts for g in p]
    return None


def _direct(op) -> list | None:
    """The op's gate sequence without decomposing it, or None."""
    name = op.name
    wires = list(op.wires)
    if name in IGNORED:
        return []
    if name in NATIVE:
        return [(NATIVE[name], wires)]
    if name == "SX":
        return [("h", wires), ("s", wires), ("h", wires)]
    if name == "CY":
        c, t = wires
        return [("sdg", [t]), ("cnot", [c, t]), ("s", [t])]
    if name in ("RX", "RY", "RZ", "PhaseShift", "U1", "Rot"):
        return _rotation(name, op.parameters, wires)
    if isinstance(op, qml.ops.op_math.Adjoint):
        inner = _direct(op.base)
        if inner is None:
            return None
        return [(INVERSE.get(g, g), w) for g, w in reversed(inner)]
    return None


def sequence(op, depth: int = 0, top=None) -> list:
    """The VM gates (``[(tag, wire labels)]``) that implement ``op`` up to a global phase.

    Raises :class:`NonCliffordGateError` naming the gate (and the non-Clifford gate inside
    its decomposition) when there is none.
    """
    top = top if top is not None else op
    seq = _direct(op)
    if seq is not None:
        return seq
    if op.has_decomposition and depth < 8:
        try:
            parts = op.decomposition()
        except Exception:  # noqa: BLE001 — no decomposition for these parameters
            parts = None
        if parts is not None:
            out = []
            for p in parts:
                out.extend(sequence(p, depth + 1, top))
            return out
    raise NonCliffordGateError(_message(top, op))


def _describe(op) -> str:
    params = ""
    if op.num_params:
        try:
            params = "(" + ", ".join(f"{float(qml.math.toarray(p)):.6g}" for p in op.parameters) + ")"
        except Exception:  # noqa: BLE001
            params = "(…)"
    return f"{op.name}{params} on wires {list(op.wires)}"


def _message(top, leaf) -> str:
    what = _describe(top)
    inner = "" if leaf is top else f" (its decomposition needs {_describe(leaf)})"
    return (
        f"{what} is not a Clifford gate{inner}: backline.qubit is not supported for it — its "
        "qubits are a stabilizer VM, which runs Clifford gates (H, S, CNOT, Paulis and "
        "rotations by multiples of π/2), measurements, resets, conditioned Paulis and Pauli noise"
    )


def unitary(seq: list, wires: list) -> np.ndarray:
    """The matrix of a gate sequence over ``wires`` (for tests)."""
    ops = {
        "h": qml.Hadamard,
        "s": qml.S,
        "sdg": lambda wires: qml.adjoint(qml.S(wires)),
        "x": qml.PauliX,
        "y": qml.PauliY,
        "z": qml.PauliZ,
        "cnot": qml.CNOT,
        "cz": qml.CZ,
        "swap": qml.SWAP,
    }
    u = np.eye(2 ** len(wires), dtype=complex)
    for g, w in seq:
        u = qml.matrix(ops[g](wires=w), wire_order=wires) @ u
    return u
