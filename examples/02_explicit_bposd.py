"""Demo 2: explicit decoding. The program calls ``decode(syndrome, decoder_id=Z_CHECKS)``
itself; the coprocessor is BP-OSD built from the [[13,1,3]] code's Hx and Hz with
``css_bp_decoder``; the reply (one bit per qubit) is applied with ``qml.cond``.

    python examples/02_explicit_bposd.py [--shots 1000] [--p 0.03] [--gpu [BACKEND]] [--transport udp] [--fpga]

With ``--fpga`` the controller is the (simulated) FPGA board, whose ERNIC delivers each
syndrome to the BP-OSD decoder in an executor process (demo 4's placement with this
program).
"""

import pennylane as qml
from memory13 import N, arguments, placement, prepare_and_measure_z_checks, report

from backline import Z_CHECKS, decode

args = arguments(__doc__)
dev = placement(args, "fpga" if args.fpga else "cpu")


@qml.set_shots(args.shots)
@qml.qnode(dev)
def memory(correct: bool = True):
    syndrome = prepare_and_measure_z_checks(args.p)
    if correct:
        correction = decode(syndrome, decoder_id=Z_CHECKS)
        for q in range(N):
            qml.cond(correction[q], qml.PauliX)(wires=q)
    return qml.sample(wires=range(N))


uncorrected = memory(correct=False)
report("demo 2 (explicit decode, BP-OSD)", memory(), dev, uncorrected)
