"""Streaming (sliding-window) decoders of a detector error model, as coprocessor functions.

:func:`stream_decoder` turns a stim model into a coprocessor function that takes a shot's
rounds of detection events one at a time: every ``commit`` rounds it decodes a window of
``window`` rounds with BP+OSD (or Relay-BP, or matching) and commits the corrections of its
first ``commit`` rounds; at the end of the shot it decodes what is left. Each decoder id it serves is one
stream (one logical qubit)::

    import stim, backline

    circuit = stim.Circuit.generated("surface_code:rotated_memory_z", distance=5, rounds=5,
                                     after_clifford_depolarization=0.001)
    f = backline.stream_decoder(circuit.detector_error_model(), window=5, commit=3,
                                max_iter=30, osd_method="osd_cs", osd_order=7)
    cop = backline.Coprocessor(coprocessor_fn=f)
    with backline.StreamSession(cop) as s:              # a coprocessor thread, over memcpy
        for r, events in enumerate(f.split_rounds(shot)):
            s.enqueue(r, events)
        flips = s.get_corrections(reset=True)          # numpy uint8, one per observable

The payloads are those of ``docs/wire-format.md`` (one operation per message); a refused call
raises :class:`~backline.errors.StreamError` with the stream's status (``busy``,
``syndromes_dropped``, ``not_ready``, ``bad_request``…).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from . import _native
from .errors import CoprocessorFunctionError, PlacementError, StreamError
from .placement import CoprocessorFunction, Coprocessor

__all__ = ["StreamDecoderFunction", "StreamSession", "stream_decoder"]



class StreamDecoderFunction(CoprocessorFunction):
    """A streaming decoder (see :func:`stream_decoder`): serves decoder id ``base`` and, with
    ``streams`` > 1, the ids after it, one stream each.

    ``round_sizes``: detectors of each round; ``num_observables``: the observables
    ``get_corrections`` answers.
    """

    default_ids = (0,)
    hardware = ("cpu",)

    def __init__(self, spec: str, name: str, streams: int, round_sizes: list[int], num_observables: int):
        self.name = name
        self.lib_path = None
        self.spec = spec
        self.width = streams
        self.round_sizes = list(round_sizes)
        self.num_observables = num_observables
        self.num_detectors = sum(round_sizes)
        #: Payload bytes its messages need: an enqueue of the widest round, the corrections.
        self.payload_bytes = max(48, 8 + (max(round_sizes, default=0) + 7) // 8, 8 + (num_observables + 7) // 8)

    @property
    def rounds(self) -> int:
        """Rounds per shot."""
        return len(self.round_sizes)

    def split_rounds(self, events) -> list[np.ndarray]:
        """A shot's detection events (one 0/1 entry per detector) cut into its rounds."""
        e = np.asarray(events, dtype=np.uint8).reshape(-1)
        if e.size != self.num_detectors:
            raise ValueError(f"{e.size} detection events: the model has {self.num_detectors} detectors")
        return np.split(e, np.cumsum(self.round_sizes)[:-1])

    def __repr__(self) -> str:
        return f"stream_decoder({self.name!r})"


def _model_file(dem: Any) -> str:
    """A path to the model's text: the file given (a path, or a one-line string ending in
    ``.dem``), or a file named by the text's digest (a ``stim.DetectorErrorModel`` or text)."""
    if isinstance(dem, os.PathLike) or (isinstance(dem, str) and "\n" not in dem and dem.strip().endswith(".dem")):
        p = Path(dem)
        if not p.is_file():
            raise CoprocessorFunctionError(f"stream_decoder: model file {p} not found")
        return str(p.resolve())
    text = str(dem)
    if not text.strip():
        raise CoprocessorFunctionError("stream_decoder: the model is empty")
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    d = Path(tempfile.gettempdir()) / "backline-dem"
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{digest}.dem"
    if not p.exists():
        tmp = p.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text if text.endswith("\n") else text + "\n")
        tmp.replace(p)
    return str(p)


def _setting(value: Any) -> str:
    if isinstance(value, bool):
        raise CoprocessorFunctionError(f"stream_decoder: setting {value!r} is not a number or a name")
    if isinstance(value, (tuple, list)):
        return ",".join(repr(float(v)) for v in value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def stream_decoder(
    dem: Any,
    window: int | None = None,
    commit: int | None = None,
    *,
    decoder: str = _native.DEFAULT_DECODER,
    streams: int = 1,
    idle_ms: int | None = None,
    **settings: Any,
) -> StreamDecoderFunction:
    """A streaming decoder of the detector error model ``dem`` (a ``stim.DetectorErrorModel``,
    its text, or a ``.dem`` file's path) as a coprocessor function.

    ``window``: rounds per window (default: every round, one window over the shot, which is the
    whole-history decoder); ``commit``: rounds committed per window (default ``window − 1``).
    Rounds are the detectors that share a time coordinate (stim's ``detector(x, y, t)``), in
    the model's order. ``decoder``: a registered decoder's name (``_native.decoder_registry()``:
    BP+OSD, the default, Relay-BP or matching), with its
    settings by the names of ``ldpc`` (``max_iter``, ``bp_method``, ``ms_scaling_factor``,
    ``osd_method``, ``osd_order``…; the real-time defaults are 5 min-sum iterations with
    α = 0.625 and OSD-0) or ``relay-bp`` (``gamma0``, ``pre_iter``…); matching (exact
    minimum-weight perfect matching, each window flooded on the model's graph) takes
    ``correlations`` (PyMatching's two-pass correlated matching, 0 or 1), and so does the
    Möbius decoder of colour codes (``decoder="mobius"``: detectors annotated with their colour
    and basis; its windows' committed paths are lifted after the last one). ``streams``: decoder ids
    served from the base id, one stream (logical qubit) each. ``idle_ms``: a shot left
    mid-way this long is dropped when its stream is next used (default 5000).

    The model and the settings are checked now: a bad one raises
    :class:`~backline.errors.CoprocessorFunctionError`.
    """
    names = [name for name, _title, _settings in _native.decoder_registry()]
    if decoder not in names:
        raise CoprocessorFunctionError(f"stream_decoder: decoder={decoder!r} (expected one of {', '.join(names)})")
    for name, v in (("window", window), ("commit", commit), ("idle_ms", idle_ms)):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
            raise CoprocessorFunctionError(f"stream_decoder: {name}={v!r} must be a positive integer")
    if not isinstance(streams, int) or isinstance(streams, bool) or not 1 <= streams <= 4096:
        raise CoprocessorFunctionError(f"stream_decoder: streams={streams!r} must be an integer in 1..4096")
    path = _model_file(dem)
    kv = []
    if window is not None:
        kv.append(f"window={window}")
    if commit is not None:
        kv.append(f"commit={commit}")
    if streams != 1:
        kv.append(f"streams={streams}")
    if idle_ms is not None:
        kv.append(f"idle_ms={idle_ms}")
    kv += [f"{k}={_setting(v)}" for k, v in settings.items()]
    spec = f"stream:{path}:{decoder}" + (f":{';'.join(kv)}" if kv else "")
    sizes, observables = _native.stream_layout(spec)
    label = f"stream[{Path(path).stem}" + (f", W={window}, C={commit}" if window else "") + "]"
    return StreamDecoderFunction(spec, label, streams, sizes, observables)


class StreamSession:
    """A controller's session to one stream of a streaming-decoder coprocessor.

    ``StreamSession(coprocessor, transport="memcpy", decoder_id=0)``: for a coprocessor of this
    process (``remote=False``, the default) it starts the coprocessor's server on ``transport``
    and connects; for ``remote=True`` it connects to the running executor at its
    ``endpoint``. Also a context manager (closing the session and the server it started).
    """

    def __init__(self, coprocessor: Coprocessor | StreamDecoderFunction, transport: str = "memcpy", decoder_id: int = 0):
        if isinstance(coprocessor, StreamDecoderFunction):
            coprocessor = Coprocessor(coprocessor_fn=coprocessor)
        fns = coprocessor._functions()
        self.function = None
        for base, f in fns.items():
            if isinstance(f, StreamDecoderFunction) and base <= decoder_id < base + f.width:
                self.function = f
        ep = coprocessor.endpoint
        timeouts = (ep.reply_timeout, ep.setup_timeout) if ep else (1.0, 5.0)
        self._server = None
        if coprocessor.remote in (True, "host"):
            peer = ep.peer()
        elif coprocessor.remote is False:
            if self.function is None:
                raise PlacementError(f"StreamSession: decoder_id {decoder_id} is not served by a stream_decoder")
            address = ep.address if ep is not None and ep.address else ("127.0.0.1:0" if transport == "udp" else "")
            key = f"backline-stream-{os.getpid()}-{id(self)}"
            if transport == "shm" and not address:
                address = key
            payload = self.function.payload_bytes
            self._server = _native.Server(transport, address, key, coprocessor.fns(), payload, None, *timeouts)
            peer = self._server.peer
        else:
            raise PlacementError("StreamSession: remote='process' coprocessors are started by the device; use remote=False or True")
        payload = self.function.payload_bytes if self.function is not None else 48
        try:
            self._client = _native.StreamClient(transport, peer, decoder_id, payload, *timeouts)
        except BaseException:
            if self._server is not None:
                self._server.stop()
            raise
        self.decoder_id = decoder_id
        self.rounds_received = 0
        self.final = False

    def _check(self, what: str, answer) -> bytes:
        status, final, rounds, result = answer
        self.rounds_received, self.final = rounds, final
        if status != "ok":
            raise StreamError(f"{what}: the stream at decoder_id {self.decoder_id} answered {status}", status)
        return result

    def enqueue(self, round: int, events) -> None:
        """Round ``round`` of the shot: its detection events (0/1 per detector of the round;
        ``bytes`` are taken as already bit-packed, LSB-first)."""
        if isinstance(events, (bytes, bytearray)):
            packed = bytes(events)
        else:
            e = np.asarray(events).astype(np.uint8).reshape(-1)
            if self.function is not None and round < self.function.rounds and e.size != self.function.round_sizes[round]:
                raise ValueError(
                    f"round {round}: {e.size} detection events, the round has {self.function.round_sizes[round]}"
                )
            packed = np.packbits(e, bitorder="little").tobytes()
        self._check(f"enqueue round {round}", self._client.enqueue(round, packed))

    def get_corrections(self, reset: bool = False, observables: int | None = None) -> np.ndarray:
        """The observable flips decoded so far (all of them once every round is in: see
        :attr:`final`), one uint8 per observable; with ``reset``, the stream starts a new shot
        after answering. ``observables``: their number, for a remote stream whose
        :func:`stream_decoder` this session was not given."""
        k = observables if observables is not None else getattr(self.function, "num_observables", None)
        if k is None:
            raise PlacementError("StreamSession.get_corrections: give observables= for a remote stream")
        r = self._check("get_corrections", self._client.get_corrections(k, reset))
        return np.unpackbits(np.frombuffer(r, dtype=np.uint8), count=k, bitorder="little")

    def reset(self) -> None:
        """Forget the shot."""
        self._check("reset", self._client.reset())

    def decode_shot(self, events) -> np.ndarray:
        """Streams a whole shot (one 0/1 entry per detector) round by round and returns its
        observable flips; the stream is fresh afterwards."""
        if self.function is None:
            raise PlacementError("StreamSession.decode_shot needs the stream_decoder (its rounds)")
        for r, e in enumerate(self.function.split_rounds(events)):
            self.enqueue(r, e)
        return self.get_corrections(reset=True)

    def close(self) -> None:
        """Ends the session and stops the server it started (idempotent)."""
        self._client.close()
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> StreamSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
