"""The reference's demo 1a: demo 1 over rdma (Soft-RoCE): the coprocessor in an executor on
this host, the rounds RDMA writes. Needs an RDMA device (tests/rdma-vm runs it in a VM).

    python examples/paper/demo1a_ghz_rdma.py
"""

import backline.qp as qp
from testbed import COPROCESSOR_EXECUTOR, ENDPOINT, LIB, SEED

steane = qp.CoprocessorFunction(name="steane_coprocessor", lib_path=LIB)

ctrl = qp.Controller(hardware="cpu", device=qp.device("null.qubit", wires=3))
coproc = qp.Coprocessor(hardware="cpu", remote=True, coprocessor_fn=steane,
                        endpoint=qp.Endpoint(address=ENDPOINT),
                        executor_options=COPROCESSOR_EXECUTOR)
dev = qp.Backline(controller=ctrl, coprocessors=[coproc], transport="rdma", qec_code="steane",
                  seed=SEED)


@qp.qjit(capture=True)
@qp.set_shots(10)
@qp.qnode(dev, mcm_method="one-shot")
def ghz():
    qp.Hadamard(0)
    qp.CNOT([0, 1])
    qp.CNOT([1, 2])
    return qp.sample([qp.measure(0), qp.measure(1), qp.measure(2)])


print(ghz())
