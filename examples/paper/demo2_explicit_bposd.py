"""The reference's demo 2: explicit decoding with BP+OSD. A memory experiment on the [[13,1,3]]
hypergraph-product code: bit flips on the data, the X and Z checks measured, each syndrome
decoded by ``qp.backline.decode`` on a remote GPU coprocessor running BP+OSD built from the
code's Hx and Hz, the corrections applied; the controller is remote too.

    python examples/paper/demo2_explicit_bposd.py
"""

import numpy as np

import backline.qp as qp
from testbed import CONTROLLER_EXECUTOR, COPROCESSOR_EXECUTOR, ENDPOINT, FABRIC, GPU, PLATFORM, SEED

Hx, Hz = qp.backline.codes.hgp13()
n = Hx.shape[1]
ancilla = n

decoder = qp.backline.css_bp_decoder(Hx, Hz, postprocess="osd", num_iters=10, platform=PLATFORM)

ctrl = qp.Controller(hardware="cpu", remote=True, executor_options=CONTROLLER_EXECUTOR,
                     device=qp.device("null.qubit", wires=n + 1))
coproc = qp.Coprocessor(hardware="gpu", remote=True, coprocessor_fn=decoder,
                        endpoint=qp.Endpoint(address=ENDPOINT),
                        executor_options=COPROCESSOR_EXECUTOR, init_args={"backend": GPU})
dev = qp.Backline(controller=ctrl, coprocessors=[coproc], transport=FABRIC, seed=SEED)


def measure_checks(H, basis):
    syndrome = []
    for row in H:
        if basis == "X":
            qp.Hadamard(wires=ancilla)
            for q in np.flatnonzero(row):
                qp.CNOT(wires=[ancilla, int(q)])
            qp.Hadamard(wires=ancilla)
        else:
            for q in np.flatnonzero(row):
                qp.CNOT(wires=[int(q), ancilla])
        syndrome.append(qp.measure(ancilla, reset=True))
    return syndrome


def apply_correction(correction, gate):
    for q in range(n):
        qp.cond(correction[q], gate)(wires=q)


@qp.set_shots(1000)
@qp.qnode(dev)
def memory(p=0.03):
    for q in range(n):
        qp.BitFlip(p, wires=q)
    x_syn = measure_checks(Hx, "X")
    z_syn = measure_checks(Hz, "Z")
    corr_z = qp.backline.decode(x_syn, decoder_id=0)
    corr_x = qp.backline.decode(z_syn, decoder_id=1)
    apply_correction(corr_x, qp.X)
    apply_correction(corr_z, qp.Z)
    return qp.sample(wires=range(n))


samples = memory()
failures = sum(not qp.backline.codes.in_rowspace(Hx, row) for row in samples)
print(samples)
print(f"logical failures: {failures} of {len(samples)}")
