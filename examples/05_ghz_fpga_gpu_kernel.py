"""Demo 5: the GHZ program with an FPGA controller and the Steane decoder written as a GPU
kernel. The (simulated) board's ERNIC delivers each syndrome to a coprocessor whose persistent
GPU kernel runs the user's decoder, compiled when the coprocessor starts:

- ``--kernel triton`` (default): ``examples/steane_triton.py``, a ``@triton.jit`` function
  compiled ahead of time to PTX (Triton needs no GPU for that) and linked into the persistent
  kernel: no Python on the decode path. NVIDIA GPUs only.
- ``--kernel cu``: ``examples/steane_kernel.cu``, the same lookup as a CUDA/HIP device function;
  it also runs under the host emulation (``--gpu emu``: the kernel's C++ on CPU threads), which
  is how machines without a GPU run this demo.

    python examples/05_ghz_fpga_gpu_kernel.py [--shots 10] [--kernel triton|cu]
                                              [--gpu auto|cuda|hip|emu] [--bridge shm|udp]
"""

import sys

from ghz import ROOT, arguments, ghz_program, report

import backline
from backline import Backline, Controller, Coprocessor, CoprocessorFunction

args = arguments(
    __doc__,
    kernel=dict(default="triton", choices=["triton", "cu"],
                help="the decoder's source: the Triton function or the .cu device function (default triton)"),
    gpu=dict(default="auto", choices=["auto", "cuda", "hip", "emu"],
             help="where the persistent kernel runs: auto (CUDA, else HIP), cuda, hip, or emu (default auto)"),
    bridge=dict(default="shm", choices=["shm", "udp"], help="how the simulated fabric reaches the coprocessor"),
)
if args.kernel == "triton":
    if args.gpu in ("hip", "emu"):
        sys.exit(f"demo 5: a Triton decoder is PTX for an NVIDIA GPU; --gpu {args.gpu} runs the "
                 "device-function route: --kernel cu")
    sys.path.insert(0, str(ROOT / "examples"))
    from steane_triton import steane_decode

    fn = backline.triton_decoder(steane_decode)
else:
    fn = CoprocessorFunction.gpu_kernel(ROOT / "examples/steane_kernel.cu", "steane_kernel")

dev = Backline(
    controller=Controller(hardware="fpga", wires=3, init_args={"bridge": args.bridge}),
    coprocessors=[Coprocessor(hardware="gpu", coprocessor_fn=fn, init_args={"backend": args.gpu})],
    transport="rdma",
    qec_code="steane",
    noise=args.noise,
    seed=args.seed,
    print_after_all=args.print_after_all,
)
try:
    samples = ghz_program(dev, args.shots)()
except backline.PlacementError as e:
    sys.exit(f"demo 5: {e}")
report(samples, dev, f"demo 5 (FPGA controller, {args.kernel} decoder in a GPU kernel)", save=args.save_samples)
