#!/usr/bin/env python3
"""Dev-only: writes the detector-error-model fixtures of decoders/tests/data/dem/ with stim.

For a rotated surface code Z-memory circuit (stim.Circuit.generated("surface_code:rotated_memory_z",
distance=3, rounds=8) with after_clifford_depolarization, before_measure_flip_probability and
after_reset_flip_probability all 0.01):

  surface_d3_r8_p0.01.dem        circuit.detector_error_model(decompose_errors=True): stim's text,
                                 with its repeat block, shift_detectors and coordinates
  surface_d3_r8_p0.01.columns    the same model flattened by stim, one merged mechanism per line:
                                 "p | detectors | observables", in first-appearance order
  surface_d3_r8_p0.01.dets.01    2,000 shots of detection events (seed 7), stim's 01 format
  surface_d3_r8_p0.01.dets.b8    the same shots, b8
  surface_d3_r8_p0.01.obs.01     their observable flips, 01

And the streaming decoder's figure model: surface_d5_r5_p0.001.dem, the same circuit at
distance 5, 5 rounds, p = 0.001 (120 detectors in 6 rounds), as stim writes it.

Usage (any Python with stim 1.16):  scripts/dev/make_dem_fixtures.py [OUT_DIR]
"""

import pathlib
import sys

import stim

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "decoders/tests/data/dem"
P = 0.01
NAME = "surface_d3_r8_p0.01"


def columns(dem):
    """Merged mechanisms of the flattened model, in first-appearance order."""
    index, cols = {}, []
    for inst in dem.flattened():
        if inst.type != "error":
            continue
        dets, obs = set(), set()
        for t in inst.targets_copy():
            if t.is_relative_detector_id():
                dets ^= {t.val}
            elif t.is_logical_observable_id():
                obs ^= {t.val}
        if not dets and not obs:
            continue
        key = (tuple(sorted(dets)), tuple(sorted(obs)))
        p = inst.args_copy()[0]
        if key in index:
            q = cols[index[key]][0]
            cols[index[key]][0] = q * (1 - p) + p * (1 - q)
        else:
            index[key] = len(cols)
            cols.append([p, key[0], key[1]])
    return cols


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    circuit = stim.Circuit.generated(
        "surface_code:rotated_memory_z",
        distance=3,
        rounds=8,
        after_clifford_depolarization=P,
        before_measure_flip_probability=P,
        after_reset_flip_probability=P,
    )
    dem = circuit.detector_error_model(decompose_errors=True)
    (OUT / f"{NAME}.dem").write_text(str(dem) + "\n")
    with open(OUT / f"{NAME}.columns", "w") as f:
        f.write(f"# {dem.num_detectors} detectors, {dem.num_observables} observables\n")
        for p, dets, obs in columns(dem):
            f.write(f"{p!r} | {' '.join(map(str, dets))} | {' '.join(map(str, obs))}\n")
    sampler = circuit.compile_detector_sampler(seed=7)
    dets, obs = sampler.sample(2000, separate_observables=True)
    for fmt in ["01", "b8"]:
        stim.write_shot_data_file(
            data=dets, path=OUT / f"{NAME}.dets.{fmt}", format=fmt, num_detectors=dem.num_detectors
        )
    stim.write_shot_data_file(
        data=obs, path=OUT / f"{NAME}.obs.01", format="01", num_observables=dem.num_observables
    )
    print(f"wrote {NAME}.* to {OUT}: {dem.num_detectors} detectors, {dem.num_errors} errors")
    stream = stim.Circuit.generated(
        "surface_code:rotated_memory_z",
        distance=5,
        rounds=5,
        after_clifford_depolarization=0.001,
        before_measure_flip_probability=0.001,
        after_reset_flip_probability=0.001,
    ).detector_error_model(decompose_errors=True)
    (OUT / "surface_d5_r5_p0.001.dem").write_text(str(stream) + "\n")
    print(f"wrote surface_d5_r5_p0.001.dem: {stream.num_detectors} detectors, {stream.num_errors} errors")


if __name__ == "__main__":
    main()
