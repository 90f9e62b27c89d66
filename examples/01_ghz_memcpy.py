"""Demo 1: GHZ with implicit Steane QEC, the controller and a CPU coprocessor in this
process, every correction round a message over memcpy to the pre-compiled Steane function
(a C symbol in a shared library).

    python examples/01_ghz_memcpy.py [--shots 10] [--noise 0.001]
"""

from ghz import arguments, ghz_program, report, steane_c_function

from backline import Backline, Controller, Coprocessor

args = arguments(__doc__)
dev = Backline(
    controller=Controller(hardware="cpu", wires=3),
    coprocessors=[Coprocessor(hardware="cpu", coprocessor_fn=steane_c_function())],
    transport="memcpy",
    qec_code="steane",
    noise=args.noise,
    seed=args.seed,
    print_after_all=args.print_after_all,
)
report(ghz_program(dev, args.shots)(), dev, "demo 1 (memcpy, implicit QEC, C Steane function)", save=args.save_samples)
