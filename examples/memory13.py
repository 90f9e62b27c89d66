"""The program of demos 2 and 2a: a memory experiment on the [[13,1,3]] hypergraph-product
code. The data starts in |0…0⟩ (every Z check +1), suffers bit flips, one ancilla measures
the six X checks and then the six Z checks, a BP-OSD coprocessor built from the code's Hx and
Hz decodes both syndromes (decoder id 0: the X checks, a Z correction; 1: the Z checks, an X
correction), and the corrections are applied before the data is read out in Z. A shot fails
when the residual bit-flip pattern is not an X stabilizer (it flips the logical qubit); the Z
correction does not change what is read."""

from __future__ import annotations

import argparse

import numpy as np
import pennylane as qml

import backline
from backline import Backline, Controller, Coprocessor, codes

HX, HZ = codes.hgp13()
N = HX.shape[1]
ANCILLA = N


def arguments(description: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--shots", type=int, default=1000, help="shots (default 1000)")
    p.add_argument("--p", type=float, default=0.03, help="bit-flip probability per data qubit (default 0.03)")
    p.add_argument("--iters", type=int, default=10, help="BP iterations (default 10)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--transport", default="memcpy", help="memcpy (default), shm, udp or rdma")
    p.add_argument("--gpu", nargs="?", const="auto", default=None, metavar="BACKEND",
                   help="run BP+OSD on a GPU: auto (CUDA, else HIP), cuda, hip, or emu (the same "
                        "kernels on CPU threads, for machines without a GPU)")
    p.add_argument("--fpga", action="store_true",
                   help="an FPGA controller (the simulated board, bridged to the decoder)")
    p.add_argument("--print-after-all", action="store_true")
    p.add_argument("--save-samples", default=None, metavar="FILE", help="write every shot's bits, one line per shot")
    return p.parse_args()


def placement(args, hardware: str = "cpu") -> Backline:
    """The BP-OSD placement; ``hardware="fpga"``: the (simulated) board as the controller,
    its ERNIC bridged to the decoder in an executor process over shm."""
    decoder = backline.css_bp_decoder(HX, HZ, postprocess="osd", num_iters=args.iters)
    if hardware == "fpga":
        remote, transport = "process", "rdma"
    else:
        remote = False if args.transport in ("memcpy", "shm", "udp") else "process"
        transport = args.transport
    backend = getattr(args, "gpu", None)
    gpu = {"hardware": "gpu", "init_args": {"backend": backend}} if backend else {"hardware": "cpu"}
    return Backline(
        controller=Controller(hardware=hardware, wires=N + 1),
        coprocessors=[Coprocessor(coprocessor_fn=decoder, remote=remote, **gpu)],
        transport=transport,
        seed=args.seed,
        print_after_all=args.print_after_all,
    )


def prepare_and_measure_z_checks(p: float):
    """Bit flips on the data, then the Z checks into mid-circuit measurements."""
    for q in range(N):
        qml.BitFlip(p, wires=q)
    syndrome = []
    for row in HZ:
        for q in np.flatnonzero(row):
            qml.CNOT(wires=[int(q), ANCILLA])
        syndrome.append(qml.measure(ANCILLA, reset=True))
    return syndrome


def prepare_and_measure_checks(p: float):
    """Bit flips on the data, then the X checks and the Z checks into mid-circuit
    measurements: ``(x_syndrome, z_syndrome)``."""
    for q in range(N):
        qml.BitFlip(p, wires=q)
    x_syndrome = []
    for row in HX:
        qml.Hadamard(wires=ANCILLA)
        for q in np.flatnonzero(row):
            qml.CNOT(wires=[ANCILLA, int(q)])
        qml.Hadamard(wires=ANCILLA)
        x_syndrome.append(qml.measure(ANCILLA, reset=True))
    z_syndrome = []
    for row in HZ:
        for q in np.flatnonzero(row):
            qml.CNOT(wires=[int(q), ANCILLA])
        z_syndrome.append(qml.measure(ANCILLA, reset=True))
    return x_syndrome, z_syndrome


def logical_failures(samples) -> int:
    return sum(not codes.in_rowspace(HX, row) for row in samples)


def report(label: str, samples, dev, uncorrected, save: str | None = None, run=None) -> None:
    """Prints the run's samples, failures and decode latency (``run``: the corrected run's
    ``RunInfo``, default the device's last)."""
    if save:
        with open(save, "w") as f:
            f.writelines("".join(str(int(b)) for b in row) + "\n" for row in samples)
    fails = logical_failures(samples)
    before = logical_failures(uncorrected)
    print(f"{label}: {len(samples)} shots of the [[13,1,3]] code")
    for row in samples[:5]:
        print("  data " + "".join(str(int(b)) for b in row))
    print(f"  logical failures: {fails} with decoding ({fails / len(samples):.4f}), "
          f"{before} without ({before / len(uncorrected):.4f})")
    zero = not ((np.asarray(samples).astype(int) @ HZ.T) % 2).any()
    print(f"  every corrected shot has a zero Z syndrome: {zero}")
    run = run or dev.last_run
    print(f"  {run.rounds} decode rounds in {run.seconds:.3f} s")
    print("  " + backline.format_latency(run.latency()).replace("\n", "\n  "))
