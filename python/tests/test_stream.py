"""Streaming decoders from Python: ``backline.stream_decoder`` as a coprocessor function, shots
streamed round by round through ``StreamSession`` against the whole-history decoder, and the
statuses of refused calls."""

import numpy as np
import pytest
import stim

import backline
from backline import _native
from backline.errors import CoprocessorFunctionError, StreamError

SETTINGS = dict(max_iter=30, ms_scaling_factor=0.625, osd_method="osd_cs", osd_order=7)


def circuit(d=3, rounds=6, p=0.01):
    return stim.Circuit.generated(
        "surface_code:rotated_memory_z",
        distance=d,
        rounds=rounds,
        after_clifford_depolarization=p,
        before_measure_flip_probability=p,
        after_reset_flip_probability=p,
    )


def test_a_model_becomes_a_function_with_its_rounds():
    dem = circuit().detector_error_model(decompose_errors=True)
    f = backline.stream_decoder(dem, window=4, commit=2, **SETTINGS)
    assert f.round_sizes == [4] + [8] * 5 + [4]
    assert (f.num_detectors, f.num_observables, f.rounds) == (dem.num_detectors, 1, 7)
    assert f.spec.startswith("stream:") and "window=4;commit=2" in f.spec
    cop = backline.Coprocessor(coprocessor_fn=f)
    assert cop.fns() == [(0, f.spec)]
    # The same text makes the same file; a path works too.
    g = backline.stream_decoder(str(dem), window=4, commit=2, **SETTINGS)
    assert g.spec == f.spec
    path = f.spec.split(":")[1]
    assert backline.stream_decoder(path).round_sizes == f.round_sizes
    assert len(f.split_rounds(np.zeros(dem.num_detectors))) == 7


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(window=0), "window=0"),
        (dict(decoder="mwpm"), "decoder='mwpm'"),
        (dict(window=3, commit=4), "commit = 4"),
        (dict(flavour=1), "unknown setting `flavour`"),
        (dict(gamma0=0.1), "gamma0"),
        (dict(streams=0), "streams=0"),
    ],
)
def test_bad_settings_raise_at_definition(kwargs, needle):
    dem = circuit().detector_error_model(decompose_errors=True)
    with pytest.raises(CoprocessorFunctionError, match=None) as e:
        backline.stream_decoder(dem, **kwargs)
    assert needle in str(e.value)


def test_models_without_rounds_or_files_raise():
    with pytest.raises(CoprocessorFunctionError, match="no time coordinate"):
        backline.stream_decoder("error(0.1) D0 D1\nerror(0.1) D1\n")
    with pytest.raises(CoprocessorFunctionError, match="not found"):
        backline.stream_decoder("/nonexistent/model.dem")


def test_shots_stream_like_the_whole_history():
    c = circuit()
    dem = c.detector_error_model(decompose_errors=True)
    f = backline.stream_decoder(dem, window=4, commit=2, **SETTINGS)
    shots = 300
    dets, obs = c.compile_detector_sampler(seed=3).sample(shots, separate_observables=True)
    whole = _native.DemDecoder(str(dem), "bposd", [(k, str(v)) for k, v in SETTINGS.items()])
    packed = np.packbits(dets, axis=1, bitorder="little")
    want = np.frombuffer(whole.decode_bit_packed(packed.tobytes(), shots), dtype=np.uint8)
    with backline.StreamSession(backline.Coprocessor(coprocessor_fn=f)) as s:
        got = np.array([s.decode_shot(d)[0] for d in dets], dtype=np.uint8)
        assert s.final and s.rounds_received == 7
    fails_stream = int((got != obs[:, 0]).sum())
    fails_whole = int(((want & 1) != obs[:, 0]).sum())
    differ = int((got != (want & 1)).sum())
    # Paired: every shot where they differ moves one count by one.
    assert abs(fails_stream - fails_whole) <= differ
    assert differ <= 15, (fails_stream, fails_whole, differ)
    assert 1 <= fails_whole <= 60


def test_refused_calls_raise_with_the_streams_status():
    dem = circuit().detector_error_model(decompose_errors=True)
    f = backline.stream_decoder(dem, window=4, commit=2, streams=2, idle_ms=60_000)
    zeros = [np.zeros(n, dtype=np.uint8) for n in f.round_sizes]
    with backline.StreamSession(f, transport="udp", decoder_id=1) as s:
        with pytest.raises(StreamError) as e:
            s.get_corrections()
        assert e.value.status == "not_ready"
        s.enqueue(0, zeros[0])
        with pytest.raises(StreamError) as e:
            s.enqueue(0, zeros[0])
        assert e.value.status == "busy"
        with pytest.raises(StreamError) as e:
            s.enqueue(2, zeros[2])
        assert e.value.status == "syndromes_dropped"
        with pytest.raises(StreamError) as e:
            s.enqueue(1, zeros[1])
        assert e.value.status == "syndromes_dropped"
        s.reset()
        for r, z in enumerate(zeros):
            s.enqueue(r, z)
        assert list(s.get_corrections(reset=True)) == [0]
        with pytest.raises(ValueError, match="round 0: 5 detection events"):
            s.enqueue(0, np.zeros(5))
        with pytest.raises(StreamError) as e:
            s.enqueue(0, b"\x00\x00")
        assert e.value.status == "bad_request"
