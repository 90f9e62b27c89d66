"""The reference's demo 1: the GHZ state, Steane-encoded, sampled 10 times; the controller
and a CPU coprocessor in this process, every correction round a message over memcpy to the
pre-compiled Steane function. Transcribed with ``import pennylane as qp`` changed to
``import backline.qp as qp``; the testbed values it elides come from ``testbed.py``.

    python examples/paper/demo1_ghz_memcpy.py
"""

import backline.qp as qp
from testbed import LIB, SEED

steane = qp.CoprocessorFunction(name="steane_coprocessor", lib_path=LIB)

ctrl = qp.Controller(hardware="cpu", device=qp.device("null.qubit", wires=3))
coproc = qp.Coprocessor(hardware="cpu", coprocessor_fn=steane)
dev = qp.Backline(controller=ctrl, coprocessors=[coproc], transport="memcpy", qec_code="steane",
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
