#!/usr/bin/env python3
"""Dev-only: backline's Möbius colour-code decoder beside Chromobius 1.1.1 on the same shots,
through sinter's decoder interface, one thread, one process.

For each point (family, distance d, rounds, p) the annotated circuit comes from
``backline.colour_circuits.colour_code_circuit`` (memory in the Z basis), its model from stim
(``detector_error_model()``, errors not decomposed: both decoders split them themselves), and
``--shots`` shots from stim's seeded detector sampler. Each decoder is compiled once
(``compile_decoder_for_dem``: Chromobius's ``sinter_decoders()['chromobius']``, backline's
``MobiusSinterDecoder()`` and ``MobiusSinterDecoder(correlations=True)``) and then decodes all
the shots in one ``decode_shots_bit_packed`` call, timed with ``perf_counter``; ``--runs``
runs interleave the decoders (A B C A B C …) so drift on a shared machine hits all of them.
The report gives each decoder's logical failures (a shot fails when any observable is
mispredicted) with the 95 % Wilson interval, its median time per shot over the runs, and the
ratio to Chromobius's; "overlap" says whether the Wilson intervals of mobius and Chromobius
overlap.

  scripts/dev/compare_mobius.py                                  # the grid of issue 41
  scripts/dev/compare_mobius.py --families midout --distances 5 --ps 0.001 --shots 2000

Needs stim, sinter, chromobius 1.1.1 and the backline package installed in the running Python.
"""

import argparse
import math
import statistics
import sys
import time

import numpy as np
import sinter
import stim

from backline.colour_circuits import colour_code_circuit
from backline.sinter import MobiusSinterDecoder


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of k successes in n."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, c - h), min(1.0, c + h)


def decoders() -> dict[str, sinter.Decoder]:
    """The decoders compared, Chromobius first (the baseline)."""
    import chromobius

    return {
        "chromobius": chromobius.sinter_decoders()["chromobius"],
        "mobius": MobiusSinterDecoder(),
        "mobius-correlated": MobiusSinterDecoder(correlations=True),
    }


def point(family: str, d: int, rounds: int, p: float, shots: int, runs: int, seed: int) -> dict:
    """Every decoder on one point: failures and per-shot times over the runs."""
    circuit = colour_code_circuit(family, distance=d, rounds=rounds, p=p, basis="Z")
    dem = circuit.detector_error_model()
    dets, obs = circuit.compile_detector_sampler(seed=seed).sample(
        shots, separate_observables=True, bit_packed=True
    )
    compiled = {name: dec.compile_decoder_for_dem(dem=dem) for name, dec in decoders().items()}
    times: dict[str, list[float]] = {name: [] for name in compiled}
    fails: dict[str, int] = {}
    for _ in range(runs):
        for name, dec in compiled.items():
            t0 = time.perf_counter()
            pred = dec.decode_shots_bit_packed(bit_packed_detection_event_data=dets)
            times[name].append((time.perf_counter() - t0) / shots)
            f = int(np.any(pred != obs, axis=1).sum())
            if fails.setdefault(name, f) != f:
                raise RuntimeError(f"{name} gave {f} failures after {fails[name]} on the same shots")
    return {
        "family": family,
        "d": d,
        "rounds": rounds,
        "p": p,
        "shots": shots,
        "detectors": dem.num_detectors,
        "fails": fails,
        "us": {name: statistics.median(t) * 1e6 for name, t in times.items()},
    }


def report(rows: list[dict]) -> str:
    """The markdown table of the points."""
    out = [
        "| family | d | r | p | Chromobius: failures, µs/shot | mobius: failures, µs (× Chromobius), overlap "
        "| mobius correlated: failures, µs (×) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        n, f, us = r["shots"], r["fails"], r["us"]
        base = us["chromobius"]
        lo_c, hi_c = wilson(f["chromobius"], n)
        lo_m, hi_m = wilson(f["mobius"], n)
        overlap = "yes" if lo_m <= hi_c and lo_c <= hi_m else "no"
        out.append(
            f"| {r['family']} | {r['d']} | {r['rounds']} | {r['p']} "
            f"| {f['chromobius']}, {base:.1f} "
            f"| {f['mobius']}, {us['mobius']:.1f} ({us['mobius'] / base:.2f}×), {overlap} "
            f"| {f['mobius-correlated']}, {us['mobius-correlated']:.1f} "
            f"({us['mobius-correlated'] / base:.2f}×) |"
        )
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", default="midout,superdense")
    ap.add_argument("--distances", default="5,7,9")
    ap.add_argument("--ps", default="0.001,0.002,0.003")
    ap.add_argument("--rounds-per-d", type=int, default=4, help="rounds = this × d (default 4)")
    ap.add_argument("--shots", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=2026)
    a = ap.parse_args()
    rows = []
    for family in a.families.split(","):
        for d in (int(x) for x in a.distances.split(",")):
            for p in (float(x) for x in a.ps.split(",")):
                r = point(family, d, a.rounds_per_d * d, p, a.shots, a.runs, a.seed)
                rows.append(r)
                print(
                    f"{family} d={d} p={p}: " + ", ".join(
                        f"{k} {r['fails'][k]} fails {r['us'][k]:.1f} µs" for k in r["fails"]
                    ),
                    file=sys.stderr,
                    flush=True,
                )
    print(report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
