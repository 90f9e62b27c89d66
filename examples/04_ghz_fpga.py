"""Demo 4: the same GHZ program with an FPGA controller. With no board present the rounds go
through the simulated board — the HWHS engine's generated Verilog under Verilator and the
ERNIC models, brought up by the same code as a real board — whose ERNIC delivers every
request (payload and decoder id) to a real coprocessor: by default an executor process this
demo starts (``python -m backline serve``), or one you started (``--peer``), reached over
shm or udp. The RTTs are the engine's own cycle counts at 200 MHz: engine cycles, plus the
fabric model (the reference board's one-way RoCE latency each way), plus the coprocessor's
service time as measured.

    python examples/04_ghz_fpga.py [--shots 10] [--noise 0.001] [--function steane|c]
                                   [--bridge shm|udp] [--peer ADDR]
"""

import os
import subprocess
import sys

from ghz import arguments, ghz_program, report, steane_c_function

from backline import Backline, Controller, Coprocessor, Endpoint

args = arguments(
    __doc__,
    function=dict(default="steane", choices=["steane", "c"],
                  help="the coprocessor's function: the builtin Steane lookup or the C one (default steane)"),
    bridge=dict(default="shm", choices=["shm", "udp"], help="how the simulated fabric reaches the coprocessor"),
    peer=dict(default=None, help="address of a running executor (udp HOST:PORT, shm NAME)"),
)
spec = "steane"
if args.function == "c":
    f = steane_c_function()
    spec = f"{f.lib_path}:{f.name}"
proc = None
peer = args.peer
if peer is None:
    where = ["--bind", "127.0.0.1:0"] if args.bridge == "udp" else ["--name", f"demo4-{os.getpid()}"]
    proc = subprocess.Popen([sys.executable, "-m", "backline", "serve", "--transport", args.bridge, *where,
                             "--fn", f"0={spec}", "--fn", f"1={spec}", "--exit-with-parent"],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("ready "):
        sys.exit(f"the executor did not start: {line!r}")
    peer = line.split()[1]
    print(f"executor process {proc.pid} serves {args.function} over {args.bridge} at {peer}")
try:
    dev = Backline(
        controller=Controller(hardware="fpga", wires=3, init_args={"bridge": args.bridge}),
        coprocessors=[Coprocessor(hardware="cpu", remote=True, endpoint=Endpoint(address=peer))],
        transport="rdma",
        qec_code="steane",
        noise=args.noise,
        seed=args.seed,
        print_after_all=args.print_after_all,
    )
    report(ghz_program(dev, args.shots)(), dev, "demo 4 (FPGA controller, simulated board)", save=args.save_samples)
finally:
    if proc is not None:
        proc.terminate()
        proc.wait()
