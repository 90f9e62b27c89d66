"""Per-shot time of listing 3's program under ``catalyst.qjit`` on backline.qubit, against
backline's own compiled path (``qp.compile_once``) and against Catalyst's ``lightning.qubit``
on the same circuit without a code. All in one process, one after another, each the median
of several calls after a warm-up call (which compiles).

    python examples/catalyst_timing.py [--shots 2000] [--calls 5]
"""

import argparse
import statistics
import time
import warnings

import numpy as np

import backline.qp as qp

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--shots", type=int, default=2000)
ap.add_argument("--calls", type=int, default=5)
args = ap.parse_args()


def ghz(dev):
    @qp.set_shots(args.shots)
    @qp.qnode(dev, mcm_method="one-shot")
    def circuit():
        qp.Hadamard(0)
        qp.CNOT([0, 1])
        qp.CNOT([1, 2])
        return qp.sample([qp.measure(0), qp.measure(1), qp.measure(2)])

    return circuit


def steane():
    return qp.Backline(wires=3, coprocessors=[qp.Coprocessor(coprocessor_fn="steane")], transport="memcpy",
                       qec_code="steane", seed=1)


def per_shot_us(fn) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = np.asarray(fn())  # compiles
        assert out.shape == (args.shots, 3)
        times = []
        for _ in range(args.calls):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return statistics.median(times) / args.shots * 1e6


rows = [
    ("catalyst.qjit, backline.qubit, Steane code, memcpy", per_shot_us(qp.qjit(capture=True)(ghz(steane())))),
    ("qp.compile_once, backline.qubit, Steane code, memcpy", per_shot_us(qp.compile_once(ghz(steane())))),
    ("catalyst.qjit, backline.qubit, no code", per_shot_us(qp.qjit(capture=True)(ghz(qp.Backline(wires=3, seed=1))))),
    ("catalyst.qjit, lightning.qubit, no code", per_shot_us(qp.qjit(capture=True)(ghz(qp.device("lightning.qubit", wires=3))))),
]
base = rows[0][1]
print(f"GHZ-3, {args.shots} shots a call, median of {args.calls} calls, µs per shot")
print(f"{'':58}{'µs/shot':>10}{'/ first':>10}")
for name, us in rows:
    print(f"{name:58}{us:10.1f}{us / base:10.2f}x")
