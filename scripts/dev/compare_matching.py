#!/usr/bin/env python3
"""Dev-only: backline's matching decoder against PyMatching 2.4 on the same shots (issue 24).

For each distance d (default 5, 9, 13) it generates with stim 1.16 the rotated surface code
X memory `surface_code:rotated_memory_x`, rounds = d, p on `after_clifford_depolarization`,
`before_measure_flip_probability` and `after_reset_flip_probability` (default 0.001), its
detector error model (`decompose_errors=True`) and `--shots` seeded shots (b8), then:

  PyMatching  `Matching.from_detector_error_model(dem)`; `decode_batch` on the bit-packed
              shots (its own C++ loop; time / shots), and `decode` called once per shot from
              Python on `--single` shots (perf_counter_ns around each call; median and mean).
  backline    `backline decode --dem … --decoder matching --threads 1 --json` on the same
              files: per-shot median and P99 (the monotonic clock around each decoder call),
              and `batch_mean_ns`, an untimed single-thread pass over all shots (wall / shots).

Batch passes alternate (PyMatching, backline, PyMatching, …, `--passes` each) so that drift on
a shared machine hits both; the table gives each one's best pass (the least disturbed) and
their ratio. Logical errors are counted against stim's observable flips, with 95 % Wilson
intervals, and the shots on which the two predictions differ are counted.

Needs stim 1.16, pymatching 2.4 and numpy in the running Python, and a release build of
backline (`cargo build --release -p backline`), found as target/release/backline or --backline.

  scripts/dev/compare_matching.py                       # d = 5, 9, 13; 100,000 shots each
  scripts/dev/compare_matching.py --distances 5 --shots 20000
"""

import argparse
import json
import math
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np
import pymatching
import stim

ROOT = pathlib.Path(__file__).resolve().parents[2]


def wilson(k, n, z=1.96):
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, c - h), min(1.0, c + h)


def model(d, p):
    circuit = stim.Circuit.generated(
        "surface_code:rotated_memory_x",
        distance=d,
        rounds=d,
        after_clifford_depolarization=p,
        before_measure_flip_probability=p,
        after_reset_flip_probability=p,
    )
    return circuit, circuit.detector_error_model(decompose_errors=True)


def backline_pass(exe, dem_path, dets_path, obs_path, pred_path, warmup):
    out = subprocess.run(
        [
            str(exe), "decode", "--dem", str(dem_path), "--dets", str(dets_path),
            "--obs", str(obs_path), "--obs-out", str(pred_path), "--decoder", "matching",
            "--threads", "1", "--warmup", str(warmup), "--json",
        ],
        check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout)


def one_distance(args, d, tmp):
    circuit, dem = model(d, args.p)
    dem_path = tmp / f"d{d}.dem"
    dem_path.write_text(str(dem))
    sampler = circuit.compile_detector_sampler(seed=args.seed + d)
    dets, obs = sampler.sample(args.shots, separate_observables=True, bit_packed=True)
    dets_path, obs_path, pred_path = tmp / f"d{d}.dets.b8", tmp / f"d{d}.obs.b8", tmp / f"d{d}.pred.b8"
    dets_path.write_bytes(dets.tobytes())
    obs_path.write_bytes(obs.tobytes())

    matching = pymatching.Matching.from_detector_error_model(dem)
    matching.decode_batch(dets[: min(1000, args.shots)], bit_packed_shots=True, bit_packed_predictions=True)
    pm_times, ours = [], []
    pm_pred = None
    for _ in range(args.passes):
        t0 = time.perf_counter_ns()
        pm_pred = matching.decode_batch(dets, bit_packed_shots=True, bit_packed_predictions=True)
        pm_times.append((time.perf_counter_ns() - t0) / args.shots)
        ours.append(backline_pass(args.backline, dem_path, dets_path, obs_path, pred_path, args.warmup))

    # PyMatching's single-shot decode from Python.
    single = min(args.single, args.shots)
    unpacked = np.unpackbits(dets[:single], axis=1, bitorder="little")[:, : dem.num_detectors].astype(np.uint8)
    calls = []
    for s in range(single):
        row = unpacked[s]
        t0 = time.perf_counter_ns()
        matching.decode(row)
        calls.append(time.perf_counter_ns() - t0)
    calls.sort()

    pm_pred = np.asarray(pm_pred, dtype=np.uint8).reshape(obs.shape)
    pm_errors = int(np.any(pm_pred != obs, axis=1).sum())
    our_pred = np.frombuffer(pred_path.read_bytes(), dtype=np.uint8).reshape(obs.shape)
    differ = int(np.any(our_pred != pm_pred, axis=1).sum())
    best = min(ours, key=lambda o: o["batch_mean_ns"])
    return {
        "d": d,
        "detectors": dem.num_detectors,
        "shots": args.shots,
        "pm_errors": pm_errors,
        "our_errors": best["logical_errors"],
        "differ": differ,
        "pm_batch_ns": min(pm_times),
        "our_batch_ns": best["batch_mean_ns"],
        "pm_decode_median_ns": calls[len(calls) // 2],
        "pm_decode_mean_ns": sum(calls) / len(calls),
        "our_median_ns": best["median_ns"],
        "our_p99_ns": best["p99_ns"],
        "our_mean_ns": best["mean_ns"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--distances", default="5,9,13")
    ap.add_argument("--p", type=float, default=0.001)
    ap.add_argument("--shots", type=int, default=100_000)
    ap.add_argument("--single", type=int, default=20_000, help="shots for PyMatching's decode()")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--backline", type=pathlib.Path, default=ROOT / "target" / "release" / "backline")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON lines too")
    args = ap.parse_args()
    if not args.backline.exists():
        sys.exit(f"{args.backline} not found: cargo build --release -p backline")
    rows = []
    with tempfile.TemporaryDirectory() as t:
        for d in [int(x) for x in args.distances.split(",")]:
            rows.append(one_distance(args, d, pathlib.Path(t)))
            print(f"d = {d} done", file=sys.stderr)
    print(
        f"stim {stim.__version__}, pymatching {pymatching.__version__}; rotated_memory_x, "
        f"rounds = d, p = {args.p}; {args.shots} shots; best of {args.passes} alternating passes"
    )
    print()
    print("| d | detectors | PyMatching LER [95 %] | backline LER [95 %] | shots predicted differently |")
    print("|---:|---:|---|---|---:|")
    for r in rows:
        n = r["shots"]
        lo1, hi1 = wilson(r["pm_errors"], n)
        lo2, hi2 = wilson(r["our_errors"], n)
        print(
            f"| {r['d']} | {r['detectors']} | {r['pm_errors'] / n:.2e} [{lo1:.1e}, {hi1:.1e}] "
            f"| {r['our_errors'] / n:.2e} [{lo2:.1e}, {hi2:.1e}] | {r['differ']} |"
        )
    print()
    print(
        "| d | PyMatching decode_batch µs/shot | backline batch µs/shot | ratio | "
        "PyMatching decode() median µs (Python) | backline median µs | backline P99 µs |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['d']} | {r['pm_batch_ns'] / 1e3:.3f} | {r['our_batch_ns'] / 1e3:.3f} "
            f"| {r['our_batch_ns'] / r['pm_batch_ns']:.2f} | {r['pm_decode_median_ns'] / 1e3:.2f} "
            f"| {r['our_median_ns'] / 1e3:.3f} | {r['our_p99_ns'] / 1e3:.3f} |"
        )
    if args.json:
        for r in rows:
            print(json.dumps(r))


if __name__ == "__main__":
    main()
