"""Demo 2a: the same decoding written as the four runtime calls a decode expands to:
``GET_SESSION``, ``STAGE_PAYLOAD`` (with the decoder id), ``POST``, ``COLLECT``.

    python examples/02a_runtime_calls.py [--shots 1000] [--p 0.03] [--gpu [BACKEND]]
"""

import pennylane as qml
from memory13 import N, arguments, placement, prepare_and_measure_z_checks, report

from backline import COLLECT, GET_SESSION, POST, STAGE_PAYLOAD, Z_CHECKS, runtime_call

args = arguments(__doc__)
dev = placement(args)


@qml.set_shots(args.shots)
@qml.qnode(dev)
def memory(correct: bool = True):
    syndrome = prepare_and_measure_z_checks(args.p)
    if correct:
        session = runtime_call(GET_SESSION, "controller", 0)
        runtime_call(STAGE_PAYLOAD, session, syndrome, decoder_id=Z_CHECKS)
        runtime_call(POST, session)
        correction = runtime_call(COLLECT, session)
        for q in range(N):
            qml.cond(correction[q], qml.PauliX)(wires=q)
    return qml.sample(wires=range(N))


uncorrected = memory(correct=False)
report("demo 2a (runtime calls, BP-OSD)", memory(), dev, uncorrected)
