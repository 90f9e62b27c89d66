"""Demo 4: the same GHZ program with an FPGA controller. With no board present the rounds go
through the simulated board (the HWHS engine's generated Verilog under Verilator, the ERNIC
register model, brought up by the same code as a real board), whose modelled coprocessor
computes the Steane lookup; the RTTs are the engine's own cycle counts (200 MHz).

    python examples/04_ghz_fpga.py [--shots 10] [--noise 0.001]
"""

from ghz import arguments, ghz_program, report

from backline import Backline, Controller, Coprocessor, CoprocessorFunction

args = arguments(__doc__)
dev = Backline(
    controller=Controller(hardware="fpga", wires=3),
    coprocessors=[Coprocessor(hardware="cpu", coprocessor_fn=CoprocessorFunction.builtin("steane"))],
    transport="rdma",
    qec_code="steane",
    noise=args.noise,
    seed=args.seed,
    print_after_all=args.print_after_all,
)
report(ghz_program(dev, args.shots)(), dev, "demo 4 (FPGA controller, simulated board)", save=args.save_samples)
