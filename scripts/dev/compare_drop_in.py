"""Per-shot time of each backline.decoders object against the original it stands in for, on
the same shots in the same run: Matching vs pymatching.Matching (decode_batch and decode),
BpOsdDecoder vs ldpc.BpOsdDecoder (decode), RelayDecoderF32 vs relay_bp.RelayDecoderF32
(decode_batch), one thread each. Prints µs/shot, the ratio ours/theirs and how many shots'
outputs differ. Needs pymatching, ldpc and relay-bp installed beside backline (a scratch venv).

    python scripts/dev/compare_drop_in.py [--shots 20000] [--d 5] [--p 0.004]
"""

import argparse
import time

import numpy as np
import scipy.sparse as sp
import stim

from backline import decoders as bd

ap = argparse.ArgumentParser()
ap.add_argument("--shots", type=int, default=20000)
ap.add_argument("--d", type=int, default=5)
ap.add_argument("--p", type=float, default=0.004)
ap.add_argument("--repeat", type=int, default=3)
args = ap.parse_args()


def best(f, repeat=args.repeat):
    t = float("inf")
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        t = min(t, time.perf_counter() - t0)
    return t, out


def row(name, n, ours, theirs, differ):
    print(f"{name:44s} ours {1e6 * ours / n:9.2f} µs/shot  original {1e6 * theirs / n:9.2f} µs/shot  "
          f"ratio {ours / theirs:5.2f}  differ {differ}/{n}")


def circuit(d, p):
    return stim.Circuit.generated("surface_code:rotated_memory_x", distance=d, rounds=d,
                                  after_clifford_depolarization=p, before_round_data_depolarization=p,
                                  before_measure_flip_probability=p, after_reset_flip_probability=p)


def dem_matrices(dem):
    cols, ocols, pri = [], [], []
    for inst in dem.flattened():
        if inst.type == "error":
            cols.append([t.val for t in inst.targets_copy() if t.is_relative_detector_id()])
            ocols.append([t.val for t in inst.targets_copy() if t.is_logical_observable_id()])
            pri.append(inst.args_copy()[0])
    h = np.zeros((dem.num_detectors, len(cols)), dtype=np.uint8)
    o = np.zeros((dem.num_observables, len(cols)), dtype=np.uint8)
    for j, (c, oc) in enumerate(zip(cols, ocols)):
        h[c, j] ^= 1
        o[oc, j] ^= 1
    return sp.csr_matrix(h), sp.csr_matrix(o), np.array(pri, dtype=np.float64)


c = circuit(args.d, args.p)
dets, obs = c.compile_detector_sampler(seed=5).sample(args.shots, separate_observables=True)
print(f"surface_code:rotated_memory_x d={args.d} rounds={args.d} p={args.p}, {args.shots} shots")

# Matching.
import pymatching  # noqa: E402

ours = bd.Matching.from_stim_circuit(c)
theirs = pymatching.Matching.from_stim_circuit(c)
to, a = best(lambda: ours.decode_batch(dets))
tt, b = best(lambda: theirs.decode_batch(dets))
row("Matching.decode_batch", args.shots, to, tt, int((a != b).any(axis=1).sum()))
k = min(args.shots, 5000)
to, a = best(lambda: np.array([ours.decode(dets[i]) for i in range(k)]))
tt, b = best(lambda: np.array([theirs.decode(dets[i]) for i in range(k)]))
row("Matching.decode (a Python loop)", k, to, tt, int((a != b).any(axis=1).sum()))

# BP+OSD and Relay-BP on the model's check matrix.
h, o, p = dem_matrices(c.detector_error_model())
try:
    import ldpc
except ImportError:
    ldpc = None
if ldpc is not None:
    k = min(args.shots, 2000)
    kw = dict(error_channel=p.tolist(), max_iter=30, bp_method="minimum_sum", ms_scaling_factor=0.625,
              osd_method="osd_cs", osd_order=7)
    ob, lb = bd.BpOsdDecoder(h, **kw), ldpc.BpOsdDecoder(h, **kw)
    to, a = best(lambda: np.array([ob.decode(dets[i]) for i in range(k)]), 1)
    tt, b = best(lambda: np.array([lb.decode(dets[i]) for i in range(k)]), 1)
    row("BpOsdDecoder.decode (min-sum 30, OSD-CS 7)", k, to, tt, int((a != b).any(axis=1).sum()))
    bo, lbp = bd.BpDecoder(h, error_channel=p.tolist(), max_iter=30), ldpc.BpDecoder(h, error_channel=p.tolist(), max_iter=30)
    to, a = best(lambda: np.array([bo.decode(dets[i]) for i in range(k)]), 1)
    tt, b = best(lambda: np.array([lbp.decode(dets[i]) for i in range(k)]), 1)
    row("BpDecoder.decode (product-sum 30)", k, to, tt, int((a != b).any(axis=1).sum()))
try:
    import relay_bp
except ImportError:
    relay_bp = None
if relay_bp is not None:
    kw = dict(gamma0=0.1, pre_iter=80, num_sets=60, set_max_iter=60, stop_nconv=5)
    ro = bd.ObservableDecoderRunner(bd.RelayDecoderF32(h, p, **kw), o)
    rt = relay_bp.ObservableDecoderRunner(relay_bp.RelayDecoderF32(h, p, **kw), o)
    d8 = dets.astype(np.uint8)
    to, a = best(lambda: ro.decode_observables_batch(d8), 1)
    tt, b = best(lambda: rt.decode_observables_batch(d8, progress_bar=False), 1)
    row("ObservableDecoderRunner.decode_observables_batch", args.shots, to, tt,
        int((a != b).any(axis=1).sum()))
    print(f"  logical errors: ours {int((a != obs).any(axis=1).sum())}, "
          f"relay-bp {int((b != obs).any(axis=1).sum())}")
