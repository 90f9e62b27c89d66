"""The reference's demo 3: the GHZ program with a remote CPU controller and a remote GPU
coprocessor: the program is compiled here and shipped to the controller's executor, which
runs it, its every correction round a message over the fabric to the GPU's executor, whose
persistent kernel runs the pre-compiled Steane function.

    python examples/paper/demo3_ghz_remote.py
"""

import backline.qp as qp
from testbed import CONTROLLER_EXECUTOR, COPROCESSOR_EXECUTOR, ENDPOINT, FABRIC, GPU, SEED

ctrl = qp.Controller(hardware="cpu", remote=True, executor_options=CONTROLLER_EXECUTOR,
                     device=qp.device("null.qubit", wires=3))
coproc = qp.Coprocessor(hardware="gpu", remote=True, coprocessor_fn="gpu_steane_launcher",
                        endpoint=qp.Endpoint(address=ENDPOINT),
                        executor_options=COPROCESSOR_EXECUTOR, init_args={"backend": GPU})
dev = qp.Backline(controller=ctrl, coprocessors=[coproc], transport=FABRIC, qec_code="steane",
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
