"""NVIDIA's realtime RPC frames (CUQR/CUQS) from Python: a client that calls a decoding server
as NVIDIA's producer does, and backline's server of them on threads of this process.

:class:`Client` is plain Python (``socket`` and ``struct``), written from NVIDIA's published
layout (cudaqx ``decoder_rpc_wire_format.h``) and behaviour (``rpc_producer.cpp``): one call
at a time, each waiting for its answer; arguments without padding (an enqueue is 32 bytes +
⌈n/8⌉, a ``get_corrections`` 17); every datagram one whole slot (256 bytes by default), as
NVIDIA's UDP channel sends them; the counter 0 or ``(shot << 16) | round``; a
``get_corrections`` answered ``not_ready`` asked again until it is ready. It talks to any
CUQR server: NVIDIA's, or backline's (``backline serve --protocol cuqr``, or
:class:`Server`)::

    import backline
    from backline import cuqr

    f = backline.stream_decoder("surface_d5_r5.dem")
    with cuqr.Server({0: f, 1: f}) as server:          # one ring (UDP port) per decoder
        ports = cuqr.parse_ready_line(server.ready_line)[1]
        c = cuqr.Client("127.0.0.1", ports[0], decoder_id=0, counter="shot-round")
        flips = c.decode_shot(f.split_rounds(events), shot=0)   # numpy uint8, one per observable

A call the server refuses raises :class:`~backline.errors.StreamError` with the status's name
(``invalid_decoder``, ``bad_request``, ``internal_error``, …), as NVIDIA's producer throws on
any non-zero status. ``docs/cuqr.md`` has every byte and how backline's server differs from
NVIDIA's.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Any, Iterable

import numpy as np

from . import _native
from .errors import StreamError

__all__ = [
    "Client",
    "Server",
    "STATUS",
    "ENQUEUE_SYNDROMES",
    "GET_CORRECTIONS",
    "RESET_DECODER",
    "fnv1a",
    "parse_ready_line",
    "shot_round_counter",
]

REQUEST_MAGIC = 0x43555152  # 'CUQR'
RESPONSE_MAGIC = 0x43555153  # 'CUQS'
HEADER = struct.Struct("<IIIIQ")  # magic, function id, arg_len, request id, timestamp
RESPONSE = struct.Struct("<IiIIQ")  # magic, status, result_len, request id, timestamp
ENQUEUE_ARGS = struct.Struct("<qqqq")  # decoder id, counter, mapping id, number of bits
GET_CORRECTIONS_ARGS = struct.Struct("<qqB")  # decoder id, return size, reset (17 bytes)
RESET_ARGS = struct.Struct("<q")

#: Status names by code (``RpcStatus`` of NVIDIA's wire format).
STATUS = {
    0: "ok",
    1: "invalid_decoder",
    2: "bad_request",
    3: "internal_error",
    4: "not_ready",
    5: "busy",
    6: "syndromes_dropped",
}


def fnv1a(name: str) -> int:
    """FNV-1a (32-bit) of a call's name: its function id."""
    h = 0x811C9DC5
    for b in name.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


ENQUEUE_SYNDROMES = fnv1a("enqueue_syndromes")
GET_CORRECTIONS = fnv1a("get_corrections")
RESET_DECODER = fnv1a("reset_decoder")
assert (ENQUEUE_SYNDROMES, GET_CORRECTIONS, RESET_DECODER) == (0x7ED8BE82, 0x882D5BA1, 0x977A59CF)


def shot_round_counter(shot: int, round: int) -> int:
    """NVIDIA's producer's counter convention: ``(shot << 16) | round``."""
    return ((shot << 16) | (round & 0xFFFF)) & 0xFFFFFFFFFFFFFFFF


def parse_ready_line(line: str) -> tuple[int, dict[int, int]]:
    """The first port and ``{decoder_id: port}`` of NVIDIA's server READY line,
    ``QEC_DECODING_SERVER_READY port=<P0> … ring<id>=<port> …``."""
    tokens = line.split()
    if not tokens or tokens[0] != "QEC_DECODING_SERVER_READY":
        raise ValueError(f"not a QEC_DECODING_SERVER_READY line: {line!r}")
    port, rings = None, {}
    for t in tokens[1:]:
        key, _, value = t.partition("=")
        if key == "port":
            port = int(value)
        elif key.startswith("ring") and key[4:].isdigit():
            rings[int(key[4:])] = int(value)
    if port is None:
        raise ValueError(f"no port= in {line!r}")
    return port, rings


def _pack_bits(events: Iterable[int]) -> tuple[int, bytes]:
    e = np.asarray(events, dtype=np.uint8).reshape(-1) & 1
    return int(e.size), np.packbits(e, bitorder="little").tobytes()


class Client:
    """A client of one decoder of a CUQR server at ``host:port``, as NVIDIA's producer.

    ``counter``: ``"zero"`` (every enqueue's counter 0, NVIDIA's default) or
    ``"shot-round"`` (``(shot << 16) | round``); ``slot_size``: every datagram is padded to it
    (0: send the bare frame); ``timeout``: the longest wait for one answer, in seconds, and
    for a ``get_corrections`` to stop being ``not_ready``.
    """

    def __init__(self, host: str, port: int, decoder_id: int = 0, *, counter: str = "zero",
                 slot_size: int = 256, timeout: float = 5.0):
        if counter not in ("zero", "shot-round"):
            raise ValueError(f"counter={counter!r}: 'zero' or 'shot-round'")
        self.decoder_id = decoder_id
        self.counter = counter
        self.slot_size = slot_size
        self.timeout = timeout
        self._next_id = 1
        #: ``get_corrections`` calls asked again after ``not_ready``.
        self.not_ready_polls = 0
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.connect((host, port))
        self._sock.settimeout(timeout)

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _request_id(self) -> int:
        rid = self._next_id
        self._next_id = (self._next_id + 1) & 0xFFFFFFFF or 1
        return rid

    def call(self, function_id: int, args: bytes, request_id: int | None = None) -> tuple[int, bytes]:
        """Sends one request and waits for the answer with its request id: ``(status code,
        result bytes)``. Answers to other request ids (late ones) are skipped."""
        rid = self._request_id() if request_id is None else request_id & 0xFFFFFFFF
        frame = HEADER.pack(REQUEST_MAGIC, function_id, len(args), rid, 0) + args
        if self.slot_size:
            if len(frame) > self.slot_size:
                raise ValueError(f"a {len(frame)}-byte frame does not fit a {self.slot_size}-byte slot")
            frame = frame.ljust(self.slot_size, b"\0")
        self._sock.send(frame)
        deadline = time.monotonic() + self.timeout
        while True:
            self._sock.settimeout(max(deadline - time.monotonic(), 1e-3))
            try:
                data = self._sock.recv(65536)
            except socket.timeout:
                raise StreamError(f"no answer within {self.timeout} s", "timeout") from None
            if len(data) < RESPONSE.size:
                continue
            magic, status, result_len, got, _ = RESPONSE.unpack_from(data)
            if magic != RESPONSE_MAGIC or got != rid:
                continue
            return status, data[RESPONSE.size:RESPONSE.size + result_len]

    @staticmethod
    def _check(what: str, status: int) -> None:
        if status != 0:
            name = STATUS.get(status, f"status {status}")
            raise StreamError(f"{what}: {name}", name)

    def enqueue_syndromes(self, events: Iterable[int], counter: int = 0) -> None:
        """One round's detection events (0/1 per detector), bit-packed LSB-first, unpadded.
        The request id is the counter's low 32 bits, as NVIDIA's producer sets it."""
        n, bits = _pack_bits(events)
        args = ENQUEUE_ARGS.pack(self.decoder_id, counter, 0, n) + bits
        status, _ = self.call(ENQUEUE_SYNDROMES, args, request_id=counter)
        self._check("enqueue_syndromes", status)

    def get_corrections(self, num_observables: int, reset: bool = False, *, poll: bool = True) -> np.ndarray:
        """The observable corrections (numpy uint8, one per observable); with ``poll``, a
        ``not_ready`` answer is asked again until ready or the timeout."""
        args = GET_CORRECTIONS_ARGS.pack(self.decoder_id, num_observables, 1 if reset else 0)
        deadline = time.monotonic() + self.timeout
        while True:
            status, result = self.call(GET_CORRECTIONS, args)
            if status == 4 and poll and time.monotonic() < deadline:
                self.not_ready_polls += 1
                continue
            self._check("get_corrections", status)
            if len(result) != (num_observables + 7) // 8:
                raise StreamError(f"get_corrections: {len(result)} bytes of result for {num_observables} bits",
                                  "bad_reply")
            return np.unpackbits(np.frombuffer(result, np.uint8), count=num_observables, bitorder="little")

    def reset_decoder(self) -> None:
        status, _ = self.call(RESET_DECODER, RESET_ARGS.pack(self.decoder_id))
        self._check("reset_decoder", status)

    def decode_shot(self, rounds: Iterable[Iterable[int]], shot: int = 0, num_observables: int = 1) -> np.ndarray:
        """One shot in NVIDIA's producer's order: ``reset_decoder``, each round's
        ``enqueue_syndromes`` (counter by ``self.counter``), ``get_corrections`` without reset."""
        self.reset_decoder()
        for r, events in enumerate(rounds):
            counter = shot_round_counter(shot, r) if self.counter == "shot-round" else 0
            self.enqueue_syndromes(events, counter)
        return self.get_corrections(num_observables)


class Server:
    """backline's CUQR server on threads of this process: ``decoders`` maps decoder ids to
    :func:`~backline.stream_decoder` functions (or ``stream:`` specs); ``rings``: one UDP
    socket per decoder (NVIDIA's shape) or one for all. Ports are chosen free; see
    :attr:`ports` and :attr:`ready_line`."""

    def __init__(self, decoders: dict[int, Any], *, rings: bool = True, host: str = "127.0.0.1",
                 slot_size: int = 256, num_slots: int = 8, strict_counter: bool = False, spin_us: int = 200):
        fns = [(int(i), getattr(f, "spec", f)) for i, f in sorted(decoders.items())]
        self._native = _native.CuqrServer(fns, rings, host, slot_size, num_slots, strict_counter, spin_us)
        self.stats: dict | None = None

    @property
    def ready_line(self) -> str:
        """NVIDIA's ``QEC_DECODING_SERVER_READY port=<P0> transport=udp ring<id>=<port> …``."""
        return self._native.ready_line

    @property
    def ports(self) -> dict[int, int]:
        """``{decoder_id: port}``."""
        return {d: port for port, ids in self._native.rings for d in ids}

    def stop(self) -> dict | None:
        """Stops serving (idempotent) and returns its counters: ``frames``, ``statuses``,
        ``dropped`` (by reason), ``streams`` (each decoder's line)."""
        s = self._native.stop()
        if s is not None:
            self.stats = s
        return self.stats

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
