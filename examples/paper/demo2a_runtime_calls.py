"""The reference's demo 2a: demo 2's decoding written as the runtime calls a decode expands to,
in the reference's forms: a session to the coprocessor named ``gpu-coproc``, the syndrome
staged as ``PACKED_BYTES`` bytes with its decoder id, posted as one work item, the correction
collected.

    python examples/paper/demo2a_runtime_calls.py
"""

import numpy as np

import backline.qp as qp
from backline.qp import COLLECT, GET_SESSION, POST, ROLE_CONTROLLER, STAGE_PAYLOAD, WORK_ITEM
from testbed import CONTROLLER_EXECUTOR, COPROCESSOR_EXECUTOR, ENDPOINT, FABRIC, GPU, PLATFORM, SEED

Hx, Hz = qp.backline.codes.hgp13()
n = Hx.shape[1]
ancilla = n
PACKED_BYTES = 2

decoder = qp.backline.css_bp_decoder(Hx, Hz, postprocess="osd", num_iters=10, platform=PLATFORM)

ctrl = qp.Controller(hardware="cpu", remote=True, executor_options=CONTROLLER_EXECUTOR,
                     device=qp.device("null.qubit", wires=n + 1))
coproc = qp.Coprocessor(hardware="gpu", remote=True, coprocessor_fn=decoder, name="gpu-coproc",
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


def decode(session, packed, decoder_id):
    qp.runtime_call(STAGE_PAYLOAD, session, packed, PACKED_BYTES, decoder_id)
    qp.runtime_call(POST, session, WORK_ITEM)
    _status, correction = qp.runtime_call(COLLECT, session, PACKED_BYTES, out_bytes=PACKED_BYTES)
    return correction


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
    session = qp.runtime_call(GET_SESSION, ROLE_CONTROLLER, "gpu-coproc")
    corr_z = decode(session, x_syn, 0)
    corr_x = decode(session, z_syn, 1)
    apply_correction(corr_x, qp.X)
    apply_correction(corr_z, qp.Z)
    return qp.sample(wires=range(n))


samples = memory()
failures = sum(not qp.backline.codes.in_rowspace(Hx, row) for row in samples)
print(samples)
print(f"logical failures: {failures} of {len(samples)}")
