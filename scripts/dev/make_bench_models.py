#!/usr/bin/env python3
"""Dev-only: writes the models of the model cases of `cargo bench -p backline-decoders --bench
decode` with stim: stim.Circuit.generated("surface_code:rotated_memory_x", distance=d,
rounds=d) at p = 0.001 on all four noise arguments, decompose_errors=True, for d = 9 and 13
(d = 5 comes from decoders/tests/data/dem/); and for `cargo bench --bench bp` the Z memory
models of d = 5, 7 and 9, not decomposed. The bench reads them from BACKLINE_BENCH_MODELS
(default target/bench-models).

Usage (any Python with stim 1.16):  scripts/dev/make_bench_models.py [OUT_DIR]
"""

import pathlib
import sys

import stim

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "target/bench-models"


def write(basis: str, d: int, decompose: bool) -> None:
    """stim's rotated surface-code memory in `basis`, distance and rounds `d`, p = 0.001 on the
    four noise arguments, its model written to OUT (decomposed for matching)."""
    p = 0.001
    circuit = stim.Circuit.generated(
        f"surface_code:rotated_memory_{basis}",
        distance=d,
        rounds=d,
        after_clifford_depolarization=p,
        before_round_data_depolarization=p,
        before_measure_flip_probability=p,
        after_reset_flip_probability=p,
    )
    path = OUT / f"surface_{basis}_d{d}_r{d}_p0.001.dem"
    path.write_text(str(circuit.detector_error_model(decompose_errors=decompose)) + "\n")
    print(path)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for d in (9, 13):
        write("x", d, decompose=True)
    # The BP bench's models (`cargo bench --bench bp`): Z memory, d = 5, 7, 9, not decomposed.
    for d in (5, 7, 9):
        write("z", d, decompose=False)


if __name__ == "__main__":
    main()
