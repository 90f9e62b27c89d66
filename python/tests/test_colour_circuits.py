"""backline.colour_circuits: annotated colour-code memory circuits are well formed, have the
expected distance and decode with Chromobius."""

from __future__ import annotations

import sys

import pytest

stim = pytest.importorskip("stim")

from backline.colour_circuits import FAMILIES, colour_code_circuit  # noqa: E402

# Rounds per family for the decoding checks: those of the reference test circuits
# (phenom d5 r5, midout d5 r10, superdense d5 r20).
DECODE_ROUNDS = {"phenom": lambda d: d, "midout": lambda d: 2 * d, "superdense": lambda d: 4 * d}


def _circuit(family: str, d: int, basis: str, p: float = 1e-3, rounds: int | None = None):
    r = DECODE_ROUNDS[family](d) if rounds is None else rounds
    return colour_code_circuit(family, distance=d, rounds=r, p=p, basis=basis)


def _search_distance(circuit) -> int:
    return len(
        circuit.search_for_undetectable_logical_errors(
            dont_explore_detection_event_sets_with_size_above=4,
            dont_explore_edges_with_degree_above=9999,
            dont_explore_edges_increasing_symptom_degree=False,
            canonicalize_circuit_errors=True,
        )
    )


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("d", [3, 5])
@pytest.mark.parametrize("basis", ["X", "Z"])
def test_well_formed(family: str, d: int, basis: str) -> None:
    circuit = _circuit(family, d, basis)
    dem = circuit.detector_error_model(decompose_errors=False)
    assert dem.num_errors > 0
    assert circuit.num_observables == 1
    coords = circuit.get_detector_coordinates()
    assert len(coords) == circuit.num_detectors > 0
    assert all(len(c) >= 4 and c[3] in {0, 1, 2, 3, 4, 5} for c in coords.values())
    # Both bases and all three colours occur.
    assert {int(c[3]) for c in coords.values()} == {0, 1, 2, 3, 4, 5}
    # No deterministic measurement parity is left out: detectors plus the observable are
    # every determined measurement.
    assert circuit.count_determined_measurements() == circuit.num_detectors + 1
    dets, obs = circuit.without_noise().compile_detector_sampler().sample(
        10, separate_observables=True
    )
    assert not dets.any() and not obs.any()


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("d", [3, 5])
@pytest.mark.parametrize("basis", ["X", "Z"])
def test_distance(family: str, d: int, basis: str) -> None:
    rounds = d if family == "phenom" else 3
    circuit = _circuit(family, d, basis, rounds=rounds)
    # The midout fold trades distance for an ancilla-free, shallow round: one fault inside
    # a fold spreads to several data qubits, leaving a circuit distance of d // 2 + 1.
    expected = d // 2 + 1 if family == "midout" else d
    assert _search_distance(circuit) == expected


@pytest.mark.parametrize("family", FAMILIES)
def test_one_round_and_noiseless(family: str) -> None:
    circuit = colour_code_circuit(family, distance=3, rounds=1, p=0.0)
    assert circuit.num_detectors > 0
    circuit.detector_error_model()
    noise = {"DEPOLARIZE1", "DEPOLARIZE2", "X_ERROR", "Z_ERROR"}
    assert not any(inst.name in noise for inst in circuit.flattened())
    assert all(not inst.gate_args_copy() for inst in circuit.flattened()
               if inst.name in {"M", "MX", "MPP"})


def test_rounds_add_detectors() -> None:
    for family in FAMILIES:
        small = colour_code_circuit(family, distance=3, rounds=4, p=0.001)
        large = colour_code_circuit(family, distance=3, rounds=6, p=0.001)
        assert large.num_detectors > small.num_detectors


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"family": "nope"}, "phenom, midout, superdense"),
        ({"distance": 4}, "odd"),
        ({"distance": 1}, "at least 3"),
        ({"distance": 3.0}, "integer"),
        ({"distance": True}, "integer"),
        ({"rounds": 0}, "rounds"),
        ({"p": -0.01}, r"\[0, 0.5\)"),
        ({"p": 0.5}, r"\[0, 0.5\)"),
        ({"basis": "Y"}, "basis"),
        ({"basis": "z"}, "basis"),
    ],
)
def test_bad_arguments(kwargs: dict, match: str) -> None:
    args = {"family": "phenom", "distance": 3, "rounds": 3, "p": 0.001, "basis": "Z"} | kwargs
    family = args.pop("family")
    with pytest.raises(ValueError, match=match):
        colour_code_circuit(family, **args)


def test_missing_stim_is_a_clear_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "stim", None)
    with pytest.raises(ImportError, match="stim"):
        colour_code_circuit("phenom", distance=3, rounds=3, p=0.001)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("basis", ["X", "Z"])
def test_chromobius_decodes(family: str, basis: str) -> None:
    chromobius = pytest.importorskip("chromobius")
    np = pytest.importorskip("numpy")
    circuit = _circuit(family, 5, basis)
    decoder = chromobius.compile_decoder_for_dem(circuit.detector_error_model())
    shots = 2000
    dets, obs = circuit.compile_detector_sampler(seed=2024).sample(
        shots, separate_observables=True, bit_packed=True
    )
    predicted = decoder.predict_obs_flips_from_dets_bit_packed(dets)
    failures = np.count_nonzero(np.any(predicted != obs, axis=1))
    assert failures / shots < 0.05, (family, basis, failures)
