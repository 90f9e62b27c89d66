"""The demo-1 program on every placement in one run: the samples must agree (same seed), and
the decode rounds' RTT statistics are printed side by side with their ratio to memcpy's
(absolute times on a shared machine wander; the ratios of one run are what to compare).

    python examples/compare_transports.py [--shots 1000] [--noise 0.001]
"""

import numpy as np
from ghz import arguments, ghz_program

import backline
from backline import Backline, Controller, Coprocessor, CoprocessorFunction

args = arguments(__doc__, shots=1000)
seed = 1 if args.seed is None else args.seed
placements = [("memcpy", False), ("shm", False), ("udp", False), ("shm", "process"), ("udp", "process")]
results = {}
for transport, remote in placements:
    dev = Backline(
        controller=Controller(hardware="cpu", wires=3),
        coprocessors=[Coprocessor(coprocessor_fn=CoprocessorFunction.builtin("steane"), remote=remote)],
        transport=transport,
        qec_code="steane",
        noise=args.noise,
        seed=seed,
    )
    samples = ghz_program(dev, args.shots)()
    label = transport + (" (executor process)" if remote else " (server thread)")
    results[label] = (samples, dev.last_run.latency())
    dev.close()

first = next(iter(results.values()))[0]
same = all(np.array_equal(s, first) for s, _ in results.values())
print(f"GHZ-3 with implicit Steane QEC, {args.shots} shots, noise p = {args.noise}: "
      f"identical samples on every placement: {same}")
base = results["memcpy (server thread)"][1]
print(f"{'placement':32s} {'rounds':>8s} {'round 0':>9s} {'median':>9s} {'P99':>9s} {'P99.9':>9s} {'max':>9s}"
      f" {'median/memcpy':>14s}   (µs)")
for label, (_, s) in results.items():
    print(f"{label:32s} {int(s['count']):8d} {s['round0_ns'] / 1e3:9.3f} {s['median_ns'] / 1e3:9.3f} "
          f"{s['p99_ns'] / 1e3:9.3f} {s['p999_ns'] / 1e3:9.3f} {s['max_ns'] / 1e3:9.3f} "
          f"{s['median_ns'] / base['median_ns']:14.2f}")
if not same:
    raise SystemExit("the placements disagree")
