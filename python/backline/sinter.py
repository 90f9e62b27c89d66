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
- ``backline-matching-correlated``: the same with ``correlations=True`` — PyMatching's
  two-pass correlated matching (sinter's ``pymatching-correlated``).
- ``backline-mobius``: the Möbius decoder of colour codes (:class:`MobiusSinterDecoder`), what
  ``chromobius``'s sinter decoder does: one exact matching over the three restricted lattices,
  lifted back to the observables. Each detector's 4th coordinate is its colour and basis (0, 1,
  2 = red, green, blue X; 3, 4, 5 = red, green, blue Z; -1 = ignored); a model whose 4th
  coordinates name fewer than two colours (none, or sinter's post-selection flag) is decoded as
  a matchable code of one colour, as matching decodes it. A bad annotation, or an error
  that does not split into the colour code's pieces, raises ``DetectorErrorModelError`` naming
  the detector or the line. A model whose errors are not split into the colour code's pieces
  by stim needs none: the decoder splits them.
- ``backline-mobius-correlated``: the same with ``correlations=True`` — a second matching with
  the edges that share an error with the first matching's edges made lighter (PyMatching's
  correlated matching on the Möbius graph): fewer logical failures than Chromobius on
  circuit-level colour codes, at about twice the plain decoder's time (docs/decoders.md).

``compile_decoder_for_dem`` hands the model's text to Rust in memory (no temporary files) and
``decode_shots_bit_packed`` decodes each batch in Rust with the GIL released. A model or a
setting the decoder cannot use raises (:class:`~backline.errors.DetectorErrorModelError`,
:class:`~backline.errors.DecoderSettingsError`) when the decoder is compiled; nothing falls
back to another decoder. Decoders and compiled decoders pickle (a compiled one is rebuilt from
its model's text on unpickling).

Nothing a caller passes takes the interpreter down. ``dem_limits`` (a dict of ``targets``,
``coords``, ``mechanisms``, ``detectors``, over the ``BACKLINE_DEM_LIMITS`` variable and the
defaults 2^24, 2^24, 2^22, 2^22) bounds what a model may expand to: a small text that unrolls to billions of targets
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

__all__ = [
    "BpOsdSinterDecoder",
    "CompiledDemDecoder",
    "MatchingSinterDecoder",
    "MobiusSinterDecoder",
    "RelayBpSinterDecoder",
    "decoders",
]


def _settings_text(settings: dict[str, Any], decoder: str = "") -> list[tuple[str, str]]:
    """Settings as (name, text) pairs, the form the native decoder parses. A bool is a value
    only of the decoder's on/off settings (``correlations``); elsewhere it is refused rather than
    read as 0 or 1."""
    flags = _flag_keys(decoder)
    out = []
    for key, value in settings.items():
        if value is None:
            text = "none"
        elif isinstance(value, (tuple, list)):
            text = ",".join(repr(float(v)) for v in value)
        elif isinstance(value, bool) and key in flags:
            text = "1" if value else "0"
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
        raise TypeError(f"dem_limits: expected a dict of targets, coords, mechanisms, detectors, got {type(limits).__name__}")
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
            _settings_text(settings, decoder),
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


def _registry() -> dict[str, list[tuple[str, str, str, str, str, str]]]:
    """The native decoder registry: ``{name: [(key, type, offline default, real-time default,
    range, help)]}`` — the one table of names and settings every front end reads."""
    return {name: settings for name, _title, settings in _native.decoder_registry()}


def _value_of(vtype: str, text: str) -> Any:
    """A registry default (text) as the Python value a keyword argument takes."""
    if vtype == "integer":
        return int(text)
    if vtype == "number":
        return float(text)
    if vtype == "number or none":
        return None if text == "none" else float(text)
    if vtype == "LO,HI":
        lo, hi = text.split(",")
        return (float(lo), float(hi))
    if vtype == "0 or 1":
        return text in ("1", "true")
    return text


def _flag_keys(kind: str) -> set[str]:
    """The on/off settings (type ``0 or 1``) of the registered decoder ``kind``."""
    try:
        return {key for key, vtype, *_rest in _registry().get(kind, []) if vtype == "0 or 1"}
    except Exception:  # an old native module without the registry
        return set()


#: Where a sinter decoder's defaults differ from the registry's offline ones: BP+OSD runs the
#: f32 min-sum kernel in sweeps (the same logical failures as f64 on the models measured in
#: docs/decoders.md, "precision", at a third of the time); ``precision="f64"`` gives ldpc's
#: arithmetic back.
_SINTER_DEFAULTS: dict[str, dict[str, Any]] = {"bposd": {"precision": "f32"}}


def _offline_defaults(kind: str) -> dict[str, Any]:
    """``{setting: default}`` of the registered decoder ``kind`` for sinter, in its order: the
    registry's offline defaults, with ``_SINTER_DEFAULTS`` over them."""
    values = {key: _value_of(vtype, offline) for key, vtype, offline, _rt, _range, _help in _registry()[kind]}
    for key, value in _SINTER_DEFAULTS.get(kind, {}).items():
        if key in values:
            values[key] = value
    return values


class _RegisteredSinterDecoder(_DemSinterDecoder):
    """A registered decoder for sinter: its keyword arguments are the registry's settings of
    ``kind`` (names and offline defaults), plus ``threads`` and ``dem_limits``. A keyword the
    decoder does not have raises ``TypeError`` listing those it has; a bad value raises
    :class:`~backline.errors.DecoderSettingsError` with the message every entry point gives."""

    def __init__(self, *, threads: int = 1, dem_limits: dict[str, int] | None = None, **settings: Any):
        defaults = _offline_defaults(self.kind)
        for key in settings:
            if key not in defaults:
                known = ", ".join(defaults) or f"none ({self.kind} has no settings)"
                raise TypeError(
                    f"{type(self).__name__}() got an unexpected keyword argument {_excerpt(repr(key))}; "
                    f"its settings: {known}, and threads, dem_limits"
                )
        values = {**defaults, **settings}
        if "gamma_dist_interval" in values and isinstance(values["gamma_dist_interval"], list):
            values["gamma_dist_interval"] = tuple(values["gamma_dist_interval"])
        super().__init__(threads=threads, dem_limits=dem_limits, **values)


def _signature(kind: str):
    """The keyword-only signature of a registered decoder's sinter class (for ``help()``)."""
    import inspect

    params = [
        inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=value)
        for key, value in _offline_defaults(kind).items()
    ]
    params.append(inspect.Parameter("threads", inspect.Parameter.KEYWORD_ONLY, default=1))
    params.append(inspect.Parameter("dem_limits", inspect.Parameter.KEYWORD_ONLY, default=None))
    return inspect.Signature(params)


class BpOsdSinterDecoder(_RegisteredSinterDecoder):
    """BP+OSD with ``ldpc``'s names and defaults (min-sum, α = 1, parallel, ``max_iter`` = number
    of mechanisms, OSD-0; ``max_iter`` at most 1,048,576, ``osd_order`` at most 1024): the
    registry's ``bposd`` settings, BP on the f32 kernel (``precision="f32"``; ``"f64"`` is
    ldpc's arithmetic). ``threads`` (0..=1024) decodes each batch on that many
    threads; ``dem_limits`` bounds the model (see the module docs)."""

    kind = "bposd"


class RelayBpSinterDecoder(_RegisteredSinterDecoder):
    """Relay-BP with ``relay-bp``'s sinter names and defaults: the registry's ``relay-bp``
    settings. ``alpha=None`` is no scaling, ``alpha=0`` the ramp (scaled by
    ``alpha_iteration_scaling_factor``); ``seed`` fixes the relay legs' memory strengths. The legs
    together run at most 1,048,576 iterations (``pre_iter + num_sets * set_max_iter``)."""

    kind = "relay-bp"


class MatchingSinterDecoder(_RegisteredSinterDecoder):
    """Minimum-weight perfect matching (sparse blossom) on the model's graphlike edges, with
    PyMatching's edge weights: the registry's ``matching`` settings. ``correlations=True`` is
    PyMatching's correlated matching (``enable_correlations``; sinter's ``pymatching-correlated``).
    ``threads`` decodes each batch on that many threads."""

    kind = "matching"


class MobiusSinterDecoder(_RegisteredSinterDecoder):
    """The Möbius decoder of colour codes, Chromobius's construction: the registry's ``mobius``
    settings (names and offline defaults). Each detector's 4th coordinate gives its colour and
    basis (0, 1, 2 = red, green, blue X; 3, 4, 5 = red, green, blue Z; -1 = ignored); a model
    without any is decoded as a matchable code of one colour. A model it cannot use raises
    :class:`~backline.errors.DetectorErrorModelError` naming the detector or the line.
    ``threads`` decodes each batch on that many threads."""

    kind = "mobius"


for _cls in (BpOsdSinterDecoder, RelayBpSinterDecoder, MatchingSinterDecoder, MobiusSinterDecoder):
    try:
        _cls.__signature__ = _signature(_cls.kind)  # type: ignore[attr-defined]
    except Exception:  # an old native module without the registry: the plain signature stays
        pass


def decoders(
    bposd: dict[str, Any] | None = None,
    relay_bp: dict[str, Any] | None = None,
    matching: dict[str, Any] | None = None,
    mobius: dict[str, Any] | None = None,
) -> dict[str, sinter.Decoder]:
    """``{"backline-bposd": ..., "backline-relay-bp": ..., "backline-matching": ...,
    "backline-matching-correlated": ..., "backline-mobius": ..., "backline-mobius-correlated":
    ...}`` for ``sinter.collect``'s ``custom_decoders``; ``bposd``, ``relay_bp``, ``matching``
    and ``mobius`` are the keyword arguments of :class:`BpOsdSinterDecoder`,
    :class:`RelayBpSinterDecoder`, :class:`MatchingSinterDecoder` and
    :class:`MobiusSinterDecoder` (each correlated one takes its plain one's with
    ``correlations=True``)."""
    return {
        "backline-bposd": BpOsdSinterDecoder(**(bposd or {})),
        "backline-relay-bp": RelayBpSinterDecoder(**(relay_bp or {})),
        "backline-matching": MatchingSinterDecoder(**(matching or {})),
        "backline-matching-correlated": MatchingSinterDecoder(**{**(matching or {}), "correlations": True}),
        "backline-mobius": MobiusSinterDecoder(**(mobius or {})),
        "backline-mobius-correlated": MobiusSinterDecoder(**{**(mobius or {}), "correlations": True}),
    }
