"""The reference's demo 5: the GHZ program with a remote FPGA controller and a remote GPU whose
persistent kernel runs the Steane decoder written in Triton: a plain per-message function of
the syndrome, one per decoder id, compiled ahead of time for the reference's platform
(Triton needs no GPU for that). On an NVIDIA GPU the Triton code itself runs; on HIP and under
the emulation the same functions run as their truth table (see ``backline.triton``).

    python examples/paper/demo5_ghz_fpga_gpu_kernel.py
"""

import triton.language as tl

import backline.qp as qp
from testbed import BRIDGE, CONTROLLER_EXECUTOR, COPROCESSOR_EXECUTOR, ENDPOINT, GPU, PLATFORM, SEED


def steane_lookup(syndrome):
    # The [7,4,3] Hamming checks: syndrome s (bit i = check row i) names qubit s - 1.
    s = syndrome & 7
    return tl.where(s == 0, 15, s - 1)


decoder = qp.backline.triton_decoder((steane_lookup, steane_lookup), platform=PLATFORM)

ctrl = qp.Controller(hardware="fpga", remote=True, executor_options=CONTROLLER_EXECUTOR,
                     device=qp.device("null.qubit", wires=3), init_args={"bridge": BRIDGE})
coproc = qp.Coprocessor(hardware="gpu", remote=True, coprocessor_fn=decoder,
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
