"""Demo 2a: the same decoding written as the four runtime calls a decode expands to:
``GET_SESSION``, ``STAGE_PAYLOAD`` (with the decoder id), ``POST``, ``COLLECT`` — one round
for the X checks, one for the Z checks.

    python examples/02a_runtime_calls.py [--shots 1000] [--p 0.03] [--gpu [BACKEND]]
"""

import pennylane as qml
from memory13 import N, arguments, placement, prepare_and_measure_checks, report

from backline import COLLECT, GET_SESSION, POST, STAGE_PAYLOAD, X_CHECKS, Z_CHECKS, runtime_call

args = arguments(__doc__)
dev = placement(args)


@qml.set_shots(args.shots)
@qml.qnode(dev)
def memory(correct: bool = True):
    x_syndrome, z_syndrome = prepare_and_measure_checks(args.p)
    if correct:
        session = runtime_call(GET_SESSION, "controller", 0)
        corrections = []
        for syndrome, decoder_id in ((x_syndrome, X_CHECKS), (z_syndrome, Z_CHECKS)):
            runtime_call(STAGE_PAYLOAD, session, syndrome, decoder_id=decoder_id)
            runtime_call(POST, session)
            corrections.append(runtime_call(COLLECT, session))
        corr_z, corr_x = corrections
        for q in range(N):
            qml.cond(corr_x[q], qml.PauliX)(wires=q)
            qml.cond(corr_z[q], qml.PauliZ)(wires=q)
    return qml.sample(wires=range(N))


# The corrected run first: it samples with the placement's first seed, as a program that runs
# once does (examples/paper/).
corrected = memory()
corrected_run = dev.last_run
uncorrected = memory(correct=False)
report("demo 2a (runtime calls, BP-OSD)", corrected, dev, uncorrected, save=args.save_samples,
       run=corrected_run)
