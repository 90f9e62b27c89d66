"""The bounds Python checks before anything reaches the native module, stated once.

Two kinds:

* **Ranges of the wire and the runtime** (decoder ids, payload sizes, ports …): the integer
  types and limits the Rust side has. Each constant names where its bound comes from, so
  that a change there is found here. A value outside is a ``ValueError`` naming the argument
  and its range (:func:`check_int`), never pyo3's ``OverflowError`` and never a value
  silently clamped.
* **Program limits** (:class:`ProgramLimits`): what one run may allocate — the VM's qubits
  (its tableau grows with their square), classical bits and words, shots, and the samples a
  run returns (shots × output bits, one byte each). Defaults below; the environment variable
  ``BACKLINE_PROGRAM_LIMITS`` (``qubits=N,shots=N,…``, like ``BACKLINE_DEM_LIMITS``) and
  :func:`set_program_limits` raise or lower them. They guard local runs (``Backline(wires=…)``,
  ``qml.set_shots``) and the programs an executor is sent, so that an absurd count is a
  ``ValueError`` naming the limit, not an allocation that aborts the interpreter.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace

U8_MAX = (1 << 8) - 1
U16_MAX = (1 << 16) - 1
U32_MAX = (1 << 32) - 1
U64_MAX = (1 << 64) - 1

#: A request's ``decoder_id``: the slot header's 32-bit field (``DecoderId = u32`` in
#: ``host/wire/src/lib.rs``, offset 4 of the header in docs/wire-format.md).
DECODER_ID = (0, U32_MAX)

#: A coprocessor's index in a placement (the compiler's coprocessor numbers are ``u32``).
COPROCESSOR_INDEX = (0, U32_MAX)

#: The largest slot is ``MAX_SLOT_BYTES`` = 64 KiB (``host/wire/src/lib.rs``), 16 of them the
#: slot header: a payload is at most 65,520 bytes. ``backline serve --payload-bytes`` refuses
#: more (``RingArgs::geometry`` in ``cli/src/cmd/common.rs``); so does everything here.
MAX_SLOT_BYTES = 64 * 1024
SLOT_HEADER_BYTES = 16
PAYLOAD_BYTES = (0, MAX_SLOT_BYTES - SLOT_HEADER_BYTES)

#: A TCP/UDP port.
PORT = (0, U16_MAX)

#: An RDMA GID index: ``u8`` (``--gid-index`` of ``backline serve`` / ``bench``, ``RdmaArgs``
#: in ``cli/src/cmd/common.rs``).
GID_INDEX = (0, U8_MAX)

#: ``backline serve --sessions``: a ``u64``.
SESSIONS = (0, U64_MAX)

#: A run's seed (``u64`` in ``backline._native.run``).
SEED = (0, U64_MAX)


#: A placement's timeouts (``Endpoint(reply_timeout=…, setup_timeout=…)``), in seconds: more
#: than 0, at most a day (``MAX_TIMEOUT_SECONDS`` in ``python/native/src/placement.rs``, which
#: refuses the same; the executor's bound on ``reply_timeout``).
TIMEOUT_SECONDS = 86400.0


def check_seconds(name: str, value, hi: float = TIMEOUT_SECONDS) -> float:
    """``value`` as seconds in (0, ``hi``]: a ``TypeError`` for what is not a real number
    (``bool`` included), a ``PlacementError`` (a ``ValueError``) naming ``name`` and the range
    for NaN, an infinity, 0, a negative or a larger number."""
    from .errors import PlacementError

    if isinstance(value, bool) or not hasattr(value, "__float__"):
        raise TypeError(f"{name}={value!r}: a number of seconds, not {type(value).__name__}")
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        raise TypeError(f"{name}={value!r}: a number of seconds, not {type(value).__name__}") from None
    if not 0.0 < v <= hi:  # NaN fails this too
        shown = repr(v) if len(repr(v)) <= 40 else repr(v)[:40] + "…"
        raise PlacementError(f"{name}={shown} s is out of range (0, {hi:g}] seconds")
    return v


def check_int(name: str, value, bounds: tuple[int, int], why: str = "") -> int:
    """``value`` as an int within ``bounds`` (inclusive); a ``TypeError`` for a non-integer
    (``bool`` included), a ``ValueError`` naming ``name`` and the range otherwise."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{name}={value!r}: an integer, not {type(value).__name__}")
    v = value.__index__()
    lo, hi = bounds
    if not lo <= v <= hi:
        shown = repr(v) if len(repr(v)) <= 40 else f"{repr(v)[:20]}… ({v.bit_length()} bits)"
        raise ValueError(f"{name}={shown} is out of range {lo:,} ..= {hi:,}{f' ({why})' if why else ''}")
    return v


# ---------------------------------------------------------------- program limits

#: The environment variable that overrides the defaults (``name=value`` pairs, commas).
ENV = "BACKLINE_PROGRAM_LIMITS"


@dataclass(frozen=True)
class ProgramLimits:
    """What one run may hold (each an upper bound, inclusive), as ``backline_stabvm``'s
    ``ProgramLimits`` states them — the one definition, read through the native module
    (:func:`program_limits`), so that Python's front door and the VM refuse at the same counts.

    ``qubits``: the VM's qubits (physical: a Steane block is 8 per wire; its tableau grows with
    their square). ``bits``, ``words``, ``sessions``: the program's registers and sessions.
    ``shots``: per run. ``output_bits``: shots × the program's outputs — the samples a run
    returns, one byte a bit.
    """

    qubits: int
    bits: int
    words: int
    sessions: int
    shots: int
    output_bits: int

    def check(self, what: str, value: int, name: str | None = None) -> int:
        """``value`` of limit ``what``, refused with a ``ValueError`` naming the argument
        (``name``, default ``what``) and the limit when it is larger."""
        limit = getattr(self, what)
        v = check_int(name or what, value, (0, U64_MAX))
        if v > limit:
            raise ValueError(
                f"{name or what}={v:,} is more than the program limit {what}={limit:,} "
                f"(raise it with {ENV}={what}=N or backline.limits.set_program_limits({what}=N))"
            )
        return v


_overrides: dict[str, int] = {}


def _native_limits(spec: str) -> ProgramLimits:
    from . import _native

    return ProgramLimits(**dict(_native.program_limits(spec)))


def _known() -> list[str]:
    return [f.name for f in fields(ProgramLimits)]


def default_limits() -> ProgramLimits:
    """The defaults (``backline_stabvm::ProgramLimits::default``)."""
    return _native_limits("")


def program_limits() -> ProgramLimits:
    """The limits in force: the defaults, then ``BACKLINE_PROGRAM_LIMITS``, then
    :func:`set_program_limits` — parsed by the VM's own parser (a spec it refuses is a
    ``ValueError`` with its message)."""
    spec = ",".join(
        part
        for part in (os.environ.get(ENV, "").strip(), ",".join(f"{k}={v}" for k, v in _overrides.items()))
        if part
    )
    return _native_limits(spec)


def set_program_limits(**limits: int) -> ProgramLimits:
    """Sets limits for this process (``qubits=…``, ``shots=…``, …; ``None`` drops an
    override); returns the limits now in force."""
    known = _known()
    for k, v in limits.items():
        if k not in known:
            raise TypeError(f"set_program_limits: unknown limit {k!r} (known: {', '.join(known)})")
        if v is None:
            _overrides.pop(k, None)
        else:
            _overrides[k] = check_int(k, v, (1, U64_MAX))
    return program_limits()


def check_wire_count(name: str, wires) -> None:
    """A device's or controller's ``wires`` (a count, or labels) against the ``qubits`` limit:
    each wire is at least one qubit of the VM. Checked before anything is built for them
    (``Wires(range(10**6))`` alone takes seconds)."""
    if wires is None:
        return
    if isinstance(wires, bool):
        raise TypeError(f"{name}={wires!r}: a count of wires or their labels")
    if hasattr(wires, "__index__"):
        n = check_int(name, wires, (0, U64_MAX), "a count of wires")
    elif hasattr(wires, "__len__"):
        n = len(wires)
    else:
        return
    program_limits().check("qubits", n, name)


def check_program_header(data: bytes, shots: int) -> None:
    """The counts of an encoded VM program (``backline_stabvm::codec``: ``"BKLP"``, format
    u16, then ``num_qubits``, ``num_bits``, ``num_words``, ``num_sessions`` as u32, the pool
    and the outputs as a u32 count and u32 each) and ``shots`` against the program limits,
    before the program is decoded or run. Bytes too short for the header are left to the
    decoder, which names them."""
    lim = program_limits()
    shots = lim.check("shots", shots)
    if len(data) < 22 or data[:4] != b"BKLP":
        return
    qubits, bits, words = (int.from_bytes(data[6 + 4 * i:10 + 4 * i], "little") for i in range(3))
    lim.check("qubits", qubits, "the program's num_qubits")
    lim.check("bits", bits, "the program's num_bits")
    lim.check("words", words, "the program's num_words")
    if len(data) >= 26:
        pool = int.from_bytes(data[22:26], "little")
        at = 26 + 4 * pool
        if len(data) >= at + 4:
            outputs = int.from_bytes(data[at:at + 4], "little")
            check_samples(shots, outputs, lim)


def check_samples(shots: int, width: int, lim: ProgramLimits | None = None) -> None:
    """``shots`` × ``width`` output bits (the samples of one run) against ``output_bits``."""
    lim = lim or program_limits()
    total = shots * max(int(width), 1)
    if total > lim.output_bits:
        raise ValueError(
            f"shots={shots:,} × {width:,} outputs = {total:,} output bits, more than the "
            f"program limit output_bits={lim.output_bits:,} (raise it with "
            f"{ENV}=output_bits=N or backline.limits.set_program_limits(output_bits=N))"
        )
