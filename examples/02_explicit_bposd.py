"""Demo 2: explicit decoding. The program calls ``decode(syndrome, decoder_id=...)`` itself,
for the X checks (a Z correction) and the Z checks (an X correction); the coprocessor is
BP-OSD built from the [[13,1,3]] code's Hx and Hz with ``css_bp_decoder``; each reply (one bit
per qubit) is applied with ``qml.cond``.

    python examples/02_explicit_bposd.py [--shots 1000] [--p 0.03] [--gpu [BACKEND]] [--transport udp] [--fpga]

With ``--fpga`` the controller is the (simulated) FPGA board, whose ERNIC delivers each
syndrome to the BP-OSD decoder in an executor process (demo 4's placement with this
program).
"""

import pennylane as qml
from memory13 import N, arguments, placement, prepare_and_measure_checks, report

from backline import X_CHECKS, Z_CHECKS, decode

args = arguments(__doc__)
dev = placement(args, "fpga" if args.fpga else "cpu")


@qml.set_shots(args.shots)
@qml.qnode(dev)
def memory(correct: bool = True):
    x_syndrome, z_syndrome = prepare_and_measure_checks(args.p)
    if correct:
        corr_z = decode(x_syndrome, decoder_id=X_CHECKS)
        corr_x = decode(z_syndrome, decoder_id=Z_CHECKS)
        for q in range(N):
            qml.cond(corr_x[q], qml.PauliX)(wires=q)
            qml.cond(corr_z[q], qml.PauliZ)(wires=q)
    return qml.sample(wires=range(N))


# The corrected run first: it samples with the placement's first seed, as a program that runs
# once does (examples/paper/).
corrected = memory()
corrected_run = dev.last_run
uncorrected = memory(correct=False)
report("demo 2 (explicit decode, BP-OSD)", corrected, dev, uncorrected, save=args.save_samples,
       run=corrected_run)
