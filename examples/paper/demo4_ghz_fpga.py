"""The reference's demo 4: the GHZ program with a remote FPGA controller (here the simulated
board, run by the controller's executor) and a remote GPU coprocessor running the
pre-compiled Steane function: each round goes from the board's HWHS engine through its ERNIC
to the GPU's executor.

    python examples/paper/demo4_ghz_fpga.py
"""

import backline.qp as qp
from testbed import BRIDGE, CONTROLLER_EXECUTOR, COPROCESSOR_EXECUTOR, ENDPOINT, GPU, SEED

ctrl = qp.Controller(hardware="fpga", remote=True, executor_options=CONTROLLER_EXECUTOR,
                     device=qp.device("null.qubit", wires=3), init_args={"bridge": BRIDGE})
coproc = qp.Coprocessor(hardware="gpu", remote=True, coprocessor_fn="gpu_steane_launcher",
                        endpoint=qp.Endpoint(address=ENDPOINT),
                        executor_options=COPROCESSOR_EXECUTOR, init_args={"backend": GPU})
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
