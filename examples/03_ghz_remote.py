"""Demo 3: the same GHZ program with the coprocessor in another process — or on another
host — over shm or udp. By default this starts the executor itself
(``python -m backline serve``) and connects to it as to any remote one; with ``--peer`` it
connects to one you started (``backline serve --transport udp --bind 0.0.0.0:7878`` on the
other host).

    python examples/03_ghz_remote.py --transport udp [--peer decoder-host:7878] [--gpu [BACKEND]]

With ``--gpu`` the executor serves the Steane lookup from a persistent GPU kernel (backend
auto, cuda, hip, or emu: the same kernels on CPU threads).
"""

import os
import subprocess
import sys

from ghz import arguments, ghz_program, report

from backline import Backline, Controller, Coprocessor, Endpoint

args = arguments(
    __doc__,
    transport=dict(default="shm", choices=["shm", "udp", "rdma"], help="shm, udp or rdma (default shm)"),
    peer=dict(default=None, help="address of a running executor (udp/rdma HOST:PORT, shm NAME)"),
    gpu=dict(nargs="?", const="auto", default=None, metavar="BACKEND",
             help="the executor's coprocessor on a GPU: auto, cuda, hip or emu"),
)
proc = None
peer = args.peer
if peer is None:
    where = ["--bind", "127.0.0.1:0"] if args.transport != "shm" else ["--name", f"demo3-{os.getpid()}"]
    fn = "gpu:steane" if args.gpu else "steane"
    gpu = ["--gpu-backend", args.gpu] if args.gpu else []
    proc = subprocess.Popen([sys.executable, "-m", "backline", "serve", "--transport", args.transport, *where,
                             "--fn", f"0={fn}", "--fn", f"1={fn}", *gpu, "--exit-with-parent"],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("ready "):
        sys.exit(f"the executor did not start: {line!r}")
    peer = line.split()[1]
    print(f"executor process {proc.pid} serves {args.transport} at {peer}" + (" from a GPU kernel" if args.gpu else ""))
try:
    dev = Backline(
        controller=Controller(hardware="cpu", wires=3),
        coprocessors=[Coprocessor(hardware="cpu", remote=True, endpoint=Endpoint(address=peer))],
        transport=args.transport,
        qec_code="steane",
        noise=args.noise,
        seed=args.seed,
        print_after_all=args.print_after_all,
    )
    report(ghz_program(dev, args.shots)(), dev, f"demo 3 ({args.transport}, coprocessor in another process)", save=args.save_samples)
finally:
    if proc is not None:
        proc.terminate()
        proc.wait()
