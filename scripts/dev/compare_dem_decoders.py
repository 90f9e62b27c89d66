#!/usr/bin/env python3
"""Dev-only: backline's circuit-level decoders against ldpc and relay-bp, side by side on the
same shots of the same detector error model.

Two comparisons (the Done-when of issue 10):

  ldpc     BP+OSD on the rotated surface code Z memory, d = 5, r = 5, p = 0.001
           (stim.Circuit.generated with after_clifford_depolarization,
           before_measure_flip_probability, after_reset_flip_probability = p), against ldpc's
           BpOsdDecoder with the same settings (min-sum, alpha 0.625, 30 iterations, OSD-CS
           order 7, each mechanism's prior as its channel) on the same check matrix.
  relay    Relay-BP on the [[144,12,12]] 12-round Z memory at p = 0.003
           (../shared/data/gross_code_memory_z/ beside the repository), against relay-bp 0.2.2's
           RelayDecoderF64 at its README settings (gamma0 0.1, pre_iter 80, num_sets 60,
           set_max_iter 60, gamma_dist_interval (-0.24, 0.66), stop_nconv 1), single-threaded.

Shots come from stim's detector sampler (seeded). The shots are cut into chunks; per chunk the
reference decodes it in this process (timed per shot with perf_counter_ns around its Python
call, as its users call it) and `backline decode --dem --threads 1` decodes it (timed per shot
in Rust around each decoder call), alternately, so drift on a shared machine hits both. The
report gives each one's logical errors with the 95 % Wilson interval, per-shot median and mean,
their ratio, and (ldpc) how many shots got identical predictions.

The check matrix handed to the references is stim's flattened model with identical mechanisms
merged in first-appearance order, mechanisms of p = 0 or no detector left out: the matrix
backline builds (tests/dem.rs checks that against stim). Needs stim, ldpc 2.4.1, relay-bp
0.2.2 (+ beliefmatching 0.2.0 --no-deps), numpy, scipy in the running Python, and a release
build of backline (cargo build --release -p backline).

  scripts/dev/compare_dem_decoders.py ldpc --shots 100000
  scripts/dev/compare_dem_decoders.py relay --shots 20000
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
import stim
from scipy.sparse import csc_matrix

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_dem_fixtures import columns  # noqa: E402  (stim's merged reading of a model)

ROOT = pathlib.Path(__file__).resolve().parents[2]
GROSS = ROOT.parent / "shared" / "data" / "gross_code_memory_z"


def wilson(k, n, z=1.96):
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, c - h), min(1.0, c + h)


def matrices(dem):
    """(H, A, priors) of the merged model, as backline builds them: stim's flattened model,
    identical mechanisms merged in first-appearance order, p = 0 and detector-less ones out."""
    cols = [c for c in columns(dem) if c[0] > 0 and c[1]]

    def sparse(rows, which):
        r, c = [], []
        for j, col in enumerate(cols):
            for i in col[which]:
                r.append(i)
                c.append(j)
        return csc_matrix((np.ones(len(r), dtype=np.uint8), (r, c)), shape=(rows, len(cols)))

    return (sparse(dem.num_detectors, 1), sparse(dem.num_observables, 2),
            np.array([c[0] for c in cols], dtype=np.float64))


def ours(binary, dem_path, dets, num_dets, flags, tmp):
    """Per-shot predictions and decode times of `backline decode --dem` on `dets` (bool rows)."""
    dpath, opath = tmp / "chunk.b8", tmp / "pred.b8"
    stim.write_shot_data_file(data=dets, path=dpath, format="b8", num_detectors=num_dets)
    cmd = [str(binary), "decode", "--dem", str(dem_path), "--dets", str(dpath), "--obs-out", str(opath),
           "--threads", "1", "--warmup", "0", "--json"] + flags
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: {r.stderr}")
    return opath, json.loads(r.stdout)


def run_ldpc(args):
    from ldpc import BpOsdDecoder

    p = args.p
    circuit = stim.Circuit.generated("surface_code:rotated_memory_z", distance=5, rounds=5,
                                     after_clifford_depolarization=p, before_measure_flip_probability=p,
                                     after_reset_flip_probability=p)
    dem = circuit.detector_error_model()
    H, A, priors = matrices(dem)
    print(f"surface d=5 r=5 p={p}: {dem.num_detectors} detectors, {H.shape[1]} mechanisms; "
          f"min-sum alpha 0.625, 30 iterations, OSD-CS order 7", flush=True)
    dets, obs = circuit.compile_detector_sampler(seed=args.seed).sample(args.shots, separate_observables=True)
    dec = BpOsdDecoder(H, error_channel=list(priors), max_iter=30, bp_method="minimum_sum",
                       ms_scaling_factor=0.625, schedule="parallel", osd_method="osd_cs", osd_order=7)
    flags = ["--decoder", "bposd", "--bp-method", "minimum_sum", "--ms-scaling-factor", "0.625",
             "--max-iter", "30", "--osd-method", "osd_cs", "--osd-order", "7"]
    with tempfile.TemporaryDirectory() as t:
        tmp = pathlib.Path(t)
        dem_path = tmp / "model.dem"
        dem_path.write_text(str(dem))
        t_ref, chunks, fails_ref, fails_ours, same = [], [], 0, 0, 0
        syn_all = dets.astype(np.uint8)
        for start in range(0, args.shots, args.chunk):
            chunk = slice(start, min(start + args.chunk, args.shots))
            pred_ref = np.zeros((chunk.stop - chunk.start, dem.num_observables), dtype=np.uint8)
            for i, s in enumerate(syn_all[chunk]):
                t0 = time.perf_counter_ns()
                e = dec.decode(s)
                t_ref.append(time.perf_counter_ns() - t0)
                pred_ref[i] = (A @ e) % 2
            opath, j = ours(args.backline, dem_path, dets[chunk], dem.num_detectors, flags, tmp)
            pred = stim.read_shot_data_file(path=opath, format="b8", num_observables=dem.num_observables)
            chunks.append((j["median_ns"], j["mean_ns"], chunk.stop - chunk.start))
            truth = obs[chunk].astype(np.uint8)
            fails_ref += int(np.any(pred_ref != truth, axis=1).sum())
            fails_ours += int(np.any(pred.astype(np.uint8) != truth, axis=1).sum())
            same += int(np.all(pred_ref == pred.astype(np.uint8), axis=1).sum())
            print(f"  {chunk.stop}/{args.shots}", file=sys.stderr, flush=True)
    # Ours: the CLI gives per-chunk statistics; weight the chunk means, take the median of
    # the chunk medians.
    ours_mean = sum(m * n for _, m, n in chunks) / args.shots
    ours_med = float(np.median([m for m, _, _ in chunks]))
    lo_r, hi_r = wilson(fails_ref, args.shots)
    lo_o, hi_o = wilson(fails_ours, args.shots)
    med_r, mean_r = float(np.median(t_ref)), float(np.mean(t_ref))
    print(f"\n{args.shots} shots, {args.chunk} per chunk, alternating\n")
    print("| decoder | logical errors | LER | 95 % interval | median µs/shot | mean µs/shot |")
    print("|---|---:|---:|---|---:|---:|")
    print(f"| ldpc 2.4.1 BpOsdDecoder, timed from Python | {fails_ref} | {fails_ref / args.shots:.2e} | "
          f"[{lo_r:.2e}, {hi_r:.2e}] | {med_r / 1e3:.2f} | {mean_r / 1e3:.2f} |")
    print(f"| backline bposd (`backline decode --dem`, Rust timing) | {fails_ours} | {fails_ours / args.shots:.2e} | "
          f"[{lo_o:.2e}, {hi_o:.2e}] | {ours_med / 1e3:.2f} | {ours_mean / 1e3:.2f} |")
    print(f"\nratio backline/ldpc: median {ours_med / med_r:.3f}, mean {ours_mean / mean_r:.3f}; "
          f"identical predictions on {same} of {args.shots} shots")


def run_relay(args):
    import relay_bp

    dem_path = GROSS / "dem_z_detectors.dem"
    if not dem_path.exists():
        sys.exit(f"{dem_path} is absent (the shared data beside the repository)")
    circuit = stim.Circuit.from_file(GROSS / "circuit_z_detectors.stim")
    dem = stim.DetectorErrorModel.from_file(dem_path)
    H, A, priors = matrices(dem)
    print(f"[[144,12,12]] 12 rounds p=0.003: {dem.num_detectors} detectors, {H.shape[1]} mechanisms; "
          f"gamma0 0.1, pre_iter 80, num_sets 60, set_max_iter 60, (-0.24, 0.66), stop_nconv 1", flush=True)
    dets, obs = circuit.compile_detector_sampler(seed=args.seed).sample(args.shots, separate_observables=True)
    dec = relay_bp.RelayDecoderF64(H.tocsr(), error_priors=priors, gamma0=0.1, pre_iter=80, num_sets=60,
                                   set_max_iter=60, gamma_dist_interval=(-0.24, 0.66), stop_nconv=1)
    runner = relay_bp.ObservableDecoderRunner(dec, A.tocsr(), include_decode_result=False)
    flags = ["--decoder", "relay-bp", "--gamma0", "0.1", "--pre-iter", "80", "--num-sets", "60",
             "--set-max-iter", "60", "--gamma-dist-interval", "-0.24,0.66", "--stop-nconv", "1"]
    with tempfile.TemporaryDirectory() as t:
        tmp = pathlib.Path(t)
        t_ref, chunks, fails_ref, fails_ours = [], [], 0, 0
        syn_all = dets.astype(np.uint8)
        for start in range(0, args.shots, args.chunk):
            chunk = slice(start, min(start + args.chunk, args.shots))
            pred_ref = np.zeros((chunk.stop - chunk.start, dem.num_observables), dtype=np.uint8)
            for i, s in enumerate(syn_all[chunk]):
                t0 = time.perf_counter_ns()
                pred_ref[i] = runner.decode_observables(s)
                t_ref.append(time.perf_counter_ns() - t0)
            opath, j = ours(args.backline, dem_path, dets[chunk], dem.num_detectors, flags, tmp)
            pred = stim.read_shot_data_file(path=opath, format="b8", num_observables=dem.num_observables)
            chunks.append((j["median_ns"], j["mean_ns"], chunk.stop - chunk.start))
            truth = obs[chunk].astype(np.uint8)
            fails_ref += int(np.any(pred_ref != truth, axis=1).sum())
            fails_ours += int(np.any(pred.astype(np.uint8) != truth, axis=1).sum())
            print(f"  {chunk.stop}/{args.shots}: relay-bp {fails_ref}, backline {fails_ours} errors",
                  file=sys.stderr, flush=True)
    ours_mean = sum(m * n for _, m, n in chunks) / args.shots
    ours_med = float(np.median([m for m, _, _ in chunks]))
    lo_r, hi_r = wilson(fails_ref, args.shots)
    lo_o, hi_o = wilson(fails_ours, args.shots)
    med_r, mean_r = float(np.median(t_ref)), float(np.mean(t_ref))
    print(f"\n{args.shots} shots, {args.chunk} per chunk, alternating, one thread each\n")
    print("| decoder | logical errors | LER | 95 % interval | median ms/shot | mean ms/shot |")
    print("|---|---:|---:|---|---:|---:|")
    print(f"| relay-bp 0.2.2 RelayDecoderF64 | {fails_ref} | {fails_ref / args.shots:.2e} | "
          f"[{lo_r:.2e}, {hi_r:.2e}] | {med_r / 1e6:.3f} | {mean_r / 1e6:.3f} |")
    print(f"| backline relay-bp (`backline decode --dem`) | {fails_ours} | {fails_ours / args.shots:.2e} | "
          f"[{lo_o:.2e}, {hi_o:.2e}] | {ours_med / 1e6:.3f} | {ours_mean / 1e6:.3f} |")
    print(f"\nratio backline/relay-bp: median {ours_med / med_r:.3f}, mean {ours_mean / mean_r:.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("which", choices=["ldpc", "relay"])
    ap.add_argument("--shots", type=int, default=None)
    ap.add_argument("--chunk", type=int, default=None, help="shots per alternation")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--p", type=float, default=0.001, help="ldpc comparison: the circuit's error rate")
    ap.add_argument("--backline", type=pathlib.Path, default=ROOT / "target/release/backline")
    args = ap.parse_args()
    if args.which == "ldpc":
        args.shots = args.shots or 100_000
        args.chunk = args.chunk or 10_000
        run_ldpc(args)
    else:
        args.shots = args.shots or 20_000
        args.chunk = args.chunk or 1_000
        run_relay(args)


if __name__ == "__main__":
    main()
