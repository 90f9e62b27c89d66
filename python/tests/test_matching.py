"""Matching (``backline-matching``) beside PyMatching: a d = 3, 5, 7 ``sinter.collect`` sweep
whose two curves agree within statistics, the same shots decoded by both, the streaming
matcher through a ``StreamSession``, and the errors of models matching cannot take."""

from __future__ import annotations

import math

import numpy as np
import pytest

stim = pytest.importorskip("stim")
sinter = pytest.importorskip("sinter")
pymatching = pytest.importorskip("pymatching")

import backline  # noqa: E402
from backline import _native, errors  # noqa: E402
from backline.decoders import Matching  # noqa: E402
from backline.errors import CoprocessorFunctionError  # noqa: E402
from backline.sinter import BpOsdSinterDecoder, MatchingSinterDecoder, decoders  # noqa: E402


def memory_x(d: int, p: float, rounds: int | None = None) -> stim.Circuit:
    return stim.Circuit.generated(
        "surface_code:rotated_memory_x",
        distance=d,
        rounds=d if rounds is None else rounds,
        after_clifford_depolarization=p,
        before_measure_flip_probability=p,
        after_reset_flip_probability=p,
    )


def test_sinter_sweep_beside_pymatching():
    # p = 0.005, below threshold: each curve falls with d, and at each d the two decoders'
    # rates (independent shots) agree within 4σ of a two-proportion test.
    p, shots = 0.005, 6000
    tasks = [sinter.Task(circuit=memory_x(d, p), json_metadata={"d": d}) for d in (3, 5, 7)]
    stats = sinter.collect(
        num_workers=2,
        tasks=tasks,
        decoders=["backline-matching", "pymatching"],
        custom_decoders=decoders(),
        max_shots=shots,
        max_errors=100_000,
    )
    assert len(stats) == 6
    got = {(s.decoder, s.json_metadata["d"]): (s.errors, s.shots) for s in stats}
    for d in (3, 5, 7):
        (e1, n1), (e2, n2) = got[("backline-matching", d)], got[("pymatching", d)]
        assert n1 == n2 == shots
        pooled = (e1 + e2) / (n1 + n2)
        sigma = math.sqrt(max(pooled * (1 - pooled) * (1 / n1 + 1 / n2), 1e-12))
        assert abs(e1 / n1 - e2 / n2) <= 4 * sigma + 1 / n1, (d, got)
    rate = {k: e / n for k, (e, n) in got.items()}
    for dec in ("backline-matching", "pymatching"):
        # Each curve falls with d: from d = 3 to 7 strictly (about 0.012 to 0.003 here), and no
        # step rises by more than 3σ of its two counts (d = 3 and 5 are within 2σ of each other
        # at this p and these shots, so a strict order of every step failed about one run in
        # twenty, PyMatching's own curve included).
        assert rate[(dec, 7)] < rate[(dec, 3)], rate
        for lo, hi in ((3, 5), (5, 7)):
            e_lo, e_hi = got[(dec, lo)][0], got[(dec, hi)][0]
            assert e_hi - e_lo <= 3 * math.sqrt(max(e_lo + e_hi, 1)), (dec, lo, hi, got)


def test_the_same_shots_get_pymatchings_predictions():
    c = memory_x(5, 0.005)
    dem = c.detector_error_model(decompose_errors=True)
    dets, obs = c.compile_detector_sampler(seed=7).sample(5000, separate_observables=True, bit_packed=True)
    ours = MatchingSinterDecoder().compile_decoder_for_dem(dem=dem)
    got = ours.decode_shots_bit_packed(bit_packed_detection_event_data=dets)
    want = pymatching.Matching.from_detector_error_model(dem).decode_batch(
        dets, bit_packed_shots=True, bit_packed_predictions=True
    )
    # Both find a minimum-weight matching with the same integer weights, and where two
    # matchings tie ours falls as PyMatching's does (its flooder's event order, its matcher's
    # steps).
    differ = int((got != want).any(axis=1).sum())
    assert differ == 0, differ
    fails = int((got != obs).any(axis=1).sum())
    assert 0 < fails < 200


def test_streaming_matching_through_a_session():
    c = memory_x(3, 0.01, rounds=6)
    dem = c.detector_error_model(decompose_errors=True)
    f = backline.stream_decoder(dem, window=4, commit=2, decoder="matching")
    assert ":matching:" in f.spec
    shots = 300
    dets, obs = c.compile_detector_sampler(seed=3).sample(shots, separate_observables=True)
    whole = _native.DemDecoder(str(dem), "matching", [])
    packed = np.packbits(dets, axis=1, bitorder="little")
    want = np.frombuffer(whole.decode_bit_packed(packed.tobytes(), shots), dtype=np.uint8)
    with backline.StreamSession(backline.Coprocessor(coprocessor_fn=f)) as s:
        got = np.array([s.decode_shot(d)[0] for d in dets], dtype=np.uint8)
        assert s.final
    differ = int((got != (want & 1)).sum())
    fails = int((got != obs[:, 0]).sum())
    assert differ <= 10, differ
    assert fails <= 40, fails


def test_models_matching_cannot_take_raise():
    # Not decomposed: a part of three or more detectors, named by its line.
    dem = memory_x(3, 0.01).detector_error_model()
    with pytest.raises(errors.DecoderSettingsError, match=r":\d+: this error has a part that flips \d+ detectors"):
        MatchingSinterDecoder().compile_decoder_for_dem(dem=dem)
    with pytest.raises(errors.DecoderSettingsError, match=r"unknown setting `max_iter` \(expected one of correlations\)"):
        _native.DemDecoder("error(0.1) D0\n", "matching", [("max_iter", "3")])
    good = memory_x(3, 0.01).detector_error_model(decompose_errors=True)
    with pytest.raises(CoprocessorFunctionError, match="unknown setting `max_iter`"):
        backline.stream_decoder(good, decoder="matching", max_iter=3)
    with pytest.raises(CoprocessorFunctionError, match="window = 9 is longer"):
        backline.stream_decoder(good, window=9, decoder="matching")


def test_correlated_matching_gets_pymatchings_correlated_predictions():
    # PyMatching >= 2.3's enable_correlations: the same two-pass rule, the same integer
    # weights, the same first matching and paths where several tie: the same answers and
    # weights.
    c = stim.Circuit.generated(
        "surface_code:rotated_memory_x",
        distance=5,
        rounds=5,
        after_clifford_depolarization=0.004,
        before_round_data_depolarization=0.004,
        before_measure_flip_probability=0.004,
        after_reset_flip_probability=0.004,
    )
    dem = c.detector_error_model(decompose_errors=True)
    dets, obs = c.compile_detector_sampler(seed=11).sample(20000, separate_observables=True, bit_packed=True)
    ours = MatchingSinterDecoder(correlations=True).compile_decoder_for_dem(dem=dem)
    got = ours.decode_shots_bit_packed(bit_packed_detection_event_data=dets)
    m = pymatching.Matching.from_detector_error_model(dem, enable_correlations=True)
    want = m.decode_batch(dets, bit_packed_shots=True, bit_packed_predictions=True, enable_correlations=True)
    differ = int((got != want).any(axis=1).sum())
    assert differ == 0, differ
    unpacked = np.unpackbits(dets, axis=1, bitorder="little")[:, : dem.num_detectors]
    _, w_ours = Matching.from_detector_error_model(dem, enable_correlations=True).decode_batch(
        unpacked[:2000], return_weights=True, enable_correlations=True
    )
    _, w_theirs = m.decode_batch(unpacked[:2000], return_weights=True, enable_correlations=True)
    np.testing.assert_allclose(w_ours, w_theirs, rtol=1e-6)
    plain = MatchingSinterDecoder().compile_decoder_for_dem(dem=dem)
    plain_fails = int((plain.decode_shots_bit_packed(bit_packed_detection_event_data=dets) != obs).any(axis=1).sum())
    fails = int((got != obs).any(axis=1).sum())
    # Correlations help at circuit level (PyMatching: about 0.7x the logical errors here).
    assert 0 < fails < plain_fails, (fails, plain_fails)


def test_correlations_are_a_bool_setting_of_matching_only():
    import backline.errors

    dem = stim.DetectorErrorModel("error(0.1) D0 D1\nerror(0.1) D0\nerror(0.1) D1 ^ D2\nerror(0.1) D2")
    MatchingSinterDecoder(correlations=1).compile_decoder_for_dem(dem=dem)
    with pytest.raises(backline.errors.DecoderSettingsError, match="correlations"):
        MatchingSinterDecoder(correlations=2).compile_decoder_for_dem(dem=dem)
    with pytest.raises(TypeError, match="correlations"):
        BpOsdSinterDecoder(correlations=True)
