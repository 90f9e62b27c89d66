"""Explicit decoding inside a QNode: :func:`decode` and the four runtime calls a decode
expands to (:func:`runtime_call` with ``GET_SESSION``, ``STAGE_PAYLOAD``, ``POST``,
``COLLECT``).

Both record operations on the circuit being built; the compiler turns each into one
transport round to the placement's coprocessor, made shot by shot in Rust. A decode's answer
is a :class:`DecodeResult`: ``result[k]`` is bit ``k`` of the reply (a BP-OSD decoder's flip
of qubit ``k``), usable with ``qml.cond`` like a mid-circuit measurement; lookup decoders
that answer with an index (Steane) are applied with :func:`apply_correction`.
"""

from __future__ import annotations

import itertools
from enum import Enum

import pennylane as qml
from pennylane.operation import Operator
from pennylane.ops.mid_measure import MeasurementValue
from pennylane.wires import Wires

from .errors import DecodeOutsideQNodeError, RuntimeCallError


class RuntimeCall(Enum):
    """The runtime calls of one round (SPEC §4)."""

    GET_SESSION = "get_session"
    STAGE_PAYLOAD = "stage_payload"
    POST = "post"
    COLLECT = "collect"


GET_SESSION = RuntimeCall.GET_SESSION
STAGE_PAYLOAD = RuntimeCall.STAGE_PAYLOAD
POST = RuntimeCall.POST
COLLECT = RuntimeCall.COLLECT

#: Bits of a reply the VM keeps (its first 8 bytes).
REPLY_BITS = 64

_uid = itertools.count()


class ReplyBit:
    """Bit ``index`` of a round's reply, as a measurement a ``MeasurementValue`` can hold
    (so ``qml.cond`` and ``qml.sample`` take it). Not an operation on any wire."""

    postselect = None
    reset = False

    def __init__(self, source: Operator, index: int):
        self.source = source
        #: The round's identity (operations may be copied on the way to the device).
        self.round = source.hyperparameters["uid"]
        self.index = index
        self.meas_uid = f"reply-{next(_uid):08d}"
        self.wires = Wires([])

    def map_wires(self, wire_map):  # noqa: ARG002 — on no wire
        return self

    def __repr__(self):
        return f"ReplyBit({self.source.name}, {self.index})"


class DecodeResult:
    """The answer of a decode (or a ``COLLECT``): ``result[k]`` is bit ``k`` of the reply
    (LSB-first; the VM keeps the first 64), a ``MeasurementValue``."""

    def __init__(self, source: Operator):
        self.source = source
        self._bits: dict[int, MeasurementValue] = {}

    def __getitem__(self, k: int) -> MeasurementValue:
        if not isinstance(k, int) or not 0 <= k < REPLY_BITS:
            raise IndexError(f"reply bit {k!r}: the VM keeps bits 0..{REPLY_BITS - 1} of a reply")
        if k not in self._bits:
            self._bits[k] = MeasurementValue([ReplyBit(self.source, k)])
        return self._bits[k]

    def bits(self, n: int) -> list[MeasurementValue]:
        """Bits ``0 .. n-1``."""
        return [self[k] for k in range(n)]

    def __repr__(self):
        return f"DecodeResult({self.source!r})"


def _recording(what: str):
    if not qml.QueuingManager.recording():
        raise DecodeOutsideQNodeError(
            f"{what} records a round on the circuit being built, so it can only be called "
            "inside a QNode (or a quantum function being recorded); here nothing is recorded"
        )


def _syndrome(values) -> tuple[MeasurementValue, ...]:
    if isinstance(values, MeasurementValue):
        values = [values]
    out = []
    for v in values:
        if not isinstance(v, MeasurementValue):
            raise TypeError(
                f"syndrome entry {v!r} is not a measurement value: pass qml.measure(...) "
                "results (or expressions of them, e.g. m0 ^ m1)"
            )
        out.append(v)
    if not out:
        raise ValueError("an empty syndrome: a round carries at least one bit")
    return tuple(out)


def _coprocessor_index(coprocessor) -> int:
    if isinstance(coprocessor, int) and coprocessor >= 0:
        return coprocessor
    raise TypeError(f"coprocessor={coprocessor!r}: the index of the placement's coprocessor (0, 1, …)")


class Decode(Operator):
    """``r = qec.decode [m…] {decoder_id, coprocessor}``: one round to a coprocessor."""

    num_wires = None
    num_params = 0
    grad_method = None

    def __init__(self, syndrome, decoder_id: int, coprocessor: int = 0, id=None):
        super().__init__(wires=[], id=id)
        self.hyperparameters["uid"] = next(_uid)
        self.hyperparameters["syndrome"] = tuple(syndrome)
        self.hyperparameters["decoder_id"] = int(decoder_id)
        self.hyperparameters["coprocessor"] = int(coprocessor)

    def __repr__(self):
        h = self.hyperparameters
        return f"Decode({len(h['syndrome'])} bits, decoder_id={h['decoder_id']}, coprocessor={h['coprocessor']})"

    @property
    def hash(self):
        return hash(("backline", self.hyperparameters["uid"]))

    def map_wires(self, wire_map):  # noqa: ARG002
        return self


class RuntimeCallOp(Operator):
    """One runtime call (``transport.get_session`` … ``collect``) of coprocessor ``s``."""

    num_wires = None
    num_params = 0
    grad_method = None

    def __init__(self, call: RuntimeCall, session: int, payload=(), decoder_id: int = 0, id=None):
        super().__init__(wires=[], id=id)
        self.hyperparameters["uid"] = next(_uid)
        self.hyperparameters["call"] = call
        self.hyperparameters["session"] = int(session)
        self.hyperparameters["payload"] = tuple(payload)
        self.hyperparameters["decoder_id"] = int(decoder_id)

    def __repr__(self):
        h = self.hyperparameters
        return f"RuntimeCall({h['call'].value}, session={h['session']})"

    @property
    def hash(self):
        return hash(("backline", self.hyperparameters["uid"]))

    def map_wires(self, wire_map):  # noqa: ARG002
        return self


def decode(syndrome, decoder_id: int = 0, coprocessor: int = 0) -> DecodeResult:
    """Sends ``syndrome`` (mid-circuit measurement values, packed LSB-first into the
    payload) to the placement's coprocessor ``coprocessor`` with ``decoder_id`` (0 = X
    checks, 1 = Z checks), shot by shot; returns the answer as a :class:`DecodeResult`.

    Only inside a QNode: outside, raises :class:`~backline.errors.DecodeOutsideQNodeError`.
    """
    _recording("decode")
    if not isinstance(decoder_id, int) or decoder_id < 0:
        raise TypeError(f"decoder_id={decoder_id!r}: a non-negative integer")
    op = Decode(_syndrome(syndrome), decoder_id, _coprocessor_index(coprocessor))
    return DecodeResult(op)


class Session:
    """A handle from ``runtime_call(GET_SESSION, ...)``: the session to one coprocessor."""

    def __init__(self, coprocessor: int):
        self.coprocessor = coprocessor

    def __repr__(self):
        return f"Session(coprocessor={self.coprocessor})"


def runtime_call(call: RuntimeCall, *args, **kwargs):
    """The runtime calls of one round, written out (the reference's third level):

    .. code-block:: python

        s = runtime_call(GET_SESSION, coprocessor=0)       # → Session
        runtime_call(STAGE_PAYLOAD, s, syndrome, decoder_id=0)
        runtime_call(POST, s)
        r = runtime_call(COLLECT, s)                       # → DecodeResult

    ``GET_SESSION`` also takes the reference's ``(role, key)`` form: ``runtime_call(
    GET_SESSION, "controller", 0)``, the key being the coprocessor's index. Calls out of
    order (a collect before a post …) raise :class:`~backline.errors.RuntimeCallError` when
    the circuit is compiled. Only inside a QNode.
    """
    call = RuntimeCall(call) if not isinstance(call, RuntimeCall) else call
    _recording(f"runtime_call({call.name})")
    if call is GET_SESSION:
        if "coprocessor" in kwargs:
            c = kwargs.pop("coprocessor")
        elif len(args) == 2:
            role, c = args
            if role != "controller":
                raise RuntimeCallError(f"get_session role {role!r}: a program holds controller sessions")
        elif len(args) == 1:
            (c,) = args
        else:
            c = 0
        if kwargs:
            raise TypeError(f"GET_SESSION: unexpected {sorted(kwargs)}")
        c = _coprocessor_index(c)
        RuntimeCallOp(GET_SESSION, c)
        return Session(c)
    if not args or not isinstance(args[0], Session):
        raise TypeError(f"{call.name}: the first argument is the Session from runtime_call(GET_SESSION, ...)")
    s = args[0]
    if call is STAGE_PAYLOAD:
        payload = kwargs.pop("payload", args[1] if len(args) > 1 else None)
        decoder_id = kwargs.pop("decoder_id", args[2] if len(args) > 2 else 0)
        if kwargs:
            raise TypeError(f"STAGE_PAYLOAD: unexpected {sorted(kwargs)}")
        RuntimeCallOp(STAGE_PAYLOAD, s.coprocessor, _syndrome(payload), decoder_id)
        return None
    if call is POST:
        RuntimeCallOp(POST, s.coprocessor)
        return None
    op = RuntimeCallOp(COLLECT, s.coprocessor)
    return DecodeResult(op)


def apply_correction(result: DecodeResult, wires, pauli: str = "X", encoding: str = "index") -> None:
    """Applies a decoder's answer to ``wires``, shot by shot.

    ``encoding="index"``: the answer is a qubit index (the Steane lookup: 0–6, 0x0F for none):
    ``pauli`` on ``wires[answer]`` when it is one. ``encoding="bits"``: bit ``k`` of the answer
    flips ``wires[k]`` (BP-OSD corrections).
    """
    wires = list(wires)
    gate = {"X": qml.PauliX, "Y": qml.PauliY, "Z": qml.PauliZ}[pauli]
    if encoding == "bits":
        for k, w in enumerate(wires):
            qml.cond(result[k], gate)(wires=w)
        return
    if encoding != "index":
        raise ValueError(f"encoding={encoding!r}: 'index' or 'bits'")
    if not isinstance(result, DecodeResult):
        raise TypeError(f"{result!r} is not the result of decode(...) or runtime_call(COLLECT, ...)")
    IndexCorrection(result.source, wires, pauli)


class IndexCorrection(Operator):
    """``quantum.correct p r [q…]``: ``pauli`` on ``wires[answer]`` when the answer of round
    ``source`` indexes one of them."""

    num_params = 0
    grad_method = None

    def __init__(self, source: Operator, wires, pauli: str = "X", id=None):
        super().__init__(wires=wires, id=id)
        self.hyperparameters["source"] = source.hyperparameters["uid"]
        self.hyperparameters["pauli"] = pauli

    @property
    def hash(self):
        return hash(("backline-correct", self.hyperparameters["source"], tuple(self.wires), self.hyperparameters["pauli"]))
