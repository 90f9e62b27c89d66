"""backline's circuit-level decoders for `sinter <https://pypi.org/project/sinter/>`_.

:func:`decoders` returns the dict to pass as ``sinter.collect(custom_decoders=...)``::

    import sinter, stim
    from backline.sinter import decoders

    tasks = [
        sinter.Task(circuit=stim.Circuit.generated("surface_code:rotated_memory_z", distance=d,
                    rounds=d, after_clifford_depolarization=0.005), json_metadata={"d": d})
        for d in (3, 5)
    ]
    stats = sinter.collect(num_workers=2, tasks=tasks, decoders=["backline-bposd"],
                           custom_decoders=decoders(), max_shots=10_000)

- ``backline-bposd``: BP+OSD (:class:`BpOsdSinterDecoder`), with the names and defaults of
  ``ldpc``'s ``BpOsdDecoder`` (``bp_method``, ``max_iter``, ``ms_scaling_factor``, ``schedule``,
  ``osd_method``, ``osd_order``); each mechanism's probability is its prior.
- ``backline-relay-bp``: Relay-BP (:class:`RelayBpSinterDecoder`), with the names and defaults
  of ``relay-bp``'s sinter decoder (``gamma0``, ``pre_iter``, ``num_sets``, ``set_max_iter``,
  ``gamma_dist_interval``, ``stop_nconv``, ``alpha``, and ``seed``).
- ``backline-matching``: exact minimum-weight perfect matching (sparse blossom,
  :class:`MatchingSinterDecoder`) on the model's graphlike decomposition — what
  ``pymatching``'s sinter decoder does; the model's errors must be decomposed
  (``decompose_errors=True``), a part of more than two detectors raises naming its line.

``compile_decoder_for_dem`` hands the model's text to Rust in memory (no temporary files) and
``decode_shots_bit_packed`` decodes each batch in Rust with the GIL released. A model or a
setting the decoder cannot use raises (:class:`~backline.errors.DetectorErrorModelError`,
:class:`~backline.errors.DecoderSettingsError`) when the decoder is compiled; nothing falls
back to another decoder. Decoders and compiled decoders pickle (a compiled one is rebuilt from
its model's text on unpickling).

Nothing a caller passes takes the interpreter down. ``dem_limits`` (a dict of ``targets``,
``coords``, ``mechanisms``, over the ``BACKLINE_DEM_LIMITS`` variable and the defaults 2^24,
2^24, 2^22) bounds what a model may expand to: a small text that unrolls to billions of targets
raises ``DetectorErrorModelError`` naming its line and the bound. ``threads`` is at most 1024.
``decode_shots_bit_packed`` takes exactly stim's layout — a ``numpy.uint8`` array of shape
``[shots, ceil(num_detectors/8)]`` — and raises ``TypeError`` for another dtype (nothing is cast:
floats would become zeros, int64 would wrap) and ``ValueError`` for another shape. Every error is
an ``Exception``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sinter

from . import _native, errors

__all__ = ["BpOsdSinterDecoder", "CompiledDemDecoder", "MatchingSinterDecoder", "RelayBpSinterDecoder", "decoders"]


def _settings_text(settings: dict[str, Any]) -> list[tuple[str, str]]:
    """Settings as (name, text) pairs, the form the native decoder parses."""
    out = []
    for key, value in settings.items():
        if value is None:
            text = "none"
        elif isinstance(value, (tuple, list)):
            text = ",".join(repr(float(v)) for v in value)
        elif isinstance(value, bool):
            raise TypeError(f"{key}: expected a number or a name, got {value!r}")
        elif isinstance(value, float):
            text = repr(value)
        else:
            text = str(value)
        out.append((key, text))
    return out


#: The most threads a compiled decoder decodes a batch on.
MAX_THREADS = 1024


def _check_threads(threads: Any) -> int:
    if isinstance(threads, bool) or not isinstance(threads, int) or not 0 <= threads <= MAX_THREADS:
        raise errors.DecoderSettingsError(
            f"threads={_excerpt(repr(threads))}: expected an integer in 0..={MAX_THREADS} (0: every core)"
        )
    return threads


def _excerpt(text: str) -> str:
    """At most 80 characters of ``text``, then ``…`` (how errors quote input)."""
    return text if len(text) <= 80 else text[:80] + "…"


def _limits_text(limits: dict[str, Any] | None) -> list[tuple[str, str]]:
    if limits is None:
        return []
    if not isinstance(limits, dict):
        raise TypeError(f"dem_limits: expected a dict of targets, coords, mechanisms, got {type(limits).__name__}")
    return [(str(k), str(v)) for k, v in limits.items()]


class CompiledDemDecoder(sinter.CompiledDecoder):
    """A decoder compiled for one detector error model."""

    def __init__(
        self,
        dem_text: str,
        decoder: str,
        settings: dict[str, Any],
        threads: int = 1,
        dem_limits: dict[str, Any] | None = None,
    ):
        self._state = (dem_text, decoder, dict(settings), threads, dem_limits)
        self._native = _native.DemDecoder(
            dem_text,
            decoder,
            _settings_text(settings),
            _check_threads(threads),
            "<dem>",
            _limits_text(dem_limits),
        )
        self.num_detectors = self._native.num_detectors
        self.num_observables = self._native.num_observables

    def decode_shots_bit_packed(self, *, bit_packed_detection_event_data: np.ndarray) -> np.ndarray:
        data = bit_packed_detection_event_data
        width = (self.num_detectors + 7) // 8
        layout = f"uint8 [shots, ceil(num_detectors/8)] = [shots, {width}] (stim's bit-packed layout)"
        if not isinstance(data, np.ndarray):
            raise TypeError(f"detection events as {type(data).__name__}: expected a numpy array, {layout}")
        if data.dtype != np.uint8:
            raise TypeError(f"detection events of dtype {data.dtype}: expected {layout}; nothing is cast")
        if data.ndim != 2 or data.shape[1] != width:
            raise ValueError(f"detection events of shape {_excerpt(str(data.shape))}: expected {layout}")
        shots = data.shape[0]
        out = self._native.decode_bit_packed(np.ascontiguousarray(data).tobytes(), shots)
        return np.frombuffer(out, dtype=np.uint8).reshape(shots, (self.num_observables + 7) // 8)

    def __reduce__(self):
        return (CompiledDemDecoder, self._state)


class _DemSinterDecoder(sinter.Decoder):
    """The shared half: settings kept as given, compiled in memory."""

    kind = ""

    def __init__(self, threads: int = 1, dem_limits: dict[str, Any] | None = None, **settings: Any):
        self.threads = _check_threads(threads)
        _limits_text(dem_limits)
        self.dem_limits = None if dem_limits is None else dict(dem_limits)
        self.settings = {k: v for k, v in settings.items()}

    def compile_decoder_for_dem(self, *, dem) -> CompiledDemDecoder:
        return CompiledDemDecoder(str(dem), self.kind, self.settings, self.threads, self.dem_limits)

    def __eq__(self, other) -> bool:
        mine = (self.settings, self.threads, self.dem_limits)
        return type(other) is type(self) and (other.settings, other.threads, other.dem_limits) == mine

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.settings.items())
        return f"{type(self).__name__}({args})"


class BpOsdSinterDecoder(_DemSinterDecoder):
    """BP+OSD with ``ldpc``'s names and defaults (min-sum, α = 1, parallel, ``max_iter`` = number
    of mechanisms, OSD-0; ``max_iter`` at most 1,048,576, ``osd_order`` at most 1024).
    ``threads`` (0..=1024) decodes each batch on that many threads; ``dem_limits`` bounds the
    model (see the module docs)."""

    kind = "bposd"

    def __init__(
        self,
        *,
        bp_method: str = "minimum_sum",
        max_iter: int = 0,
        ms_scaling_factor: float = 1.0,
        schedule: str = "parallel",
        osd_method: str = "osd0",
        osd_order: int = 0,
        threads: int = 1,
        dem_limits: dict[str, int] | None = None,
    ):
        super().__init__(
            threads=threads,
            dem_limits=dem_limits,
            bp_method=bp_method,
            max_iter=max_iter,
            ms_scaling_factor=ms_scaling_factor,
            schedule=schedule,
            osd_method=osd_method,
            osd_order=osd_order,
        )


class RelayBpSinterDecoder(_DemSinterDecoder):
    """Relay-BP with ``relay-bp``'s sinter names and defaults. ``alpha=None`` is no scaling,
    ``alpha=0`` the ramp; ``seed`` fixes the relay legs' memory strengths. The legs together run
    at most 1,048,576 iterations (``pre_iter + num_sets * set_max_iter``)."""

    kind = "relay-bp"

    def __init__(
        self,
        *,
        gamma0: float = 0.1,
        pre_iter: int = 60,
        num_sets: int = 60,
        set_max_iter: int = 60,
        gamma_dist_interval: tuple[float, float] = (-0.24, 0.66),
        stop_nconv: int = 5,
        alpha: float | None = None,
        seed: int = 0,
        threads: int = 1,
        dem_limits: dict[str, int] | None = None,
    ):
        super().__init__(
            threads=threads,
            dem_limits=dem_limits,
            gamma0=gamma0,
            pre_iter=pre_iter,
            num_sets=num_sets,
            set_max_iter=set_max_iter,
            gamma_dist_interval=tuple(gamma_dist_interval),
            stop_nconv=stop_nconv,
            alpha=alpha,
            seed=seed,
        )


class MatchingSinterDecoder(_DemSinterDecoder):
    """Minimum-weight perfect matching (sparse blossom) on the model's graphlike edges, with
    PyMatching's edge weights; it has no settings. ``threads`` decodes each batch on that many
    threads."""

    kind = "matching"

    def __init__(self, *, threads: int = 1):
        super().__init__(threads=threads)


def decoders(
    bposd: dict[str, Any] | None = None,
    relay_bp: dict[str, Any] | None = None,
    matching: dict[str, Any] | None = None,
) -> dict[str, sinter.Decoder]:
    """``{"backline-bposd": ..., "backline-relay-bp": ..., "backline-matching": ...}`` for
    ``sinter.collect``'s ``custom_decoders``; ``bposd``, ``relay_bp`` and ``matching`` are the
    keyword arguments of :class:`BpOsdSinterDecoder`, :class:`RelayBpSinterDecoder` and
    :class:`MatchingSinterDecoder`."""
    return {
        "backline-bposd": BpOsdSinterDecoder(**(bposd or {})),
        "backline-relay-bp": RelayBpSinterDecoder(**(relay_bp or {})),
        "backline-matching": MatchingSinterDecoder(**(matching or {})),
    }
