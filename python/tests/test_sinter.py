"""backline.sinter: the circuit-level decoders as sinter custom decoders — a two-task threshold
sweep through sinter.collect, decoding against stim's own samples, pickling, the GIL released
while Rust decodes, and compile errors that surface as errors."""

from __future__ import annotations

import pickle
import threading
import time

import numpy as np
import pytest

stim = pytest.importorskip("stim")
sinter = pytest.importorskip("sinter")

from backline import _native, errors  # noqa: E402
from backline.sinter import BpOsdSinterDecoder, RelayBpSinterDecoder, decoders  # noqa: E402


def surface(d: int, p: float) -> stim.Circuit:
    return stim.Circuit.generated(
        "surface_code:rotated_memory_z",
        distance=d,
        rounds=d,
        after_clifford_depolarization=p,
        before_measure_flip_probability=p,
        after_reset_flip_probability=p,
    )


def test_decoders_names_the_three_decoders():
    d = decoders(relay_bp={"stop_nconv": 1})
    assert set(d) == {"backline-bposd", "backline-relay-bp", "backline-matching"}
    assert isinstance(d["backline-bposd"], BpOsdSinterDecoder)
    assert d["backline-relay-bp"].settings["stop_nconv"] == 1


def test_two_task_threshold_sweep_with_sinter_collect():
    # Below threshold, the larger code fails less often, with either decoder.
    p = 0.003
    tasks = [sinter.Task(circuit=surface(d, p), json_metadata={"d": d, "p": p}) for d in (3, 5)]
    stats = sinter.collect(
        num_workers=2,
        tasks=tasks,
        decoders=["backline-bposd", "backline-relay-bp"],
        custom_decoders=decoders(
            bposd={"max_iter": 30, "ms_scaling_factor": 0.625, "osd_method": "osd_cs", "osd_order": 4},
            relay_bp={"stop_nconv": 1},
        ),
        max_shots=4000,
        max_errors=10_000,
    )
    assert len(stats) == 4
    rate = {(s.decoder, s.json_metadata["d"]): s.errors / s.shots for s in stats}
    for s in stats:
        assert s.shots == 4000
    for dec in ("backline-bposd", "backline-relay-bp"):
        assert 0 < rate[(dec, 3)] < 0.05, rate
        assert rate[(dec, 5)] < rate[(dec, 3)], rate


def sampled(d: int, p: float, shots: int):
    c = surface(d, p)
    dets, obs = c.compile_detector_sampler(seed=5).sample(shots, separate_observables=True, bit_packed=True)
    # Decomposed, as sinter hands models to decoders (matching needs the `^` parts).
    return c.detector_error_model(decompose_errors=True), dets, obs


def test_predictions_beat_no_decoding_and_survive_pickling():
    dem, dets, obs = sampled(3, 0.005, 3000)
    undecoded = int(obs.any(axis=1).sum())
    for name, dec in decoders().items():
        compiled = dec.compile_decoder_for_dem(dem=dem)
        pred = compiled.decode_shots_bit_packed(bit_packed_detection_event_data=dets)
        assert pred.shape == obs.shape and pred.dtype == np.uint8
        fails = int((pred != obs).any(axis=1).sum())
        assert fails * 3 < undecoded, (name, fails, undecoded)
        # The decoder and the compiled decoder pickle; the copy decodes the same.
        again = pickle.loads(pickle.dumps(compiled))
        assert (again.decode_shots_bit_packed(bit_packed_detection_event_data=dets) == pred).all()
        assert pickle.loads(pickle.dumps(dec)) == dec


def test_the_gil_is_released_while_rust_decodes():
    dem, dets, _ = sampled(5, 0.006, 1500)
    compiled = RelayBpSinterDecoder(stop_nconv=1).compile_decoder_for_dem(dem=dem)
    ticks = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1

    t = threading.Thread(target=count)
    t.start()
    time.sleep(0.05)
    before = ticks[0]
    t0 = time.perf_counter()
    compiled.decode_shots_bit_packed(bit_packed_detection_event_data=dets)
    elapsed = time.perf_counter() - t0
    during = ticks[0] - before
    stop.set()
    t.join()
    # Holding the GIL, the counting thread would barely run (a switch per 5 ms at most, and
    # only between bytecodes of this thread, which is inside one call).
    assert elapsed > 0.02, elapsed
    assert during > 1000, (during, elapsed)


def test_compile_errors_surface_as_errors():
    dem = surface(3, 0.005).detector_error_model()
    with pytest.raises(errors.DecoderSettingsError, match=r"gamma_dist_interval = 0.5: expected low ≤ high"):
        RelayBpSinterDecoder(gamma_dist_interval=(0.5, 0.1)).compile_decoder_for_dem(dem=dem)
    with pytest.raises(errors.DecoderSettingsError, match="stop_nconv"):
        RelayBpSinterDecoder(stop_nconv=0).compile_decoder_for_dem(dem=dem)
    with pytest.raises(errors.DecoderSettingsError, match="osd_method: `osd9`"):
        BpOsdSinterDecoder(osd_method="osd9").compile_decoder_for_dem(dem=dem)
    with pytest.raises(errors.DecoderSettingsError, match=r"mechanism 1 has probability 0.6"):
        BpOsdSinterDecoder().compile_decoder_for_dem(dem=stim.DetectorErrorModel("error(0.1) D0\nerror(0.6) D0 D1"))
    with pytest.raises(errors.DetectorErrorModelError, match=r"m.dem:2: unknown instruction `flip`"):
        _native.DemDecoder("error(0.1) D0\nflip D1\n", "bposd", [], 1, "m.dem")
    with pytest.raises(errors.DecoderSettingsError, match="unknown decoder"):
        _native.DemDecoder("error(0.1) D0\n", "mwpm", [], 1, "m.dem")
    compiled = BpOsdSinterDecoder().compile_decoder_for_dem(dem=dem)
    with pytest.raises(ValueError, match="expected"):
        compiled.decode_shots_bit_packed(bit_packed_detection_event_data=np.zeros((4, 1), dtype=np.uint8))
