"""Explicit decoding inside a QNode: :func:`decode` and the four runtime calls a decode
expands to (:func:`runtime_call` with ``GET_SESSION``, ``STAGE_PAYLOAD``, ``POST``,
``COLLECT``, in the reference's forms and backline's shorter ones).

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
from .limits import COPROCESSOR_INDEX, DECODER_ID, PAYLOAD_BYTES, check_int


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
    if isinstance(coprocessor, int) and not isinstance(coprocessor, bool):
        return check_int("coprocessor", coprocessor, COPROCESSOR_INDEX, "the placement's coprocessor index")
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

    def __init__(self, call: RuntimeCall, session: int | str, payload=(), decoder_id: int = 0,
                 payload_bytes: int | None = None, id=None):
        super().__init__(wires=[], id=id)
        self.hyperparameters["uid"] = next(_uid)
        self.hyperparameters["call"] = call
        # An index, or a coprocessor's name resolved against the placement when compiled.
        self.hyperparameters["session"] = session if isinstance(session, str) else int(session)
        self.hyperparameters["payload"] = tuple(payload)
        self.hyperparameters["decoder_id"] = int(decoder_id)
        self.hyperparameters["payload_bytes"] = payload_bytes

    def __repr__(self):
        h = self.hyperparameters
        return f"RuntimeCall({h['call'].value}, session={h['session']!r})"

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
    if isinstance(decoder_id, bool) or not isinstance(decoder_id, int):
        raise TypeError(f"decoder_id={decoder_id!r}: a non-negative integer")
    check_int("decoder_id", decoder_id, DECODER_ID, "the slot header's 32-bit decoder_id")
    op = Decode(_syndrome(syndrome), decoder_id, _coprocessor_index(coprocessor))
    return DecodeResult(op)


#: The roles of ``runtime_call(GET_SESSION, role, key)``: a program holds the controller's
#: end of a session (the coprocessor's end is the executor's).
ROLE_CONTROLLER = "controller"
ROLE_COPROCESSOR = "coprocessor"

#: ``runtime_call(POST, session, WORK_ITEM)``: post the staged round as one work item (the
#: reference's only kind; the argument may be left out).
WORK_ITEM = "work_item"


class Session:
    """A handle from ``runtime_call(GET_SESSION, ...)``: the session to one coprocessor, by its
    index or by its name (``Coprocessor(name=...)``; resolved when the circuit is compiled)."""

    def __init__(self, coprocessor: int | str):
        self.coprocessor = coprocessor

    def __repr__(self):
        return f"Session(coprocessor={self.coprocessor!r})"


class ReplyStatus(int):
    """The status of a collected reply, as ``runtime_call(COLLECT, ...)`` returns it first.
    Always ``OK`` (0) in a circuit that runs on: a reply with another status, or none within
    the endpoint's reply timeout, fails the whole run (``CoprocessorTimeoutError``,
    ``RunError``) rather than one shot."""

    OK = 0

    def __repr__(self):
        return "ReplyStatus.OK"


#: The forms each runtime call takes, quoted by its ``TypeError``.
FORMS = {
    GET_SESSION: "runtime_call(GET_SESSION, ROLE_CONTROLLER, key) with key a coprocessor's "
                 "index or name; or runtime_call(GET_SESSION, coprocessor=index)",
    STAGE_PAYLOAD: "runtime_call(STAGE_PAYLOAD, session, payload, payload_bytes, decoder_id) "
                   "(the reference's form), or runtime_call(STAGE_PAYLOAD, session, payload, "
                   "decoder_id=...), with payload a measurement value or a list of them",
    POST: "runtime_call(POST, session) or runtime_call(POST, session, WORK_ITEM)",
    COLLECT: "status, reply = runtime_call(COLLECT, session, reply_bytes, out_bytes=reply_bytes) "
             "(the reference's form), or reply = runtime_call(COLLECT, session)",
}


def _form_error(call: RuntimeCall, why: str) -> TypeError:
    return TypeError(f"{call.name}: {why}; expected {FORMS[call]}")


def _byte_count(call: RuntimeCall, what: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _form_error(call, f"{what}={v!r} is not a byte count (1 ..= {PAYLOAD_BYTES[1]})")
    return check_int(f"{call.name}: {what}", v, (1, PAYLOAD_BYTES[1]), "a slot's payload")


def _decoder_id(call: RuntimeCall, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _form_error(call, f"decoder_id={v!r} is not a non-negative integer")
    return check_int(f"{call.name}: decoder_id", v, DECODER_ID, "the slot header's 32-bit decoder_id")


def _get_session(args, kwargs) -> Session:
    call = GET_SESSION
    if "coprocessor" in kwargs:
        if args:
            raise _form_error(call, "both a role/key and coprocessor=")
        key = kwargs.pop("coprocessor")
    elif len(args) == 2:
        role, key = args
        if role == ROLE_COPROCESSOR:
            raise RuntimeCallError(
                "get_session role ROLE_COPROCESSOR: a program holds controller sessions (the "
                "coprocessor's end belongs to its executor)"
            )
        if role != ROLE_CONTROLLER:
            raise _form_error(call, f"role {role!r} (ROLE_CONTROLLER or ROLE_COPROCESSOR)")
    elif len(args) == 1:
        (key,) = args
    elif not args:
        key = 0
    else:
        raise _form_error(call, f"{len(args)} arguments after GET_SESSION")
    if kwargs:
        raise _form_error(call, f"unexpected keywords {sorted(kwargs)}")
    if isinstance(key, str):
        if not key:
            raise _form_error(call, "an empty key")
    elif isinstance(key, bool) or not isinstance(key, int) or key < 0:
        raise _form_error(call, f"key {key!r} (a coprocessor's index or name)")
    else:
        check_int("GET_SESSION: key", key, COPROCESSOR_INDEX, "the placement's coprocessor index")
    RuntimeCallOp(GET_SESSION, key)
    return Session(key)


def _stage_payload(s: Session, args, kwargs) -> None:
    call = STAGE_PAYLOAD
    if not args and "payload" not in kwargs:
        raise _form_error(call, "no payload")
    payload = kwargs.pop("payload") if "payload" in kwargs else args[0]
    rest = args[1:] if "payload" not in kwargs else args
    nbytes = kwargs.pop("payload_bytes", None)
    decoder_id = kwargs.pop("decoder_id", None)
    if len(rest) == 2:
        # The reference's form: payload, its size in bytes, the decoder id.
        if nbytes is not None or decoder_id is not None:
            raise _form_error(call, "payload_bytes or decoder_id given twice")
        nbytes, decoder_id = rest
    elif len(rest) == 1:
        raise _form_error(
            call,
            f"one argument after the payload ({rest[0]!r}) could be its size or the decoder id",
        )
    elif rest:
        raise _form_error(call, f"{len(rest) + 1} arguments after the session")
    if kwargs:
        raise _form_error(call, f"unexpected keywords {sorted(kwargs)}")
    decoder_id = _decoder_id(call, 0 if decoder_id is None else decoder_id)
    try:
        bits = _syndrome(payload)
    except (TypeError, ValueError) as e:
        raise _form_error(call, f"payload: {e}") from None
    if nbytes is not None:
        nbytes = _byte_count(call, "payload_bytes", nbytes)
        if len(bits) > 8 * nbytes:
            raise _form_error(call, f"a payload of {len(bits)} bits does not fit {nbytes} bytes")
    RuntimeCallOp(STAGE_PAYLOAD, s.coprocessor, bits, decoder_id, nbytes)


def _collect(s: Session, args, kwargs):
    call = COLLECT
    out_bytes = kwargs.pop("out_bytes", None)
    if kwargs:
        raise _form_error(call, f"unexpected keywords {sorted(kwargs)}")
    if len(args) > 1:
        raise _form_error(call, f"{len(args) + 1} arguments after COLLECT")
    op = RuntimeCallOp(COLLECT, s.coprocessor)
    result = DecodeResult(op)
    if not args and out_bytes is None:
        return result
    sizes = [_byte_count(call, "reply_bytes", a) for a in args]
    if out_bytes is not None:
        sizes.append(_byte_count(call, "out_bytes", out_bytes))
    if len(set(sizes)) > 1:
        raise _form_error(call, f"reply_bytes {sizes[0]} and out_bytes {sizes[1]} differ")
    return ReplyStatus(ReplyStatus.OK), result


def runtime_call(call: RuntimeCall, *args, **kwargs):
    """The runtime calls of one round, written out (the reference's third level), in the
    reference's forms:

    .. code-block:: python

        session = runtime_call(GET_SESSION, ROLE_CONTROLLER, "gpu-coproc")   # or an index
        runtime_call(STAGE_PAYLOAD, session, packed, PACKED_BYTES, decoder_id)
        runtime_call(POST, session, WORK_ITEM)
        _status, correction = runtime_call(COLLECT, session, PACKED_BYTES, out_bytes=PACKED_BYTES)

    and backline's shorter ones: ``runtime_call(GET_SESSION, coprocessor=0)``,
    ``runtime_call(STAGE_PAYLOAD, session, syndrome, decoder_id=0)``,
    ``runtime_call(POST, session)``, ``correction = runtime_call(COLLECT, session)``.
    ``packed`` is a measurement value or a list of them, packed LSB-first into
    ``PACKED_BYTES`` bytes (zeros after them); the key of ``GET_SESSION`` is a coprocessor's
    index or its ``Coprocessor(name=...)``. Any other arity or type is a ``TypeError`` quoting
    these forms; calls out of order (a collect before a post …) raise
    :class:`~backline.errors.RuntimeCallError` when the circuit is compiled. Only inside a
    QNode.
    """
    try:
        call = RuntimeCall(call) if not isinstance(call, RuntimeCall) else call
    except ValueError:
        raise TypeError(
            f"runtime_call({call!r}, ...): the first argument is GET_SESSION, STAGE_PAYLOAD, "
            "POST or COLLECT"
        ) from None
    _recording(f"runtime_call({call.name})")
    if call is GET_SESSION:
        return _get_session(args, kwargs)
    if not args or not isinstance(args[0], Session):
        raise _form_error(call, "the first argument is the Session from runtime_call(GET_SESSION, ...)")
    s, args = args[0], args[1:]
    if call is STAGE_PAYLOAD:
        return _stage_payload(s, args, kwargs)
    if call is POST:
        if kwargs:
            raise _form_error(call, f"unexpected keywords {sorted(kwargs)}")
        if args not in ((), (WORK_ITEM,)):
            raise _form_error(call, f"unexpected arguments {args!r}")
        RuntimeCallOp(POST, s.coprocessor)
        return None
    return _collect(s, args, kwargs)


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
